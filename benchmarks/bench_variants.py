"""Games per second for each Lichess variant: the analyzer (numba) against python-chess, same games.

For each input file (default: tests/fixtures/variants/*.pgn, generated games) it times, in one run:

- analyzer: `analyzer.api.analyze_bytes` with editions fide_2018 + lichess (replay to facts, rules,
  tables), after one warm-up call (numba compiled and cached);
- python-chess replay: `chess.pgn.read_game` of every game (parsing and replaying SAN on the
  variant board, nothing else);
- python-chess facts: `tests/reference.analyze_text` (python-chess computing the same per-ply facts
  and fide_2018 verdicts the analyzer computes: the like-for-like comparison).

Each timing is the best of --repeat runs. With --copies N the file's games are repeated N times
(one block of N x the games: small fixture files otherwise measure the per-call overhead of table
building); the python-chess facts rate is measured on one copy (its cost is per game). Prints a
Markdown table (for benchmarks/RESULTS.md).

Usage::

    python benchmarks/bench_variants.py [--repeat 3] [--copies 25] [FILE.pgn ...]
"""

from __future__ import annotations

import argparse
import glob
import io
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))

import chess.pgn  # noqa: E402

import reference as ref  # noqa: E402
from analyzer.api import analyze_bytes  # noqa: E402


def _best(fn, repeat):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _pc_replay(text):
    handle = io.StringIO(text)
    n = 0
    while chess.pgn.read_game(handle) is not None:
        n += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--copies", type=int, default=1)
    args = ap.parse_args(argv)
    files = args.files or sorted(
        f
        for f in glob.glob(os.path.join(HERE, "..", "tests", "fixtures", "variants", "*.pgn"))
        if not f.endswith("chess960.pgn")
    )
    rows = []
    for path in files:
        with open(path, "rb") as fh:
            one = fh.read()
        if not one.endswith(b"\n\n"):
            one = one.rstrip(b"\n") + b"\n\n"
        data = one * args.copies
        text = data.decode("utf-8", "replace")
        analyze_bytes(data, editions=("fide_2018", "lichess"))  # warm-up
        t_eng, res = _best(lambda data=data: analyze_bytes(data, editions=("fide_2018", "lichess")), args.repeat)
        n_games = res.n_games
        plies = int(res.games.column("plies").to_numpy(zero_copy_only=False)[:n_games].sum())
        statuses = set(res.games.column("status").to_pylist())
        t_rep, n_pc = _best(lambda text=text: _pc_replay(text), args.repeat)
        t_fact, _ = _best(lambda one=one: ref.analyze_text(one.decode("utf-8", "replace")), 1)
        t_fact *= args.copies
        rows.append((os.path.basename(path), n_games, plies, statuses, t_eng, t_rep, t_fact, n_pc))
    print(
        "| file | games | plies | analyzer games/s | python-chess replay games/s | python-chess facts games/s "
        "| speed-up vs replay | vs facts |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, plies, _statuses, te, tr, tf, n_pc in rows:
        assert n_pc == n, (name, n_pc, n)
        print(
            f"| {name} | {n} | {plies} | {n / te:,.0f} | {n / tr:,.0f} | {n / tf:,.0f} | "
            f"{tr / te:,.0f}x | {tf / te:,.0f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
