"""Bitboard kernels for the Lichess variants, following python-chess's `chess.variant` boards.

One set of kernels serves every variant; the variant is a small int (V_*) passed at run time.
Attack tables, Polyglot keys and the slider helpers come from `analyzer.chess` (unchanged).

A position is three small arrays (no Python object):
  bb  uint64[9]  pawns, knights, bishops, rooks, queens, kings, white, black, promoted squares
  mb  int8[64]   piece type on each square (0 = empty)
  st  int64[16]  side to move, castling bits (WK=1 WQ=2 BK=4 BQ=8), e.p. square (-1), halfmove
                 clock, remaining checks to give (white, black; Three-check), pockets (white
                 P N B R Q at 6..10, black at 11..15; Crazyhouse)
Moves are int32: from | to << 6 | promotion or dropped type << 12 | flag << 15 | drop << 17.

Legality is decided the python-chess way per variant: pseudo-legal moves (python-chess's
generator, plus Antichess king promotions and Crazyhouse drops) are played on a copy and the
result is tested (own king safe; Racing Kings: no check given; Atomic: explosions, touching kings;
Antichess: captures compulsory). No legal move exists once `is_variant_end()` holds.
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit

from analyzer.kinds.chess._board import (
    HOT,
    JIT,
    U0,
    U1,
    _side_insufficient,
    bit,
    is_attacked,
    lsb,
    m_flag,
    m_from,
    m_promo,
    m_to,
    msb,
    pawn_step_targets,
    piece_attacks,
    popcount,
    side_boards,
)
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
    CASTLE_MASK_BY_SQUARE,
    DARK_SQUARES,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    LIGHT_SQUARES,
    MF_CASTLE,
    MF_DOUBLE,
    MF_EP,
    MF_NORMAL,
    PAWN_ATTACKS,
    RANK_MASKS,
    ST_CASTLE,
    ST_EP,
    ST_HMC,
    ST_STM,
    ZOBRIST_CASTLE,
    ZOBRIST_EP_FILE,
    ZOBRIST_PIECE,
    ZOBRIST_WHITE_TO_MOVE,
)
from analyzer.kinds.chess.variants._codes import (  # noqa: F401
    V_ANTICHESS,
    V_ATOMIC,
    V_CRAZYHOUSE,
    V_HORDE,
    V_KOTH,
    V_RACINGKINGS,
    V_STANDARD,
    V_THREECHECK,
    VARIANT_NAMES,
)

# State indices.
# After chess's ST_STM, ST_CASTLE, ST_EP, ST_HMC (0-3, analyzer.kinds.chess._tables): the checks
# each side has left (three-check: white, black), then the pockets (crazyhouse).
ST_CHECKS, ST_POCKET = 4, 6
ST_SIZE = 16
BB_PROMOTED = 8
BB_SIZE = 9

# Moves are encoded as chess's (encode, m_from, m_to, m_promo, m_flag of analyzer.kinds.chess._board,
# MF_* of _tables), plus a drop bit.
DROP_BIT = 1 << 17
MAX_MOVES = 768

CENTER = np.uint64((1 << 27) | (1 << 28) | (1 << 35) | (1 << 36))  # d4 e4 d5 e5
RANK_1 = RANK_MASKS[0]
RANK_8 = RANK_MASKS[7]
BACKRANKS = RANK_MASKS[0] | RANK_MASKS[7]
CASTLE_SQUARES = np.uint64((1 << 0) | (1 << 4) | (1 << 7) | (1 << 56) | (1 << 60) | (1 << 63))

# Extra Zobrist keys (any fixed random numbers: keys are compared within a game only).
_rng = np.random.default_rng(0x5EED_1A7E)
Z_POCKET = _rng.integers(0, 2**63, size=(2, 7, 64), dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
Z_PROMOTED = _rng.integers(0, 2**63, size=64, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
Z_CHECKS = _rng.integers(0, 2**63, size=(2, 8), dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)


@njit(inline="always", **HOT)
def encode(frm, to, promo, flag):
    return np.int32(frm | (to << 6) | (promo << 12) | (flag << 15))


@njit(inline="always", **HOT)
def encode_drop(pt, to):
    return np.int32(to | (to << 6) | (pt << 12) | DROP_BIT)


@njit(inline="always", **HOT)
def m_is_drop(m):
    return (m & DROP_BIT) != 0


@njit(**HOT)
def copy_pos(bb, mb, st, bb2, mb2, st2):
    for i in range(BB_SIZE):
        bb2[i] = bb[i]
    for i in range(64):
        mb2[i] = mb[i]
    for i in range(ST_SIZE):
        st2[i] = st[i]


@njit(inline="always", **HOT)
def _remove(bb, mb, sq):
    pt = mb[sq]
    if pt:
        b = ~bit(sq)
        bb[pt - 1] &= b
        bb[BB_WHITE] &= b
        bb[BB_BLACK] &= b
        bb[BB_PROMOTED] &= b
        mb[sq] = 0
    return pt


@njit(inline="always", **HOT)
def _put(bb, mb, sq, pt, color, promoted):
    _remove(bb, mb, sq)
    b = bit(sq)
    bb[pt - 1] |= b
    bb[BB_WHITE + color] |= b
    if promoted:
        bb[BB_PROMOTED] |= b
    mb[sq] = pt


@njit(**HOT)
def king_of(bb, color):
    """python-chess Board.king(color): the (non-promoted) king, -1 if none."""
    k = bb[BB_KINGS] & bb[BB_WHITE + color] & ~bb[BB_PROMOTED]
    if k == U0:
        return -1
    return msb(k)


@njit(**HOT)
def attacked_by(bb, sq, color, occ):
    """Is square sq attacked by `color` (python-chess attackers_mask) with occupancy occ?"""
    return is_attacked(bb, sq, bb[BB_WHITE + color], occ, 1 - color)


@njit(**HOT)
def kings_connected(bb):
    w = bb[BB_KINGS] & bb[BB_WHITE]
    b = bb[BB_KINGS] & bb[BB_BLACK]
    while w:
        s = lsb(w)
        w &= w - U1
        if KING_ATTACKS[s] & b:
            return True
    return False


@njit(**HOT)
def in_check(v, bb, color):
    """python-chess `is_check()` for `color` to move (checkers_mask non-empty)."""
    if v == V_ANTICHESS:
        return False
    if v == V_ATOMIC and kings_connected(bb):
        return False
    k = king_of(bb, color)
    if k < 0:
        return False
    return attacked_by(bb, k, 1 - color, bb[BB_WHITE] | bb[BB_BLACK])


@njit(**HOT)
def variant_end(v, bb, st):
    """python-chess `is_variant_end()`."""
    if v == V_KOTH:
        return (bb[BB_KINGS] & CENTER) != U0
    if v == V_THREECHECK:
        return st[ST_CHECKS] <= 0 or st[ST_CHECKS + 1] <= 0
    if v == V_ANTICHESS or v == V_HORDE:
        return bb[BB_WHITE] == U0 or bb[BB_BLACK] == U0
    if v == V_ATOMIC:
        return (bb[BB_KINGS] & bb[BB_WHITE]) == U0 or (bb[BB_KINGS] & bb[BB_BLACK]) == U0
    if v == V_RACINGKINGS:
        if not (bb[BB_KINGS] & RANK_8):
            return False
        bk = bb[BB_KINGS] & bb[BB_BLACK]
        if st[ST_STM] == 0 or (bk & RANK_8) or bk == U0:
            return True
        k = msb(bk)
        targets = KING_ATTACKS[k] & RANK_8 & ~bb[BB_BLACK]
        occ = bb[BB_WHITE] | bb[BB_BLACK]
        while targets:
            t = lsb(targets)
            targets &= targets - U1
            if not attacked_by(bb, t, 0, occ):
                return False
        return True
    return False


@njit(**HOT)
def _attacked_for_king(v, bb, path, occ, color):
    """python-chess `_attacked_for_king` for castling of `color` (Atomic: squares next to the
    enemy king do not count; Antichess: nothing is attacked)."""
    if v == V_ANTICHESS:
        return False
    if v == V_ATOMIC:
        ek = bb[BB_KINGS] & bb[BB_BLACK - color]
        while ek:
            s = lsb(ek)
            ek &= ek - U1
            path &= ~KING_ATTACKS[s]
    while path:
        s = lsb(path)
        path &= path - U1
        if attacked_by(bb, s, 1 - color, occ):
            return True
    return False


@njit(**HOT)
def castling_move(v, bb, mb, st, kingside):
    """The castling move of the side to move (python-chess generate_castling_moves), 0 if none.
    The caller checks variant_end."""
    stm = st[ST_STM]
    rights = st[ST_CASTLE]
    base = 0 if stm == 0 else 56
    if stm == 0:
        need = 1 if kingside else 2
    else:
        need = 4 if kingside else 8
    if not (rights & need):
        return np.int32(0)
    ksq = base + 4
    if not (bb[BB_KINGS] & bb[BB_WHITE + stm] & ~bb[BB_PROMOTED] & bit(ksq)):
        return np.int32(0)
    rsq = base + 7 if kingside else base
    if not (bb[BB_ROOKS] & bb[BB_WHITE + stm] & bit(rsq)):
        return np.int32(0)
    kto = base + 6 if kingside else base + 2
    rto = base + 5 if kingside else base + 3
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    kb = bit(ksq)
    rb = bit(rsq)
    king_path = BETWEEN[ksq, kto]
    rook_path = BETWEEN[rsq, rto]
    if (occ ^ kb ^ rb) & (king_path | rook_path | bit(kto) | bit(rto)):
        return np.int32(0)
    if _attacked_for_king(v, bb, king_path | kb, occ ^ kb, stm):
        return np.int32(0)
    if _attacked_for_king(v, bb, bit(kto), occ ^ kb ^ rb ^ bit(rto), stm):
        return np.int32(0)
    return encode(ksq, kto, 0, MF_CASTLE)


@njit(**HOT)
def _push_promos(v, frm, to, out, n):
    if v == V_ANTICHESS:
        out[n] = encode(frm, to, 6, MF_NORMAL)
        n += 1
    for pr in (5, 4, 3, 2):
        out[n] = encode(frm, to, pr, MF_NORMAL)
        n += 1
    return n


@njit(inline="always", **HOT)
def _piece_moves(mb, frm, own, occ, out, n):
    """Write the plain moves of the piece (not a pawn) on frm into out from n on; returns the new
    count. King: its steps only (castling is generated apart). Shared by gen_pseudo and any_legal,
    which try them one piece at a time."""
    pt = mb[frm]
    if pt == 6:
        t = KING_ATTACKS[frm] & ~own
    else:
        t = piece_attacks(pt, frm, occ) & ~own
    while t:
        to = lsb(t)
        t &= t - U1
        out[n] = encode(frm, to, 0, MF_NORMAL)
        n += 1
    return n


@njit(**HOT)
def gen_pseudo(v, bb, mb, st, out):
    """python-chess generate_pseudo_legal_moves (+ Antichess king promotions, Crazyhouse drops)."""
    stm, own, enemy, occ = side_boards(bb, st)
    n = 0
    pcs = own & ~bb[BB_PAWNS]
    while pcs:
        frm = lsb(pcs)
        pcs &= pcs - U1
        n = _piece_moves(mb, frm, own, occ, out, n)
    if st[ST_CASTLE] & (3 if stm == 0 else 12):
        m = castling_move(v, bb, mb, st, True)
        if m:
            out[n] = m
            n += 1
        m = castling_move(v, bb, mb, st, False)
        if m:
            out[n] = m
            n += 1
    pawns = own & bb[BB_PAWNS]
    if pawns:
        p = pawns
        while p:
            frm = lsb(p)
            p &= p - U1
            t = PAWN_ATTACKS[stm, frm] & enemy
            while t:
                to = lsb(t)
                t &= t - U1
                if BACKRANKS & bit(to):
                    n = _push_promos(v, frm, to, out, n)
                else:
                    out[n] = encode(frm, to, 0, MF_NORMAL)
                    n += 1
        if stm == 0:
            single = (pawns << np.uint64(8)) & ~occ
            double = (single << np.uint64(8)) & ~occ & (RANK_MASKS[2] | RANK_MASKS[3])
            fwd = 8
        else:
            single = (pawns >> np.uint64(8)) & ~occ
            double = (single >> np.uint64(8)) & ~occ & (RANK_MASKS[5] | RANK_MASKS[4])
            fwd = -8
        while single:
            to = lsb(single)
            single &= single - U1
            frm = to - fwd
            if BACKRANKS & bit(to):
                n = _push_promos(v, frm, to, out, n)
            else:
                out[n] = encode(frm, to, 0, MF_NORMAL)
                n += 1
        while double:
            to = lsb(double)
            double &= double - U1
            out[n] = encode(to - 2 * fwd, to, 0, MF_DOUBLE)
            n += 1
        ep = st[ST_EP]
        if ep >= 0 and not (occ & bit(ep)):
            c = pawns & PAWN_ATTACKS[1 - stm, ep] & RANK_MASKS[4 if stm == 0 else 3]
            while c:
                frm = lsb(c)
                c &= c - U1
                out[n] = encode(frm, ep, 0, MF_EP)
                n += 1
    if v == V_CRAZYHOUSE:
        empty = ~occ
        for pt in range(1, 6):
            if st[ST_POCKET + 5 * stm + pt - 1] > 0:
                t = empty & ~BACKRANKS if pt == 1 else empty
                while t:
                    to = lsb(t)
                    t &= t - U1
                    out[n] = encode_drop(pt, to)
                    n += 1
    return n


@njit(**HOT)
def is_capture(bb, st, m):
    if m_is_drop(m):
        return False
    if m_flag(m) == MF_EP:
        return True
    return (bb[BB_BLACK - st[ST_STM]] & bit(m_to(m))) != U0


@njit(**HOT)
def is_zeroing(bb, st, m):
    """python-chess is_zeroing: pawn move, capture, or pawn drop."""
    if m_is_drop(m):
        return m_promo(m) == 1
    return bool(bb[BB_PAWNS] & bit(m_from(m))) or is_capture(bb, st, m)


@njit(**HOT)
def make_move(v, bb, mb, st, m):
    """Play pseudo-legal move m in place (python-chess push of the variant board)."""
    stm = st[ST_STM]
    ep_old = st[ST_EP]
    st[ST_EP] = -1
    st[ST_HMC] += 1
    to = m_to(m)
    if m_is_drop(m):
        pt = m_promo(m)
        _put(bb, mb, to, pt, stm, False)
        st[ST_POCKET + 5 * stm + pt - 1] -= 1
        st[ST_STM] = 1 - stm
        return
    frm = m_from(m)
    promo = m_promo(m)
    flag = m_flag(m)
    pt = mb[frm]
    tb = bit(to)
    captured = mb[to] if (bb[BB_BLACK - stm] & tb) else 0
    if pt == 1 or captured or flag == MF_EP:
        st[ST_HMC] = 0
    promoted = (bb[BB_PROMOTED] & bit(frm)) != U0
    _remove(bb, mb, frm)
    st[ST_CASTLE] &= ~(CASTLE_MASK_BY_SQUARE[frm] | CASTLE_MASK_BY_SQUARE[to])
    if pt == 1:
        if flag == MF_DOUBLE:
            if stm == 0 and frm // 8 == 1:
                st[ST_EP] = frm + 8
            elif stm == 1 and frm // 8 == 6:
                st[ST_EP] = frm - 8
        elif flag == MF_EP:
            cap = ep_old - 8 if stm == 0 else ep_old + 8
            _remove(bb, mb, cap)
            captured = 1
    if promo:
        promoted = True
        pt = promo
    if flag == MF_CASTLE:
        if to > frm:
            rf, rt = frm + 3, frm + 1
        else:
            rf, rt = frm - 4, frm - 1
        _remove(bb, mb, rf)
        _put(bb, mb, to, 6, stm, False)
        _put(bb, mb, rt, 4, stm, False)
    else:
        was_promoted = (bb[BB_PROMOTED] & tb) != U0
        _put(bb, mb, to, pt, stm, promoted)
        if captured:
            if v == V_CRAZYHOUSE:
                ct = 1 if was_promoted else captured
                st[ST_POCKET + 5 * stm + ct - 1] += 1
            elif v == V_ATOMIC:
                radius = KING_ATTACKS[to] & ~bb[BB_PAWNS]
                cs = radius & CASTLE_SQUARES
                while cs:
                    s = lsb(cs)
                    cs &= cs - U1
                    st[ST_CASTLE] &= ~CASTLE_MASK_BY_SQUARE[s]
                _remove(bb, mb, to)
                r = radius & (bb[BB_WHITE] | bb[BB_BLACK])
                while r:
                    s = lsb(r)
                    r &= r - U1
                    _remove(bb, mb, s)
    st[ST_STM] = 1 - stm
    if v == V_THREECHECK:
        k = king_of(bb, 1 - stm)
        if k >= 0 and attacked_by(bb, k, stm, bb[BB_WHITE] | bb[BB_BLACK]):
            st[ST_CHECKS + stm] -= 1


@njit(**HOT)
def legal_after(v, bb, mover):
    """Is the position after the mover's pseudo-legal move acceptable (python-chess is_legal)?"""
    if v == V_ANTICHESS:
        return True
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    if v == V_ATOMIC:
        if not (bb[BB_KINGS] & bb[BB_WHITE + mover]):
            return False  # own king exploded (also when both did)
        if not (bb[BB_KINGS] & bb[BB_BLACK - mover]):
            return True  # the enemy king exploded
        if kings_connected(bb):
            return True
        k = king_of(bb, mover)
        return k < 0 or not attacked_by(bb, k, 1 - mover, occ)
    k = king_of(bb, mover)
    if k >= 0 and attacked_by(bb, k, 1 - mover, occ):
        return False
    if v == V_RACINGKINGS:
        k2 = king_of(bb, 1 - mover)
        if k2 >= 0 and attacked_by(bb, k2, mover, occ):
            return False
    return True


