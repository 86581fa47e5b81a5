"""The batch job end to end: formats, work units, resume after kill -9, CLI errors, accounting."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

from analyzer import engine
from analyzer.engine import unit as unit_mod
from analyzer.kinds import resolve_editions as resolve
from conftest import alive, live_children, need, out_tables, pzstd_file, same_tables, scan

SMALL = need("lichess_small.pgn")


_scan = scan


_tables = out_tables
_same_tables = same_tables


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, small_text):
    """lichess_small as plain text, one unit, one worker."""
    d = tmp_path_factory.mktemp("base")
    src = d / "games.pgn"
    src.write_bytes(small_text)
    out = d / "out"
    summary, code = _scan([src], out)
    assert code == 0
    return summary, _tables(out)


def test_every_game_has_a_row(baseline, small_text):
    summary, (games, _, _) = baseline
    assert summary["games"] == small_text.count(b"[Event ") == games.height == 2000
    assert games["game_index"].to_list() == list(range(2000))
    # byte_offset points at the game's first tag.
    offsets = games["byte_offset"].to_list()
    assert all(small_text[o : o + 7] == b"[Event " for o in offsets)


@pytest.mark.parametrize("fmt", ["gz", "bz2", "zst"])
def test_compressed_inputs_give_the_same_tables(tmp_path, baseline, small_text, fmt):
    src = tmp_path / f"games.pgn.{fmt}"
    if fmt == "gz":
        src.write_bytes(gzip.compress(small_text))
    elif fmt == "bz2":
        src.write_bytes(bz2.compress(small_text))
    else:
        import zstandard

        src.write_bytes(zstandard.ZstdCompressor(level=3).compress(small_text))
    _summary, code = _scan([src], tmp_path / "out", unit_text_bytes=1 << 20)
    assert code == 0
    _same_tables(baseline[1], _tables(tmp_path / "out"))


def test_pzstd_multiframe_equals_single_frame(tmp_path, baseline, small_text):
    mf = pzstd_file(tmp_path, small_text)  # 3 frames of 2 MiB for this 5.4 MB file
    from analyzer.io.sources import pzstd_frames

    frames = pzstd_frames(str(mf))
    assert frames is not None and len(frames) >= 3
    summary, code = _scan([mf], tmp_path / "out", workers=2, frames_per_unit=1)
    assert code == 0
    assert summary["units"] == len(frames)
    _same_tables(baseline[1], _tables(tmp_path / "out"))
    # Default grouping by size: a budget of ~1.5 frames' compressed bytes puts two frames in a unit.
    per_unit = int(1.5 * frames[0].size) * engine.config.TEXT_PER_COMPRESSED_BYTE
    summary, code = _scan([mf], tmp_path / "out2", workers=2, frame_unit_text_bytes=per_unit)
    assert code == 0
    assert 1 < summary["units"] < len(frames)
    _same_tables(baseline[1], _tables(tmp_path / "out2"))


def test_many_units_equal_one_unit(tmp_path, baseline, small_text):
    src = tmp_path / "games.pgn"
    src.write_bytes(small_text)
    summary, code = _scan([src], tmp_path / "out", workers=2, unit_text_bytes=300_000)
    assert code == 0 and summary["units"] > 10
    _same_tables(baseline[1], _tables(tmp_path / "out"))


def test_rerun_skips_and_force_recomputes(tmp_path, small_text):
    src = tmp_path / "games.pgn"
    src.write_bytes(small_text)
    out = tmp_path / "out"
    _scan([src], out, unit_text_bytes=1 << 20)
    first = _tables(out)
    summary, _code = _scan([src], out, unit_text_bytes=1 << 20)
    assert summary["sources_skipped_as_complete"] == ["games"]
    _same_tables(first, _tables(out))
    cfg = engine.Config(out=str(out), editions=resolve(["fide_2018"]), unit_text_bytes=1 << 20)
    summary, _code = engine.run_scan([str(src)], cfg, force=True, progress_interval=0)
    assert summary["sources_skipped_as_complete"] == []
    assert summary["games_analyzed"] == summary["games"] == 2000  # nothing reused (failed before)
    _same_tables(first, _tables(out))


def _cli(*args, **kw):
    if args and args[0] == "scan":
        args = (*args, "--json")
    return subprocess.run([sys.executable, "-m", "analyzer.cli", *args], capture_output=True, text=True, **kw)


def _start_until_units(args, out, n_units):
    """Start `analyzer <args> --out OUT` and return once n_units unit records are written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer.cli", *args, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    mdir = out / "_manifest" / "games"
    deadline = time.time() + 120
    while time.time() < deadline:
        if mdir.exists() and len(list(mdir.glob("unit-*.json"))) >= n_units:
            break
        time.sleep(0.02)
    return proc, mdir


