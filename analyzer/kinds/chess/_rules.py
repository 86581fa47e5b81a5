"""Chess draw-rule kernel: per-position facts + an edition's parameters -> verdicts and events.

Pure function of the replay's facts (_replay); one call per edition.
Semantics for fide_2018 follow python-chess exactly (the oracle in tests/reference.py):
  threefold now      occurrence count >= 3 since the last irreversible move (is_repetition(3))
  threefold claim    that, or a legal move reaches a position seen twice (can_claim_threefold_repetition)
  fifty now          halfmove clock >= 100 and a legal move exists (is_fifty_moves)
  fifty claim        that, or clock >= 99 and a legal non-zeroing move after which a legal move exists
  fivefold           occurrence count >= 5 (is_fivefold_repetition)
  seventyfive        clock >= 150 and a legal move exists (is_seventyfive_moves: mate takes precedence)
Events are the chances (claim_now on the board, claim_intended on a written move) and the
automatic draws; whether a chance was claimed, missed, avoided or passed on is decided from the
events by analyzer.measures, the same way for every game kind (docs/measures.md).
"""

from __future__ import annotations

from typing import Any

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit

from analyzer.codes import (
    DR_AGREEMENT,
    DR_DEAD_POSITION,
    DR_FIFTY,
    DR_FIVEFOLD,
    DR_INSUFFICIENT,
    DR_SEVENTYFIVE,
    DR_STALEMATE,
    DR_THREEFOLD,
    DR_TIMEOUT_VS_INSUFFICIENT,
    F_CLOCK100,
    F_CLOCK150,
    F_FIFTH,
    F_FINAL_HMC,
    F_FINAL_INSUFFICIENT,
    F_FINAL_MATE,
    F_FINAL_REPS,
    F_FINAL_STALEMATE,
    F_THIRD,
    K_AUTO,
    K_INTENDED,
    K_NOW,
    K_OFFER,
    N_VERDICT,
    R_DEAD_POSITION,
    R_FIFTY,
    R_FIVEFOLD,
    R_INSUFFICIENT,
    R_OFFER,
    R_SEVENTYFIVE,
    R_STALEMATE,
    R_THREEFOLD,
    R_TIMEOUT_UNWINNABLE,
    RESULT_BLACK,
    RESULT_DRAW,
    RESULT_WHITE,
    V_DEAD_POSITION,
    V_DRAW_REASON,
    V_END_PLY,
    V_END_RESULT,
    V_END_RULE,
    V_FIFTY,
    V_FIFTY_CLAIM,
    V_FIVEFOLD,
    V_SEVENTYFIVE,
    V_THREEFOLD,
    V_THREEFOLD_CLAIM,
    V_TIMEOUT_UNWINNABLE,
    W_UNWINNABLE,
    W_WINNABLE,
)
from analyzer.kinds._reptable import new_table, occurrences
from analyzer.kinds.chess._replay import (
    FLAG_CHECKMATE,
    FLAG_FIFTY_INTENDED,
    FLAG_HAS_MOVE,
    FLAG_INSUFFICIENT,
    FLAG_OFFER,
    FLAG_STALEMATE,
    FLAG_WINDOW97,
    FLAG_WINDOW_START,
)
from analyzer.kinds.chess.editions import TIMEOUT_INSUFFICIENT, TIMEOUT_UNWINNABLE

JIT: dict[str, Any] = {"cache": True, "nogil": True}
HOT: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}  # helpers that do not allocate (see _board.HOT)

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
P_STALEMATE_WINS = 10  # counterfactual: a stalemate ends the game as a win for the side that gave it
P_DEAD_AUTO = 11  # a dead position ends the game (FIDE)
P_TIMEOUT_RULE = 12  # which test decides a loss on time against a side that cannot mate (editions.TIMEOUT_*)
P_N_LIMITS = 13  # rows of move limits by material (editions.ChessEdition.limit_rows)
P_LIMITS_FROM = 14  # the smallest halfmove clock at which the limits are read (material is known there)
P_LIMITS = 15  # the rows: (material signature, claim plies, automatic plies; -1 = the edition's)
REP_MODE_ANY = 0  # N occurrences anywhere since the last irreversible move (2018 text)
IDENTITY_1997 = 1  # castling possible right now is part of the position (1997-2005 texts)
N_RULES_CHESS = 6  # threefold, fifty, fivefold, seventyfive, offer, insufficient_material
# The tables' repetition counts (events.repetition_count, games.final_repetition_count) are
# int16: a larger count (a generated game repeating a position 32,768 times or more) is written
# as this, not wrapped (a wrapped one read as a negative number, or null).
REPS_MAX = 32767


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


