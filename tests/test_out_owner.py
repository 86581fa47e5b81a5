"""One owner for OUT (issue 35): every read is checked, nothing is touched that the analyzer
did not write. Each test is one of the issue's findings, reproduced as a user would meet it
(a command, its exit code, its one line) and checked against independent facts (bytes on disk,
a sentinel tree hashed before and after, a clean run's tables).

The input is lichess_small (2,000 games) as a pzstd file of 3 frames, one unit per frame and
one compacted file per unit, so that damage to one file is a repair of one unit."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import analyzer
from analyzer.engine import verify
from analyzer.engine.dataset import Dataset
from conftest import out_tables, pzstd_file, same_tables, scan

COMPACT = 600


# conftest.scan with this module's settings: two editions, a unit per frame, a file per unit
_scan = functools.partial(scan, editions=("fide_2018", "lichess"), frames_per_unit=1, compact_games=COMPACT)


@pytest.fixture(scope="module")
def source(tmp_path_factory, small_text):
    return pzstd_file(tmp_path_factory.mktemp("own"), small_text, name="x4")


@pytest.fixture(scope="module")
def clean(tmp_path_factory, source):
    out = tmp_path_factory.mktemp("clean") / "out"
    summary, code = _scan(source, out)
    assert code == 0 and summary["games"] == 2000
    return out_tables(out)


@pytest.fixture
def out(tmp_path, source):
    o = tmp_path / "out"
    summary, code = _scan(source, o)
    assert code == 0 and summary["games"] == 2000
    return o


def _games_files(o):
    files = sorted((o / "games" / "source=x4").glob("part-*.parquet"))
    assert len(files) == 3  # one compacted file per unit
    return files


def _cli(*args, cwd=None):
    env = dict(os.environ, ANALYZER_KERNELS=os.environ.get("ANALYZER_KERNELS", "jit"))
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


def _refused_everywhere(o, match: str) -> None:
    """verify, report, show and the API all refuse OUT, with one line and no number."""
    r = _cli("verify", str(o))
    assert r.returncode == 1 and match in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr
    for args in (("report", str(o), "--report-dir", str(o.parent / "rep")), ("show", str(o), "x4#5")):
        r = _cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1 and match in r.stderr, (args, r.stderr)
        assert not r.stdout.strip(), r.stdout  # nothing printed (no page path, no timeline)
    with pytest.raises(analyzer.DatasetError, match=match):
        analyzer.scan_games(str(o))


def _flip(path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


# 1-3. A changed byte anywhere in a file: data page, page header, footer, statistics.


def _offsets(path) -> dict[str, int]:
    """Byte offsets inside one file's parts, from its own footer (independent of the writer)."""
    meta = pq.ParquetFile(path).metadata
    size = path.stat().st_size
    rg = meta.row_group(0)
    col = rg.column(meta.schema.names.index("game_index"))
    text_col = rg.column(meta.schema.names.index("white"))
    footer_len = int.from_bytes(path.read_bytes()[size - 8 : size - 4], "little")
    return {
        "data page": text_col.data_page_offset + 40,
        "page header": col.data_page_offset + 2,
        "dictionary page": (text_col.dictionary_page_offset or text_col.data_page_offset) + 30,
        "footer": size - 8 - footer_len // 2,
    }


@pytest.mark.parametrize("where", ["data page", "page header", "dictionary page", "footer"])
def test_a_changed_byte_is_never_served(out, source, clean, where):
    """Before: a byte changed in a data page was served (verify whole, report exit 0, a
    duplicated game_index from the API); in a header or the footer the report died in a
    polars traceback. Now every reader refuses it, and a plain rerun repairs it."""
    victim = _games_files(out)[1]
    _flip(victim, _offsets(victim)[where])
    _refused_everywhere(out, "SHA-256")
    summary, code = _scan(source, out)
    assert code == 0 and "repairing" in summary["sources"][0]["note"]
    assert summary["games_analyzed"] < 2000  # the damaged file's unit, not the source
    same_tables(clean, out_tables(out))


