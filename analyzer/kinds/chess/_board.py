"""Bitboard chess kernels: attacks, legal move generation, making moves, Zobrist keys.

A position is three small arrays, so kernels can copy and pass them without Python objects:
  bb  uint64[8]  pawns, knights, bishops, rooks, queens, kings, white pieces, black pieces
  mb  int8[64]   piece type on each square (0 = empty)
  st  int64[4]   side to move, castling bits, en-passant square (-1), halfmove clock
and, fixed for a whole game, its castling table:
  ct  int64[CT_SIZE]  castling bits lost per touched square, the castling rooks' start squares,
                 the Chess960 SAN flag (analyzer.kinds.chess._tables); Chess960 and standard chess
                 differ only in this table.
Moves are int32: from | to << 6 | promotion type << 12 | flag << 15. A castling move goes from
the king's square to its rook's square (king-takes-rook, as python-chess's Chess960 UCI); the
king ends on the g or c file, the rook on the f or d file.
"""

from __future__ import annotations

from typing import Any

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from analyzer.kinds.chess._tables import (
    BB_BISHOPS,
    BB_BLACK,
    BB_KINGS,
    BB_KNIGHTS,
    BB_PAWNS,
    BB_QUEENS,
    BB_ROOKS,
    BB_WHITE,
    BETWEEN,
    BISHOP_EMPTY,
    CASTLE_BK,
    CASTLE_BQ,
    CASTLE_WK,
    CASTLE_WQ,
    CT_ROOK,
    DARK_SQUARES,
    DIR_E,
    DIR_N,
    DIR_NE,
    DIR_NW,
    DIR_S,
    DIR_SE,
    DIR_SW,
    DIR_W,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    LIGHT_SQUARES,
    LINE,
    MF_CASTLE,
    MF_DOUBLE,
    MF_EP,
    MF_NORMAL,
    PAWN_ATTACKS,
    RANK_MASKS,
    RAYS,
    ROOK_EMPTY,
    ST_CASTLE,
    ST_EP,
    ST_HMC,
    ST_STM,
    ZOBRIST_CASTLE,
    ZOBRIST_EP_FILE,
    ZOBRIST_PIECE,
    ZOBRIST_WHITE_TO_MOVE,
)

U0 = np.uint64(0)
U1 = np.uint64(1)
JIT: dict[str, Any] = {"cache": True, "nogil": True}
# Helpers that take arrays and never allocate are compiled without the numba runtime: with it,
# every call of a non-inlined helper increfs and decrefs each array argument with atomic
# instructions, which took ~60% of the replay time (perf, 2026-11-29). Such helpers must not
# allocate (np.empty, .copy()); callers pass scratch arrays.
HOT: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}
# Inlining: small helpers are `inline="always"` (numba copies their IR into the caller before
# typing). The large ones with one or few callers (checks_and_pins, has_legal_move, and in
# _replay resolve_san, repetition_count, _load_start, _lichess_clock_end, next_move_token) are
# `forceinline=True` instead (LLVM inlines their compiled code): the IR copies had taken ~1/3 of
# the replay kernel's cold compile (23.6 -> 19.1 s here, replay time unchanged). `_record` stays
# numba-inlined: LLVM-inlined, the replay was 40 % slower (measured 2026-12-01).


@njit(inline="always", **HOT)
def bit(sq):
    return U1 << np.uint64(sq)


@njit(inline="always", **HOT)
def lsb(b):
    return np.int64(trailing_zeros(b))


@njit(inline="always", **HOT)
def msb(b):
    return np.int64(63) - np.int64(leading_zeros(b))


@njit(inline="always", **HOT)
def popcount(b):
    n = 0
    while b:
        b &= b - U1
        n += 1
    return n


