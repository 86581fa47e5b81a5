"""Replay a batch of Russian-draughts games straight from PDN movetext bytes (numba kernel).

The kernel reads each game's movetext from the block bytes, skipping move numbers, comments
`{..}`, variations `(..)`, `;` line comments, `%` escape lines and NAGs `$n`, and stops at the
game-termination token. Moves: algebraic (`c3-d4`, `d4:f6`, `c3:e5:g3`, also `x`) or numeric
(`22-18`, `22x15`, `22x15x8`). A move matches a legal move with the same start and end square
whose landing path contains every intermediate square given, in order; moves that lead to the
same position count once. The separator is not checked (sources write captures with `-` too).

Per ply p (0 = the start position) it records the position (4 bitboards + side to move), the
Zobrist key, how many times this position has occurred so far (same side to move), the largest
occurrence count some legal move would produce ("intended move"), the number of legal moves,
the plies since the last man move or capture, the plies since the material last changed
(capture or promotion) and the material signature (counts of white men / kings, black men /
kings packed 4 bits each). Kernels never raise: a status per game, facts up to the last legal ply.
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numba
import numpy as np

from analyzer.codes import (
    RESULT_BLACK as RES_BLACK,
    RESULT_DRAW as RES_DRAW,
    RESULT_UNKNOWN as RES_UNKNOWN,
    RESULT_WHITE as RES_WHITE,
    S_AMBIGUOUS,
    S_BAD_TOKEN,
    S_ILLEGAL,
    S_INTERNAL,
    S_NO_MOVES,
    S_NULL_MOVE,
    S_OK,
    S_TRUNCATED,
)
from analyzer.kinds._reptable import LONG_WINDOW, count_tabled, lookup, new_table, tabled
from analyzer.kinds.russian_draughts._board import (
    ZOBRIST,
    ZOBRIST_BLACK,
    apply_move,
    generate_moves,
    move_buffers,
    popcount,
    zobrist_key,
)

RES_NONE = -1  # no termination token (the result codes are analyzer.codes.RESULT_*)
REP_MAX = 32767  # p_rep and p_intended are int16: a larger count is stored as this, not wrapped

_MAX_TOKSQ = 16


@numba.njit(cache=True, nogil=True)
def _is_space(c):
    return c <= 32


@numba.njit(cache=True, nogil=True)
def _is_delim(c):
    # token ends at whitespace or at the start of a comment / variation
    return c <= 32 or c == 123 or c == 40 or c == 41 or c == 59  # { ( ) ;


@numba.njit(cache=True, nogil=True)
def _result_code(buf, s, e):
    # 1-0 0-1 1/2-1/2 2-0 1-1 0-2 *
    n = e - s
    if n == 1 and buf[s] == 42:
        return RES_UNKNOWN
    if n == 3 and buf[s + 1] == 45:
        a = buf[s]
        b = buf[s + 2]
        if a == 49 and b == 48:
            return RES_WHITE
        if a == 48 and b == 49:
            return RES_BLACK
        if a == 50 and b == 48:
            return RES_WHITE
        if a == 48 and b == 50:
            return RES_BLACK
        if a == 49 and b == 49:
            return RES_DRAW
    if n == 7:
        # 1/2-1/2
        if (
            buf[s] == 49
            and buf[s + 1] == 47
            and buf[s + 2] == 50
            and buf[s + 3] == 45
            and buf[s + 4] == 49
            and buf[s + 5] == 47
            and buf[s + 6] == 50
        ):
            return RES_DRAW
    return RES_NONE


@numba.njit(cache=True, nogil=True)
def _parse_move(buf, s, e, sqs):
    """Squares of a move token into sqs; returns their number, or -1 if not a move."""
    n = 0
    i = s
    while i < e:
        c = buf[i]
        if 97 <= c <= 104:  # a-h
            if i + 1 >= e:
                return -1
            r = buf[i + 1]
            if not (49 <= r <= 56):
                return -1
            f = c - 97
            rank = r - 48
            if (f + rank - 1) % 2 != 0:
                return -1
            if n >= _MAX_TOKSQ:
                return -1
            sqs[n] = (8 - rank) * 4 + f // 2
            n += 1
            i += 2
        elif 48 <= c <= 57:
            v = 0
            k = 0
            while i < e and 48 <= buf[i] <= 57 and k < 3:
                v = v * 10 + (buf[i] - 48)
                i += 1
                k += 1
            if v < 1 or v > 32 or (i < e and 48 <= buf[i] <= 57):
                return -1
            if n >= _MAX_TOKSQ:
                return -1
            sqs[n] = v - 1
            n += 1
        else:
            return -1
        if i < e:
            c = buf[i]
            if c == 45 or c == 120 or c == 88 or c == 58:  # - x X :
                i += 1
                if i >= e:
                    return -1
            else:
                # trailing annotation (! ? + #) ends the move
                while i < e and (buf[i] == 33 or buf[i] == 63 or buf[i] == 43 or buf[i] == 35):
                    i += 1
                if i < e:
                    return -1
    if n < 2:
        return -1
    return n


@numba.njit(cache=True, nogil=True)
def _path_matches(path, plen, to, sqs, nsq):
    # intermediate squares sqs[1..nsq-2] must appear in order among path[0..plen-2]
    if nsq <= 2:
        return True
    j = 1
    for k in range(plen - 1):
        if j < nsq - 1 and path[k] == sqs[j]:
            j += 1
    return j == nsq - 1


@numba.njit(cache=True, nogil=True)
def _comment_end(buf, pos, end):
    """Index of the first '}' at or after pos (the end of a comment), or `end` if none."""
    while pos < end and buf[pos] != 125:
        pos += 1
    return pos


@numba.njit(cache=True, nogil=True)
def _variation_end(buf, pos, end):
    """Index of the ')' that closes the variation opened at pos (comments inside skipped,
    variations nested), or a position >= `end` if the text ends first."""
    depth = 0
    while pos < end:
        c = buf[pos]
        if c == 123:
            pos = _comment_end(buf, pos, end)
        elif c == 40:
            depth += 1
        elif c == 41:
            depth -= 1
            if depth == 0:
                break
        pos += 1
    return pos


@numba.njit(cache=True, nogil=True)
def _count(keys, a, b, k):
    """Occurrences of key k among keys[a..b]."""
    n = 0
    for q in range(a, b + 1):
        if keys[q] == k:
            n += 1
    return n


@numba.njit(cache=True, nogil=True)
def replay_batch(
    buf,
    mt_start,
    mt_end,
    init_pos,
    init_stm,
    active,
    ply_off,
    p_wm,
    p_wk,
    p_bm,
    p_bk,
    p_stm,
    p_key,
    p_rep,
    p_intended,
    p_nlegal,
    p_irrev,
    p_matclock,
    p_material,
    g_status,
    g_plies,
    g_err_s,
    g_err_e,
    g_result,
    g_moves_seen,
):
    """Replay games i with active[i]; facts of game i go to slots ply_off[i]..ply_off[i+1]-1."""
    mv_from, mv_to, mv_capt, mv_promo, mv_path, mv_plen = move_buffers()
    sqs = np.empty(_MAX_TOKSQ, np.int64)
    # A window (the positions since the last man move or capture) longer than LONG_WINDOW is
    # counted in a hash table (analyzer.kinds._reptable), not walked per position and per move.
    longest = 0
    for g in range(len(mt_start)):
        if active[g]:
            longest = max(longest, ply_off[g + 1] - ply_off[g])
    tab = new_table(longest, longest, False)
    for g in range(len(mt_start)):
        g_status[g] = S_OK
        g_plies[g] = 0
        g_err_s[g] = -1
        g_err_e[g] = -1
        g_result[g] = RES_NONE
        g_moves_seen[g] = 0
        if not active[g]:
            continue
        base = ply_off[g]
        cap = ply_off[g + 1] - base
        wm = init_pos[g, 0]
        wk = init_pos[g, 1]
        bm = init_pos[g, 2]
        bk = init_pos[g, 3]
        stm = init_stm[g]
        key = zobrist_key(wm, wk, bm, bk, stm)
        pos = mt_start[g]
        end = mt_end[g]
        ply = 0
        last_irrev = 0  # ply of the last position reached by a man move or capture
        irrev = 0
        matclock = 0
        while True:
            slot = base + ply
            p_wm[slot] = wm
            p_wk[slot] = wk
            p_bm[slot] = bm
            p_bk[slot] = bk
            p_stm[slot] = stm
            p_key[slot] = key
            p_irrev[slot] = irrev
            p_matclock[slot] = matclock
            # material signature: white men | white kings << 4 | black men << 8 | black kings << 12
            p_material[slot] = popcount(wm) | (popcount(wk) << 4) | (popcount(bm) << 8) | (popcount(bk) << 12)
            ws = base + last_irrev
            cnt = -1
            if slot - ws >= LONG_WINDOW:
                cnt = count_tabled(tab, p_key, slot, ws, ws, key, False)
            if cnt < 0:
                cnt = _count(p_key, ws, slot, key)
            in_table = tabled(tab, ws)
            p_rep[slot] = min(cnt, REP_MAX)
            n = generate_moves(wm, wk, bm, bk, stm, mv_from, mv_to, mv_capt, mv_promo, mv_path, mv_plen, True)
            p_nlegal[slot] = n
            # intended move: the largest occurrence count a legal (king, quiet) move would give
            best = 0
            colour = stm
            for i in range(n):
                if mv_capt[i] != 0:
                    break  # all moves are captures
                fb = np.uint64(1) << np.uint64(mv_from[i])
                own_k = wk if stm == 0 else bk
                if not (own_k & fb):
                    continue
                nk = key ^ ZOBRIST[colour, 1, mv_from[i]] ^ ZOBRIST[colour, 1, mv_to[i]] ^ ZOBRIST_BLACK
                c2 = 1 + (lookup(tab, nk, 0)[0] if in_table else _count(p_key, ws, slot, nk))
                if c2 > best:
                    best = c2
            p_intended[slot] = min(best, REP_MAX)
            # ---- next move token
            got_move = False
            nsq = 0
            ts = 0
            te = 0
            while pos < end:
                c = buf[pos]
                if _is_space(c):
                    pos += 1
                    continue
                if c == 123 or c == 40:  # { comment } or ( variation, nested )
                    pos = _comment_end(buf, pos + 1, end) if c == 123 else _variation_end(buf, pos, end)
                    if pos >= end:
                        g_status[g] = S_TRUNCATED
                        break
                    pos += 1
                    continue
                if c == 59 or c == 37:  # ; comment or % escape: to end of line
                    while pos < end and buf[pos] != 10:
                        pos += 1
                    continue
                if c == 41:  # stray ')'
                    pos += 1
                    continue
                ts = pos
                while pos < end and not _is_delim(buf[pos]):
                    pos += 1
                te = pos
                if c == 36:  # $NAG
                    continue
                rc = _result_code(buf, ts, te)
                if rc != RES_NONE:
                    g_result[g] = rc
                    pos = end
                    break
                # move number "12." / "12..." possibly glued to the move ("12.c3-d4")
                k = ts
                while k < te and 48 <= buf[k] <= 57:
                    k += 1
                if k < te and buf[k] == 46:
                    while k < te and buf[k] == 46:
                        k += 1
                    if k >= te:
                        continue
                    ts = k
                elif k == ts and buf[k] == 46:
                    # "..." alone
                    while k < te and buf[k] == 46:
                        k += 1
                    if k >= te:
                        continue
                    ts = k
                # placeholder moves "-" / "--"
                allsep = True
                for k2 in range(ts, te):
                    if buf[k2] != 45:
                        allsep = False
                        break
                if allsep:
                    g_status[g] = S_NULL_MOVE
                    break
                nsq = _parse_move(buf, ts, te, sqs)
                if nsq < 0:
                    g_status[g] = S_BAD_TOKEN
                    break
                got_move = True
                break
            if g_status[g] != S_OK:
                if g_status[g] != S_TRUNCATED:
                    g_err_s[g] = ts
                    g_err_e[g] = te
                break
            if not got_move:
                if g_result[g] == RES_NONE:
                    g_status[g] = S_TRUNCATED
                break
            g_moves_seen[g] += 1
            g_err_s[g] = ts
            g_err_e[g] = te
            # ---- match the move
            frm = sqs[0]
            to = sqs[nsq - 1]
            found = -1
            nfound = 0
            for i in range(n):
                if mv_from[i] != frm or mv_to[i] != to:
                    continue
                if not _path_matches(mv_path[i], mv_plen[i], to, sqs, nsq):
                    continue
                if found >= 0 and mv_capt[i] == mv_capt[found] and mv_promo[i] == mv_promo[found]:
                    continue  # same position after the move
                if found < 0:
                    found = i
                nfound += 1
            if nfound == 0:
                g_status[g] = S_ILLEGAL
                break
            if nfound > 1:
                g_status[g] = S_AMBIGUOUS
                break
            if ply + 1 >= cap:
                g_status[g] = S_INTERNAL  # a bug: the capacity (bytes / 2) is always enough
                break
            fb = np.uint64(1) << np.uint64(frm)
            was_man = ((wm if stm == 0 else bm) & fb) != 0
            capt = mv_capt[found]
            promo = mv_promo[found]
            wm, wk, bm, bk, stm = apply_move(wm, wk, bm, bk, stm, frm, to, capt, promo)
            key = zobrist_key(wm, wk, bm, bk, stm)
            ply += 1
            if was_man or capt != 0:
                irrev = 0
                last_irrev = ply
            else:
                irrev += 1
            if capt != 0 or promo:
                matclock = 0
            else:
                matclock += 1
        g_plies[g] = ply
        if g_status[g] == S_OK:
            g_err_s[g] = -1
            g_err_e[g] = -1
            if g_moves_seen[g] == 0:
                g_status[g] = S_NO_MOVES


analyzer._numba_env.plain_calls(globals())
