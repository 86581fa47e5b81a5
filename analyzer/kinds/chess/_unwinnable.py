"""Can a side still checkmate? The kernel behind FIDE's dead position (5.2.2; 9.6 before 2014)
and the flag-fall rule (6.9: a loss on time is a draw when the opponent cannot checkmate "by any
possible series of legal moves").

For a position and an intended winner W (the other side: the loser L) the answer is one of
  winnable    with a certificate: a legal sequence of moves from the position (both sides'
              moves, L cooperating) that ends with W checkmating L
  unwinnable  with a proof, of one of the kinds below
  unknown     the work budget (nodes) was spent first
An unwinnable answer is a proof, never a guess; a winnable one carries moves anyone can replay.
Proof kinds (docs/rules.md, "Dead positions and flag fall"):
  insufficient_material  W has no pawn, rook or queen, and python-chess's
                         has_insufficient_material(W) holds: a bare king; a king and one knight
                         while L has nothing but its king and queens; kings and bishops on one
                         square colour with no pawn or knight on the board
  blocked                every pawn is frozen for ever (a fixed point: each is blocked by a frozen
                         pawn and no piece can ever capture it or be captured by it) and no piece
                         of W can ever reach a square from which it would attack the region L's
                         king can ever reach; so L's king is never in check
  search                 every position reachable from this one was visited (a complete search,
                         positions compared whole, not by hash) and none is W's mate; positions
                         where W provably cannot mate (the two kinds above) end their branch

How it searches (every phase stops at the budget):
  1. the static proofs above;
  2. walks: one line at a time, in four modes (L's king stays put; it walks to W's king; W
     pushes its pawns to queen; L's king goes to a corner, for a lone minor piece), W bringing
     its king and pieces nearer without useless checks or hanging pieces; at each W move a mate
     in one is looked for, and at L's moves next to W's king a move after which W mates in one;
  3. a depth-first search where progress is free (after Ambrona's Find-Helpmate: iterative
     deepening in which a move towards a corner mate or a promotion costs no depth, one against
     it three, any other one; a transposition table), then best-first searches (positions stored
     whole, the next one expanded the least 2 x estimate + plies): a corner net for a lone minor
     piece (L's king in the corner of the bishop's colour, an L piece beside it, W's king two
     squares away), then the general estimate (L's king's free flight squares, its distance from
     the edge, W's king nearer, a check, a pawn's distance from queening);
  4. the complete search of (1, search), breadth first, which also finds the shortest helpmate.
Phases 2-3 only ever find winnable answers (a found line is a certificate whatever the
ordering); soundness of unwinnable answers rests on phases 1 and 4 alone. The 50- and 75-move
rules and repetitions do not bound "any possible series of legal moves" here (as in the
literature: Ambrona, "A Practical Algorithm for Chess Unwinnability", FUN 2022, whose ideas,
not code, this follows).

Kernels never raise and do not allocate per position: `classify_batch` allocates one workspace
per call, the helpers are HOT (_board.HOT).
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit

from analyzer.codes import (
    PK_BLOCKED,
    PK_BUDGET,
    PK_CERTIFICATE,
    PK_INSUFFICIENT,
    PK_SEARCH,
    PROOF_KINDS,
    PROOF_TEXT,
    W_UNKNOWN,
    W_UNWINNABLE,
    W_WINNABLE,
    WINNABILITY,
)
from analyzer.kinds.chess._board import (
    HOT,
    JIT,
    U0,
    U1,
    _side_insufficient,
    bishop_attacks,
    bit,
    castle_move_for,
    gen_legal,
    is_attacked,
    is_safe_after,
    king_square,
    lsb,
    make_move,
    msb,
    piece_attacks,
    piece_key,
    rook_attacks,
    side_boards,
)
from analyzer.kinds.chess._replay import FLAG_HAS_MOVE, FLAG_INSUFFICIENT
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
    CT_CHESS960,
    DARK_SQUARES,
    FILE_MASKS,
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    LIGHT_SQUARES,
    LINE,
    MF_CASTLE,
    MF_DOUBLE,
    MF_EP,
    MF_NORMAL,
    PAWN_ATTACKS,
    ROOK_EMPTY,
    ST_CASTLE,
    ST_EP,
    ST_STM,
    ZOBRIST_CASTLE,
    ZOBRIST_EP_FILE,
    ZOBRIST_PIECE,
    ZOBRIST_WHITE_TO_MOVE,
)

# Answers, and how they were reached (the proof's kind for unwinnable ones): analyzer.codes.
WINNABLE, UNWINNABLE, UNKNOWN = W_WINNABLE, W_UNWINNABLE, W_UNKNOWN
VERDICTS = WINNABILITY
PROOF_MATE = PK_CERTIFICATE  # winnable: a certificate
PROOF_INSUFFICIENT = PK_INSUFFICIENT
PROOF_BLOCKED = PK_BLOCKED
PROOF_SEARCH = PK_SEARCH
PROOF_BUDGET = PK_BUDGET  # unknown: the budget was spent
PROOFS = PROOF_KINDS

_TEXT_BYTES = np.zeros((len(PROOF_TEXT), 40), np.uint8)
_TEXT_LEN = np.zeros(len(PROOF_TEXT), np.int64)
for _i, _t in enumerate(PROOF_TEXT):
    _TEXT_BYTES[_i, : len(_t)] = np.frombuffer(_t.encode(), np.uint8)
    _TEXT_LEN[_i] = len(_t)
_PROMO_LETTER = np.frombuffer(b" pnbrqk", np.uint8).copy()

_WALK_ORDER = np.array([1, 0, 2, 3], np.int64)

MAXPLY = 96  # longest line of the walks and of the search where progress is free
TT_BITS = 16
TT_SIZE = 1 << TT_BITS
Q_CAP = 1 << 17  # positions the complete search can hold
H_BITS = 18
H_SIZE = 1 << H_BITS
CERT_CAP = 512  # longest certificate (the complete search's lines can be long)

_FILE_A = FILE_MASKS[0]
_FILE_H = FILE_MASKS[7]
_EIGHT = np.uint64(8)
_SEVEN = np.uint64(7)
_NINE = np.uint64(9)


# ---------------------------------------------------------------------------------------------
# Small helpers


@njit(inline="always", **HOT)
def _cheb(a, b):
    fa = a & 7
    ra = a >> 3
    fb = b & 7
    rb = b >> 3
    df = fa - fb if fa > fb else fb - fa
    dr = ra - rb if ra > rb else rb - ra
    return df if df > dr else dr


@njit(inline="always", **HOT)
def _edge(a):
    f = a & 7
    r = a >> 3
    x = f if f < 7 - f else 7 - f
    y = r if r < 7 - r else 7 - r
    return x if x < y else y


@njit(inline="always", **HOT)
def _capped(d):
    return d if d > 2 else 2


# _capped(_cheb(a, b)) and _edge(a) as tables, for _score's inner loop.
_CCHEB = np.array([[max(2, abs(a % 8 - b % 8), abs(a // 8 - b // 8)) for b in range(64)] for a in range(64)], np.int64)
_EDGE = np.array([min(a % 8, 7 - a % 8, a // 8, 7 - a // 8) for a in range(64)], np.int64)


# _board.make_move, inlined (as a call it took ~45 ns a move, a third of a best-first search's
# time): the same function compiled inline, as _replay does for the replay loop.
_make = njit(inline="always", **HOT)(make_move.py_func)


@njit(**HOT)
def _key(bb, mb, st):
    """Zobrist key of the whole position (pieces, side to move, castling rights, e.p. square)."""
    k = piece_key(bb, mb, st[ST_STM]) ^ ZOBRIST_CASTLE[st[ST_CASTLE]]
    if st[ST_EP] >= 0:
        k ^= ZOBRIST_EP_FILE[st[ST_EP] % 8]
    return k


@njit(inline="always", **HOT)
def _key_after(k, mb, st, st1, m):
    """_key of the position after move m, from k, the key before it: mb and st are the position
    before the move, st1 the state after it (one to four pieces change instead of all rehashed)."""
    stm = st[ST_STM]
    frm = m & 63
    to = (m >> 6) & 63
    promo = (m >> 12) & 7
    flag = (m >> 15) & 3
    pt = mb[frm]
    if flag == MF_CASTLE:
        kt = (frm & 56) + (6 if to > frm else 2)
        rt = (frm & 56) + (5 if to > frm else 3)
        k ^= (
            ZOBRIST_PIECE[stm, 6, frm]
            ^ ZOBRIST_PIECE[stm, 6, kt]
            ^ ZOBRIST_PIECE[stm, 4, to]
            ^ ZOBRIST_PIECE[stm, 4, rt]
        )
    else:
        k ^= ZOBRIST_PIECE[stm, pt, frm] ^ ZOBRIST_PIECE[stm, promo if promo else pt, to]
        cap = mb[to]
        if cap:
            k ^= ZOBRIST_PIECE[1 - stm, cap, to]
        if flag == MF_EP:
            k ^= ZOBRIST_PIECE[1 - stm, 1, to - 8 if stm == 0 else to + 8]
    k ^= ZOBRIST_WHITE_TO_MOVE ^ ZOBRIST_CASTLE[st[ST_CASTLE]] ^ ZOBRIST_CASTLE[st1[ST_CASTLE]]
    if st[ST_EP] >= 0:
        k ^= ZOBRIST_EP_FILE[st[ST_EP] % 8]
    if st1[ST_EP] >= 0:
        k ^= ZOBRIST_EP_FILE[st1[ST_EP] % 8]
    return k


@njit(**HOT)
def in_check(bb, side):
    """Is `side`'s king attacked?"""
    k = king_square(bb, side)
    if k < 0:
        return False
    return is_attacked(bb, k, bb[BB_BLACK - side], bb[BB_WHITE] | bb[BB_BLACK], side)


