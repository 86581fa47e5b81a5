"""The unwinnability kernel (analyzer/kinds/chess/_unwinnable.py) on real positions.

    python benchmarks/bench_unwinnable.py [--input lichess_sample.pgn.zst] [--budget 20000[,50000...]]
        [--all-positions] [--limit N]

Default: the final position of every game lost on time (1-0/0-1, Termination "Time forfeit") of
the input, for the winner, as the scan classifies it: answers by kind, the unknown share, nodes
(moves made) per position, CPU microseconds per position (run it under `taskset -c 1` on a quiet
core; the kernel is compiled by an untimed first call).

--all-positions: every position of every standard game of the input (python-chess replays the
movetext), both sides: is it dead, and would the scan's filter (a legal move, and every pawn with
a pawn right in front of it, or at most one pawn, rook or queen on the board and a single legal
move, or python-chess's insufficient material) have looked at it? Each
position gets the kernel with a small budget for one side, then the other (a certificate for
either side: not dead); the few left get the full budget. Prints the dead positions found, how
many of them the filter skips (the claim of docs/rules.md), and the positions left unknown.
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.environ.get("ANALYZER_SHARED_DATA") or os.path.join(ROOT, "..", "shared", "data")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from input_text import read_text  # noqa: E402


def classify(bb, st, ct_table, ct_idx, side, budget):
    from analyzer.kinds.chess import _unwinnable as unw

    n = len(side)
    verdict = np.empty(n, np.int8)
    proof = np.empty(n, np.int8)
    nodes = np.empty(n, np.int64)
    off = np.empty(n + 1, np.int64)
    moves = np.empty(64 * n + 1024, np.int32)
    args = (bb, st, ct_table, ct_idx, side.astype(np.int8), budget, verdict, proof, nodes, off)
    k = unw.classify_batch(*args, moves)
    if k > len(moves):
        moves = np.empty(k, np.int32)
        unw.classify_batch(*args, moves)
    return verdict, proof, nodes


def timeouts(text: bytes, budgets: list[int]) -> None:
    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess import _unwinnable as unw

    res = analyze_bytes(text, source="b", editions=("fide_2018",), keep_facts=True)
    g = res.games
    term = g.column("termination").to_pylist()
    result = g.column("result").to_pylist()
    f = res.facts
    sel = np.array(
        [
            i
            for i, (t, r) in enumerate(zip(term, result))
            if t == "Time forfeit" and r in ("1-0", "0-1") and f["final_st"][i, 0] >= 0
        ],
        np.int64,
    )
    side = np.array([0 if result[i] == "1-0" else 1 for i in sel], np.int8)
    bb, st = f["final_bb"][sel].copy(), f["final_st"][sel].copy()
    ct = f["final_ct"][sel].copy()
    idx = np.arange(len(sel), dtype=np.int64)
    classify(bb[:2], st[:2], ct, idx[:2], side[:2], 100)  # compile
    n = len(sel)
    print(f"positions (final positions of games lost on time, the winner): {n:,}")
    for budget in budgets:
        t0 = time.process_time()
        verdict, proof, nodes = classify(bb, st, ct, idx, side, budget)
        cpu = time.process_time() - t0
        print(f"CPU {cpu:.2f} s: {cpu / n * 1e6:.1f} us per position; budget {budget:,} nodes")
        kinds = collections.Counter(zip(verdict.tolist(), proof.tolist()))
        for (v, p), c in sorted(kinds.items()):
            print(f"  {unw.VERDICTS[v]:>10} {unw.PROOFS[p]:<22} {c:>7,} ({100 * c / n:.3f} %)")
        unknown = int((verdict == unw.UNKNOWN).sum())
        print(f"unknown: {unknown:,} of {n:,} ({100 * unknown / n:.3f} %)")
        print(
            "nodes per position: median",
            int(np.median(nodes)),
            "p90",
            int(np.percentile(nodes, 90)),
            "mean",
            int(nodes.mean()),
        )
        solved = verdict != unw.UNKNOWN
        share = 100 * (nodes[~solved].sum() / max(1, nodes.sum()))
        print(f"share of the nodes spent on the unknown ones: {share:.0f} %")


def board_arrays(board):
    """bb, st of a python-chess Board (standard chess)."""
    import chess

    bb = np.zeros(8, np.uint64)
    for i, b in enumerate((board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)):
        bb[i] = b
    bb[6] = board.occupied_co[chess.WHITE]
    bb[7] = board.occupied_co[chess.BLACK]
    c = 0
    cr = board.castling_rights
    for i, sq in enumerate((chess.H1, chess.A1, chess.H8, chess.A8)):
        if cr & chess.BB_SQUARES[sq]:
            c |= 1 << i
    ep = board.ep_square if board.ep_square is not None else -1
    return bb, np.array([0 if board.turn else 1, c, ep, board.halfmove_clock], np.int64)


def positions(text: bytes, limit: int, cache: str | None):
    """Every position with a legal move of the standard games of `text` (python-chess): bb, st,
    (game, ply), and whether the scan's filter keeps it; cached in `cache` (npz) if given."""
    if cache and os.path.exists(cache):
        d = np.load(cache)
        return d["bb"], d["st"], [tuple(x) for x in d["where"].tolist()], d["filt"], int(d["games"])
    bb, st, where, filt, games = _positions(text, limit)
    if cache:
        np.savez(cache, bb=bb, st=st, where=np.array(where, np.int64), filt=filt, games=games)
    return bb, st, where, filt, games


