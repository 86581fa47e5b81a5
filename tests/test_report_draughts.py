"""The draughts section: the section 32 draw kinds counted per edition, checked against what the
rule text says of hand-built games (the positions of tests/test_draughts_rules.py, where each
expected ply is derived from the rules) and against the raw Parquet files.

Six games, each twice (12 games, Site a place: over the board), under fshr_russian:
  threefold shuttle (1-1)          threefold arises; no king ending
  balance 32 moves (2-0)           the balance of forces unchanged for 32 moves: a claim, not an end
  3 kings vs king (2-0)            15th move of the stronger side: drawn automatically (result changes)
  3 kings vs king on a1-h8 (1-1)   5th move: drawn automatically
  2 kings vs king (1-1)            10th move: drawn automatically
  king + man vs king (1-1)         10th move: drawn automatically
"""

from __future__ import annotations

import html
import os
import re

import polars as pl
import pytest

from analyzer import report
from conftest import nonempty
from report_checks import cli, raw, raw_joined, wilson_roots


def _pdn(fen: str, moves: list[str], result: str) -> str:
    body = " ".join(f"{i // 2 + 1}. " + " ".join(moves[i : i + 2]) for i in range(0, len(moves), 2))
    return (
        f'[Event "test"]\n[Site "Moscow"]\n[GameType "25"]\n[Result "{result}"]\n[FEN "{fen}"]\n\n{body} {result}\n\n'
    )


CYCLE = ["30-21", "3-12", "21-30", "12-3"]
BAL = ["3-12", "30-21", "12-3", "21-30"]
KVK = ["13-31", "28-32", "31-13", "32-28"]
DIAG = ["13-31", "4-8", "31-13", "8-4"]
SMALL = ["13-31", "1-5", "31-13", "5-1"]
GAMES = [
    _pdn("W:WK30,28:BK3,5", CYCLE * 2 + CYCLE[:2], "1-1"),
    _pdn("W:WK30,27,28:BK3,24,5", ["27x20"] + BAL * 16 + BAL[:2], "2-0"),
    _pdn("W:WK13,K1,K2:BK28", KVK * 8, "2-0"),
    _pdn("W:WK13,K1,K2:BK4", DIAG * 3, "1-1"),
    _pdn("W:WK13,K28:BK1", SMALL * 6, "1-1"),
    _pdn("W:WK13,28:BK1", SMALL * 6, "1-1"),
]
N = 2 * len(GAMES)
# games (of N) where each rule arose / was the first automatic draw, under fshr_russian (see above)
REACHED = {"kings_vs_king": 2, "main_diagonal": 2, "small_ending": 4, "balance": 2}
ENDED = {"kings_vs_king": 2, "main_diagonal": 2, "small_ending": 4, "balance": 0, "threefold": 0}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("draughts")
    (d / "endings.pdn").write_text("".join(GAMES * 2), encoding="utf-8")
    out = d / "out"
    proc, summary = cli("scan", str(d / "endings.pdn"), "--out", str(out), "--edition", "fshr_russian,fmjd_64")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert summary["games"] == N
    path = report.write_report(str(out))
    return {"out": str(out), "dir": os.path.dirname(path), "index": path}


def _rules(run):
    return pl.read_parquet(os.path.join(run["dir"], "rules.parquet")).filter(pl.col("game_type") == "russian_draughts")


def test_section_32_counts_follow_the_rule_text(run):
    r = _rules(run).filter((pl.col("platform") == "otb") & (pl.col("edition") == "fshr_russian"))
    got = {x["rule"]: x for x in r.iter_rows(named=True)}
    for rule, n in REACHED.items():
        assert got[rule]["reached"] == n and got[rule]["games"] == N, rule
    for rule, n in ENDED.items():
        assert got[rule]["ended"] == n, rule
    assert got["balance"]["games_missed"] == 2  # claimable from ply 65, played on
    s = (
        pl.read_parquet(os.path.join(run["dir"], "summary_by_population.parquet"))
        .filter((pl.col("game_type") == "russian_draughts") & (pl.col("edition") == "fshr_russian"))
        .row(0, named=True)
    )
    # decisive: the balance and 3-kings games (x2); the 3-kings game would have been drawn first
    assert (s["decisive"], s["result_changed"]) == (4, 2)


def test_rules_table_matches_raw(run):
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "russian_draughts")
    e = raw(run["out"], "events")
    cols = {
        "threefold": "first_threefold_ply",
        "balance": "first_balance_ply",
        "kings_vs_king": "first_kings_vs_king_ply",
        "main_diagonal": "first_main_diagonal_ply",
        "small_ending": "first_small_ending_ply",
    }
    rules = nonempty(_rules(run), "russian_draughts rows in rules.parquet")
    assert set(rules["edition"]) == {"fshr_russian", "fmjd_64"} and set(cols) <= set(rules["rule"])
    for x in rules.iter_rows(named=True):
        rows = j.filter((pl.col("platform") == x["platform"]) & (pl.col("edition") == x["edition"]))
        assert x["games"] == rows.height == N, x  # every game is over the board: each row counts all N
        if x["rule"] in cols:
            assert x["reached"] == rows[cols[x["rule"]]].is_not_null().sum(), x
        else:  # king_moves: games with its automatic event
            ev = e.filter(
                (pl.col("edition") == x["edition"]) & (pl.col("rule") == x["rule"]) & (pl.col("kind") == "automatic")
            )
            assert x["reached"] == ev.select("source", "game_index").unique().height
        assert x["ended"] == (rows["end_rule"] == x["rule"]).sum(), x
        if x["games"]:
            lo, hi = wilson_roots(x["reached"], x["games"])
            assert x["reached_ci_low"] == pytest.approx(lo, abs=1e-9) and x["reached_ci_high"] == pytest.approx(
                hi, abs=1e-9
            )


def test_draughts_figure_and_page(run):
    df = pl.read_csv(os.path.join(run["dir"], "figures", "rules_russian_draughts.csv"), infer_schema_length=None)
    fshr = {x["row"]: x for x in df.filter(pl.col("series") == "fshr_russian").iter_rows(named=True)}
    assert fshr["small_ending"]["k"] == 4 and fshr["small_ending"]["n"] == N
    assert fshr["king_moves"]["applicable"] is False and fshr["king_moves"]["k"] is None  # no such rule in 32
    with open(run["index"], encoding="utf-8") as fh:
        page = fh.read()
    section = page[page.index('id="draughts"') : page.index('id="audit"')]
    # 4 of 12 games: 33 % (two significant digits); 2 of 12: 17 %
    text = html.unescape(re.sub(r"<span class=\"nw\">([^<]*)</span>", r"\1", section))  # numbers kept whole
    row = re.search(
        r"fshr_russian</td><td class=\"l\">2 kings, or king \+ man, vs one piece \(32\.1\)</td>\s*"
        r"<td>12</td><td class=\"\">4 of 12 \(33 %\)",
        text,
    )
    assert row, text[:3000]
    assert "2 of 12 (17 %)" in text
    assert 'id="fig-rules_russian_draughts"' in section and 'id="fig-outcomes_russian_draughts"' in section


def test_draughts_figures_lay_out_and_text_never_overlaps(run):
    from analyzer.report import figures
    from report_checks import check_print_figures

    figs = report.build_figures(run["out"])
    assert {f.name for f in figs} >= {"rules_russian_draughts", "outcomes_russian_draughts"}
    check_print_figures(figs, figures.freeze_layout)