@njit(inline="always", **HOT)
def _ray(d, sq, occ, ascending):
    """The squares of ray d from sq up to its first blocker in occ (included). `ascending`, a
    literal at every call: the ray runs to higher squares, so its nearest blocker is the lowest
    set bit of blockers (else the highest); inlined, the choice costs nothing."""
    a = RAYS[d, sq]
    blk = a & occ
    if blk:
        a ^= RAYS[d, lsb(blk) if ascending else msb(blk)]
    return a


@njit(**HOT)
def bishop_attacks(sq, occ):
    up = _ray(DIR_NE, sq, occ, True) | _ray(DIR_NW, sq, occ, True)
    return up | _ray(DIR_SE, sq, occ, False) | _ray(DIR_SW, sq, occ, False)


@njit(**HOT)
def rook_attacks(sq, occ):
    up = _ray(DIR_N, sq, occ, True) | _ray(DIR_E, sq, occ, True)
    return up | _ray(DIR_S, sq, occ, False) | _ray(DIR_W, sq, occ, False)


@njit(inline="always", **HOT)
def piece_attacks(pt, frm, occ):
    """Squares a knight, bishop, rook or queen (piece type 2-5) on frm attacks with occupancy occ."""
    if pt == 2:
        return KNIGHT_ATTACKS[frm]
    if pt == 3:
        return bishop_attacks(frm, occ)
    if pt == 4:
        return rook_attacks(frm, occ)
    return bishop_attacks(frm, occ) | rook_attacks(frm, occ)


@njit(**HOT)
def is_attacked(bb, sq, by_mask, occ, target_color):
    """Does a piece in `by_mask` attack `sq` with occupancy `occ`? `target_color` owns `sq` (for
    pawns). Leapers first; a slider on one of sq's empty-board lines attacks it when nothing in
    `occ` stands between (no ray tracing; most squares have no such slider)."""
    if (
        (KNIGHT_ATTACKS[sq] & bb[BB_KNIGHTS])
        | (PAWN_ATTACKS[target_color, sq] & bb[BB_PAWNS])
        | (KING_ATTACKS[sq] & bb[BB_KINGS])
    ) & by_mask:
        return True
    sliders = (
        (BISHOP_EMPTY[sq] & (bb[BB_BISHOPS] | bb[BB_QUEENS])) | (ROOK_EMPTY[sq] & (bb[BB_ROOKS] | bb[BB_QUEENS]))
    ) & by_mask
    while sliders:
        s = lsb(sliders)
        sliders &= sliders - U1
        if not (BETWEEN[sq, s] & occ):
            return True
    return False


@njit(**HOT)
def king_square(bb, color):
    k = bb[BB_KINGS] & bb[BB_WHITE + color]
    if k == U0:
        return -1
    return lsb(k)


@njit(**HOT)
def is_safe_after(bb, stm, frm, to, ep_cap_sq, moving_king):
    """Is the own king safe after moving frm->to (captured piece on `to`, or on ep_cap_sq)?"""
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    fb = bit(frm)
    tb = bit(to)
    occ2 = (occ & ~fb) | tb
    enemy = bb[BB_BLACK - stm] & ~tb
    if ep_cap_sq >= 0:
        cb = bit(ep_cap_sq)
        occ2 &= ~cb
        enemy &= ~cb
    if moving_king:
        k = to
    else:
        k = king_square(bb, stm)
        if k < 0:
            return True
    return not is_attacked(bb, k, enemy, occ2, stm)


@njit(inline="always", **HOT)
def side_boards(bb, st):
    """(side to move, its pieces, the other side's, all occupied squares): what most move
    generators start from, here once for the chess and the variants kernels."""
    stm = st[ST_STM]
    own = bb[BB_WHITE + stm]
    enemy = bb[BB_BLACK - stm]
    return stm, own, enemy, own | enemy


@njit(inline="always", **HOT)
def pawn_step_targets(stm, frm, enemy, occ):
    """Where side stm's pawn on frm can go in one step: its captures of `enemy` and the single
    push onto an empty square (not the double push or e.p.), for the "any legal move?" tests."""
    t = PAWN_ATTACKS[stm, frm] & enemy
    to = frm + (8 if stm == 0 else -8)
    if 0 <= to < 64 and not (occ & bit(to)):
        t |= bit(to)
    return t