@njit(inline="always", **HOT)
def _copy(SBB, SMB, SST, a, b):
    for q in range(8):
        SBB[b, q] = SBB[a, q]
    src = SMB[a].view(np.uint64)  # the mailbox as 8 words, not 64 bytes
    dst = SMB[b].view(np.uint64)
    for q in range(8):
        dst[q] = src[q]
    for q in range(4):
        SST[b, q] = SST[a, q]


@njit(**HOT)
def _load(SBB, SMB, SST, level, bb, st):
    """Level `level` of the stack = the position (bb, st); the mailbox is rebuilt from bb."""
    for q in range(8):
        SBB[level, q] = bb[q]
    for q in range(4):
        SST[level, q] = st[q]
    for q in range(64):
        SMB[level, q] = 0
    for t in range(6):
        b = bb[t]
        while b:
            s = lsb(b)
            b &= b - U1
            SMB[level, s] = t + 1


@njit(inline="always", **HOT)
def _pawn_attacks(pawns, color):
    if color == 0:
        return ((pawns & ~_FILE_A) << _SEVEN) | ((pawns & ~_FILE_H) << _NINE)
    return ((pawns & ~_FILE_A) >> _NINE) | ((pawns & ~_FILE_H) >> _SEVEN)


@njit(inline="always", **HOT)
def _king_fill(b):
    """b and every square next to it."""
    w = (b & ~_FILE_A) >> U1
    e = (b & ~_FILE_H) << U1
    row = b | w | e
    return row | (row << _EIGHT) | (row >> _EIGHT)


@njit(inline="always", **HOT)
def _enc(frm, to, promo, flag):
    return np.int32(frm | (to << 6) | (promo << 12) | (flag << 15))


@njit(inline="always", **HOT)
def _push(out, n, limit, m):
    if n < limit:
        out[n] = m
        n += 1
    return n


@njit(**HOT)
def _gen(bb, mb, st, ct, out, limit):
    """gen_legal's moves, in its order (the searches' results depend on it), found with the
    checkers and pins computed once: only king moves and en passant are tested one by one
    (gen_legal tests every move with is_attacked, most of a search's time)."""
    stm, own, enemy, occ = side_boards(bb, st)
    ksq = king_square(bb, stm)
    if ksq < 0:
        return gen_legal(bb, mb, st, ct, out, limit)
    n = 0
    occ_k = occ & ~bit(ksq)
    t = KING_ATTACKS[ksq] & ~own
    while t:
        to = lsb(t)
        t &= t - U1
        tb = bit(to)
        if not is_attacked(bb, to, enemy & ~tb, occ_k | tb, stm):
            n = _push(out, n, limit, _enc(ksq, to, 0, MF_NORMAL))
            if n >= limit:
                return n  # (the usual answer to "any legal move?": no pins computed)
    checkers = ((KNIGHT_ATTACKS[ksq] & bb[BB_KNIGHTS]) | (PAWN_ATTACKS[stm, ksq] & bb[BB_PAWNS])) & enemy
    snipers = (
        (ROOK_EMPTY[ksq] & (bb[BB_ROOKS] | bb[BB_QUEENS])) | (BISHOP_EMPTY[ksq] & (bb[BB_BISHOPS] | bb[BB_QUEENS]))
    ) & enemy
    pinned = U0
    while snipers:
        s = lsb(snipers)
        snipers &= snipers - U1
        btw = BETWEEN[ksq, s] & occ
        if not btw:
            checkers |= bit(s)
        elif not (btw & (btw - U1)) and (btw & own):
            pinned |= btw
    if checkers & (checkers - U1):
        return n  # double check: king moves only
    target = ~own
    if checkers:
        target = checkers | BETWEEN[ksq, lsb(checkers)]
    pieces = own & (bb[BB_KNIGHTS] | bb[BB_BISHOPS] | bb[BB_ROOKS] | bb[BB_QUEENS])
    while pieces:
        frm = lsb(pieces)
        pieces &= pieces - U1
        t = piece_attacks(mb[frm], frm, occ) & target
        if pinned & bit(frm):
            t &= LINE[ksq, frm]
        while t:
            to = lsb(t)
            t &= t - U1
            n = _push(out, n, limit, _enc(frm, to, 0, MF_NORMAL))
            if n >= limit:
                return n
    pawns = own & bb[BB_PAWNS]
    fwd = 8 if stm == 0 else -8
    last_rank = 7 if stm == 0 else 0
    start_rank = 1 if stm == 0 else 6
    ep = st[ST_EP]
    while pawns:
        frm = lsb(pawns)
        pawns &= pawns - U1
        ok = target
        if pinned & bit(frm):
            ok &= LINE[ksq, frm]
        to = frm + fwd
        if 0 <= to < 64 and not (occ & bit(to)):
            if ok & bit(to):
                if to // 8 == last_rank:
                    for pr in (5, 4, 3, 2):
                        n = _push(out, n, limit, _enc(frm, to, pr, MF_NORMAL))
                else:
                    n = _push(out, n, limit, _enc(frm, to, 0, MF_NORMAL))
            if frm // 8 == start_rank:
                to2 = to + fwd
                if not (occ & bit(to2)) and (ok & bit(to2)):
                    n = _push(out, n, limit, _enc(frm, to2, 0, MF_DOUBLE))
            if n >= limit:
                return n
        targets = PAWN_ATTACKS[stm, frm] & enemy & ok
        while targets:
            to = lsb(targets)
            targets &= targets - U1
            if to // 8 == last_rank:
                for pr in (5, 4, 3, 2):
                    n = _push(out, n, limit, _enc(frm, to, pr, MF_NORMAL))
            else:
                n = _push(out, n, limit, _enc(frm, to, 0, MF_NORMAL))
            if n >= limit:
                return n
        if (
            ep >= 0
            and (PAWN_ATTACKS[stm, frm] & bit(ep))
            and not (occ & bit(ep))
            and frm // 8 == (4 if stm == 0 else 3)
        ):
            if is_safe_after(bb, stm, frm, ep, ep - fwd, False):
                n = _push(out, n, limit, _enc(frm, ep, 0, MF_EP))
            if n >= limit:
                return n
    if st[ST_CASTLE] and not checkers:
        m = castle_move_for(bb, st[ST_CASTLE], ct, stm, True)
        if m:
            n = _push(out, n, limit, m)
        m = castle_move_for(bb, st[ST_CASTLE], ct, stm, False)
        if m:
            n = _push(out, n, limit, m)
    return n


@njit(**HOT)
def _attacked_in(bb, color, region):
    """Every square of `region` a piece of `color` attacks (pawns, knights, king, sliders through
    the current occupancy), tracing only the sliders whose empty-board lines meet region."""
    own = bb[BB_WHITE + color]
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    a = _pawn_attacks(own & bb[BB_PAWNS], color)
    k = own & bb[BB_KINGS]
    if k:
        a |= KING_ATTACKS[lsb(k)]
    n = own & bb[BB_KNIGHTS]
    while n:
        s = lsb(n)
        n &= n - U1
        a |= KNIGHT_ATTACKS[s]
    d = own & (bb[BB_BISHOPS] | bb[BB_QUEENS])
    while d:
        s = lsb(d)
        d &= d - U1
        if BISHOP_EMPTY[s] & region:
            a |= bishop_attacks(s, occ)
    r = own & (bb[BB_ROOKS] | bb[BB_QUEENS])
    while r:
        s = lsb(r)
        r &= r - U1
        if ROOK_EMPTY[s] & region:
            a |= rook_attacks(s, occ)
    return a & region


_ALL = ~U0


@njit(inline="always", **HOT)
def attacked_by(bb, color):
    """Every square a piece of `color` attacks."""
    return _attacked_in(bb, color, _ALL)


# ---------------------------------------------------------------------------------------------
# Static proofs


@njit(**HOT)
def _region(pt, sq, frozen):
    """(squares a piece of type pt on sq can ever reach, squares of `frozen` it can ever
    attack) when only the `frozen` squares ever block it (every other piece may be anywhere or
    gone: an over-approximation). pt: 2 knight, 3 bishop, 4 rook, 5 queen."""
    reach = bit(sq)
    todo = reach
    hits = U0
    while todo:
        s = lsb(todo)
        todo &= todo - U1
        if pt == 2:
            a = KNIGHT_ATTACKS[s]
        elif pt == 3:
            a = bishop_attacks(s, frozen)
        elif pt == 4:
            a = rook_attacks(s, frozen)
        else:
            a = bishop_attacks(s, frozen) | rook_attacks(s, frozen)
        hits |= a & frozen
        new = a & ~frozen & ~reach
        reach |= new
        todo |= new
    return reach, hits


