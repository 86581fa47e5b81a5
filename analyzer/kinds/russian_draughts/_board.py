"""Russian draughts on 32-square bitboards: tables, move generator, perft (numba kernels).

Square numbering (PDN / lidraughts, docs/rules.md 4.3): internal index ``i = n - 1`` for PDN square
``n`` (1..32). Row ``y = i // 4`` counts from the top (y = 0 is rank 8, y = 7 is rank 1);
on even rows the dark squares are files b, d, f, h, on odd rows a, c, e, g. So 1 = b8, 4 = h8,
5 = a7, 29 = a1, 32 = g1. White starts on 21..32 and moves "up" (towards y = 0).

A position is four uint64 bitboards (bit i = square i): white men, white kings, black men,
black kings, plus the side to move (0 = white, 1 = black).

A move is (from, to, captured mask, promotes, landing path). Captured pieces stay on the board
until the move is complete (they block, and cannot be jumped twice: the "Turkish strike" rule).
Captures are compulsory; any capture sequence may be chosen (no majority rule), but a sequence
must be followed to its end, and a king that can continue capturing from some of the squares
behind a captured piece must stop on one of those. A man that reaches the last rank during a
capture is promoted at once and continues capturing as a king.

Moves that differ only in the order of the captures / the path (same from, to and captured set)
give the same position; the generator keeps the first one found (``dedup=True``), as perft counts
positions-after-move, not paths.
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numba
import numpy as np

WHITE = 0
BLACK = 1

MAX_MOVES = 256  # per position (Russian positions have far fewer)
MAX_PATH = 16  # landing squares of one capture (at most 12 pieces can be captured)
_MAX_STACK = 1024

ONE = np.uint64(1)
ZERO = np.uint64(0)
FULL = np.uint64(0xFFFFFFFF)


def _build_neighbours() -> np.ndarray:
    nb = np.full((32, 4), -1, dtype=np.int64)
    # dirs: 0 = up-left, 1 = up-right, 2 = down-left, 3 = down-right ("up" = towards rank 8)
    dy = (-1, -1, 1, 1)
    dc = (-1, 1, -1, 1)
    for i in range(32):
        y, x = divmod(i, 4)
        col = 2 * x + (1 if y % 2 == 0 else 0)
        for d in range(4):
            ny, nc = y + dy[d], col + dc[d]
            if 0 <= ny < 8 and 0 <= nc < 8:
                nb[i, d] = ny * 4 + nc // 2
    return nb


NB = _build_neighbours()


def square_col_row(i: int) -> tuple[int, int]:
    """(file 0..7 = a..h, rank 1..8) of internal square index i."""
    y, x = divmod(i, 4)
    return 2 * x + (1 if y % 2 == 0 else 0), 8 - y


def square_name(i: int) -> str:
    c, r = square_col_row(i)
    return "abcdefgh"[c] + str(r)


def algebraic_to_index(file_idx: int, rank: int) -> int:
    """Internal index of a dark square, or -1 for a light square / off board."""
    if not (0 <= file_idx < 8 and 1 <= rank <= 8):
        return -1
    if (file_idx + rank - 1) % 2 != 0:
        return -1
    return (8 - rank) * 4 + file_idx // 2


# main diagonal a1-h8 ("bolshaya doroga"): PDN 29, 25, 22, 18, 15, 11, 8, 4
MAIN_DIAGONAL_SQUARES = (29, 25, 22, 18, 15, 11, 8, 4)
MAIN_DIAGONAL = np.uint64(sum(1 << (n - 1) for n in MAIN_DIAGONAL_SQUARES))
ROW0 = np.uint64(0xF)  # rank 8: white promotes here
ROW7 = np.uint64(0xF << 28)  # rank 1: black promotes here


def _build_zobrist() -> tuple[np.ndarray, np.uint64]:
    rng = np.random.Generator(np.random.PCG64(0x5EED_D2A6))
    z = rng.integers(1, 2**63 - 1, size=(2, 2, 32), dtype=np.int64).astype(np.uint64)
    z ^= rng.integers(1, 2**63 - 1, size=(2, 2, 32), dtype=np.int64).astype(np.uint64) << np.uint64(1)
    stm = np.uint64(rng.integers(1, 2**63 - 1, dtype=np.int64)) << np.uint64(1) | ONE
    return z, stm


# ZOBRIST[colour, kind (0 man, 1 king), square]; ZOBRIST_BLACK is xored when black is to move
ZOBRIST, ZOBRIST_BLACK = _build_zobrist()

_INITIAL = (np.uint64(0xFFF << 20), ZERO, np.uint64(0xFFF), ZERO, WHITE)


def initial_position():
    """(white men, white kings, black men, black kings, side to move) of the initial position."""
    return _INITIAL


@numba.njit(cache=True, nogil=True)
def zobrist_key(wm, wk, bm, bk, stm):
    key = np.uint64(0)
    for i in range(32):
        b = np.uint64(1) << np.uint64(i)
        if wm & b:
            key ^= ZOBRIST[0, 0, i]
        elif wk & b:
            key ^= ZOBRIST[0, 1, i]
        elif bm & b:
            key ^= ZOBRIST[1, 0, i]
        elif bk & b:
            key ^= ZOBRIST[1, 1, i]
    if stm == 1:
        key ^= ZOBRIST_BLACK
    return key


@numba.njit(cache=True, nogil=True)
def popcount(x):
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _bit(i):
    return np.uint64(1) << np.uint64(i)


@numba.njit(cache=True, nogil=True)
def _king_can_capture(sq, occ, capturable):
    """True if a king on `sq` has a capture (occ: occupied squares, incl. captured pieces)."""
    for d in range(4):
        s = NB[sq, d]
        while s >= 0 and not (occ & _bit(s)):
            s = NB[s, d]
        if s >= 0 and (capturable & _bit(s)):
            t = NB[s, d]
            if t >= 0 and not (occ & _bit(t)):
                return True
    return False


@numba.njit(cache=True, nogil=True)
def move_buffers():
    """Room for the moves of one position, as generate_moves fills it: (from, to, captured
    mask, promotes, path of landing squares, path length), MAX_MOVES each."""
    return (
        np.empty(MAX_MOVES, np.int64),
        np.empty(MAX_MOVES, np.int64),
        np.empty(MAX_MOVES, np.uint64),
        np.empty(MAX_MOVES, np.bool_),
        np.empty((MAX_MOVES, MAX_PATH), np.int64),
        np.empty(MAX_MOVES, np.int64),
    )


@numba.njit(cache=True, nogil=True)
def generate_moves(wm, wk, bm, bk, stm, mv_from, mv_to, mv_capt, mv_promo, mv_path, mv_plen, dedup):
    """Fill the move arrays with the legal moves; return their number (captures if any exist).

    mv_from/mv_to/mv_plen: int64[MAX_MOVES]; mv_capt: uint64[MAX_MOVES]; mv_promo: bool;
    mv_path: int64[MAX_MOVES, MAX_PATH] landing squares of a capture (path[plen-1] == to).
    """
    if stm == 0:
        own_m = wm
        own_k = wk
        opp = bm | bk
        prom_row = ROW0
    else:
        own_m = bm
        own_k = bk
        opp = wm | wk
        prom_row = ROW7
    occ_all = wm | wk | bm | bk
    n = 0
    # ---- captures: iterative DFS per piece
    st_sq = np.empty(_MAX_STACK, np.int64)
    st_king = np.empty(_MAX_STACK, np.bool_)
    st_capt = np.empty(_MAX_STACK, np.uint64)
    st_depth = np.empty(_MAX_STACK, np.int64)
    path = np.empty(MAX_PATH, np.int64)
    land = np.empty(8, np.int64)
    pieces = own_m | own_k
    for frm in range(32):
        fb = _bit(frm)
        if not (pieces & fb):
            continue
        is_king0 = (own_k & fb) != 0
        occ = occ_all & ~fb  # the mover has left its square
        sp = 0
        st_sq[0] = frm
        st_king[0] = is_king0
        st_capt[0] = np.uint64(0)
        st_depth[0] = 0
        sp = 1
        while sp > 0:
            sp -= 1
            sq = st_sq[sp]
            king = st_king[sp]
            capt = st_capt[sp]
            depth = st_depth[sp]
            if depth > 0:
                path[depth - 1] = sq
            capturable = opp & ~capt
            pushed = 0
            if depth < MAX_PATH:
                for d in range(4):
                    if king:
                        s = NB[sq, d]
                        while s >= 0 and not (occ & _bit(s)):
                            s = NB[s, d]
                        if s < 0 or not (capturable & _bit(s)):
                            continue
                        ncapt = capt | _bit(s)
                        nl = 0
                        t = NB[s, d]
                        while t >= 0 and not (occ & _bit(t)):
                            land[nl] = t
                            nl += 1
                            t = NB[t, d]
                        if nl == 0:
                            continue
                        # must stop where the capture can be continued, if anywhere
                        ncapturable = opp & ~ncapt
                        ncont = 0
                        for j in range(nl):
                            if _king_can_capture(land[j], occ, ncapturable):
                                ncont += 1
                        for j in range(nl):
                            if ncont > 0 and not _king_can_capture(land[j], occ, ncapturable):
                                continue
                            if sp < _MAX_STACK:
                                st_sq[sp] = land[j]
                                st_king[sp] = True
                                st_capt[sp] = ncapt
                                st_depth[sp] = depth + 1
                                sp += 1
                                pushed += 1
                    else:
                        s = NB[sq, d]
                        if s < 0 or not (capturable & _bit(s)):
                            continue
                        t = NB[s, d]
                        if t < 0 or (occ & _bit(t)):
                            continue
                        if sp < _MAX_STACK:
                            st_sq[sp] = t
                            st_king[sp] = (prom_row & _bit(t)) != 0
                            st_capt[sp] = capt | _bit(s)
                            st_depth[sp] = depth + 1
                            sp += 1
                            pushed += 1
            if pushed == 0 and depth > 0:
                # end of a capture sequence: emit
                dup = False
                if dedup:
                    for j in range(n):
                        if mv_from[j] == frm and mv_to[j] == sq and mv_capt[j] == capt:
                            dup = True
                            break
                if not dup and n < MAX_MOVES:
                    mv_from[n] = frm
                    mv_to[n] = sq
                    mv_capt[n] = capt
                    mv_promo[n] = king and not is_king0
                    for j in range(depth):
                        mv_path[n, j] = path[j]
                    mv_plen[n] = depth
                    n += 1
    if n > 0:
        return n
    # ---- quiet moves
    empty = ~occ_all & FULL
    for frm in range(32):
        fb = _bit(frm)
        if own_k & fb:
            for d in range(4):
                t = NB[frm, d]
                while t >= 0 and (empty & _bit(t)):
                    if n < MAX_MOVES:
                        mv_from[n] = frm
                        mv_to[n] = t
                        mv_capt[n] = np.uint64(0)
                        mv_promo[n] = False
                        mv_path[n, 0] = t
                        mv_plen[n] = 1
                        n += 1
                    t = NB[t, d]
        elif own_m & fb:
            d0 = 0 if stm == 0 else 2
            for d in range(d0, d0 + 2):
                t = NB[frm, d]
                if t >= 0 and (empty & _bit(t)):
                    if n < MAX_MOVES:
                        mv_from[n] = frm
                        mv_to[n] = t
                        mv_capt[n] = np.uint64(0)
                        mv_promo[n] = (prom_row & _bit(t)) != 0
                        mv_path[n, 0] = t
                        mv_plen[n] = 1
                        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def apply_move(wm, wk, bm, bk, stm, frm, to, capt, promo):
    """Position after the move (side to move flips)."""
    if stm == 0:
        wm, wk = _move_pieces(wm, wk, frm, to, promo)
        bm &= ~capt
        bk &= ~capt
    else:
        bm, bk = _move_pieces(bm, bk, frm, to, promo)
        wm &= ~capt
        wk &= ~capt
    return wm, wk, bm, bk, 1 - stm


@numba.njit(cache=True, nogil=True)
def _move_pieces(men, kings, frm, to, promo):
    """(men, kings) of the side that moves from `frm` to `to`, the same code for either colour:
    a king stays a king, a man is crowned when `promo` says so."""
    fb = _bit(frm)
    tb = _bit(to)
    if kings & fb:
        return men, (kings & ~fb) | tb
    men = men & ~fb
    if promo:
        return men, kings | tb
    return men | tb, kings


@numba.njit(cache=True, nogil=True)
def _perft(wm, wk, bm, bk, stm, depth, dedup):
    if depth == 0:
        return 1
    mv_from, mv_to, mv_capt, mv_promo, mv_path, mv_plen = move_buffers()
    n = generate_moves(wm, wk, bm, bk, stm, mv_from, mv_to, mv_capt, mv_promo, mv_path, mv_plen, dedup)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        a, b, c, e, s = apply_move(wm, wk, bm, bk, stm, mv_from[i], mv_to[i], mv_capt[i], mv_promo[i])
        total += _perft(a, b, c, e, s, depth - 1, dedup)
    return total


def perft(depth: int, position=None, dedup: bool = True) -> int:
    """Leaf count `depth` plies from `position` (default: the initial position)."""
    wm, wk, bm, bk, stm = position if position is not None else _INITIAL
    return int(_perft(np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk), int(stm), int(depth), dedup))


def legal_moves(position, dedup: bool = True):
    """Python helper (tests): list of (from, to, captured mask, promotes, path) with internal indices."""
    wm, wk, bm, bk, stm = position
    mv_from, mv_to, mv_capt, mv_promo, mv_path, mv_plen = move_buffers()
    n = generate_moves(
        np.uint64(wm),
        np.uint64(wk),
        np.uint64(bm),
        np.uint64(bk),
        int(stm),
        mv_from,
        mv_to,
        mv_capt,
        mv_promo,
        mv_path,
        mv_plen,
        dedup,
    )
    return [
        (int(mv_from[i]), int(mv_to[i]), int(mv_capt[i]), bool(mv_promo[i]), [int(x) for x in mv_path[i, : mv_plen[i]]])
        for i in range(n)
    ]


analyzer._numba_env.plain_calls(globals())
