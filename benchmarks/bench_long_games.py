"""Replay time against a game's length (issue 36, point 5): two analyzer revisions on generated
games of 50,000 to 1,000,000 plies, same run, each measurement in its own child process.

    python benchmarks/bench_long_games.py --old d4f3df0 [--new worktree] [--plies 50000,100000,200000,1000000]
        [--games shuffle,distinct,cycle] [--old-budget 240] [--pin 1] [--no-scan]

Games (tests/long_games.py, one window: no pawn move, no capture, no castling):
  shuffle   1. Nf3 Nf6 2. Ng1 Ng8 ... from the start position (4 positions, each repeated plies/4 times)
  distinct  walker rooks on Gray-code cycles of 7^4 and 6^4 states: every position new
  cycle     walker rooks on cycles of 7^3 and 7^3 states: a cycle of 686 positions, repeated

Per revision, game and length, in a child process (pinned to --pin CPU; `none` = not pinned):
`analyze_bytes` of the game with fide_2018 (the replay, the rule kernels, the tables), its CPU
time and the replay kernel's and the rule kernels' (apply_rules + game_facts) own CPU time
(wrapped where analyze_block calls them); then, unless --no-scan, `analyzer scan FILE --workers
1 --edition fide_2018` end to end (wall: interpreter start, kernels from the numba cache, the
scan, Parquet). Each revision's kernels are compiled first (an untimed run, its own
NUMBA_CACHE_DIR). The old code's time grows with the square of the length: a measurement whose
CPU time, extrapolated from the previous length (x (ratio of lengths)^2), exceeds --old-budget
seconds is not run; the table shows the extrapolation instead ("~"). Every move is numbered.

Revisions as in ab_scan.py (`git archive`; `worktree` = this checkout with its edits).
Prints a Markdown table for RESULTS.md and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import long_games  # noqa: E402  (tests/long_games.py)
from ab_scan import export  # noqa: E402


def _shuffle(plies: int) -> str:
    return long_games.knight_shuffle(plies, max_number=None)


def _distinct(plies: int) -> str:
    return long_games.gray_cycle_game(plies, 7, 4, 6, 4, max_number=None)


def _cycle(plies: int) -> str:
    return long_games.gray_cycle_game(plies, 7, 3, 7, 3, max_number=None)


# (every move numbered, as a PGN writer does: 1,000,000 plies are 7.9 and 9.9 MB of text)
GAMES = {
    "shuffle": ("1. Nf3 Nf6 2. Ng1 Ng8 ... (4 positions)", _shuffle),
    "distinct": ("rooks on Gray cycles 7^4 x 6^4 (all positions new)", _distinct),
    "cycle": ("rooks on Gray cycles 7^3 x 7^3 (a 686-position cycle)", _cycle),
}

# The child: time analyze_bytes of one game file, and the kernels analyze_block calls.
CHILD = r"""
import json, os, sys, time
path, code = sys.argv[1], sys.argv[2]
import analyzer
assert os.path.realpath(analyzer.__file__).startswith(os.path.realpath(code)), (analyzer.__file__, code)
from analyzer.api import analyze_bytes
import analyzer.kinds.chess.analyze as A
K = A.kernels
spent = {"replay_batch": 0.0, "apply_rules": 0.0, "game_facts": 0.0}
def timed(name, fn):
    def call(*args, **kw):
        t = time.thread_time()  # (the kernels run in this thread)
        try:
            return fn(*args, **kw)
        finally:
            spent[name] += time.thread_time() - t
    return call
analyze_bytes(open(path, "rb").read()[:4000].rsplit(b"\n", 1)[0] + b" 1/2-1/2\n", editions=("fide_2018",))
for name in spent:
    setattr(K, name, timed(name, getattr(K, name)))
data = open(path, "rb").read()
c0, w0 = time.process_time(), time.perf_counter()
res = analyze_bytes(data, editions=("fide_2018",))
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
game = res.games.to_pylist()[0]
print(json.dumps({"cpu": cpu, "wall": wall, "replay": spent["replay_batch"],
                  "rules": spent["apply_rules"] + spent["game_facts"], "plies": game["plies"],
                  "status": game["status"], "events": res.events.num_rows}))