def test_a_changed_statistic_does_not_prune_games(out, source, clean):
    """Before: two bytes changed in a row group's game_index max made the report prune it (and
    `show` say "no game" for a game in the file). The footer's statistics are part of the bytes
    the record's SHA-256 covers."""
    victim = _games_files(out)[0]
    meta = pq.ParquetFile(victim).metadata
    stats = meta.row_group(0).column(meta.schema.names.index("game_index")).statistics
    assert stats is not None and stats.has_min_max
    data = bytearray(victim.read_bytes())
    want = int(stats.max).to_bytes(8, "little")
    at = data.rfind(want)
    assert at > 0  # the max, in the footer
    data[at : at + 2] = b"\x00\x00"
    victim.write_bytes(bytes(data))
    assert pq.ParquetFile(victim).metadata.num_rows == meta.num_rows  # a footer that still parses
    _refused_everywhere(out, "SHA-256")


def test_a_forged_file_of_the_same_size_and_rows_is_refused(out, tmp_path, clean):
    """Before: a valid Parquet file of the same table, size and rows in place of a part
    (results swapped) was served by the API and the report."""
    import pyarrow.compute as pc

    from analyzer.engine.dataset.store import parquet_options

    victim = _games_files(out)[2]
    size = victim.stat().st_size
    t = pq.read_table(victim)
    col = t.column("result").cast("string")
    swapped = pc.if_else(pc.equal(col, "1-0"), "0-1", pc.if_else(pc.equal(col, "0-1"), "1-0", col))
    forged = t.set_column(t.schema.get_field_index("result"), "result", swapped.cast(t.schema.field("result").type))
    meta = dict(t.schema.metadata or {})
    key = max(meta, key=lambda k: len(meta[k]))  # the longest value (the editions' parameters)
    value = meta[key]
    for _ in range(20):  # same size: grow or shrink that value until the file has the original's size
        meta[key] = value
        tmp = tmp_path / "forged.parquet"
        pq.write_table(forged.replace_schema_metadata(meta), tmp, **parquet_options(forged.schema))
        d = size - tmp.stat().st_size
        if d == 0:
            break
        value = value + b" " * d if d > 0 else value[:d]
    assert tmp.stat().st_size == size
    assert pq.read_metadata(tmp).num_rows == pq.read_metadata(victim).num_rows
    shutil.copy(tmp, victim)
    _refused_everywhere(out, "SHA-256")


def test_deep_verify_of_a_corrupt_dictionary_page_never_aborts(out):
    """Before: `verify --deep` on a file with a corrupt dictionary page aborted once in 13 runs
    (exit 134, a C++ terminate). Its pages are now decoded only when its SHA-256 matches."""
    victim = _games_files(out)[0]
    _flip(victim, _offsets(victim)["dictionary page"])
    for _ in range(5):
        r = _cli("verify", str(out), "--deep")
        assert r.returncode == 1 and "SHA-256" in r.stdout, (r.returncode, r.stderr[-500:])


# 4. Symbolic links and files the analyzer did not write.


def _tree_hash(root) -> dict[str, str]:
    found = {}
    for dirpath, dirs, names in os.walk(root):
        for n in names + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                found[rel] = os.readlink(p)
            else:
                found[rel] = hashlib.sha256(pathlib.Path(p).read_bytes()).hexdigest()
    return found