@njit(**HOT)
def gen_legal(v, bb, mb, st, out, pseudo, bb2, mb2, st2, limit):
    """Up to `limit` legal moves into out; returns their number."""
    if variant_end(v, bb, st):
        return 0
    npseudo = gen_pseudo(v, bb, mb, st, pseudo)
    stm = st[ST_STM]
    n = 0
    if v == V_ANTICHESS:
        any_cap = False
        for i in range(npseudo):
            if is_capture(bb, st, pseudo[i]):
                any_cap = True
                break
        for i in range(npseudo):
            m = pseudo[i]
            if any_cap and not is_capture(bb, st, m):
                continue
            out[n] = m
            n += 1
            if n >= limit:
                return n
        return n
    drop_mask = legal_drop_squares(bb, stm) if v == V_CRAZYHOUSE else U0
    for i in range(npseudo):
        m = pseudo[i]
        if m_is_drop(m):
            ok = (drop_mask & bit(m_to(m))) != U0
        else:
            copy_pos(bb, mb, st, bb2, mb2, st2)
            make_move(v, bb2, mb2, st2, m)
            ok = legal_after(v, bb2, stm)
        if ok:
            out[n] = m
            n += 1
            if n >= limit:
                return n
    return n


@njit(**HOT)
def legal_drop_squares(bb, stm):
    """python-chess CrazyhouseBoard.legal_drop_squares_mask: empty squares if not in check, the
    squares between king and a single checker, none in double check."""
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    k = king_of(bb, stm)
    if k < 0:
        return ~occ
    enemy = bb[BB_BLACK - stm]
    att = U0
    kb = bit(k)
    att |= KNIGHT_ATTACKS[k] & bb[BB_KNIGHTS] & enemy
    att |= PAWN_ATTACKS[stm, k] & bb[BB_PAWNS] & enemy
    att |= KING_ATTACKS[k] & bb[BB_KINGS] & enemy
    att |= piece_attacks(3, k, occ) & (bb[BB_BISHOPS] | bb[BB_QUEENS]) & enemy
    att |= piece_attacks(4, k, occ) & (bb[BB_ROOKS] | bb[BB_QUEENS]) & enemy
    if att == U0:
        return ~occ
    if att & (att - U1):
        return U0
    return BETWEEN[k, lsb(att)] & ~occ & ~kb


