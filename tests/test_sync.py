"""`analyzer sync` (issue 38): a listing laid out as database.lichess.org, served by the standard
library's HTTP server (tests/servers.py: byte ranges, ETag/If-Range, connections cut on purpose)
or read from a folder.

The listing: three standard months built from lichess_small (their UTCDate and Date set into
the month; 2021-02 holds 2021.02.09 games, a day of a known data issue), cut into pzstd-style
frames (each behind its skippable header) or one zstd frame, an atomic month (the atomic fixture)
and a broadcast month (the database page's broadcast sample). list.txt names them by their
database.lichess.org URLs, as the site does; sha256sums.txt and counts.txt are written as the
export scripts write them (`sha256sum`; `grep --count -F '[Site '`, `[GameURL ` for broadcasts).

The oracle of the tables is `analyzer scan` of the same files: a month synced is the same
source, with the same tables, as the scan of its file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest
import zstandard

from analyzer import engine
from analyzer.engine.dataset import Dataset
from analyzer.engine.sync import STALE_UNITS, SyncOptions, run_sync
from analyzer.kinds import resolve_editions
from conftest import VARIANTS, need, out_tables, read_data, same_tables
from servers import HTTPRangeServer

SMALL = need("lichess_small.pgn")
EDITIONS = ["lichess", "fide_2018"]
PER_MONTH = 600
SKIPPABLE = 0x184D2A50


def _read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _write(path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def _games() -> list[str]:
    text = read_data("lichess_small.pgn").decode("utf-8", "replace")
    return [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", text) if g.strip()]


def _month_text(k: int, month: str) -> bytes:
    """PER_MONTH games of lichess_small (the k-th slice), dated in `month`; a tenth of 2021-02's
    on the 9th (a day of a known data issue), the others on the 15th."""
    y, m = month.split("-")
    out = []
    for i, g in enumerate(_games()[k * PER_MONTH : (k + 1) * PER_MONTH]):
        day = "09" if (month == "2021-02" and i % 10 == 0) else "15"
        out.append(re.sub(r'\[(UTCDate|Date) "[^"]*"\]', rf'[\1 "{y}.{m}.{day}"]', g))
    return "".join(out).encode()


def _pzstd(text: bytes, frame_text: int = 256 << 10) -> bytes:
    """zstd frames of `frame_text` bytes of text, each behind pzstd's 12-byte skippable header."""
    cctx = zstandard.ZstdCompressor(level=3)
    out = bytearray()
    for a in range(0, len(text), frame_text):
        frame = cctx.compress(text[a : a + frame_text])
        out += struct.pack("<III", SKIPPABLE, 4, len(frame)) + frame
    return bytes(out)


def _count(text: bytes, tag: str) -> int:
    """counts.txt's count: lines holding `[TAG ` (grep --count -F)."""
    needle = f"[{tag} ".encode()
    return sum(1 for line in text.split(b"\n") if needle in line)


def _write_folder_files(root, folder: str) -> None:
    """list.txt, sha256sums.txt and counts.txt of a folder from the dumps in it (as the site's
    scripts write them; the count from the decompressed text)."""
    d = os.path.join(root, folder)
    names = sorted(n for n in os.listdir(d) if n.endswith(".pgn.zst"))
    tag = "GameURL" if folder == "broadcast" else "Site"
    with open(os.path.join(d, "list.txt"), "w") as fh:
        fh.write("\n".join(f"https://database.lichess.org/{folder}/{n}" for n in names))
    sums, counts = [], []
    for n in names:
        data = _read(os.path.join(d, n))
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {n}\n")
        text = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
        counts.append(f"{n} {_count(text, tag)}\n")
    _write(os.path.join(d, "sha256sums.txt"), "".join(sums).encode())
    _write(os.path.join(d, "counts.txt"), "".join(counts).encode())


def _add(root, folder: str, file: str, data: bytes) -> str:
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    path = os.path.join(root, folder, file)
    with open(path, "wb") as fh:
        fh.write(data)
    _write_folder_files(root, folder)
    return path


STANDARD = ["2021-01", "2021-02", "2021-03"]


def _std_file(month: str) -> str:
    return f"lichess_db_standard_rated_{month}.pgn.zst"


