"""Chess draw-rule kernel: per-position facts + an edition's parameters -> game columns and events.

Pure function of the replay's facts (analyzer.chess._replay); one call per edition.
Semantics for fide_2018 follow python-chess exactly (the oracle in tests/reference.py):
  threefold now      occurrence count >= 3 since the last irreversible move (is_repetition(3))
  threefold claim    that, or a legal move reaches a position seen twice (can_claim_threefold_repetition)
  fifty now          halfmove clock >= 100 and a legal move exists (is_fifty_moves)
  fifty claim        that, or clock >= 99 and a legal non-zeroing move after which a legal move exists
  fivefold           occurrence count >= 5 (is_fivefold_repetition)
  seventyfive        clock >= 150 and a legal move exists (is_seventyfive_moves: mate takes precedence)
A claim available at ply p is missed when the game went on (p < plies).
"""
from __future__ import annotations

import analyzer._numba_env  # noqa: F401

import numpy as np
from numba import njit

from analyzer.chess._replay import (
    FLAG_FIFTY_INTENDED, FLAG_HAS_MOVE, FLAG_INSUFFICIENT, FLAG_OFFER,
    FLAG_STALEMATE, FLAG_WINDOW97, FLAG_WINDOW_START, repetition_count,
)

JIT = dict(cache=True, nogil=True)
HOT = dict(cache=True, nogil=True, _nrt=False)  # helpers that do not allocate (see _board.HOT)

# Parameter vector indices (editions.ChessEdition.params).
P_CLAIM_REPS = 0
P_INTENDED = 1
P_CLAIM_PLIES = 2
P_AUTO_REPS = 3
P_REP_MODE = 4
P_AUTO_PLIES = 5
P_MATE_PRECEDENCE = 6
P_FIFTY_AUTO = 7
P_INSUFFICIENT_AUTO = 8
P_IDENTITY = 9

# Codes of the categorical outputs (decoded in analyzer.chess.analyze).
RULES = ("threefold", "fifty", "fivefold", "seventyfive", "offer", "insufficient_material")
R_THREEFOLD, R_FIFTY, R_FIVEFOLD, R_SEVENTYFIVE, R_OFFER, R_INSUFFICIENT = range(6)
KINDS = ("claim_now", "claim_intended", "automatic", "offer")
K_NOW, K_INTENDED, K_AUTO, K_OFFER = range(4)
DRAW_REASONS = ("timeout_vs_insufficient_material", "stalemate", "insufficient_material",
                "fivefold", "seventyfive", "threefold", "fifty", "agreement")
RESULT_WHITE, RESULT_BLACK, RESULT_DRAW, RESULT_UNKNOWN = range(4)
SIDE_RESULT = ("win", "draw", "loss")

# Per-game output columns (int32, -1 = null), in this order.
G_THREEFOLD, G_THREEFOLD_CLAIM, G_FIFTY, G_FIFTY_CLAIM, G_FIVEFOLD, G_SEVENTYFIVE, \
    G_MISSED, G_MISSED_RULE, G_MISSED_SIDE, G_MISSED_RESULT, G_FINAL_REPS, G_DRAW_REASON, \
    G_END_PLY, G_END_RULE = range(14)
N_GAME_COLS = 14


@njit(**HOT)
def _consecutive(keys, p, g0, n):
    """Same key at p, p-4, ..., p-4(n-1), all inside the game."""
    if p - 4 * (n - 1) < g0:
        return False
    k = keys[p]
    for j in range(1, n):
        if keys[p - 4 * j] != k:
            return False
    return True