@njit(inline="always", **HOT)
def _try(v, bb, mb, st, m, stm, bb2, mb2, st2):
    copy_pos(bb, mb, st, bb2, mb2, st2)
    make_move(v, bb2, mb2, st2, m)
    return legal_after(v, bb2, stm)


@njit(**HOT)
def any_legal(v, bb, mb, st, pseudo, bb2, mb2, st2):
    """Does the side to move have a legal move (gen_legal(..., 1) > 0, without generating every
    pseudo-legal move first)?"""
    if variant_end(v, bb, st):
        return False
    if v == V_ANTICHESS:
        return gen_pseudo(v, bb, mb, st, pseudo) > 0  # with or without captures, some move is legal
    stm, own, enemy, occ = side_boards(bb, st)
    pcs = own & ~bb[BB_PAWNS]
    while pcs:
        frm = lsb(pcs)
        pcs &= pcs - U1
        for i in range(_piece_moves(mb, frm, own, occ, pseudo, 0)):
            if _try(v, bb, mb, st, pseudo[i], stm, bb2, mb2, st2):
                return True
    pawns = own & bb[BB_PAWNS]
    while pawns:
        frm = lsb(pawns)
        pawns &= pawns - U1
        t = pawn_step_targets(stm, frm, enemy, occ)
        while t:
            to = lsb(t)
            t &= t - U1
            pr = 5 if BACKRANKS & bit(to) else 0
            if _try(v, bb, mb, st, encode(frm, to, pr, MF_NORMAL), stm, bb2, mb2, st2):
                return True
    # Rarer moves: double pushes, e.p., castling, drops (all of gen_pseudo).
    n = gen_pseudo(v, bb, mb, st, pseudo)
    for i in range(n):
        m = pseudo[i]
        if m_is_drop(m) or m_flag(m) != MF_NORMAL:
            if _try(v, bb, mb, st, m, stm, bb2, mb2, st2):
                return True
    return False