@njit(**HOT)
def frozen_analysis(bb, st, out):
    """The `blocked` proof. Returns True when every pawn on the board is frozen for ever, and
    then out[c] = 1 when side c can never give check (so never mate), else 0.

    A set F of pawns is frozen when, as long as every pawn of F stands, none of them can move or
    be captured (an induction over any series of legal moves): each has a pawn of F right in
    front of it (so it cannot push), no piece of the other side can ever stand on a square it
    attacks (so it cannot capture; kings never enter such squares), and no piece can ever
    capture it (a king only a pawn that no pawn of F defends). Reachable squares are
    over-approximated: only F blocks a piece, the other pieces may be anywhere. Then no pawn
    ever moves, none promotes, and the only checks are by pieces; side c gives check only if
    one of its knights, bishops, rooks or queens can reach a square of the region the other
    king can reach (its attacks stop at F too)."""
    out[0] = 0
    out[1] = 0
    pawns = bb[BB_PAWNS]
    wp = pawns & bb[BB_WHITE]
    bp = pawns & bb[BB_BLACK]
    # Pawns that cannot push: a pawn right in front (white pawns move up: +8).
    f = (wp & (pawns >> _EIGHT)) | (bp & (pawns << _EIGHT))
    if f != pawns:
        return False
    if st[ST_EP] >= 0:
        return False  # a capture en passant may be legal right now
    watt = _pawn_attacks(wp, 0)
    batt = _pawn_attacks(bp, 1)
    if (watt & bp) or (batt & wp):
        return False  # a pawn can capture a pawn now
    frozen = pawns
    kreg0 = U0
    kreg1 = U0
    for c in range(2):
        own = bb[BB_WHITE + c]
        k = own & bb[BB_KINGS]
        if not k:
            return False
        enemy_att = batt if c == 0 else watt
        enemy_pawns = bp if c == 0 else wp
        if k & enemy_att:
            return False  # in check by a pawn
        passable = ~frozen & ~enemy_att
        reg = k
        while True:
            nxt = _king_fill(reg) & passable
            if nxt == reg:
                break
            reg = nxt
        # A king may take an enemy pawn next to its region that no enemy pawn defends.
        if _king_fill(reg) & enemy_pawns & ~enemy_att:
            return False
        if c == 0:
            kreg0 = reg
        else:
            kreg1 = reg
    reach0 = U0
    reach1 = U0
    pieces = (bb[BB_KNIGHTS] | bb[BB_BISHOPS] | bb[BB_ROOKS] | bb[BB_QUEENS]) & ~pawns
    while pieces:
        s = lsb(pieces)
        pieces &= pieces - U1
        c = 0 if bb[BB_WHITE] & bit(s) else 1
        pt = 2
        if bb[BB_BISHOPS] & bit(s):
            pt = 3
        elif bb[BB_ROOKS] & bit(s):
            pt = 4
        elif bb[BB_QUEENS] & bit(s):
            pt = 5
        reach, hits = _region(pt, s, frozen)
        enemy_att = batt if c == 0 else watt
        enemy_pawns = bp if c == 0 else wp
        if hits & enemy_pawns:
            return False  # it could take a pawn
        if reach & enemy_att:
            return False  # a pawn could take it
        if c == 0:
            reach0 |= reach
        else:
            reach1 |= reach
    out[0] = 1 if not (reach0 & kreg1) else 0
    out[1] = 1 if not (reach1 & kreg0) else 0
    return True


@njit(inline="always", **HOT)
def _all_pawns_blocked(bb):
    """The cheap precondition of the blocked proof: pawns on the board, each with a pawn right in
    front of it (the replay's filter for dead-position candidates)."""
    pawns = bb[BB_PAWNS]
    if not pawns:
        return False
    wp = pawns & bb[BB_WHITE]
    bp = pawns & bb[BB_BLACK]
    return not ((wp << _EIGHT) & ~pawns) and not ((bp >> _EIGHT) & ~pawns)


@njit(**HOT)
def static_proof(bb, st, W, scratch2):
    """PROOF_INSUFFICIENT or PROOF_BLOCKED if W provably cannot mate here, else -1."""
    if _side_insufficient(bb, W):
        return PROOF_INSUFFICIENT
    if _all_pawns_blocked(bb) and frozen_analysis(bb, st, scratch2) and scratch2[W]:
        return PROOF_BLOCKED
    return -1


# ---------------------------------------------------------------------------------------------
# Checks and mates in one


@njit(**HOT)
def _check_sets(bb, W, lk, sets):
    """sets[0..4]: squares from which a pawn, knight, bishop, rook, queen of W attacks lk (by
    type - 1); sets[5]: W's pieces that alone stand between a W slider and lk (moving off the
    line discovers check)."""
    L = 1 - W
    occ = bb[BB_WHITE] | bb[BB_BLACK]
    sets[0] = PAWN_ATTACKS[L, lk]
    sets[1] = KNIGHT_ATTACKS[lk]
    b = bishop_attacks(lk, occ)
    r = rook_attacks(lk, occ)
    sets[2] = b
    sets[3] = r
    sets[4] = b | r
    own = bb[BB_WHITE + W]
    sl = (
        (BISHOP_EMPTY[lk] & (bb[BB_BISHOPS] | bb[BB_QUEENS])) | (ROOK_EMPTY[lk] & (bb[BB_ROOKS] | bb[BB_QUEENS]))
    ) & own
    d = U0
    while sl:
        s = lsb(sl)
        sl &= sl - U1
        btw = BETWEEN[lk, s] & occ
        if btw and not (btw & (btw - U1)) and (btw & own):
            d |= btw
    sets[5] = d


@njit(**HOT)
def _gives_check_played(bb, mb, st, ct, m, W, tbb, tmb, tst):
    """_gives_check for promotions, castling and e.p.: the move played on the scratch board."""
    for q in range(8):
        tbb[q] = bb[q]
    for q in range(64):
        tmb[q] = mb[q]
    for q in range(4):
        tst[q] = st[q]
    _make(tbb, tmb, tst, ct, m)
    return in_check(tbb, 1 - W)


@njit(inline="always", **HOT)
def _gives_check(bb, mb, st, ct, m, W, lk, sets, tbb, tmb, tst):
    """Does W's move m check the king on lk? (sets from _check_sets; promotions, castling and
    e.p. are played on the scratch board tbb, tmb, tst.) Inlined: the usual move is two tests."""
    frm = m & 63
    to = (m >> 6) & 63
    flag = (m >> 15) & 3
    if ((m >> 12) & 7) == 0 and flag != MF_EP and flag != MF_CASTLE:
        pt = mb[frm]
        if pt != 6 and (sets[pt - 1] & bit(to)):
            return True
        return (sets[5] & bit(frm)) != U0 and not (LINE[lk, frm] & bit(to))
    return _gives_check_played(bb, mb, st, ct, m, W, tbb, tmb, tst)


@njit(**HOT)
def _mate_among(SBB, SMB, SST, c, ct, W, moves, n, scratch, sets):
    """The first of W's n legal moves (W to move at level c) that mates (its position then at
    level c + 1), else 0."""
    lk = king_square(SBB[c], 1 - W)
    if lk < 0:
        return np.int32(0)
    _check_sets(SBB[c], W, lk, sets)
    for i in range(n):
        m = moves[i]
        if _gives_check(SBB[c], SMB[c], SST[c], ct, m, W, lk, sets, SBB[c + 1], SMB[c + 1], SST[c + 1]):
            _copy(SBB, SMB, SST, c, c + 1)
            _make(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, m)
            if _gen(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, scratch, 1) == 0:
                return m
    return np.int32(0)


@njit(**HOT)
def _mate_in_one(SBB, SMB, SST, c, ct, W, moves, scratch, sets):
    """W (to move at level c) has a move that mates: the move (its position at level c + 1),
    else 0."""
    if king_square(SBB[c], 1 - W) < 0:
        return np.int32(0)
    n = _gen(SBB[c], SMB[c], SST[c], ct, moves, 256)
    return _mate_among(SBB, SMB, SST, c, ct, W, moves, n, scratch, sets)


# ---------------------------------------------------------------------------------------------
# Move ordering: which moves bring W's mate nearer (a guess; it only decides what is tried first)


# Walk and search modes: where L's king goes and what W does first.
MODE_MEET = 0  # L's king walks to W's king; W's pieces come nearer
MODE_STAY = 1  # L's king stays (its other pieces move); W's pieces come
MODE_PROMOTE = 2  # W pushes its pawns and queens; its king takes the L pawns in their way
MODE_CORNER = 3  # L's king goes to the nearest corner, its pawns forward (blockers for a minor piece)
N_MODES = 4

# The searches after the walks: (kind, nodes per iteration, mode, limit): kind 1 the best-first
# search (in `mode`), 2 the search where progress is free; limit > 0 nodes, < 0 minus the
# percentage of the budget left. The complete search gets what remains. (A depth-first search
# over the best two moves per node, once first here, settled fewer positions in more nodes than
# the search where progress is free: benchmarks/RESULTS.md, 2026-12-07.)
_PHASES = np.array(
    [
        [2, 10000, MODE_CORNER, -60],
        [1, 0, MODE_CORNER, -60],
        [1, 0, MODE_MEET, -90],
    ],
    np.int64,
)


