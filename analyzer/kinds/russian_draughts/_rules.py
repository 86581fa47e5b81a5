"""The Russian draughts rule kernel: per-ply facts (_replay) + an edition's parameters
(editions.DraughtsEdition.params) -> the verdict matrix and events (analyzer.codes), as the
chess kernel writes them; analyzer.measures then classifies the chances.

"A move" counts as the edition says (editions.py): the stronger side's own moves, or moves by
each player; the balance rule always counts moves by each player (2N plies).
"""

from __future__ import annotations

from typing import Any

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numba
import numpy as np

from analyzer.codes import (
    DR_AGREEMENT,
    DR_BALANCE,
    DR_KING_MOVES,
    DR_KINGS_VS_KING,
    DR_MAIN_DIAGONAL,
    DR_SMALL_ENDING,
    DR_THREEFOLD,
    F_FIFTH,
    F_FINAL_HMC,
    F_FINAL_REPS,
    F_THIRD,
    K_AUTO,
    K_INTENDED,
    K_NOW,
    N_VERDICT,
    R_BALANCE,
    R_KING_MOVES,
    R_KINGS_VS_KING,
    R_MAIN_DIAGONAL,
    R_SMALL_ENDING,
    R_THREEFOLD,
    RESULT_DRAW,
    V_BALANCE,
    V_DRAW_REASON,
    V_END_PLY,
    V_END_RULE,
    V_KINGS_VS_KING,
    V_MAIN_DIAGONAL,
    V_SMALL_ENDING,
    V_THREEFOLD,
    V_THREEFOLD_CLAIM,
)
from analyzer.kinds.russian_draughts._board import MAIN_DIAGONAL, popcount

# Parameter vector indices (editions.DraughtsEdition.params).
(
    P_MODE,
    P_TF_INTENDED,
    P_BAL_AUTO,
    P_BAL_MOVES,
    P_BAL_KINGS,
    P_BAL_SMALL,
    P_BAL_LARGE,
    P_KVK_MOVES,
    P_DIAG_MOVES,
    P_DIAG_FMJD,
    P_SMALL_MOVES,
    P_SMALL_FMJD,
    P_KING_MOVES,
) = range(13)
MODE_OWN = 0  # "its N-th move": the stronger side's moves

JIT: dict[str, Any] = {"cache": True, "nogil": True}


@numba.njit(**JIT)
def _threshold(p0, stm0, stronger, n_moves, mode):
    """The ply of the stronger side's N-th move (mode own) or N moves by each player after p0."""
    if mode == MODE_OWN:
        if stm0 == stronger:
            return p0 + 2 * n_moves - 1
        return p0 + 2 * n_moves
    return p0 + 2 * n_moves


@numba.njit(**JIT)
def _config(wm, wk, bm, bk, diag_fmjd, small_fmjd):
    """Configurations at one position: (kvk side, diag class side, diag on, small side) (-1 = none)."""
    nwm = popcount(wm)
    nwk = popcount(wk)
    nbm = popcount(bm)
    nbk = popcount(bk)
    kvk = -1
    diag = -1
    diag_on = False
    small = -1
    for strong in range(2):
        if strong == 0:
            sm, sk, wmn, wkn = nwm, nwk, nbm, nbk
            weak_k = bk
        else:
            sm, sk, wmn, wkn = nbm, nbk, nwm, nwk
            weak_k = wk
        lone_king = wmn == 0 and wkn == 1
        if lone_king and sm == 0 and sk >= 3:
            kvk = strong
        if lone_king:
            if diag_fmjd:
                if (sk == 3 and sm == 0) or (sk == 2 and sm == 1) or (sk == 1 and sm == 2):
                    diag = strong
                    # the lone king is the only piece on the main diagonal
                    diag_on = (weak_k & MAIN_DIAGONAL) != 0 and popcount((wm | wk | bm | bk) & MAIN_DIAGONAL) == 1
            else:
                if sk == 3 and sm == 0 and (weak_k & MAIN_DIAGONAL) != 0:
                    diag = strong
                    diag_on = True
        if small_fmjd:
            if lone_king and ((sk == 2 and sm == 0) or (sk == 1 and sm == 1) or (sk == 1 and sm == 0)):
                if small < 0:
                    small = strong
        else:
            if wmn + wkn == 1 and ((sk == 2 and sm == 0) or (sk == 1 and sm == 1)):
                small = strong
    return kvk, diag, diag_on, small


@numba.njit(**JIT)
def _emit(ne, g, p, rule, kind, side, rep, counter, ev):
    """Write one event row at index ne if it fits; return the next index. `ev`: the event
    arrays (game, ply, rule, kind, side, repetitions, counter, clock), passed as one."""
    ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_reps, ev_hmc, ev_clock = ev
    if ne < len(ev_game):
        ev_game[ne] = g
        ev_ply[ne] = p
        ev_rule[ne] = rule
        ev_kind[ne] = kind
        ev_side[ne] = side
        ev_reps[ne] = rep
        ev_hmc[ne] = counter
        ev_clock[ne] = np.nan
    return ne + 1


