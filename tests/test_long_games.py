"""Games with one long reversible stretch (issue 36, point 5): the kernels count occurrences in a
long repetition window from a hash table (analyzer/kinds/_reptable.py), not by walking
back, and must give exactly what a slow, obviously correct count gives.

The games are generated (tests/long_games.py: walker rooks sliding along their ranks, knights
shuffling), thousands of plies in one window. The reference is a dict of counts per window, on
the abstract position of the rook world (whose legal reversible moves are the walkers' slides:
every other move reaches a position the game never has); that model is checked against
python-chess (reference.ply_facts) on the first plies of each game. Compared, per position:

- rep_next / rep_next97 (replay facts): the most earlier occurrences a reversible legal move
  reaches, under the 2009 identity and the 1997 one (windows restart where castling becomes
  possible or impossible), at most 127 (int8);
- the occurrence counts the rule kernels compute, read from the events of editions that make
  every second occurrence a chance (claim_repetitions=2), for both identities, and the games
  table's first third / fifth occurrence and final count (game_facts), at most 32767 (int16).
"""

from __future__ import annotations

import collections
import io
import itertools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import long_games as lg
import reference as ref
from analyzer.api import analyze_bytes
from analyzer.kinds._reptable import LONG_WINDOW
from analyzer.kinds.chess.editions import custom_edition

REP_NEXT_MAX = 127
REPS_MAX = 32767
# Every position seen twice or more is a "claim" of these editions: their events give the rule
# kernel's occurrence count per position, under each identity.
COUNT09 = custom_edition(id="count09", base="fide_2009", claim_repetitions=2, claim_intended_move=False, claim_moves=0)
COUNT97 = custom_edition(id="count97", base="fide_1997", claim_repetitions=2, claim_intended_move=False, claim_moves=0)

GAMES = {
    # 4 pawn pushes: 5 windows of ~4,000 plies; 16 walker states a side: counts up to dozens
    "walk_ab_pawns": lambda: lg.random_walk_game(20_000, seed=3, files="ab", pawn_pushes=4),
    # 2,401 walker states a side: most positions new, some repeated (undone slides)
    "walk_many": lambda: lg.random_walk_game(10_000, seed=4, files="abcdefg", back=0.4),
    # castling possible now changes rarely: long 1997 windows
    "castling_long97": lambda: lg.random_walk_game(12_000, seed=5, world="castling", files="ab" * 40 + "f"),
    # and often: short 1997 windows inside a long 2009 one
    "castling_short97": lambda: lg.random_walk_game(8_000, seed=6, world="castling", files="abc" * 10 + "fg", back=0.5),
    # a cycle of 98 positions, repeated 60 times
    "cycle98": lambda: lg.gray_cycle_game(6_000, 7, 2, 7, 2),
}


def _castle_now(world: str, pos: tuple) -> int:
    """castle_now_bits of a rook-world position: the h-side castling of a side with the right is
    possible unless f or g of its first rank is attacked, i.e. a walker of the other side stands
    on that file with none of the own side's walkers (all between them) on it."""
    if world != "castling":
        return 0
    white, black = set(pos[0]), set(pos[1])
    wk = not any(f in black and f not in white for f in "fg")
    bk = not any(f in white and f not in black for f in "fg")
    return (1 if wk else 0) | (4 if bk else 0)