@njit(inline="always", **HOT)
def _nearest_corner(sq):
    f = 0 if (sq & 7) < 4 else 7
    r = 0 if (sq >> 3) < 4 else 7
    return r * 8 + f


_LIGHT_CORNERS = np.array([7, 56], np.int64)  # h1, a8
_DARK_CORNERS = np.array([0, 63], np.int64)  # a1, h8


@njit(inline="always", **HOT)
def _nearest_of(sq, corners):
    a, b = corners[0], corners[1]
    return a if _cheb(sq, a) <= _cheb(sq, b) else b


@njit(**HOT)
def _targets(bb, W, mode):
    """(where L's king goes, where W's king goes) in `mode`."""
    L = 1 - W
    lk = king_square(bb, L)
    wk = king_square(bb, W)
    if mode == MODE_STAY:
        return lk, lk
    if mode == MODE_CORNER:
        # a bishop mates on its own colour: the nearest corner of that colour
        bishops = bb[BB_BISHOPS] & bb[BB_WHITE + W]
        if bishops and not (bishops & DARK_SQUARES):
            return _nearest_of(lk, _LIGHT_CORNERS), lk
        if bishops and not (bishops & LIGHT_SQUARES):
            return _nearest_of(lk, _DARK_CORNERS), lk
        return _nearest_corner(lk), lk
    if mode == MODE_PROMOTE:
        wp = bb[BB_PAWNS] & bb[BB_WHITE + W]
        lp = bb[BB_PAWNS] & bb[BB_WHITE + L]
        if wp:
            # W's most advanced pawn: L's king heads for its promotion square
            if W == 0:
                lead = (msb(wp) & 7) + 56
                blockers = lp & (wp << _EIGHT)
            else:
                sq = lsb(wp)
                lead = sq & 7
                blockers = lp & (wp >> _EIGHT)
            wt = lsb(blockers) if blockers else lk
            return lead, wt
        return wk, lk
    return wk, lk


@njit(**HOT)
def _score(SBB, SMB, SST, c, ct, moves, n, scores, W, mode, sets, checks):
    """Score the n moves at level c (higher first); checks[i] = 1 if W's move i gives check
    (W to move; `checks` may be `scores` itself when not wanted). W: a queen promotion first, pawns
    forward, king and pieces nearer L's king (no nearer than two squares), no check that does
    not mate, no piece left where L takes it. L: its king towards its target and the edge,
    other moves after king moves (pieces next to the king block its flight squares), never a
    capture of W's material nor a check. `mode` (MODE_*) sets the kings' targets and weights."""
    bb = SBB[c]
    mb = SMB[c]
    st = SST[c]
    stm = st[ST_STM]
    L = 1 - W
    lk = king_square(bb, L)
    wk = king_square(bb, W)
    if lk < 0 or wk < 0:
        _score_slow(SBB, SMB, SST, c, ct, moves, n, scores, W, mode, sets, checks)
        return
    # The same scores as _score_slow, with the capped distances and edges from tables and the
    # king-adjacency tests as masks.
    ltarget, wtarget = _targets(bb, W, mode)
    promote = mode == MODE_PROMOTE
    wp = bb[BB_PAWNS] & bb[BB_WHITE + W]
    ahead = (wp << _EIGHT) if W == 0 else (wp >> _EIGHT)  # squares right in front of W's pawns
    near = KING_ATTACKS[lk]
    if stm == W:
        _check_sets(bb, W, lk, sets)
        la = attacked_by(bb, L)
        kw = 60 if promote else 20
        k_from = _CCHEB[wk, wtarget]
        p_base = 200 if promote else 30
        p_step = 20 if promote else 5
        for i in range(n):
            m = moves[i]
            frm = m & 63
            to = (m >> 6) & 63
            promo = (m >> 12) & 7
            pt = mb[frm]
            cap = mb[to]
            s = 0
            if promo == 5:
                s += 1000
            elif promo:
                s -= 300
            tb = bit(to)
            if pt == 1:
                s += p_base + p_step * ((to >> 3) if W == 0 else 7 - (to >> 3))
            elif pt == 6:
                s += kw * (k_from - _CCHEB[to, wtarget])
                if promote and cap == 1:
                    s += 100
            else:
                s += 60 * (_CCHEB[frm, lk] - _CCHEB[to, lk])
                if la & tb:
                    s -= 60
            if cap:
                if near & tb:
                    s -= 50
                else:
                    s += 5
            chk = _gives_check(bb, mb, st, ct, m, W, lk, sets, SBB[c + 1], SMB[c + 1], SST[c + 1])
            if chk:
                s -= 80
            checks[i] = 1 if chk else 0
            scores[i] = s
        return
    _check_sets(bb, L, wk, sets)
    k_from = 60 * _CCHEB[lk, ltarget] + (20 * _EDGE[lk] if mode != MODE_CORNER else 0)
    corner = mode == MODE_CORNER
    for i in range(n):
        m = moves[i]
        frm = m & 63
        to = (m >> 6) & 63
        promo = (m >> 12) & 7
        pt = mb[frm]
        cap = mb[to]
        tb = bit(to)
        s = 0
        if cap:
            s -= 500
        if pt == 6:
            s += k_from - 60 * _CCHEB[to, ltarget]
            if not corner:
                s -= 20 * _EDGE[to]
        else:
            s -= 30
            if near & tb:
                s += 20
            if near & bit(frm):
                s -= 20
            if pt == 1:
                s += 20 if corner else -10
            if promo and corner and (promo == 2 or promo == 3):
                s += 60
        if promote:
            if ahead & bit(frm):
                s += 100  # out of a W pawn's way
            if ahead & tb:
                s -= 100
        if promo == 5 or (promo and not corner):
            s -= 50
        if _gives_check(bb, mb, st, ct, m, L, wk, sets, SBB[c + 1], SMB[c + 1], SST[c + 1]):
            s -= 100
        scores[i] = s


@njit(**HOT)
def _score_slow(SBB, SMB, SST, c, ct, moves, n, scores, W, mode, sets, checks):
    """_score by its definition (_cheb and _edge computed per move): for positions without
    both kings, where the tables of _score do not apply."""
    bb = SBB[c]
    mb = SMB[c]
    st = SST[c]
    stm = st[ST_STM]
    L = 1 - W
    lk = king_square(bb, L)
    wk = king_square(bb, W)
    ltarget, wtarget = _targets(bb, W, mode)
    if stm == W:
        _check_sets(bb, W, lk, sets)
        la = attacked_by(bb, L)
    else:
        _check_sets(bb, L, wk, sets)
        la = U0
    promote = mode == MODE_PROMOTE
    wp = bb[BB_PAWNS] & bb[BB_WHITE + W]
    ahead = (wp << _EIGHT) if W == 0 else (wp >> _EIGHT)  # squares right in front of W's pawns
    for i in range(n):
        m = moves[i]
        frm = m & 63
        to = (m >> 6) & 63
        promo = (m >> 12) & 7
        pt = mb[frm]
        cap = mb[to]
        s = 0
        if stm == W:
            if promo == 5:
                s += 1000
            elif promo:
                s -= 300
            if pt == 1:
                s += (200 if promote else 30) + (20 if promote else 5) * ((to >> 3) if W == 0 else 7 - (to >> 3))
            elif pt == 6:
                s += (60 if promote else 20) * (_capped(_cheb(frm, wtarget)) - _capped(_cheb(to, wtarget)))
                if promote and cap == 1:
                    s += 100
            else:
                s += 60 * (_capped(_cheb(frm, lk)) - _capped(_cheb(to, lk)))
                if la & bit(to):
                    s -= 60
            if cap:
                if _cheb(to, lk) == 1:
                    s -= 50
                else:
                    s += 5
            chk = _gives_check(bb, mb, st, ct, m, W, lk, sets, SBB[c + 1], SMB[c + 1], SST[c + 1])
            if chk:
                s -= 80
            checks[i] = 1 if chk else 0
        else:
            if cap:
                s -= 500
            if pt == 6:
                s += 60 * (_capped(_cheb(frm, ltarget)) - _capped(_cheb(to, ltarget)))
                if mode != MODE_CORNER:
                    s += 20 * (_edge(frm) - _edge(to))
            else:
                s -= 30
                if _cheb(to, lk) == 1:
                    s += 20
                if _cheb(frm, lk) == 1:
                    s -= 20
                if pt == 1:
                    s += 20 if mode == MODE_CORNER else -10
                if promo and mode == MODE_CORNER and (promo == 2 or promo == 3):
                    s += 60
            if promote:
                if ahead & bit(frm):
                    s += 100  # out of a W pawn's way
                if ahead & bit(to):
                    s -= 100
            if promo == 5 or (promo and mode != MODE_CORNER):
                s -= 50
            if _gives_check(bb, mb, st, ct, m, L, wk, sets, SBB[c + 1], SMB[c + 1], SST[c + 1]):
                s -= 100
        scores[i] = s