def test_kill_9_midway_then_resume_gives_identical_tables(tmp_path, small_text):
    src = tmp_path / "games.pgn"
    src.write_bytes(small_text * 3)
    ref_out = tmp_path / "ref"
    args = ["scan", str(src), "--workers", "1", "--unit-mb", "0.5", "--progress-interval", "0"]
    r = _cli(*args, "--out", str(ref_out))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    proc, mdir = _start_until_units(args, out, 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_units = len(list(mdir.glob("unit-*.json")))
    assert n_units >= 3
    assert not (out / "_manifest" / "games" / "source.json").exists(), "run finished before the kill"
    # No partial file under a final name: every final part is a readable Parquet file (and the
    # units recorded before the kill have their parts there: the check reads some).
    parts = list((out / "games").rglob("*.parquet")) + list((out / "events").rglob("*.parquet"))
    assert len(parts) >= 2, parts
    for p in parts:
        pl.read_parquet(p)
    r = _cli(*args, "--out", str(out))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["games"] == 6000
    _same_tables(_tables(ref_out), _tables(out))


def test_cli_missing_input_is_a_clear_error(tmp_path):
    r = _cli("scan", str(tmp_path / "nope.pgn"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "no such file" in r.stderr and "Traceback" not in r.stderr


def test_cli_bad_arguments(tmp_path):
    r = _cli("scan", "--workers", "0", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "must be at least 1" in r.stderr and "Traceback" not in r.stderr
    r = _cli("scan", SMALL, "--edition", "fide_1900", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "unknown edition" in r.stderr and "Traceback" not in r.stderr


def test_cli_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _cli("scan", SMALL, "--out", str(blocker / "sub"))
    assert r.returncode == 2 and "not writable" in r.stderr and "Traceback" not in r.stderr


def test_cli_stdin(tmp_path, small_text):
    head = small_text[: small_text.index(b"[Event ", 200_000)]
    r = _cli("scan", "-", "--out", str(tmp_path / "o"), "--progress-interval", "0", input=head.decode())
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["games"] == head.count(b"[Event ")


def test_failed_unit_spills_later_units_then_rerun_completes(tmp_path, baseline, small_text, monkeypatch):
    """With the in-process engines the units after a failed one cannot get their global numbering
    in this run: they go to staging at once (not held in memory), the run exits 1 naming the
    unit, and a rerun reuses them and gives the tables of a clean run."""
    src = tmp_path / "games.pgn"
    src.write_bytes(small_text)
    out = tmp_path / "out"
    real = unit_mod.run_unit

    def flaky(spec, cfg, hold=False):
        if spec.index == 1:
            raise RuntimeError("injected failure")
        return real(spec, cfg, hold=hold)

    monkeypatch.setattr(unit_mod, "run_unit", flaky)
    summary, code = _scan([src], out, workers=2, unit_text_bytes=200_000)
    assert code == 1 and any("unit 1: RuntimeError: injected failure" in u for u in summary["units_failed"])
    staged = {int(n.split("-")[1].split(".")[0]) for n in os.listdir(os.path.join(out, "_staging", "games"))}
    assert staged and 1 not in staged and max(staged) > 1, staged
    monkeypatch.setattr(unit_mod, "run_unit", real)
    calls = []

    def counting(spec, cfg, hold=False):
        calls.append(spec.index)
        return real(spec, cfg, hold=hold)

    monkeypatch.setattr(unit_mod, "run_unit", counting)
    summary, code = _scan([src], out, workers=2, unit_text_bytes=200_000)
    assert code == 0
    assert 1 in calls and not staged & set(calls), (calls, staged)
    _same_tables(baseline[1], _tables(out), ignore_source=True)


def test_after_a_failure_units_are_not_held_in_memory(tmp_path):
    """OrderedFinalizer after a failed unit: every later unit goes to staging as it arrives
    (a month-long run with an early failure must not hold every later unit in memory)."""
    from analyzer import tables
    from analyzer.engine.dataset import TABLES, Dataset
    from analyzer.engine.numbering import OrderedFinalizer

    ds = Dataset(str(tmp_path))
    f = OrderedFinalizer(ds, "s")
    rec = {
        "source": "s",
        "unit": 3,
        "games": 0,
        "text_start": 0,
        "text_bytes": 0,
        "frame_text_bytes": None,
        "_held": tuple(tables.SCHEMAS[t].empty_table() for t in TABLES),
    }
    f.fail()
    f.add(rec)
    assert "_held" not in rec
    written = ds.unit_record("s", 3)
    assert written is not None and set(written["parts"]) == set(TABLES)
    assert all(p.startswith("_staging/s/unit-000003.") for p in written["parts"].values())
    assert all(os.path.exists(tmp_path / p) for p in written["parts"].values())


def test_frame_groups_by_size_and_by_count():
    """Default units group whole frames up to ~frame_unit_text_bytes of text (estimated from the
    compressed sizes); --frames-per-unit fixes the count. Every frame is in exactly one unit."""
    from analyzer.engine.config import FRAME_UNIT_TEXT_BYTES, TEXT_PER_COMPRESSED_BYTE
    from analyzer.engine.plan import frame_groups

    budget = FRAME_UNIT_TEXT_BYTES // TEXT_PER_COMPRESSED_BYTE
    cfg = engine.Config(out="x", editions=[])
    sizes = [budget // 3 + 1] * 10  # three frames fill a unit
    groups = frame_groups(sizes, cfg)
    assert groups == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert frame_groups([budget * 2, 5, 5], cfg) == [(0, 1), (1, 3)]
    assert frame_groups([], cfg) == []
    cfg.frames_per_unit = 4
    assert frame_groups(sizes, cfg) == [(0, 4), (4, 8), (8, 10)]


def test_summary_counts_equal_the_tables(tmp_path):
    """The run summary's status, rule and event counts (kept per block from the dictionary
    codes) equal counts over the written tables: chess with two editions, edge cases, draughts."""
    import polars as pl

    inputs = [SMALL, need("edge_cases.pgn"), need("draughts/russian_gametype25.pdn")]
    cfg = engine.Config(out=str(tmp_path / "out"), editions=resolve(["fide_2018", "lichess"]), unit_text_bytes=300_000)
    summary, _code = engine.run_scan(inputs, cfg, workers=2, progress_interval=0)
    g, v, e = _tables(tmp_path / "out")
    status = dict(g.group_by("status").len().iter_rows())
    assert summary["status"] == status and sum(status.values()) == summary["games"] == g.height
    rules = {}
    for colname in unit_mod.RULE_COLUMNS:
        for ed, n in v.filter(pl.col(colname).is_not_null()).group_by("edition").len().iter_rows():
            rules[f"{ed}:{colname}"] = n
    assert summary["rules"] == rules and rules
    events = {f"{a}:{b}:{c}": n for a, b, c, n in e.group_by(["edition", "rule", "kind"]).len().iter_rows()}
    assert summary["events"] == events and events


def test_split_pieces_gives_the_joined_text(small_text):
    """The sequential reader keeps a unit as its read pieces: splitting them anywhere gives
    what the joined text gives, with no empty piece."""
    import random

    from analyzer.engine.plan import split_pieces

    rng = random.Random(3)
    text = small_text[:400_000]
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, 12)))
        pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        at = rng.randrange(len(text) + 1)
        head, tail = split_pieces(pieces, at)
        assert b"".join(head) == text[:at] and b"".join(tail) == text[at:]
        assert all(head) and all(tail)


# ---------------------------------------------------------------------------------------------
# The forked engine (pzstd inputs, several workers, Linux): children write their own parts


_FLAKY_SCAN = """
import json, os, sys
from analyzer import engine
from analyzer.kinds import resolve_editions as resolve
mf, out, pids, failure = sys.argv[1:5]
from analyzer.engine import unit as U
real = U.run_unit

def flaky(spec, cfg, hold=False):
    with open(pids, "a") as fh:
        fh.write(f"{os.getpid()} {spec.index}\\n")
    if spec.index == 2 and failure != "none":
        if failure == "exception":
            raise RuntimeError("injected failure")
        os._exit(3)
    return real(spec, cfg, hold=hold)

U.run_unit = flaky
cfg = engine.Config(out=out, editions=resolve(["fide_2018"]), frames_per_unit=1)
summary, code = engine.run_scan([mf], cfg, workers=2, progress_interval=0)
print(json.dumps({"code": code, "failed": summary["units_failed"], "pid": os.getpid(),
                  "engine": summary["engine_by_source"]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked engine is for Linux")
@pytest.mark.parametrize("failure", ["exception", "worker exits"])
def test_forked_engine_failure_then_rerun_gives_the_threads_tables(tmp_path, small_text, failure):
    """A unit that raises, or a worker process that dies, in the forked engine: the run exits 1
    naming the unit, the other units are kept (final or staging), and a rerun recomputes only
    what is missing and gives the tables of a run with worker threads. (In a fresh process:
    the forked engine is used only where no other thread runs.)"""
    mf = pzstd_file(tmp_path, small_text * 2)
    ref = tmp_path / "ref"
    summary, code = scan([mf], ref, engine="threads", workers=2, frames_per_unit=1)
    assert code == 0 and summary["units"] >= 5
    out, pids = tmp_path / "out", tmp_path / "pids"
    results = []
    for what in (failure, "none"):
        r = subprocess.run(
            [sys.executable, "-c", _FLAKY_SCAN, str(mf), str(out), str(pids), what],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        results.append(json.loads(r.stdout.strip().splitlines()[-1]))
    first, rerun = results
    assert first["code"] == 1 and any("unit 2:" in u for u in first["failed"]), first
    worker_pids = {line.split()[0] for line in pids.read_text().splitlines()}
    assert str(first["pid"]) not in worker_pids and str(rerun["pid"]) not in worker_pids
    assert first["engine"] == rerun["engine"] == {"games": "forked"}
    assert rerun["code"] == 0, rerun
    _same_tables(_tables(ref), _tables(out))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked engine is for Linux")
def test_forked_engine_kill_9_midway_then_resume(tmp_path, small_text):
    """kill -9 of a 2-worker scan of a pzstd file (forked workers) midway, then the same command:
    the tables of an uninterrupted run; the workers do not outlive their parent."""
    mf = pzstd_file(tmp_path, small_text * 3)
    args = ["scan", str(mf), "--workers", "2", "--frames-per-unit", "1", "--progress-interval", "0"]
    r = _cli(*args, "--out", str(tmp_path / "ref"), "--engine", "threads")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    proc, mdir = _start_until_units(args, out, 2)
    children = live_children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (mdir / "source.json").exists(), "run finished before the kill"
    assert len(children) == 2, "the scan did not run in two forked workers"
    deadline = time.time() + 60
    while time.time() < deadline and any(alive(p) for p in children):
        time.sleep(0.05)
    assert not any(alive(p) for p in children), "worker processes outlived the killed parent"
    parts = list((out / "games").rglob("*.parquet")) + list((out / "events").rglob("*.parquet"))
    assert len(parts) >= 2, parts  # the units recorded before the kill: their parts are read
    for p in parts:
        pl.read_parquet(p)
    r = _cli(*args, "--out", str(out))
    assert r.returncode == 0, r.stderr
    _same_tables(_tables(tmp_path / "ref"), _tables(out))