@njit(**HOT)
def encode(frm, to, promo, flag):
    return np.int32(frm | (to << 6) | (promo << 12) | (flag << 15))


@njit(inline="always", **HOT)
def m_from(m):
    return m & 63


@njit(inline="always", **HOT)
def m_to(m):
    return (m >> 6) & 63


@njit(inline="always", **HOT)
def m_promo(m):
    return (m >> 12) & 7


@njit(inline="always", **HOT)
def m_flag(m):
    return (m >> 15) & 3


@njit(inline="always", **HOT)
def castle_targets(frm, to):
    """(king's, rook's) destination of the castling move frm (king) -> to (rook)."""
    base = frm & 56
    if to > frm:
        return base + 6, base + 5
    return base + 2, base + 3


@njit(**HOT)
def castle_move_for(bb, rights, ct, color, kingside):
    """The castling move of `color` (king square -> rook square, MF_CASTLE) if it would be legal
    with `color` to move, else 0. As python-chess generate_castling_moves (Chess960 rules, which
    include standard castling): the right; every square between the king and its destination
    and between the rook and its destination, and both destinations, empty but for this king
    and rook; no square from the king's start to its destination attacked (the destination with
    the rook already on its new square)."""
    i = (0 if kingside else 1) + 2 * color
    if not (rights & (1 << i)):
        return np.int32(0)
    r = ct[CT_ROOK + i]
    kings = bb[BB_KINGS] & bb[BB_WHITE + color]
    if r < 0 or kings == U0:
        return np.int32(0)
    k = lsb(kings)
    kt, rt = castle_targets(k, r)
    kb = bit(k)
    rb = bit(r)
    ktb = bit(kt)
    rtb = bit(rt)
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    kpath = BETWEEN[k, kt]
    if (occ ^ kb ^ rb) & (kpath | BETWEEN[r, rt] | ktb | rtb):
        return np.int32(0)
    enemy = bb[BB_BLACK - color]
    occ_k = occ ^ kb
    path = kpath | kb
    while path:
        s = lsb(path)
        path &= path - U1
        if is_attacked(bb, s, enemy, occ_k, color):
            return np.int32(0)
    if is_attacked(bb, kt, enemy, occ ^ kb ^ rb ^ rtb, color):
        return np.int32(0)
    return encode(k, r, 0, MF_CASTLE)


@njit(**HOT)
def castle_legal_for(bb, rights, ct, color, kingside):
    """Castling of `color` would be legal if it were to move: right, empty path, no attacked
    square on the king's way (including its start: not in check)."""
    return castle_move_for(bb, rights, ct, color, kingside) != 0


@njit(**HOT)
def _push_if_legal(bb, stm, frm, to, promo, flag, ep_cap, moving_king, out, n, limit):
    if n >= limit:
        return n
    if is_safe_after(bb, stm, frm, to, ep_cap, moving_king):
        out[n] = encode(frm, to, promo, flag)
        n += 1
    return n


