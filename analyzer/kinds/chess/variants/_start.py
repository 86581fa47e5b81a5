"""Start positions: python-chess variant boards (or FEN) -> the kernel's (bb, mb, st) arrays."""

from __future__ import annotations

import functools

import numpy as np

from analyzer.kinds.chess._tables import BB_BLACK, BB_WHITE, ST_CASTLE, ST_EP, ST_HMC, ST_STM
from analyzer.kinds.chess.variants import PYCHESS_CLASS
from analyzer.kinds.chess.variants._board import ST_CHECKS
from analyzer.kinds.chess.variants._codes import V_CRAZYHOUSE, V_THREECHECK


def board_class(v: int):
    import chess.variant

    return getattr(chess.variant, PYCHESS_CLASS[v])


def arrays_of_board(board, v: int):
    """(bb uint64[9], mb int8[64], st int64[16]) of a python-chess (variant) board."""
    import chess

    bb = np.zeros(9, np.uint64)
    mb = np.zeros(64, np.int8)
    for sq, piece in board.piece_map().items():
        bb[piece.piece_type - 1] |= np.uint64(1 << sq)
        bb[BB_WHITE + (0 if piece.color else 1)] |= np.uint64(1 << sq)
        mb[sq] = piece.piece_type
    bb[8] = np.uint64(board.promoted & (int(bb[BB_WHITE]) | int(bb[BB_BLACK])))
    rights = board.clean_castling_rights()
    c = 0
    if rights & chess.BB_H1:
        c |= 1
    if rights & chess.BB_A1:
        c |= 2
    if rights & chess.BB_H8:
        c |= 4
    if rights & chess.BB_A8:
        c |= 8
    st = np.zeros(16, np.int64)
    st[ST_STM] = 0 if board.turn else 1
    st[ST_CASTLE] = c
    st[ST_EP] = -1 if board.ep_square is None else board.ep_square
    st[ST_HMC] = board.halfmove_clock
    if v == V_THREECHECK:
        st[ST_CHECKS] = board.remaining_checks[chess.WHITE]
        st[ST_CHECKS + 1] = board.remaining_checks[chess.BLACK]
    else:
        st[ST_CHECKS] = st[ST_CHECKS + 1] = 3
    if v == V_CRAZYHOUSE:
        for color, base in ((chess.WHITE, 6), (chess.BLACK, 11)):
            for pt in range(1, 6):
                st[base + pt - 1] = board.pockets[color].count(pt)
    return bb, mb, st


@functools.lru_cache(maxsize=256)
def start_arrays(v: int, fen: str | None = None):
    """Arrays of the variant's start position, or of `fen` on the variant board (ValueError if the
    FEN is unreadable or not a valid position of that variant)."""
    cls = board_class(v)
    board = cls() if fen is None else cls(fen)
    if fen is not None and not board.is_valid():
        import chess

        reason = ", ".join(s.name for s in chess.Status if s and s.name and board.status() & s)
        raise ValueError(reason or "invalid position")
    return arrays_of_board(board, v)
