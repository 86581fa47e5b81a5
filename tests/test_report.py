"""`analyzer report`: every number of the tables, figures and headline recomputed from the raw
Parquet files with polars (tests/report_checks.py: no report code), intervals solved
independently, editions merged only where they agree game by game, the audit, and figures whose
text is >= 9 pt, inside the figure and never overlapping.

Input: the first 500 games of lichess_small.pgn plus the edge_cases.pgn games (Lichess,
Chess.com, over-the-board and other sites), scanned with fide_2018, fide_2014 and lichess.
"""

from __future__ import annotations

import datetime as dt
import os
import re

import polars as pl
import pytest

from analyzer import report
from conftest import need, nonempty
from report_checks import (
    MEASURE_KN,
    check_print_figures,
    cli,
    counts,
    raw_joined,
    split_games,
    text_problems,
    wilson_roots,
)

SMALL = need("lichess_small.pgn")
EDGE = need("edge_cases.pgn")
EDITIONS = ["fide_2018", "fide_2014", "lichess"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    with open(SMALL, encoding="utf-8", errors="replace") as fh:
        small = split_games(fh.read())[:500]
    with open(EDGE, encoding="utf-8", errors="replace") as fh:
        edge = split_games(fh.read())
    (d / "lichess.pgn").write_text("".join(small), encoding="utf-8")
    (d / "edge.pgn").write_text("".join(edge), encoding="utf-8")
    out = d / "out"
    proc, summary = cli(
        "scan", str(d / "lichess.pgn"), str(d / "edge.pgn"), "--out", str(out), "--edition", ",".join(EDITIONS)
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert summary["games"] == len(small) + len(edge)
    proc, _ = cli("report", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    index = proc.stdout.strip().splitlines()[-1]
    return {"out": str(out), "index": index, "dir": os.path.dirname(index)}


def _rt(run, name):
    return pl.read_parquet(os.path.join(run["dir"], name + ".parquet"))


def _fig_csv(run, name):
    return pl.read_csv(os.path.join(run["dir"], "figures", name + ".csv"), infer_schema_length=None)


def _page(run) -> str:
    with open(run["index"], encoding="utf-8") as fh:
        return fh.read()


def _page_text(run) -> str:
    """The page's text, as a reader sees it (tags dropped, entities decoded)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", _page(run)))


# ---------------------------------------------------------------------------------------------
# Files and page


def test_files_and_self_contained_page(run):
    assert run["index"] == os.path.join(run["out"], "report", "index.html")
    for name in (
        "summary_cube",
        "summary_by_population",
        "summary_by_period",
        "summary_by_source",
        "edition_pairs",
        "headline",
        "audit_summary",
        "rules",
    ):
        a = _rt(run, name)
        b = pl.read_csv(os.path.join(run["dir"], name + ".csv"), infer_schema_length=None)
        assert a.height == b.height > 0 and a.columns == b.columns, name
    page = _page(run)
    listed = os.listdir(os.path.join(run["dir"], "figures"))
    figs = sorted(f[:-4] for f in listed if f.endswith(".svg") and not f.endswith(".narrow.svg"))
    assert {"outcomes_chess", "trend_chess_lichess", "time_control_class_chess", "rating_band_chess"} <= set(figs)
    for name in figs:
        for ext in ("svg", "narrow.svg", "pdf", "csv"):
            path = os.path.join(run["dir"], "figures", f"{name}.{ext}")
            assert os.path.getsize(path) > 200, path
        with open(os.path.join(run["dir"], "figures", name + ".pdf"), "rb") as fh:
            assert fh.read(5) == b"%PDF-"
        assert f'id="fig-{name}"' in page
    # vector figures inline, one per figure and layout (wide, narrow); nothing fetched from elsewhere;
    # no script, no test aid
    assert page.count("<svg") == 2 * len(figs)
    assert "<img" not in page and "<script" not in page and "data:image/png" not in page
    assert not re.search(r"(src|href)=['\"]https?:(?!//lichess\.org/|//www\.chess\.com/)", page)
    assert "rendered" not in page
    # ids are unique across the inline SVGs
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_ci_columns_in_every_figure_csv(run):
    checked = 0
    for f in os.listdir(os.path.join(run["dir"], "figures")):
        if f.endswith(".csv"):
            checked += 1
            df = _fig_csv(run, f[:-4])
            assert {"k", "n", "rate", "ci_low", "ci_high"} <= set(df.columns), f
            ok = df.filter(pl.col("n") > 0)
            assert (
                ok.height and (ok["ci_low"] <= ok["rate"] + 1e-12).all() and (ok["rate"] <= ok["ci_high"] + 1e-12).all()
            )
    assert checked >= 4  # outcomes, trend, time-control and rating-band figures at least


# ---------------------------------------------------------------------------------------------
# Numbers vs the raw Parquet files


def test_summary_by_population_matches_raw(run):
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "chess")
    s = _rt(run, "summary_by_population").filter(pl.col("game_type") == "chess")
    pops = j.select("platform", "edition").unique().rows()
    assert sorted(pops) == sorted(s.select("platform", "edition").rows())
    assert {"lichess", "chess.com", "otb", "other"} <= {p for p, _ in pops}
    for plat, ed in pops:
        c = counts(j.filter((pl.col("platform") == plat) & (pl.col("edition") == ed)))
        r = s.filter((pl.col("platform") == plat) & (pl.col("edition") == ed)).row(0, named=True)
        for key, val in c.items():
            assert r[key] == val, (plat, ed, key)
        for name, (k, n) in MEASURE_KN.items():
            if c[n]:
                lo, hi = wilson_roots(c[k], c[n])
                assert r[f"{name}_rate"] == pytest.approx(c[k] / c[n])
                assert r[f"{name}_ci_low"] == pytest.approx(lo, abs=1e-9)
                assert r[f"{name}_ci_high"] == pytest.approx(hi, abs=1e-9)
            else:
                assert r[f"{name}_rate"] is None and r[f"{name}_ci_low"] is None


def _signature(j, eds, cols):
    """Per game, whether the editions' verdict columns are all equal."""
    wide = None
    for i, ed in enumerate(eds):
        part = j.filter(pl.col("edition") == ed).select(
            "source", "game_index", *[pl.col(c).alias(f"{c}{i}") for c in cols]
        )
        wide = part if wide is None else wide.join(part, on=["source", "game_index"])
    nonempty(wide, f"games under {eds}")  # all() of no games would say the editions agree
    same = pl.all_horizontal([pl.col(f"{c}0").eq_missing(pl.col(f"{c}{i}")) for c in cols for i in range(1, len(eds))])
    return wide.select(same.alias("same"))["same"]


SIG = {
    "missed_threefold": ["board_chance_threefold", "missed_threefold"],
    "missed_fifty": ["board_chance_fifty", "missed_fifty"],
    "missed": ["first_missed_claim_ply", "missed_claim_rule"],
    "lost_after_missed": ["first_missed_claim_ply", "missed_claim_rule"],
    "avoided": ["first_avoided_claim_ply", "avoided_claim_rule"],
    "claimed": ["claimed"],
    "automatic_draw": ["end_ply", "end_rule"],
}


def test_outcomes_figure_matches_raw_and_merges_only_identical_editions(run):
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "chess")
    df = _fig_csv(run, "outcomes_chess")
    assert set(df["row"].unique()) == set(MEASURE_KN)
    seen_rows = set()
    for r in df.iter_rows(named=True):
        eds = r["editions"].split(",")
        seen_rows.add((r["row"], r["column"], r["editions"]))
        if not r["applicable"]:
            # lichess has no written-move claims and no 50-move claim; no automatic draw in fide_2009/1997
            assert r["row"] in ("avoided", "missed_fifty") and eds == ["lichess"] and r["k"] is None
            continue
        k, n = MEASURE_KN[r["row"]]
        for ed in eds:  # every edition of a series has the same counts
            c = counts(j.filter((pl.col("platform") == r["column"]) & (pl.col("edition") == ed)))
            assert (r["k"], r["n"]) == (c[k], c[n]), r
        if r["n"]:
            lo, hi = wilson_roots(r["k"], r["n"])
            assert r["rate"] == pytest.approx(r["k"] / r["n"])
            assert (r["ci_low"], r["ci_high"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))
        assert r["small"] == (r["n"] < 30)
    # Merged series: identical per game on every game; separate series: different somewhere.
    for row in MEASURE_KN:
        series = df.filter(pl.col("row") == row).select("editions").unique()["editions"].to_list()
        for s in series:
            eds = s.split(",")
            if len(eds) > 1:
                assert _signature(j, eds, SIG[row]).all(), (row, eds)
        firsts = [s.split(",")[0] for s in series]
        for a in range(len(firsts)):
            for b in range(a + 1, len(firsts)):
                la, lb = firsts[a] == "lichess", firsts[b] == "lichess"
                if row in ("avoided", "missed_fifty") and (la or lb):
                    continue  # not applicable under lichess: never merged with an edition that has it
                assert not _signature(j, [firsts[a], firsts[b]], SIG[row]).all(), (row, firsts[a], firsts[b])
    # fide_2018 and fide_2014 agree on missed claims here: one series, said once on the page
    missed = df.filter(pl.col("row") == "missed")["editions"].unique().to_list()
    assert any({"fide_2018", "fide_2014"} <= set(s.split(",")) for s in missed)
    assert "fide_2018, fide_2014" in _page(run) or "fide_2018 and fide_2014" in _page(run)


def test_edition_pairs_match_raw(run):
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "chess")
    p = _rt(run, "edition_pairs").filter(pl.col("platform") == "all platforms")
    cols = {
        "missed": ["first_missed_claim_ply", "missed_claim_rule"],
        "avoided": ["first_avoided_claim_ply", "avoided_claim_rule"],
        "claimed": ["claimed"],
        "automatic": ["end_ply", "end_rule"],
    }
    for r in p.iter_rows(named=True):
        a = j.filter(pl.col("edition") == r["edition_a"])
        b = j.filter(pl.col("edition") == r["edition_b"])
        w = a.join(b, on=["source", "game_index"], suffix="_b")
        assert r["games_compared"] == w.height
        anyd = pl.lit(False)
        for m, cs in cols.items():
            d = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c + "_b")) for c in cs])
            anyd = anyd | d
            assert r[f"differ_{m}"] == w.select(d.sum()).item(), (r["edition_a"], r["edition_b"], m)
        assert r["differ_any"] == w.select(anyd.sum()).item()
        for url in (r["examples"] or "").split():
            assert url.startswith("https://")
    f18_14 = p.filter((pl.col("edition_a") == "fide_2018") & (pl.col("edition_b") == "fide_2014")).row(0, named=True)
    assert f18_14["differ_missed"] == 0 and f18_14["differ_automatic"] > 0  # fivefold read differently