@njit(**HOT)
def gen_legal(bb, mb, st, ct, out, limit):
    """Write up to `limit` legal moves into `out`; return how many. limit=1 answers 'any legal move?'."""
    stm, own, enemy, occ = side_boards(bb, st)
    n = 0
    # King first: it is the cheapest way to find a legal move quickly.
    ksq = king_square(bb, stm)
    if ksq >= 0:
        t = KING_ATTACKS[ksq] & ~own
        while t:
            to = lsb(t)
            t &= t - U1
            n = _push_if_legal(bb, stm, ksq, to, 0, MF_NORMAL, -1, True, out, n, limit)
            if n >= limit:
                return n
    # Knights, bishops, rooks, queens.
    pieces = own & (bb[BB_KNIGHTS] | bb[BB_BISHOPS] | bb[BB_ROOKS] | bb[BB_QUEENS])
    while pieces:
        frm = lsb(pieces)
        pieces &= pieces - U1
        t = piece_attacks(mb[frm], frm, occ) & ~own
        while t:
            to = lsb(t)
            t &= t - U1
            n = _push_if_legal(bb, stm, frm, to, 0, MF_NORMAL, -1, False, out, n, limit)
            if n >= limit:
                return n
    # Pawns.
    pawns = own & bb[BB_PAWNS]
    fwd = 8 if stm == 0 else -8
    last_rank = 7 if stm == 0 else 0
    start_rank = 1 if stm == 0 else 6
    ep = st[ST_EP]
    while pawns:
        frm = lsb(pawns)
        pawns &= pawns - U1
        to = frm + fwd
        targets = PAWN_ATTACKS[stm, frm] & enemy
        if 0 <= to < 64 and not (occ & bit(to)):
            if to // 8 == last_rank:
                for pr in (5, 4, 3, 2):
                    n = _push_if_legal(bb, stm, frm, to, pr, MF_NORMAL, -1, False, out, n, limit)
            else:
                n = _push_if_legal(bb, stm, frm, to, 0, MF_NORMAL, -1, False, out, n, limit)
                if frm // 8 == start_rank:
                    to2 = to + fwd
                    if not (occ & bit(to2)):
                        n = _push_if_legal(bb, stm, frm, to2, 0, MF_DOUBLE, -1, False, out, n, limit)
            if n >= limit:
                return n
        while targets:
            to = lsb(targets)
            targets &= targets - U1
            if to // 8 == last_rank:
                for pr in (5, 4, 3, 2):
                    n = _push_if_legal(bb, stm, frm, to, pr, MF_NORMAL, -1, False, out, n, limit)
            else:
                n = _push_if_legal(bb, stm, frm, to, 0, MF_NORMAL, -1, False, out, n, limit)
            if n >= limit:
                return n
        if (
            ep >= 0
            and (PAWN_ATTACKS[stm, frm] & bit(ep))
            and not (occ & bit(ep))
            and frm // 8 == (4 if stm == 0 else 3)
        ):
            n = _push_if_legal(bb, stm, frm, ep, 0, MF_EP, ep - fwd, False, out, n, limit)
            if n >= limit:
                return n
    # Castling.
    if st[ST_CASTLE]:
        m = castle_move_for(bb, st[ST_CASTLE], ct, stm, True)
        if m and n < limit:
            out[n] = m
            n += 1
        m = castle_move_for(bb, st[ST_CASTLE], ct, stm, False)
        if m and n < limit:
            out[n] = m
            n += 1
    return n


@njit(forceinline=True, **HOT)  # one caller: the replay loop
def checks_and_pins(bb, stm, ksq, pin_out):
    """Is `stm` in check on ksq? Also writes its pinned pieces to pin_out[0]. One pass over the
    enemy sliders on the king's empty-board lines: no blocker = check, one own blocker = pin."""
    pin_out[0] = U0
    if ksq < 0:
        return False
    k = np.uintp(ksq)  # unsigned indices: no negative-index wraparound code
    own = bb[np.uintp(6 + stm)]
    enemy = bb[np.uintp(7 - stm)]
    occ = own | enemy
    if (KNIGHT_ATTACKS[k] & bb[BB_KNIGHTS] & enemy) or (PAWN_ATTACKS[np.uintp(stm), k] & bb[BB_PAWNS] & enemy):
        chk = True
    else:
        chk = False
    snipers = (
        (ROOK_EMPTY[k] & (bb[BB_ROOKS] | bb[BB_QUEENS])) | (BISHOP_EMPTY[k] & (bb[BB_BISHOPS] | bb[BB_QUEENS]))
    ) & enemy
    pinned = U0
    while snipers:
        s = np.uintp(lsb(snipers))
        snipers &= snipers - U1
        b = BETWEEN[k, s] & occ
        if not b:
            chk = True
        elif not (b & (b - U1)) and (b & own):
            pinned |= b
    pin_out[0] = pinned
    return chk


