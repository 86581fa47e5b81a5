"""Damage loop over a finished OUT (benchmarks/damage_loop.py): each kind of damage once (a
table file or a record deleted, truncated, a byte flipped), `analyzer verify --deep` finds the
damage to table files, the command it prints (or the rerun) repairs every kind, and the tables
equal a clean run's; no traceback. 50 cycles
behind -m slow (RESULTS.md has that run)."""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import run_json_script

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "damage_loop.py")
pytestmark = pytest.mark.skipif(shutil.which("pzstd") is None, reason="needs pzstd (Debian package zstd)")


def _loop(cycles: int, seed: int) -> dict:
    # one compacted file per unit (--compact-games 1000): a repair recomputes one unit
    args = ("--cycles", str(cycles), "--seed", str(seed), "--copies", "2", "--compact-games", "1000")
    return run_json_script(SCRIPT, *args)


def _check(stats: dict) -> None:
    assert stats["ok"], stats
    assert stats["games_lost"] == stats["rows_wrong"] == stats["tracebacks"] == 0, stats
    kinds = stats["per_kind"]
    assert all(v["cycles"] >= 1 for v in kinds.values()), kinds  # the kinds come in turn: 6 cycles try each
    # Damage to a table file is always found by verify --deep, and repaired by recomputing less
    # than the source (a compacted file's units).
    for k in ("delete_part", "truncate_part", "flip_part"):
        assert kinds[k]["found_by_verify"] == kinds[k]["cycles"], kinds[k]
        assert kinds[k]["games_recomputed"] < kinds[k]["cycles"] * stats["input_games"], kinds[k]


def test_each_damage_kind_once():
    _check(_loop(6, 3))


@pytest.mark.slow
def test_fifty_cycles():
    _check(_loop(50, 1))
