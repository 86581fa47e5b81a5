"""Section 32 draw rules on hand-built games.

Every expected ply below is derived from the rule text (seed 003, section 32; docs/draughts.md),
not from the code. Conventions: ply 0 = the position of the FEN, ply k = after the k-th
half-move. Squares are PDN numbers (1 = b8, 4 = h8, 29 = a1, 32 = g1). All pieces in these
games stand on edge squares (files a/h, ranks 1/8) whenever the opponent is to move, so no
capture is ever possible and every move is a free choice.
"""

from __future__ import annotations

import pytest

from analyzer import tables
from conftest import analyze, verdict_rows


def _pdn(fen: str, moves: list[str], result: str = "1-1", gametype: str = "25") -> bytes:
    body = []
    for i in range(0, len(moves), 2):
        body.append(f"{i // 2 + 1}. " + " ".join(moves[i : i + 2]))
    return (
        f'[Event "test"]\n[GameType "{gametype}"]\n[Result "{result}"]\n[FEN "{fen}"]\n\n'
        + " ".join(body)
        + f" {result}\n\n"
    ).encode()


def _run(data: bytes, editions=("fshr_russian",)):
    """(one dict per game and edition: game and verdict columns, the events)."""
    res = analyze(data, editions=editions)
    assert res.games.schema.equals(tables.GAMES_SCHEMA)
    assert res.verdicts.schema.equals(tables.VERDICTS_SCHEMA)
    assert res.events.schema.equals(tables.EVENTS_SCHEMA)
    return verdict_rows(res), res.events.to_pylist()


# ---------------------------------------------------------------------------------------------
# 32.1 (last bullet), 32.2, 32.3: threefold repetition

# White: king c1 (30) + man h2 (28); Black: king f8 (3) + man a7 (5); white to move.
# The kings shuttle c1 -> a3 (30-21) and f8 -> h6 (3-12) and back.
THREEFOLD_FEN = "W:WK30,28:BK3,5"
CYCLE = ["30-21", "3-12", "21-30", "12-3"]


def test_threefold_claims():
    # Positions: ply 0 = P0 (W to move), 1 = P1, 2 = P2, 3 = P3, 4 = P0 again, ... 8 = P0 a 3rd time.
    # 32.1: a position that occurs three times with the same side to move.
    #   -> first_threefold_ply = 8.
    # 32.2 para 1: black's move 12-3 (ply 8) repeats P0 a third time, so WHITE (the partner) may
    #   claim before making his next move -> claim_now, white, ply 8.
    # 32.2 para 2: black, about to play 12-3 at ply 7 (P3, black to move), may write that move
    #   down and claim without playing it -> claim_intended, black, ply 7 (at ply 6, white's
    #   21-30 would give P3 only its 2nd occurrence) -> first_threefold_claim_ply = 7.
    # The game goes on to ply 10 (P2 a 3rd time, white to move) and ends drawn there.
    # Outcomes (docs/measures.md): black did not write 12-3 and claim at ply 7, but played it,
    #   which gave WHITE the claim on the board at ply 8 -> passed_on; 32.3: a claim not made
    #   before the next move is lost -> white's chance at ply 8 and black's at 9 are missed
    #   (the first missed claim: white at ply 8, 10 - 8 = 2 plies after it); the game ends
    #   drawn on the board chance at ply 10 -> claimed.
    moves = CYCLE * 2 + CYCLE[:2]
    games, events = _run(_pdn(THREEFOLD_FEN, moves, "1-1"))
    (g,) = games
    assert g["status"] == "ok" and g["plies"] == 10
    assert g["result"] == "1/2-1/2"  # 1-1 mapped
    assert g["first_threefold_ply"] == 8
    assert g["first_threefold_claim_ply"] == 7
    assert g["first_missed_claim_ply"] == 8
    assert g["missed_claim_rule"] == "threefold"
    assert g["missed_claim_side"] == "white"
    assert g["missed_claim_result"] == "draw"
    assert g["plies_after_missed_claim"] == 2
    assert g["first_avoided_claim_ply"] is None  # black's written-move chance was passed on, not avoided
    assert g["final_repetition_count"] == 3
    assert g["first_third_occurrence_ply"] == 8
    assert g["draw_reason"] == "threefold"  # P2 occurs a 3rd time on the last ply
    assert g["end_ply"] is None  # threefold is a claim, never automatic
    assert (g["claimed_ply"], g["claimed_rule"]) == (10, "threefold")  # the board chance the game ended on
    ev = {(e["ply"], e["kind"], e["side"], e["outcome"]) for e in events if e["rule"] == "threefold"}
    # claim_now on every 3rd occurrence: plies 8 (P0), 9 (P1), 10 (P2); claim_intended where the
    # board is not yet claimable but a written move would make it so: ply 7 (black, 12-3 -> P0).
    assert ev == {
        (7, "claim_intended", "black", "passed_on"),
        (8, "claim_now", "white", "missed"),
        (9, "claim_now", "black", "missed"),
        (10, "claim_now", "white", "claimed"),
    }