@njit(**JIT)
def apply_rules(pos_off, stm0, result_code, time_forfeit, auto_rep_on, params,
                key, hmc, flags, rep_next, rep_next97, clock,
                out, missed_clock, ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_reps, ev_hmc,
                ev_clock, ev_missed):
    """Fill `out` (n_games x N_GAME_COLS) and the event arrays; return the number of events.

    If the event arrays are too small, events past their capacity are counted but not written:
    the caller compares the return value with the capacity and calls again with room.
    """
    n_games = len(stm0)
    cap = len(ev_game)
    claim_reps = params[P_CLAIM_REPS]
    intended = params[P_INTENDED] != 0
    claim_plies = params[P_CLAIM_PLIES]
    auto_reps = params[P_AUTO_REPS]
    rep_mode = params[P_REP_MODE]
    auto_plies = params[P_AUTO_PLIES]
    mate_first = params[P_MATE_PRECEDENCE] != 0
    fifty_auto = params[P_FIFTY_AUTO] != 0
    insuff_auto = params[P_INSUFFICIENT_AUTO] != 0
    keys = key
    window_flag = FLAG_WINDOW97 if params[P_IDENTITY] == 1 else FLAG_WINDOW_START
    nexts = rep_next97 if params[P_IDENTITY] == 1 else rep_next
    ne = 0
    for g in range(n_games):
        for c in range(N_GAME_COLS):
            out[g, c] = -1
        missed_clock[g] = np.nan
        g0 = pos_off[g]
        g1 = pos_off[g + 1]
        if g1 <= g0:
            continue
        plies = g1 - g0 - 1
        ws = g0
        reps = 1
        seen0 = np.uint64(0)     # repetition_count's seen-sets, one per parity
        seen1 = np.uint64(0)
        t_now = t_int = f_now = f_int = five = seventy = False
        for p in range(g0, g1):
            i = p - g0
            side = (stm0[g] + i) % 2
            f = flags[p]
            if f & window_flag:
                ws = p
                seen0 = np.uint64(0)
                seen1 = np.uint64(0)
            if p & 1:
                reps, seen1 = repetition_count(keys, p, ws, keys[p], seen1)
            else:
                reps, seen0 = repetition_count(keys, p, ws, keys[p], seen0)
            has_move = (f & FLAG_HAS_MOVE) != 0
            going_on = i < plies
            # Threefold (claims).
            t_now = claim_reps > 0 and reps >= claim_reps
            t_int = (not t_now) and claim_reps > 0 and intended and nexts[p] >= claim_reps - 1
            # Fifty (claims, or automatic on Lichess).
            f_now = claim_plies > 0 and hmc[p] >= claim_plies and has_move
            f_int = ((not f_now) and (not fifty_auto) and claim_plies > 0 and intended
                     and hmc[p] >= claim_plies - 1 and (f & FLAG_FIFTY_INTENDED) != 0)
            # Automatic rules.
            five = False
            if auto_reps > 0 and auto_rep_on[g]:
                if rep_mode == 0:
                    five = reps >= auto_reps
                else:
                    five = _consecutive(keys, p, g0, auto_reps)
            seventy = auto_plies > 0 and hmc[p] >= auto_plies and (has_move or not mate_first)
            insuff = insuff_auto and (f & FLAG_INSUFFICIENT) != 0
            if t_now and out[g, G_THREEFOLD] < 0:
                out[g, G_THREEFOLD] = i
            if (t_now or t_int) and out[g, G_THREEFOLD_CLAIM] < 0:
                out[g, G_THREEFOLD_CLAIM] = i
            if f_now and out[g, G_FIFTY] < 0:
                out[g, G_FIFTY] = i
            if (f_now or f_int) and not fifty_auto and out[g, G_FIFTY_CLAIM] < 0:
                out[g, G_FIFTY_CLAIM] = i
            if five and out[g, G_FIVEFOLD] < 0:
                out[g, G_FIVEFOLD] = i
            if seventy and out[g, G_SEVENTYFIVE] < 0:
                out[g, G_SEVENTYFIVE] = i
            auto_end = five or seventy or insuff or (fifty_auto and f_now)
            if auto_end and out[g, G_END_PLY] < 0:
                out[g, G_END_PLY] = i
                if five:
                    out[g, G_END_RULE] = R_FIVEFOLD
                elif seventy:
                    out[g, G_END_RULE] = R_SEVENTYFIVE
                elif fifty_auto and f_now:
                    out[g, G_END_RULE] = R_FIFTY
                else:
                    out[g, G_END_RULE] = R_INSUFFICIENT
            claim = t_now or t_int or ((f_now or f_int) and not fifty_auto)
            if claim and going_on and out[g, G_MISSED] < 0:
                out[g, G_MISSED] = i
                out[g, G_MISSED_RULE] = R_THREEFOLD if (t_now or t_int) else R_FIFTY
                out[g, G_MISSED_SIDE] = side
                missed_clock[g] = clock[p]
                rc = result_code[g]
                if rc == RESULT_DRAW:
                    out[g, G_MISSED_RESULT] = 1
                elif rc == RESULT_WHITE or rc == RESULT_BLACK:
                    won = (rc == RESULT_WHITE) == (side == 0)
                    out[g, G_MISSED_RESULT] = 0 if won else 2
            # Events (none at almost every position).
            if not (t_now or t_int or f_now or f_int or five or seventy or insuff or (f & FLAG_OFFER)):
                continue
            for r in range(6):
                kind = -1
                if r == R_THREEFOLD:
                    if t_now:
                        kind = K_NOW
                    elif t_int:
                        kind = K_INTENDED
                elif r == R_FIFTY:
                    if f_now:
                        kind = K_AUTO if fifty_auto else K_NOW
                    elif f_int:
                        kind = K_INTENDED
                elif r == R_FIVEFOLD:
                    if five:
                        kind = K_AUTO
                elif r == R_SEVENTYFIVE:
                    if seventy:
                        kind = K_AUTO
                elif r == R_OFFER:
                    if f & FLAG_OFFER:
                        kind = K_OFFER
                else:
                    if insuff:
                        kind = K_AUTO
                if kind < 0:
                    continue
                if ne < cap:
                    ev_game[ne] = g
                    ev_ply[ne] = i
                    ev_rule[ne] = r
                    ev_kind[ne] = kind
                    # An offer is made by the side that just moved; claims belong to the side to move.
                    ev_side[ne] = (1 - side) if r == R_OFFER else side
                    ev_reps[ne] = reps
                    ev_hmc[ne] = hmc[p]
                    ev_clock[ne] = clock[p]
                    ev_missed[ne] = going_on and r != R_OFFER
                ne += 1
        # Final position.
        p = g1 - 1
        f = flags[p]
        out[g, G_FINAL_REPS] = reps
        if result_code[g] == RESULT_DRAW:
            if time_forfeit[g]:
                dr = 0
            elif f & FLAG_STALEMATE:
                dr = 1
            elif f & FLAG_INSUFFICIENT:
                dr = 2
            elif five:
                dr = 3
            elif seventy:
                dr = 4
            elif t_now or t_int:
                dr = 5
            elif f_now or f_int:
                dr = 6
            else:
                dr = 7
            out[g, G_DRAW_REASON] = dr
    return ne