# ---------------------------------------------------------------------------------------------
# Phase 2: walks


_TRIED = np.int32(-(1 << 30))


@njit(inline="always", **HOT)
def _next_best(scores, n):
    """The index of the best move not tried yet (its score then marked tried), or -1."""
    best = -1
    top = _TRIED
    for i in range(n):
        if scores[i] > top:
            top = scores[i]
            best = i
    if best >= 0:
        scores[best] = _TRIED
    return best


@njit(**HOT)
def _walk(W, ct, stack, mode, lookahead, nodes, budget):
    """One line from level 0, at each ply the best move by _score that keeps W's mating
    material, repeats no position of the line and leaves the opponent a legal move; at W's plies
    a mating move is taken first, at L's plies near W's king (kings at most four squares apart)
    a move of the best `lookahead` after which W mates. `mode`: MODE_*. Returns (certificate
    length or -1, nodes)."""
    SBB, SMB, SST, MV, SC, _NI, KEYS, CERT, scratch, sets, _aux = stack
    KEYS[0] = _key(SBB[0], SMB[0], SST[0])
    n_next = -1  # the moves of level c, generated when its position was chosen
    for c in range(MAXPLY - 8):
        if nodes > budget:
            return -1, nodes
        stm = SST[c, ST_STM]
        n = n_next if n_next >= 0 else _gen(SBB[c], SMB[c], SST[c], ct, MV[c], 256)
        n_next = -1
        if n == 0:
            return -1, nodes
        scores = SC[c]
        if stm == W:
            checks = SC[c + 1]  # (the next level's scores: free until then)
            _score(SBB, SMB, SST, c, ct, MV[c], n, scores, W, mode, sets, checks)
            nodes += 1
            for i in range(n):
                if checks[i]:
                    m = MV[c, i]
                    _copy(SBB, SMB, SST, c, c + 1)
                    _make(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, m)
                    if _gen(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, scratch, 1) == 0:
                        CERT[c] = m
                        return c + 1, nodes
        else:
            _score(SBB, SMB, SST, c, ct, MV[c], n, scores, W, mode, sets, scores)
            if lookahead > 0 and _cheb(king_square(SBB[c], W), king_square(SBB[c], 1 - W)) <= 2:
                saved = SC[c + 2]  # the scores, kept for the choice below
                for i in range(n):
                    saved[i] = scores[i]
                for _ in range(lookahead):
                    i = _next_best(scores, n)
                    if i < 0:
                        break
                    m = MV[c, i]
                    _copy(SBB, SMB, SST, c, c + 1)
                    _make(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, m)
                    nodes += 1
                    mm = _mate_in_one(SBB, SMB, SST, c + 1, ct, W, MV[c + 2], scratch, sets)
                    if mm:
                        CERT[c] = m
                        CERT[c + 1] = mm
                        return c + 2, nodes
                for i in range(n):
                    scores[i] = saved[i]
        chosen = np.int32(0)
        while True:
            i = _next_best(scores, n)
            if i < 0:
                break
            m = MV[c, i]
            _copy(SBB, SMB, SST, c, c + 1)
            _make(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, m)
            nodes += 1
            if _side_insufficient(SBB[c + 1], W):
                continue
            k = _key_after(KEYS[c], SMB[c], SST[c], SST[c + 1], m)
            seen = False
            for a in range(c + 1):
                if KEYS[a] == k:
                    seen = True
                    break
            if seen:
                continue
            n_next = _gen(SBB[c + 1], SMB[c + 1], SST[c + 1], ct, MV[c + 1], 256)
            if n_next == 0:
                continue  # mate by L or a stalemate: a dead end
            KEYS[c + 1] = k
            chosen = m
            break
        if chosen == 0:
            return -1, nodes
        CERT[c] = chosen
    return -1, nodes


# ---------------------------------------------------------------------------------------------
# Phase 3: depth-first search where progress is free
#
# Ambrona's Find-Helpmate idea (FUN 2022): iterative deepening in which a move that brings a
# mate nearer costs no depth, a move against it costs three and any other one (none right after
# a move of progress), so that long lines of progress are searched as deep as they go while
# everything else stays shallow. The lines W's lone minor piece needs (L's king into a corner,
# an L piece beside it, W's king two squares off) and promotions past blockers are of that kind:
# 20 to 80 plies, too long for the walks and the best-first searches. Its rules of progress:
#   W: a pawn move in L's half of the board, a capture, the king nearer its square two off the
#      corner, a knight nearer the corner;
#   L: the king nearer the corner, a knight nearer the square beside it; against: a capture, and,
#      when W cannot mate unless L promotes (a lone knight against no rook or minor piece; bishops
#      of one colour against no knight and no bishop of the other colour), any move but a pawn's
#      (promoting to a knight or a bishop).
# The corner: the one _targets gives MODE_CORNER (the bishops' colour, nearest L's king), fixed
# at the root. A W mate in one is looked for at every W node. It proves nothing when it ends
# without a mate (the complete search does that).

VAR_PROGRESS, VAR_NORMAL, VAR_AGAINST = 0, 1, 2


def _knight_distances():
    d = np.full((64, 64), 99, np.int64)
    for a in range(64):
        d[a, a] = 0
        frontier = [a]
        k = 0
        while frontier:
            k += 1
            nxt = []
            for s in frontier:
                for df, dr in ((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)):
                    f, r = s % 8 + df, s // 8 + dr
                    if 0 <= f < 8 and 0 <= r < 8 and d[a, r * 8 + f] > k:
                        d[a, r * 8 + f] = k
                        nxt.append(r * 8 + f)
            frontier = nxt
    return d


_KDIST = _knight_distances()


@njit(**HOT)
def _needs_promotion(bb, W):
    """W cannot mate unless L promotes (while L has pawns): a lone knight against no rook, bishop
    or knight; bishops of one colour against no knight and no bishop of the other colour."""
    own = bb[BB_WHITE + W]
    lown = bb[BB_WHITE + 1 - W]
    if own & (bb[BB_PAWNS] | bb[BB_ROOKS] | bb[BB_QUEENS]):
        return False
    wn = own & bb[BB_KNIGHTS]
    wb = own & bb[BB_BISHOPS]
    if wn:
        return not wb and not (wn & (wn - U1)) and not (lown & (bb[BB_ROOKS] | bb[BB_BISHOPS] | bb[BB_KNIGHTS]))
    if not wb:
        return False
    colour = DARK_SQUARES if wb & DARK_SQUARES else LIGHT_SQUARES
    return not (bb[BB_BISHOPS] & ~colour) and not (lown & bb[BB_KNIGHTS])


@njit(inline="always", **HOT)
def _variation(mb, m, W, stm, corner, beside, wking, promotion):
    """VAR_* of move m (its side stm) under the rules of progress above."""
    frm = m & 63
    to = (m >> 6) & 63
    promo = (m >> 12) & 7
    pt = mb[frm]
    flag = (m >> 15) & 3
    cap = (mb[to] != 0 and flag != MF_CASTLE) or flag == MF_EP  # (castling is encoded king takes rook)
    if stm == W:
        if (
            cap
            or (pt == 1 and ((to >> 3) >= 4 if W == 0 else (to >> 3) <= 3))
            or (pt == 6 and _cheb(to, wking) < _cheb(frm, wking))
            or (pt == 2 and _KDIST[to, corner] < _KDIST[frm, corner])
        ):
            return VAR_PROGRESS
        return VAR_NORMAL
    if (pt == 6 and _cheb(to, corner) < _cheb(frm, corner)) or (pt == 2 and _KDIST[to, beside] < _KDIST[frm, beside]):
        return VAR_PROGRESS
    if cap:
        return VAR_AGAINST
    if promotion:
        return VAR_PROGRESS if pt == 1 and promo != 5 and promo != 4 else VAR_AGAINST
    return VAR_NORMAL