@njit(**HOT)
def any_capture(bb, st):
    """Does the side to move have a pseudo-legal capture (Antichess: captures are compulsory)?"""
    stm, own, enemy, occ = side_boards(bb, st)
    pcs = own & ~bb[BB_PAWNS]
    while pcs:
        frm = lsb(pcs)
        pcs &= pcs - U1
        if bb[BB_KINGS] & bit(frm):
            if KING_ATTACKS[frm] & enemy:
                return True
        elif bb[BB_KNIGHTS] & bit(frm):
            if KNIGHT_ATTACKS[frm] & enemy:
                return True
        else:
            a = U0
            if bb[BB_BISHOPS] & bit(frm):
                a = piece_attacks(3, frm, occ)
            elif bb[BB_ROOKS] & bit(frm):
                a = piece_attacks(4, frm, occ)
            else:
                a = piece_attacks(5, frm, occ)
            if a & enemy:
                return True
    pawns = own & bb[BB_PAWNS]
    p = pawns
    while p:
        frm = lsb(p)
        p &= p - U1
        if PAWN_ATTACKS[stm, frm] & enemy:
            return True
    ep = st[ST_EP]
    if ep >= 0 and not (occ & bit(ep)):
        if pawns & PAWN_ATTACKS[1 - stm, ep] & RANK_MASKS[4 if stm == 0 else 3]:
            return True
    return False


