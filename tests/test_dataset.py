"""The dataset at rest (issue 27): a deleted, truncated or flipped file, a damaged record, an
unfinished run and a failed unit are never served as whole tables; a rerun recomputes only the
units of what is damaged; `analyzer verify` says what is wrong and how to repair it.

The input is lichess_small (2,000 games) as a pzstd file of 3 frames, one unit per frame, and
tables compacted in groups of at least 600 games, so that each unit has its own files and a
repair can be seen to recompute one unit, not the source."""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import os
import re
import warnings

import polars as pl
import pyarrow.parquet as pq
import pytest

import analyzer
from analyzer import cli
from analyzer.engine import verify
from analyzer.engine.dataset import Dataset, records
from conftest import out_tables, pzstd_file, same_tables, scan

COMPACT = 600  # games per compacted file: one unit's games (~667) each


# conftest.scan with this module's settings: two editions, a unit per frame, a file per unit
_scan = functools.partial(scan, editions=("fide_2018", "lichess"), frames_per_unit=1, compact_games=COMPACT)


@pytest.fixture(scope="module")
def source(tmp_path_factory, small_text):
    d = tmp_path_factory.mktemp("ds")
    return pzstd_file(d, small_text, name="x4")


@pytest.fixture(scope="module")
def clean(tmp_path_factory, source):
    """A clean run's tables (the reference every repair must give back)."""
    out = tmp_path_factory.mktemp("clean") / "out"
    summary, code = _scan(source, out)
    assert code == 0 and summary["units"] == 3, summary
    return out_tables(out)


def _files(out, table):
    return sorted((out / table / "source=x4").glob("*.parquet"))


def _record(out) -> dict:
    return Dataset(str(out)).source_record("x4")


def _fresh(tmp_path, source):
    out = tmp_path / "out"
    summary, code = _scan(source, out)
    assert code == 0
    return out, summary


def test_record_describes_every_file(tmp_path, source):
    """Rows, bytes and SHA-256 of each committed file, as written; compacted by COMPACT games."""
    out, summary = _fresh(tmp_path, source)
    rec = _record(out)
    assert rec["format"] == records.FORMAT and rec["games"] == summary["games"] == 2000
    assert [e["units"] for e in rec["files"]] == [[0, 1], [1, 2], [2, 3]]
    rows = collections.Counter()
    for e in rec["files"]:
        for t in ("games", "verdicts", "events"):
            desc = e["tables"][t]
            path = out / desc["path"]
            assert path.stat().st_size == desc["bytes"]
            assert pq.read_metadata(path).num_rows == desc["rows"]
            assert hashlib.sha256(path.read_bytes()).hexdigest() == desc["sha256"]
            rows[t] += desc["rows"]
    assert rows["games"] == 2000 and rows["verdicts"] == 2000 * len(summary["editions"])
    # every file of the table folders is listed: nothing else for a folder reader to count
    listed = {e["tables"][t]["path"] for e in rec["files"] for t in ("games", "verdicts", "events")}
    on_disk = {str(p.relative_to(out)) for t in ("games", "verdicts", "events") for p in _files(out, t)}
    assert on_disk == listed


@pytest.mark.parametrize("table", ["games", "verdicts"])
def test_deleted_file_is_recomputed_by_its_unit_only(tmp_path, source, clean, table):
    """Issue 27.1: a deleted part was trusted (exit 0, `complete`, fewer rows)."""
    out, _ = _fresh(tmp_path, source)
    victim = _files(out, table)[1]
    per_game = 1 if table == "games" else len(_record(out)["editions"])
    victim_games = pq.read_metadata(victim).num_rows // per_game
    victim.unlink()
    assert verify.verify(str(out)).whole is False
    summary, code = _scan(source, out)
    assert code == 0
    s = summary["sources"][0]
    assert s["action"] == "run" and "repairing" in s["note"], s
    assert summary["games_analyzed"] == victim_games < 2000  # the damaged file's unit, not the source
    assert summary["games_reused"] == 2000 - summary["games_analyzed"]
    same_tables(clean, out_tables(out))
    assert verify.verify(str(out), deep=True).whole