@njit(inline="always", **HOT)
def _game_span(pos_off, g, out, n_columns):
    """(first, end) position index of game g, the first n_columns of its row of `out` cleared to
    -1 first (a game without positions keeps that row)."""
    for c in range(n_columns):
        out[g, c] = -1
    return pos_off[g], pos_off[g + 1]


@njit(inline="always", **HOT)
def _occurrences(keys, p, window_start, ws, seen0, seen1, tab):
    """How often position p has occurred in its repetition window, walking a game forward: the
    window state (ws, and the seen-sets of repetition_count for even and odd p) comes in from
    p - 1 and goes out to p + 1. A window start at p restarts the window there. A long window
    is counted in `tab` (_reptable: constant time per position)."""
    if window_start:
        ws = p
        seen0 = np.uint64(0)
        seen1 = np.uint64(0)
    if p & 1:
        reps, seen1 = occurrences(tab, keys, p, ws, ws, keys[p], seen1)
    else:
        reps, seen0 = occurrences(tab, keys, p, ws, ws, keys[p], seen0)
    return reps, ws, seen0, seen1


@njit(**HOT)
def _window_limits(params, n_limits, sig, claim_plies, auto_plies):
    """(claim plies, automatic plies) of a window whose material has signature `sig`."""
    for k in range(n_limits):
        row = P_LIMITS + 3 * k
        if np.uint64(params[row]) == sig:
            c = params[row + 1]
            a = params[row + 2]
            return (c if c >= 0 else claim_plies), (a if a >= 0 else auto_plies)
    return claim_plies, auto_plies


@njit(**JIT)
def _window_table(pos_off):
    """A table (_reptable) for the longest game's windows: 2 slots per position (a load of
    at most 1/2), a token one if no game has a long window."""
    longest = 0
    for g in range(len(pos_off) - 1):
        longest = max(longest, pos_off[g + 1] - pos_off[g])
    return new_table(longest, 2 * longest, False)


@njit(inline="always", **HOT)
def _event(events, ne, g, ply, rule, kind, side, reps, hmc, clk):
    """Write an event at index ne of the event arrays (if there is room: the caller counts past
    it and grows the arrays); return ne + 1."""
    ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_reps, ev_hmc, ev_clock = events
    if ne < len(ev_game):
        ev_game[ne] = g
        ev_ply[ne] = ply
        ev_rule[ne] = rule
        ev_kind[ne] = kind
        ev_side[ne] = side
        ev_reps[ne] = reps
        ev_hmc[ne] = hmc
        ev_clock[ne] = clk
    return ne + 1


