"""Constant tables for the bitboard kernels: attack masks, rays and Polyglot Zobrist keys.

Squares are numbered as in python-chess (0 = a1, 7 = h1, 63 = h8); piece types too
(1 pawn .. 6 king). Colours are small ints (WHITE = 0, BLACK = 1). Everything is np.uint64 so that
numba never mixes signed and unsigned bitboards.
"""

from __future__ import annotations

import numpy as np

from analyzer.kinds.chess._polyglot import POLYGLOT_RANDOM

WHITE = 0
BLACK = 1

PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = 1, 2, 3, 4, 5, 6

# Castling bits in the state array.
CASTLE_WK = 1
CASTLE_WQ = 2
CASTLE_BK = 4
CASTLE_BQ = 8

# Per-position flag bits (the replay's facts["flags"]), here rather than in _replay so that Python
# code reading them (valuation's tablebase probes) does not import numba and the JIT kernels.
FLAG_CHECK = 1
FLAG_CHECKMATE = 2
FLAG_STALEMATE = 4
FLAG_INSUFFICIENT = 8
FLAG_WINDOW_START = 16  # an irreversible move led here (or ply 0): repetitions never reach back past it
FLAG_HAS_MOVE = 32  # the side to move has a legal move
FLAG_FIFTY_INTENDED = 64  # a legal non-zeroing move exists after which the opponent has a legal move
FLAG_LEGAL_EP = 128
FLAG_OFFER = 256  # a draw offer was recorded with the move that led here ("=", "{ ... offers draw }")
FLAG_FIFTY_LOOKED = 512  # FLAG_FIFTY_INTENDED was evaluated at this position
# 1997-2005 texts: positions differ "if the right to castle has been changed temporarily or
# permanently". Castling possible now (bits WK, WQ, BK, BQ, each as if that side were to move)
# is stored from bit CASTLE_NOW_SHIFT; under that identity a repetition window also restarts
# where these bits change (FLAG_WINDOW97), so positions on both sides of a temporary change of
# the right to castle are not the same.
CASTLE_NOW_SHIFT = 10
FLAG_WINDOW97 = 1 << 14
# rep_next and rep_next97 are int8: counts above this (a generated game of thousands of plies
# repeating a position) are stored as it, not wrapped to negative numbers. Rule kernels compare
# them with an edition's claim count - 1, so a claim count up to 128 reads them exactly.
REP_NEXT_MAX = 127

# Move flags (bits 15..16 of an encoded move).
MF_NORMAL = 0
MF_EP = 1
MF_CASTLE = 2
MF_DOUBLE = 3

# Indices in the uint64 bitboard array `bb`: one bitboard per piece type, then per colour.
BB_PAWNS, BB_KNIGHTS, BB_BISHOPS, BB_ROOKS, BB_QUEENS, BB_KINGS = 0, 1, 2, 3, 4, 5
BB_WHITE = 6
BB_BLACK = 7

# Indices in the int64 state array `st` (variants append theirs after these: variants._board).
ST_STM = 0
ST_CASTLE = 1
ST_EP = 2  # en-passant target square after a double push (pseudo, as in python-chess), -1 if none
ST_HMC = 3


def _bit(sq: int) -> int:
    return 1 << sq


def _on_board(f: int, r: int) -> bool:
    return 0 <= f < 8 and 0 <= r < 8


def _leaper(deltas) -> np.ndarray:
    out = np.zeros(64, dtype=np.uint64)
    for sq in range(64):
        f, r = sq % 8, sq // 8
        m = 0
        for df, dr in deltas:
            if _on_board(f + df, r + dr):
                m |= _bit((r + dr) * 8 + f + df)
        out[sq] = np.uint64(m)
    return out


KNIGHT_ATTACKS = _leaper([(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)])
KING_ATTACKS = _leaper([(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)])
# PAWN_ATTACKS[c, sq]: squares a pawn of colour c standing on sq attacks.
PAWN_ATTACKS = np.stack([_leaper([(-1, 1), (1, 1)]), _leaper([(-1, -1), (1, -1)])])

# Ray directions: the first four increase the square index (nearest blocker = lowest bit),
# the last four decrease it (nearest blocker = highest bit).
_DIRS = [(0, 1), (1, 1), (1, 0), (-1, 1), (0, -1), (-1, -1), (-1, 0), (1, -1)]
DIR_N, DIR_NE, DIR_E, DIR_NW, DIR_S, DIR_SW, DIR_W, DIR_SE = range(8)
RAYS = np.zeros((8, 64), dtype=np.uint64)
for _d, (_df, _dr) in enumerate(_DIRS):
    for _sq in range(64):
        _f, _r = _sq % 8 + _df, _sq // 8 + _dr
        _m = 0
        while _on_board(_f, _r):
            _m |= _bit(_r * 8 + _f)
            _f += _df
            _r += _dr
        RAYS[_d, _sq] = np.uint64(_m)

# Slider attacks on an empty board (pin and check candidates before any blocker is looked at).
ROOK_EMPTY = RAYS[DIR_N] | RAYS[DIR_E] | RAYS[DIR_S] | RAYS[DIR_W]
BISHOP_EMPTY = RAYS[DIR_NE] | RAYS[DIR_NW] | RAYS[DIR_SE] | RAYS[DIR_SW]