def build_listing(root, months=STANDARD, extra=True) -> dict:
    """The listing under `root`; returns source name -> its local file."""
    files = {}
    for k, month in enumerate(months):
        text = _month_text(k, month)
        data = zstandard.ZstdCompressor(level=3).compress(text) if k % 2 else _pzstd(text)
        files[_std_file(month)[:-8]] = _add(root, "standard", _std_file(month), data)
    if extra:
        atomic = _read(os.path.join(VARIANTS, "atomic.pgn"))
        name = "lichess_db_atomic_rated_2021-02.pgn.zst"
        files[name[:-8]] = _add(root, "atomic", name, _pzstd(atomic, 64 << 10))
        name = "lichess_db_broadcast_2025-01.pgn.zst"
        data = zstandard.ZstdCompressor(level=3).compress(read_data("broadcast_sample.pgn"))
        files[name[:-8]] = _add(root, "broadcast", name, data)
    return files


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The listing, built once, and the tables of `analyzer scan` of its files (the oracle)."""
    root = tmp_path_factory.mktemp("site")
    files = build_listing(str(root))
    ref = tmp_path_factory.mktemp("ref") / "out"
    cfg = engine.Config(out=str(ref), editions=resolve_editions(EDITIONS))
    _, code = engine.run_scan(sorted(files.values()), cfg, workers=2, progress_interval=0, progress_mode="none")
    assert code == 0
    return {"root": str(root), "files": files, "ref": out_tables(ref)}


@pytest.fixture
def copy(site, tmp_path):
    """A copy of the listing this test may change."""
    root = tmp_path / "site"
    shutil.copytree(site["root"], root)
    return str(root)


@pytest.fixture
def server(copy):
    srv = HTTPRangeServer(copy)
    try:
        yield srv
    finally:
        srv.stop()


def _sync(listing, out, **opts):
    cfg = engine.Config(out=str(out), editions=resolve_editions(EDITIONS))
    options = engine.ScanOptions(workers=2, progress_mode="none", progress_interval=0)
    return run_sync(listing, cfg, options, SyncOptions(**opts))


def _dump_gets(srv) -> list[str]:
    """The dumps the server was asked for (GETs of .pgn.zst files)."""
    return [path for method, path, _, _ in srv.faults.log if method == "GET" and path.endswith(".pgn.zst")]


def _committed(out) -> set[str]:
    return {s.name for s in Dataset(str(out)).sources() if s.complete}


def _left_of(out, name: str) -> list[str]:
    """Every file or folder under OUT that belongs to source `name` (nothing may be left of a
    month that failed)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(out):
        for n in dirnames + filenames:
            if name in n:
                found.append(os.path.join(dirpath, n))
    return found


# ---------------------------------------------------------------------------------------------


def test_sync_over_http_equals_scan_and_a_rerun_reads_no_dump(site, server, tmp_path):
    out = tmp_path / "out"
    summary, code = _sync(server.url, out)
    assert code == 0, summary
    assert summary["exit_cause"] == "5 month(s) done"
    assert summary["folders"] == ["standard", "atomic", "broadcast"]
    assert summary["months_found"] == 5 and summary["months_failed"] == []
    # oldest month first, then the folders in the site's order
    assert summary["months_done"] == [
        "lichess_db_standard_rated_2021-01",
        "lichess_db_standard_rated_2021-02",
        "lichess_db_atomic_rated_2021-02",
        "lichess_db_standard_rated_2021-03",
        "lichess_db_broadcast_2025-01",
    ]
    for name, path in site["files"].items():
        assert summary["checksums"][name] == hashlib.sha256(_read(path)).hexdigest()
    same_tables(out_tables(out), site["ref"])
    assert sorted(_dump_gets(server)) == sorted(f"/{f}/{os.path.basename(p)}" for f, p in _folders(site))
    # the broadcast month: its tags are columns; the day is marked in 2021-02 only
    g = out_tables(out)[0]
    bc = g.filter(g["source"] == "lichess_db_broadcast_2025-01")
    assert bc["game_url"].to_list() == [
        "https://lichess.org/broadcast/new-zealand-chess-congress-2025--championship/round-1/spI5tcia/oHmutTGn"
    ]
    feb = g.filter(g["source"] == "lichess_db_standard_rated_2021-02")
    marked = feb.filter(feb["data_issue"].is_not_null())
    assert marked.height == PER_MONTH // 10 and set(marked["utc_date"]) == {"2021.02.09"}
    assert set(marked["data_issue"]) == {"resigned_after_end_2021_02_09"}
    # nothing new: exit 0, every month skipped, no dump read
    server.faults.clear()
    again, code = _sync(server.url, out)
    assert code == 0 and again["exit_cause"] == "nothing new"
    assert sorted(again["months_skipped"]) == sorted(site["files"]) and again["months_done"] == []
    assert _dump_gets(server) == []