@njit(**JIT)
def apply_rules(
    pos_off,
    stm0,
    result_code,
    time_forfeit,
    auto_rep_on,
    dead_ply,
    timeout_can_mate,
    timeout_insufficient,
    params,
    key,
    hmc,
    flags,
    rep_next,
    rep_next97,
    clock,
    out,
    ev_game,
    ev_ply,
    ev_rule,
    ev_kind,
    ev_side,
    ev_reps,
    ev_hmc,
    ev_clock,
    material,
):
    """Fill this kind's columns of `out` (n_games x codes.N_VERDICT; the others stay -1) and the
    event arrays (in game and ply order); return the number of events. Outcomes of the events
    and the missed/avoided columns are analyzer.measures' work.

    material: each position's material signature (analyzer.kinds.chess.material), read only
    where the halfmove clock is at least params[P_LIMITS_FROM] and the edition has limits by
    material: the 50- and 75-move counts of such a window are the limits' (the material cannot
    change inside a window without capture or pawn move).

    If the event arrays are too small, events past their capacity are counted but not written:
    the caller compares the return value with the capacity and calls again with room.

    Per game, edition-free facts of the final and dead positions (-1 where they do not apply):
    dead_ply, the first dead position (codes.GAME columns: dead_position_ply); for a game lost on
    time (time_forfeit, 1-0 or 0-1) timeout_can_mate, the winner's codes.W_* answer (FIDE 6.9), and
    timeout_insufficient, 1 if the winner has insufficient material (the Lichess test), else 0.
    """
    facts = (key, hmc, flags, rep_next, rep_next97, clock)
    events = (ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_reps, ev_hmc, ev_clock)
    games = (pos_off, stm0, result_code, time_forfeit, auto_rep_on, dead_ply, timeout_can_mate, timeout_insufficient)
    return _apply_rules(games, params, facts, out, events, _window_table(pos_off), material)