def test_threefold_fmjd_has_no_intended_claim():
    games, events = _run(_pdn(THREEFOLD_FEN, CYCLE * 2 + CYCLE[:2], "1-1"), editions=("fmjd_64",))
    (g,) = games
    assert g["first_threefold_ply"] == 8 and g["first_threefold_claim_ply"] == 8
    # the third occurrences of P0, P1, P2 (plies 8, 9, 10, as above), each a claim on the board only
    threefold = sorted((e["ply"], e["kind"]) for e in events if e["rule"] == "threefold")
    assert threefold == [(8, "claim_now"), (9, "claim_now"), (10, "claim_now")]


# ---------------------------------------------------------------------------------------------
# 32.1 (second bullet): 32 moves without a change in the balance of forces (a claim)


def test_balance_32_moves():
    # White: king c1 (30), men f2 (27), h2 (28); Black: king f8 (3), men g3 (24), a7 (5).
    # Ply 1: white f2:h4 (27x20) captures g3 -> the balance of forces changes at ply 1.
    # Then only king moves (16 cycles of 4 plies, black first) up to ply 65, and 2 more plies.
    # "for the last 32 or more moves the balance has not changed": 32 moves of each player after
    # ply 1 are plies 2..65, so the claim is first possible at ply 65, before black's (the side to
    # move) next move -> first_balance_ply = 65, claim_now, black. The claim stays open on every
    # later ply (66 white, 67 black); the game went on after 65 and 66.
    cycle_b = ["3-12", "30-21", "12-3", "21-30"]
    moves = ["27x20"] + cycle_b * 16 + cycle_b[:2]
    games, events = _run(_pdn("W:WK30,27,28:BK3,24,5", moves, "2-0"))
    (g,) = games
    assert g["status"] == "ok" and g["plies"] == 67 and g["result"] == "1-0"
    assert g["first_balance_ply"] == 65
    # The game went on after 65 and 66 (missed) and ended at 67, won by white (ended).
    bal = [
        (e["ply"], e["kind"], e["side"], e["outcome"], e["halfmove_clock"]) for e in events if e["rule"] == "balance"
    ]
    assert bal == [
        (65, "claim_now", "black", "missed", 64),
        (66, "claim_now", "white", "missed", 65),
        (67, "claim_now", "black", "ended", 66),
    ]
    assert g["end_ply"] is None
    # the first missed claim is an earlier threefold (the shuttle repeats positions), not balance
    assert g["first_missed_claim_ply"] < 65 and g["missed_claim_rule"] == "threefold"


# ---------------------------------------------------------------------------------------------
# 32.1 (third bullet): 3+ kings vs a lone king, the stronger side's 15th move

# White kings a5 (13), b8 (1), d8 (2); Black king h2 (28) (off the main diagonal: h2-g1 only).
KVK_CYCLE = ["13-31", "28-32", "31-13", "32-28"]


def test_kings_vs_king_stronger_to_move():
    # The force ratio 3 kings vs 1 king holds from ply 0, white (stronger) to move: white's moves
    # are plies 1, 3, ..., its 15th move is ply 2*15 - 1 = 29. The king is not taken by then ->
    # drawn at ply 29 (automatic: "the game is considered drawn").
    games, events = _run(_pdn("W:WK13,K1,K2:BK28", KVK_CYCLE * 8, "2-0"))
    (g,) = games
    assert g["plies"] == 32
    assert g["first_kings_vs_king_ply"] == 29
    assert g["first_main_diagonal_ply"] is None and g["first_small_ending_ply"] is None
    assert g["end_ply"] == 29 and g["end_rule"] == "kings_vs_king" and g["end_result"] == "1/2-1/2"
    assert g["result_changed"] is True  # played on and scored 2-0
    auto = [(e["ply"], e["rule"], e["kind"], e["outcome"]) for e in events if e["kind"] == "automatic"]
    assert auto == [(29, "kings_vs_king", "automatic", "automatic")]