def _reference(world: str, positions: list[tuple]) -> dict:
    """Per position: counts in the 2009 and 1997 windows, rep_next, rep_next97, window starts."""
    files = lg.WORLDS[world][4]
    n = len(positions)
    out = {k: [0] * n for k in ("count", "count97", "rep_next", "rep_next97", "start", "start97", "cnow")}
    window: collections.Counter = collections.Counter()
    window97: collections.Counter = collections.Counter()
    for p, pos in enumerate(positions):
        cnow = _castle_now(world, pos)
        start = p == 0 or pos[2:4] != positions[p - 1][2:4]  # a pawn push
        start97 = start or cnow != out["cnow"][p - 1]
        if start:
            window.clear()
        if start97:
            window97.clear()
        window[pos] += 1
        window97[pos] += 1
        best = best97 = 0
        stm = pos[4]
        for d, f0 in enumerate(pos[stm]):
            for f1 in files:
                if f1 == f0:
                    continue
                side = list(pos[stm])
                side[d] = f1
                nxt = (
                    (tuple(side), pos[1], pos[2], pos[3], 1 - stm) if stm == 0 else (pos[0], tuple(side), *pos[2:4], 0)
                )
                c = window[nxt]
                if c >= 2:
                    best = max(best, c)
                    if _castle_now(world, nxt) == cnow and window97[nxt] >= 2:
                        best97 = max(best97, window97[nxt])
        for k, v in (
            ("count", window[pos]),
            ("count97", window97[pos]),
            ("rep_next", min(best, REP_NEXT_MAX)),
            ("rep_next97", min(best97, REP_NEXT_MAX)),
            ("start", start),
            ("start97", start97),
            ("cnow", cnow),
        ):
            out[k][p] = v
    return out


def _counts_from_events(result, edition: str) -> dict[int, int]:
    ev = result.events.to_pydict()
    return {
        ply: reps
        for ed, rule, kind, ply, reps in zip(ev["edition"], ev["rule"], ev["kind"], ev["ply"], ev["repetition_count"])
        if ed == edition and rule == "threefold" and kind == "claim_now"
    }


def _first(values, threshold) -> int | None:
    return next((p for p, c in enumerate(values) if c >= threshold), None)


def _check_kernels(text: str, expected: dict) -> None:
    """The kernels' facts and counts for the one game of `text` against `expected` (per
    position: count, count97, rep_next, rep_next97)."""
    res = analyze_bytes(text.encode(), editions=("fide_2018", COUNT09, COUNT97), keep_facts=True)
    game = res.games.to_pylist()[0]
    assert game["status"] == "ok", game["error"]
    n = len(expected["count"])
    assert game["plies"] == n - 1
    np.testing.assert_array_equal(res.facts["rep_next"], np.array(expected["rep_next"], np.int8))
    np.testing.assert_array_equal(res.facts["rep_next97"], np.array(expected["rep_next97"], np.int8))
    for edition, name in (("count09", "count"), ("count97", "count97")):
        want = {p: min(c, REPS_MAX) for p, c in enumerate(expected[name]) if c >= 2}
        assert _counts_from_events(res, edition) == want, edition
    assert game["final_repetition_count"] == min(expected["count"][-1], REPS_MAX)
    assert game["first_third_occurrence_ply"] == _first(expected["count"], 3)
    assert game["first_fifth_occurrence_ply"] == _first(expected["count"], 5)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_long_window_counts_and_rep_next(name):
    text = GAMES[name]()
    start_fen, moves = lg.game_moves(text)
    world = "castling" if " Kk " in start_fen else "plain"
    positions = lg.rook_world_positions(world, start_fen, moves)
    expected = _reference(world, positions)
    starts = [p for p, s in enumerate(expected["start"]) if s] + [len(positions)]
    assert max(b - a for a, b in itertools.pairwise(starts)) > 20 * LONG_WINDOW  # the table path is taken
    if name.startswith("castling"):
        starts97 = [p for p, s in enumerate(expected["start97"]) if s] + [len(positions)]
        assert sum(b - a > LONG_WINDOW for a, b in itertools.pairwise(starts97)) >= (10 if "long" in name else 0)
        assert any(a != b for a, b in zip(expected["rep_next"], expected["rep_next97"]))
    assert sum(c >= 2 for c in expected["rep_next"]) > len(positions) // 20
    _check_kernels(text, expected)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_rook_world_model_against_python_chess(name):
    """The reference's model of the rook world (legal reversible moves = walker slides; castling
    possible now) is python-chess's, on the first 700 plies (windows longer than LONG_WINDOW)."""
    import chess.pgn

    text = GAMES[name]()
    start_fen, moves = lg.game_moves(text)
    world = "castling" if " Kk " in start_fen else "plain"
    k = 700
    expected = _reference(world, lg.rook_world_positions(world, start_fen, moves[:k]))
    game = chess.pgn.read_game(io.StringIO(lg.pgn(moves[:k], start_fen)))
    assert not game.errors
    facts = ref.ply_facts(game)
    assert facts["rep_next"] == expected["rep_next"]
    assert facts["window_start"] == expected["start"]
    assert facts["castle_now"] == expected["cnow"]
    assert not any(facts["check"])