@njit(**HOT)
def _progress_iteration(D, W, ct, stack, tt_key, tt_val, stamp, nodes, budget, corner, beside, wking, promotion):
    """One iteration of the search from level 0, D the depth (moves left) at the root; per level
    NI holds the moves' count, the next one's index, the moves left and whether the move into the
    level was progress, SC the moves' VAR_*. Returns (1 found | 0 exhausted | -1 cut: budget or
    depth, certificate length, nodes)."""
    SBB, SMB, SST, MV, SC, NI, KEYS, CERT, scratch, sets, _aux = stack
    KEYS[0] = _key(SBB[0], SMB[0], SST[0])
    NI[0, 2] = D
    NI[0, 3] = 0
    cut = False
    lv = 0
    enter = True
    while True:
        if enter:
            enter = False
            n = _gen(SBB[lv], SMB[lv], SST[lv], ct, MV[lv], 256)
            stm = SST[lv, ST_STM]
            if stm == W and n:
                nodes += 1
                mm = _mate_among(SBB, SMB, SST, lv, ct, W, MV[lv], n, scratch, sets)
                if mm:
                    CERT[lv] = mm
                    return 1, lv + 1, nodes
            # the moves of progress first, then the others, then those against it
            cnt0 = 0
            cnt1 = 0
            for i in range(n):
                v = _variation(SMB[lv], MV[lv, i], W, stm, corner, beside, wking, promotion)
                scratch[i] = MV[lv, i] | (v << 28)
                if v == VAR_PROGRESS:
                    cnt0 += 1
                elif v == VAR_NORMAL:
                    cnt1 += 1
            a = 0
            b = cnt0
            c2 = cnt0 + cnt1
            for i in range(n):
                v = scratch[i] >> 28
                m = scratch[i] & 0x0FFFFFFF
                if v == VAR_PROGRESS:
                    MV[lv, a] = m
                    SC[lv, a] = v
                    a += 1
                elif v == VAR_NORMAL:
                    MV[lv, b] = m
                    SC[lv, b] = v
                    b += 1
                else:
                    MV[lv, c2] = m
                    SC[lv, c2] = v
                    c2 += 1
            NI[lv, 0] = n
            NI[lv, 1] = 0
        if NI[lv, 1] >= NI[lv, 0]:
            if lv == 0:
                return (-1 if cut else 0), 0, nodes
            lv -= 1
            continue
        i = NI[lv, 1]
        NI[lv, 1] += 1
        m = MV[lv, i]
        v = SC[lv, i]
        left = NI[lv, 2]
        if v == VAR_AGAINST:
            left -= 3
        elif v == VAR_NORMAL and not NI[lv, 3]:
            left -= 1
        if left <= 0 or lv + 2 >= MAXPLY:
            cut = True
            continue
        c = lv + 1
        _copy(SBB, SMB, SST, lv, c)
        _make(SBB[c], SMB[c], SST[c], ct, m)
        nodes += 1
        if nodes > budget:
            return -1, 0, nodes
        if _side_insufficient(SBB[c], W):
            continue
        k = _key_after(KEYS[lv], SMB[lv], SST[lv], SST[c], m)
        h = k & np.uint64(TT_SIZE - 1)
        if tt_key[h] == k and tt_val[h] // 256 == stamp and tt_val[h] % 256 >= left:
            continue
        tt_key[h] = k
        tt_val[h] = stamp * 256 + left
        KEYS[c] = k
        CERT[lv] = m
        NI[c, 2] = left
        NI[c, 3] = 1 if v == VAR_PROGRESS else 0
        lv = c
        enter = True


@njit(**HOT)
def _progress_search(bb0, st0, W, ct, stack, tt_key, tt_val, ctr, nodes, budget, local):
    """Iterative deepening of _progress_iteration, each iteration at most `local` nodes. Returns
    (1 found | 0 exhausted | -1 budget, certificate length, nodes)."""
    SBB, SMB, SST = stack[0], stack[1], stack[2]
    corner, _ = _targets(bb0, W, MODE_CORNER)
    f = corner & 7
    r = corner >> 3
    beside = r * 8 + (6 if f == 7 else 1)
    wking = (5 if r == 7 else 2) * 8 + f
    promotion = _needs_promotion(bb0, W)
    for D in range(1, 250):
        ctr[0] += 1
        _load(SBB, SMB, SST, 0, bb0, st0)
        lim = nodes + local
        if lim > budget:
            lim = budget
        found, length, nodes = _progress_iteration(
            D, W, ct, stack, tt_key, tt_val, ctr[0], nodes, lim, corner, beside, wking, promotion
        )
        if found >= 0:
            return found, length, nodes
        if nodes >= budget:
            break
    return -1, 0, nodes


# ---------------------------------------------------------------------------------------------
# Phase 4: the complete search


@njit(inline="always", **HOT)
def _packed(st):
    return st[ST_STM] | (st[ST_CASTLE] << 1) | ((st[ST_EP] + 1) << 5)


@njit(inline="always", **HOT)
def _table_mask(nodes, budget):
    """The part of the hash table a search of at most budget - nodes moves uses (a power of two
    with room for twice the positions it can store, not less than 1024 slots, not more than
    H_SIZE): the whole table, 4 MB, spread a small search's probes over the caches."""
    need = 2 * (budget - nodes + 512)
    size = 1024
    while size < need and size < H_SIZE:
        size *= 2
    return np.uint64(size - 1)


@njit(inline="always", **HOT)
def _store_root(bfs, SBB, SMB, SST, bb0, st0, hmask, stamp):
    """Position 0 of the store = (bb0, st0), also loaded at level 0."""
    QBB, QST, QPAR, QMOVE, HK, HV = bfs
    for q in range(8):
        QBB[0, q] = bb0[q]
    QST[0] = _packed(st0)
    QPAR[0] = -1
    QMOVE[0] = 0
    _load(SBB, SMB, SST, 0, bb0, st0)
    k0 = _key(SBB[0], SMB[0], SST[0])
    h = k0 & hmask
    HK[h] = k0
    HV[h] = stamp * Q_CAP


@njit(inline="always", **HOT)
def _load_stored(bfs, SBB, SMB, SST, i):
    """Level 0 = stored position i."""
    st = SST[0]
    pk = bfs[1][i]
    st[ST_STM] = pk & 1
    st[ST_CASTLE] = (pk >> 1) & 15
    st[ST_EP] = (pk >> 5) - 1
    st[3] = 0
    _load(SBB, SMB, SST, 0, bfs[0][i], st)


@njit(inline="always", **HOT)
def _store_child(bfs, SBB, SST, k, hmask, stamp, tail, parent, m):
    """Store the position at level 1 (key k), reached from stored position `parent` by move m, as
    number `tail`. Returns tail, or -1 when it is stored already, -2 when the store is full."""
    QBB, QST, QPAR, QMOVE, HK, HV = bfs
    pk1 = _packed(SST[1])
    h = k & hmask
    while HV[h] // Q_CAP == stamp:
        j = HV[h] % Q_CAP
        if HK[h] == k and QST[j] == pk1:
            same = True
            for q in range(8):
                if QBB[j, q] != SBB[1, q]:
                    same = False
                    break
            if same:
                return -1
        h = (h + U1) & hmask
    if tail >= Q_CAP or tail * 2 >= hmask:
        return -2
    for q in range(8):
        QBB[tail, q] = SBB[1, q]
    QST[tail] = pk1
    QPAR[tail] = parent
    QMOVE[tail] = m
    HK[h] = k
    HV[h] = stamp * Q_CAP + tail
    return tail


@njit(inline="always", **HOT)
def _line_into(bfs, CERT, i, length):
    """The moves from the root to stored position i (length of them) into CERT[:length]."""
    QPAR, QMOVE = bfs[2], bfs[3]
    p = length - 1
    while QPAR[i] >= 0:
        CERT[p] = QMOVE[i]
        p -= 1
        i = QPAR[i]


@njit(**HOT)
def _bfs(bb0, st0, W, ct, stack, bfs, stamp, nodes, budget):
    """Breadth-first search of every position reachable from (bb0, st0), each stored whole (the
    hash only finds its slot: two positions with one key are still told apart). A W mate ends it
    (the line back to the root, by parent links, into CERT: returns (1, length, nodes)); so does
    a full visit without one (0, 0, nodes: unwinnable) or the budget or the store's capacity
    (-1, 0, nodes). Positions where W provably cannot mate (static_proof) are not expanded."""
    SBB, SMB, SST, MV, _SC, _NI, _KEYS, CERT, scratch, _sets, aux = stack
    QPAR = bfs[2]
    hmask = _table_mask(nodes, budget)
    _store_root(bfs, SBB, SMB, SST, bb0, st0, hmask, stamp)
    head = 0
    tail = 1
    while head < tail:
        if nodes > budget:
            return -1, 0, nodes
        _load_stored(bfs, SBB, SMB, SST, head)
        cur = head
        head += 1
        if static_proof(SBB[0], SST[0], W, aux) >= 0:
            continue
        kp = _key(SBB[0], SMB[0], SST[0])
        n = _gen(SBB[0], SMB[0], SST[0], ct, MV[0], 256)
        for i in range(n):
            m = MV[0, i]
            _copy(SBB, SMB, SST, 0, 1)
            _make(SBB[1], SMB[1], SST[1], ct, m)
            nodes += 1
            k = _key_after(kp, SMB[0], SST[0], SST[1], m)
            idx = _store_child(bfs, SBB, SST, k, hmask, stamp, tail, cur, m)
            if idx == -1:
                continue
            if idx == -2:
                return -1, 0, nodes
            tail += 1
            # W mates here?
            if SST[1, ST_STM] != W and in_check(SBB[1], 1 - W):
                if _gen(SBB[1], SMB[1], SST[1], ct, scratch, 1) == 0:
                    length = 0
                    j = idx
                    while QPAR[j] >= 0:
                        length += 1
                        j = QPAR[j]
                    if length > CERT_CAP:
                        return -1, 0, nodes
                    _line_into(bfs, CERT, idx, length)
                    return 1, length, nodes
    return 0, 0, nodes


# ---------------------------------------------------------------------------------------------
# Phase 3b: best-first search


# _estimate's weights: free flight square, distance from the edge, kings' distance beyond two, no
# check, a pawn's distance from queening, no piece; and the search's weight of the estimate
# against the plies played (the priority is _EST[6] * estimate + plies).
_EST = np.array([6, 6, 4, 12, 12, 20, 2], np.int64)