def test_truncated_file_is_recomputed_and_the_report_reads(tmp_path, source, clean):
    """Issue 27.2: a truncated part was trusted, then crashed the report (polars traceback)."""
    out, _ = _fresh(tmp_path, source)
    victim = _files(out, "games")[0]
    os.truncate(victim, victim.stat().st_size // 2)
    with pytest.raises(analyzer.DatasetError, match="verify"):
        analyzer.scan_games(str(out)).collect()
    assert cli.main(["report", str(out)]) == cli.EXIT_USAGE  # one clear line, no traceback
    summary, code = _scan(source, out)
    assert code == 0 and "repairing" in summary["sources"][0]["note"]
    same_tables(clean, out_tables(out))
    assert cli.main(["report", str(out), "--report-dir", str(tmp_path / "rep")]) == 0


def test_flipped_byte_is_found_by_every_check_and_repaired(tmp_path, source, clean):
    """Issue 35: a byte flipped inside a page keeps size and footer; before, only the deep
    check saw it (verify said whole, the readers served it, a rerun said complete). Now every
    read checks the SHA-256: verify, the API and a plain rerun find it, and the rerun repairs."""
    out, _ = _fresh(tmp_path, source)
    victim = _files(out, "games")[2]
    data = bytearray(victim.read_bytes())
    data[len(data) // 3] ^= 0x20
    victim.write_bytes(bytes(data))
    plain = verify.verify(str(out))
    assert not plain.whole
    (src,) = plain.sources
    assert any("SHA-256" in p for p in src.problems) and (src.repair or "").startswith("analyzer scan ")
    with pytest.raises(analyzer.DatasetError, match="SHA-256"):
        analyzer.scan_games(str(out))
    summary, code = _scan(source, out)
    assert code == 0 and "repairing" in summary["sources"][0]["note"]
    same_tables(clean, out_tables(out))
    assert verify.verify(str(out), deep=True).whole


def test_page_checksums_are_written(tmp_path, source):
    """pyarrow's own page checksum verification catches a flipped byte in a page."""
    import pyarrow.parquet as pq

    out, _ = _fresh(tmp_path, source)
    victim = _files(out, "games")[0]
    meta = pq.ParquetFile(victim).metadata
    col = meta.row_group(0).column(meta.schema.names.index("white"))
    data = bytearray(victim.read_bytes())
    at = col.data_page_offset + 40  # inside the first data page of a text column
    data[at] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(OSError, match=r"CRC|checksum"):
        pq.read_table(victim, page_checksum_verification=True)


def test_damaged_records_are_not_trusted(tmp_path, source, clean):
    """A flipped byte in the source record or a unit record (which decide the numbering) makes
    the record unreadable: the rerun checks and resumes, never mis-numbers."""
    out, _ = _fresh(tmp_path, source)
    rec_path = out / "_manifest" / "x4" / "source.json"
    text = rec_path.read_text()
    rec_path.write_text(text.replace('"games": 2000', '"games": 2001'))
    unit_path = out / "_manifest" / "x4" / "unit-000001.json"
    unit_path.write_text(unit_path.read_text().replace('"games": ', '"games": 1', 1))
    with pytest.raises(analyzer.DatasetError, match="checksum"):
        records.decode(rec_path.read_bytes())
    summary, code = _scan(source, out)
    assert code == 0, summary
    same_tables(clean, out_tables(out))
    assert verify.verify(str(out), deep=True).whole


def _flaky_unit(monkeypatch, failing: int):
    from analyzer.engine import executors

    real = executors.run_unit_safe

    def flaky(spec, cfg, hold=False):
        if spec.index == failing:
            return {"source": spec.source, "unit": spec.index, "failed": True, "error": "RuntimeError: test"}
        return real(spec, cfg, hold)

    monkeypatch.setattr(executors, "run_unit_safe", flaky)


def test_unfinished_run_is_not_served_as_whole(tmp_path, source, clean, monkeypatch, capsys):
    """Issue 27.3: a report of an interrupted run looked finished; scan_games returned its rows."""
    _flaky_unit(monkeypatch, 2)
    out = tmp_path / "out"
    summary, code = _scan(source, out)
    assert code == 1 and summary["sources_incomplete"] == ["x4"]
    monkeypatch.undo()
    with pytest.warns(analyzer.IncompleteDatasetWarning, match="x4"):
        assert analyzer.scan_games(str(out)).collect().height == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        part = analyzer.scan_games(str(out), partial=True).collect()
    assert 0 < part.height < 2000
    assert part["game_index"].to_list() == list(range(part.height))  # the units before the failed one
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "x4" in err and "--partial" in err and "did not finish" in err
    rep = tmp_path / "rep"
    with warnings.catch_warnings():  # a report asked to be partial leaves nothing out, examples included
        warnings.simplefilter("error", analyzer.IncompleteDatasetWarning)
        assert cli.main(["report", str(out), "--partial", "--report-dir", str(rep)]) == 0
    page = (rep / "index.html").read_text()
    links = re.findall(r'href="(games/[^"]+\.html)"', page)
    assert links and all((rep / link).is_file() for link in links), links
    banner = re.search(r"<strong>Partial:</strong>(.*?)</p>", page, re.S)
    assert banner and re.search(rf"source x4: {part.height:,} of about [\d,]+ games", banner.group(1)), banner
    csv = pl.read_csv(rep / "summary_by_population.csv")
    assert csv.height > 0 and csv["partial"].to_list() == [True] * csv.height
    v = verify.verify(str(out))
    assert not v.whole and v.sources[0].state == "unfinished" and "analyzer scan" in (v.sources[0].repair or "")
    summary, code = _scan(source, out)  # the rerun finishes it
    assert code == 0
    same_tables(clean, out_tables(out))


def _no_negative(obj, where="run.json"):
    if isinstance(obj, dict):
        for k, v in obj.items():
            _no_negative(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _no_negative(v, f"{where}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        assert obj >= 0, where


def test_counts_after_failed_units_are_true(tmp_path, source, capsys):
    """Issue 27.4: with every write failing, the summary said `x4 0 games` and `-2,000 reused`."""
    out = tmp_path / "out"
    (out / "verdicts").mkdir(parents=True)
    (out / "verdicts" / "source=x4").write_text("in the way")
    summary, code = _scan(source, out)
    assert code == 1
    s = summary["sources"][0]
    assert summary["games_reused"] == 0 and summary["games_analyzed"] == 2000
    # The first unit's write fails; later units go to staging for the rerun (not failed).
    assert s["complete"] is False and s["units_failed"] == len(summary["units_failed"]) >= 1
    held = [int(re.search(r"\(([\d,]+) games\)", u).group(1).replace(",", "")) for u in summary["units_failed"]]
    assert 0 < s["games_in_failed_units"] == sum(held) < 2000  # each failed unit with the games it held
    run = json.loads((out / "_manifest" / "run.json").read_text())
    _no_negative(run)
    from analyzer.engine.summary import human

    text = human(summary)
    assert f"INCOMPLETE: {len(held)} unit(s) failed, holding {sum(held):,} games" in text
    assert re.search(r"(?<!\w)-\d", text) is None, text  # no negative count


def test_verify_cli_exit_codes(tmp_path, source, capsys):
    out, _ = _fresh(tmp_path, source)
    assert cli.main(["verify", str(out)]) == 0
    assert cli.main(["verify", str(out), "--deep", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["whole"] is True
    _files(out, "events")[1].unlink()
    assert cli.main(["verify", str(out)]) == 1
    text = capsys.readouterr().out
    assert "units 1-1" in text and "missing" in text and "repair: analyzer scan" in text
    assert cli.main(["verify", str(tmp_path)]) == cli.EXIT_USAGE


def test_unlisted_files_are_reported_and_swept(tmp_path, source, clean):
    """A table file left beside the committed ones (a kill between its publication and the
    commit, or between the commit and the sweep: an intent of OUT names it) would be counted by
    a reader of the folder: verify says so, the next run removes it."""
    out, _ = _fresh(tmp_path, source)
    ds = Dataset(str(out))
    (named, _, _) = ds.intend_group("x4", 0, 2)  # as a killed compaction of units 0-1 left it
    stray = out / named
    assert not stray.exists()
    stray.write_bytes(_files(out, "games")[1].read_bytes())
    v = verify.verify(str(out))
    assert not v.whole and "no record lists" in " ".join(v.sources[0].problems)
    summary, code = _scan(source, out)
    assert code == 0 and summary["sources_skipped_as_complete"] == ["x4"]
    assert not stray.exists()
    same_tables(clean, out_tables(out))


def test_files_the_analyzer_did_not_write_are_left_alone(tmp_path, source, clean):
    """Issue 35: files named like parts that a user put in OUT's folders were deleted without a
    word (a notes.txt beside them was kept). Now no record of OUT names them: they are kept,
    with a warning, by a rerun and by --force; verify says a folder reader would count them."""
    out, _ = _fresh(tmp_path, source)
    folder = out / "games" / "source=x4"
    mine = {folder / "part-000001.parquet": b"user 1", folder / "part-000007.parquet": b"user 7"}
    mine[folder / "notes.txt"] = b"notes"
    for p, data in mine.items():
        p.write_bytes(data)
    v = verify.verify(str(out))
    assert not v.whole and "did not write" in " ".join(v.sources[0].problems)
    import logging

    seen: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("analyzer").addHandler(handler)  # (an earlier in-process cli.main stops propagation)
    try:
        summary, code = _scan(source, out)
    finally:
        logging.getLogger("analyzer").removeHandler(handler)
    assert code == 0 and summary["sources_skipped_as_complete"] == ["x4"]
    assert any("did not write" in m for m in seen), seen
    summary, code = _scan(source, out, force=True)
    assert code == 0 and summary["games_analyzed"] == 2000
    assert {p: p.read_bytes() for p in mine} == mine
    same_tables(clean, out_tables(out))


def test_readers_serve_only_listed_files(tmp_path, source, clean):
    """A stray file in a table folder is not read by analyzer's readers."""
    out, _ = _fresh(tmp_path, source)
    stray = out / "games" / "source=x4" / "part-000009.parquet"
    stray.write_bytes(_files(out, "games")[0].read_bytes())
    g = analyzer.scan_games(str(out)).collect().sort(["source", "game_index"])
    assert g.height == 2000 and g.equals(clean[0])  # (two empty reads would be equal)
    assert pl.scan_parquet(str(out / "games" / "*" / "*.parquet")).collect().height > 2000  # a folder reader would