def test_kings_vs_king_ratio_set_by_promotion():
    # White kings b8 (1), d8 (2) and a man on g7 (8); Black king h2 (28). Ply 1: g7-h8 (8-4)
    # promotes: 3 kings vs 1 from ply 1, black to move. Counting from there, white's moves are
    # plies 2, 4, ..., its 15th move is ply 1 + 2*15 = 31.
    cycle = ["28-32", "2-13", "32-28", "13-2"]
    moves = ["8-4"] + cycle * 8
    games, _ = _run(_pdn("W:WK1,K2,8:BK28", moves, "1-1"))
    (g,) = games
    assert g["plies"] == 33
    assert g["first_kings_vs_king_ply"] == 31
    assert g["end_ply"] == 31 and g["result_changed"] is False


def test_kings_vs_king_each_player_edition():
    # fmjd_64 (lidraughts): 15 moves by each player = 30 plies after ply 0 -> 30; the same
    # 30 plies are also 15 moves of kings only (7.2.5, `king_moves`).
    games, events = _run(_pdn("W:WK13,K1,K2:BK28", KVK_CYCLE * 8, "2-0"), editions=("fmjd_64",))
    (g,) = games
    assert g["first_kings_vs_king_ply"] == 30
    assert g["end_ply"] == 30
    auto = sorted((e["ply"], e["rule"]) for e in events if e["kind"] == "automatic")
    assert auto == [(30, "king_moves"), (30, "kings_vs_king")]


# ---------------------------------------------------------------------------------------------
# 32.1 (fourth bullet): 3 kings vs a lone king on the main diagonal a1-h8, 5th move


def test_main_diagonal_5th_move():
    # White kings a5 (13), b8 (1), d8 (2); Black king h8 (4), on the main diagonal, shuttling
    # h8-g7 (4-8, still on the diagonal). Ratio from ply 0, white to move: white's 5th move is
    # ply 2*5 - 1 = 9 -> drawn at ply 9 (the 15-move rule would only come at 29).
    cycle = ["13-31", "4-8", "31-13", "8-4"]
    games, _ = _run(_pdn("W:WK13,K1,K2:BK4", cycle * 3, "1-1"))
    (g,) = games
    assert g["plies"] == 12
    assert g["first_main_diagonal_ply"] == 9
    assert g["first_kings_vs_king_ply"] is None
    assert g["end_ply"] == 9 and g["end_rule"] == "main_diagonal"


def test_main_diagonal_count_starts_when_king_enters():
    # Same white kings; the black king starts on h6 (12), off the main diagonal. Ply 1: white
    # 13-31; ply 2: black h6-g7 (12-8), g7 is on the diagonal: from ply 2 on it is 3 kings vs a
    # king on the main diagonal with white (stronger) to move, so white's 5th move counted from
    # there is ply 2 + 2*5 - 1 = 11 (not 9: the plies before the king stood on the diagonal do
    # not count).
    moves = ["13-31", "12-8", "31-13", "8-4", "13-31", "4-8", "31-13", "8-4", "13-31", "4-8", "31-13", "8-4"]
    games, _ = _run(_pdn("W:WK13,K1,K2:BK12", moves, "1-1"))
    (g,) = games
    assert g["status"] == "ok"
    assert g["first_main_diagonal_ply"] == 11


# ---------------------------------------------------------------------------------------------
# 32.1 (fifth bullet): 2 kings, or king + man, vs a man or a king: 10th move

SMALL_CYCLE = ["13-31", "1-5", "31-13", "5-1"]  # white a5-e1, black b8-a7


@pytest.mark.parametrize("white", ["K13,K28", "K13,28"])  # 2 kings / king + man (h2) vs king b8
def test_small_ending_10th_move(white):
    # From ply 0, white (stronger) to move: its 10th move is ply 2*10 - 1 = 19.
    games, _ = _run(_pdn(f"W:W{white}:BK1", SMALL_CYCLE * 6, "1-1"))
    (g,) = games
    assert g["status"] == "ok" and g["plies"] == 24
    assert g["first_small_ending_ply"] == 19
    assert g["end_ply"] == 19 and g["end_rule"] == "small_ending" and g["result_changed"] is False


def test_small_ending_not_reached():
    # The game ends (drawn) after white's 9th move (ply 17, then black's reply ply 18): no rule.
    games, _ = _run(_pdn("W:WK13,K28:BK1", (SMALL_CYCLE * 5)[:18], "1-1"))
    (g,) = games
    assert g["plies"] == 18 and g["first_small_ending_ply"] is None and g["end_ply"] is None
