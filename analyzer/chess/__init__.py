"""Chess: bitboard replay kernels and the block analyzer. `perft` and `fide_key` are for tests."""
from __future__ import annotations


def perft(fen: str, depth: int, chess960: bool = False) -> int:
    """Leaf count of the legal-move tree of the bitboard generator (standard chess, or Chess960
    castling rules with chess960=True: X-FEN or Shredder-FEN castling rights)."""
    import chess

    from analyzer.chess._board import perft as _perft
    from analyzer.chess.analyze import _start_arrays

    bb, mb, st, ct = _start_arrays(chess.Board(fen, chess960=chess960))
    return int(_perft(bb, mb, st, ct, depth))


def fide_key(fen: str) -> int:
    """Our FIDE 9.2.2 repetition key of a position: Polyglot Zobrist, e.p. file only if legal."""
    import chess
    import numpy as np

    from analyzer.chess import _board as B
    from analyzer.chess.analyze import _start_arrays

    bb, mb, st, _ = _start_arrays(chess.Board(fen))
    pkey = np.uint64(B.piece_key(bb, mb, st[0]))
    return int(B.fide_key_from_piece_key(bb, st, pkey, bool(B.has_legal_ep(bb, st))))