@njit(**HOT)
def san_candidates(v, bb, mb, st, piece, to, promo, out):
    """The pseudo-legal moves (as gen_pseudo makes them, castling aside) of a `piece` to `to` with
    promotion `promo`: what a SAN without a full origin square can mean."""
    stm, own, enemy, occ = side_boards(bb, st)
    tb = bit(to)
    n = 0
    if own & tb:
        return 0
    if piece != 1:
        if promo:
            return 0
        if piece == 6:
            fr = KING_ATTACKS[to] & bb[BB_KINGS] & own
        else:
            fr = piece_attacks(piece, to, occ) & bb[piece - 1] & own
        while fr:
            frm = lsb(fr)
            fr &= fr - U1
            out[n] = encode(frm, to, 0, MF_NORMAL)
            n += 1
        return n
    back = (BACKRANKS & tb) != U0
    if back != (promo != 0):
        return 0
    if promo == 6 and v != V_ANTICHESS:
        return 0
    pawns = own & bb[BB_PAWNS]
    if enemy & tb:
        fr = PAWN_ATTACKS[1 - stm, to] & pawns
        while fr:
            frm = lsb(fr)
            fr &= fr - U1
            out[n] = encode(frm, to, promo, MF_NORMAL)
            n += 1
        return n
    if occ & tb:
        return 0
    if to == st[ST_EP] and promo == 0:
        fr = PAWN_ATTACKS[1 - stm, to] & pawns & RANK_MASKS[4 if stm == 0 else 3]
        while fr:
            frm = lsb(fr)
            fr &= fr - U1
            out[n] = encode(frm, to, 0, MF_EP)
            n += 1
    fwd = 8 if stm == 0 else -8
    f1 = to - fwd
    if 0 <= f1 < 64:
        if pawns & bit(f1):
            out[n] = encode(f1, to, promo, MF_NORMAL)
            n += 1
        elif not (occ & bit(f1)):
            f2 = f1 - fwd
            dbl = (RANK_MASKS[2] | RANK_MASKS[3]) if stm == 0 else (RANK_MASKS[5] | RANK_MASKS[4])
            if 0 <= f2 < 64 and (pawns & bit(f2)) and (dbl & tb):
                out[n] = encode(f2, to, 0, MF_DOUBLE)
                n += 1
    return n