DENOMINATOR = {  # what n counts, as the page says it after the number (docs/report.md)
    "missed_threefold": "games with a threefold claim on the board",
    "missed_fifty": "games with a 50-move claim on the board",
    "missed": "games",
    "lost_after_missed": "games with a missed claim (result known)",
    "avoided": "games",
    "claimed": "games",
    "automatic_draw": "decisive games",
}


def _pct_text(k: int, n: int) -> str:
    pct = 100 * k / n
    digits = 0 if pct == 0 else max(0, 1 - int(f"{pct:e}".split("e")[1]))
    return f"{round(pct, digits):.{digits}f} %"


def test_headline_matches_raw(run):
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "chess")
    h = _rt(run, "headline").filter(pl.col("primary") & (pl.col("game_type") == "chess"))
    page_text = _page_text(run)
    seen_in_force = set()
    for r in h.iter_rows(named=True):
        eds = r["editions"].split(",")
        ed = eds[0]
        if r["platform"] == "lichess":
            assert ed == "lichess"  # Lichess games under the lichess edition
        if r["series"] == "in force":
            # the rule measures under the edition in force for each game: lichess for Lichess games,
            # for over-the-board games the FIDE edition of their date (_in_force, below)
            seen_in_force.add((r["platform"], r["measure"]))
            rows = j.filter(
                pl.struct("platform", "date").map_elements(lambda x: _in_force(x["platform"], x["date"]), pl.String)
                == pl.col("edition")
            ).filter(pl.col("platform") == r["platform"])
            assert sorted(rows["edition"].unique().to_list()) == sorted(eds)
        else:
            rows = j.filter((pl.col("platform") == r["platform"]) & (pl.col("edition") == ed))
        if not r["applicable"]:
            assert r["text"] == "not applicable"
            continue
        k, n = MEASURE_KN[r["measure"]]
        c = counts(rows)
        assert (r["k"], r["n"]) == (c[k], c[n]), r
        assert r["denominator"] == DENOMINATOR[r["measure"]]
        # counts plus a percentage with 2 significant digits; on the page with what n counts
        if c[n]:
            assert r["text"] == f"{c[k]:,} of {c[n]:,} ({_pct_text(c[k], c[n])})"
            assert f"{c[k]:,} of {c[n]:,} {DENOMINATOR[r['measure']]} ({_pct_text(c[k], c[n])})" in page_text
    assert ("lichess", "missed_threefold") in seen_in_force and ("otb", "missed_threefold") in seen_in_force