def _folders(site):
    return [(os.path.basename(os.path.dirname(p)), p) for p in site["files"].values()]


def _set_listed(root, folder: str, file: str, sha: str | None = None, games: int | None = None) -> None:
    d = os.path.join(root, folder)
    if sha is not None:
        p = os.path.join(d, "sha256sums.txt")
        text = _read(p).decode()
        _write(p, re.sub(rf"^[0-9a-f]{{64}}(  {re.escape(file)})$", rf"{sha}\1", text, flags=re.M).encode())
    if games is not None:
        p = os.path.join(d, "counts.txt")
        text = _read(p).decode()
        _write(p, re.sub(rf"^({re.escape(file)}) \d+$", rf"\1 {games}", text, flags=re.M).encode())


def test_wrong_checksum_and_wrong_count_commit_nothing_of_those_months(site, copy, server, tmp_path):
    """The command as cron runs it: the months whose SHA-256 or game count differ from the
    listing are named, with what differed, and nothing of them is in OUT; the others are."""
    jan, mar = _std_file("2021-01"), _std_file("2021-03")
    _set_listed(copy, "standard", jan, sha="0" * 64)
    true_count = _count(
        zstandard.ZstdDecompressor().stream_reader(_read(site["files"][mar[:-8]]), read_across_frames=True).read(),
        "Site",
    )
    _set_listed(copy, "standard", mar, games=true_count + 1)
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "sync", server.url, "--out", str(out), "--json", "--workers", "2"]
        + ["--edition", ",".join(EDITIONS), "--progress", "none"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 1, r.stderr[-3000:]
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    failed = {m["source"]: m["reason"] for m in summary["months_failed"]}
    assert set(failed) == {jan[:-8], mar[:-8]}
    assert failed[jan[:-8]].startswith("SHA-256 ") and "differs from sha256sums.txt's 0000" in failed[jan[:-8]]
    assert (
        failed[mar[:-8]]
        == f"{true_count} games ({true_count} with a [Site] tag) where counts.txt says {true_count + 1}"
    )
    # one line each on stderr, naming the month and what differed
    for name, reason in failed.items():
        assert f"month failed: {name}: {reason}" in r.stderr
    assert summary["exit"] == 1 and summary["exit_cause"].startswith("2 month(s) failed: ")
    # nothing of them committed, nothing of them left at all; the other three whole
    assert _committed(out) == set(site["files"]) - set(failed)
    for name in failed:
        assert _left_of(out, name) == [], name
    g, v, e = out_tables(out)
    assert set(g["source"]) == set(site["files"]) - set(failed)
    ref = tuple(t.filter(~t["source"].is_in(list(failed))) for t in site["ref"])
    same_tables((g, v, e), ref)


def test_connection_cut_in_the_middle_is_resumed(site, server, tmp_path):
    feb = _std_file("2021-02")
    size = os.path.getsize(site["files"][feb[:-8]])
    # the first GET is cut a third of the way in, the resumption (a ranged GET) at two thirds
    server.faults.add("GET", f"/standard/{feb}", ranged=False, how=f"cut:{size // 3}")
    server.faults.add("GET", f"/standard/{feb}", ranged=True, how=f"cut:{size // 3}")
    out = tmp_path / "out"
    summary, code = _sync(server.url, out, folders=["standard"])
    assert code == 0, summary
    month = next(m for m in summary["months"] if m["source"] == feb[:-8])
    assert month["resumes"] == 2 and month["status"] == "done"
    ranges = [rng for method, path, rng, _ in server.faults.log if path == f"/standard/{feb}" and method == "GET"]
    assert ranges == [None, f"bytes={size // 3}-", f"bytes={2 * (size // 3)}-"]
    assert summary["checksums"][feb[:-8]] == hashlib.sha256(_read(site["files"][feb[:-8]])).hexdigest()
    ref = tuple(t.filter(t["source"].str.starts_with("lichess_db_standard")) for t in site["ref"])
    same_tables(out_tables(out), ref)


def test_a_cut_that_cannot_be_resumed_fails_the_month_and_commits_nothing(site, server, tmp_path):
    mar = _std_file("2021-03")
    size = os.path.getsize(site["files"][mar[:-8]])
    server.faults.add("GET", f"/standard/{mar}", ranged=False, how=f"cut:{size // 2}")
    server.faults.add("GET", f"/standard/{mar}", ranged=True, how="norange", times=10)  # ignores the range
    out = tmp_path / "out"
    summary, code = _sync(server.url, out, folders=["standard"])
    assert code == 1
    (failed,) = summary["months_failed"]
    assert failed["source"] == mar[:-8]
    assert failed["reason"].startswith("read incompletely") and "does not honour byte ranges" in failed["reason"]
    assert _committed(out) == {_std_file(m)[:-8] for m in ("2021-01", "2021-02")}
    assert _left_of(out, mar[:-8]) == []


def test_a_month_added_between_two_runs_is_the_only_work_of_the_second(site, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    import polars as pl

    from analyzer import report

    root = str(tmp_path / "site")
    build_listing(root, STANDARD[:2], extra=False)
    srv = HTTPRangeServer(root)
    try:
        out = tmp_path / "out"
        first, code = _sync(srv.url, out)
        assert code == 0 and len(first["months_done"]) == 2

        def months_in_trend() -> list:
            per = report.build_tables(str(out))["summary_by_period"]
            assert per is not None
            per = per.filter((pl.col("platform") == "lichess") & (pl.col("games") > 0))
            return sorted({p.isoformat()[:7] for p in per["period"]})

        assert months_in_trend() == STANDARD[:2]
        before = {p: os.stat(p).st_mtime_ns for p in _table_files(out)}
        # the site publishes March
        text = _month_text(2, "2021-03")
        _add(root, "standard", _std_file("2021-03"), _pzstd(text))
        srv.faults.clear()
        second, code = _sync(srv.url, out)
        assert code == 0
        assert second["months_done"] == ["lichess_db_standard_rated_2021-03"]
        assert second["months_skipped"] == [_std_file(m)[:-8] for m in STANDARD[:2]]
        assert _dump_gets(srv) == [f"/standard/{_std_file('2021-03')}"]
        # the old months' files were not rewritten; the trend has grown by the new month
        assert {p: os.stat(p).st_mtime_ns for p in before} == before
        assert months_in_trend() == STANDARD
    finally:
        srv.stop()


def _swap_first_frames(data: bytes) -> bytes:
    """The same pzstd-style file with its first two frames (each with its header) swapped."""
    a = 12 + struct.unpack("<III", data[:12])[2]
    b = a + 12 + struct.unpack("<III", data[a : a + 12])[2]
    return data[a:b] + data[:a] + data[b:]


def _table_files(out) -> list[str]:
    return sorted(
        os.path.join(d, n)
        for t in ("games", "verdicts", "events")
        for d, _, files in os.walk(os.path.join(out, t))
        for n in files
        if n.endswith(".parquet")
    )


def test_a_local_folder_listing_and_a_missing_file(site, copy, tmp_path):
    os.remove(os.path.join(copy, "broadcast", "lichess_db_broadcast_2025-01.pgn.zst"))
    out = tmp_path / "out"
    summary, code = _sync(copy, out)
    assert code == 1
    (failed,) = summary["months_failed"]
    assert failed["source"] == "lichess_db_broadcast_2025-01"
    assert "listed in broadcast/list.txt but not in the folder" in failed["reason"]
    ref = tuple(t.filter(t["source"] != "lichess_db_broadcast_2025-01") for t in site["ref"])
    same_tables(out_tables(out), ref)
    # --since / --until / one folder
    only, code = _sync(copy, tmp_path / "out2", folders=["standard"], since="2021-02", until="2021-02")
    assert code == 0 and only["months_done"] == ["lichess_db_standard_rated_2021-02"] and only["months_found"] == 1


def test_the_lock_is_held_for_the_whole_run(site, server, tmp_path):
    """A second sync (or scan) of the same OUT while one runs is refused (exit 2, naming it)."""
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from analyzer.engine.dataset import Dataset; "
            f"lock = Dataset({str(out)!r}).lock(); lock.acquire(); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        r = subprocess.run(
            [sys.executable, "-m", "analyzer", "sync", server.url, "--out", str(out), "--json", "--progress", "none"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2
        assert str(holder.pid) in r.stderr
        line = json.loads(r.stdout.strip().splitlines()[-1])
        assert line["exit"] == 2 and str(holder.pid) in line["exit_cause"] and line["months_done"] == []
        assert _dump_gets(server) == []
    finally:
        holder.kill()
        holder.wait()


def test_an_unfinished_month_resumes_and_units_of_other_bytes_are_not_reused(site, tmp_path):
    """A sync stopped by SIGTERM in the middle of a month leaves its finished groups; the next
    sync reuses them. If the file changed meanwhile under the same name, size and date (the
    listing's SHA-256 with it), the units read from the old bytes are not committed: the month
    is read again from its start, in the same run, and its tables are those of the new bytes."""
    root = str(tmp_path / "site")
    build_listing(root, ["2021-01"], extra=False)
    name = "lichess_db_standard_rated_2021-01"
    path = os.path.join(root, "standard", _std_file("2021-01"))
    srv = HTTPRangeServer(root, piece=4096)
    slow = ("GET", f"/standard/{_std_file('2021-01')}", False, "slow:0.02")  # ~200 KB/s: seconds for the month
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "analyzer", "sync", srv.url, "--out", str(out), "--json", "--progress", "none"]
    cmd += ["--edition", ",".join(EDITIONS), "--workers", "2", "--unit-mb", "0.05", "--compact-games", "40"]
    try:
        srv.faults.add(*slow)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        mfolder = os.path.join(out, "_manifest", name)
        deadline = time.time() + 120
        while time.time() < deadline:
            if os.path.isdir(mfolder) and sum(n.startswith("group-") for n in os.listdir(mfolder)) >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM
        line = json.loads(stdout.strip().splitlines()[-1])
        assert line["exit_cause"] == "stopped by SIGTERM" and line["exit"] == 143
        assert name not in _committed(out)
        # the same file, resumed: the groups of the first run are reused
        srv.faults.clear()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        resumed = json.loads(r.stdout.strip().splitlines()[-1])
        assert resumed["months_done"] == [name] and resumed["games_reused"] >= 120
        clean = tmp_path / "clean"
        cfg = engine.Config(out=str(clean), editions=resolve_editions(EDITIONS))
        engine.run_scan([path], cfg, workers=1, progress_interval=0, progress_mode="none")
        same_tables(out_tables(out), out_tables(clean))

        # stopped again in the middle, this time while the server sent other bytes under the
        # same name, size and date (its first two frames swapped: a broken mirror, a bad cache);
        # then the right bytes again, and the rerun
        shutil.rmtree(out)
        good = _read(path)
        st = os.stat(path)
        bad = _swap_first_frames(good)
        assert len(bad) == len(good) and bad != good
        _write(path, bad)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        srv.faults.add(*slow)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            if os.path.isdir(mfolder) and sum(n.startswith("group-") for n in os.listdir(mfolder)) >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        _write(path, good)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        final = json.loads(r.stdout.strip().splitlines()[-1])
        assert final["months_done"] == [name] and final["months"][0]["attempts"] == 2
        assert STALE_UNITS in r.stderr
        same_tables(out_tables(out), out_tables(clean))
    finally:
        srv.stop()


def test_the_listing_files_as_the_export_scripts_write_them(copy):
    from analyzer.io import listing

    sums, bad = listing.parse_sha256sums(f"{'a' * 64}  x.pgn.zst\n{'B' * 64} *y.pgn.zst\nnot a line\n\n")
    assert sums == {"x.pgn.zst": "a" * 64, "y.pgn.zst": "b" * 64} and bad == ["not a line"]
    counts, bad = listing.parse_counts("x.pgn.zst 121332\ny.pgn.zst ?\n")
    assert counts == {"x.pgn.zst": 121332} and bad == ["y.pgn.zst ?"]
    # a listing may be one of the site's folders
    one = listing.read_listing(os.path.join(copy, "broadcast"))
    assert one.folders == ["broadcast"] and [e.name for e in one.entries] == ["lichess_db_broadcast_2025-01"]
    assert one.entries[0].games == 1 and one.entries[0].month == "2025-01"
    from analyzer.errors import InputError

    with pytest.raises(InputError, match=r"no list\.txt in it nor in any of its folders \(horde\)"):
        listing.read_listing(copy, folders=["horde"])