@numba.njit(**JIT)
def _run_start(stronger, p0, side, p):
    """(first ply, stronger side) of the current run of a king ending at ply p, `stronger`
    being its stronger side there (-1: not that ending): a run starts anew when the ending
    appears or changes sides, and is (-1, -1) while it is absent."""
    if stronger < 0:
        return -1, -1
    if p0 < 0 or side != stronger:
        return p, stronger
    return p0, side


@numba.njit(**JIT)
def _end_by(ne, out, col, rule, g, p, p0, stm, p_nlegal, s, ev):
    """A king ending's automatic end at ply p, where its count is reached: if the side to move
    has a move and the ending has not ended the game before, its verdict column and its event
    (counter: plies since the run began). Returns ne. The callers test the count first, so the
    call and the p_nlegal read happen only there, as before this helper."""
    if p_nlegal[s] > 0 and out[g, col] < 0:
        out[g, col] = p
        ne = _emit(ne, g, p, rule, K_AUTO, stm, -1, p - p0, ev)
    return ne


_DR_OF_RULE = np.array(
    [DR_THREEFOLD, -1, -1, -1, -1, -1, DR_BALANCE, DR_KINGS_VS_KING, DR_MAIN_DIAGONAL, DR_SMALL_ENDING, DR_KING_MOVES],
    np.int64,
)  # indexed by codes.R_*


