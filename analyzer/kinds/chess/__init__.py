"""Chess (standard, Chess960 and, in `variants`, the seven other Lichess variants): bitboard SAN
replay -> facts (_replay), the FIDE/Lichess rule kernel (_rules), editions, and the block
analyzer. `perft` and `fide_key` are for tests."""

from __future__ import annotations

from analyzer.kinds.base import GameKind


def _builtin_editions() -> dict:
    from analyzer.kinds.chess.editions import BUILTIN

    return dict(BUILTIN)


def _custom_edition(**options):
    from analyzer.kinds.chess.editions import custom_edition

    return custom_edition(**options)


def _analyze_block(buf, starts, ends, **options):
    """analyze_block, imported when a block is first analyzed (options: kinds.block_options and
    the engine's; those left out keep analyze_block's defaults)."""
    from analyzer.kinds.chess.analyze import analyze_block

    return analyze_block(buf, starts, ends, **options)


KIND = GameKind(
    name="chess",
    draughts_markers=False,
    default_editions=("fide_2018",),
    builtin_editions=_builtin_editions,
    custom_edition=_custom_edition,
    analyze_block=_analyze_block,
)


def perft(fen: str, depth: int, chess960: bool = False) -> int:
    """Leaf count of the legal-move tree of the bitboard generator (standard chess, or Chess960
    castling rules with chess960=True: X-FEN or Shredder-FEN castling rights)."""
    import chess

    from analyzer.kinds.chess._board import perft as _perft
    from analyzer.kinds.chess.analyze import _start_arrays

    bb, mb, st, ct = _start_arrays(chess.Board(fen, chess960=chess960))
    return int(_perft(bb, mb, st, ct, depth))


def fide_key(fen: str) -> int:
    """Our FIDE 9.2.2 repetition key of a position: Polyglot Zobrist, e.p. file only if legal."""
    import chess
    import numpy as np

    from analyzer.kinds.chess import _board as board
    from analyzer.kinds.chess.analyze import _start_arrays

    bb, mb, st, _ = _start_arrays(chess.Board(fen))
    pkey = np.uint64(board.piece_key(bb, mb, st[board.ST_STM]))
    return int(board.fide_key_from_piece_key(bb, st, pkey, bool(board.has_legal_ep(bb, st))))