FILE_MASKS = np.array([sum(_bit(r * 8 + f) for r in range(8)) for f in range(8)], dtype=np.uint64)
RANK_MASKS = np.array([sum(_bit(r * 8 + f) for f in range(8)) for r in range(8)], dtype=np.uint64)
DARK_SQUARES = np.uint64(0xAA55AA55AA55AA55)
LIGHT_SQUARES = np.uint64(~0xAA55AA55AA55AA55 & 0xFFFFFFFFFFFFFFFF)

# Castling rights lost when a move touches a square (from or to): a1, e1, h1, a8, e8, h8.
CASTLE_MASK_BY_SQUARE = np.zeros(64, dtype=np.int64)
CASTLE_MASK_BY_SQUARE[0] = CASTLE_WQ
CASTLE_MASK_BY_SQUARE[4] = CASTLE_WK | CASTLE_WQ
CASTLE_MASK_BY_SQUARE[7] = CASTLE_WK
CASTLE_MASK_BY_SQUARE[56] = CASTLE_BQ
CASTLE_MASK_BY_SQUARE[60] = CASTLE_BK | CASTLE_BQ
CASTLE_MASK_BY_SQUARE[63] = CASTLE_BK

# Castling of a game ("castling table" `ct`, int64[CT_SIZE], fixed for the whole game, passed next
# to bb/mb/st): ct[sq] = the castling bits a move loses when it touches square sq (from or to:
# the king's and the castling rooks' start squares); ct[CT_ROOK + i] = the start square of the
# rook of castling bit 1 << i (WK, WQ, BK, BQ; -1 if none); ct[CT_CHESS960] = 1 when the game
# follows python-chess's Chess960 SAN rules (castling only as O-O / O-O-O or king-takes-rook
# 'e1h1'). A castling move is encoded king square -> rook square (as python-chess's Chess960 UCI),
# so the rook squares need no lookup when the move is made.
CT_ROOK = 64
CT_CHESS960 = 68
CT_SIZE = 72
STANDARD_CASTLING = np.full(CT_SIZE, 0, dtype=np.int64)
STANDARD_CASTLING[:64] = CASTLE_MASK_BY_SQUARE
STANDARD_CASTLING[CT_ROOK : CT_ROOK + 4] = (7, 0, 63, 56)  # h1, a1, h8, a8

# Polyglot keys: 0..767 pieces (64 * kind + square, kind = 2 * (type - 1) + is_white),
# 768..771 castling (WK, WQ, BK, BQ), 772..779 en-passant file, 780 white to move.
POLYGLOT = np.array(POLYGLOT_RANDOM, dtype=np.uint64)
ZOBRIST_PIECE = np.zeros((2, 7, 64), dtype=np.uint64)  # [colour, type, square]
for _c in (WHITE, BLACK):
    for _t in range(1, 7):
        for _sq in range(64):
            ZOBRIST_PIECE[_c, _t, _sq] = POLYGLOT[64 * (2 * (_t - 1) + (1 - _c)) + _sq]
# Key of every castling-rights value (bits WK=1, WQ=2, BK=4, BQ=8).
ZOBRIST_CASTLE = np.zeros(16, dtype=np.uint64)
for _rights in range(16):
    _k = np.uint64(0)
    for _i in range(4):
        if _rights & (1 << _i):
            _k ^= POLYGLOT[768 + _i]
    ZOBRIST_CASTLE[_rights] = _k
ZOBRIST_EP_FILE = POLYGLOT[772:780].copy()
ZOBRIST_WHITE_TO_MOVE = POLYGLOT[780]

# BETWEEN[a, b]: squares strictly between a and b on a rank, file or diagonal (0 if not aligned);
# LINE[a, b]: the whole line through a and b (0 if not aligned). For pins.
BETWEEN = np.zeros((64, 64), dtype=np.uint64)
LINE = np.zeros((64, 64), dtype=np.uint64)
for _a in range(64):
    for _d, (_df, _dr) in enumerate(_DIRS):
        _f, _r = _a % 8 + _df, _a // 8 + _dr
        _between = 0
        while _on_board(_f, _r):
            _b = _r * 8 + _f
            BETWEEN[_a, _b] = np.uint64(_between)
            _line = int(RAYS[_d, _a]) | int(RAYS[(_d + 4) % 8, _a]) | _bit(_a)
            LINE[_a, _b] = np.uint64(_line)
            _between |= _bit(_b)
            _f += _df
            _r += _dr


# The eval fact of the replay (int16 per position; _replay.eval_at): no evaluation, centipawns
# saturated at +-EVAL_CP_MAX (+-300 pawns; Lichess's largest in lichess_sample is 154.14, and its
# win chance clamps at 10 pawns), or mate in N moves (N > 0: White mates; "#0", "#-0": the side to
# move is mated) as sign(N) * (EVAL_MATE_CODE - |N|), |N| capped at EVAL_MATE_CODE - EVAL_CP_MAX - 1.
# Here (no numba import) so that Python reads the codes without loading the kernels' modules.
EVAL_NONE = -32768
EVAL_CP_MAX = 30000
EVAL_MATE_CODE = 32767
