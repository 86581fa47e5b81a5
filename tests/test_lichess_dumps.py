"""What the games table says of Lichess's own dumps (issue 38): the broadcast tags as columns
(python-chess's headers are the oracle), broadcasts counted as over-the-board games, and the
known data issues of the database page carried per game for the dumps (and the day) they name."""

from __future__ import annotations

import io
import os
import re

import chess.pgn
import polars as pl
import pytest

from analyzer import engine
from analyzer.io import lichess_db
from analyzer.kinds import resolve_editions
from conftest import need, out_tables, read_data

BROADCAST = need("broadcast_sample.pgn")


def _scan(paths, out):
    cfg = engine.Config(out=str(out), editions=resolve_editions(["fide_2018", "lichess"]))
    summary, _ = engine.run_scan([str(p) for p in paths], cfg, workers=1, progress_interval=0, progress_mode="none")
    # (standard games in a variant's dump are replayed as that variant: their statuses may make
    # the run warn; every game must still be in the tables)
    assert not summary["units_failed"] and not summary["accounting_errors"], summary
    return out_tables(out)[0]


def test_broadcast_tags_are_columns_and_the_games_are_over_the_board(tmp_path):
    text = read_data("broadcast_sample.pgn")
    path = tmp_path / "lichess_db_broadcast_2025-01.pgn"
    path.write_bytes(text)
    games = _scan([path], tmp_path / "out")
    headers = chess.pgn.read_game(io.StringIO(text.decode())).headers
    row = games.row(0, named=True)
    assert games.height == 1
    for column, tag in (
        ("white_fide_id", "WhiteFideId"),
        ("black_fide_id", "BlackFideId"),
        ("board", "Board"),
        ("broadcast_name", "BroadcastName"),
        ("game_url", "GameURL"),
    ):
        assert row[column] == headers[tag], column
    assert row["site"] is None  # the broadcast export has no Site of its own
    assert row["platform"] == "otb"
    assert row["data_issue"] is None  # no known issue concerns the broadcasts
    assert row["status"] == "ok" and row["result"] == "1/2-1/2"


def test_games_without_broadcast_tags_have_them_null_and_keep_their_platform(tmp_path):
    small = read_data("lichess_small.pgn")
    path = tmp_path / "games.pgn"
    path.write_bytes(small[: small.index(b"\n[Event ", 200_000)])
    games = _scan([path], tmp_path / "out")
    assert games.height > 50
    for column in ("white_fide_id", "black_fide_id", "board", "broadcast_name", "game_url", "data_issue"):
        assert games[column].null_count() == games.height, column
    assert set(games["platform"]) == {"lichess"}


def test_a_lichess_broadcast_site_is_over_the_board():
    from analyzer.api import analyze_bytes

    text = read_data("broadcast_sample.pgn").decode()
    text = text.replace('[Round "01"]', '[Site "https://lichess.org/broadcast/nz/round-1/spI5tcia/oHmutTGn"]')
    text = re.sub(r"\[(BroadcastName|GameURL) [^\n]*\n", "", text)
    assert analyze_bytes(text.encode()).games.column("platform").to_pylist() == ["otb"]