def _positions(text: bytes, limit: int):
    import chess
    import chess.pgn

    bbs, sts, where, filt = [], [], [], []
    stream = io.StringIO(text.decode("utf-8", "replace"))
    games = 0
    while limit <= 0 or games < limit:
        game = chess.pgn.read_game(stream)
        if game is None:
            break
        games += 1
        if game.headers.get("Variant", "Standard") not in ("Standard", "From Position") or game.errors:
            continue
        board = game.board()
        if board.chess960:
            continue
        ply = 0
        for move in [None, *game.mainline_moves()]:
            if move is not None:
                if not board.is_legal(move):
                    break
                board.push(move)
                ply += 1
            if board.is_checkmate() or board.is_stalemate():
                continue
            bb, st = board_arrays(board)
            bbs.append(bb)
            sts.append(st)
            where.append((games - 1, ply))
            pawns = board.pawns
            wp, bp = pawns & board.occupied_co[chess.WHITE], pawns & board.occupied_co[chess.BLACK]
            blocked = bool(pawns) and not ((wp << 8) & ~pawns & chess.BB_ALL) and not ((bp >> 8) & ~pawns)
            heavy = board.pawns | board.rooks | board.queens
            forced = chess.popcount(heavy) <= 1 and board.legal_moves.count() == 1
            filt.append(blocked or forced or board.is_insufficient_material())
    return np.stack(bbs), np.stack(sts), where, np.array(filt), games


def all_positions(text: bytes, budget: int, limit: int, cache: str | None) -> None:
    from analyzer.kinds.chess import _unwinnable as unw
    from analyzer.kinds.chess._tables import STANDARD_CASTLING

    t0 = time.time()
    bb, st, where, filt_a, games = positions(text, limit, cache)
    n = len(bb)
    print(f"{games:,} games, {n:,} positions with a legal move (python-chess, {time.time() - t0:.0f} s)")
    ct = STANDARD_CASTLING[None].copy()
    idx = np.zeros(n, np.int64)
    t1 = time.time()
    # side to move's opponent first (usually the one with more to mate with is either: try both)
    small = min(budget, 2000)
    v0, p0, _ = classify(bb, st, ct, idx, np.zeros(n, np.int8), small)
    rest = np.flatnonzero(v0 != unw.WINNABLE)
    v1 = np.full(n, unw.WINNABLE, np.int8)
    p1 = np.zeros(n, np.int8)
    if len(rest):
        a, b, _ = classify(bb[rest], st[rest], ct, idx[rest], np.ones(len(rest), np.int8), small)
        v1[rest], p1[rest] = a, b
    both = np.flatnonzero((v0 != unw.WINNABLE) & (v1 != unw.WINNABLE))
    print(
        f"small budget ({small:,}): {len(both):,} positions without a certificate for either side "
        f"({time.time() - t1:.0f} s)"
    )
    for side, v, p in ((0, v0, p0), (1, v1, p1)):
        redo = both[v[both] == unw.UNKNOWN]
        if len(redo):
            a, b, _ = classify(bb[redo], st[redo], ct, idx[redo], np.full(len(redo), side, np.int8), budget)
            v[redo], p[redo] = a, b
    dead = both[(v0[both] == unw.UNWINNABLE) & (v1[both] == unw.UNWINNABLE)]
    unknown = both[(v0[both] == unw.UNKNOWN) | (v1[both] == unw.UNKNOWN)]
    unknown = np.array([i for i in unknown if not (v0[i] == unw.WINNABLE or v1[i] == unw.WINNABLE)], np.int64)
    kinds = collections.Counter((unw.PROOFS[p0[i]], unw.PROOFS[p1[i]]) for i in dead)
    skipped = dead[~filt_a[dead]] if len(dead) else dead
    print(f"dead positions: {len(dead):,} in {len({where[i][0] for i in dead}):,} games; proofs {dict(kinds)}")
    print(f"dead positions the scan's filter skips: {len(skipped):,}")
    from analyzer.kinds.chess.position import to_board

    for i in skipped[:20]:
        print("   skipped: game", where[i][0], "ply", where[i][1], to_board(bb[i], st[i], ct[0]).fen())
    for i in dead[:10]:
        print("   dead: game", where[i][0], "ply", where[i][1], to_board(bb[i], st[i], ct[0]).fen())
    share = 100 * len(unknown) / n
    print(f"positions with no certificate for either side and no proof for both (unknown): {len(unknown):,} of {n:,}")
    print(f"  ({share:.4f} %)")
    print(f"total {time.time() - t0:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=os.path.join(DATA, "lichess_sample.pgn.zst"))
    ap.add_argument("--budget", default="20000", help="nodes; several separated by commas (the positions read once)")
    ap.add_argument("--all-positions", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="games (--all-positions)")
    ap.add_argument("--cache", help="--all-positions: an .npz file for the positions (read if it exists)")
    args = ap.parse_args()
    os.environ.setdefault("ANALYZER_KERNELS", "jit")
    text = read_text(args.input)
    print(f"input {os.path.basename(args.input)}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.all_positions:
        all_positions(text, int(args.budget.split(",")[0]), args.limit, args.cache)
    else:
        timeouts(text, [int(b) for b in args.budget.split(",")])


if __name__ == "__main__":
    main()