def test_missed_by_rule_and_class_match_raw(run):
    """The first question, "how often are threefold claims missed, by time control?": missed among
    the games with a chance on the board, per rule, class and edition, from the raw events."""
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "chess")
    t = _rt(run, "missed_by_rule").filter((pl.col("game_type") == "chess") & (pl.col("edition") != "in force"))
    checked = 0
    for r in t.iter_rows(named=True):
        rows = j.filter((pl.col("platform") == r["platform"]) & (pl.col("edition") == r["edition"]))
        if r["time_control_class"] != "all":
            rows = rows.filter(pl.col("time_control_class").fill_null("unknown") == r["time_control_class"])
        chance = int(rows[f"board_chance_{r['rule']}"].sum())
        missed = int(rows[f"missed_{r['rule']}"].sum())
        assert (r["games"], r["games_with_chance"], r["missed"]) == (rows.height, chance, missed), r
        assert r["applicable"] == (not (r["rule"] == "fifty" and r["edition"] == "lichess"))
        if r["applicable"] and chance:
            lo, hi = wilson_roots(missed, chance)
            assert r["missed_of_chance_rate"] == pytest.approx(missed / chance)
            assert (r["missed_of_chance_ci_low"], r["missed_of_chance_ci_high"]) == (
                pytest.approx(lo, abs=1e-9),
                pytest.approx(hi, abs=1e-9),
            )
            assert r["missed_of_games_rate"] == pytest.approx(missed / rows.height)
            checked += 1
        elif not r["applicable"]:
            assert r["missed_of_chance_rate"] is None and r["missed_of_games_rate"] is None
    assert checked > 5
    # every rate of every summary says its denominator
    s = _rt(run, "summary_by_time_control")
    for name, (_, n) in MEASURE_KN.items():
        assert s[f"{name}_denominator"].unique().to_list() == [n]
    page = " ".join(_page_text(run).split())
    assert "How often is a claim missed, by time control?" in page
    assert "Drawn from missed_by_rule" in page or "From missed_by_rule" in page
    assert "Drawn from summary_by_time_control: missed_threefold / board_chance_threefold" in page


