"""Clock comments: Lichess writes "{ [%clk H:MM:SS] }" after every move, and "{ [%eval V] [%clk
H:MM:SS] }" in games with an engine analysis (a quarter of lichess_sample's comments). The replay
reads both layouts in place 8 bytes at a time and hands every other comment to the general
reader; near-misses of the layouts must read the same as that reader. Checked against
python-chess (`node.clock()`) per position, and draw offers against the comments' text."""

from __future__ import annotations

import polars as pl

import reference as ref
from conftest import analyze

MOVES = [
    *("e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7"),
    *("Re1", "b5", "Bb3", "d6", "c3", "O-O", "h3", "Na5", "Bc2", "c5"),
]
COMMENTS = [
    "{ [%eval 0.17] [%clk 0:00:30] }",
    "{ [%eval -1.25] [%clk 0:00:29] }",
    "{ [%eval #3] [%clk 1:02:03] }",
    "{ [%eval #-2] [%clk 0:10:00] }",
    "{ [%eval 0.17] [%clk 0:00:30.5] }",  # a fraction: the general reader
    "{ [%eval 0.17] [%clk 0:00:27] White offers draw }",  # more after the clock
    "{ [%eval 0.17][%clk 0:00:26] }",  # no space between
    "{ [%eval ] [%clk 0:00:25] }",  # no value
    "{ [%eval 0.17] [%clk 0:00:24]}",  # no space before the brace
    "{ [%eval 0.1x] [%clk 0:00:23] }",  # not an evaluation
    "{ [%eval 0.17] [%clk 10:00:22] }",  # two-digit hours
    "{ [%clk 0:00:21] }",
    "{ [%eval 0.17] [%clk 0:00:2] }",  # one-digit seconds
    "{ [%eval 0.17] [%clk 0:00:20] } { Black offers draw }",
    "{ [%eval 12.345678901234567890] [%clk 0:00:19] }",  # a value longer than the fast path reads
    "{ [%eval 0.17] [%clk 0:0a:18] }",  # not a clock: no reading (python-chess: none either)
    "{ [%eval 0.17] [%clk 0:00:17] [%clk 0:00:16] }",  # the first %clk counts
    "{ [%eval 0.17] [%clk 0:00:15] }",
    "{ [%eval -0.01] [%clk 0:00:14] }",
    "{ [%clk 0:00:13] }",
]
OFFER_PLIES = [6, 14]  # the plies whose comment says "offers draw"


def _game() -> str:
    body = []
    for k, (san, comment) in enumerate(zip(MOVES, COMMENTS)):
        number = f"{k // 2 + 1}. " if k % 2 == 0 else ""
        body.append(f"{number}{san} {comment}")
    head = '[Event "clocks"]\n[Site "https://lichess.org/x"]\n[White "W"]\n[Black "B"]\n[Result "*"]\n\n'
    return head + " ".join(body) + " *\n\n"


def test_clock_comment_layouts_read_as_python_chess():
    text = _game()
    (oracle,) = ref.analyze_text(text)
    res = analyze(text.encode(), keep_facts=True)
    (engine,) = ref.engine_games(res)
    assert engine.columns["status"] == "ok" and engine.columns["plies"] == len(MOVES)
    # the case with no reading: python-chess gives None, the replay keeps the side's last one
    expect = list(oracle.clock)
    bad = COMMENTS.index("{ [%eval 0.17] [%clk 0:0a:18] }") + 1  # ply of the move, 1-based
    assert expect[bad + 1] is None
    expect[bad + 1] = expect[bad - 1]
    assert engine.clock == expect
    assert engine.clock[2:5] == [30.0, 29.0, 3723.0]


def test_draw_offers_after_clock_comments():
    res = analyze(_game().encode())
    ev = pl.from_arrow(res.events).with_columns(pl.col(pl.Categorical).cast(pl.String))
    offers = ev.filter(pl.col("rule") == "offer").sort("ply")
    assert offers["ply"].to_list() == OFFER_PLIES