@njit(**HOT)
def is_legal_move(v, bb, mb, st, m, bb2, mb2, st2):
    """Is pseudo-legal move m legal (gen_legal membership) in a position that has not ended?"""
    stm = st[ST_STM]
    if m_is_drop(m):
        return (legal_drop_squares(bb, stm) & bit(m_to(m))) != U0
    if v == V_ANTICHESS:
        return is_capture(bb, st, m) or not any_capture(bb, st)
    copy_pos(bb, mb, st, bb2, mb2, st2)
    make_move(v, bb2, mb2, st2, m)
    return legal_after(v, bb2, stm)


@njit(**HOT)
def has_legal_ep(v, bb, mb, st, bb2, mb2, st2):
    """python-chess has_legal_en_passant on the variant board."""
    ep = st[ST_EP]
    if ep < 0:
        return False
    stm = st[ST_STM]
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    if occ & bit(ep):
        return False
    c = bb[BB_PAWNS] & bb[BB_WHITE + stm] & PAWN_ATTACKS[1 - stm, ep] & RANK_MASKS[4 if stm == 0 else 3]
    if c == U0:
        return False
    if variant_end(v, bb, st):
        return False
    if v == V_ANTICHESS:
        return True
    while c:
        frm = lsb(c)
        c &= c - U1
        copy_pos(bb, mb, st, bb2, mb2, st2)
        make_move(v, bb2, mb2, st2, encode(frm, ep, 0, MF_EP))
        occ2 = bb2[BB_WHITE] | bb2[BB_BLACK]
        if v == V_ATOMIC:
            # is_into_check: not (kings apart and own king attacked); an exploded own king is no check
            if kings_connected(bb2):
                return True
            k = king_of(bb2, stm)
            if k < 0 or not attacked_by(bb2, k, 1 - stm, occ2):
                return True
        else:
            k = king_of(bb2, stm)
            if k < 0 or not attacked_by(bb2, k, 1 - stm, occ2):
                return True
    return False


@njit(**HOT)
def position_key(v, bb, mb, st, legal_ep):
    """Hash of python-chess's _transposition_key() of the variant board."""
    k = U0
    for c in range(2):
        o = bb[BB_WHITE + c]
        while o:
            sq = lsb(o)
            o &= o - U1
            k ^= ZOBRIST_PIECE[c, mb[sq], sq]
    if st[ST_STM] == 0:
        k ^= ZOBRIST_WHITE_TO_MOVE
    k ^= ZOBRIST_CASTLE[st[ST_CASTLE]]
    if legal_ep:
        k ^= ZOBRIST_EP_FILE[st[ST_EP] % 8]
    if v == V_THREECHECK:
        k ^= Z_CHECKS[0, (st[ST_CHECKS] + 4) & 7] ^ Z_CHECKS[1, (st[ST_CHECKS + 1] + 4) & 7]
    elif v == V_CRAZYHOUSE:
        pr = bb[BB_PROMOTED]
        while pr:
            sq = lsb(pr)
            pr &= pr - U1
            k ^= Z_PROMOTED[sq]
        for c in range(2):
            for pt in range(1, 6):
                k ^= Z_POCKET[c, pt, st[ST_POCKET + 5 * c + pt - 1] & 63]
    return k