def test_months_from_the_games_dates(run):
    j = raw_joined(run["out"]).filter(
        (pl.col("game_type") == "chess")
        & (pl.col("platform") == "lichess")
        & (pl.col("edition") == "lichess")
        & pl.col("date").is_not_null()
    )
    per = _rt(run, "summary_by_period").filter(
        (pl.col("platform") == "lichess") & (pl.col("edition") == "lichess") & (pl.col("time_control_class") == "all")
    )
    assert per["period_kind"].unique().to_list() == ["month"] or per["period_kind"].unique().to_list() == ["year"]
    by = j.group_by(pl.col("date").dt.truncate("1mo" if per["period_kind"][0] == "month" else "1y").alias("p")).agg(
        pl.len().alias("games"), pl.col("first_missed_claim_ply").is_not_null().sum().alias("missed")
    )
    got = {r["period"]: (r["games"], r["missed"]) for r in per.iter_rows(named=True)}
    exp = {r["p"]: (r["games"], r["missed"]) for r in by.iter_rows(named=True)}
    assert sum(g for g, _ in got.values()) == j.height > 0  # every dated game in a period
    for p, v in got.items():  # every period from the first to the last: the empty ones are 0
        assert v == exp.get(p, (0, 0)), p
    assert set(exp) <= set(got)


