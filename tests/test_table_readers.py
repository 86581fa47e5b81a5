"""The three tables of an `analyzer scan --out` directory read as hive datasets by the readers
researchers use: pyarrow (`pyarrow.dataset(..., partitioning="hive")`), pandas
(`pandas.read_parquet(folder)`), polars and DuckDB, each with its own defaults. The partition key
`source` lives in the folder names only (a key stored inside the files too clashes with one
reader's inferred type or another's: pyarrow infers string, pandas a dictionary); the header
columns (tags as written) are all strings; a game without a readable TimeControl has the class
`unknown`. The package's own readers (`analyzer.scan_*`) still give every source's full name.
"""

from __future__ import annotations

import os

import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import analyzer
from analyzer import tables
from report_checks import cli

TABLES = ("games", "verdicts", "events")
# Two sources whose names need escaping in a folder name, one longer than a folder name may be.
NAMES = ("a=b c", "plain", "x" * 200)
TAG_COLUMNS = (
    "event",
    "site",
    "white",
    "black",
    "result",
    "time_control",
    "termination",
    "eco",
    "utc_date",
    "utc_time",
    "date_tag",
    "variant",
    "start_fen",
)


@pytest.fixture(scope="module")
def out(tmp_path_factory, small_text):
    d = tmp_path_factory.mktemp("readers")
    text = small_text[:60_000]
    cut = text.rfind(b"\n\n[Event ")
    # over the board, no TimeControl, a threefold repetition played past (events in every source)
    otb = b'[Event "x"]\n[Site "Moscow"]\n[Result "1-0"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. e4 1-0\n\n'
    out = d / "out"
    for i, name in enumerate(NAMES):
        p = d / f"in{i}.pgn"
        p.write_bytes(text[: cut + 1] + b"\n" + otb)
        proc, _ = cli("scan", str(p), "--out", str(out), "--edition", "fide_2018,lichess", "--source-name", name)
        assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def _rows(out, table) -> int:
    return sum(pq.read_metadata(os.path.join(r, f)).num_rows for r, _, fs in os.walk(out / table) for f in fs)


def _short_names() -> set[str]:
    return {n for n in NAMES if len(n) < 100}


@pytest.mark.parametrize("table", TABLES)
def test_pyarrow_dataset_hive(out, table):
    t = ds.dataset(str(out / table), partitioning="hive").to_table()
    assert t.num_rows == _rows(out, table) > 0
    assert _short_names() <= set(t.column("source").to_pylist())


@pytest.mark.parametrize("table", TABLES)
def test_pandas_read_parquet(out, table):
    pd = pytest.importorskip("pandas")
    df = pd.read_parquet(str(out / table))
    assert len(df) == _rows(out, table)
    assert _short_names() <= {str(s) for s in df["source"].unique()}


@pytest.mark.parametrize("table", TABLES)
def test_polars_hive(out, table):
    df = pl.scan_parquet(str(out / table / "*" / "*.parquet"), hive_partitioning=True).collect()
    assert df.height == _rows(out, table)
    assert _short_names() <= set(df["source"].to_list())
    assert pl.read_parquet(str(out / table) + "/").height == df.height  # a folder: hive by default


@pytest.mark.parametrize("table", TABLES)
def test_duckdb(out, table):
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql(f"SELECT source, count(*) FROM read_parquet('{out / table}/*/*.parquet') GROUP BY source")
    got = dict(rel.fetchall())
    assert sum(got.values()) == _rows(out, table)
    assert _short_names() <= set(got)


def test_no_partition_key_inside_the_files(out):
    for table in TABLES:
        seen = 0
        for r, _, fs in os.walk(out / table):
            for f in fs:
                assert "source" not in pq.read_schema(os.path.join(r, f)).names, (table, f)
                seen += 1
        assert seen >= len(NAMES), table  # a file per source at least: the walk found them


def test_tag_columns_are_strings(out):
    games = pl.scan_parquet(str(out / "games" / "*" / "*.parquet"), hive_partitioning=True).collect_schema()
    assert {c: games[c] for c in TAG_COLUMNS} == dict.fromkeys(TAG_COLUMNS, pl.String)
    for c in TAG_COLUMNS:
        assert tables.GAMES_SCHEMA.field(c).type == "string", c


def test_own_readers_give_full_source_names(out):
    """scan_games / scan_verdicts / scan_events: every source by its full name (a long name's
    folder is shortened), as the first column, as before."""
    for scan in (analyzer.scan_games, analyzer.scan_verdicts, analyzer.scan_events):
        df = scan(str(out)).collect()
        assert df.columns[0] == "source"
        assert set(df["source"].unique()) == set(NAMES)


def test_unknown_time_control_class(out):
    g = analyzer.scan_games(str(out)).collect()
    assert g["time_control_class"].null_count() == 0
    otb = g.filter(pl.col("site") == "Moscow")
    assert otb.height == len(NAMES) and set(otb["time_control_class"]) == {"unknown"}
    assert tables.time_control_class(None) == "unknown"
    assert tables.time_control_class("?") == "unknown"
    assert tables.time_control_class("180+2") == "blitz"
