"""Inputs and OUT on object storage (issue 19), against a real S3 API served on 127.0.0.1
(moto's server, started here and stopped after) and an HTTP server with byte ranges.

Every comparison is with a local run of the same inputs: the tables must be identical."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip(
    "s3fs",
    reason="the object-storage tests need the extra draw-rule-analyzer[test-cloud] (s3fs, moto's S3 server): "
    "pip install -e '.[test-cloud]' (CI installs it)",
)
pytest.importorskip(
    "moto.moto_server.werkzeug_app",
    reason="the object-storage tests need the extra draw-rule-analyzer[test-cloud] (moto[server]): "
    "pip install -e '.[test-cloud]' (CI installs it)",
)
pytest.importorskip(
    "aiohttp", reason="the HTTP input tests need the extra draw-rule-analyzer[test-cloud] (aiohttp, fsspec's HTTP)"
)

import analyzer
from analyzer import IncompleteDatasetWarning, engine
from analyzer.io import remote
from analyzer.kinds import resolve_editions as resolve
from conftest import pzstd_file, scan
from servers import HTTPRangeServer, S3Server

BUCKET = "games"


@pytest.fixture(scope="module")
def s3():
    server = S3Server()
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    server.client().create_bucket(Bucket=BUCKET)
    try:
        yield server
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(autouse=True)
def _no_faults(request):
    yield
    for name in ("s3", "http"):
        if name in request.fixturenames:
            request.getfixturevalue(name).faults.clear()


def _upload(s3, path: str, key: str) -> str:
    with open(path, "rb") as fh:
        s3.client().put_object(Bucket=BUCKET, Key=key, Body=fh.read())
    return f"s3://{BUCKET}/{key}"


# conftest.scan with this module's two editions
_scan = functools.partial(scan, editions=("fide_2018", "lichess"))


def _tables(out):
    g = analyzer.scan_games(str(out)).collect().sort(["source", "game_index"])
    v = analyzer.scan_verdicts(str(out)).collect().sort(["source", "edition", "game_index"])
    e = analyzer.scan_events(str(out)).collect().sort(["source", "edition", "game_index", "ply", "rule", "kind"])
    return g, v, e


def _same(a, b):
    assert a[0].height > 0
    assert a[0].equals(b[0]), "games differ"
    assert a[1].equals(b[1]), "verdicts differ"
    assert a[2].equals(b[2]), "events differ"


def _keys(s3, prefix: str) -> list[str]:
    out = []
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        out += [o["Key"] for o in page.get("Contents", [])]
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, small_text):
    """Three sources: a pzstd file of several frames, a single-frame zstd file, plain PGN."""
    d = tmp_path_factory.mktemp("inputs")
    import zstandard

    cut = small_text.index(b"[Event ", 2_000_000)
    a = str(pzstd_file(d, small_text * 2, "multi"))
    b = d / "single.pgn.zst"
    b.write_bytes(zstandard.ZstdCompressor(level=3).compress(small_text[:cut]))
    c = d / "plain.pgn"
    c.write_bytes(small_text[cut:])
    return [a, str(b), str(c)]


@pytest.fixture(scope="module")
def local_ref(tmp_path_factory, inputs):
    out = tmp_path_factory.mktemp("ref") / "out"
    summary, code = _scan(inputs, out, workers=1, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0, summary
    return summary, _tables(out)


def test_s3_to_s3_equals_local(s3, inputs, local_ref, tmp_path):
    urls = [_upload(s3, p, f"in1/{os.path.basename(p)}") for p in inputs]
    out = f"s3://{BUCKET}/out1"
    summary, code = _scan(urls, out, workers=2, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0, summary
    assert summary["games"] == local_ref[0]["games"] and summary["units"] == local_ref[0]["units"]
    _same(local_ref[1], _tables(out))
    # Readers trust the manifest: a stray part no record names is not read.
    s3.client().put_object(
        Bucket=BUCKET,
        Key="out1/games/source=multi/part-000000.0123456789ab.parquet",
        Body=s3.client().get_object(Bucket=BUCKET, Key=_keys(s3, "out1/games/source=multi/")[0])["Body"].read(),
    )
    _same(local_ref[1], _tables(out))
    # The lease is gone after the run; a rerun skips every source, reading only records.
    assert not _keys(s3, "out1/.lock")
    again, code = _scan(urls, out, workers=2, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0 and again["sources_skipped_as_complete"] == ["multi", "single", "plain"]
    # --force recomputes, and leaves alone what no record of OUT names (the stray part above).
    cfg = engine.Config(out=out, editions=resolve(["fide_2018", "lichess"]), frames_per_unit=1, unit_text_bytes=1 << 20)
    forced, code = engine.run_scan(urls, cfg, workers=1, force=True, progress_interval=0)
    assert code == 0 and forced["games_analyzed"] == local_ref[0]["games"]
    stray = "out1/games/source=multi/part-000000.0123456789ab.parquet"
    assert stray in _keys(s3, "out1/")
    _same(local_ref[1], _tables(out))
    # Every part under OUT but the stray is one a source record names: nothing left behind.
    named = set()
    for d in ("multi", "single", "plain"):
        rec = json.loads(s3.client().get_object(Bucket=BUCKET, Key=f"out1/_manifest/{d}/source.json")["Body"].read())
        for e in rec["files"]:  # the compacted files the record lists (engine.manifest)
            named.update(f"out1/{t['path']}" for t in e["tables"].values())
    assert {k for k in _keys(s3, "out1/") if k.endswith(".parquet")} == named | {stray}


def test_local_inputs_to_s3_out_and_s3_inputs_to_local_out(s3, inputs, local_ref, tmp_path):
    out = f"s3://{BUCKET}/out2"
    summary, code = _scan(inputs, out, workers=1, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0, summary
    _same(local_ref[1], _tables(out))
    urls = [_upload(s3, p, f"in2/{os.path.basename(p)}") for p in inputs]
    summary, code = _scan(urls, tmp_path / "local", workers=1, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0, summary
    _same(local_ref[1], _tables(tmp_path / "local"))


def test_globs_and_prefixes_plan_every_source(s3, inputs, local_ref, tmp_path):
    for p in inputs:
        _upload(s3, p, f"in3/{os.path.basename(p)}")
    s3.client().put_object(Bucket=BUCKET, Key="in3/README.txt", Body=b"not a game file")
    out = tmp_path / "out"
    summary, code = _scan([f"s3://{BUCKET}/in3/"], out, workers=2, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0, summary
    assert sorted(s["source"] for s in summary["sources"]) == ["multi", "plain", "single"]
    _same(local_ref[1], _tables(out))
    summary, code = _scan([f"s3://{BUCKET}/in3/*.zst"], out, workers=2, frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0 and sorted(summary["sources_skipped_as_complete"]) == ["multi", "single"]
    with pytest.raises(analyzer.io.sources.InputError, match="matches no object"):
        _scan([f"s3://{BUCKET}/in3/*.pdn"], out)
    # Local globs given quoted (not expanded by a shell) too.
    summary, code = _scan(
        [os.path.join(os.path.dirname(inputs[0]), "*.zst")],
        tmp_path / "out2",
        workers=1,
        frames_per_unit=1,
        unit_text_bytes=1 << 20,
    )
    assert code == 0 and sorted(s["source"] for s in summary["sources"]) == ["multi", "single"]


def test_frame_units_read_only_their_ranges(s3, tmp_path, small_text):
    """A pzstd object: the header walk and each unit's frames are ranged reads; no request
    reads the whole object."""
    mf = str(pzstd_file(tmp_path, small_text * 2, "ranges"))
    url = _upload(s3, mf, "in4/ranges.pgn.zst")
    size = os.path.getsize(mf)
    s3.faults.clear()
    summary, code = _scan([url], tmp_path / "out", workers=1, frames_per_unit=1)
    assert code == 0 and summary["units"] >= 3
    gets = [(m, p, r) for m, p, r, _ in s3.faults.log if m == "GET" and p.endswith("/in4/ranges.pgn.zst")]
    assert gets and all(r is not None for _, _, r in gets), gets
    spans = [tuple(int(x) for x in r.split("=")[1].split("-")) for _, _, r in gets]
    assert all(b - a + 1 < size for a, b in spans), spans
    # The units' own reads (one per unit, plus the frame after it) cover every frame once at least.
    from analyzer.io.sources import pzstd_frames

    frames = pzstd_frames(mf)
    assert frames is not None and len(frames) >= 3  # (the loop below checks each)
    for f in frames:
        assert any(a <= f.offset and f.offset + f.size - 1 <= b for a, b in spans), f


def test_transient_errors_on_ranged_reads_are_retried_s3(s3, tmp_path, small_text):
    mf = str(pzstd_file(tmp_path, small_text * 2, "flaky"))
    url = _upload(s3, mf, "in5/flaky.pgn.zst")
    _ref, code = _scan([mf], tmp_path / "ref", workers=1, frames_per_unit=1)
    assert code == 0
    s3.faults.add("GET", "/in5/flaky.pgn.zst", ranged=True, how="503", times=2, skip=3)
    summary, code = _scan([url], tmp_path / "out", workers=1, frames_per_unit=1)
    assert code == 0, summary
    failed = [e for e in s3.faults.log if e[3] == "503"]
    assert len(failed) == 2
    for _, path, rng, _ in failed:  # each failed range was asked for again, and answered
        assert sum(1 for e in s3.faults.log if e[1] == path and e[2] == rng and e[3] is None) >= 1
    _same(_tables(tmp_path / "ref"), _tables(tmp_path / "out"))


@pytest.fixture(scope="module")
def http(tmp_path_factory, small_text):
    root = tmp_path_factory.mktemp("www")
    server = HTTPRangeServer(str(root))
    server.root = root
    yield server
    server.stop()


def test_http_inputs_with_dropped_connections_and_503(http, tmp_path, small_text):
    """http:// (https:// is the same code with TLS): a pzstd file and a single-frame file,
    read by ranges; a connection cut mid-body and a 503 are retried by read_range."""
    import zstandard

    mf = str(pzstd_file(tmp_path, small_text * 2, "web"))
    shutil.copy(mf, http.root / "web.pgn.zst")
    (http.root / "one.pgn.zst").write_bytes(zstandard.ZstdCompressor().compress(small_text))
    _ref, code = _scan([mf, str(http.root / "one.pgn.zst")], tmp_path / "ref", workers=1, frames_per_unit=1)
    assert code == 0
    http.faults.add("GET", "/web.pgn.zst", ranged=True, how="cut", times=1, skip=4)
    http.faults.add("GET", "/web.pgn.zst", ranged=True, how="503", times=1, skip=1)
    http.faults.add("GET", "/one.pgn.zst", ranged=True, how="cut", times=1, skip=2)
    before = remote.STATS["retries"]
    summary, code = _scan(
        [f"{http.url}/web.pgn.zst", f"{http.url}/one.pgn.zst"], tmp_path / "out", workers=1, frames_per_unit=1
    )
    assert code == 0, summary
    assert [e[3] for e in http.faults.log if e[3]] and sorted(e[3] for e in http.faults.log if e[3]) == [
        "503",
        "cut",
        "cut",
    ]
    assert remote.STATS["retries"] - before >= 3
    assert [s["source"] for s in summary["sources"]] == ["web", "one"]
    _same(_tables(tmp_path / "ref"), _tables(tmp_path / "out"))


def test_http_permanent_failure_fails_the_unit_not_the_accounting(http, tmp_path, small_text, monkeypatch):
    """A range that never comes back: the run ends with exit 1 and names the unit, nothing is
    reported as complete, and a rerun (the server well again) completes the source."""
    mf = str(pzstd_file(tmp_path, small_text * 2, "down"))
    shutil.copy(mf, http.root / "down.pgn.zst")
    monkeypatch.setattr(remote, "BACKOFF", 0.01)
    from analyzer.engine import scan as scan_mod

    planned = scan_mod._frame_indexes

    def then_fail(plans, *args):  # the server goes down once the units are planned
        out = planned(plans, *args)
        http.faults.add("GET", "/down.pgn.zst", ranged=True, how="503", times=10**6, skip=0)
        return out

    monkeypatch.setattr(scan_mod, "_frame_indexes", then_fail)
    summary, code = _scan([f"{http.url}/down.pgn.zst"], tmp_path / "out", workers=1, frames_per_unit=1)
    assert code == 1 and summary["units_failed"], summary
    assert not (tmp_path / "out" / "_manifest" / "down" / "source.json").exists()
    monkeypatch.setattr(scan_mod, "_frame_indexes", planned)
    http.faults.clear()
    summary, code = _scan([f"{http.url}/down.pgn.zst"], tmp_path / "out", workers=1, frames_per_unit=1)
    assert code == 0 and summary["games"] == 4000


def _cli_refused(*args: str) -> str:
    """stderr of `python -m analyzer ARGS`, once checked that it exits 2 (a usage or input
    error) with a message and not a traceback."""
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *args], capture_output=True, text=True, env={**os.environ}, timeout=120
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    return r.stderr


def test_missing_object_and_bad_option_exit_2(s3, tmp_path):
    out = str(tmp_path / "o")
    assert "no such object" in _cli_refused("scan", f"s3://{BUCKET}/nope/x.pgn.zst", "--out", out)
    assert "KEY=VALUE" in _cli_refused("scan", "x.pgn", "--storage-option", "novalue", "--out", out)
    _cli_refused("scan", "x.pgn", "--out", "s3://no-such-bucket-here/o")


def test_lease_refuses_a_second_run_and_takes_over_a_dead_one(s3, tmp_path):
    from analyzer.engine.dataset import Dataset
    from analyzer.engine.dataset.lock import LeaseLock
    from analyzer.errors import LockHeld

    out = f"s3://{BUCKET}/leased"
    st = Dataset(out).store
    first = LeaseLock(st, ttl=30).acquire()
    with pytest.raises(LockHeld, match="in use by another analyzer run"):
        LeaseLock(Dataset(out).store, ttl=30).acquire()
    first.release()
    assert not st.exists(".lock")
    # A lease whose holder on this host is gone (kill -9) is taken over at once.
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    body = {
        "host": __import__("socket").gethostname(),
        "pid": proc.pid,
        "pid_start": "",
        "token": "x",
        "started": "then",
        "expires": time.time() + 3600,
        "ttl": 3600,
    }
    proc.kill()
    proc.wait()
    st.put(".lock", json.dumps(body).encode())
    lease = LeaseLock(st, ttl=30).acquire()
    assert json.loads(st.get(".lock"))["token"] == lease.token
    lease.release()
    # Another host's lease that has expired is taken over; one that has not is refused.
    body.update(host="elsewhere", expires=time.time() - 1)
    st.put(".lock", json.dumps(body).encode())
    LeaseLock(st, ttl=30).acquire().release()
    body.update(expires=time.time() + 3600)
    st.put(".lock", json.dumps(body).encode())
    with pytest.raises(LockHeld, match="host elsewhere"):
        LeaseLock(st, ttl=30).acquire()
    st.delete(".lock")


def test_lease_renewal_notices_a_take_over(s3):
    from analyzer.engine.dataset import Dataset
    from analyzer.engine.dataset.lock import LeaseLock

    out = f"s3://{BUCKET}/renewed"
    st = Dataset(out).store
    lease = LeaseLock(st, ttl=0.4).acquire()
    time.sleep(0.3)
    assert json.loads(st.get(".lock"))["expires"] > time.time()  # renewed
    st.put(".lock", json.dumps({"host": "other", "pid": 1, "token": "theirs", "expires": time.time() + 60}).encode())
    deadline = time.time() + 5
    while lease.lost is None and time.time() < deadline:
        time.sleep(0.05)
    lease.release()
    assert lease.lost and "taken over" in lease.lost
    assert json.loads(st.get(".lock"))["token"] == "theirs"  # release leaves another's lease alone
    st.delete(".lock")


def _cli_env(s3):
    return {**os.environ, **s3.env}


def test_kill_9_midway_then_resume_on_s3(s3, tmp_path, small_text):
    mf = str(pzstd_file(tmp_path, small_text * 4, "killed"))
    url = _upload(s3, mf, "in6/killed.pgn.zst")
    ref, code = _scan([mf], tmp_path / "ref", workers=1, editions=("fide_2018",), frames_per_unit=1)
    assert code == 0 and ref["units"] >= 5
    out = f"s3://{BUCKET}/out6"
    args = [
        sys.executable,
        "-m",
        "analyzer",
        "scan",
        url,
        "--out",
        out,
        "--workers",
        "1",
        "--frames-per-unit",
        "1",
        # a group per unit: each unit is committed as it is done (units written straight into
        # a group of a million games would be committed when the group closes)
        "--compact-games",
        "1",
        "--progress-interval",
        "0",
        "--json",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_cli_env(s3))
    deadline = time.time() + 120
    while time.time() < deadline and len([k for k in _keys(s3, "out6/_manifest/killed/") if "unit-" in k]) < 2:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    keys = _keys(s3, "out6/")
    assert "out6/_manifest/killed/source.json" not in keys, "the run finished before the kill"
    assert "out6/.lock" in keys  # the dead run's lease is still there
    with pytest.warns(IncompleteDatasetWarning, match="killed"):
        assert _tables(out)[0].height == 0  # nothing committed: readers see no table yet
    r = subprocess.run(args, capture_output=True, text=True, env=_cli_env(s3), timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["games"] == ref["games"] and summary["games_analyzed"] < ref["games"]
    _same(_tables(tmp_path / "ref"), _tables(out))
    named = set()
    rec = json.loads(s3.client().get_object(Bucket=BUCKET, Key="out6/_manifest/killed/source.json")["Body"].read())
    for e in rec["files"]:
        named.update(f"out6/{t['path']}" for t in e["tables"].values())
    assert {k for k in _keys(s3, "out6/") if k.endswith(".parquet")} == named
    # The report reads the same URL.
    pytest.importorskip("matplotlib")
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "report", out, "--report-dir", str(tmp_path / "rep")],
        capture_output=True,
        text=True,
        env=_cli_env(s3),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rep" / "index.html").exists()
    # ... and says what the report of the same tables on local disk says.
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "analyzer",
            "report",
            str(tmp_path / "ref"),
            "--report-dir",
            str(tmp_path / "rep_local"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    csvs = sorted(p.name for p in (tmp_path / "rep_local").glob("*.csv"))
    assert "summary_by_source.csv" in csvs and "headline.csv" in csvs
    for name in csvs:
        assert (tmp_path / "rep" / name).read_text() == (tmp_path / "rep_local" / name).read_text(), name


def test_dask_cluster_scans_several_sources_from_s3(s3, inputs, local_ref, tmp_path):
    pytest.importorskip("dask.distributed", reason="optional extra draw-rule-analyzer[dask]")
    urls = [_upload(s3, p, f"in7/{os.path.basename(p)}") for p in inputs]
    out = f"s3://{BUCKET}/out7"
    summary, code = _scan(urls, out, workers=2, engine="dask", frames_per_unit=1, unit_text_bytes=1 << 20)
    assert code == 0, summary
    assert summary["engine"] == "dask" and summary["units"] == local_ref[0]["units"]
    _same(local_ref[1], _tables(out))


def test_storage_options_belong_to_the_call(s3, tmp_path, monkeypatch, small_text):
    """Before: each reader call replaced one process-wide dict of storage options
    (io/remote.configure), so a call with options for one store changed every later call.
    Now the options travel with the call: a read with a wrong endpoint fails, and the next read
    without options (the environment's endpoint) works."""
    from analyzer.io import remote

    monkeypatch.setattr(remote, "RETRIES", 1)
    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:200_000])
    out = f"s3://{BUCKET}/per-call"
    summary, code = _scan([str(src)], out)
    assert code == 0 and summary["games"] > 0
    with pytest.raises(Exception):  # noqa: B017 - any failure to reach the wrong endpoint
        analyzer.scan_games(out, storage_options={"endpoint_url": "http://127.0.0.1:9"}).collect()
    g = analyzer.scan_games(out).collect()
    assert g.height == summary["games"]
