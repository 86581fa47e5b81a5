"""Check every tablebase answer of a scan against python-chess probing the same position itself
(issue 37): the values the scan's Tables give without a probe (K v K, checkmate, stalemate, dead
by material, a draw's DTZ) and the ones they probe must be python-chess's probe_wdl (and
probe_dtz where DTZ was asked for), position by position.

    python benchmarks/verify_tb_probes.py --syzygy ../shared/data/syzygy INPUT...

Runs analyze_bytes in process with --syzygy's tables, records each position handed to
Tables._probe (the cache's misses: every distinct position the scan asked about), and probes it
again with a Tablebase of its own. Prints per input the positions checked, by how the scan
answered them, and the CPU seconds of the scan's probes against python-chess's; exit status 0
only when every answer agrees.
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
    ap.add_argument("--syzygy", required=True)
    ap.add_argument("--edition", default="fide_2018,fide_1988,no_fifty,stalemate_win")
    args = ap.parse_args(argv)
    import chess
    import chess.syzygy

    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess import tablebase

    seen: list = []
    spent = [0.0]
    real = tablebase.Tables._probe

    def recording(self, board, want_dtz, ended, hit):
        t0 = time.process_time()
        out = real(self, board, want_dtz, ended, hit)
        spent[0] += time.process_time() - t0
        seen.append((board.copy(stack=False), want_dtz, ended, out))
        return out

    tablebase.Tables._probe = recording  # type: ignore[method-assign]
    eds = tuple(args.edition.split(","))
    ref = chess.syzygy.open_tablebase(args.syzygy)
    bad = 0
    print(
        "| input | positions checked | by probe / K v K / mate / stalemate / dead / no table "
        "| scan's probes s | python-chess s | differing |"
    )
    print("|---|---:|---|---:|---:|---:|")
    for path in args.inputs:
        seen.clear()
        spent[0] = 0.0
        tablebase._OPEN.clear()
        analyze_bytes(read_text(path), editions=eds, syzygy=[args.syzygy])
        kinds = dict.fromkeys(("probe", "kvk", "mate", "stalemate", "dead", "no_table"), 0)
        t_ref = 0.0
        differ = 0
        for board, want_dtz, ended, (wdl, dtz, status, _) in seen:
            if board.castling_rights:
                continue
            t0 = time.process_time()
            try:
                r_wdl: int | None = ref.probe_wdl(board)
            except chess.syzygy.MissingTableError:
                r_wdl = None
            r_dtz = None
            if r_wdl is not None and want_dtz:
                try:
                    r_dtz = ref.probe_dtz(board)
                except chess.syzygy.MissingTableError:
                    r_dtz = None
            t_ref += time.process_time() - t0
            if status == tablebase.NO_TABLE:
                kinds["no_table"] += 1
                ok = r_wdl is None
            else:
                if board.occupied == board.kings:
                    kinds["kvk"] += 1
                elif ended:
                    kinds[("mate", "stalemate", "dead")[ended - 1]] += 1
                else:
                    kinds["probe"] += 1
                ok = status == tablebase.PROBED_OK and wdl == r_wdl
                # a draw's DTZ is 0 without a DTZ probe; otherwise the DTZ asked for is python-chess's
                if ok and want_dtz:
                    ok = dtz == (0 if r_wdl == 0 else r_dtz)
                if ok and ended:  # what the replay's flags said is what python-chess says
                    ok = (ended == 1) == board.is_checkmate() and (ended == 2) == board.is_stalemate()
                    ok = ok and (ended != 3 or board.is_insufficient_material())
            if not ok:
                differ += 1
                if differ <= 5:
                    print(f"  {board.fen()}: scan {wdl, dtz, status}, python-chess {r_wdl, r_dtz}", file=sys.stderr)
        bad += differ
        print(
            f"| {os.path.basename(path)} | {len(seen):,} | {' / '.join(f'{v:,}' for v in kinds.values())} | "
            f"{spent[0]:.3f} | {t_ref:.3f} | {differ} |"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
