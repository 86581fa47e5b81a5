"""Draw rules of Russian draughts as editions, and the numba kernel that applies them to facts.

Two editions (see docs/draughts.md for the readings and the derivations):

* ``fshr_russian`` - section 32.1-32.4 of the Russian federation rules (seed 003):
  threefold repetition (claim, also on the intended move, 32.2), 32 moves without a change in the
  balance of forces (claim before moving), 3+ kings vs a lone king: 15th move of the stronger
  side, 3 kings vs a lone king on the main diagonal: 5th move, 2 kings or king + man vs a man or
  a king: 10th move (automatic: "the game is considered drawn").
* ``fmjd_64`` - the FMJD-64 rules 7.2.3-7.2.8 as lidraughts implements them (rules.md 4.1 B and
  4.2): everything automatic except threefold, counted as moves by each player (plies).

"A move" is an edition parameter (`move_count`):

* ``"own"``: "its N-th move" counts only the stronger side's moves, from the position where the
  configuration arose. If the stronger side is to move there, its N-th move is ply p0 + 2N - 1,
  otherwise p0 + 2N.
* ``"each"``: N moves by each player = 2N plies after p0 (lidraughts).

The balance rule has no stronger side: it always counts moves by each player (2N plies).
"""
from __future__ import annotations

import analyzer._numba_env  # noqa: F401

from dataclasses import dataclass, field

import numba
import numpy as np

from ._board import MAIN_DIAGONAL, popcount

RULE_NAMES = ("threefold", "balance", "kings_vs_king", "main_diagonal", "small_ending", "king_moves")
R_THREEFOLD, R_BALANCE, R_KVK, R_DIAG, R_SMALL, R_KINGMOVES = range(6)
KIND_NAMES = ("claim_now", "claim_intended", "automatic")
K_NOW, K_INTENDED, K_AUTO = range(3)

MOVE_COUNT_MODES = ("own", "each")


@dataclass(frozen=True)
class DraughtsEdition:
    """Parameters of one reading of the draw rules. Limits are in moves (see `move_count`)."""
    name: str
    move_count: str = "own"              # "own" (stronger side's moves) | "each" (each player's)
    threefold_intended: bool = True      # claim on the intended move (32.2, second paragraph)
    # balance of forces unchanged
    balance_automatic: bool = False      # fshr: claim; fmjd: automatic
    balance_moves: int = 32              # fshr: any material
    balance_needs_kings: bool = False    # fmjd 7.2.6: both sides have kings, 4..7 pieces
    balance_moves_small: int = 30        # fmjd 7.2.6: 4-5 pieces
    balance_moves_large: int = 60        # fmjd 7.2.6: 6-7 pieces
    kvk_moves: int = 15                  # 3+ kings vs lone king
    diag_moves: int = 5                  # 3 kings vs lone king on the main diagonal
    diag_fmjd: bool = False              # fmjd 7.2.7 / lidraughts: 3K, 2K+M, K+2M vs lone king alone on the diagonal
    small_moves: int = 10                # 2 kings, king + man vs man or king
    small_fmjd: bool = False             # fmjd 7.2.8: 2K, K+M, K vs a lone king
    king_moves: int = 0                  # fmjd 7.2.5: N moves by kings only (0 = no such rule)
    doc: str = field(default="", compare=False)

    def params(self) -> np.ndarray:
        if self.move_count not in MOVE_COUNT_MODES:
            raise ValueError(f"move_count must be one of {MOVE_COUNT_MODES}, not {self.move_count!r}")
        return np.array([
            MOVE_COUNT_MODES.index(self.move_count), int(self.threefold_intended),
            int(self.balance_automatic), self.balance_moves, int(self.balance_needs_kings),
            self.balance_moves_small, self.balance_moves_large, self.kvk_moves, self.diag_moves,
            int(self.diag_fmjd), self.small_moves, int(self.small_fmjd), self.king_moves,
        ], dtype=np.int64)