# ---------------------------------------------------------------------------------------------
# Audit: each game under the edition in force, "not audited" is not 0


def _in_force(platform, date):
    if platform == "lichess":
        return "lichess"
    if platform != "otb" or date is None:
        return None
    for bound, ed in (
        (dt.date(2018, 1, 1), "fide_2018"),
        (dt.date(2014, 7, 1), "fide_2014"),
        (dt.date(2009, 7, 1), "fide_2009"),
        (dt.date(1997, 7, 1), "fide_1997"),
    ):
        if date >= bound:
            return ed
    return None


CONTRADICTIONS = ("continued_past_automatic_draw", "decisive_after_automatic_draw")


def test_audit_matches_raw(run):
    j = raw_joined(run["out"]).filter(pl.col("game_type") == "chess")
    expected = set()
    audited: dict = {}
    for r in j.iter_rows(named=True):
        if r["edition"] != _in_force(r["platform"], r["date"]):
            continue
        audited[r["platform"]] = audited.get(r["platform"], 0) + 1
        key = (r["source"], r["game_index"])
        if r["end_ply"] is not None and r["plies"] > r["end_ply"]:
            expected.add(("continued_past_automatic_draw",) + key)
        if r["end_ply"] is not None and r["result"] in ("1-0", "0-1"):
            expected.add(("decisive_after_automatic_draw",) + key)
        if (
            r["platform"] == "lichess"
            and r["result"] == "1/2-1/2"
            and r["termination"] == "Normal"
            and r["draw_reason"] == "agreement"
            and (
                (r["first_threefold_claim_ply"] is not None and r["first_threefold_claim_ply"] < r["plies"])
                or (r["end_ply"] is not None and r["end_ply"] < r["plies"])
            )
        ):
            expected.add(("lichess_agreement_after_claimable_draw",) + key)
    a = _rt(run, "audit_games")
    assert set(a.select("kind", "source", "game_index").iter_rows()) == expected
    for r in a.iter_rows(named=True):
        assert r["category"] == ("contradiction" if r["kind"] in CONTRADICTIONS else "lead")
    kat = a.filter(pl.col("site") == "Katowice POL")  # FIDE 2018 in force: fivefold at 149, played to 150
    assert kat.height == 1 and kat["kind"].item() == "continued_past_automatic_draw" and kat["end_ply"].item() == 149
    s = _rt(run, "audit_summary")
    for r in s.iter_rows(named=True):
        assert r["games_audited"] == audited.get(r["platform"], 0)
        if not r["games_audited"]:
            continue
        games = {(k[1], k[2]) for k in expected if k[0] in CONTRADICTIONS}
        mine = {(src, gi) for src, gi, p in j.select("source", "game_index", "platform").unique().iter_rows()}
        plat_games = {
            (src, gi)
            for src, gi, p in j.select("source", "game_index", "platform").unique().iter_rows()
            if p == r["platform"]
        }
        assert r["contradiction"] == len(games & plat_games & mine)  # games, not flags: a game may have both kinds
    # Chess.com is never audited (no edition models its rules): the page says so, not "0"
    cc = s.filter(pl.col("platform") == "chess.com").row(0, named=True)
    assert cc["games_audited"] == 0 and cc["continued_past_automatic_draw"] is None
    assert "not audited" in _page(run)