@numba.njit(**JIT)
def apply_rules(
    params,
    g_off,
    g_plies,
    g_valid,
    result_code,
    p_wm,
    p_wk,
    p_bm,
    p_bk,
    p_stm,
    p_rep,
    p_intended,
    p_nlegal,
    p_irrev,
    p_matclock,
    out,
    ev_game,
    ev_ply,
    ev_rule,
    ev_kind,
    ev_side,
    ev_reps,
    ev_hmc,
    ev_clock,
):
    """Fill this kind's columns of `out` (n_games x codes.N_VERDICT; the others stay -1) and the
    event arrays (game and ply order); return the number of events (as the chess kernel: if the
    arrays are too small, the caller calls again with room)."""
    mode = params[P_MODE]
    tf_intended = params[P_TF_INTENDED] != 0
    bal_auto = params[P_BAL_AUTO] != 0
    bal_moves = params[P_BAL_MOVES]
    bal_kings = params[P_BAL_KINGS] != 0
    bal_small = params[P_BAL_SMALL]
    bal_large = params[P_BAL_LARGE]
    kvk_moves = params[P_KVK_MOVES]
    diag_moves = params[P_DIAG_MOVES]
    diag_fmjd = params[P_DIAG_FMJD] != 0
    small_moves = params[P_SMALL_MOVES]
    small_fmjd = params[P_SMALL_FMJD] != 0
    kingmoves = params[P_KING_MOVES]
    ev = (ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_reps, ev_hmc, ev_clock)
    ne = 0
    for g in range(len(g_plies)):
        for c in range(N_VERDICT):
            out[g, c] = -1
        if not g_valid[g]:
            continue
        base = g_off[g]
        P = g_plies[g]
        kvk_p0 = -1
        kvk_side = -1
        diag_p0 = -1
        diag_side = -1
        diag_count = 0
        small_p0 = -1
        small_side = -1
        final_tf = False
        final_bal = False
        first_km = -1  # first ply of the king-moves rule (fmjd 7.2.5)
        for p in range(P + 1):
            s = base + p
            stm = p_stm[s]
            # ---------------- threefold (claims)
            tf_now = p_rep[s] >= 3
            tf_int = (not tf_now) and tf_intended and p_intended[s] >= 3
            if tf_now and out[g, V_THREEFOLD] < 0:
                out[g, V_THREEFOLD] = p
            if (tf_now or tf_int) and out[g, V_THREEFOLD_CLAIM] < 0:
                out[g, V_THREEFOLD_CLAIM] = p
            if tf_now and p_nlegal[s] > 0:
                ne = _emit(ne, g, p, R_THREEFOLD, K_NOW, stm, p_rep[s], p_irrev[s], ev)
            elif tf_int:
                ne = _emit(ne, g, p, R_THREEFOLD, K_INTENDED, stm, p_intended[s], p_irrev[s], ev)
            final_tf = tf_now or tf_int
            # ---------------- balance of forces unchanged
            limit = -1
            if bal_kings:
                tot = popcount(p_wm[s]) + popcount(p_wk[s]) + popcount(p_bm[s]) + popcount(p_bk[s])
                if p_wk[s] != 0 and p_bk[s] != 0:
                    if 4 <= tot <= 5:
                        limit = 2 * bal_small
                    elif 6 <= tot <= 7:
                        limit = 2 * bal_large
            else:
                limit = 2 * bal_moves
            bal = limit > 0 and p_matclock[s] >= limit
            final_bal = bal and not bal_auto  # a claim of the balance rule possible here
            if bal:
                first = out[g, V_BALANCE] < 0
                if first:
                    out[g, V_BALANCE] = p
                if not bal_auto or first:
                    ne = _emit(ne, g, p, R_BALANCE, K_AUTO if bal_auto else K_NOW, stm, -1, p_matclock[s], ev)
            # ---------------- king moves only (fmjd 7.2.5)
            if kingmoves > 0 and p_irrev[s] >= 2 * kingmoves and first_km < 0:
                first_km = p
                ne = _emit(ne, g, p, R_KING_MOVES, K_AUTO, stm, -1, p_irrev[s], ev)
            # ---------------- king endings (automatic)
            kvk, diag, diag_on, small = _config(p_wm[s], p_wk[s], p_bm[s], p_bk[s], diag_fmjd, small_fmjd)
            kvk_p0, kvk_side = _run_start(kvk, kvk_p0, kvk_side, p)
            if kvk_p0 >= 0 and p == _threshold(kvk_p0, p_stm[base + kvk_p0], kvk_side, kvk_moves, mode):
                ne = _end_by(ne, out, V_KINGS_VS_KING, R_KINGS_VS_KING, g, p, kvk_p0, stm, p_nlegal, s, ev)
            run_p0, diag_side = _run_start(diag if diag_fmjd or diag_on else -1, diag_p0, diag_side, p)
            if run_p0 != diag_p0:  # a new run, or none
                diag_p0 = run_p0
                diag_count = 0
            if diag_p0 >= 0:
                if diag_fmjd:
                    if diag_on:
                        diag_count += 1
                    fire = diag_count >= 2 * diag_moves
                else:
                    fire = p == _threshold(diag_p0, p_stm[base + diag_p0], diag_side, diag_moves, mode)
                if fire:
                    ne = _end_by(ne, out, V_MAIN_DIAGONAL, R_MAIN_DIAGONAL, g, p, diag_p0, stm, p_nlegal, s, ev)
            small_p0, small_side = _run_start(small, small_p0, small_side, p)
            if small_p0 >= 0 and p == _threshold(small_p0, p_stm[base + small_p0], small_side, small_moves, mode):
                ne = _end_by(ne, out, V_SMALL_ENDING, R_SMALL_ENDING, g, p, small_p0, stm, p_nlegal, s, ev)
        # First automatic end: the earliest automatic rule (on a tie, the first in this order).
        for r in (R_BALANCE, R_KINGS_VS_KING, R_MAIN_DIAGONAL, R_SMALL_ENDING, R_KING_MOVES):
            if r == R_BALANCE:
                fp = out[g, V_BALANCE] if bal_auto else -1
            elif r == R_KINGS_VS_KING:
                fp = out[g, V_KINGS_VS_KING]
            elif r == R_MAIN_DIAGONAL:
                fp = out[g, V_MAIN_DIAGONAL]
            elif r == R_SMALL_ENDING:
                fp = out[g, V_SMALL_ENDING]
            else:
                fp = first_km
            if fp >= 0 and (out[g, V_END_PLY] < 0 or fp < out[g, V_END_PLY]):
                out[g, V_END_PLY] = fp
                out[g, V_END_RULE] = r
        # Why a drawn game was drawn: an automatic rule at its last position, else a claim
        # possible there, else agreement.
        if result_code[g] == RESULT_DRAW:
            if out[g, V_END_PLY] == P:
                out[g, V_DRAW_REASON] = _DR_OF_RULE[out[g, V_END_RULE]]
            elif final_tf:
                out[g, V_DRAW_REASON] = DR_THREEFOLD
            elif final_bal:
                out[g, V_DRAW_REASON] = DR_BALANCE
            else:
                out[g, V_DRAW_REASON] = DR_AGREEMENT
    return ne


@numba.njit(**JIT)
def game_facts(g_off, g_plies, g_valid, p_rep, p_irrev, out):
    """Edition-independent facts per game (codes.GAME_FACT_COLUMNS): first 3rd and 5th
    occurrence of a position, the final position's occurrences and plies since the last man
    move or capture. The chess-only columns (halfmove clock 100/150, mate, stalemate,
    insufficient material) stay null."""
    for g in range(len(g_plies)):
        for c in range(out.shape[1]):
            out[g, c] = -1
        if not g_valid[g]:
            continue
        base = g_off[g]
        P = g_plies[g]
        for p in range(P + 1):
            if p_rep[base + p] >= 3 and out[g, F_THIRD] < 0:
                out[g, F_THIRD] = p
            if p_rep[base + p] >= 5 and out[g, F_FIFTH] < 0:
                out[g, F_FIFTH] = p
        out[g, F_FINAL_REPS] = p_rep[base + P]
        out[g, F_FINAL_HMC] = p_irrev[base + P]


analyzer._numba_env.plain_calls(globals())