@njit(**HOT)
def _atomic_side_insufficient(bb, color):
    own = bb[BB_WHITE + color]
    other = bb[BB_BLACK - color]
    if not (other & bb[BB_KINGS]):
        return False
    if not (own & ~bb[BB_KINGS]):
        return True
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    if other & ~bb[BB_KINGS]:
        if occ == (bb[BB_BISHOPS] | bb[BB_KINGS]):
            if not (bb[BB_BISHOPS] & bb[BB_WHITE] & DARK_SQUARES):
                return not (bb[BB_BISHOPS] & bb[BB_BLACK] & LIGHT_SQUARES)
            if not (bb[BB_BISHOPS] & bb[BB_WHITE] & LIGHT_SQUARES):
                return not (bb[BB_BISHOPS] & bb[BB_BLACK] & DARK_SQUARES)
        return False
    if bb[BB_QUEENS] or bb[BB_PAWNS]:
        return False
    if popcount(bb[BB_KNIGHTS] | bb[BB_BISHOPS] | bb[BB_ROOKS]) == 1:
        return True
    if occ == (bb[BB_KNIGHTS] | bb[BB_KINGS]):
        return popcount(bb[BB_KNIGHTS]) <= 2
    return False


@njit(**HOT)
def _anti_side_insufficient(bb, stm, color):
    own = bb[BB_WHITE + color]
    other = bb[BB_BLACK - color]
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    if not own:
        return False
    if not other:
        return True
    if occ == bb[BB_BISHOPS]:
        we_light = (own & LIGHT_SQUARES) != U0
        we_dark = (own & DARK_SQUARES) != U0
        they_all_dark = not (other & LIGHT_SQUARES)
        they_all_light = not (other & DARK_SQUARES)
        return (we_light and they_all_dark) or (we_dark and they_all_light)
    if occ == bb[BB_KNIGHTS] and popcount(bb[BB_KNIGHTS]) == 2:
        a = stm == color
        b = (bb[BB_WHITE] & LIGHT_SQUARES) != U0
        c = (bb[BB_BLACK] & DARK_SQUARES) != U0
        return a ^ b ^ c
    return False


@njit(**HOT)
def insufficient_material(v, bb, st):
    """python-chess is_insufficient_material() of the variant board."""
    if v == V_KOTH or v == V_RACINGKINGS or v == V_HORDE:
        return False  # Horde: Black (the king side) never has insufficient material in PC
    if v == V_THREECHECK:
        return (bb[BB_WHITE] | bb[BB_BLACK]) == bb[BB_KINGS]
    if v == V_CRAZYHOUSE:
        total = popcount(bb[BB_WHITE] | bb[BB_BLACK])
        for i in range(10):
            total += st[ST_POCKET + i]
        return (
            total <= 3
            and bb[BB_PROMOTED] == U0
            and not (bb[BB_PAWNS] | bb[BB_ROOKS] | bb[BB_QUEENS])
            and st[ST_POCKET + 0] == 0
            and st[ST_POCKET + 5] == 0
            and st[ST_POCKET + 3] == 0
            and st[ST_POCKET + 8] == 0
            and st[ST_POCKET + 4] == 0
            and st[ST_POCKET + 9] == 0
        )
    if v == V_ATOMIC:
        return _atomic_side_insufficient(bb, 0) and _atomic_side_insufficient(bb, 1)
    if v == V_ANTICHESS:
        return _anti_side_insufficient(bb, st[ST_STM], 0) and _anti_side_insufficient(bb, st[ST_STM], 1)
    return _side_insufficient(bb, 0) and _side_insufficient(bb, 1)  # (standard chess's test)


@njit(**HOT)
def _pawn_blocked(bb, sq):
    """scalachess pawnBlockedByPawn, approximated: the square ahead holds a pawn and the pawn has
    no pseudo-legal capture (scalachess asks for no legal move of that pawn)."""
    b = bit(sq)
    if not (bb[BB_PAWNS] & b):
        return False
    color = 0 if (bb[BB_WHITE] & b) else 1
    ahead = sq + 8 if color == 0 else sq - 8
    if ahead < 0 or ahead > 63 or not (bb[BB_PAWNS] & bit(ahead)):
        return False
    return not (PAWN_ATTACKS[color, sq] & bb[BB_BLACK - color])