def test_a_table_folder_that_is_a_link_is_refused(tmp_path, source):
    """Before: OUT/games a symbolic link to a folder elsewhere: the scan wrote through it, and
    files the analyzer never made in the link's target were later deleted by --force."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "part-000001.parquet").write_bytes(b"not yours")
    (elsewhere / "thesis.txt").write_text("mine")
    o = tmp_path / "out"
    o.mkdir()
    (o / "games").symlink_to(elsewhere)
    before = _tree_hash(elsewhere)
    for extra in ((), ("--force",)):
        r = _cli("scan", str(source), "--out", str(o), *extra)
        assert r.returncode == 2 and "symbolic link" in r.stderr and "games" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert _tree_hash(elsewhere) == before


def test_a_lock_that_is_a_link_is_not_written_through(tmp_path, source):
    """Before: OUT/.lock a symbolic link: its target was truncated and overwritten with a pid."""
    target = tmp_path / "precious.txt"
    target.write_text("do not truncate me")
    o = tmp_path / "out"
    o.mkdir()
    (o / ".lock").symlink_to(target)
    r = _cli("scan", str(source), "--out", str(o))
    assert r.returncode == 2 and "symbolic link" in r.stderr and ".lock" in r.stderr, r.stderr
    assert target.read_text() == "do not truncate me"


def test_a_lock_file_of_someone_else_is_not_overwritten(tmp_path, source):
    o = tmp_path / "out"
    o.mkdir()
    (o / ".lock").write_text("my notes about locks\n")
    r = _cli("scan", str(source), "--out", str(o))
    assert r.returncode == 2 and "not an analyzer lock file" in r.stderr, r.stderr
    assert (o / ".lock").read_text() == "my notes about locks\n"


def test_a_link_inside_a_source_folder_is_not_followed(out, tmp_path, source):
    """A source's table folder replaced by a link after the scan: readers refuse it (naming
    it), and a rerun does not write through it."""
    elsewhere = tmp_path / "copy"
    folder = out / "events" / "source=x4"
    shutil.copytree(folder, elsewhere)
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere)
    before = _tree_hash(elsewhere)
    with pytest.raises(analyzer.DatasetError, match="symbolic link"):
        analyzer.scan_events(str(out))
    r = _cli("scan", str(source), "--out", str(out))
    assert r.returncode == 2 and "symbolic link" in r.stderr and "events" in r.stderr, r.stderr
    assert _tree_hash(elsewhere) == before


# 5. The repair line works for the OUT verified, from where verify is run.


def test_repair_line_of_a_copied_out_repairs_the_copy(tmp_path, source, clean):
    """Before: the repair line was the command recorded at scan time: on a copied OUT it named
    the original --out (following it repaired the other dataset), with input paths relative to
    the original working folder."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(source, work / "x4.pgn.zst")
    r = _cli("scan", "x4.pgn.zst", "--out", "orig", "--frames-per-unit", "1", "--compact-games", str(COMPACT),
             "--edition", "fide_2018,lichess", cwd=work)  # fmt: skip
    assert r.returncode == 0, r.stderr
    shutil.copytree(work / "orig", tmp_path / "copy")
    orig_before = _tree_hash(work / "orig")
    victim = sorted((tmp_path / "copy" / "verdicts" / "source=x4").glob("part-*.parquet"))[1]
    victim.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = _cli("verify", "../copy", cwd=elsewhere)
    assert r.returncode == 1, r.stdout
    (line,) = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("repair: ")]
    cmd = line[len("repair: ") :]
    import shlex

    words = shlex.split(cmd)
    assert words[:2] == ["analyzer", "scan"] and words[words.index("--out") + 1] == "../copy", cmd
    assert os.path.samefile(os.path.join(elsewhere, words[2]), work / "x4.pgn.zst"), cmd  # works from here
    fixed = subprocess.run(
        cmd,
        shell=True,
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]),
    )
    assert fixed.returncode == 0, fixed.stderr
    assert _cli("verify", str(tmp_path / "copy")).returncode == 0
    assert _tree_hash(work / "orig") == orig_before  # the original was not touched
    same_tables(clean, out_tables(tmp_path / "copy"))


def test_repair_line_says_which_input_is_missing(out, source, tmp_path):
    moved = tmp_path / "moved.pgn.zst"
    victim = _games_files(out)[0]
    victim.unlink()
    rec = json.loads((out / "_manifest" / "x4" / "source.json").read_text())
    path = rec["input"]["path"]
    os.rename(path, moved)
    try:
        v = verify.verify(str(out))
        (src,) = v.sources
        assert src.input is None and any("not there any more" in p for p in src.problems), src
        assert "INPUT" in (src.repair or "")
    finally:
        os.rename(moved, path)


# 6. An input rewritten in the middle, its size and mtime kept (rsync -t, cp -p).