@njit(**HOT)
def _estimate(bb, W):
    """A guess of how far W's mate is (lower is nearer; used only to order a best-first search):
    L's king's free flight squares (not occupied by L, not attacked by W), its distance from the
    edge, W's king's distance from two squares of it, whether it is in check, and, when W has no
    piece but pawns, how far its leading pawn is from queening."""
    L = 1 - W
    lk = king_square(bb, L)
    wk = king_square(bb, W)
    if lk < 0 or wk < 0:
        return 1000
    wa = _attacked_in(bb, W, KING_ATTACKS[lk] | bit(lk))  # all _estimate looks at
    free = KING_ATTACKS[lk] & ~bb[BB_WHITE + L] & ~wa
    n_free = 0
    while free:
        free &= free - U1
        n_free += 1
    h = _EST[0] * n_free + _EST[1] * _edge(lk) + _EST[2] * (_cheb(wk, lk) - 2 if _cheb(wk, lk) > 2 else 0)
    if not (wa & bit(lk)):
        h += _EST[3]
    own = bb[BB_WHITE + W]
    if not (own & (bb[BB_KNIGHTS] | bb[BB_BISHOPS] | bb[BB_ROOKS] | bb[BB_QUEENS])):
        wp = own & bb[BB_PAWNS]
        if wp:
            lead = (7 - (msb(wp) >> 3)) if W == 0 else (lsb(wp) >> 3)
            h += _EST[4] * lead + _EST[5]
        else:
            h += 200
    return h


@njit(**HOT)
def _blocker_distance(bb, L, corner):
    """Moves for L's nearest piece (not the king) to stand next to `corner`: a piece by king
    distance, a pawn along its file or, past its promotion, from the promotion square."""
    near = KING_ATTACKS[corner]
    lown = bb[BB_WHITE + L] & ~bb[BB_KINGS]
    if lown & near:
        return 0
    best = 16
    x = lown
    while x:
        q = lsb(x)
        x &= x - U1
        if bb[BB_PAWNS] & bit(q):
            f = q & 7
            r = q >> 3
            promo_sq = f + (56 if L == 0 else 0)
            to_promo = (7 - r) if L == 0 else r
            dd = to_promo + _cheb(promo_sq, corner) - 1
            y = near & FILE_MASKS[f]
            while y:  # a square next to the corner on the pawn's own file, ahead of it
                t = lsb(y)
                y &= y - U1
                ahead = (t >> 3) - r if L == 0 else r - (t >> 3)
                if 0 < ahead < dd:
                    dd = ahead
        else:
            dd = _cheb(q, corner) - 1
        if dd < best:
            best = dd
    return best


@njit(**HOT)
def _corner_cost(bb, W, lk, wk, corner):
    L = 1 - W
    h = 10 * _cheb(lk, corner)
    d = _cheb(wk, corner)
    h += 4 * (d - 2 if d > 2 else 2 - d)
    h += 6 * _blocker_distance(bb, L, corner)
    own = bb[BB_WHITE + W]
    b = own & bb[BB_BISHOPS]
    if b and not (BISHOP_EMPTY[corner] & b):
        h += 4
    n = own & bb[BB_KNIGHTS]
    if n:
        best = 8
        while n:
            q = lsb(n)
            n &= n - U1
            dd = _cheb(q, corner)
            if dd < best:
                best = dd
        h += 2 * (best - 2 if best > 2 else 0)
    if lk == corner:
        wa = attacked_by(bb, W)
        free = KING_ATTACKS[lk] & ~bb[BB_WHITE + L] & ~wa
        while free:
            free &= free - U1
            h += 8
    return h


@njit(**HOT)
def _estimate_corner(bb, W):
    """_estimate for a mate in a corner, where W's lone minor piece needs L's own pieces as
    blockers: the least over the corners W can mate in (a bishop's colour) of L's king's
    distance to it, W's king's from two squares of it, L's nearest would-be blocker's (pawns
    along their file or past promotion), the bishop off the corner's diagonal, the knight far."""
    L = 1 - W
    lk = king_square(bb, L)
    wk = king_square(bb, W)
    if lk < 0 or wk < 0:
        return 1000
    corner, _ = _targets(bb, W, MODE_CORNER)
    return _corner_cost(bb, W, lk, wk, corner)


@njit(**HOT)
def _heap_push(hk, hi, size, key, idx):
    j = size
    hk[j] = key
    hi[j] = idx
    while j > 0:
        parent = (j - 1) >> 1
        if hk[parent] <= hk[j]:
            break
        hk[parent], hk[j] = hk[j], hk[parent]
        hi[parent], hi[j] = hi[j], hi[parent]
        j = parent
    return size + 1


@njit(**HOT)
def _heap_pop(hk, hi, size):
    """(index of the smallest key, new size)."""
    top = hi[0]
    size -= 1
    hk[0] = hk[size]
    hi[0] = hi[size]
    j = 0
    while True:
        a = 2 * j + 1
        if a >= size:
            break
        b = a + 1
        m = b if b < size and hk[b] < hk[a] else a
        if hk[j] <= hk[m]:
            break
        hk[m], hk[j] = hk[j], hk[m]
        hi[m], hi[j] = hi[j], hi[m]
        j = m
    return top, size


@njit(**HOT)
def _best_first(bb0, st0, W, ct, stack, bfs, heap, stamp, nodes, budget, mode):
    """Best-first search for W's helpmate from (bb0, st0): positions stored whole as in _bfs,
    the next expanded the one with the least 2 * _estimate + plies from the root. Returns
    (1, length, nodes) with the line in CERT, or (-1, 0, nodes) at the budget or the store's
    capacity (it proves nothing: the order is a guess)."""
    SBB, SMB, SST, MV, _SC, _NI, _KEYS, CERT, scratch, sets, _aux = stack
    hmask = _table_mask(nodes, budget)
    hk, hi, depth = heap
    _store_root(bfs, SBB, SMB, SST, bb0, st0, hmask, stamp)
    depth[0] = 0
    tail = 1
    h0 = _estimate_corner(bb0, W) if mode == MODE_CORNER else _estimate(bb0, W)
    size = _heap_push(hk, hi, 0, _EST[6] * h0, 0)
    while size > 0:
        if nodes > budget:
            return -1, 0, nodes
        cur, size = _heap_pop(hk, hi, size)
        _load_stored(bfs, SBB, SMB, SST, cur)
        n = _gen(SBB[0], SMB[0], SST[0], ct, MV[0], 256)
        if SST[0, ST_STM] == W:
            m = _mate_among(SBB, SMB, SST, 0, ct, W, MV[0], n, scratch, sets)
            nodes += 1
            if m:
                length = depth[cur] + 1
                if length > CERT_CAP:
                    return -1, 0, nodes
                CERT[length - 1] = m
                _line_into(bfs, CERT, cur, length - 1)
                return 1, length, nodes
        kp = _key(SBB[0], SMB[0], SST[0])
        for i in range(n):
            m = MV[0, i]
            _copy(SBB, SMB, SST, 0, 1)
            _make(SBB[1], SMB[1], SST[1], ct, m)
            nodes += 1
            if _side_insufficient(SBB[1], W):
                continue
            k = _key_after(kp, SMB[0], SST[0], SST[1], m)
            idx = _store_child(bfs, SBB, SST, k, hmask, stamp, tail, cur, m)
            if idx == -1:
                continue
            if idx == -2:
                return -1, 0, nodes
            depth[idx] = depth[cur] + 1
            h1 = _estimate_corner(SBB[1], W) if mode == MODE_CORNER else _estimate(SBB[1], W)
            size = _heap_push(hk, hi, size, _EST[6] * h1 + depth[idx], idx)
            tail += 1
    return -1, 0, nodes


# ---------------------------------------------------------------------------------------------
# One position, one side


