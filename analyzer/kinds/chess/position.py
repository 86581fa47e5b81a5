"""A position of the kernels' arrays as a python-chess Board, for the rare positions that Python
looks at whole: a game's final position probed in a tablebase, a certificate replayed, a board
drawn by `analyzer show`. Not on the hot path: one Board per position asked for.

The arrays are the replay's (`_board`'s docstring): bb uint64[8], st int64[4] (side to move,
castling bits, e.p. square, halfmove clock) and the game's castling table ct (the castling
rooks' start squares, the Chess960 flag).
"""

from __future__ import annotations

import chess

from analyzer.kinds.chess._tables import CT_CHESS960, CT_ROOK, ST_CASTLE, ST_EP, ST_HMC, ST_STM


def to_board(bb, st, ct, fullmove_number: int = 1) -> chess.Board:
    """The python-chess Board of the position (bb, st) in a game whose castling table is ct."""
    board = chess.Board(None, chess960=bool(ct[CT_CHESS960]))
    # the bitboards straight into python-chess's (a tablebase probe builds thousands of boards
    # per block: set_piece_at per piece cost ~70 us a board)
    board.pawns, board.knights, board.bishops = int(bb[0]), int(bb[1]), int(bb[2])
    board.rooks, board.queens, board.kings = int(bb[3]), int(bb[4]), int(bb[5])
    board.occupied_co[chess.WHITE] = int(bb[6])
    board.occupied_co[chess.BLACK] = int(bb[7])
    board.occupied = int(bb[6]) | int(bb[7])
    board.promoted = 0
    board.turn = int(st[ST_STM]) == 0
    rights = 0
    for i in range(4):
        if int(st[ST_CASTLE]) >> i & 1 and int(ct[CT_ROOK + i]) >= 0:
            rights |= 1 << int(ct[CT_ROOK + i])
    board.castling_rights = rights
    board.ep_square = int(st[ST_EP]) if int(st[ST_EP]) >= 0 else None
    board.halfmove_clock = int(st[ST_HMC])
    board.fullmove_number = fullmove_number
    return board
