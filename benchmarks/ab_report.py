"""`analyzer report` of an older revision against this tree's, in the same run (issue 28): each
side scans bench_month's inputs with its own code (an older report cannot read newer tables),
then the two reports run in interleaved rounds; wall, CPU and peak RSS of the process tree.

    python benchmarks/ab_report.py --old d1d35e4 --copies 1,10 --rounds 3
    python benchmarks/ab_report.py --old d1d35e4 --copies 198 --rounds 1   # the 10 M input: ~13 GB old

The inputs are bench_month's (`--work`, built there with `bench_month.py --copies N`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_month import EDITIONS  # noqa: E402  (the same editions as the month bench)
from bench_scan import measure  # noqa: E402


def _scan(tree: str, src: str, out: str) -> None:
    if os.path.exists(os.path.join(out, "_manifest", "run.json")):
        return
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "analyzer", "scan", src, "--out", out, "--workers", "2", "--edition", EDITIONS]
    subprocess.run(cmd + ["--progress", "none"], cwd=tree, env=dict(os.environ, PYTHONPATH=tree), check=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", required=True, help="the older revision (a git worktree of it is made)")
    p.add_argument("--copies", default="1,10", help="bench_month input sizes, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", default="/tmp/analyzer-bench-month")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="ab-report-")
    old_tree = os.path.join(tmp, "old")
    subprocess.run(["git", "-C", REPO, "worktree", "add", "-f", "-q", old_tree, args.old], check=True)
    res: dict[str, list[dict]] = {}
    try:
        sides = {"old": old_tree, "new": REPO}
        sizes = [int(c) for c in args.copies.split(",")]
        for c in sizes:
            src = os.path.join(args.work, f"month-{c}x.pgn.zst")
            if not os.path.exists(src):
                raise SystemExit(f"{src}: build it first (python benchmarks/bench_month.py --copies {c})")
            for side, tree in sides.items():
                _scan(tree, src, os.path.join(tmp, f"out-{side}-{c}x"))
        for _ in range(args.rounds):
            for c in sizes:
                for side, tree in sides.items():
                    rep = os.path.join(tmp, f"rep-{side}-{c}x")
                    shutil.rmtree(rep, ignore_errors=True)
                    cmd = [sys.executable, "-m", "analyzer", "report", os.path.join(tmp, f"out-{side}-{c}x")]
                    m = measure(
                        cmd + ["--report-dir", rep],
                        env=dict(os.environ, PYTHONPATH=tree),
                        cwd=tree,
                        stdout=os.devnull,
                        stderr=os.path.join(tmp, f"rep-{side}-{c}x.err"),
                    )
                    row = {k: round(m[k], 2) for k in ("wall", "cpu", "tree_rss_mb")} | {"rc": m["rc"]}
                    res.setdefault(f"{side} {c}x", []).append(row)
                    print(side, f"{c}x", row, file=sys.stderr, flush=True)
    finally:
        subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", old_tree], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
