"""Replay kernel for the Lichess variants: PGN movetext of a batch of games -> the chess facts.

Fills exactly the arrays of `analyzer.kinds.chess._replay.replay_batch` (key, hmc, flags, rep_next,
rep_next97, clock, pos_off, status, err_*), with the same FLAG_* meanings, each value as
python-chess's variant board computes it (see docs/variants.md), plus one uint8 per position:

  vflags  VF_END            python-chess is_variant_end()
          VF_WIN/LOSS/DRAW  is_variant_win/loss/draw() for the side to move
          VF_LICHESS_INSUFFICIENT  scalachess Variant.isInsufficientMaterial (automatic draw),
                            only where the game is not over already (a legal move exists:
                            mate, variant end and stalemate come first on Lichess)

The variant is per game (`vcode`), so one call serves a block of mixed variants.
Kernels never raise: a status per game, positions kept up to the last legal move.
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit

from analyzer.kinds._reptable import LONG_WINDOW, count_back, lookup, new_table, occurrences, sync
from analyzer.kinds.chess._board import HOT, JIT, ST_CASTLE, ST_EP, ST_HMC, ST_STM, U0, U1, bit, side_boards
from analyzer.kinds.chess._replay import (
    EVAL_NONE,
    FLAG_CHECK,
    FLAG_CHECKMATE,
    FLAG_FIFTY_INTENDED,
    FLAG_FIFTY_LOOKED,
    FLAG_HAS_MOVE,
    FLAG_INSUFFICIENT,
    FLAG_LEGAL_EP,
    FLAG_STALEMATE,
    FLAG_WINDOW97,
    FLAG_WINDOW_START,
    REP_NEXT_MAX,
    S_INTERNAL,
    S_UNTERMINATED,
    TOK_END,
    TOK_SAN,
    TOK_UNTERMINATED,
    _begin_game,
    _end_game,
    _fail,
    _load_start,
    _move_failed,
    _note_null_move,
    _pass_turn,
    next_move_token,
)
from analyzer.kinds.chess._tables import (
    BB_BLACK,
    BB_KINGS,
    BB_WHITE,
    CASTLE_MASK_BY_SQUARE,
    ZOBRIST_EP_FILE,
    ZOBRIST_PIECE,
    ZOBRIST_WHITE_TO_MOVE,
)
from analyzer.kinds.chess.variants._board import (
    BACKRANKS,
    BB_PROMOTED,
    BB_SIZE,
    CENTER,
    MAX_MOVES,
    MF_CASTLE,
    RANK_8,
    ST_CHECKS,
    ST_POCKET,
    ST_SIZE,
    V_ANTICHESS,
    V_ATOMIC,
    V_CRAZYHOUSE,
    V_HORDE,
    V_KOTH,
    V_RACINGKINGS,
    V_THREECHECK,
    Z_POCKET,
    Z_PROMOTED,
    any_capture,
    any_legal,
    castling_move,
    copy_pos,
    encode_drop,
    gen_legal,
    gen_pseudo,
    has_legal_ep,
    in_check,
    insufficient_material,
    is_capture,
    is_legal_move,
    is_zeroing,
    legal_after,
    lichess_insufficient,
    m_flag,
    m_from,
    m_is_drop,
    m_promo,
    m_to,
    make_move,
    position_key,
    san_candidates,
    variant_end,
)

VF_END = 1
VF_WIN = 2
VF_LOSS = 4
VF_DRAW = 8
VF_LICHESS_INSUFFICIENT = 16


@njit(**HOT)
def variant_outcome(v, bb, st, vend, has_move, chk):
    """VF_WIN / VF_LOSS / VF_DRAW bits: python-chess is_variant_win/loss/draw for the side to move."""
    stm, own, opp, occ = side_boards(bb, st)
    r = 0
    if v == V_KOTH:
        if bb[BB_KINGS] & own & CENTER:
            r |= VF_WIN
        if bb[BB_KINGS] & opp & CENTER:
            r |= VF_LOSS
    elif v == V_THREECHECK:
        mine = st[ST_CHECKS + stm]
        theirs = st[ST_CHECKS + 1 - stm]
        if mine <= 0 and theirs <= 0:
            r |= VF_DRAW
        if theirs <= 0 < mine:
            r |= VF_LOSS
        if mine <= 0 < theirs:
            r |= VF_WIN
    elif v == V_ANTICHESS:
        if own == U0 or (not chk and not vend and not has_move):
            r |= VF_WIN
    elif v == V_ATOMIC:
        if bb[BB_KINGS]:
            if not (bb[BB_KINGS] & opp):
                r |= VF_WIN
            if not (bb[BB_KINGS] & own):
                r |= VF_LOSS
    elif v == V_HORDE:
        if occ == U0:
            r |= VF_DRAW
        else:
            if own == U0:
                r |= VF_LOSS
            if opp == U0:
                r |= VF_WIN
    elif v == V_RACINGKINGS:
        w8 = (bb[BB_KINGS] & bb[BB_WHITE] & RANK_8) != U0
        b8 = (bb[BB_KINGS] & bb[BB_BLACK] & RANK_8) != U0
        if w8 and b8:
            r |= VF_DRAW
        own8 = w8 if stm == 0 else b8
        opp8 = b8 if stm == 0 else w8
        if vend and not own8:
            r |= VF_LOSS
        if vend and own8 and not opp8:
            r |= VF_WIN
    return r


@njit(**HOT)
def _piece_letter(c):
    if c == 78:
        return 2
    if c == 66:
        return 3
    if c == 82:
        return 4
    if c == 81:
        return 5
    if c == 75:
        return 6
    return 0


@njit(**HOT)
def _promo_letter(c):
    if c == 78 or c == 110:
        return 2
    if c == 66 or c == 98:
        return 3
    if c == 82 or c == 114:
        return 4
    if c == 81 or c == 113:
        return 5
    if c == 75 or c == 107:
        return 6
    return 0


@njit(**HOT)
def resolve_san(v, bb, mb, st, buf, a, b, pseudo, bb2, mb2, st2):
    """Match SAN buf[a:b] as python-chess's parse_san on the variant board: (move, n_matches);
    n = -1 if the token is not SAN."""
    while b > a and (buf[b - 1] == 43 or buf[b - 1] == 35 or buf[b - 1] == 33 or buf[b - 1] == 63):
        b -= 1
    if b <= a:
        return np.int32(0), -1
    stm = st[ST_STM]
    c0 = buf[a]
    n = b - a
    # Castling.
    if c0 == 79 or c0 == 48:
        if (
            (n == 3 or n == 5)
            and buf[a + 1] == 45
            and buf[a + 2] == c0
            and (n == 3 or (buf[a + 3] == 45 and buf[a + 4] == c0))
        ):
            if variant_end(v, bb, st):
                return np.int32(0), 0
            m = castling_move(v, bb, mb, st, n == 3)
            if m == 0:
                return np.int32(0), 0
            return m, 1
        return np.int32(0), -1
    # Drops: P@e4, N@f3, @e4 (pawn).
    at = -1
    for i in range(a, b):
        if buf[i] == 64:
            at = i
            break
    if at >= 0:
        if v != V_CRAZYHOUSE or b - at != 3 or at - a > 1:
            return np.int32(0), -1
        pt = 1
        if at - a == 1:
            if buf[a] == 80:
                pt = 1
            else:
                pt = _piece_letter(buf[a])
                if pt == 0:
                    return np.int32(0), -1
        tf = buf[at + 1] - 97
        tr = buf[at + 2] - 49
        if not (0 <= tf < 8 and 0 <= tr < 8):
            return np.int32(0), -1
        to = tr * 8 + tf
        if pt == 6 or (bb[BB_WHITE] | bb[BB_BLACK]) & bit(to) or st[ST_POCKET + 5 * stm + pt - 1] <= 0:
            return np.int32(0), 0
        if pt == 1 and BACKRANKS & bit(to):
            return np.int32(0), 0
        m = encode_drop(pt, to)
        copy_pos(bb, mb, st, bb2, mb2, st2)
        make_move(v, bb2, mb2, st2, m)
        if not legal_after(v, bb2, stm):
            return np.int32(0), 0
        return m, 1
    # SAN: [NBKRQ]?[a-h]?[1-8]?[-x]?[a-h][1-8](=?[nbrqkNBRQK])?
    piece = _piece_letter(c0)
    p = a + 1 if piece else a
    promo = 0
    if b - p >= 3 and _promo_letter(buf[b - 1]):
        promo = _promo_letter(buf[b - 1])
        b -= 1
        if buf[b - 1] == 61:
            b -= 1
    if b - p < 2:
        return np.int32(0), -1
    tf = buf[b - 2] - 97
    tr = buf[b - 1] - 49
    if not (0 <= tf < 8 and 0 <= tr < 8):
        return np.int32(0), -1
    to = tr * 8 + tf
    ff = -1
    fr = -1
    i = p
    end = b - 2
    if i < end and 97 <= buf[i] <= 104:
        ff = buf[i] - 97
        i += 1
    if i < end and 49 <= buf[i] <= 56:
        fr = buf[i] - 49
        i += 1
    if i < end and (buf[i] == 120 or buf[i] == 45 or buf[i] == 58):
        i += 1
    if i != end:
        return np.int32(0), -1
    if variant_end(v, bb, st):
        return np.int32(0), 0
    full = piece == 0 and ff >= 0 and fr >= 0
    if not full and piece == 0:
        piece = 1
        if ff < 0:
            ff = tf
    if full:
        npseudo = gen_pseudo(v, bb, mb, st, pseudo)
    else:
        npseudo = san_candidates(v, bb, mb, st, piece, to, promo, pseudo)
    any_cap = v == V_ANTICHESS and any_capture(bb, st)
    found = np.int32(0)
    count = 0
    for j in range(npseudo):
        m = pseudo[j]
        if m_is_drop(m) or m_to(m) != to or m_promo(m) != promo:
            continue
        frm = m_from(m)
        if full:
            if frm != fr * 8 + ff:
                continue
        else:
            if m_flag(m) == MF_CASTLE or mb[frm] != piece:
                continue
            if ff >= 0 and frm % 8 != ff:
                continue
            if fr >= 0 and frm // 8 != fr:
                continue
        if v == V_ANTICHESS:
            if any_cap and not is_capture(bb, st, m):
                continue
        else:
            copy_pos(bb, mb, st, bb2, mb2, st2)
            make_move(v, bb2, mb2, st2, m)
            if not legal_after(v, bb2, stm):
                continue
        count += 1
        found = m
    return found, count


@njit(inline="always", **HOT)
def _count_before(tab, in_table, key, p, ws, nk):
    """Occurrences of nk among the positions ws..p-1 of p-1's parity: looked up in the table of
    long windows (in_table: the window is there, positions up to p) or walked back."""
    if in_table:
        return lookup(tab, nk, (p - 1) & 1)[0]
    return count_back(key, p - 1, ws, nk)


@njit(**HOT)
def _record(v, bb, mb, st, p, ws, window_start, facts, clk_now, vflags, fifty_min_clock, work):
    """Facts of the position now on the board, stored at index p.

    facts: the output arrays as the chess _record takes them (key, hmc, flags, rep_next,
    rep_next97, clock); work: the scratch arrays (moves, moves2, pseudo, bb2, mb2, st2, bb3, mb3,
    st3, n_twice, key_bits) and the table of long repetition windows (tab, _reptable). Two
    tuples, so that the three call sites do not each spell out twenty."""
    key, hmc, flags, rep_next, rep_next97, clock = facts
    moves, moves2, pseudo, bb2, mb2, st2, bb3, mb3, st3, n_twice, key_bits, tab = work
    stm = st[ST_STM]
    vend = variant_end(v, bb, st)
    legal_ep = st[ST_EP] >= 0 and has_legal_ep(v, bb, mb, st, bb2, mb2, st2)
    k = position_key(v, bb, mb, st, legal_ep)
    key[p] = k
    hmc[p] = st[ST_HMC]
    f = 0
    if window_start:
        f |= FLAG_WINDOW_START | FLAG_WINDOW97
        n_twice[0] = 0
        n_twice[1] = 0
        key_bits[0] = U0
        key_bits[1] = U0
        key_bits[2] = U0
        key_bits[3] = U0
    if legal_ep:
        f |= FLAG_LEGAL_EP
    chk = in_check(v, bb, stm)
    if chk:
        f |= FLAG_CHECK
    has_move = (not vend) and any_legal(v, bb, mb, st, pseudo, bb2, mb2, st2)
    if has_move:
        f |= FLAG_HAS_MOVE
    elif chk:
        f |= FLAG_CHECKMATE
    elif not vend:
        f |= FLAG_STALEMATE
    if insufficient_material(v, bb, st):
        f |= FLAG_INSUFFICIENT
    c, key_bits[p & 1] = occurrences(tab, key, p, ws, ws, k, key_bits[p & 1])
    if c == 2:
        n_twice[stm] += 1
        key_bits[2 + (p & 1)] |= U1 << (k >> np.uint64(58))
    rn = 0
    need_rep = has_move and n_twice[1 - stm] > 0 and p - 1 >= ws
    need_fifty = has_move and st[ST_HMC] >= fifty_min_clock and v != V_CRAZYHOUSE
    if need_rep:
        # Every pseudo-legal move; legality is checked only for a move whose position was seen
        # twice (rare). Key of the position after a quiet piece move or a drop, from this
        # position's key: pieces moved, side to move flipped, no e.p., same castling rights,
        # pockets (a drop: one fewer), check counts (a move giving check in Three-check changes
        # them: verified by playing it when it matches).
        nm = gen_pseudo(v, bb, mb, st, moves)
        base = k ^ ZOBRIST_WHITE_TO_MOVE
        if legal_ep:
            base ^= ZOBRIST_EP_FILE[st[ST_EP] % 8]
        rights = st[ST_CASTLE]
        twice = key_bits[2 + ((p - 1) & 1)]  # top-6-bit filter of the keys seen twice, that parity
        in_table = p - ws >= LONG_WINDOW and sync(tab, key, p, ws, ws, True)  # a long window: counts from the table
        for i in range(nm):
            m = moves[i]
            zero = is_zeroing(bb, st, m)
            frm = m_from(m)
            to = m_to(m)
            cnt = 0
            if m_is_drop(m):
                pt = m_promo(m)
                cnt0 = st[ST_POCKET + 5 * stm + pt - 1]
                nk = (
                    base
                    ^ ZOBRIST_PIECE[stm, pt, to]
                    ^ Z_POCKET[stm, pt, cnt0 & 63]
                    ^ Z_POCKET[stm, pt, (cnt0 - 1) & 63]
                )
                if twice & (U1 << (nk >> np.uint64(58))):
                    cnt = _count_before(tab, in_table, key, p, ws, nk)
            elif (
                m_flag(m) == 0
                and m_promo(m) == 0
                and not zero
                and not ((CASTLE_MASK_BY_SQUARE[frm] | CASTLE_MASK_BY_SQUARE[to]) & rights)
            ):
                pt = mb[frm]
                nk = base ^ ZOBRIST_PIECE[stm, pt, frm] ^ ZOBRIST_PIECE[stm, pt, to]
                if v == V_CRAZYHOUSE and (bb[BB_PROMOTED] & bit(frm)):
                    nk ^= Z_PROMOTED[frm] ^ Z_PROMOTED[to]
                if twice & (U1 << (nk >> np.uint64(58))):
                    cnt = _count_before(tab, in_table, key, p, ws, nk)
                if cnt >= 2 and v == V_THREECHECK:
                    copy_pos(bb, mb, st, bb3, mb3, st3)
                    make_move(v, bb3, mb3, st3, m)
                    cnt = _count_before(tab, in_table, key, p, ws, position_key(v, bb3, mb3, st3, False))
            elif v == V_CRAZYHOUSE:
                # Captures and pawn moves are reversible in Crazyhouse (python-chess
                # is_irreversible = loss of castling rights only): play them.
                copy_pos(bb, mb, st, bb3, mb3, st3)
                make_move(v, bb3, mb3, st3, m)
                if st3[1] == rights:
                    lep = st3[2] >= 0 and has_legal_ep(v, bb3, mb3, st3, bb2, mb2, st2)
                    nk = position_key(v, bb3, mb3, st3, lep)
                    if twice & (U1 << (nk >> np.uint64(58))):
                        cnt = _count_before(tab, in_table, key, p, ws, nk)
            # Any other move is irreversible: its position differs from every position of the
            # window (material, pawns, castling rights or e.p.), as in python-chess.
            if cnt >= 2 and cnt > rn and is_legal_move(v, bb, mb, st, m, bb2, mb2, st2):
                rn = cnt
    if need_fifty:
        f |= FLAG_FIFTY_LOOKED
        nm = gen_legal(v, bb, mb, st, moves, pseudo, bb2, mb2, st2, MAX_MOVES)
        for i in range(nm):
            m = moves[i]
            if is_zeroing(bb, st, m):
                continue
            copy_pos(bb, mb, st, bb3, mb3, st3)
            make_move(v, bb3, mb3, st3, m)
            if any_legal(v, bb3, mb3, st3, pseudo, bb2, mb2, st2):
                f |= FLAG_FIFTY_INTENDED
                break
    rep_next[p] = min(rn, REP_NEXT_MAX)
    rep_next97[p] = min(rn, REP_NEXT_MAX)
    flags[p] = f
    clock[p] = clk_now
    vf = variant_outcome(v, bb, st, vend, has_move, chk)
    if vend:
        vf |= VF_END
    elif has_move and lichess_insufficient(v, bb, mb, st, moves, pseudo, bb2, mb2, st2, bb3, mb3, st3, moves2):
        # (scalachess Position.status: mate, variant end and stalemate come before autoDraw)
        vf |= VF_LICHESS_INSUFFICIENT
    vflags[p] = vf


@njit(**JIT)
def replay_batch(
    buf,
    mt_start,
    mt_end,
    vcode,
    init_idx,
    init_bb,
    init_mb,
    init_st,
    fifty_min_clock,
    pos_off,
    status,
    err_ply,
    err_s,
    err_e,
    key,
    hmc,
    flags,
    rep_next,
    rep_next97,
    clock,
    vflags,
    evals,
):
    """Replay every game g whose init_idx[g] >= 0 as variant vcode[g] (V_*); evals: the eval fact
    of every position, as the chess replay reads it (chess _replay.EVAL_NONE without one)."""
    n_games = len(mt_start)
    cap = len(key)
    bb = np.empty(BB_SIZE, np.uint64)
    bb2 = np.empty(BB_SIZE, np.uint64)
    bb3 = np.empty(BB_SIZE, np.uint64)
    mb = np.empty(64, np.int8)
    mb2 = np.empty(64, np.int8)
    mb3 = np.empty(64, np.int8)
    st = np.empty(ST_SIZE, np.int64)
    st2 = np.empty(ST_SIZE, np.int64)
    st3 = np.empty(ST_SIZE, np.int64)
    moves = np.empty(MAX_MOVES, np.int32)
    moves2 = np.empty(MAX_MOVES, np.int32)
    pseudo = np.empty(MAX_MOVES, np.int32)
    n_twice = np.zeros(2, np.int64)
    key_bits = np.zeros(4, np.uint64)
    last_clk = np.empty(2, np.float64)
    # The table of long repetition windows (_reptable), sized to the longest game (at most
    # mt_len // 2 + 2 positions, as variants/analyze.py sizes the facts).
    longest = 0
    for g in range(n_games):
        if init_idx[g] >= 0:
            longest = max(longest, (mt_end[g] - mt_start[g]) // 2 + 2)
    longest = min(longest, cap)
    tab = new_table(longest, longest, False)
    p = 0
    facts = (key, hmc, flags, rep_next, rep_next97, clock)
    work = (moves, moves2, pseudo, bb2, mb2, st2, bb3, mb3, st3, n_twice, key_bits, tab)
    for g in range(n_games):
        _begin_game(g, p, pos_off, status, err_ply, err_s, err_e, last_clk)
        ii = init_idx[g]
        if ii < 0:
            continue
        v = vcode[g]
        _load_start(init_bb, init_mb, init_st, ii, bb, mb, st)
        s = mt_start[g]
        e = mt_end[g]
        if p + 1 > cap:
            status[g] = S_INTERNAL
            continue
        g0 = p
        ws = p
        _record(v, bb, mb, st, p, ws, True, facts, last_clk[st[ST_STM]], vflags, fifty_min_clock, work)
        evals[p] = EVAL_NONE
        plies = 0
        i = s
        line_start = True
        while True:
            kind, a, b, i, line_start = next_move_token(
                buf, i, e, plies, last_clk, flags, p, 1 - st[ST_STM], line_start, True, evals
            )
            if kind != TOK_SAN:  # (one test on the common path: a move)
                if kind == TOK_END:
                    break
                if kind == TOK_UNTERMINATED:
                    _fail(status, err_ply, err_s, err_e, g, S_UNTERMINATED, plies, a, b)
                    break
                # TOK_NULL, a null move: the side to move passes, as python-chess pushes Move.null().
                _note_null_move(err_ply, err_s, err_e, g, plies, a, b)
                if p + 2 > cap:
                    status[g] = S_INTERNAL
                    break
                prev_ep_legal = (flags[p] & FLAG_LEGAL_EP) != 0
                mover = st[ST_STM]
                _pass_turn(st)
                irreversible = prev_ep_legal
                if v == V_THREECHECK and in_check(v, bb, st[ST_STM]):
                    st[ST_CHECKS + mover] -= 1
                    irreversible = True
            else:
                m, nmatch = resolve_san(v, bb, mb, st, buf, a, b, pseudo, bb2, mb2, st2)
                if nmatch != 1 or p + 2 > cap:
                    _move_failed(status, err_ply, err_s, err_e, g, nmatch, plies, a, b)
                    break
                # python-chess is_irreversible, on the position before the move.
                prev_ep_legal = (flags[p] & FLAG_LEGAL_EP) != 0
                rights_before = st[ST_CASTLE]
                checks_before = st[ST_CHECKS] + st[ST_CHECKS + 1]
                zero = is_zeroing(bb, st, m)
                make_move(v, bb, mb, st, m)
                if v == V_CRAZYHOUSE:
                    irreversible = st[ST_CASTLE] != rights_before
                else:
                    irreversible = zero or st[ST_CASTLE] != rights_before or prev_ep_legal
                    if v == V_THREECHECK and st[ST_CHECKS] + st[ST_CHECKS + 1] != checks_before:
                        irreversible = True
            # The position after the move or null move.
            p += 1
            plies += 1
            if irreversible:
                ws = p
            _record(v, bb, mb, st, p, ws, irreversible, facts, last_clk[st[ST_STM]], vflags, fifty_min_clock, work)
            evals[p] = EVAL_NONE
        _end_game(g, g0, p, plies, last_clk, clock, status)
        p += 1
    pos_off[n_games] = p
    return p


analyzer._numba_env.plain_calls(globals())