def test_an_input_rewritten_with_size_and_mtime_kept_is_stale(tmp_path, small_text):
    """Before: every command, --deep-verify and verify --deep included, kept the stale tables
    and exited 0. The scan records the input's SHA-256 as it reads it; the deep checks re-hash."""
    src = tmp_path / "g.pgn"
    src.write_bytes(small_text)
    o = tmp_path / "out"
    summary, code = scan(src, o)
    assert code == 0
    rec = Dataset(str(o)).source_record("g")
    assert rec["input_sha256"] == hashlib.sha256(small_text).hexdigest()  # as Lichess's sha256sums.txt
    st = src.stat()
    data = bytearray(small_text)
    mid = len(data) // 2
    i = data.index(b'"1-0"', mid)
    data[i : i + 5] = b'"0-1"'  # one game's result, in the middle: not in the first or last MiB
    src.write_bytes(bytes(data))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert src.stat().st_size == st.st_size and src.stat().st_mtime_ns == st.st_mtime_ns
    deep = verify.verify(str(o), deep=True)
    assert deep.sources[0].state == "stale" and "--deep-verify" in (deep.sources[0].repair or ""), deep
    summary, code = scan(src, o, deep_verify=True)
    assert code == 0 and "content changed" in summary["sources"][0]["note"], summary["sources"][0]
    assert summary["games_analyzed"] == 2000
    assert verify.verify(str(o), deep=True).whole


def test_input_hash_is_recorded_for_pzstd_frames(out, source):
    rec = Dataset(str(out)).source_record("x4")
    assert rec["input_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()


# 7. show in the source's encoding; verify | head.


def test_show_reads_a_utf16_source_in_its_encoding(tmp_path, small_text):
    text = small_text[: small_text.index(b"[Event ", 200_000)]
    src = tmp_path / "w.pgn"
    src.write_bytes(b"\xff\xfe" + text.decode("utf-8").encode("utf-16-le"))
    o = tmp_path / "out"
    r = _cli("scan", str(src), "--out", str(o))
    assert r.returncode == 0, r.stderr
    r = _cli("show", str(o), "w#3")
    assert r.returncode == 0, r.stderr
    assert "(no moves" not in r.stdout, r.stdout[:2000]  # before: the text was read as UTF-8: no moves
    assert "No position occurs three times." in r.stdout or "Repeated positions" in r.stdout, r.stdout[:2000]


def test_verify_into_head_ends_quietly(out):
    r = subprocess.run(
        f"{sys.executable} -m analyzer verify {out} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, ANALYZER_KERNELS="jit"),
    )
    assert r.returncode == 0 and r.stdout.startswith("x4: whole"), r
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


# 8. One base for the errors a user meets.


def test_errors_share_one_base():
    from analyzer import errors
    from analyzer.io import remote, sources

    assert issubclass(analyzer.DatasetError, analyzer.AnalyzerError)
    for e in (errors.DamagedRecord, errors.UnsafePath, errors.LockHeld, errors.RunError, sources.InputError):
        assert issubclass(e, errors.AnalyzerError)
    assert not issubclass(errors.DamagedRecord, ValueError)  # not caught with bugs by `except ValueError`
    assert issubclass(remote.MissingExtra, ImportError) and issubclass(errors.GameNotFound, LookupError)
    assert not hasattr(remote, "configure")  # no process-wide storage options


def test_a_unit_that_met_damage_is_read_again(tmp_path, small_text):
    """A frame of the input damaged (a rewrite with size and mtime kept): the run reports it and
    stays unfinished; once the input is whole again the rerun must read that unit again, not
    reuse what it made of the damaged frame (before: it did, and the tables kept the damage)."""
    src = pzstd_file(tmp_path, small_text * 4, name="x4")
    ref = tmp_path / "ref"
    assert _scan(src, ref)[1] == 0
    whole = src.read_bytes()
    st = src.stat()
    assert st.st_size > 3 << 20  # the byte below lies outside the first and last MiB (the cheap identity)
    data = bytearray(whole)
    data[len(data) // 2] ^= 0x01  # inside a middle frame
    src.write_bytes(bytes(data))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    o = tmp_path / "out"
    summary, code = _scan(src, o)
    assert code == 1 and summary["damage"], summary
    src.write_bytes(whole)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    summary, code = _scan(src, o)
    assert code == 0, {k: summary[k] for k in ("damage", "units_failed", "accounting_errors", "warnings", "sources")}
    same_tables(out_tables(ref), out_tables(o))
