"""What a reviewer checks in the report (issue 29), each against the raw tables or the drawn
artists, never against the report's own code:

  - summary_cube: the tidy table (platform x game kind x edition x time-control class x rating
    band x month) equals the raw games, and every point of every figure is a sum of its rows;
  - the period summary carries the time-control class; a shift of the class mix is found where
    it was made, noted on the page, and the series is also drawn per class;
  - one colour and marker per series in every figure, legends in one order; the Lichess
    fivefold date only on Lichess charts; year ticks under yearly points;
  - the audit's headline counts contradictions only (a Lichess agreed draw after a claimable one
    breaks no rule); games without a time control counted on the page; a title from the data.

Fixture: 720 lichess_small games re-dated 60 a month from 2019-07 to 2020-06, 90 % bullet in the
first six months and 90 % blitz in the last six (a mix shift at 2020-01, with 2020-01-14 inside
the Lichess range); 120 of them re-dated and re-sited over the board, 40 a year in 2019-2021;
the edge_cases games but Lichess's (Chess.com, over the board, other sites,
sparse dates); and a Lichess game drawn by agreement after a threefold repetition could have been
claimed. Editions fide_2018, fide_2014, lichess.
"""

from __future__ import annotations

import datetime as dt
import html
import itertools
import os
import re

import polars as pl
import pytest

from analyzer import report
from conftest import need, shared_path
from report_checks import MEASURE_KN, cli, raw_joined, split_games

SMALL = need("lichess_small.pgn")
EDGE = need("edge_cases.pgn")
MONTHS = [(2019, m) for m in range(7, 13)] + [(2020, m) for m in range(1, 7)]
PER_MONTH = 60
LEAD_GAME = (
    '[Event "Rated Blitz game"]\n[Site "https://lichess.org/leadgame"]\n[UTCDate "2020.03.15"]\n'
    '[White "a"]\n[Black "b"]\n[Result "1/2-1/2"]\n[TimeControl "180+0"]\n[Termination "Normal"]\n\n'
    "1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. e4 e5 1/2-1/2\n\n"
)


