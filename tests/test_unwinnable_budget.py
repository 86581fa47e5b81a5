"""`--unwinnable-budget` (Config.unwinnable_budget, analyze_bytes(unwinnable_budget=)): the work
the unwinnability search may spend on the final position of a game lost on time. The static
proofs do not depend on it; the search's answers do, so a scan with another budget recomputes
its units instead of reusing them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from analyzer.api import analyze_bytes, scan_games
from conftest import nonempty, scan

# White wins on time with a queen (the search finds a mate: winnable); White wins on time with a
# bare king (insufficient material, a static proof: unwinnable whatever the budget).
QUEEN = ("4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1", "1. Qg5 Kd7")
BARE_KING = ("8/8/8/4k3/q7/8/8/4K3 w - - 0 1", "1. Kf2 Qd4+ 2. Kg2")


def _pgn(fen: str, moves: str) -> bytes:
    return (
        f'[Event "t"]\n[Site "https://lichess.org/abcdefgh"]\n[Result "1-0"]\n[FEN "{fen}"]\n'
        f'[SetUp "1"]\n[Termination "Time forfeit"]\n[TimeControl "60+0"]\n\n{moves} 1-0\n\n'
    ).encode()


TEXT = _pgn(*QUEEN) + _pgn(*BARE_KING)


def _frame(table) -> pl.DataFrame:
    """A polars frame of an Arrow table (analyze_bytes) or a frame (scan_games), not empty."""
    return nonempty(table if isinstance(table, pl.DataFrame) else pl.from_arrow(table))


def _answers(games) -> list[tuple]:
    g = _frame(games)
    return list(zip(g["timeout_winner_can_mate"].cast(pl.String), g["timeout_certificate"]))


@pytest.mark.parametrize("budget", [0, 1])
def test_a_spent_budget_leaves_the_search_unknown_and_keeps_the_static_proofs(budget):
    default = analyze_bytes(TEXT, editions=("fide_2018",))
    assert _answers(default.games)[0][0] == "winnable"
    res = analyze_bytes(TEXT, editions=("fide_2018",), unwinnable_budget=budget)
    assert _answers(res.games) == [("unknown", "unknown:budget"), ("unwinnable", "unwinnable:insufficient_material")]
    v = _frame(res.verdicts)
    # not proved either way: no answer for 6.9 (null), and the bare king's loss is a draw
    assert v["timeout_unwinnable"].to_list() == [None, True]
    assert v["end_rule"].to_list() == [None, "timeout_vs_unwinnable"]


def test_the_default_budget_is_the_documented_one():
    """The default is the budget the README and `analyzer scan --help` name (20,000 nodes)."""
    from analyzer.kinds.chess.analyze import UNWINNABLE_BUDGET

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert f"final position, {UNWINNABLE_BUDGET:,} nodes at most (`--unwinnable-budget N`)" in readme
    helptext = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", "--help"], capture_output=True, text=True, timeout=600
    ).stdout
    assert f"default {UNWINNABLE_BUDGET})" in " ".join(helptext.split())
    a = analyze_bytes(TEXT, editions=("fide_2018",))
    b = analyze_bytes(TEXT, editions=("fide_2018",), unwinnable_budget=UNWINNABLE_BUDGET)
    assert a.games.equals(b.games) and a.verdicts.equals(b.verdicts) and a.events.equals(b.events)


def test_a_scan_with_another_budget_recomputes(tmp_path):
    src = tmp_path / "t.pgn"
    src.write_bytes(TEXT)
    out = tmp_path / "out"
    _, code = scan(src, out, unwinnable_budget=0)
    assert code == 0
    first = scan_games(str(out)).sort("game_index").collect()
    assert _answers(first)[0] == ("unknown", "unknown:budget")
    # the default budget: the units of budget 0 are not reused, the answer is the search's
    _, code = scan(src, out)
    assert code == 0
    again = scan_games(str(out)).sort("game_index").collect()
    assert _answers(again)[0][0] == "winnable"


def test_the_command_line_option(tmp_path):
    src = tmp_path / "t.pgn"
    src.write_bytes(TEXT)
    out = tmp_path / "out"
    run = [sys.executable, "-m", "analyzer", "scan", str(src), "--out", str(out), "--workers", "1"]
    r = subprocess.run(run + ["--unwinnable-budget", "-1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "--unwinnable-budget" in r.stderr and "at least 0" in r.stderr
    r = subprocess.run(run + ["--unwinnable-budget", "0"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _answers(scan_games(str(out)).sort("game_index").collect())[0] == ("unknown", "unknown:budget")
    # verify's repair line repeats the option (a repair must compute the same answers)
    victim = sorted((out / "games").rglob("part-*.parquet"))[0]
    victim.unlink()
    verify = [sys.executable, "-m", "analyzer", "verify", str(out)]
    v = subprocess.run(verify, capture_output=True, text=True, timeout=600)
    assert v.returncode == 1, v.stdout
    (line,) = [ln.strip() for ln in v.stdout.splitlines() if ln.strip().startswith("repair: ")]
    assert "--unwinnable-budget 0" in line, line
