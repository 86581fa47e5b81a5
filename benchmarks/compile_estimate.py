"""The first-run compile notice's estimate against what the compile then takes (issue 30).

    python benchmarks/compile_estimate.py [--rounds 2] [--load 0,2] [--plans build,jit]

Runs `analyzer scan` of the bundled sample (data/: chess and draughts) on an empty kernel cache
and an empty XDG cache (a machine's very first run: no earlier compile recorded), `--rounds`
times per plan and per machine load, and reads the notice ("about N s"), the time the compile
took ("kernels compiled in N s") and, with -v, how much slower than the reference VM the
calibration found the machine ("compile estimate: plan P, S times"). Plans: `build` (the
default: the chess kernels built ahead of time, draughts by the JIT beside them), `jit`
(ANALYZER_KERNELS=jit: every kernel by numba's JIT, two processes). `--load N` runs N busy
processes (a pure-Python loop each) through the scan: a busy VM. Prints one line per run and a
table: the estimate's error (took / announced - 1), and took / slowdown, the reference VM's
time each run implies (what analyzer/warmup.py's constants are set from).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUSY = "while True: pass"


def first_run(plan: str, tmp: str) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "xdg"), PYTHONPATH=ROOT)
    env.pop("NUMBA_CACHE_DIR", None)
    env["ANALYZER_KERNELS"] = "jit" if plan == "jit" else "auto"
    t = time.time()
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "-v", "scan", "--out", os.path.join(tmp, "out"), "--progress", "none"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.time() - t
    err = r.stderr
    about = re.search(r"first run only \(([^)]*)\), about (\d+) s", err)
    took = re.search(r"kernels compiled in (\d+) s", err)
    cal = re.search(r"compile estimate: plan (\S+), ([\d.]+) times[^{]*(\{.*\})", err)
    if r.returncode != 0 or not (about and took and cal):
        raise RuntimeError(f"exit {r.returncode}:\n{err[-3000:]}")
    return {
        "plan": cal.group(1),
        "announced": int(about.group(2)),
        "took": int(took.group(1)),
        "slowdown": float(cal.group(2)),
        "calibration": ast.literal_eval(cal.group(3)),
        "wall": round(wall, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--load", default="0", help="comma-separated numbers of busy processes, e.g. 0,2")
    ap.add_argument("--plans", default="build,jit")
    args = ap.parse_args()
    rows = []
    for r in range(args.rounds):
        for load in [int(x) for x in args.load.split(",")]:
            for plan in args.plans.split(","):
                busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(load)]
                try:
                    time.sleep(1.0 if load else 0)
                    with tempfile.TemporaryDirectory(prefix="compile-estimate-") as tmp:
                        row = first_run(plan, tmp)
                finally:
                    for p in busy:
                        p.kill()
                        p.wait()
                row.update(round=r + 1, load=load, error=round(row["took"] / row["announced"] - 1, 3))
                row["reference"] = round(row["took"] / row["slowdown"], 1)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    print("| plan | busy processes | announced s | took s | took/announced - 1 | slowdown | took/slowdown |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['plan']} | {row['load']} | {row['announced']} | {row['took']} | {row['error']:+.0%} "
            f"| {row['slowdown']} | {row['reference']} |"
        )
    for plan in sorted({row["plan"] for row in rows}):
        refs = [row["reference"] for row in rows if row["plan"] == plan]
        errs = [abs(row["error"]) for row in rows if row["plan"] == plan]
        print(f"{plan}: reference (median took/slowdown) {statistics.median(refs):.1f} s; |error| max {max(errs):.0%}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