def _retag(game: str, y: int, m: int, tc: str) -> str:
    game = re.sub(r'\[(UTCDate|Date) "[^"]*"\]', rf'[\1 "{y}.{m:02d}.15"]', game)
    return re.sub(r'\[TimeControl "[^"]*"\]', f'[TimeControl "{tc}"]', game)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("review")
    with open(SMALL, encoding="utf-8", errors="replace") as fh:
        games = split_games(fh.read())
    out_text = []
    for i, (y, m) in enumerate(MONTHS):
        for j, g in enumerate(games[i * PER_MONTH : (i + 1) * PER_MONTH]):
            bullet = (j < 54) == (i < 6)  # 90 % bullet, then 90 % blitz
            out_text.append(_retag(g, y, m, "60+0" if bullet else "180+0"))
    (d / "lichess.pgn").write_text("".join(out_text) + LEAD_GAME, encoding="utf-8")
    otb = []  # over the board, 40 games a year in 2019-2021, one or two a month: a yearly series
    for k, g in enumerate(games[len(MONTHS) * PER_MONTH : len(MONTHS) * PER_MONTH + 120]):
        g = re.sub(r'\[Site "[^"]*"\]', '[Site "Wijk aan Zee NED"]', g)
        otb.append(_retag(g, 2019 + k // 40, 1 + k % 12, "5400+30"))
    (d / "otb.pgn").write_text("".join(otb), encoding="utf-8")
    with open(EDGE, encoding="utf-8", errors="replace") as fh:  # their Lichess games would thin the months
        other = [g for g in split_games(fh.read()) if "lichess.org" not in g.split("\n\n", 1)[0]]
    (d / "edge.pgn").write_text("".join(other), encoding="utf-8")
    out = d / "tables-folder-name"
    proc, _ = cli(
        "scan",
        str(d / "lichess.pgn"),
        str(d / "otb.pgn"),
        str(d / "edge.pgn"),
        "--out",
        str(out),
        "--edition",
        "fide_2018,fide_2014,lichess",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    path = report.write_report(str(out))
    return {"out": str(out), "dir": os.path.dirname(path), "index": path}


def _rt(run, name):
    return pl.read_parquet(os.path.join(run["dir"], name + ".parquet"))


def _fig_csv(run, name):
    return pl.read_csv(
        os.path.join(run["dir"], "figures", name + ".csv"), infer_schema_length=None, schema_overrides={"x": pl.String}
    )


def _text(run) -> str:
    with open(run["index"], encoding="utf-8") as fh:
        return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<svg.*?</svg>", "", fh.read(), flags=re.S)))


def _raw(run) -> pl.DataFrame:
    return raw_joined(run["out"]).with_columns(
        pl.col("time_control_class").fill_null("unknown"),
        pl.col("rating_band").fill_null("unknown"),
        pl.col("date").dt.truncate("1mo").alias("month"),
    )


# ---------------------------------------------------------------------------------------------
# summary_cube and the figures drawn from it


CUBE_KEYS = ["game_type", "platform", "edition", "time_control_class", "rating_band", "month"]


def test_summary_cube_equals_the_raw_games(run):
    cube = _rt(run, "summary_cube")
    assert pl.read_csv(os.path.join(run["dir"], "summary_cube.csv")).height == cube.height
    j = _raw(run)
    exp = j.group_by(CUBE_KEYS).agg(
        pl.len().alias("games"),
        pl.col("first_missed_claim_ply").is_not_null().sum().alias("missed"),
        pl.col("claimed").sum().alias("claimed"),
        pl.col("result").is_in(["1-0", "0-1"]).sum().alias("decisive"),
    )
    got = cube.select(*CUBE_KEYS, "games", "missed", "claimed", "decisive")
    key = pl.concat_str([pl.col(k).cast(pl.String).fill_null("∅") for k in CUBE_KEYS], separator="|")
    a = dict(exp.select(key.alias("k"), pl.struct("games", "missed", "claimed", "decisive")).iter_rows())
    b = dict(got.select(key.alias("k"), pl.struct("games", "missed", "claimed", "decisive")).iter_rows())
    assert cube["games"].sum() == j.height > 0  # the cube holds every (game, edition), not none
    assert a == b
    for m in ("missed", "claimed"):
        rate = cube.filter(pl.col("games") > 0).select((pl.col(m) / pl.col("games") - pl.col(f"{m}_rate")).abs().max())
        assert rate.item() < 1e-12
        assert {f"{m}_ci_low", f"{m}_ci_high"} <= set(cube.columns)


def _from_cube(cube: pl.DataFrame, row: dict, kind_of_x: str | None) -> tuple[int, int]:
    """(k, n) of a figure point summed from the cube."""
    k, n = MEASURE_KN[row["row"]]
    ed = row["editions"].split(",")[0]
    c = cube.filter((pl.col("platform") == row["column"]) & (pl.col("edition") == ed))
    if row["figure"].startswith(("time_control_class_", "rating_band_", "missed_by_time_control_class_")):
        dim = "rating_band" if row["figure"].startswith("rating") else "time_control_class"
        c = c.filter(pl.col(dim) == row["x"])
    if row["figure"].startswith("trend"):
        if row.get("time_control_class") not in (None, "all"):
            c = c.filter(pl.col("time_control_class") == row["time_control_class"])
        if len(row["x"]) == 4:
            c = c.filter(pl.col("month").dt.year() == int(row["x"]))
        else:
            y, mo = map(int, row["x"].split("-"))
            c = c.filter((pl.col("month").dt.year() == y) & (pl.col("month").dt.month() == mo))
    return int(c[k].sum()), int(c[n].sum())


def test_every_figure_point_is_a_sum_of_summary_cube(run):
    cube = _rt(run, "summary_cube").filter(pl.col("game_type") == "chess")
    names = [f[:-4] for f in os.listdir(os.path.join(run["dir"], "figures")) if f.endswith(".csv")]
    checked = 0
    for name in names:
        df = _fig_csv(run, name)
        for r in df.filter(pl.col("applicable") & pl.col("n").is_not_null()).iter_rows(named=True):
            assert (r["k"], r["n"]) == _from_cube(cube, r, None), (name, r)
            checked += 1
    assert checked > 100
    assert any(n.startswith("trend_by_class_") for n in names)


def test_period_summary_by_time_control_class(run):
    per = _rt(run, "summary_by_period").filter(
        (pl.col("platform") == "lichess") & (pl.col("edition") == "lichess") & pl.col("games").gt(0)
    )
    assert {"all", "bullet", "blitz"} <= set(per["time_control_class"])
    j = _raw(run).filter((pl.col("platform") == "lichess") & (pl.col("edition") == "lichess"))
    for r in per.filter(pl.col("time_control_class") != "all").iter_rows(named=True):
        rows = j.filter((pl.col("month") == r["period"]) & (pl.col("time_control_class") == r["time_control_class"]))
        assert (r["games"], r["claimed"]) == (rows.height, rows["claimed"].sum()), r
    total = per.filter(pl.col("time_control_class") == "all").select("period", "games")
    parts = per.filter(pl.col("time_control_class") != "all").group_by("period").agg(pl.col("games").sum())
    assert dict(total.iter_rows()) == dict(parts.iter_rows())


def test_mix_shift_found_noted_and_split_by_class(run):
    shifts = _rt(run, "mix_shifts").filter(pl.col("platform") == "lichess")
    assert shifts.height == 1
    s = shifts.row(0, named=True)
    assert (s["period_from"], s["period_to"]) == (dt.date(2019, 12, 1), dt.date(2020, 1, 1))
    assert s["distance"] == pytest.approx(0.8, abs=0.06)  # 90/10 -> 10/90 of the period's games
    shift = r"2019-12 → 2020-01: bullet 9\d % → (9\.\d|1\d) %, blitz (9\.\d|1\d) % → [89]\d %"
    assert re.fullmatch(shift, s["text"]), s["text"]
    text = _text(run)
    assert "The time-control mix shifts" in text and "2019-12 → 2020-01" in text
    by = _fig_csv(run, "trend_by_class_chess_lichess")
    assert {"bullet", "blitz"} <= set(by["time_control_class"])


# ---------------------------------------------------------------------------------------------
# One look per series, context lines, ticks


def _figures(run):
    return {f.name: f for f in report.build_figures(run["out"])}


@pytest.fixture(scope="module")
def figs(run):
    import matplotlib.pyplot as plt

    f = _figures(run)
    yield f
    for x in f.values():
        plt.close(x.fig)


def _legend_entries(fig) -> list[tuple[str, tuple]]:
    """(label, (colour, marker, fill)) of every series entry in a figure's legends."""
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    out = []
    for leg in fig.legends:
        for h, t in zip(leg.legend_handles, leg.get_texts()):
            if isinstance(h, Line2D) and h.get_marker() not in (None, "None", "") and h.get_linestyle() != "None":
                out.append((t.get_text(), (to_hex(h.get_color()), h.get_marker(), to_hex(h.get_markerfacecolor()))))
    return out


def test_one_look_per_series_and_one_legend_order(figs):
    look_of: dict[str, tuple] = {}
    label_of: dict[tuple, str] = {}
    orders = []
    for name, f in figs.items():
        entries = _legend_entries(f.fig)
        orders.append([lab for lab, _ in entries])
        for lab, look in entries:
            assert look_of.setdefault(lab, look) == look, (name, lab, look, look_of[lab])
            assert label_of.setdefault(look, lab) == lab, (name, look, lab, label_of[look])
    assert len(look_of) >= 2
    rank: dict[tuple[str, str], int] = {}
    for order in orders:
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                assert rank.setdefault((a, b), 1) == 1 and (b, a) not in rank, (a, b)


def _vertical_lines_at(fig, day: dt.date) -> int:
    from matplotlib.dates import date2num

    n = 0
    for ax in fig.axes:
        for ln in ax.get_lines():
            xs = ln.get_xdata()
            if len(xs) == 2 and len(set(map(float, date2num(xs)))) == 1 and float(date2num(xs[0])) == date2num(day):
                n += 1
    return n


def test_lichess_fivefold_date_only_on_lichess_charts(figs):
    trends = {n: f for n, f in figs.items() if n.startswith("trend_chess_")}
    assert _vertical_lines_at(trends["trend_chess_lichess"].fig, dt.date(2020, 1, 14)) >= 3
    others = [n for n in trends if n != "trend_chess_lichess"]
    assert others
    for n in others:
        assert _vertical_lines_at(trends[n].fig, dt.date(2020, 1, 14)) == 0, n
        assert "fivefold" not in trends[n].caption, n


def test_year_ticks_under_yearly_points(run, figs):
    per = _rt(run, "summary_by_period")
    yearly = {p for p, k in per.select("platform", "period_kind").unique().iter_rows() if k == "year"}
    assert yearly  # the edge games' platforms are thin by month
    from matplotlib.dates import date2num

    drawn = [(plat, figs[f"trend_chess_{plat}"]) for plat in yearly if f"trend_chess_{plat}" in figs]
    assert drawn, (yearly, sorted(figs))  # at least one yearly series is drawn, and checked
    for plat, f in drawn:
        f.fig.canvas.draw()
        ax = f.fig.axes[-1]
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert labels and all(re.fullmatch(r"\d{4}", t) for t in labels), (plat, labels)
        for t in ax.get_xticks():  # each tick at the middle of its year, where the year's point is
            day = dt.date.fromordinal(round(t) + dt.date(1970, 1, 1).toordinal())
            assert (day.month, day.day) == (7, 2), (plat, day)
            assert float(date2num(dt.date(day.year, 7, 2))) == pytest.approx(t)


def test_sparse_monthly_series_drawn_by_year():
    """The over-the-board sample has games in 317 months, 73 % of them with 30 games or more:
    a month series of it is a row of grey whiskers, so it is drawn by year."""
    otb = shared_path("otb_sample.pgn.zst")
    if otb is None:
        pytest.skip("needs the shared otb_sample")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        proc, _ = cli("scan", otb, "--out", d, "--edition", "fide_2018")
        assert proc.returncode == 0, proc.stderr[-2000:]
        rep = report.model.build(d)
    per = rep.table("summary_by_period")
    kinds = dict(per.select("platform", "period_kind").unique().iter_rows())
    assert kinds["otb"] == "year"


# ---------------------------------------------------------------------------------------------
# The page: audit, time controls, title


def test_headline_audit_counts_contradictions_only(run):
    a = _rt(run, "audit_summary").filter(pl.col("platform") == "lichess").row(0, named=True)
    assert a["lead"] >= 1 and a["lichess_agreement_after_claimable_draw"] >= 1
    assert a["contradiction"] == a["continued_past_automatic_draw"] == 0  # (none in these Lichess games)
    text = _text(run)
    card = text[text.index("Lichess · chess") : text.index("Chess.com · chess")]
    line = re.search(r"contradicts the edition in force \(edition in force\)\s*([\d,]+) of ([\d,]+)", card)
    assert line and line.group(1) == "0", card
    assert re.search(r"leads that break no rule.*?\s([\d,]+) of", card, re.S).group(1) == str(a["lead"])
    ag = _rt(run, "audit_games")
    lead = ag.filter(pl.col("site") == "https://lichess.org/leadgame")
    assert lead.height == 1 and lead["category"].item() == "lead"
    for kind in ("play went on past an automatic draw", "a decisive result after an automatic draw", "breaks no rule"):
        assert kind in text.lower() or kind in text


def test_games_without_a_time_control_are_counted(run):
    j = _raw(run).filter((pl.col("edition") == "fide_2018") & (pl.col("platform") == "otb"))
    unknown = j.filter(pl.col("time_control_class") == "unknown").height
    assert unknown > 0
    text = _text(run)
    assert f"over the board {unknown:,} of {j.height:,}" in text
    tc = _rt(run, "summary_by_time_control")
    assert "unknown" in set(tc["time_control_class"])


def test_title_and_meta_from_the_data(run):
    with open(run["index"], encoding="utf-8") as fh:
        page = fh.read()
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
    assert "tables-folder-name" not in title
    j = _raw(run).filter(pl.col("edition") == "fide_2018")
    assert f"{j.height:,} chess games" in title
    for name in ("Lichess", "Chess.com", "over the board"):
        assert name in title
    years = j["date"].drop_nulls()
    assert f"{years.min().year}–{years.max().year}" in html.unescape(title)
    assert f"<code>{run['out']}</code>" in page  # the folder, as a path only


def test_edition_pairs_rows_in_a_fixed_order():
    """The "all platforms" rows of edition_pairs follow the pairs' order (game kind, then
    editions), the same in every run: they came out of a hash group-by in any order, so two
    reports of one OUT differed in their rows' order."""
    from analyzer.report import model

    eds = [f"e{k:02d}" for k in range(12)]
    rows = [
        {"game_type": "chess", "platform": plat, "edition_a": a, "edition_b": b, "games_compared": 10, "differ_any": i}
        for i, (a, b) in enumerate(itertools.pairwise(eds))
        for plat in ("lichess", "otb")
    ]
    pairs = pl.DataFrame(rows).with_columns(
        pl.lit([], pl.List(pl.String)).alias("examples"), pl.lit([], pl.List(pl.String)).alias("example_games")
    )
    out = model._pairs_matrix(pairs)
    every = out.filter(pl.col("platform") == "all platforms")
    assert every.select("edition_a", "edition_b").rows() == list(itertools.pairwise(eds))
    assert every["differ_any"].to_list() == [2 * i for i in range(len(eds) - 1)]
