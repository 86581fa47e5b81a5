"""`analyzer report`: summary tables agree with direct polars computations on the scanned tables,
the audit flags what the rules say, and the HTML page renders its plots in headless Chromium.

Input: the first 500 games of lichess_small.pgn plus the edge_cases.pgn games tagged with a
fivefold / 75-move / missed-claim EdgeCase, scanned with the CLI (fide_2018, fide_2014, lichess).
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys

import polars as pl
import pytest

from analyzer import report

from conftest import need

SMALL = need("lichess_small.pgn")
EDGE = need("edge_cases.pgn")
EDITIONS = ["fide_2018", "fide_2014", "lichess"]
TABLES = ["summary_by_edition", "summary_by_source", "summary_by_month", "summary_by_time_control",
          "summary_by_rating_band", "summary_by_lichess_era", "missed_claim_results", "result_changes",
          "event_counts", "audit_games", "audit_summary", "headline"]


def _split(text: str) -> list[str]:
    return [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", text) if g.strip()]


def _edge_games() -> list[str]:
    with open(EDGE, encoding="utf-8", errors="replace") as fh:
        games = _split(fh.read())
    keep = re.compile(r'\[EdgeCase "[^"]*(fivefold|75-move|missed|NOT claimed)', re.I)
    return [g for g in games if keep.search(g)]


def _cli(*args, timeout=900):
    if args[0] == "scan":
        args = (*args, "--json")
    proc = subprocess.run([sys.executable, "-m", "analyzer.cli", *args], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    return json.loads(last) if args[0] == "scan" else {"report": last}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    with open(SMALL, encoding="utf-8", errors="replace") as fh:
        small = _split(fh.read())[:500]
    edge = _edge_games()
    assert len(edge) >= 20
    src = d / "input.pgn"
    src.write_text("".join(small + edge), encoding="utf-8")
    out = d / "out"
    summary = _cli("scan", str(src), "--out", str(out), "--edition", ",".join(EDITIONS),
                   "--workers", "1", "--progress-interval", "0")
    assert summary["games"] == len(small) + len(edge)
    rep = _cli("report", str(out))
    return {"out": str(out), "index": rep["report"], "dir": os.path.dirname(rep["report"]),
            "n_edge": len(edge)}


def _raw_games(out: str) -> pl.DataFrame:
    """The games table, read directly (no report code), categoricals as strings."""
    return (pl.read_parquet(os.path.join(out, "games", "**", "*.parquet"), hive_partitioning=True)
            .with_columns(pl.col(pl.Categorical).cast(pl.String))
            .filter(pl.col("game_type") == "chess"))


def _rt(run, name):
    return pl.read_parquet(os.path.join(run["dir"], name + ".parquet"))


# ---------------------------------------------------------------------------------------------
# Files

def test_tables_written_as_parquet_and_csv(run):
    assert run["index"] == os.path.join(run["out"], "report", "index.html")
    for name in TABLES:
        pq = os.path.join(run["dir"], name + ".parquet")
        csv = os.path.join(run["dir"], name + ".csv")
        assert os.path.getsize(pq) > 0 and os.path.getsize(csv) > 0, name
        a = pl.read_parquet(pq)
        b = pl.read_csv(csv, infer_schema_length=None)
        assert a.columns == b.columns and a.height == b.height, name
    a = _rt(run, "summary_by_edition")
    b = pl.read_csv(os.path.join(run["dir"], "summary_by_edition.csv"))
    for col in ("games", "games_with_claim_opportunity", "games_with_missed_claim", "games_result_changed"):
        assert a[col].to_list() == b[col].to_list()
    for col in ("claim_opportunity_rate", "missed_claim_rate"):
        assert all(abs(x - y) < 1e-12 for x, y in zip(a[col].to_list(), b[col].to_list()))


# ---------------------------------------------------------------------------------------------
# Numbers vs a direct computation

def test_summary_by_edition_matches_direct_computation(run):
    g = _raw_games(run["out"]).filter(pl.col("status") == "ok")
    s = _rt(run, "summary_by_edition")
    assert sorted(s["edition"].to_list()) == sorted(EDITIONS)
    for ed in EDITIONS:
        rows = g.filter(pl.col("edition") == ed).to_dicts()
        r = s.filter(pl.col("edition") == ed).row(0, named=True)
        opp = [x for x in rows if x["first_threefold_claim_ply"] is not None or x["first_fifty_claim_ply"] is not None]
        missed = [x for x in rows if x["first_missed_claim_ply"] is not None]
        three = [x for x in missed if x["missed_claim_rule"] == "threefold" and x["missed_claim_result"]]
        lost3 = [x for x in three if x["missed_claim_result"] == "loss"]
        decisive = [x for x in rows if x["result"] in ("1-0", "0-1")]
        drawn = [x for x in decisive if x["end_ply"] is not None]
        changed = [x for x in rows if x["result_changed"]]
        assert r["games"] == len(rows)
        assert r["games_with_claim_opportunity"] == len(opp)
        assert r["games_with_missed_claim"] == len(missed)
        assert r["missed_then_lost"] == sum(x["missed_claim_result"] == "loss" for x in missed)
        assert r["missed_then_won"] == sum(x["missed_claim_result"] == "win" for x in missed)
        assert r["missed_then_drew"] == sum(x["missed_claim_result"] == "draw" for x in missed)
        assert r["missed_threefold_result_known"] == len(three)
        assert r["missed_threefold_then_lost"] == len(lost3)
        assert r["decisive_games"] == len(decisive)
        assert r["decisive_drawn_by_automatic_rule"] == len(drawn)
        assert r["games_result_changed"] == len(changed)
        assert r["claim_opportunity_rate"] == pytest.approx(len(opp) / len(rows))
        assert r["missed_claim_rate"] == pytest.approx(len(missed) / len(rows))
        if three:
            assert r["missed_threefold_lost_share"] == pytest.approx(len(lost3) / len(three))
        pl_after = sorted(x["plies_after_missed_claim"] for x in missed)
        if pl_after:
            assert r["median_plies_after_missed_claim"] == pytest.approx(pl.Series(pl_after).median())
        clocks = [x["missed_claim_clock_seconds"] for x in missed if x["missed_claim_clock_seconds"] is not None]
        assert r["missed_claims_with_clock"] == len(clocks)
        if clocks:
            assert r["median_clock_at_missed_claim_s"] == pytest.approx(pl.Series(clocks).median(), rel=1e-6)
    # The edge-case games make the automatic rules fire: fide_2018 changes some decisive results.
    assert s.filter(pl.col("edition") == "fide_2018")["games_result_changed"].item() >= 1
    assert s.filter(pl.col("edition") == "fide_2018")["games_with_automatic_end"].item() >= 10


def _tc_class(tc):
    """Independent re-statement of the brief: base + 40 * inc; bullet < 180, blitz < 480,
    rapid < 1500, classical otherwise; '-' correspondence; else unknown."""
    if tc is None:
        return "unknown"
    tc = tc.strip()
    if tc == "-":
        return "correspondence"
    m = re.fullmatch(r"(\d+)(?:\+(\d+))?", tc)
    if m:
        est = int(m.group(1)) + 40 * int(m.group(2) or 0)
    else:
        m = re.match(r"\d+/(\d+)", tc)
        if not m:
            return "unknown"
        est = int(m.group(1))
    return "bullet" if est < 180 else "blitz" if est < 480 else "rapid" if est < 1500 else "classical"


def _band(we, be):
    elos = [e for e in (we, be) if e is not None and e > 0]
    if not elos:
        return "unknown"
    lo = int(sum(elos) / len(elos)) // 200 * 200
    return f"{lo:04d}-{lo + 199:04d}"


def _month(utc, date):
    d = utc or date
    m = re.match(r"(\d{4})[.\-/](\d{2})", d or "")
    return f"{m.group(1)}-{m.group(2)}" if m and 1 <= int(m.group(2)) <= 12 else None


@pytest.mark.parametrize("table, dim, fn", [
    ("summary_by_time_control", "tc_class", lambda r: _tc_class(r["time_control"])),
    ("summary_by_rating_band", "rating_band", lambda r: _band(r["white_elo"], r["black_elo"])),
    ("summary_by_month", "month", lambda r: _month(r["utc_date"], r["date"])),
])
def test_grouped_counts_match_direct_computation(run, table, dim, fn):
    g = _raw_games(run["out"]).filter(pl.col("status") == "ok")
    expected: dict = {}
    missed: dict = {}
    for r in g.iter_rows(named=True):
        k = (r["edition"], fn(r))
        expected[k] = expected.get(k, 0) + 1
        missed[k] = missed.get(k, 0) + (r["first_missed_claim_ply"] is not None)
    s = _rt(run, table)
    got = {(r["edition"], r[dim]): r["games"] for r in s.iter_rows(named=True)}
    got_missed = {(r["edition"], r[dim]): r["games_with_missed_claim"] for r in s.iter_rows(named=True)}
    assert got == expected
    assert got_missed == missed
    if dim == "tc_class":
        assert {"bullet", "blitz"} <= {k[1] for k in got}


def test_headline_matches_summary(run):
    h = _rt(run, "headline")
    s = _rt(run, "summary_by_edition")
    for ed in EDITIONS:
        r = s.filter(pl.col("edition") == ed).row(0, named=True)
        val = dict(h.filter(pl.col("edition") == ed).select("figure", "value").iter_rows())
        assert val["decisive_drawn_share"] == pytest.approx(
            r["decisive_drawn_by_automatic_rule"] / r["decisive_games"])
        if r["missed_threefold_result_known"]:
            assert val["missed_threefold_lost_share"] == pytest.approx(
                r["missed_threefold_then_lost"] / r["missed_threefold_result_known"])


# ---------------------------------------------------------------------------------------------
# Audit and eras

def _in_force(site, date):
    """Edition in force: Lichess (site) -> lichess; others by date -> FIDE 2018/2014/2009/1997."""
    site = (site or "").lower()
    if "lichess.org" in site:
        return "lichess"
    if "chess.com" in site:
        return None
    m = re.match(r"(\d{4})[.\-/](\d{2}|\?\?)?[.\-/]?(\d{2}|\?\?)?", date or "")
    if not m:
        return None
    y = int(m.group(1))
    mo = int(m.group(2)) if m.group(2) and m.group(2).isdigit() else 1
    d = int(m.group(3)) if m.group(3) and m.group(3).isdigit() else 1
    key = (y, mo, d)
    for bound, ed in (((2018, 1, 1), "fide_2018"), ((2014, 7, 1), "fide_2014"),
                      ((2009, 7, 1), "fide_2009"), ((1997, 7, 1), "fide_1997")):
        if key >= bound:
            return ed
    return None


def test_audit_flags_match_direct_computation(run):
    g = _raw_games(run["out"]).filter(pl.col("status") == "ok")
    expected = set()
    for r in g.iter_rows(named=True):
        if r["edition"] != _in_force(r["site"], r["utc_date"] or r["date"]):
            continue
        key = (r["source"], r["game_index"])
        if r["end_ply"] is not None and r["plies"] > r["end_ply"]:
            expected.add(("continued_past_automatic_draw",) + key)
        if r["end_ply"] is not None and r["result"] in ("1-0", "0-1"):
            expected.add(("decisive_after_automatic_draw",) + key)
        if ("lichess.org" in (r["site"] or "") and r["result"] == "1/2-1/2" and r["termination"] == "Normal"
                and r["draw_reason"] == "agreement"
                and ((r["first_threefold_claim_ply"] is not None and r["first_threefold_claim_ply"] < r["plies"])
                     or (r["end_ply"] is not None and r["end_ply"] < r["plies"]))):
            expected.add(("lichess_agreement_after_claimable_draw",) + key)
    a = _rt(run, "audit_games")
    got = set(a.select("kind", "source", "game_index").iter_rows())
    assert got == expected
    # Katowice 2022 (FIDE 2018 in force): fivefold at ply 149, the game went on to 150.
    kat = a.filter(pl.col("site") == "Katowice POL")
    assert kat.height == 1 and kat.row(0, named=True)["kind"] == "continued_past_automatic_draw"
    assert kat["end_rule"].item() == "fivefold" and kat["end_ply"].item() == 149
    # Lichess 2018-11-12 (zNv1ajRj): fivefold at 134 and play went on to 146 — flagged by fide_2018's
    # counterfactual, but Lichess had no fivefold auto-draw before 2020-01-14: not an audit flag.
    zn = g.filter(pl.col("site").str.ends_with("zNv1ajRj"))
    assert zn.filter(pl.col("edition") == "fide_2018")["end_ply"].item() == 134
    assert zn.filter(pl.col("edition") == "lichess")["end_ply"].item() is None
    assert a.filter(pl.col("site").str.ends_with("zNv1ajRj")).height == 0
    summ = _rt(run, "audit_summary")
    assert summ["flagged"].fill_null(0).sum() == a.height


def test_lichess_eras(run):
    g = _raw_games(run["out"]).filter(pl.col("status") == "ok")
    s = _rt(run, "summary_by_lichess_era")
    bounds = [("2014.07.19", "1: before 2014-07-19"), ("2016.01.28", "2: 2014-07-19 to 2016-01-27"),
              ("2016.08.28", "3: 2016-01-28 to 2016-08-27"), ("2020.01.14", "4: 2016-08-28 to 2020-01-13")]
    expected: dict = {}
    for r in g.filter(pl.col("site").str.contains("lichess.org")).iter_rows(named=True):
        d = r["utc_date"] or r["date"]
        era = next((lab for b, lab in bounds if d < b), "5: from 2020-01-14")
        expected[(r["edition"], era)] = expected.get((r["edition"], era), 0) + 1
    got = {(r["edition"], r["lichess_era"]): r["games"] for r in s.iter_rows(named=True)}
    assert got == expected
    assert {"4: 2016-08-28 to 2020-01-13", "5: from 2020-01-14"} <= {k[1] for k in got}


# ---------------------------------------------------------------------------------------------
# The page in a headless browser

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def _chrome_args(tmp_path):
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chrome-profile'}"]


def test_html_is_self_contained_pngs(run):
    with open(run["index"], encoding="utf-8") as fh:
        page = fh.read()
    from PIL import Image

    uris = re.findall(r"<img[^>]*src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(uris) == page.count("<img") >= 6
    for b64 in uris:
        raw = base64.b64decode(b64)
        assert raw[:8] == b"\x89PNG\r\n\x1a\n"
        im = Image.open(io.BytesIO(raw))
        assert im.size[0] > 100 and im.size[1] > 100
    # Nothing fetched from elsewhere (links to the CSV/Parquet files are relative <a> only).
    assert not re.search(r"(src|href)=['\"]https?:", page)
    for word in ("Headline figures", "Audit", "By month", "By time-control class", "By rating band"):
        assert word in page


def test_html_renders_its_plots_in_chromium(run, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium not installed (.ci/run installs it: apt-get install -y chromium)")
    url = "file://" + os.path.abspath(run["index"])
    with open(run["index"], encoding="utf-8") as fh:
        n_img = fh.read().count("<img")
    proc = subprocess.run([exe, *_chrome_args(tmp_path), "--virtual-time-budget=10000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r'id="img-status"[^>]*data-loaded="(\d+)"[^>]*data-total="(-?\d+)"', proc.stdout)
    assert m, proc.stdout[:2000]
    loaded, total = int(m.group(1)), int(m.group(2))
    assert total == n_img > 0
    assert loaded == total, f"{loaded} of {total} plots rendered"
    shot = tmp_path / "page.png"
    proc = subprocess.run([exe, *_chrome_args(tmp_path), "--hide-scrollbars", "--window-size=1280,2400",
                           f"--screenshot={shot}", url], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    from PIL import Image

    im = Image.open(shot).convert("L")
    assert im.size == (1280, 2400)
    lo, hi = im.getextrema()
    assert hi - lo > 100   # not a blank page
    if os.environ.get("ANALYZER_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["ANALYZER_KEEP_SCREENSHOT"])


# ---------------------------------------------------------------------------------------------
# Robustness: empty tables, one edition, all-null columns

def test_report_on_empty_directory(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    path = report.write_report(str(out))
    assert os.path.exists(path)
    with open(path, encoding="utf-8") as fh:
        assert "nothing to report" in fh.read()
    for name in TABLES:
        assert os.path.exists(os.path.join(out, "report", name + ".csv"))
    assert pl.read_parquet(os.path.join(out, "report", "summary_by_edition.parquet")).height == 0


def test_report_missing_directory_is_a_clear_cli_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "analyzer.cli", "report", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "not a directory" in proc.stderr and "Traceback" not in proc.stderr


def test_report_one_edition_all_null_columns(tmp_path):
    # fide_2009: no automatic draws (end_ply, end_rule all null); no %clk (clock all null);
    # no Elo, no dates, no TimeControl.
    pgn = ('[Event "x"]\n[Result "1-0"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. e4 e5 1-0\n\n'
           '[Event "y"]\n[Result "1/2-1/2"]\n\n1. d4 d5 1/2-1/2\n\n')
    src = tmp_path / "g.pgn"
    src.write_text(pgn)
    out = tmp_path / "out"
    _cli("scan", str(src), "--out", str(out), "--edition", "fide_2009", "--workers", "1",
         "--progress-interval", "0")
    rep_dir = tmp_path / "rep"
    path = report.write_report(str(out), str(rep_dir))
    assert path == str(rep_dir / "index.html")
    s = pl.read_parquet(rep_dir / "summary_by_edition.parquet")
    r = s.row(0, named=True)
    assert s.height == 1 and r["edition"] == "fide_2009" and r["games"] == 2
    assert r["games_with_missed_claim"] == 1 and r["missed_claim_rate"] == 0.5
    assert r["median_clock_at_missed_claim_s"] is None and r["games_with_automatic_end"] == 0
    assert pl.read_parquet(rep_dir / "audit_games.parquet").height == 0
    tc = pl.read_parquet(rep_dir / "summary_by_time_control.parquet")
    assert tc["tc_class"].to_list() == ["unknown"]
