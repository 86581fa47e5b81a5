"""Trends across many dumps: one source per month (as a directory of monthly Lichess dumps), one
month missing. The month series comes from the games' own dates, the missing month is a gap
(0 games, no rate, a break in the line), and the Lichess fivefold date is marked.

Fixture: 420 games of lichess_small.pgn, 60 per month from 2019-09 to 2020-04 with their UTCDate
and Date tags set to the 15th of their month, 2019-12 left out; each month its own file.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re

import polars as pl
import pytest

from analyzer import report
from conftest import need
from report_checks import cli, raw_joined, wilson_roots

SMALL = need("lichess_small.pgn")
MONTHS = [(2019, 9), (2019, 10), (2019, 11), (2019, 12), (2020, 1), (2020, 2), (2020, 3), (2020, 4)]
MISSING = (2019, 12)
PER_MONTH = 60


@pytest.fixture(scope="module")
def months(tmp_path_factory):
    d = tmp_path_factory.mktemp("months")
    with open(SMALL, encoding="utf-8", errors="replace") as fh:
        games = [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", fh.read()) if g.strip()]
    inputs = []
    for i, (y, m) in enumerate(MONTHS):
        if (y, m) == MISSING:
            continue
        chunk = games[i * PER_MONTH : (i + 1) * PER_MONTH]
        text = "".join(re.sub(r'\[(UTCDate|Date) "[^"]*"\]', rf'[\1 "{y}.{m:02d}.15"]', g) for g in chunk)
        p = d / f"lichess_db_standard_rated_{y}-{m:02d}.pgn"
        p.write_text(text, encoding="utf-8")
        inputs.append(str(p))
    out = d / "out"
    proc, summary = cli("scan", *inputs, "--out", str(out), "--edition", "lichess,fide_2018")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert summary["games"] == PER_MONTH * (len(MONTHS) - 1)
    path = report.write_report(str(out))
    return {"out": str(out), "dir": os.path.dirname(path), "index": path}


def test_one_source_per_month(months):
    cov = pl.read_parquet(os.path.join(months["dir"], "coverage.parquet"))
    assert cov["source"].n_unique() == len(MONTHS) - 1


def test_month_series_values_and_gap(months):
    per = (
        pl.read_parquet(os.path.join(months["dir"], "summary_by_period.parquet"))
        .filter(
            (pl.col("platform") == "lichess")
            & (pl.col("edition") == "lichess")
            & (pl.col("time_control_class") == "all")
        )
        .sort("period")
    )
    assert per["period_kind"].unique().to_list() == ["month"]
    assert per["period"].to_list() == [dt.date(y, m, 1) for y, m in MONTHS]
    j = raw_joined(months["out"]).filter(pl.col("edition") == "lichess")
    for r in per.iter_rows(named=True):
        key = (r["period"].year, r["period"].month)
        rows = j.filter((pl.col("date").dt.year() == key[0]) & (pl.col("date").dt.month() == key[1]))
        if key == MISSING:
            assert r["games"] == 0 and rows.height == 0
            assert r["missed_rate"] is None and r["claimed_rate"] is None and r["missed_ci_low"] is None
            continue
        assert r["games"] == rows.height >= PER_MONTH - 3  # a game without moves is not analyzed
        assert r["missed"] == rows["first_missed_claim_ply"].is_not_null().sum()
        assert r["claimed"] == rows["claimed"].sum()
        lo, hi = wilson_roots(r["claimed"], r["games"])
        assert (r["claimed_ci_low"], r["claimed_ci_high"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))


def test_trend_figure_data_and_gap(months):
    df = pl.read_csv(os.path.join(months["dir"], "figures", "trend_chess_lichess.csv"), infer_schema_length=None)
    claimed = df.filter((pl.col("row") == "claimed") & pl.col("editions").str.contains("lichess"))
    assert claimed["x"].to_list() == [f"{y}-{m:02d}" for y, m in MONTHS]
    gap = claimed.filter(pl.col("x") == "2019-12").row(0, named=True)
    assert gap["n"] == 0 and gap["rate"] is None
    j = raw_joined(months["out"]).filter(pl.col("edition") == "lichess")
    assert claimed.filter(pl.col("n") > 0).height == len(MONTHS) - 1  # every month with games is checked
    for r in claimed.filter(pl.col("n") > 0).iter_rows(named=True):
        y, m = map(int, r["x"].split("-"))
        rows = j.filter((pl.col("date").dt.year() == y) & (pl.col("date").dt.month() == m))
        assert (r["k"], r["n"]) == (rows["claimed"].sum(), rows.height)
        lo, hi = wilson_roots(r["k"], r["n"])
        assert r["ci_low"] == pytest.approx(lo, abs=1e-9) and r["ci_high"] == pytest.approx(hi, abs=1e-9)


def test_line_breaks_at_the_gap_and_fivefold_date_marked(months):
    from matplotlib.dates import date2num
    from matplotlib.lines import Line2D

    figs = {f.name: f for f in report.build_figures(months["out"])}
    fig = figs["trend_chess_lichess"].fig
    try:
        ax = next(a for a in fig.axes if a.get_title(loc="left").startswith("claimed"))
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(MONTHS)]
        assert lines
        for ln in lines:
            xs = [date2num(x) for x in ln.get_xdata()]
            ys = list(ln.get_ydata())
            gap = xs.index(date2num(dt.date(2019, 12, 15)))
            assert math.isnan(ys[gap]) and not math.isnan(ys[gap - 1]) and not math.isnan(ys[gap + 1])
        marks = [
            ln
            for ln in ax.get_lines()
            if isinstance(ln, Line2D) and len(set(map(float, date2num(ln.get_xdata())))) == 1
        ]
        assert any(float(date2num(ln.get_xdata()[0])) == date2num(dt.date(2020, 1, 14)) for ln in marks)
    finally:
        import matplotlib.pyplot as plt

        for f in figs.values():
            plt.close(f.fig)


@pytest.mark.slow
def test_hundreds_of_sources_in_bounded_memory(months, tmp_path):
    """300 sources (copies of one month's tables): the report reads one batch of sources at a
    time; its peak memory stays far below what 300 sources' tables take (checked in a child)."""
    import shutil
    import subprocess
    import sys

    out = tmp_path / "many"
    for table in ("games", "verdicts", "events"):
        src = next(p for p in sorted(os.listdir(os.path.join(months["out"], table))))
        for i in range(300):
            shutil.copytree(os.path.join(months["out"], table, src), out / table / f"source=m{i:03d}")
    code = (
        "import resource, sys; from analyzer import report; report.write_report(sys.argv[1]); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = pl.read_parquet(out / "report" / "summary_by_source.parquet")
    assert s["source"].n_unique() == 300  # `source` is the folder (the hive key), m000 ... m299
    assert int(proc.stdout.split()[-1]) < 1_500_000  # KiB