@njit(forceinline=True, **HOT)  # one caller: the replay loop
def has_legal_move(bb, mb, st, ct, chk, pinned, ksq, scratch):
    """Any legal move? Fast when not in check: a piece that is not pinned (or moves along its
    pin line) with a pseudo-legal target has a legal move. Falls back to gen_legal otherwise.
    ksq: the king square of the side to move (the caller has it already)."""
    if not chk:
        stm, own, enemy, occ = side_boards(bb, st)
        if ksq >= 0:
            free = own & ~pinned
            # Any unpinned pawn with an empty square ahead (the usual case, one shift).
            fp = free & bb[BB_PAWNS]
            ahead = (fp << np.uint64(8)) if stm == 0 else (fp >> np.uint64(8))
            if ahead & ~occ:
                return True
            n = free & bb[BB_KNIGHTS]
            while n:
                frm = lsb(n)
                n &= n - U1
                if KNIGHT_ATTACKS[frm] & ~own:
                    return True
            sl = own & (bb[BB_BISHOPS] | bb[BB_ROOKS] | bb[BB_QUEENS])
            while sl:
                frm = lsb(sl)
                sl &= sl - U1
                t = piece_attacks(mb[frm], frm, occ) & ~own
                if pinned & bit(frm):
                    t &= LINE[ksq, frm]
                if t:
                    return True
            pw = own & bb[BB_PAWNS]
            while pw:
                frm = lsb(pw)
                pw &= pw - U1
                t = pawn_step_targets(stm, frm, enemy, occ)
                if pinned & bit(frm):
                    t &= LINE[ksq, frm]
                if t:
                    return True
    return gen_legal(bb, mb, st, ct, scratch, 1) > 0


@njit(**HOT)
def has_legal_ep(bb, st):
    """A legal en-passant capture exists (FIDE 9.2.2 identity; python-chess has_legal_en_passant)."""
    ep = st[ST_EP]
    if ep < 0:
        return False
    stm = st[ST_STM]
    own = bb[BB_WHITE + stm]
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    if occ & bit(ep):
        return False
    # As python-chess: capturers on the fifth rank (white) / fourth rank (black).
    cands = PAWN_ATTACKS[1 - stm, ep] & bb[BB_PAWNS] & own & RANK_MASKS[4 if stm == 0 else 3]
    cap = ep - 8 if stm == 0 else ep + 8
    while cands:
        frm = lsb(cands)
        cands &= cands - U1
        if is_safe_after(bb, stm, frm, ep, cap, False):
            return True
    return False


@njit(**HOT)
def make_move(bb, mb, st, ct, m):
    """Play legal move `m` in place; return the captured piece type (0 = none)."""
    stm = st[ST_STM]
    frm = m_from(m)
    to = m_to(m)
    promo = m_promo(m)
    flag = m_flag(m)
    pt = mb[frm]
    fb = bit(frm)
    tb = bit(to)
    own_i = 6 + stm
    opp_i = 7 - stm
    if flag == MF_CASTLE:
        # King frm -> kt, rook to -> rt; any of the four squares may coincide.
        kt, rt = castle_targets(frm, to)
        ktb = bit(kt)
        rtb = bit(rt)
        bb[BB_KINGS] = (bb[BB_KINGS] & ~fb) | ktb
        bb[BB_ROOKS] = (bb[BB_ROOKS] & ~tb) | rtb
        bb[own_i] = (bb[own_i] & ~(fb | tb)) | ktb | rtb
        mb[frm] = 0
        mb[to] = 0
        mb[kt] = 6
        mb[rt] = 4
        st[ST_CASTLE] &= ~(ct[frm] | ct[to])
        st[ST_EP] = -1
        st[ST_HMC] += 1
        st[ST_STM] = 1 - stm
        return 0
    captured = mb[to]
    if captured:
        bb[captured - 1] &= ~tb
        bb[opp_i] &= ~tb
    if flag == MF_EP:
        cap = to - 8 if stm == 0 else to + 8
        cb = bit(cap)
        bb[BB_PAWNS] &= ~cb
        bb[opp_i] &= ~cb
        mb[cap] = 0
        captured = 1
    bb[pt - 1] &= ~fb
    bb[own_i] = (bb[own_i] & ~fb) | tb
    mb[frm] = 0
    newpt = promo if promo else pt
    bb[newpt - 1] |= tb
    mb[to] = newpt
    # Castling rights, en passant, clock, side to move.
    st[ST_CASTLE] &= ~(ct[frm] | ct[to])
    if flag == MF_DOUBLE:
        st[ST_EP] = (frm + to) // 2
    else:
        st[ST_EP] = -1
    if pt == 1 or captured:
        st[ST_HMC] = 0
    else:
        st[ST_HMC] += 1
    st[ST_STM] = 1 - stm
    return captured


