"""Replay kernel: PGN movetext bytes of a batch of games -> per-position facts in flat arrays.

The facts do not depend on any rule edition (docs/architecture.md, "Facts and rules"). For
every position p of every game (p = 0 is the start position, p = k after the k-th half-move):

  key        uint64  FIDE 2009+ identity (9.2.2): Polyglot Zobrist of pieces, side to move,
                     castling rights, and the e.p. file only when an e.p. capture is legal
  hmc        int32   halfmove clock (python-chess `halfmove_clock`)
  flags      uint16  FLAG_* bits below
  rep_next   int8    the most earlier occurrences (>= 2, else 0; at most REP_NEXT_MAX) of a position
                     that one legal move reaches (for the intended-move claim 9.2.1.1); `rep_next97` the same under
                     the 1997-2005 identity (see FLAG_WINDOW97)
  clock      float32 seconds on the clock of the side to move (from %clk), NaN if unknown
  eval       int16   the first valid "[%eval V]" of the comments after the move that led here
                     (ply 0: before the first move), as python-chess's GameNode.eval() reads it,
                     from White's view as stored: EVAL_NONE, centipawns (|v| <= EVAL_CP_MAX,
                     saturated), or a mate (|v| > EVAL_CP_MAX: eval_mate() below)

Kernels never raise: each game gets a status code and keeps its positions up to the last legal one.
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from analyzer.codes import S_AMBIGUOUS, S_BAD_TOKEN, S_ILLEGAL, S_INTERNAL, S_NO_MOVES, S_OK, S_UNTERMINATED
from analyzer.kinds._reptable import LONG_WINDOW, count_back, lookup, new_table, occurrences, sync
from analyzer.kinds.chess._board import (
    HOT,
    JIT,
    ST_CASTLE,
    ST_EP,
    ST_HMC,
    ST_STM,
    U0,
    U1,
    bishop_attacks,
    bit,
    castle_move_for,
    castle_now_bits,
    castle_targets,
    checks_and_pins,
    encode,
    gen_legal,
    has_legal_ep,
    has_legal_move,
    insufficient_material,
    is_safe_after,
    king_square,
    lsb,
    m_flag,
    m_from,
    m_promo,
    m_to,
    make_move,
    piece_key,
    rook_attacks,
    side_boards,
)
from analyzer.kinds.chess._tables import (
    BB_BISHOPS,
    BB_KINGS,
    BB_KNIGHTS,
    BB_PAWNS,
    BB_QUEENS,
    BB_ROOKS,
    CASTLE_NOW_SHIFT,
    CT_CHESS960,
    CT_SIZE,
    EVAL_CP_MAX,
    EVAL_MATE_CODE,
    EVAL_NONE,
    FILE_MASKS,
    FLAG_CHECK,
    FLAG_CHECKMATE,
    FLAG_FIFTY_INTENDED,
    FLAG_FIFTY_LOOKED,
    FLAG_HAS_MOVE,
    FLAG_INSUFFICIENT,
    FLAG_LEGAL_EP,
    FLAG_OFFER,
    FLAG_STALEMATE,
    FLAG_WINDOW97,
    FLAG_WINDOW_START,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    LINE,
    MF_CASTLE,
    MF_DOUBLE,
    MF_EP,
    MF_NORMAL,
    PAWN_ATTACKS,
    RANK_MASKS,
    REP_NEXT_MAX,
    ZOBRIST_CASTLE,
    ZOBRIST_EP_FILE,
    ZOBRIST_PIECE,
    ZOBRIST_WHITE_TO_MOVE,
)
from analyzer.pgn._scan import load_u64

_NAN32 = np.float32(np.nan)

# An inlined copy of make_move for the replay loop only (perft and the lookaheads keep the
# shared compiled function, so compile time grows once, not per call site).
_make_move_inl = njit(inline="always", **HOT)(make_move.py_func)


@njit(inline="always", **HOT)
def _at(buf, i):
    """buf[i] for 0 <= i: an unsigned index spares the negative-index wraparound code numba
    emits at every signed index (a compare and a select per byte read)."""
    return buf[np.uintp(i)]


@njit(inline="always", **HOT)
def _is_space(c):
    return c == 32 or c == 9 or c == 10 or c == 13 or c == 11 or c == 12


@njit(inline="always", **HOT)
def _is_digit(c):
    return 48 <= c <= 57


@njit(**HOT)
def _match(buf, a, b, lit):
    n = len(lit)
    if b - a != n:
        return False
    for k in range(n):
        if buf[a + k] != lit[k]:
            return False
    return True


@njit(**HOT)
def _find(buf, a, b, lit):
    n = len(lit)
    for i in range(a, b - n + 1):
        ok = True
        for k in range(n):
            if buf[i + k] != lit[k]:
                ok = False
                break
        if ok:
            return i
    return -1


# 1 for the bytes a SAN/number token continues with: not whitespace, not { } ( ) ; $ (a table
# lookup per byte instead of a chain of comparisons).
_TOKEN_BYTE = np.ones(256, dtype=np.uint8)
for _c in b" \t\n\r\x0b\x0c{}();$":
    _TOKEN_BYTE[_c] = 0


def _splat(c: int) -> np.uint64:
    """Byte c in each of the 8 bytes of a uint64 (for SWAR compares)."""
    return np.uint64(c * 0x0101010101010101)


_BYTE_LOW_BITS = _splat(0x01)
_BYTE_HIGH_BITS = _splat(0x80)
_BELOW_STAR = _splat(0x2A)
_SEMICOLON_BYTES = _splat(0x3B)
_LBRACE_BYTES = _splat(0x7B)
_RBRACE_BYTES = _splat(0x7D)


@njit(inline="always", **HOT)
def _token_end(buf, j, e):
    """First index >= j whose byte ends a token (_TOKEN_BYTE 0), or e. The next 8 bytes are
    screened at once (SWAR: the lowest flagged byte is exact): bytes below '*' (blanks, '$',
    '(', ')', also '!' '#' and controls) and ';' '{' '}'; the table then confirms, so a SAN token
    costs no loop whose exit mispredicts."""
    if j + 8 <= e:
        x = load_u64(buf, j)
        m = (x - _BELOW_STAR) & ~x
        y = x ^ _SEMICOLON_BYTES
        m |= (y - _BYTE_LOW_BITS) & ~y
        y = x ^ _LBRACE_BYTES
        m |= (y - _BYTE_LOW_BITS) & ~y
        y = x ^ _RBRACE_BYTES
        m |= (y - _BYTE_LOW_BITS) & ~y
        m &= _BYTE_HIGH_BITS
        j += np.int64(trailing_zeros(m)) >> 3 if m else 8
    while j < e and _TOKEN_BYTE[_at(buf, j)]:
        j += 1
    return j


LIT_CLK = np.frombuffer(b"%clk", dtype=np.uint8).copy()
LIT_OFFERS_DRAW = np.frombuffer(b"offers draw", dtype=np.uint8).copy()
LIT_R10 = np.frombuffer(b"1-0", dtype=np.uint8).copy()
LIT_R01 = np.frombuffer(b"0-1", dtype=np.uint8).copy()
LIT_RDRAW = np.frombuffer(b"1/2-1/2", dtype=np.uint8).copy()
LIT_STAR = np.frombuffer(b"*", dtype=np.uint8).copy()
LIT_NULL1 = np.frombuffer(b"--", dtype=np.uint8).copy()
LIT_NULL2 = np.frombuffer(b"Z0", dtype=np.uint8).copy()
LIT_NULL3 = np.frombuffer(b"0000", dtype=np.uint8).copy()
LIT_NULL4 = np.frombuffer(b"@@@@", dtype=np.uint8).copy()
LIT_EP = np.frombuffer(b"e.p.", dtype=np.uint8).copy()
LIT_EVAL = np.frombuffer(b"[%eval", dtype=np.uint8).copy()


def _le64(text: bytes) -> np.uint64:
    """8 bytes as the uint64 that _load_u64 reads for them (little-endian)."""
    return np.uint64(int.from_bytes(text, "little"))


# The Lichess clock comment "{ [%clk H:MM:SS] }" as 8-byte words: the opening, then H:MM:SS]
# checked with masks (':' ':' ']' in place; the five other bytes are '0'..'9' when their high
# nibble is 3 and still 3 after adding 6), then " }" (the top two bytes of the word at offset 10).
_CLK_OPEN = _le64(b"{ [%clk ")
_HMS_SEPS = _le64(bytes([0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF]))
_HMS_SEP_BYTES = _le64(b"\0:\0\0:\0\0]")
_HMS_DIGITS = _le64(bytes([0xFF, 0, 0xFF, 0xFF, 0, 0xFF, 0xFF, 0]))
_HMS_HIGH = _le64(bytes([0xF0, 0, 0xF0, 0xF0, 0, 0xF0, 0xF0, 0]))
_HMS_ZEROS = _le64(bytes([48, 0, 48, 48, 0, 48, 48, 0]))
_HMS_SIX = _le64(bytes([6, 0, 6, 6, 0, 6, 6, 0]))
_CLK_CLOSE = np.uint64(int.from_bytes(b" }", "little"))
_B0 = np.uint64(0xFF)


@njit(**HOT)
def _clock_at(buf, i, b):
    """Seconds of "H:M:S]" (one or more digits each, S with an optional '.' fraction) at
    buf[i:b]; NaN if the bytes there are not that. Whole seconds are summed as integers (exact)."""
    total = 0
    for part in range(3):
        k = i
        value = 0
        while k < b and _is_digit(buf[k]):
            value = value * 10 + (buf[k] - 48)
            k += 1
        if k == i or (part < 2 and (k >= b or buf[k] != 58)):  # digits, then ':' twice
            return np.nan
        total = total * 60 + value
        i = k + 1 if part < 2 else k
    frac = 0.0
    if i < b and buf[i] == 46:  # '.' fraction
        i += 1
        scale = 0.1
        while i < b and _is_digit(buf[i]):
            frac += (buf[i] - 48) * scale
            scale *= 0.1
            i += 1
    if i < b and buf[i] == 93:  # ']'
        return float(total) + frac
    return np.nan


@njit(**HOT)
def clock_value(buf, a, b):
    """Seconds of the first "[%clk H:M:S]" in buf[a:b], as python-chess's Node.clock() reads it
    (its regex: '[%clk', one whitespace byte, digits ':' digits ':' digits, an optional '.' and
    digits, ']'); NaN if there is none."""
    t = _find(buf, a, b, LIT_CLK)
    while t >= 0:
        if t > a and buf[t - 1] == 91 and t + 5 < b and _is_space(buf[t + 4]):
            v = _clock_at(buf, t + 5, b)
            if not np.isnan(v):
                return v
        t = _find(buf, t + 4, b, LIT_CLK)
    return np.nan


@njit(inline="always", **HOT)
def _piece_letter(c):
    if c == 78:  # N
        return 2
    if c == 66:  # B
        return 3
    if c == 82:  # R
        return 4
    if c == 81:  # Q
        return 5
    if c == 75:  # K
        return 6
    return 0


@njit(inline="always", **HOT)
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


@njit(forceinline=True, **HOT)
def resolve_san(bb, mb, st, ct, buf, a, b, chk, pinned):
    """Match SAN buf[a:b] to the legal moves: returns (move, n_matches); n = -1 if not SAN syntax.

    Follows python-chess parse_san: over-disambiguation is accepted, a pawn capture needs its
    file, `e2e4`-style fully specified moves name any piece, promotion must match. Castling:
    O-O / O-O-O (0-0, 0-0-0), and king-takes-rook written as squares (`e1h1`, `g1xh1`: python-chess
    find_move, in both rule sets); standard games (ct[CT_CHESS960] == 0) also accept the king's
    two-step (`Kg1`, `e1g1`), Chess960 games do not (python-chess parse_san on a chess960 board:
    `Kg1`, `e1g1`, `Kxh1` are illegal there).
    """
    # Strip check/mate/annotation suffixes.
    while b > a and (_at(buf, b - 1) == 43 or _at(buf, b - 1) == 35 or _at(buf, b - 1) == 33 or _at(buf, b - 1) == 63):
        b -= 1
    if b - a >= 4 and _at(buf, b - 1) == 46 and _match(buf, b - 4, b, LIT_EP):  # only 'e.p.' ends with '.'
        b -= 4
    if b <= a:
        return np.int32(0), -1
    stm, own, enemy, occ = side_boards(bb, st)
    # Castling: O-O, O-O-O, 0-0, 0-0-0.
    c0 = _at(buf, a)
    if c0 == 79 or c0 == 48:
        n = b - a
        if (
            (n == 3 or n == 5)
            and _at(buf, a + 1) == 45
            and _at(buf, a + 2) == c0
            and (n == 3 or (_at(buf, a + 3) == 45 and _at(buf, a + 4) == c0))
        ):
            m = castle_move_for(bb, st[ST_CASTLE], ct, stm, n == 3)
            if m:
                return m, 1
            return np.int32(0), 0
        if c0 == 79:
            return np.int32(0), -1
    piece = _piece_letter(c0)
    p = a + 1 if piece else a
    # Promotion suffix.
    promo = 0
    if b - p >= 3 and _promo_letter(_at(buf, b - 1)) and not (49 <= _at(buf, b - 1) <= 56):
        # Only a promotion if what precedes is a rank digit (optionally with '=').
        q = b - 1
        if _at(buf, q - 1) == 61:
            q -= 1
        if 49 <= _at(buf, q - 1) <= 56:
            promo = _promo_letter(_at(buf, b - 1))
            b = q
    if b - p < 2:
        return np.int32(0), -1
    tf = _at(buf, b - 2) - 97
    tr = _at(buf, b - 1) - 49
    if not (0 <= tf < 8 and 0 <= tr < 8):
        return np.int32(0), -1
    to = tr * 8 + tf
    ff = -1
    fr = -1
    i = p
    end = b - 2
    if i < end and 97 <= _at(buf, i) <= 104:
        ff = _at(buf, i) - 97
        i += 1
    if i < end and 49 <= _at(buf, i) <= 56:
        fr = _at(buf, i) - 49
        i += 1
    if i < end and (_at(buf, i) == 120 or _at(buf, i) == 45 or _at(buf, i) == 58):  # x - :
        i += 1
    if i != end:
        return np.int32(0), -1
    tb = bit(to)
    if own & tb:
        if piece == 0 and ff >= 0 and fr >= 0 and promo == 0 and st[ST_CASTLE]:
            # King takes own rook (e1h1): castling, if legal, with that rook.
            frm = fr * 8 + ff
            for kingside in (True, False):
                m = castle_move_for(bb, st[ST_CASTLE], ct, stm, kingside)
                if m and m_from(m) == frm and m_to(m) == to:
                    return m, 1
        return np.int32(0), 0
    from_mask = ~U0
    if ff >= 0:
        from_mask &= FILE_MASKS[ff]
    if fr >= 0:
        from_mask &= RANK_MASKS[fr]
    if piece == 0 and ff >= 0 and fr >= 0:
        # Fully specified (e2e4, g1f3): any piece on that square.
        piece = mb[fr * 8 + ff]
        if piece == 0 or not (own & bit(fr * 8 + ff)):
            return np.int32(0), 0
    elif piece == 0:
        piece = 1
        if ff < 0:
            from_mask &= FILE_MASKS[tf]
    ep = st[ST_EP]
    last_rank = 7 if stm == 0 else 0
    if piece == 1:
        if promo == 0 and tr == last_rank:
            return np.int32(0), 0
        if promo != 0 and tr != last_rank:
            return np.int32(0), 0
    elif promo != 0:
        return np.int32(0), 0
    cands = U0
    ep_cap = -1
    flag = MF_NORMAL
    if piece == 1:
        fwd = 8 if stm == 0 else -8
        if (enemy & tb) or (to == ep and not (occ & tb)):
            cands = PAWN_ATTACKS[1 - stm, to] & bb[BB_PAWNS] & own
            if to == ep and not (enemy & tb):
                if tr != (5 if stm == 0 else 2):
                    cands = U0
                ep_cap = to - fwd
                flag = MF_EP
        elif not (occ & tb):
            f1 = to - fwd
            if 0 <= f1 < 64:
                if bb[BB_PAWNS] & own & bit(f1):
                    cands = bit(f1)
                elif not (occ & bit(f1)) and tr == (3 if stm == 0 else 4):
                    f2 = f1 - fwd
                    if bb[BB_PAWNS] & own & bit(f2):
                        cands = bit(f2)
                        flag = MF_DOUBLE
    elif piece == 2:
        cands = KNIGHT_ATTACKS[to] & bb[BB_KNIGHTS] & own
    elif piece == 3:
        cands = bishop_attacks(to, occ) & bb[BB_BISHOPS] & own
    elif piece == 4:
        cands = rook_attacks(to, occ) & bb[BB_ROOKS] & own
    elif piece == 5:
        cands = (bishop_attacks(to, occ) | rook_attacks(to, occ)) & bb[BB_QUEENS] & own
    else:
        cands = KING_ATTACKS[to] & bb[BB_KINGS] & own
        # Standard chess: castling written as the king's two-step (Kg1, e1g1).
        if st[ST_CASTLE] and not ct[CT_CHESS960]:
            ksq = king_square(bb, stm)
            base = 0 if stm == 0 else 56
            if ksq == base + 4 and (to == base + 6 or to == base + 2) and (from_mask & bit(ksq)):
                m = castle_move_for(bb, st[ST_CASTLE], ct, stm, to == base + 6)
                if m:
                    return m, 1
    cands &= from_mask
    found = np.int32(0)
    count = 0
    ksq = king_square(bb, stm)
    while cands:
        frm = lsb(cands)
        cands &= cands - U1
        fb = bit(frm)
        # Not in check, not the king, not e.p.: legal iff not pinned or moving along the pin.
        if not chk and piece != 6 and ep_cap < 0 and ksq >= 0:
            legal = (not (pinned & fb)) or (LINE[ksq, frm] & tb) != U0
        else:
            legal = is_safe_after(bb, stm, frm, to, ep_cap, piece == 6)
        if legal:
            count += 1
            found = encode(frm, to, promo, flag)
    return found, count


@njit(**HOT)
def _key_delta(mb, st, m):
    """Zobrist change of pieces + side to move made by move m (before it is played)."""
    stm = st[ST_STM]
    frm = m_from(m)
    to = m_to(m)
    pt = mb[frm]
    promo = m_promo(m)
    flag = m_flag(m)
    if flag == MF_CASTLE:  # king frm -> kt, rook to -> rt
        kt, rt = castle_targets(frm, to)
        return (
            ZOBRIST_PIECE[stm, 6, frm]
            ^ ZOBRIST_PIECE[stm, 6, kt]
            ^ ZOBRIST_PIECE[stm, 4, to]
            ^ ZOBRIST_PIECE[stm, 4, rt]
            ^ ZOBRIST_WHITE_TO_MOVE
        )
    d = ZOBRIST_PIECE[stm, pt, frm] ^ ZOBRIST_PIECE[stm, promo if promo else pt, to] ^ ZOBRIST_WHITE_TO_MOVE
    cap = mb[to]
    if cap:
        d ^= ZOBRIST_PIECE[1 - stm, cap, to]
    if flag == MF_EP:
        csq = to - 8 if stm == 0 else to + 8
        d ^= ZOBRIST_PIECE[1 - stm, 1, csq]
    return d


@njit(**HOT)
def _copy_board(bb, mb, st, bb2, mb2, st2):
    """bb2, mb2, st2 = copies of the position (scratch arrays: helpers here do not allocate)."""
    for i in range(8):
        bb2[i] = bb[i]
    for i in range(64):
        mb2[i] = mb[i]
    for i in range(4):
        st2[i] = st[i]


@njit(**HOT)
def _lookahead_repeat(bb, mb, st, ct, pkey, key, p, ws, ws97, cnow, moves, nmoves, bb2, mb2, st2, want97, tab):
    """Max earlier occurrences (>= 2) of the position reached by a reversible legal move, in
    the 2009+ window and in the 1997 window (where the move must not change castling-now):
    walked back in a short window, looked up in `tab` (_reptable) once the window is long."""
    best = 0
    best97 = 0
    stm = st[ST_STM]
    rights = st[ST_CASTLE]
    if p - 1 < ws:
        return best, best97
    in_table = p - ws >= LONG_WINDOW and sync(tab, key, p, ws, ws97, True)
    c97 = 0
    for i in range(nmoves):
        m = moves[i]
        frm = m_from(m)
        to = m_to(m)
        if m_flag(m) != MF_NORMAL or mb[frm] == 1 or mb[to] != 0:
            continue
        if (ct[frm] | ct[to]) & rights:
            continue
        pt = mb[frm]
        nk = (
            pkey
            ^ ZOBRIST_PIECE[stm, pt, frm]
            ^ ZOBRIST_PIECE[stm, pt, to]
            ^ ZOBRIST_WHITE_TO_MOVE
            ^ ZOBRIST_CASTLE[rights]
        )
        if in_table:
            c, c97 = lookup(tab, nk, (p - 1) & 1)
        else:
            c = count_back(key, p - 1, ws, nk)
        if c >= 2:
            if c > best:
                best = c
            if want97 and p - 1 >= ws97:
                same_cnow = True
                if rights:
                    _copy_board(bb, mb, st, bb2, mb2, st2)
                    make_move(bb2, mb2, st2, ct, m)
                    same_cnow = castle_now_bits(bb2, rights, ct) == cnow
                if same_cnow:
                    if not in_table:
                        c97 = count_back(key, p - 1, ws97, nk)
                    if c97 >= 2 and c97 > best97:
                        best97 = c97
    if not want97:
        best97 = best
    return min(best, REP_NEXT_MAX), min(best97, REP_NEXT_MAX)


@njit(**HOT)
def _fifty_intended(bb, mb, st, ct, moves, nmoves, scratch, bb2, mb2, st2):
    """A legal non-zeroing move exists after which the opponent still has a legal move."""
    for i in range(nmoves):
        m = moves[i]
        frm = m_from(m)
        to = m_to(m)
        flag = m_flag(m)
        # (castling, king -> own rook, is not a capture)
        if flag == MF_EP or (flag != MF_CASTLE and (mb[frm] == 1 or mb[to] != 0)):
            continue
        _copy_board(bb, mb, st, bb2, mb2, st2)
        make_move(bb2, mb2, st2, ct, m)
        if gen_legal(bb2, mb2, st2, ct, scratch, 1) > 0:
            return True
    return False


@njit(inline="always", **HOT)
def _record(bb, mb, st, ct, pkey, p, ws, ws97, window_start, window97, facts, fifty_min_clock, work, cnow, want97):
    """Compute and store the facts of the position now on the board at index p.

    facts: the output arrays (key, hmc, flags, rep_next, rep_next97, clock); work: the arrays the
    replay loop lends it (moves, scratch, n_twice, key_bits, pin_out, bb2, mb2, st2: scratch, key_bits
    the seen-set of repetition_count; last_clk: the players' last clock readings; tab: the
    table of long repetition windows, _reptable). Passed as two
    tuples so that the three call sites do not each spell out fifteen arrays; _record is inlined on
    the hot path, where the tuples cost nothing."""
    key, hmc, flags, rep_next, rep_next97, clock = facts
    moves, scratch, n_twice, key_bits, pin_out, bb2, mb2, st2, last_clk, tab = work
    clk_now = last_clk[st[ST_STM]]
    stm = st[ST_STM]
    legal_ep = has_legal_ep(bb, st) if st[ST_EP] >= 0 else False
    k = pkey ^ ZOBRIST_CASTLE[st[ST_CASTLE]]
    if legal_ep:
        k ^= ZOBRIST_EP_FILE[st[ST_EP] % 8]
    pu = np.uintp(p)  # unsigned: no negative-index wraparound code on the stores
    key[pu] = k
    hmc[pu] = st[ST_HMC]
    f = cnow << CASTLE_NOW_SHIFT
    if window_start:
        f |= FLAG_WINDOW_START
        n_twice[0] = 0
        n_twice[1] = 0
        key_bits[0] = U0
        key_bits[1] = U0
    if window97:
        f |= FLAG_WINDOW97
    if legal_ep:
        f |= FLAG_LEGAL_EP
    ksq = king_square(bb, stm)
    chk = checks_and_pins(bb, stm, ksq, pin_out)
    if chk:
        f |= FLAG_CHECK
    pinned = pin_out[0]
    has_move = has_legal_move(bb, mb, st, ct, chk, pinned, ksq, scratch)
    if has_move:
        f |= FLAG_HAS_MOVE
    elif chk:
        f |= FLAG_CHECKMATE
    else:
        f |= FLAG_STALEMATE
    if not (bb[BB_PAWNS] | bb[BB_ROOKS] | bb[BB_QUEENS]):
        if insufficient_material(bb):
            f |= FLAG_INSUFFICIENT
    # Repetition bookkeeping for the intended-move lookahead.
    c, key_bits[p & 1] = occurrences(tab, key, p, ws, ws97, k, key_bits[p & 1])
    if c == 2:
        n_twice[stm] += 1
    rn = 0
    rn97 = 0
    need_rep = has_move and n_twice[1 - stm] > 0
    need_fifty = has_move and st[ST_HMC] >= fifty_min_clock
    if need_rep or need_fifty:
        nm = gen_legal(bb, mb, st, ct, moves, 256)
        if need_rep:
            rn, rn97 = _lookahead_repeat(
                bb, mb, st, ct, pkey, key, p, ws, ws97, cnow, moves, nm, bb2, mb2, st2, want97, tab
            )
        if need_fifty:
            f |= FLAG_FIFTY_LOOKED
            if _fifty_intended(bb, mb, st, ct, moves, nm, scratch, bb2, mb2, st2):
                f |= FLAG_FIFTY_INTENDED
    rep_next[pu] = rn
    rep_next97[pu] = rn97
    flags[pu] = f
    clock[pu] = clk_now


# A non-inlined copy of _record for the rare call sites (game start, null move): the replay
# loop keeps one inlined copy, on its common path.
_record_call = njit(**HOT)(_record.py_func)


@njit(**HOT)
def _fail(status, err_ply, err_s, err_e, g, code, ply, a, b):
    """Note why game g stopped (out of the replay loop: its rare paths stay small)."""
    status[g] = code
    err_ply[g] = ply
    err_s[g] = a
    err_e[g] = b


@njit(**HOT)
def _begin_game(g, p, pos_off, status, err_ply, err_s, err_e, last_clk):
    """Game g's positions start at index p; it is OK, with no error span and no clock reading
    yet (last_clk: unknown until the side's first %clk, so no clock is recorded for plies 0, 1)."""
    pos_off[g] = p
    status[g] = S_OK
    err_ply[g] = -1
    err_s[g] = -1
    err_e[g] = -1
    last_clk[0] = np.nan
    last_clk[1] = np.nan


@njit(forceinline=True, **HOT)
def _load_start(init_bb, init_mb, init_st, ii, bb, mb, st):
    """bb, mb, st = start position ii (row ii of init_*; as much of it as bb and st hold)."""
    for q in range(len(bb)):
        bb[q] = init_bb[ii, q]
    for q in range(64):
        mb[q] = init_mb[ii, q]
    for q in range(len(st)):
        st[q] = init_st[ii, q]


@njit(**HOT)
def _note_null_move(err_ply, err_s, err_e, g, plies, a, b):
    """A null move ('--') is noted on its game (the first one: ply and span), not an error."""
    if err_s[g] < 0:
        err_ply[g] = plies
        err_s[g] = a
        err_e[g] = b


@njit(inline="always", **HOT)
def _pass_turn(st):
    """A null move on the state st: the other side to move, no e.p. square, the halfmove clock on
    (python-chess push(Move.null()))."""
    st[ST_STM] = 1 - st[ST_STM]
    st[ST_EP] = -1
    st[ST_HMC] += 1


@njit(**HOT)
def _move_failed(status, err_ply, err_s, err_e, g, nmatch, plies, a, b):
    """Stop game g at the SAN token buf[a:b]: it names no legal move, several, or is not SAN
    (nmatch from resolve_san, != 1); or it is fine but the position arrays are full."""
    if nmatch != 1:
        code = S_BAD_TOKEN if nmatch < 0 else (S_ILLEGAL if nmatch == 0 else S_AMBIGUOUS)
        _fail(status, err_ply, err_s, err_e, g, code, plies, a, b)
    else:
        status[g] = S_INTERNAL
        err_ply[g] = plies


@njit(**HOT)
def _end_game(g, g0, p, plies, last_clk, clock, status):
    """Close game g (positions g0..p): no clock column if it had no %clk (last_clk only ever
    receives numbers: both still NaN), S_NO_MOVES if it had no move."""
    if np.isnan(last_clk[0]) and np.isnan(last_clk[1]):
        for q in range(g0, p + 1):
            clock[q] = _NAN32
    if status[g] == S_OK and plies == 0:
        status[g] = S_NO_MOVES


@njit(**HOT)
def eval_at(buf, a, e):
    """(code, end) of the evaluation value that starts at buf[a] (after "[%eval" and one blank),
    as python-chess's EVAL_REGEX reads it: "#" [+-] digits (a mate), or [+-] digits with an
    optional '.' and up to two decimals (at most 10 digits before a '.': centipawns are the
    exact decimal value x 100, python-chess's round(float(V) * 100)), then an optional
    ",depth", then ']'. code = EVAL_NONE when the bytes are not that."""
    i = a
    if i < e and buf[i] == 35:  # '#': mate
        i += 1
        neg = False
        if i < e and (buf[i] == 43 or buf[i] == 45):
            neg = buf[i] == 45
            i += 1
        k = i
        n = 0
        while i < e and _is_digit(buf[i]):
            if n < 100000:
                n = n * 10 + (buf[i] - 48)
            i += 1
        if i == k:
            return EVAL_NONE, i
        n = min(n, EVAL_MATE_CODE - EVAL_CP_MAX - 1)
        code = EVAL_MATE_CODE - n
        if neg and n > 0:
            code = -code
    else:
        neg = False
        if i < e and (buf[i] == 43 or buf[i] == 45):
            neg = buf[i] == 45
            i += 1
        k = i
        whole = 0
        while i < e and _is_digit(buf[i]):
            if whole < 1000000:
                whole = whole * 10 + (buf[i] - 48)
            i += 1
        n_int = i - k
        if n_int > 10:
            return EVAL_NONE, i
        cents = whole * 100
        if i < e and buf[i] == 46:  # '.'
            i += 1
            k = i
            while i < e and i - k < 2 and _is_digit(buf[i]):
                cents += (buf[i] - 48) * (10 if i == k else 1)
                i += 1
            n_dec = i - k
            if n_dec == 0 and n_int == 0:
                return EVAL_NONE, i
            if i < e and _is_digit(buf[i]):  # a third decimal: not the regex's number
                return EVAL_NONE, i
        elif n_int == 0:
            return EVAL_NONE, i
        code = min(cents, EVAL_CP_MAX)
        if neg:
            code = -code
    if i < e and buf[i] == 44:  # ',depth'
        i += 1
        k = i
        while i < e and _is_digit(buf[i]):
            i += 1
        if i == k:
            return EVAL_NONE, i
    if i < e and buf[i] == 93:  # ']'
        return code, i + 1
    return EVAL_NONE, i


@njit(**HOT)
def eval_value(buf, a, b):
    """The first valid "[%eval V]" in buf[a:b] (python-chess GameNode.eval: '[%eval', one
    whitespace byte, the value; eval_at), or EVAL_NONE."""
    t = _find(buf, a, b, LIT_EVAL)
    while t >= 0:
        if t + 7 < b and _is_space(buf[t + 6]):
            code, _ = eval_at(buf, t + 7, b)
            if code != EVAL_NONE:
                return code
        t = _find(buf, t + 6, b, LIT_EVAL)
    return EVAL_NONE


@njit(**HOT)
def _comment_end(buf, i, e, plies, last_clk, flags, p, side, evals):
    """Index after the '{' comment at buf[i], or -1 if unterminated; takes its %clk (into
    last_clk[side]), draw offer and %eval (into evals[p], unless an earlier comment of p had
    one). Every comment but Lichess' exact clock layouts comes here."""
    # One pass to the closing brace, noting the first '%' and any 'o' (the only
    # bytes that can start "%clk" or "offers draw"); most comments are "[%clk ...]".
    j = i + 1
    pct = -1
    has_o = False
    while j < e:
        cj = buf[j]
        if cj == 125:
            break
        if cj == 37 and pct < 0:
            pct = j
        elif cj == 111:
            has_o = True
        j += 1
    if j >= e:
        return -1
    if pct > i and evals[p] == EVAL_NONE:
        evals[p] = eval_value(buf, pct - 1, j)
    if plies > 0:
        if pct >= 0:
            v = clock_value(buf, pct - 1, j)
            if not np.isnan(v):
                last_clk[side] = v
        if has_o and _find(buf, i + 1, j, LIT_OFFERS_DRAW) >= 0:
            flags[p] |= FLAG_OFFER
    return j + 1


@njit(**HOT)
def _skip_other(buf, i, e, plies, flags, p):
    """Index after the ';' or '%' line, '(' variation, stray ')' or '}', or '$' NAG at buf[i];
    -1 for an unterminated variation."""
    c = buf[i]
    if c == 59 or c == 37:
        while i < e and buf[i] != 10 and buf[i] != 13:
            i += 1
        return i
    if c == 36:
        i += 1
        while i < e and _is_digit(buf[i]):
            i += 1
        return i
    if c != 40:
        return i + 1
    if i + 2 < e and buf[i + 1] == 61 and buf[i + 2] == 41:  # '(=)' offer mark
        if plies > 0:
            flags[p] |= FLAG_OFFER
        return i + 3
    depth = 1
    j = i + 1
    while j < e and depth > 0:
        cj = buf[j]
        if cj == 123:
            while j < e and buf[j] != 125:
                j += 1
        elif cj == 59:
            while j < e and buf[j] != 10 and buf[j] != 13:
                j += 1
            continue
        elif cj == 40:
            depth += 1
        elif cj == 41:
            depth -= 1
        j += 1
    if depth > 0:
        return -1
    return j


_EVAL_OPEN = _le64(b"{ [%eval")
_CLK_AFTER_EVAL = _le64(b"] [%clk ")


@njit(inline="always", **HOT)
def _is_eval_byte(c):
    """A byte of a Lichess evaluation: digits, '.', '-', '#' (0.17, -1.5, #3, #-2)."""
    return (48 <= c <= 57) or c == 46 or c == 45 or c == 35


@njit(forceinline=True, **HOT)
def _lichess_clock_end(buf, i, e, last_clk, side, evals, p):
    """Index after the comment at buf[i] if it is exactly Lichess' "{ [%clk H:MM:SS] }" or
    "{ [%eval V] [%clk H:MM:SS] }", its clock stored in last_clk[side] and V in evals[p] (unless
    an earlier comment of p had one); else -1 (the caller hands it to _comment_end, which reads
    any comment alike: such a comment has no draw offer, one %clk and one %eval). 8 bytes at a
    time, with the masks of the clock words above."""
    if i + 18 >= e:
        return -1
    w = load_u64(buf, i)
    k = i  # the 8 bytes before H:MM:SS]: "{ [%clk " or "] [%clk "
    if w != _CLK_OPEN:
        if w != _EVAL_OPEN or _at(buf, i + 8) != 32:
            return -1
        k = i + 9
        while k < e and k < i + 25 and _is_eval_byte(_at(buf, k)):
            k += 1
        if k == i + 9 or k + 18 >= e or load_u64(buf, k) != _CLK_AFTER_EVAL:
            return -1
    hms = load_u64(buf, k + 8)
    digits = hms & _HMS_DIGITS
    bad_digits = ((digits & _HMS_HIGH) ^ _HMS_ZEROS) | (((digits + _HMS_SIX) & _HMS_HIGH) ^ _HMS_ZEROS)
    if (
        (hms & _HMS_SEPS) != _HMS_SEP_BYTES
        or bad_digits != U0
        or (load_u64(buf, k + 10) >> np.uint64(48)) != _CLK_CLOSE
    ):
        return -1
    d = digits - _HMS_ZEROS
    secs = (
        np.int64(d & _B0) * 3600
        + np.int64((d >> np.uint64(16)) & _B0) * 600
        + np.int64((d >> np.uint64(24)) & _B0) * 60
        + np.int64((d >> np.uint64(40)) & _B0) * 10
        + np.int64((d >> np.uint64(48)) & _B0)
    )
    if k != i:  # "{ [%eval V] [%clk ...": V is buf[i + 9:k]
        code, end = eval_at(buf, i + 9, k + 1)
        if end != k + 1 or code == EVAL_NONE:
            return -1  # not a value python-chess reads (e.g. three decimals): the general path
        if evals[p] == EVAL_NONE:
            evals[p] = code
    last_clk[side] = float(secs)
    return k + 18


# What a token is (_token_kind).
TOK_SKIP = 0
TOK_RESULT = 1
TOK_NULL = 2
TOK_SAN = 3


@njit(inline="always", **HOT)
def _is_san_start(c):
    """A file letter a-h or N B R Q K O: the token can only be SAN (or 'e.p.')."""
    return (97 <= c <= 104) or c == 78 or c == 66 or c == 82 or c == 81 or c == 75 or c == 79


@njit(**HOT)
def _token_kind(buf, a, b, plies, flags, p):
    """(TOK_*, start of the SAN) for a token buf[a:b]; the replay loop asks only for tokens
    that do not start like SAN: numbers, results, null moves, glyphs ('=' notes a draw offer)."""
    c0 = buf[a]
    # A leading digit run: a move number ("12.", "12...", "1.e4"), a bare number, or
    # the start of a result or null-move literal (checked below on the whole token).
    k = a
    while k < b and _is_digit(buf[k]):
        k += 1
    numbered = a < k < b and buf[k] == 46
    if numbered:
        while k < b and buf[k] == 46:
            k += 1
        if k == b:
            return TOK_SKIP, a  # a move number alone (not followed by a space)
    if (c0 == 49 or c0 == 48 or c0 == 42) and (
        _match(buf, a, b, LIT_R10)
        or _match(buf, a, b, LIT_R01)
        or _match(buf, a, b, LIT_RDRAW)
        or _match(buf, a, b, LIT_STAR)
    ):
        return TOK_RESULT, a
    if (c0 == 45 or c0 == 90 or c0 == 48 or c0 == 64) and (
        _match(buf, a, b, LIT_NULL1)
        or _match(buf, a, b, LIT_NULL2)
        or _match(buf, a, b, LIT_NULL3)
        or _match(buf, a, b, LIT_NULL4)
    ):
        return TOK_NULL, a
    if numbered:
        a = k  # "1.e4": the move after its number
    elif k == b:
        return TOK_SKIP, a  # a bare number: ignored, as python-chess does
    if a >= b:
        return TOK_SKIP, a
    # Annotation-only tokens: glyphs, evaluation symbols, '...' of '1. ... e5', '=' offer mark.
    only_glyph = True
    for k in range(a, b):
        ck = buf[k]
        if not (ck == 33 or ck == 63 or ck == 43 or ck == 45 or ck == 61 or ck == 35 or ck == 46 or ck >= 128):
            only_glyph = False
            break
    if only_glyph:
        if b - a == 1 and buf[a] == 61 and plies > 0:
            flags[p] |= FLAG_OFFER
        return TOK_SKIP, a
    if buf[a] == 101 and _match(buf, a, b, LIT_EP):
        return TOK_SKIP, a
    return TOK_SAN, a


# What next_move_token found besides TOK_SAN and TOK_NULL.
TOK_END = 4  # a result token, or the end of the movetext
TOK_UNTERMINATED = 5  # an unterminated comment or variation starts at a


@njit(inline="always", **HOT)
def _is_drop_start(c):
    """'P' or '@': a Crazyhouse drop (P@e4, @e4)."""
    return c == 80 or c == 64


@njit(forceinline=True, **HOT)
def next_move_token(buf, i, e, plies, last_clk, flags, p, side, line_start, variants, evals):
    """The next move of the movetext buf[i:e]: (kind, a, b, i, line_start) with kind TOK_SAN or
    TOK_NULL (the token is buf[a:b]), TOK_END or TOK_UNTERMINATED (from a to at most 20 bytes on);
    i and line_start are where the scan goes on. On the way it takes the comments' clocks (into
    last_clk[side], `side` the player who just moved), draw offers (into flags[p]) and
    evaluations (into evals[p], which the caller sets to EVAL_NONE at each new p), and skips
    move numbers, NAGs, variations and glyphs. One loop for the chess and the variants replays
    (`variants`, a literal: their SAN also starts with 'P' or '@', and a lone 'e.p.' is handed to
    their SAN parser rather than skipped), so the two read movetext alike."""
    while i < e:
        c = _at(buf, i)
        if c == 32:  # the usual separator: skip a run of spaces in a tight loop
            i += 1
            while i < e and _at(buf, i) == 32:
                i += 1
            continue
        if c == 10 or c == 13:
            line_start = True
            i += 1
            continue
        if _is_space(c):
            i += 1
            continue
        at_line_start = line_start
        line_start = False
        if 48 <= c <= 57:  # "12. ", "12... ": a move number alone, the most common token after SAN
            k = i + 1
            while k < e and _is_digit(_at(buf, k)):
                k += 1
            if k < e and _at(buf, k) == 46:
                k += 1
                while k < e and _at(buf, k) == 46:
                    k += 1
                if k < e and _at(buf, k) == 32:
                    i = k
                    continue
        if c == 123:  # '{' comment
            # Fast path for Lichess' clock comments, alone or after an engine evaluation (a
            # quarter of lichess_sample's comments): the exact layout, else _comment_end.
            if plies > 0:
                j = _lichess_clock_end(buf, i, e, last_clk, side, evals, p)
                if j >= 0:
                    i = j
                    continue
            j = _comment_end(buf, i, e, plies, last_clk, flags, p, side, evals)
            if j < 0:
                return TOK_UNTERMINATED, i, min(i + 20, e), e, line_start
            i = j
            continue
        if c == 59 or c == 40 or c == 41 or c == 125 or c == 36 or (c == 37 and at_line_start):
            j = _skip_other(buf, i, e, plies, flags, p)
            if j < 0:
                return TOK_UNTERMINATED, i, min(i + 20, e), e, line_start
            i = j
            continue
        # A token.
        j = _token_end(buf, i + 1, e)
        a = i
        b = j
        i = j
        if not (_is_san_start(c) or (variants and _is_drop_start(c))):
            kind, a = _token_kind(buf, a, b, plies, flags, p)
            if kind == TOK_SKIP:
                continue
            if kind == TOK_RESULT:
                return TOK_END, a, b, i, line_start
            if kind == TOK_NULL:
                return TOK_NULL, a, b, i, line_start
        elif not variants and c == 101 and b - a == 4 and _at(buf, a + 1) == 46 and _match(buf, a, b, LIT_EP):
            continue
        return TOK_SAN, a, b, i, line_start
    return TOK_END, e, e, e, line_start


@njit(**JIT)
def replay_batch(
    buf,
    mt_start,
    mt_end,
    init_idx,
    init_bb,
    init_mb,
    init_st,
    init_ct,
    fifty_min_clock,
    want97,
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
    final_bb,
    final_st,
    evals,
    cand_game,
    cand_ply,
    cand_bb,
    cand_st,
    cand_n,
):
    """Replay every game i whose init_idx[i] >= 0 (init_idx < 0 = skip: no positions), from
    start position init_*[init_idx[i]] (init_ct: its castling table, standard or Chess960).

    final_bb (n x 8), final_st (n x 4): each game's board at its last position (its last legal
    one if it stopped at an error), as bb and st hold it; final_st[i, 0] = -1 for a game not
    replayed. Rules that look at a position as a whole (dead positions, tablebase probes) read
    it, so no one replays a game again to see where it ended.
    cand_*: the positions that may be dead beyond insufficient material (_note_dead_candidate):
    game, ply, board and state of each, cand_n[0] of them (counted past the arrays' length, not
    written: call again with room).
    want97: compute the 1997-2005 identity facts (castling-now bits, FLAG_WINDOW97,
    rep_next97). They cost ~8% of the replay and only fide_1997-style editions read them;
    without them the 1997 facts equal the 2009 ones (as on the python-chess path).
    evals (int16, as long as key): the eval fact of every position (EVAL_NONE without one)."""
    ws_i64 = np.zeros(16, dtype=np.int64)
    ws_u64 = np.zeros(24, dtype=np.uint64)
    ws_f64 = np.zeros(4, dtype=np.float64)
    moves = np.empty(260, dtype=np.int32)
    mb = np.empty(64, dtype=np.int8)
    mb2 = np.empty(64, dtype=np.int8)
    ct = np.empty(CT_SIZE, dtype=np.int64)
    # The table of long repetition windows, sized to the longest game (at most mt_len // 3 + 2
    # positions: a move takes 3 bytes or more; analyze.py sizes the facts the same way).
    longest = 0
    for g in range(len(mt_start)):
        if init_idx[g] >= 0:
            longest = max(longest, (mt_end[g] - mt_start[g]) // 3 + 2)
    longest = min(longest, len(key))
    tab = new_table(longest, longest, want97)
    starts = (init_bb, init_mb, init_st, init_ct)
    errors = (status, err_ply, err_s, err_e)
    facts = (key, hmc, flags, rep_next, rep_next97, clock)
    workspaces = (ws_i64, ws_u64, ws_f64, moves, mb, mb2, ct, tab)
    finals = (final_bb, final_st)
    cands = (cand_game, cand_ply, cand_bb, cand_st, cand_n)
    cand_n[0] = 0
    return _replay_games(
        buf,
        mt_start,
        mt_end,
        init_idx,
        starts,
        fifty_min_clock,
        want97,
        pos_off,
        errors,
        facts,
        workspaces,
        finals,
        evals,
        cands,
    )


@njit(inline="always", **HOT)
def _note_dead_candidate(bb, st, f, g, ply, cands):
    """Keep position `ply` of game g if it may be a dead position that insufficient material does
    not explain (a few bit tests per position): a legal move exists, and either pawns are on the
    board and every pawn has a pawn right in front of it (the blocked proof of
    kinds.chess._unwinnable needs this), or at most one pawn, rook or queen is on the board (a
    forced move that takes the last mating material, or leaves no legal move: searched)."""
    if not (f & FLAG_HAS_MOVE) or (f & FLAG_INSUFFICIENT):
        return
    pawns = bb[0]
    heavy = pawns | bb[3] | bb[4]
    if heavy & (heavy - np.uint64(1)):
        if not pawns:
            return
        wp = pawns & bb[6]
        bp = pawns & bb[7]
        if ((wp << np.uint64(8)) & ~pawns) or ((bp >> np.uint64(8)) & ~pawns):
            return
    cand_game, cand_ply, cand_bb, cand_st, cand_n = cands
    k = cand_n[0]
    if k < len(cand_game):
        cand_game[k] = g
        cand_ply[k] = ply
        for q in range(8):
            cand_bb[k, q] = bb[q]
        for q in range(4):
            cand_st[k, q] = st[q]
    cand_n[0] = k + 1


@njit(**HOT)
def _replay_games(
    buf,
    mt_start,
    mt_end,
    init_idx,
    starts,
    fifty_min_clock,
    want97,
    pos_off,
    errors,
    facts,
    workspaces,
    finals,
    evals,
    cands,
):
    """replay_batch without the numba runtime (no reference counting on the hot path): all
    scratch arrays come from the caller, as views of three small workspaces. The arrays come
    grouped as replay_batch's arguments are (starts: init_bb, init_mb, init_st, init_ct; errors:
    status, err_ply, err_s, err_e; facts: as _record takes them)."""
    init_bb, init_mb, init_st, init_ct = starts
    status, err_ply, err_s, err_e = errors
    final_bb, final_st = finals
    key, _hmc, flags, _rep_next, _rep_next97, clock = facts  # (the loop itself uses these three)
    ws_i64, ws_u64, ws_f64, moves, mb, mb2, ct, tab = workspaces
    n_games = len(mt_start)
    cap = len(key)
    st = ws_i64[0:4]
    st2 = ws_i64[4:8]
    n_twice = ws_i64[8:10]
    scratch = moves[256:260]
    moves = moves[0:256]
    bb = ws_u64[0:8]
    bb2 = ws_u64[8:16]
    pin_out = ws_u64[16:17]
    key_bits = ws_u64[17:19]
    last_clk = ws_f64[0:2]
    work = (moves, scratch, n_twice, key_bits, pin_out, bb2, mb2, st2, last_clk, tab)
    ct_idx = -1  # the start position whose castling table is in ct
    p = 0
    for g in range(n_games):
        _begin_game(g, p, pos_off, status, err_ply, err_s, err_e, last_clk)
        final_st[g, 0] = -1
        ii = init_idx[g]
        if ii < 0:
            continue
        _load_start(init_bb, init_mb, init_st, ii, bb, mb, st)
        if ii != ct_idx:
            for q in range(CT_SIZE):
                ct[q] = init_ct[ii, q]
            ct_idx = ii
        s = mt_start[g]
        e = mt_end[g]
        if p + 1 > cap:
            status[g] = S_INTERNAL
            continue
        g0 = p
        pkey = piece_key(bb, mb, st[ST_STM])
        ws = p
        ws97 = p
        cnow = castle_now_bits(bb, st[ST_CASTLE], ct) if want97 else 0
        n_twice[0] = 0
        n_twice[1] = 0
        _record_call(bb, mb, st, ct, pkey, p, ws, ws97, True, True, facts, fifty_min_clock, work, cnow, want97)
        evals[np.uintp(p)] = EVAL_NONE
        plies = 0
        i = s
        line_start = True
        while True:
            _note_dead_candidate(bb, st, flags[p], g, plies, cands)  # position p, recorded last
            kind, a, b, i, line_start = next_move_token(
                buf, i, e, plies, last_clk, flags, p, 1 - st[ST_STM], line_start, False, evals
            )
            if kind != TOK_SAN:  # (one test on the common path: a move)
                if kind == TOK_END:
                    break
                if kind == TOK_UNTERMINATED:
                    _fail(status, err_ply, err_s, err_e, g, S_UNTERMINATED, plies, a, b)
                    break
                # TOK_NULL, a null move ("--"): the side to move passes, as python-chess replays it.
                _note_null_move(err_ply, err_s, err_e, g, plies, a, b)
                if p + 2 > cap:
                    status[g] = S_INTERNAL
                    break
                restart = (flags[p] & FLAG_LEGAL_EP) != 0  # an e.p. right lost: a new repetition window
                pkey ^= ZOBRIST_WHITE_TO_MOVE
                _pass_turn(st)
                p += 1
                plies += 1
                if restart:
                    ws = p
                    ws97 = p
                _record_call(
                    bb, mb, st, ct, pkey, p, ws, ws97, restart, restart, facts, fifty_min_clock, work, cnow, want97
                )
                evals[np.uintp(p)] = EVAL_NONE
                continue
            m, nmatch = resolve_san(bb, mb, st, ct, buf, a, b, (flags[p] & FLAG_CHECK) != 0, pin_out[0])
            if nmatch != 1 or p + 2 > cap:
                _move_failed(status, err_ply, err_s, err_e, g, nmatch, plies, a, b)
                break
            # Play it.
            rights_before = st[ST_CASTLE]
            prev_ep_legal = (flags[p] & FLAG_LEGAL_EP) != 0
            pkey ^= _key_delta(mb, st, m)
            _make_move_inl(bb, mb, st, ct, m)
            irreversible = st[ST_HMC] == 0 or st[ST_CASTLE] != rights_before or prev_ep_legal
            p += 1
            plies += 1
            new_cnow = castle_now_bits(bb, st[ST_CASTLE], ct) if want97 and st[ST_CASTLE] else 0
            window97 = irreversible or new_cnow != cnow
            cnow = new_cnow
            if irreversible:
                ws = p
            if window97:
                ws97 = p
            _record(
                bb, mb, st, ct, pkey, p, ws, ws97, irreversible, window97, facts, fifty_min_clock, work, cnow, want97
            )
            evals[np.uintp(p)] = EVAL_NONE
        _end_game(g, g0, p, plies, last_clk, clock, status)
        for q in range(8):
            final_bb[g, q] = bb[q]
        for q in range(4):
            final_st[g, q] = st[q]
        p += 1
    pos_off[n_games] = p
    return p


analyzer._numba_env.plain_calls(globals())
