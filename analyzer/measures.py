"""The research measures, written once for every game kind (docs/measures.md): from a rule
kernel's events (in game and ply order) and the games' lengths and results, what happened to
each chance (claimed, missed, avoided, passed on, ended, automatic) and, per game, the first
missed, the first avoided and the first claimed chance.

  missed     a chance on the board (claim_now) at ply q < plies: the game went on;
  claimed    a chance at the last position of a game recorded drawn (a written-move claim is
             recorded with its move as the last move, so it ends on a board chance);
  ended      a chance at the last position of a game not recorded drawn;
  avoided    a written-move chance (claim_intended) at p < plies after which position p + 1 is
             not a board chance of the same rule: the move played steered away;
  passed_on  such a chance whose move made position p + 1 a board chance of the same rule, and
             the game went on or ended undrawn: the opponent had the claim (a drawn game ending
             at p + 1 is `claimed`).
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

from numba import njit

from analyzer.codes import (
    K_AUTO,
    K_INTENDED,
    K_NOW,
    O_AUTOMATIC,
    O_AVOIDED,
    O_CLAIMED,
    O_ENDED,
    O_MISSED,
    O_PASSED_ON,
    RESULT_DRAW,
    V_AVOIDED_PLY,
    V_AVOIDED_RULE,
    V_AVOIDED_SIDE,
    V_CLAIMED_PLY,
    V_CLAIMED_RULE,
    V_MISSED_PLY,
    V_MISSED_RULE,
    V_MISSED_SIDE,
)


@njit(cache=True, nogil=True)
def apply_measures(
    n_events,
    game_plies,
    result_code,
    ev_game,
    ev_ply,
    ev_rule,
    ev_kind,
    ev_side,
    ev_clock,
    out,
    missed_clock,
    ev_outcome,
):
    """Fill ev_outcome[:n_events] (-1 for offers), and the missed/avoided/claimed columns of
    `out` (a rule kernel's verdict matrix) and missed_clock (seconds at the missed chance, NaN
    if none). The claimed columns are the first claimed chance: the last position, or the one
    before it for a claim by a written move recorded as the last move."""
    for g in range(len(game_plies)):
        missed_clock[g] = float("nan")
    i = 0
    while i < n_events:
        g = ev_game[i]
        # The events of game g: [i, j).
        j = i
        while j < n_events and ev_game[j] == g:
            j += 1
        last = game_plies[g]
        drawn = result_code[g] == RESULT_DRAW
        for e in range(i, j):
            k = ev_kind[e]
            p = ev_ply[e]
            o = -1
            if k == K_AUTO:
                o = O_AUTOMATIC
            elif k == K_NOW:
                if p < last:
                    o = O_MISSED
                elif drawn:
                    o = O_CLAIMED
                else:
                    o = O_ENDED
            elif k == K_INTENDED:
                if p >= last:
                    o = O_CLAIMED if drawn else O_ENDED
                else:
                    board_next = False
                    for x in range(e + 1, j):
                        if ev_ply[x] > p + 1:
                            break
                        if ev_ply[x] == p + 1 and ev_rule[x] == ev_rule[e] and ev_kind[x] == K_NOW:
                            board_next = True
                            break
                    if not board_next:
                        o = O_AVOIDED
                    elif p + 1 == last and drawn:
                        o = O_CLAIMED
                    else:
                        o = O_PASSED_ON
            ev_outcome[e] = o
            if o == O_MISSED and out[g, V_MISSED_PLY] < 0:
                out[g, V_MISSED_PLY] = p
                out[g, V_MISSED_RULE] = ev_rule[e]
                out[g, V_MISSED_SIDE] = ev_side[e]
                missed_clock[g] = ev_clock[e]
            if o == O_AVOIDED and out[g, V_AVOIDED_PLY] < 0:
                out[g, V_AVOIDED_PLY] = p
                out[g, V_AVOIDED_RULE] = ev_rule[e]
                out[g, V_AVOIDED_SIDE] = ev_side[e]
            if o == O_CLAIMED and out[g, V_CLAIMED_PLY] < 0:
                out[g, V_CLAIMED_PLY] = p
                out[g, V_CLAIMED_RULE] = ev_rule[e]
        i = j


analyzer._numba_env.plain_calls(globals())