@njit(**HOT)
def _apply_rules(games, params, facts, out, events, tab, material):
    """apply_rules without the numba runtime: no reference counting in the loop over positions
    (the arrays come grouped in tuples; tab: the table of long repetition windows, _reptable;
    material: as apply_rules takes it)."""
    pos_off, stm0, result_code, time_forfeit, auto_rep_on, dead_ply, timeout_can_mate, timeout_insufficient = games
    key, hmc, flags, rep_next, rep_next97, clock = facts
    n_games = len(stm0)
    claim_reps = params[P_CLAIM_REPS]
    intended = params[P_INTENDED] != 0
    base_claim = params[P_CLAIM_PLIES]
    auto_reps = params[P_AUTO_REPS]
    rep_mode = params[P_REP_MODE]
    base_auto = params[P_AUTO_PLIES]
    mate_first = params[P_MATE_PRECEDENCE] != 0
    fifty_auto = params[P_FIFTY_AUTO] != 0
    insuff_auto = params[P_INSUFFICIENT_AUTO] != 0
    stalemate_wins = params[P_STALEMATE_WINS] != 0
    dead_auto = params[P_DEAD_AUTO] != 0
    timeout_rule = params[P_TIMEOUT_RULE]
    n_limits = params[P_N_LIMITS]
    limits_from = params[P_LIMITS_FROM]
    keys = key
    window_flag = FLAG_WINDOW97 if params[P_IDENTITY] == IDENTITY_1997 else FLAG_WINDOW_START
    nexts = rep_next97 if params[P_IDENTITY] == IDENTITY_1997 else rep_next
    ne = 0
    for g in range(n_games):
        g0, g1 = _game_span(pos_off, g, out, N_VERDICT)
        if g1 <= g0:
            continue
        ws, reps, seen0, seen1 = g0, 1, np.uint64(0), np.uint64(0)  # (_occurrences' window state)
        t_now = t_int = f_now = f_int = five = seventy = False
        w_sig = np.uint64(0xFFFFFFFFFFFFFFFF)  # the material whose limits w_claim, w_auto hold
        w_claim = base_claim
        w_auto = base_auto
        dp = dead_ply[g] if dead_auto else -1
        if dp >= 0:
            out[g, V_DEAD_POSITION] = dp
        for p in range(g0, g1):
            i = p - g0
            side = (stm0[g] + i) % 2
            f = flags[p]
            reps, ws, seen0, seen1 = _occurrences(keys, p, f & window_flag, ws, seen0, seen1, tab)
            has_move = (f & FLAG_HAS_MOVE) != 0
            # The move limits of this window (by its material, for editions that have such limits).
            claim_plies = base_claim
            auto_plies = base_auto
            if n_limits > 0 and hmc[p] >= limits_from:
                if material[p] != w_sig:
                    w_sig = material[p]
                    w_claim, w_auto = _window_limits(params, n_limits, w_sig, base_claim, base_auto)
                claim_plies = w_claim
                auto_plies = w_auto
            # Threefold: a claim on the board (the position is an N-th occurrence: python-chess
            # is_repetition), or on a written move that makes one (can_claim_threefold_repetition).
            t_now = claim_reps > 0 and reps >= claim_reps
            t_int = (not t_now) and claim_reps > 0 and intended and nexts[p] >= claim_reps - 1
            # Fifty (claims, or automatic on Lichess).
            f_now = claim_plies > 0 and hmc[p] >= claim_plies and has_move
            f_int = (
                (not f_now)
                and (not fifty_auto)
                and claim_plies > 0
                and intended
                and hmc[p] >= claim_plies - 1
                and (f & FLAG_FIFTY_INTENDED) != 0
            )
            # Automatic rules.
            five = False
            if auto_reps > 0 and auto_rep_on[g]:
                if rep_mode == REP_MODE_ANY:
                    five = reps >= auto_reps
                else:
                    five = _consecutive(keys, p, g0, auto_reps)
            seventy = auto_plies > 0 and hmc[p] >= auto_plies and (has_move or not mate_first)
            insuff = insuff_auto and (f & FLAG_INSUFFICIENT) != 0
            dead = i == dp
            if t_now and out[g, V_THREEFOLD] < 0:
                out[g, V_THREEFOLD] = i
            if (t_now or t_int) and out[g, V_THREEFOLD_CLAIM] < 0:
                out[g, V_THREEFOLD_CLAIM] = i
            if f_now and out[g, V_FIFTY] < 0:
                out[g, V_FIFTY] = i
            if (f_now or f_int) and not fifty_auto and out[g, V_FIFTY_CLAIM] < 0:
                out[g, V_FIFTY_CLAIM] = i
            if five and out[g, V_FIVEFOLD] < 0:
                out[g, V_FIVEFOLD] = i
            if seventy and out[g, V_SEVENTYFIVE] < 0:
                out[g, V_SEVENTYFIVE] = i
            auto_end = five or seventy or insuff or (fifty_auto and f_now) or dead
            if auto_end and out[g, V_END_PLY] < 0:
                out[g, V_END_PLY] = i
                if five:
                    out[g, V_END_RULE] = R_FIVEFOLD
                elif seventy:
                    out[g, V_END_RULE] = R_SEVENTYFIVE
                elif fifty_auto and f_now:
                    out[g, V_END_RULE] = R_FIFTY
                elif insuff:
                    out[g, V_END_RULE] = R_INSUFFICIENT
                else:
                    out[g, V_END_RULE] = R_DEAD_POSITION
            # Events (none at almost every position). A chance on the board needs a legal move.
            if not (t_now or t_int or f_now or f_int or five or seventy or insuff or dead or (f & FLAG_OFFER)):
                continue
            for r in range(N_RULES_CHESS):
                kind = -1
                if r == R_THREEFOLD:
                    if t_now and has_move:
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
                # An offer is made by the side that just moved; claims belong to the side to move.
                who = (1 - side) if r == R_OFFER else side
                ne = _event(events, ne, g, i, r, kind, who, min(reps, REPS_MAX), hmc[p], clock[p])
            if dead:
                ne = _event(events, ne, g, i, R_DEAD_POSITION, K_AUTO, side, reps, hmc[p], clock[p])
        # A loss on time (FIDE 6.9): a draw when the winner could not have checkmated.
        decisive = result_code[g] == RESULT_WHITE or result_code[g] == RESULT_BLACK
        tv = -1
        if time_forfeit[g] and decisive:
            if timeout_rule == TIMEOUT_UNWINNABLE:
                c = timeout_can_mate[g]
                tv = 1 if c == W_UNWINNABLE else (0 if c == W_WINNABLE else -1)
            elif timeout_rule == TIMEOUT_INSUFFICIENT:
                tv = timeout_insufficient[g]
        out[g, V_TIMEOUT_UNWINNABLE] = tv
        if tv == 1:
            last = g1 - 1 - g0
            if out[g, V_END_PLY] < 0:
                out[g, V_END_PLY] = last
                out[g, V_END_RULE] = R_TIMEOUT_UNWINNABLE
            loser = 1 if result_code[g] == RESULT_WHITE else 0  # the side whose flag fell gets the draw
            ne = _event(events, ne, g, last, R_TIMEOUT_UNWINNABLE, K_AUTO, loser, reps, hmc[g1 - 1], clock[g1 - 1])
        # Final position: why a drawn game was drawn, as far as the moves tell.
        f = flags[g1 - 1]
        if stalemate_wins and (f & FLAG_STALEMATE) and out[g, V_END_PLY] < 0:
            # (counterfactual) the side that gave stalemate, not the side to move, wins
            out[g, V_END_PLY] = g1 - 1 - g0
            out[g, V_END_RULE] = R_STALEMATE
            out[g, V_END_RESULT] = RESULT_BLACK if (stm0[g] + g1 - 1 - g0) % 2 == 0 else RESULT_WHITE
        if result_code[g] == RESULT_DRAW:
            if time_forfeit[g]:
                dr = DR_TIMEOUT_VS_INSUFFICIENT
            elif f & FLAG_STALEMATE:
                dr = DR_STALEMATE
            elif f & FLAG_INSUFFICIENT:
                dr = DR_INSUFFICIENT
            elif dp >= 0:
                dr = DR_DEAD_POSITION
            elif five:
                dr = DR_FIVEFOLD
            elif seventy:
                dr = DR_SEVENTYFIVE
            elif t_now or t_int:
                dr = DR_THREEFOLD
            elif f_now or f_int:
                dr = DR_FIFTY
            else:
                dr = DR_AGREEMENT
            out[g, V_DRAW_REASON] = dr
    return ne