# ---------------------------------------------------------------------------------------------
# Figures for print


@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_figures_text_is_readable_and_never_overlaps(run, layout):
    from analyzer.report import figures

    lay = figures.WIDE if layout == "wide" else figures.NARROW
    figs = report.build_figures(run["out"], (lay,))
    assert len(figs) >= 4
    check_print_figures(figs, figures.freeze_layout, width=lay.width)


def test_text_check_catches_an_overlap():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "first label", fontsize=9)
    ax.text(0.52, 0.5, "second label", fontsize=9)
    ax.set_title("tiny", fontsize=6)
    ax.text(2.0, 0.5, "outside", transform=ax.transAxes, fontsize=9)
    problems = text_problems(fig)
    plt.close(fig)
    assert any("overlaps" in p for p in problems)
    assert any("6" in p and "tiny" in p for p in problems)
    assert any("clipped" in p for p in problems)


# ---------------------------------------------------------------------------------------------
# Robustness


def test_report_on_empty_directory(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    path = report.write_report(str(out))
    with open(path, encoding="utf-8") as fh:
        assert "nothing to report" in fh.read()
    assert pl.read_parquet(out / "report" / "summary_by_population.parquet").height == 0


def test_cli_errors_are_clear(tmp_path):
    proc, _ = cli("report", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "not a directory" in proc.stderr and "Traceback" not in proc.stderr
    proc, _ = cli("report", str(tmp_path))
    assert proc.returncode == 2 and "holds no analyzer tables" in proc.stderr and "Traceback" not in proc.stderr


def test_one_edition_no_dates_no_elo(tmp_path):
    # fide_2009 only: no automatic draws (n/a, not 0), no clocks, dates, Elo or TimeControl.
    pgn = (
        '[Event "x"]\n[Site "Moscow"]\n[Result "1-0"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. e4 e5 1-0\n\n'
        '[Event "y"]\n[Site "Moscow"]\n[Result "1/2-1/2"]\n\n1. d4 d5 1/2-1/2\n\n'
    )
    (tmp_path / "g.pgn").write_text(pgn)
    out = tmp_path / "out"
    proc, _ = cli(
        "scan", str(tmp_path / "g.pgn"), "--out", str(out), "--edition", "fide_2009", "--source-name", "g<b>x"
    )
    assert proc.returncode == 0, proc.stderr
    path = report.write_report(str(out), str(tmp_path / "rep"))
    s = pl.read_parquet(tmp_path / "rep" / "summary_by_population.parquet").row(0, named=True)
    assert (s["platform"], s["edition"], s["games"], s["missed"]) == ("otb", "fide_2009", 2, 1)
    h = pl.read_parquet(tmp_path / "rep" / "headline.parquet")
    auto = h.filter(pl.col("measure") == "automatic_draw").row(0, named=True)
    assert auto["applicable"] is False and auto["k"] is None
    with open(path, encoding="utf-8") as fh:
        page = fh.read()
    assert '1 of 2 (<span class="nw">50 %</span>)' in page
    assert "nothing to compare" in page.lower()
    assert "g&lt;b&gt;x" in page and "<b>x" not in page  # header text is text, never markup
