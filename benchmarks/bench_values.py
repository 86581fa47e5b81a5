"""Where the time of issue 37's position values goes, per input (in-process, one thread):
the boards of the windows that reach the 50-move count (boards_at: those games replayed again),
the value columns, and with --syzygy the probes (python-chess WDL and DTZ calls, boards built).

    python benchmarks/bench_values.py [--syzygy ../shared/data/syzygy] [--edition ...] INPUT...

Prints a Markdown table for RESULTS.md. Each input is analysed twice first (kernels warm).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from input_text import read_text  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--syzygy", default=None)
    ap.add_argument("--edition", default="fide_2018,fide_1988,no_fifty,stalemate_win")
    args = ap.parse_args(argv)
    import chess.syzygy

    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess import kernels, tablebase, valuation

    acc: dict = {}

    def timed(owner, name, key):
        fn = getattr(owner, name)

        def wrapper(*a, **k):
            t0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                acc[key] = acc.get(key, 0.0) + time.process_time() - t0
                acc[key + "#"] = acc.get(key + "#", 0) + 1

        setattr(owner, name, wrapper)

    timed(valuation, "window_material", "window_material")
    timed(valuation, "probe_positions", "probes")
    timed(valuation, "event_columns", "event_columns")
    timed(valuation, "final_columns", "final_columns")
    real_boards = kernels.boards_at
    boards = {"calls": 0, "requests": 0, "s": 0.0}

    def boards_at(*a):
        t0 = time.process_time()
        out = real_boards(*a)
        boards["s"] += time.process_time() - t0
        boards["calls"] += 1
        boards["requests"] += len(a[8])
        return out

    kernels.boards_at = boards_at  # type: ignore[assignment]  (valuation calls kernels.boards_at)
    timed(chess.syzygy.Tablebase, "probe_wdl", "wdl")
    timed(chess.syzygy.Tablebase, "probe_dtz", "dtz")
    eds = tuple(args.edition.split(","))
    syz = [args.syzygy] if args.syzygy else None
    print(
        f"In-process CPU seconds (time.process_time), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"editions {args.edition}, --syzygy {args.syzygy or '(none)'}\n"
    )
    print(
        "| input | games | analysis s | boards_at calls / boards / s | window material s | value columns s "
        "| probe_positions s | WDL calls / s | DTZ calls / s | positions (summary) |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---|---|---|")
    for path in args.inputs:
        text = read_text(path)
        for _ in range(2):
            analyze_bytes(text, editions=eds, syzygy=syz)
        acc.clear()
        boards.update(calls=0, requests=0, s=0.0)
        tablebase._OPEN.clear()  # (a fresh process opens the tables once: so does this run)
        t0 = time.process_time()
        res = analyze_bytes(text, editions=eds, syzygy=syz)
        total = time.process_time() - t0
        notes = res.notes.get("tablebase", {})
        print(
            f"| {os.path.basename(path)} | {res.n_games:,} | {total:.2f} | "
            f"{boards['calls']} / {boards['requests']:,} / {boards['s']:.3f} | {acc.get('window_material', 0):.3f} | "
            f"{acc.get('event_columns', 0) + acc.get('final_columns', 0):.3f} | {acc.get('probes', 0):.3f} | "
            f"{acc.get('wdl#', 0):,} / {acc.get('wdl', 0):.3f} | {acc.get('dtz#', 0):,} / {acc.get('dtz', 0):.3f} | "
            f"{', '.join(f'{k} {v:,}' for k, v in sorted(notes.items()))} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
