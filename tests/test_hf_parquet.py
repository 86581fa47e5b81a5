"""Games read from the Hugging Face mirror's Parquet layout (issue 38, point 3): the same games
give the same tables as their PGN. The oracle is the PGN path itself: lichess_small (and, with
the shared data, lichess_sample) written in the mirror's layout (tests/hf_mirror.py) and scanned
as Parquet, against the same games' PGN scanned as PGN."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import polars as pl
import pytest

from analyzer import engine
from analyzer.errors import InputError
from analyzer.kinds import resolve_editions
from conftest import out_tables, read_data, same_tables, shared_path
from hf_mirror import mirror_pgn, split_games, write_mirror

EDITIONS = ["lichess", "fide_2018"]


def _scan(inputs, out, workers=2, names=None, engine_kind="threads", **kw):
    """A scan; in worker threads by default (the forked engine, a Parquet source's default with
    several workers, costs ~1 s per source to start: the tests' ~50 small months; see
    test_the_forked_engine_reads_row_groups_alike)."""
    cfg = engine.Config(out=str(out), editions=resolve_editions(EDITIONS), **kw)
    summary, code = engine.run_scan(
        [str(p) for p in inputs],
        cfg,
        workers=workers,
        engine=engine_kind,
        progress_interval=0,
        progress_mode="none",
        source_names=names,
    )
    assert code == 0, {k: summary[k] for k in ("units_failed", "damage", "accounting_errors", "warnings")}
    return summary


def _both(tmp_path, text: str, files_per_month: int = 2, row_group: int = 300):
    """The games of `text` as the mirror (scanned as Parquet: one source per month) and as the
    PGN of the same games (one file per month, named as the Parquet sources): their OUTs."""
    games = split_games(text)
    mirror = tmp_path / "standard-chess-games"
    months = write_mirror(games, str(mirror), files_per_month, row_group)
    pgn_dir = tmp_path / "pgn"
    pgn_dir.mkdir()
    pgns, names = [], []
    for (y, m), month_games in sorted(months.items()):
        # named as the month's dump (its known data issues are the mirror month's), its source
        # as the mirror's month
        p = pgn_dir / f"lichess_db_standard_rated_{y}-{m:02d}.pgn"
        p.write_text(mirror_pgn(month_games), encoding="utf-8")
        pgns.append(p)
        names.append(f"standard-chess-games_{y}-{m:02d}")
    parquet_out, pgn_out = tmp_path / "out_parquet", tmp_path / "out_pgn"
    summary = _scan([mirror / "data"], parquet_out)  # the data folder: its months
    _scan(pgns, pgn_out, names=names)
    return summary, months, pgns, parquet_out, pgn_out


# lichess_small's games of its six fullest months (1,486 games; of its 50 months, most hold a few
# games: six sources keep the fixture's scans short)
MONTHS = {(2021, 10), (2018, 2), (2018, 4), (2018, 5), (2018, 1), (2018, 3)}


def _small_games() -> list[str]:
    """The raw text of each chosen game of lichess_small, in order."""
    text = read_data("lichess_small.pgn").decode("utf-8")
    raws = [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", text) if g.strip()]
    out = []
    for raw in raws:
        ((tags, _),) = split_games(raw)
        y, m, _ = tags["UTCDate"].split(".")
        if (int(y), int(m)) in MONTHS:
            out.append(raw)
    return out


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _both(tmp_path_factory.mktemp("small"), "".join(_small_games()))


def test_one_source_per_month_and_the_same_tables_as_the_pgn(small):
    summary, months, _, parquet_out, pgn_out = small
    assert sorted(s["source"] for s in summary["sources"]) == sorted(
        f"standard-chess-games_{y}-{m:02d}" for y, m in months
    )
    assert {s["compression"] for s in summary["sources"]} == {"parquet"}
    a, b = out_tables(parquet_out), out_tables(pgn_out)
    assert a[0].height == sum(len(g) for g in months.values()) == 1486
    # identical, byte offsets included: the text the rows make is the PGN the dumps write
    same_tables(a, b)


def test_against_the_original_pgn_only_the_tags_the_mirror_drops_differ(small, tmp_path):
    """The original lichess_small (its user exports carry Date, Round, Variant "Standard",
    Annotator tags the mirror has no column for): every column is the same but the offsets and
    the two tags the tables keep of them."""
    parquet_out = small[3]
    orig = tmp_path / "orig"
    orig.mkdir()
    by_month: dict = {}
    for raw in _small_games():  # the original games, every tag kept, one file per month as above
        ((tags, _),) = split_games(raw)
        y, m, _ = tags["UTCDate"].split(".")
        by_month.setdefault((int(y), int(m)), []).append(raw)
    paths, names = [], []
    for (y, m), raws in sorted(by_month.items()):
        p = orig / f"lichess_db_standard_rated_{y}-{m:02d}.pgn"
        p.write_text("".join(raws), encoding="utf-8")
        paths.append(p)
        names.append(f"standard-chess-games_{y}-{m:02d}")
    _scan(paths, tmp_path / "out_orig", names=names)
    a, b = out_tables(parquet_out), out_tables(tmp_path / "out_orig")
    differing = {c for c in a[0].columns if not a[0][c].equals(b[0][c])}
    assert differing <= {"byte_offset", "date_tag", "variant"}, differing
    assert a[0]["date_tag"].null_count() == a[0].height and a[0]["variant"].null_count() == a[0].height
    assert b[0].filter(pl.col("variant").is_not_null())["variant"].unique().to_list() == ["Standard"]
    assert a[1].equals(b[1]) and a[2].equals(b[2])


def test_the_forked_engine_reads_row_groups_alike(small, tmp_path):
    """The default engine with two workers, as the command line runs it (in a process of its
    own: the forked engine needs a process without other threads): the month's row-group units
    in forked workers, each reading its own row groups (as a pzstd dump's frame units), small
    units to have several."""
    summary, months, _, parquet_out, _ = small
    (y, m), _games = max(months.items(), key=lambda kv: len(kv[1]))
    name = f"standard-chess-games_{y}-{m:02d}"
    month = next(s["path"] for s in summary["sources"] if s["source"] == name)
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", month, "--out", str(out), "--workers", "2", "--json"]
        + ["--edition", ",".join(EDITIONS), "--unit-mb", "0.25", "--progress", "none"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    again = json.loads(r.stdout.strip().splitlines()[-1])
    assert again["engine_by_source"] == {name: "forked"} and again["units"] > 2
    ref = tuple(t.filter(t["source"] == name) for t in out_tables(parquet_out))
    same_tables(out_tables(out), ref)


def test_show_reads_a_game_of_a_parquet_source_by_its_row(small):
    pytest.importorskip("jinja2")
    _, months, _, parquet_out, pgn_out = small
    (y, m), month_games = max(months.items(), key=lambda kv: len(kv[1]))
    name = f"standard-chess-games_{y}-{m:02d}"
    last = len(month_games) - 1  # the last row of the month's second file
    outs = []
    for out in (parquet_out, pgn_out):
        r = subprocess.run(
            [sys.executable, "-m", "analyzer", "show", str(out), f"{name}#{last}"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1].replace(f"lichess_db_standard_rated_{y}-{m:02d}.pgn", "")
    assert month_games[-1][0]["Site"] in outs[0]


def test_a_single_file_and_a_file_without_movetext(small, tmp_path):
    _, months, _, parquet_out, _ = small
    (y, m) = sorted(months)[0]
    d = tmp_path / "one"
    write_mirror(months[(y, m)], str(d), 1, 100)
    f = d / "data" / f"year={y}" / f"month={m:02d}" / "train-00000-of-00001.parquet"
    out = tmp_path / "out_one"
    summary = _scan([f], out)
    assert summary["sources"][0]["source"] == "train-00000-of-00001"
    assert summary["games"] == len(months[(y, m)])
    # an analyzer table is Parquet without games: refused, saying what it is
    table = next((parquet_out / "games").rglob("*.parquet"))
    cfg = engine.Config(out=str(tmp_path / "x"), editions=resolve_editions(EDITIONS))
    with pytest.raises(InputError, match="a Parquet file, not PGN/PDN text"):
        engine.run_scan([str(table)], cfg, workers=1, progress_interval=0, progress_mode="none")


def test_through_fsspec(small, tmp_path):
    """The same months read through an fsspec filesystem (memory://) as local."""
    fsspec = pytest.importorskip("fsspec", reason="the fsspec reading needs fsspec (draw-rule-analyzer[test])")
    _, months, _, parquet_out, _ = small
    fs = fsspec.filesystem("memory")
    local = tmp_path / "mem"
    write_mirror([g for mg in months.values() for g in mg], str(local), 2, 300)
    for dirpath, _, files in os.walk(local):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), local)
            with open(os.path.join(dirpath, f), "rb") as src:
                fs.pipe(f"/mirror-{tmp_path.name}/standard-chess-games/{rel}", src.read())
    out = tmp_path / "out_mem"
    _scan([f"memory://mirror-{tmp_path.name}/standard-chess-games/data/"], out)
    same_tables(out_tables(out), out_tables(parquet_out))


@pytest.mark.skipif(shared_path("lichess_sample.pgn.zst") is None, reason="needs the shared lichess_sample")
def test_lichess_sample_in_the_mirror_layout_gives_the_pgn_tables(tmp_path):
    import zstandard

    with open(shared_path("lichess_sample.pgn.zst"), "rb") as fh:
        text = zstandard.ZstdDecompressor().decompress(fh.read(), max_output_size=1 << 31).decode("utf-8")
    summary, _, _, parquet_out, pgn_out = _both(tmp_path, text, files_per_month=2, row_group=20_000)
    assert summary["games"] == 50_722
    same_tables(out_tables(parquet_out), out_tables(pgn_out))