@njit(**HOT)
def classify(bb, st, ct, W, budget, stack, tt_key, tt_val, bfs, ctr, heap):
    """(verdict, proof kind, certificate length in CERT, nodes) for intended winner W."""
    SBB, SMB, SST, _MV, _SC, _NI, _KEYS, _CERT, scratch, _sets, aux = stack
    proof = static_proof(bb, st, W, aux)
    if proof >= 0:
        return UNWINNABLE, proof, 0, 0
    _load(SBB, SMB, SST, 0, bb, st)
    if st[ST_STM] != W and _gen(SBB[0], SMB[0], SST[0], ct, scratch, 1) == 0 and in_check(bb, 1 - W):
        return WINNABLE, PROOF_MATE, 0, 0  # W has mated already: the empty line
    nodes = 0
    # Walks, one per mode (promotion and the corner only where they may help).
    has_pawns = (bb[BB_PAWNS] & bb[BB_WHITE + W]) != U0
    for mi in range(N_MODES):
        mode = _WALK_ORDER[mi]
        if mode == MODE_PROMOTE and not has_pawns:
            continue
        _load(SBB, SMB, SST, 0, bb, st)
        length, nodes = _walk(W, ct, stack, mode, 4, nodes, budget)
        if length > 0:
            return WINNABLE, PROOF_MATE, length, nodes
    own = bb[BB_WHITE + W]
    minor_only = not (own & (bb[BB_ROOKS] | bb[BB_QUEENS])) and (own & (bb[BB_KNIGHTS] | bb[BB_BISHOPS])) != U0
    # The searches, in the order of _PHASES.
    for ph in range(len(_PHASES)):
        kind, each, mode, limit = _PHASES[ph]
        if kind == 1 and mode == MODE_CORNER and not minor_only:
            continue
        lim = nodes + limit if limit > 0 else nodes + (budget - nodes) * (-limit) // 100
        if lim > budget:
            lim = budget
        if kind == 2:
            found, length, nodes = _progress_search(bb, st, W, ct, stack, tt_key, tt_val, ctr, nodes, lim, each)
        else:
            ctr[1] += 1
            found, length, nodes = _best_first(bb, st, W, ct, stack, bfs, heap, ctr[1], nodes, lim, mode)
        if found == 1:
            return WINNABLE, PROOF_MATE, length, nodes
    # The complete search.
    ctr[1] += 1
    found, length, nodes = _bfs(bb, st, W, ct, stack, bfs, ctr[1], nodes, budget)
    if found == 1:
        return WINNABLE, PROOF_MATE, length, nodes
    if found == 0:
        return UNWINNABLE, PROOF_SEARCH, 0, nodes
    return UNKNOWN, PROOF_BUDGET, 0, nodes


@njit(**JIT)
def first_insufficient(pos_off, flags, skip, out):
    """out[g] = the first position of game g (a ply) with python-chess's insufficient material and
    a legal move (the replay's flags), -1 if none or skip[g]."""
    for g in range(len(pos_off) - 1):
        out[g] = -1
        if skip[g]:
            continue
        for p in range(pos_off[g], pos_off[g + 1]):
            f = flags[p]
            if (f & FLAG_INSUFFICIENT) and (f & FLAG_HAS_MOVE):
                out[g] = p - pos_off[g]
                break


@njit(**JIT)
def dead_candidates(cand_bb, cand_st, ct_table, ct_idx, budget, out):
    """Both sides' proofs for each candidate position of the replay: out[i, c] =
    PROOF_INSUFFICIENT, PROOF_BLOCKED or PROOF_SEARCH when side c provably cannot mate there, else
    -1; a position is dead when both are proved. The static proofs first; a candidate with at
    most one pawn, rook or queen on the board and a single legal move (perhaps a forced capture
    of the last mating material) gets the complete search too, for a side without a proof,
    within `budget` positions."""
    aux = np.zeros(4, np.int64)
    have_ws = False
    stack = _stack()
    bfs = _bfs_store(1)
    ctr = np.zeros(2, np.int64)
    for i in range(len(cand_bb)):
        bb = cand_bb[i]
        blocked = frozen_analysis(bb, cand_st[i], aux)
        for c in range(2):
            if _side_insufficient(bb, c):
                out[i, c] = PROOF_INSUFFICIENT
            elif blocked and aux[c]:
                out[i, c] = PROOF_BLOCKED
            else:
                out[i, c] = -1
        heavy = bb[BB_PAWNS] | bb[BB_ROOKS] | bb[BB_QUEENS]
        if (out[i, 0] < 0 or out[i, 1] < 0) and not (heavy & (heavy - U1)):
            # only a forced move can make such a position dead: one legal move, then searched
            _load(stack[0], stack[1], stack[2], 0, bb, cand_st[i])
            if _gen(stack[0][0], stack[1][0], stack[2][0], ct_table[ct_idx[i]], stack[8], 2) != 1:
                continue
            if not have_ws:
                bfs = _bfs_store(Q_CAP)
                have_ws = True
            for c in range(2):
                if out[i, c] < 0:
                    ctr[1] += 1
                    found, _length, _nodes = _bfs(bb, cand_st[i], c, ct_table[ct_idx[i]], stack, bfs, ctr[1], 0, budget)
                    if found == 0:
                        out[i, c] = PROOF_SEARCH
                    else:
                        break  # winnable or too big: not dead


@njit(**JIT)
def _stack():
    """The search's workspace: the line's positions, moves and scores, keys, the certificate."""
    return (
        np.zeros((MAXPLY + 2, 8), np.uint64),
        np.zeros((MAXPLY + 2, 64), np.int8),
        np.zeros((MAXPLY + 2, 4), np.int64),
        np.zeros((MAXPLY + 2, 256), np.int32),
        np.zeros((MAXPLY + 2, 256), np.int32),
        np.zeros((MAXPLY + 2, 4), np.int64),
        np.zeros(MAXPLY + 2, np.uint64),
        np.zeros(CERT_CAP + MAXPLY, np.int32),
        np.zeros(256, np.int32),
        np.zeros(8, np.uint64),
        np.zeros(4, np.int64),
    )


@njit(**JIT)
def _bfs_store(cap):
    """The complete search's store of positions (cap of them) and its hash table."""
    return (
        np.empty((cap, 8), np.uint64),
        np.empty(cap, np.int64),
        np.empty(cap, np.int32),
        np.empty(cap, np.int32),
        np.empty(H_SIZE if cap > 1 else 1, np.uint64),
        np.zeros(H_SIZE if cap > 1 else 1, np.int64),
    )


@njit(**JIT)
def classify_batch(pos_bb, pos_st, ct_table, ct_idx, side, budget, verdict, proof, nodes, cert_off, cert_moves):
    """Classify position i (pos_bb[i], pos_st[i] as the replay's bb/st, castling table
    ct_table[ct_idx[i]]) for intended winner side[i]: verdict[i] (WINNABLE, UNWINNABLE, UNKNOWN),
    proof[i] (PROOF_*), nodes[i] (work done), and the certificate of a winnable one as moves
    cert_moves[cert_off[i]:cert_off[i + 1]] (encoded as _board's moves). Returns the number of
    certificate moves; if that exceeds len(cert_moves), the moves past it were not written (call
    again with room)."""
    n = len(side)
    stack = _stack()
    CERT = stack[7]
    tt_key = np.zeros(TT_SIZE, np.uint64)
    tt_val = np.zeros(TT_SIZE, np.int64)
    ctr = np.zeros(2, np.int64)
    bfs = _bfs_store(Q_CAP)
    heap = (np.empty(Q_CAP, np.int64), np.empty(Q_CAP, np.int32), np.empty(Q_CAP, np.int32))
    cap = len(cert_moves)
    total = 0
    for i in range(n):
        cert_off[i] = total
        v, p, length, nn = classify(
            pos_bb[i], pos_st[i], ct_table[ct_idx[i]], side[i], budget, stack, tt_key, tt_val, bfs, ctr, heap
        )
        verdict[i] = v
        proof[i] = p
        nodes[i] = nn
        for j in range(length):
            if total + j < cap:
                cert_moves[total + j] = CERT[j]
        total += length
    cert_off[n] = total
    return total


@njit(**HOT)
def _uci(m, ct, out, k):
    """Write move m as UCI at out[k:] (castling as the king's two-step in standard chess, king
    takes rook in Chess960, as python-chess writes them); return the new end."""
    frm = m & 63
    to = (m >> 6) & 63
    promo = (m >> 12) & 7
    if (m >> 15) & 3 == 2 and not ct[CT_CHESS960]:
        to = (frm & 56) + (6 if to > frm else 2)
    out[k] = 97 + (frm & 7)
    out[k + 1] = 49 + (frm >> 3)
    out[k + 2] = 97 + (to & 7)
    out[k + 3] = 49 + (to >> 3)
    k += 4
    if promo:
        out[k] = _PROMO_LETTER[promo]
        k += 1
    return k


@njit(**JIT)
def certificate_texts(games, proof, cert_off, cert_moves, ct_table, ct_idx, out_off, out_valid, out_data):
    """The text of each answer i, for game games[i] of a block of len(out_off) - 1 games, as an
    Arrow string column's offsets (out_off, int32) and bytes (out_data): a certificate as UCI
    moves separated by spaces, else PROOF_TEXT[proof[i]]; games without an answer are null
    (out_valid 0). Returns the bytes needed; if more than len(out_data), call again with room."""
    n = len(out_off) - 1
    for g in range(n):
        out_valid[g] = 0
    at = np.full(n, -1, np.int64)
    for i in range(len(games)):
        at[games[i]] = i
    cap = len(out_data)
    buf = np.empty(8, np.uint8)
    k = 0
    for g in range(n):
        out_off[g] = k
        i = at[g]
        if i < 0:
            continue
        out_valid[g] = 1
        p = proof[i]
        if p != PROOF_MATE:
            for j in range(_TEXT_LEN[p]):
                if k < cap:
                    out_data[k] = _TEXT_BYTES[p, j]
                k += 1
            continue
        ct = ct_table[ct_idx[i]]
        for j in range(cert_off[i], cert_off[i + 1]):
            e = _uci(cert_moves[j], ct, buf, 0)
            if j > cert_off[i]:
                if k < cap:
                    out_data[k] = 32
                k += 1
            for q in range(e):
                if k < cap:
                    out_data[k] = buf[q]
                k += 1
    out_off[n] = k
    return k


analyzer._numba_env.plain_calls(globals())