def test_knight_shuffle_against_python_chess():
    """1. Nf3 Nf6 2. Ng1 Ng8 ... from the start position (castling rights kept): python-chess's
    counts and rep_next (which pass 127: stored as 127), one window of 1,200 plies."""
    import chess.pgn

    text = lg.knight_shuffle(1_200)
    game = chess.pgn.read_game(io.StringIO(text))
    facts = ref.ply_facts(game)
    board = game.board()
    counts: collections.Counter = collections.Counter()
    expected: dict = {"count": [], "count97": []}
    for move in [None, *game.mainline_moves()]:
        if move is not None:
            board.push(move)
        counts[board._transposition_key()] += 1
        expected["count"].append(counts[board._transposition_key()])
    expected["count97"] = expected["count"]  # castling is never possible: the same windows
    assert not any(facts["window_start"][1:]) and set(facts["castle_now"]) == {0}
    expected["rep_next"] = [min(c, REP_NEXT_MAX) for c in facts["rep_next"]]
    expected["rep_next97"] = expected["rep_next"]
    assert max(facts["rep_next"]) > REP_NEXT_MAX
    _check_kernels(text, expected)


def test_counts_past_int16_are_capped():
    """140,000 plies of the knight shuffle: the last position occurs 35,001 times; the tables'
    int16 counts hold 32,767 from the 32,767th occurrence on (not a wrapped or null number)."""
    n = 140_000
    res = analyze_bytes(lg.knight_shuffle(n).encode(), editions=(COUNT09,))
    game = res.games.to_pylist()[0]
    assert game["plies"] == n and game["final_repetition_count"] == REPS_MAX
    got = _counts_from_events(res, "count09")
    want = {p: min(p // 4 + 1, REPS_MAX) for p in range(n + 1) if p // 4 + 1 >= 2}
    assert got == want


def test_draughts_king_shuffle_counts():
    """Russian draughts, kings only (W: K13, K1, K2; B: K28), 13-31 28-32 31-13 32-28 repeated
    for 140,000 plies: the replay's count of each position (every position of the window, both
    sides to move: _reptable with by_parity False) is p // 4 + 1, and its intended-move count
    (the cycle's next position, one more occurrence) (p + 1) // 4 + 1; both int16, at most 32767."""
    n = 140_000
    cycle = ["13-31", "28-32", "31-13", "32-28"]
    body = " ".join(f"{i // 2 + 1}. {cycle[i % 4]}" if i % 2 == 0 else cycle[i % 4] for i in range(n))
    text = f'[Event "t"]\n[GameType "25"]\n[Result "1-1"]\n[FEN "W:WK13,K1,K2:BK28"]\n\n{body} 1-1\n\n'
    res = analyze_bytes(text.encode(), kind="russian_draughts", editions=("fshr_russian",), keep_facts=True)
    facts = res.facts["facts"]
    game = res.games.to_pylist()[0]
    assert game["status"] == "ok" and game["plies"] == n
    p = np.arange(n + 1)
    np.testing.assert_array_equal(facts.rep[: n + 1], np.minimum(p // 4 + 1, REPS_MAX))
    np.testing.assert_array_equal(facts.intended[: n + 1], np.minimum((p + 1) // 4 + 1, REPS_MAX))
    assert game["final_repetition_count"] == REPS_MAX