def _month_file(tmp_path, name: str, days: list[str]) -> str:
    """lichess_small's first games, their UTCDate and Date set to `days` in turn, as `name`."""
    small = read_data("lichess_small.pgn").decode()
    games = [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", small) if g.strip()][: len(days)]
    text = "".join(re.sub(r'\[(UTCDate|Date) "[^"]*"\]', rf'[\1 "{d}"]', g) for g, d in zip(games, days))
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


# What the database page lists (lichess-org/database web/index.html.tpl, "Known issues"), as the
# ids the games of each dump must carry: written out here from the page, not from the module.
EXPECTED = {
    ("lichess_db_standard_rated_2021-03.pgn", "2021.03.12"): "incorrect_results_2021_03_12",
    ("lichess_db_standard_rated_2021-03.pgn", "2021.03.11"): None,
    ("lichess_db_atomic_rated_2021-02.pgn", "2021.02.09"): "resigned_after_end_2021_02_09",
    ("lichess_db_atomic_rated_2021-02.pgn", "2021.02.10"): None,
    ("lichess_db_chess960_rated_2023-11.pgn", "2023.11.05"): "chess960_invalid_castling_2023_11",
    ("lichess_db_standard_rated_2023-11.pgn", "2023.11.05"): None,
    ("lichess_db_antichess_rated_2022-12.pgn", "2022.12.01"): "antichess_bullet_ratings_2022_12",
    ("lichess_db_standard_rated_2020-06.pgn", "2020.06.30"): "round_date_tags_missing_to_2020_12;self_play_2020_06",
    ("lichess_db_standard_rated_2020-12.pgn", "2020.12.31"): "round_date_tags_missing_to_2020_12",
    ("lichess_db_standard_rated_2021-01.pgn", "2021.01.31"): None,
    ("lichess_db_standard_rated_2016-08.pgn", "2016.08.01"): (
        "round_date_tags_missing_to_2020_12;illegal_castling_to_2016_08"
    ),
    ("lichess_db_standard_rated_2016-02.pgn", "2016.02.29"): (
        "round_date_tags_missing_to_2020_12;self_play_before_2016_03;illegal_castling_to_2016_08"
    ),
    ("lichess_db_kingOfTheHill_rated_2016-03.pgn", "2016.03.01"): "round_date_tags_missing_to_2020_12",
    ("lichess_db_broadcast_2021-03.pgn", "2021.03.12"): None,
    ("games_2021-03.pgn", "2021.03.12"): None,  # not a dump: no issue
}


@pytest.mark.parametrize("name", sorted({n for n, _ in EXPECTED}))
def test_data_issues_per_dump_and_day(tmp_path, name):
    days = [d for n, d in EXPECTED if n == name]
    games = _scan([_month_file(tmp_path, name, days * 3)], tmp_path / "out")
    assert games.height == 3 * len(days)
    got = games.select("utc_date", "data_issue").unique().sort("utc_date").rows()
    assert got == sorted((d, EXPECTED[(name, d)]) for d in days)


def test_the_issue_table_cites_the_page_and_reads_the_mirror_months():
    assert {i.id for i in lichess_db.KNOWN_ISSUES} == {v for e in EXPECTED.values() if e for v in e.split(";")} | {
        "self_play_before_2016_03"
    }
    assert all(i.link.startswith("https://") and i.text for i in lichess_db.KNOWN_ISSUES)
    assert lichess_db.dump_of("x/standard-chess-games/data/year=2016/month=02") == ("standard", "2016-02")
    assert lichess_db.dump_of("https://database.lichess.org/horde/lichess_db_horde_rated_2019-04.pgn.zst") == (
        "horde",
        "2019-04",
    )
    assert lichess_db.count_tag("broadcast") == "GameURL" and lichess_db.count_tag("atomic") == "Site"


def test_a_study_leaves_the_issue_games_out_with_one_filter(tmp_path):
    a = _month_file(tmp_path, "lichess_db_standard_rated_2021-03.pgn", ["2021.03.11", "2021.03.12"] * 5)
    games = _scan([a], tmp_path / "out")
    clean = games.filter(pl.col("data_issue").is_null())
    assert clean.height == 5 and set(clean["utc_date"]) == {"2021.03.11"}


def test_the_report_shows_the_issue_games_apart_or_leaves_them_out(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    from analyzer.io.lichess_db import MEASURE_ISSUES
    from analyzer.report import model, page

    days = ["2021.02.09", "2021.02.10", "2021.02.11"] * 10
    _scan([_month_file(tmp_path, "lichess_db_standard_rated_2021-02.pgn", days)], tmp_path / "out")
    kept = model.build(str(tmp_path / "out"))
    cov = kept.table("coverage")
    # shown apart: the coverage counts the games read per issue (and none was left out)
    assert dict(cov.group_by("data_issue").agg(pl.col("games").sum()).iter_rows()) == {
        "resigned_after_end_2021_02_09": 10,
        None: 20,
    }
    assert cov["games_left_out"].sum() == 0 and page._left_out(kept) == ""
    left = model.build(str(tmp_path / "out"), exclude=MEASURE_ISSUES)
    assert left.table("coverage")["games_left_out"].sum() == 10
    assert page._left_out(left) == "10 games (resigned_after_end_2021_02_09: 10)"
    ok = kept.table("coverage").filter(pl.col("status") == "ok")
    by_source = left.table("summary_by_source").filter(pl.col("edition") == "lichess")
    # every aggregate but the coverage counts only the other games
    assert by_source["games"].sum() == ok.filter(pl.col("data_issue").is_null())["games"].sum()
    full = kept.table("summary_by_source").filter(pl.col("edition") == "lichess")
    assert full["games"].sum() == ok["games"].sum()


def test_an_out_with_sources_of_an_earlier_version_reads_with_the_new_columns_null(tmp_path):
    """A source scanned before these columns existed (its games files without them) and one
    scanned now, in one OUT: scan_games serves both, the new columns null for the older one."""
    import hashlib

    import pyarrow.parquet as pq

    import analyzer
    from analyzer.engine.dataset import Dataset, names, records

    small = read_data("lichess_small.pgn")
    cut = small.index(b"\n[Event ", 100_000)
    old, new = tmp_path / "old.pgn", tmp_path / "lichess_db_broadcast_2025-01.pgn"
    old.write_bytes(small[:cut])
    new.write_bytes(read_data("broadcast_sample.pgn"))
    out = tmp_path / "out"
    _scan([old, new], out)
    # rewrite "old" as an earlier version wrote it: its games files without the new columns
    ds = Dataset(str(out))
    rec = ds.source_record("old")
    added = ["white_fide_id", "black_fide_id", "board", "broadcast_name", "game_url", "data_issue"]
    for entry in rec["files"]:
        desc = entry["tables"]["games"]
        path = os.path.join(out, desc["path"])
        pq.write_table(pq.read_table(path).drop_columns(added), path)
        with open(path, "rb") as fh:
            data = fh.read()
        desc.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    with open(os.path.join(out, names.source_record(names.source_dir("old"))), "wb") as fh:
        fh.write(records.encode(dict(rec)))
    games = analyzer.scan_games(str(out)).collect()
    assert games.columns[:3] == ["source", "game_type", "game_index"]
    assert set(added) <= set(games.columns)
    olds = games.filter(pl.col("source") == "old")
    assert olds.height > 30 and all(olds[c].null_count() == olds.height for c in added)
    assert games.filter(pl.col("source") == "lichess_db_broadcast_2025-01")["board"].to_list() == ["1"]
