"""Same-run A/B of two analyzer revisions: `analyzer scan` of one input, old and new code
alternating in interleaved rounds, each round's ratio new ÷ old (the machine is shared and
noisy: only ratios taken side by side mean anything).

    python benchmarks/ab_scan.py --old b120e26 [--new HEAD] [--rounds 7] [--workers 1]
        [--edition fide_2018] [--input ../shared/data/lichess_sample.pgn.zst]

Each revision is exported with `git archive` into a temp dir (the working tree is not touched)
and run from there with its own NUMBA_CACHE_DIR, warmed by one untimed scan first. Timed: the
whole command (interpreter start, imports, cached kernels, scan, Parquet) and its CPU time
(user + sys of the child), and the scan's own "seconds" from its JSON summary (without
start-up). The order within a round alternates (old first, then new first) so that a drift in
load does not favour one side. Prints a Markdown table for RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_INPUT = os.path.join(ROOT, "..", "shared", "data", "lichess_sample.pgn.zst")


def export(rev: str, dest: str) -> tuple[str, str]:
    """The tree of `rev` under dest (git archive | tar): (its folder, its commit hash).
    'worktree' is this checkout as it is, uncommitted edits included (not copied, not
    byte-compiled: its start-up includes compiling the sources when PYTHONDONTWRITEBYTECODE is set)."""
    if rev == "worktree":
        return ROOT, "worktree"
    os.makedirs(dest)
    sha = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    # Byte-compiled, as an installed package is: with PYTHONDONTWRITEBYTECODE set (as on the
    # team's machines) every start would compile the sources, ~0.07 s for 0.2's 60 modules,
    # half that for 0.1's, which is not what a user of either sees.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(dest, "analyzer")], check=True)
    return dest, sha


def run_once(code_dir: str, cache: str, args, out: str) -> dict:
    """One timed scan; wall and child CPU seconds, and the summary's own seconds."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=code_dir)
    # 0.1 had no analyzer/__main__.py: call its console-script entry point the same way
    if os.path.exists(os.path.join(code_dir, "analyzer", "__main__.py")):
        entry = ["-m", "analyzer"]
    else:
        entry = ["-c", "import sys; from analyzer.cli import main; sys.exit(main(sys.argv[1:]))"]
    cmd = [
        sys.executable,
        *entry,
        "scan",
        args.input,
        "--out",
        out,
        "--edition",
        args.edition,
        "--workers",
        str(args.workers),
        "--progress-interval",
        "0",
    ]
    with open(os.path.join(code_dir, "analyzer", "cli.py")) as fh:
        if '"--json"' in fh.read():  # 0.2 prints a table unless asked; 0.1 always printed JSON
            cmd.append("--json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=code_dir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{code_dir}: exit {r.returncode}\n{r.stderr[-2000:]}")
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "scan": summary.get("seconds"), "games": summary.get("games")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default="HEAD", help="a git revision, or 'worktree' (this checkout as it is)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--edition", default="fide_2018")
    ap.add_argument("--input", default=DEFAULT_INPUT)
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="ab_scan-")
    try:
        sides = {}
        for name, rev in (("old", args.old), ("new", args.new)):
            code, sha = export(rev, os.path.join(tmp, name))
            cache = os.path.join(tmp, f"numba-{name}")
            print(f"[ab] {name} = {rev} ({sha}): warming its kernels", file=sys.stderr, flush=True)
            run_once(code, cache, args, os.path.join(tmp, "out"))
            sides[name] = (code, cache, sha)
        rows: dict[str, list[dict]] = {"old": [], "new": []}
        for k in range(args.rounds):
            order = ("old", "new") if k % 2 == 0 else ("new", "old")
            for name in order:
                code, cache, _ = sides[name]
                rows[name].append(run_once(code, cache, args, os.path.join(tmp, "out")))
            o, n = rows["old"][-1], rows["new"][-1]
            print(
                f"[ab] round {k + 1}: wall old {o['wall']:.2f} s new {n['wall']:.2f} s, "
                f"ratio {n['wall'] / o['wall']:.3f}",
                file=sys.stderr,
                flush=True,
            )
        games = rows["new"][0]["games"]
        load = os.getloadavg()
        print(
            f"A/B `analyzer scan {os.path.basename(args.input)} --edition {args.edition} --workers "
            f"{args.workers}` ({games:,} games), {args.rounds} interleaved rounds, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load at end {load[0]:.2f}"
        )
        print(
            f"old = {args.old} ({sides['old'][2]}), new = {args.new} ({sides['new'][2]}); "
            "ratio = new ÷ old per round (< 1: new faster)\n"
        )
        print("| measure | old median | new median | ratio per round | median ratio |")
        print("|---|---:|---:|---|---:|")
        for key, label in (
            ("wall", "wall s, whole command"),
            ("cpu", "CPU s, whole command"),
            ("scan", "scan s (summary, no start-up)"),
        ):
            if any(r[key] is None for r in rows["old"] + rows["new"]):
                continue
            ratios = [n[key] / o[key] for o, n in zip(rows["old"], rows["new"])]
            print(
                f"| {label} | {statistics.median(r[key] for r in rows['old']):.3f} | "
                f"{statistics.median(r[key] for r in rows['new']):.3f} | "
                f"{' '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.3f} |"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