EDITIONS: dict[str, DraughtsEdition] = {
    "fshr_russian": DraughtsEdition(
        name="fshr_russian", move_count="own", threefold_intended=True,
        balance_automatic=False, balance_moves=32, kvk_moves=15, diag_moves=5, small_moves=10,
        doc="Russian federation rules, section 32 (seed 003)"),
    "fmjd_64": DraughtsEdition(
        name="fmjd_64", move_count="each", threefold_intended=False,
        balance_automatic=True, balance_needs_kings=True, balance_moves_small=30, balance_moves_large=60,
        kvk_moves=15, diag_moves=5, diag_fmjd=True, small_moves=5, small_fmjd=True, king_moves=15,
        doc="FMJD-64 7.2.3-7.2.8 as implemented by lidraughts (since 2020-10-16)"),
}


def get_edition(name: str | DraughtsEdition) -> DraughtsEdition:
    if isinstance(name, DraughtsEdition):
        return name
    try:
        return EDITIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown draughts edition {name!r}; known editions: {', '.join(sorted(EDITIONS))}") from None


# ---------------------------------------------------------------------------------------------
# kernel

@numba.njit(cache=True, nogil=True)
def _threshold(p0, stm0, stronger, n_moves, mode):
    if mode == 0:  # own moves of the stronger side
        if stm0 == stronger:
            return p0 + 2 * n_moves - 1
        return p0 + 2 * n_moves
    return p0 + 2 * n_moves


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def _emit(ne, g, p, rule, kind, side, rep, counter, missed,
          ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed):
    """Write one event row at index ne; return the next index."""
    ev_game[ne] = g
    ev_ply[ne] = p
    ev_rule[ne] = rule
    ev_kind[ne] = kind
    ev_side[ne] = side
    ev_rep[ne] = rep
    ev_counter[ne] = counter
    ev_missed[ne] = missed
    return ne + 1