@njit(**JIT)
def game_facts(pos_off, key, hmc, flags, clock, out, has_clock):
    """Edition-independent facts per game under the 2009+ identity (codes.GAME_FACT_COLUMNS):
    first 3rd and 5th occurrence of a position, first halfmove clock >= 100 and >= 150, and
    the final position's repetition count, clock and checkmate/stalemate/insufficient flags.
    has_clock[g]: some position of game g has a %clk time (clock not NaN); read in the same walk
    (a numpy cumsum over every position's clock cost ~40 M instructions per 50,000 games)."""
    _game_facts(pos_off, key, hmc, flags, clock, out, has_clock, _window_table(pos_off))


@njit(**HOT)
def _game_facts(pos_off, key, hmc, flags, clock, out, has_clock, tab):
    """game_facts without the numba runtime (no reference counting in the loop over positions)."""
    for g in range(len(pos_off) - 1):
        g0, g1 = _game_span(pos_off, g, out, out.shape[1])
        has_clock[g] = False
        if g1 <= g0:
            continue
        ws, reps, seen0, seen1 = g0, 1, np.uint64(0), np.uint64(0)
        timed = False
        for p in range(g0, g1):
            i = p - g0
            timed |= not np.isnan(clock[p])
            reps, ws, seen0, seen1 = _occurrences(key, p, flags[p] & FLAG_WINDOW_START, ws, seen0, seen1, tab)
            if reps >= 3 and out[g, F_THIRD] < 0:
                out[g, F_THIRD] = i
            if reps >= 5 and out[g, F_FIFTH] < 0:
                out[g, F_FIFTH] = i
            if hmc[p] >= 100 and out[g, F_CLOCK100] < 0:
                out[g, F_CLOCK100] = i
            if hmc[p] >= 150 and out[g, F_CLOCK150] < 0:
                out[g, F_CLOCK150] = i
        has_clock[g] = timed
        f = flags[g1 - 1]
        out[g, F_FINAL_REPS] = min(reps, REPS_MAX)
        out[g, F_FINAL_HMC] = hmc[g1 - 1]
        out[g, F_FINAL_MATE] = 1 if f & FLAG_CHECKMATE else 0
        out[g, F_FINAL_STALEMATE] = 1 if f & FLAG_STALEMATE else 0
        out[g, F_FINAL_INSUFFICIENT] = 1 if f & FLAG_INSUFFICIENT else 0


analyzer._numba_env.plain_calls(globals())