"""


def _pin(args) -> list[str]:
    if args.pin == "none" or not shutil.which("taskset"):
        return []
    return ["taskset", "-c", args.pin]


def _env(code: str, cache: str) -> dict:
    return dict(os.environ, PYTHONPATH=code, NUMBA_CACHE_DIR=cache, ANALYZER_KERNELS="jit")


def analyze_once(code: str, cache: str, path: str, args, timeout: float | None) -> dict | None:
    """The child's figures, or None if it ran past `timeout` seconds (killed). Run from the
    folder of `path`: `python -c` puts its working directory first on sys.path."""
    cmd = [*_pin(args), sys.executable, "-c", CHILD, path, code]
    try:
        out = subprocess.run(
            cmd, env=_env(code, cache), capture_output=True, text=True, timeout=timeout, cwd=os.path.dirname(path)
        )
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        raise SystemExit(f"{code}: exit {out.returncode}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def scan_once(code: str, cache: str, path: str, args, tmp: str, timeout: float | None) -> float | None:
    """Wall seconds of `analyzer scan path --workers 1` (whole command), or None past `timeout`."""
    out = os.path.join(tmp, "out")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [*_pin(args), sys.executable, "-m", "analyzer", "scan", path, "--out", out, "--workers", "1"]
    cmd += ["--edition", "fide_2018", "--progress-interval", "0", "-q"]
    t0 = time.perf_counter()
    try:  # (from tmp: `-m` puts the working directory first on sys.path)
        res = subprocess.run(cmd, env=_env(code, cache), capture_output=True, text=True, timeout=timeout, cwd=tmp)
    except subprocess.TimeoutExpired:
        return None
    if res.returncode != 0:
        raise SystemExit(f"{code}: scan exit {res.returncode}\n{res.stderr[-2000:]}")
    return time.perf_counter() - t0


def _fmt(x: float | None, predicted: float | None = None) -> str:
    if x is not None:
        return f"{x:.2f}"
    return f"~{predicted:,.0f} (not run)" if predicted is not None else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="a git revision (the code before), or 'worktree'")
    ap.add_argument("--new", default="worktree", help="a git revision, or 'worktree' (this checkout as it is)")
    ap.add_argument("--plies", default="50000,100000,200000,1000000")
    ap.add_argument("--games", default="shuffle,distinct,cycle")
    ap.add_argument("--old-budget", type=float, default=240.0, help="seconds a measurement of the old code may take")
    ap.add_argument("--pin", default="1", help="CPU to pin the children to (taskset -c), or 'none'")
    ap.add_argument("--no-scan", action="store_true", help="skip the end-to-end `analyzer scan` column")
    args = ap.parse_args(argv)
    lengths = [int(x) for x in args.plies.split(",")]
    tmp = tempfile.mkdtemp(prefix="bench_long_games-")
    rows = []
    try:
        sides = {}
        warm = os.path.join(tmp, "warm.pgn")
        with open(warm, "w") as fh:
            fh.write(long_games.knight_shuffle(200))
        for name, rev in (("old", args.old), ("new", args.new)):
            code, sha = export(rev, os.path.join(tmp, name))
            cache = os.path.join(tmp, f"numba-{name}")
            print(f"[long] {name} = {rev} ({sha}): compiling its kernels", file=sys.stderr, flush=True)
            analyze_once(code, cache, warm, args, None)
            if not args.no_scan:
                scan_once(code, cache, warm, args, tmp, None)
            sides[name] = (code, cache, sha)
        for game in args.games.split(","):
            make = GAMES[game][1]
            last: dict[str, tuple[int, float] | None] = {"old": None, "new": None}
            for n in lengths:
                path = os.path.join(tmp, f"{game}-{n}.pgn")
                with open(path, "w") as fh:
                    fh.write(make(n))
                row = {"game": game, "plies": n, "mb": os.path.getsize(path) / 1e6}
                for name in ("old", "new"):
                    code, cache, _ = sides[name]
                    predicted = None
                    if last[name] is not None:
                        n0, t0 = last[name]
                        predicted = t0 * (n / n0) ** 2
                    if name == "old" and predicted is not None and predicted > args.old_budget:
                        row[name] = None
                        row[f"{name}_predicted"] = predicted
                        last[name] = (n, predicted)
                        continue
                    timeout = args.old_budget * 3 if name == "old" else None
                    r = analyze_once(code, cache, path, args, timeout)
                    if r is not None and not args.no_scan:
                        r["scan_wall"] = scan_once(code, cache, path, args, tmp, timeout)
                    row[name] = r
                    if r is not None:
                        last[name] = (n, r["cpu"])
                    print(f"[long] {game} {n:,} {name}: {r}", file=sys.stderr, flush=True)
                rows.append(row)
                os.remove(path)
        load = os.getloadavg()
        print(
            f"Generated games (tests/long_games.py), `analyze_bytes` with fide_2018 in a child pinned to "
            f"CPU {args.pin}, and `analyzer scan FILE --workers 1 --edition fide_2018` end to end; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load at end {load[0]:.2f}"
        )
        print(f"old = {args.old} ({sides['old'][2]}), new = {args.new} ({sides['new'][2]}); seconds\n")
        print(
            "| game | plies | MB | old analyze (CPU) | old replay | old rules | old scan (wall) "
            "| new analyze (CPU) | new replay | new rules | new scan (wall) | old ÷ new (analyze) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in rows:
            o, nw = row["old"], row["new"]
            pred = row.get("old_predicted")
            ratio = ""
            if nw is not None and nw["cpu"] > 0:
                base = o["cpu"] if o is not None else pred
                ratio = f"{'~' if o is None else ''}{base / nw['cpu']:,.0f}x" if base else ""
            cells = [row["game"], f"{row['plies']:,}", f"{row['mb']:.1f}"]
            for r, p in ((o, pred), (nw, None)):
                if r is None:
                    cells += [_fmt(None, p), "-", "-", "-"]
                else:
                    cells += [_fmt(r["cpu"]), _fmt(r["replay"]), _fmt(r["rules"]), _fmt(r.get("scan_wall"))]
            cells.append(ratio)
            print("| " + " | ".join(cells) + " |")
        print()
        for game in args.games.split(","):
            print(f"- {game}: {GAMES[game][0]}")
        print(json.dumps({"old": sides["old"][2], "new": sides["new"][2], "rows": rows}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
