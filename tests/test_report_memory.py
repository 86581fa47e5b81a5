"""The report's memory does not grow with the size of a source (issue 28): it reads a source in
chunks of games (report.collect.CHUNK_GAMES), so a source 4 times larger peaks no higher. Before,
it reduced one source at a time, whole: 13.2 GB for a 10 M-game source.

Measured in subprocesses (peak RSS of the report's process), with chunks of 10,000 games: the
1x source is 5 chunks, the 4x source 20."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import pzstd_file

SMALL_COPIES = 25  # lichess_small (2,000 games) x 25 = 50,000 games


def _peak_mb(cmd: list[str], env: dict) -> float:
    """Peak resident memory of the largest process `cmd` ran (its own, or a child's)."""
    probe = "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    probe += "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"
    r = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return int(r.stdout.strip().splitlines()[-1]) / 1024


def _scan(tmp_path, text: bytes, name: str) -> str:
    src = pzstd_file(tmp_path, text, name=name)
    out = tmp_path / f"out-{name}"
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", str(src), "--out", str(out), "--workers", "2"]
        + ["--edition", "fide_2018,lichess", "--progress", "none", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["games"] == text.count(b"[Event ")
    return str(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB: Linux")
def test_report_peak_memory_does_not_grow_with_source_size(tmp_path, small_text):
    pytest.importorskip("matplotlib")
    env = dict(os.environ, ANALYZER_REPORT_CHUNK_GAMES="10000")
    peaks = {}
    for k in (1, 4):
        out = _scan(tmp_path, small_text * (SMALL_COPIES * k), f"x{k}")
        peaks[k] = _peak_mb(
            [sys.executable, "-m", "analyzer", "report", out, "--report-dir", str(tmp_path / f"r{k}")], env
        )
    # Read whole (chunks larger than a source, as before): 285 MB for 1x, 528 MB for 4x; in
    # chunks: 271 and 276 MB.
    assert peaks[4] <= 1.15 * peaks[1], peaks


def test_held_aggregates_own_their_bytes(tmp_path, small_text, monkeypatch):
    """What the report keeps of a chunk (its aggregates, the audit's games, a pair's example
    sites) must not keep the chunk's data alive: polars' strings are views, so a few rows cut
    out of a chunk pinned all its string buffers, and the report's peak grew with the source
    (1.9 GB on 10 M games, where one chunk needs ~0.5 GB). Each held frame's buffers (as Arrow
    exports them, views and all) must be of the order of its own rows."""
    import polars as pl

    from analyzer.engine.dataset import Dataset
    from analyzer.report import collect

    out = _scan(tmp_path, small_text * 2, "x2")
    monkeypatch.setattr(collect, "CHUNK_GAMES", 2000)
    ds = Dataset(str(out))
    chunks = ds.chunks(collect.CHUNK_GAMES)
    assert len(chunks) >= 2
    parts = collect.reduce_chunks(ds, chunks, collect._editions(ds, chunks))
    assert "pairs" in parts and "cube" in parts
    for name in ("pairs", "cube"):  # the held frames have rows (empty ones would hold no bytes)
        assert sum(df.height for df in parts[name]) > 0, name
    for name, frames in parts.items():
        for df in frames:
            held = df.to_arrow(compat_level=pl.CompatLevel.newest()).get_total_buffer_size()
            assert held <= 1024 * df.height * max(1, df.width // 8) + 8192, (name, df.height, df.width, held)