@njit(**HOT)
def piece_key(bb, mb, stm):
    """Zobrist key of pieces and side to move (no castling, no en passant)."""
    k = U0
    for c in range(2):
        occ = bb[BB_WHITE + c]
        while occ:
            sq = lsb(occ)
            occ &= occ - U1
            k ^= ZOBRIST_PIECE[c, mb[sq], sq]
    if stm == 0:
        k ^= ZOBRIST_WHITE_TO_MOVE
    return k


@njit(**HOT)
def fide_key_from_piece_key(bb, st, pkey, legal_ep):
    k = pkey ^ ZOBRIST_CASTLE[st[ST_CASTLE]]
    if legal_ep:
        k ^= ZOBRIST_EP_FILE[st[ST_EP] % 8]
    return k


@njit(**HOT)
def castle_now_bits(bb, rights, ct):
    """Castling possible right now, per colour and side (bits WK=1, WQ=2, BK=4, BQ=8), each as
    if that colour were to move: what the 1997-2005 texts call the right to castle, which can
    change 'temporarily' while the castling rights stay."""
    b = 0
    if rights == 0:
        return b
    if castle_legal_for(bb, rights, ct, 0, True):
        b |= CASTLE_WK
    if castle_legal_for(bb, rights, ct, 0, False):
        b |= CASTLE_WQ
    if castle_legal_for(bb, rights, ct, 1, True):
        b |= CASTLE_BK
    if castle_legal_for(bb, rights, ct, 1, False):
        b |= CASTLE_BQ
    return b


@njit(**HOT)
def _side_insufficient(bb, color):
    own = bb[BB_WHITE + color]
    other = bb[BB_BLACK - color]
    if own & (bb[BB_PAWNS] | bb[BB_ROOKS] | bb[BB_QUEENS]):
        return False
    if own & bb[BB_KNIGHTS]:
        return popcount(own) <= 2 and not (other & ~bb[BB_KINGS] & ~bb[BB_QUEENS])
    if own & bb[BB_BISHOPS]:
        same_colour = (not (bb[BB_BISHOPS] & DARK_SQUARES)) or (not (bb[BB_BISHOPS] & LIGHT_SQUARES))
        return same_colour and not bb[BB_PAWNS] and not bb[BB_KNIGHTS]
    return True


@njit(**HOT)
def insufficient_material(bb):
    """python-chess Board.is_insufficient_material (neither side can mate)."""
    return _side_insufficient(bb, 0) and _side_insufficient(bb, 1)


@njit(**JIT)
def perft(bb, mb, st, ct, depth):
    if depth == 0:
        return 1
    moves = np.empty(256, dtype=np.int32)
    n = gen_legal(bb, mb, st, ct, moves, 256)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        bb2 = bb.copy()
        mb2 = mb.copy()
        st2 = st.copy()
        make_move(bb2, mb2, st2, ct, moves[i])
        total += perft(bb2, mb2, st2, ct, depth - 1)
    return total


analyzer._numba_env.plain_calls(globals())