@njit(**HOT)
def _is_light(sq):
    return (LIGHT_SQUARES & bit(sq)) != U0


@njit(**HOT)
def lichess_insufficient(v, bb, mb, st, out, pseudo, bb2, mb2, st2, bb3, mb3, st3, out2):
    """scalachess Variant.isInsufficientMaterial (the automatic draw) per variant."""
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    if v == V_KOTH or v == V_RACINGKINGS or v == V_CRAZYHOUSE:
        return False
    if v == V_THREECHECK:
        return occ == bb[BB_KINGS]
    if v == V_ATOMIC:
        opposite = (bb[BB_BISHOPS] & LIGHT_SQUARES) != U0 and (bb[BB_BISHOPS] & DARK_SQUARES) != U0
        n = popcount(occ)
        if popcount(bb[BB_WHITE]) >= 2 and popcount(bb[BB_BLACK]) >= 2:
            if occ == (bb[BB_KINGS] | bb[BB_BISHOPS]) and n <= 4 and opposite:
                return True
        elif occ == (bb[BB_KINGS] | bb[BB_KNIGHTS]):
            if n <= 4:
                return True
        elif occ == (bb[BB_KINGS] | bb[BB_ROOKS] | bb[BB_BISHOPS] | bb[BB_KNIGHTS]) and not opposite and n <= 3:
            return True
        # atomicClosedPosition
        o = occ
        while o:
            s = lsb(o)
            o &= o - U1
            pt = mb[s]
            if not (pt == 6 or pt == 3 or (pt == 1 and _pawn_blocked(bb, s))):
                return False
        if bb[BB_BISHOPS]:
            s = lsb(bb[BB_BISHOPS])
            side = 0 if (bb[BB_WHITE] & bit(s)) else 1
            light = _is_light(s)
            o = occ
            while o:
                q = lsb(o)
                o &= o - U1
                pt = mb[q]
                mine = (bb[BB_WHITE + side] & bit(q)) != U0
                ok = (
                    pt == 6
                    or (pt == 1 and mine)
                    or (pt == 1 and not mine and _is_light(q) != light)
                    or (pt == 3 and mine and _is_light(q) == light)
                )
                if not ok:
                    return False
        return True
    if v == V_ANTICHESS:
        if (bb[BB_BISHOPS] | bb[BB_PAWNS]) != occ:
            return False
        wb = bb[BB_BISHOPS] & bb[BB_WHITE]
        bl = bb[BB_BISHOPS] & bb[BB_BLACK]
        if wb == U0 or bl == U0:
            return False
        w_light = (wb & LIGHT_SQUARES) != U0
        if w_light and (wb & DARK_SQUARES):
            return False
        b_light = (bl & LIGHT_SQUARES) != U0
        if b_light and (bl & DARK_SQUARES):
            return False
        if w_light == b_light:
            return False
        p = bb[BB_PAWNS] & bb[BB_WHITE]
        while p:
            s = lsb(p)
            p &= p - U1
            if _is_light(s) == b_light or not _pawn_blocked(bb, s):
                return False
        p = bb[BB_PAWNS] & bb[BB_BLACK]
        while p:
            s = lsb(p)
            p &= p - U1
            if _is_light(s) == w_light or not _pawn_blocked(bb, s):
                return False
        return True
    if v == V_HORDE:
        # hordeClosedPosition
        white = bb[BB_WHITE]
        if popcount(white) == 1 and attacked_by(bb, lsb(white), 1, occ):
            return False
        if st[ST_STM] == 0:
            return gen_legal(v, bb, mb, st, out, pseudo, bb2, mb2, st2, 1) == 0
        nb = gen_legal(v, bb, mb, st, out, pseudo, bb2, mb2, st2, MAX_MOVES)
        for i in range(nb):
            copy_pos(bb, mb, st, bb3, mb3, st3)
            make_move(v, bb3, mb3, st3, out[i])
            if gen_legal(v, bb3, mb3, st3, out2, pseudo, bb2, mb2, st2, 1) > 0:
                return False
        return True
    return False


@njit(**JIT)
def perft(v, bb, mb, st, depth):
    if depth == 0:
        return 1
    moves = np.empty(MAX_MOVES, dtype=np.int32)
    pseudo = np.empty(MAX_MOVES, dtype=np.int32)
    bb2 = np.empty(BB_SIZE, dtype=np.uint64)
    mb2 = np.empty(64, dtype=np.int8)
    st2 = np.empty(ST_SIZE, dtype=np.int64)
    n = gen_legal(v, bb, mb, st, moves, pseudo, bb2, mb2, st2, MAX_MOVES)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        copy_pos(bb, mb, st, bb2, mb2, st2)
        make_move(v, bb2, mb2, st2, moves[i])
        total += perft(v, bb2.copy(), mb2.copy(), st2.copy(), depth - 1)
    return total


analyzer._numba_env.plain_calls(globals())
