"""Kill-and-rerun loop over a pzstd input with 2 workers (benchmarks/kill_loop.py): every
rerun finishes (no hang), no worker outlives a killed run, and the final tables equal a clean
run's. A short loop in the default run; 60 cycles behind -m slow (RESULTS.md has that run)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from conftest import run_json_script

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "kill_loop.py")
pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL and /proc: Linux"),
    pytest.mark.skipif(shutil.which("pzstd") is None, reason="needs pzstd (Debian package zstd)"),
]


def _loop(cycles: int, seed: int) -> dict:
    return run_json_script(SCRIPT, "--cycles", str(cycles), "--seed", str(seed))


def _check(stats: dict) -> None:
    assert stats["hangs"] == 0 and stats["orphan_workers"] == 0, stats
    assert stats["games_lost"] == 0 and stats["final_equal"] == stats["cycles"], stats
    assert stats["kills"] >= 1, stats


def test_kill_and_rerun_short_loop():
    _check(_loop(4, 11))


@pytest.mark.slow
def test_kill_and_rerun_long_loop():
    stats = _loop(60, 1)
    _check(stats)
    assert stats["kills_in_compaction"] >= 1, stats  # kill_loop aims a share of its kills at compaction