@numba.njit(cache=True, nogil=True)
def apply_rules(params, g_off, g_plies, g_valid, g_result,
                p_wm, p_wk, p_bm, p_bk, p_stm, p_rep, p_intended, p_nlegal, p_irrev, p_matclock,
                out_first, out_end_ply, out_end_rule, out_missed_ply, out_missed_rule, out_missed_side,
                ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed):
    """Apply one edition to the facts of every valid game.

    out_first[g, r]: first ply at which rule r applied (claimable or automatic), -1 if never;
    out_end_ply/out_end_rule: first automatic draw; out_missed_*: first claim not taken (the game
    went on after it). Events are written to ev_* (capacity must be >= sum of 3 * (plies + 1) + 8);
    returns the number of events.
    """
    mode = params[0]
    tf_intended = params[1] != 0
    bal_auto = params[2] != 0
    bal_moves = params[3]
    bal_kings = params[4] != 0
    bal_small = params[5]
    bal_large = params[6]
    kvk_moves = params[7]
    diag_moves = params[8]
    diag_fmjd = params[9] != 0
    small_moves = params[10]
    small_fmjd = params[11] != 0
    kingmoves = params[12]
    ne = 0
    for g in range(len(g_plies)):
        for r in range(6):
            out_first[g, r] = -1
        out_end_ply[g] = -1
        out_end_rule[g] = -1
        out_missed_ply[g] = -1
        out_missed_rule[g] = -1
        out_missed_side[g] = -1
        if not g_valid[g]:
            continue
        base = g_off[g]
        P = g_plies[g]
        # run state per configuration: start ply, side, counter
        kvk_p0 = -1
        kvk_side = -1
        diag_p0 = -1
        diag_side = -1
        diag_count = 0
        small_p0 = -1
        small_side = -1
        for p in range(P + 1):
            s = base + p
            stm = p_stm[s]
            # ---------------- threefold (claims)
            if p_rep[s] >= 3:
                if out_first[g, R_THREEFOLD] < 0:
                    out_first[g, R_THREEFOLD] = p
                ne = _emit(ne, g, p, R_THREEFOLD, K_NOW, stm, p_rep[s], p_irrev[s], p < P,
                           ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            if tf_intended and p_intended[s] >= 3:
                ne = _emit(ne, g, p, R_THREEFOLD, K_INTENDED, stm, p_intended[s], p_irrev[s], p < P,
                           ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            # ---------------- balance of forces unchanged
            if bal_kings:
                nw = popcount(p_wm[s]) + popcount(p_wk[s])
                nb = popcount(p_bm[s]) + popcount(p_bk[s])
                tot = nw + nb
                limit = -1
                if p_wk[s] != 0 and p_bk[s] != 0:
                    if 4 <= tot <= 5:
                        limit = 2 * bal_small
                    elif 6 <= tot <= 7:
                        limit = 2 * bal_large
            else:
                limit = 2 * bal_moves
            if limit > 0 and p_matclock[s] >= limit:
                first = out_first[g, R_BALANCE] < 0
                if first:
                    out_first[g, R_BALANCE] = p
                if not bal_auto or first:
                    ne = _emit(ne, g, p, R_BALANCE, K_AUTO if bal_auto else K_NOW, stm, -1, p_matclock[s], p < P,
                               ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            # ---------------- king moves only (fmjd 7.2.5)
            if kingmoves > 0 and p_irrev[s] >= 2 * kingmoves and out_first[g, R_KINGMOVES] < 0:
                out_first[g, R_KINGMOVES] = p
                ne = _emit(ne, g, p, R_KINGMOVES, K_AUTO, stm, -1, p_irrev[s], p < P,
                           ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            # ---------------- king endings
            kvk, diag, diag_on, small = _config(p_wm[s], p_wk[s], p_bm[s], p_bk[s], diag_fmjd, small_fmjd)
            # 3+ kings vs lone king
            if kvk >= 0:
                if kvk_p0 < 0 or kvk_side != kvk:
                    kvk_p0 = p
                    kvk_side = kvk
                t = _threshold(kvk_p0, p_stm[base + kvk_p0], kvk_side, kvk_moves, mode)
                if p == t and p_nlegal[s] > 0 and out_first[g, R_KVK] < 0:
                    out_first[g, R_KVK] = p
                    ne = _emit(ne, g, p, R_KVK, K_AUTO, stm, -1, p - kvk_p0, p < P,
                               ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            else:
                kvk_p0 = -1
                kvk_side = -1
            # main diagonal
            if diag >= 0 and (diag_fmjd or diag_on):
                if diag_p0 < 0 or diag_side != diag:
                    diag_p0 = p
                    diag_side = diag
                    diag_count = 0
                fire = False
                if diag_fmjd:
                    if diag_on:
                        diag_count += 1
                    fire = diag_count >= 2 * diag_moves
                else:
                    fire = p == _threshold(diag_p0, p_stm[base + diag_p0], diag_side, diag_moves, mode)
                if fire and p_nlegal[s] > 0 and out_first[g, R_DIAG] < 0:
                    out_first[g, R_DIAG] = p
                    ne = _emit(ne, g, p, R_DIAG, K_AUTO, stm, -1, p - diag_p0, p < P,
                               ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            else:
                diag_p0 = -1
                diag_side = -1
                diag_count = 0
            # small endings
            if small >= 0:
                if small_p0 < 0 or small_side != small:
                    small_p0 = p
                    small_side = small
                t = _threshold(small_p0, p_stm[base + small_p0], small_side, small_moves, mode)
                if p == t and p_nlegal[s] > 0 and out_first[g, R_SMALL] < 0:
                    out_first[g, R_SMALL] = p
                    ne = _emit(ne, g, p, R_SMALL, K_AUTO, stm, -1, p - small_p0, p < P,
                               ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
            else:
                small_p0 = -1
                small_side = -1
        # ---------------- summary: first automatic end, first missed claim
        for r in range(6):
            fp = out_first[g, r]
            if fp < 0:
                continue
            automatic = r == R_KVK or r == R_DIAG or r == R_SMALL or r == R_KINGMOVES or (r == R_BALANCE and bal_auto)
            if automatic and (out_end_ply[g] < 0 or fp < out_end_ply[g]):
                out_end_ply[g] = fp
                out_end_rule[g] = r
    # first missed claim per game (events are in game order, ply order within a game)
    for i in range(ne):
        if ev_kind[i] == K_AUTO or not ev_missed[i]:
            continue
        g = ev_game[i]
        if out_missed_ply[g] < 0 or ev_ply[i] < out_missed_ply[g]:
            out_missed_ply[g] = ev_ply[i]
            out_missed_rule[g] = ev_rule[i]
            out_missed_side[g] = ev_side[i]
    return ne
