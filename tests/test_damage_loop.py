"""Damage loop over a finished OUT (benchmarks/damage_loop.py, issues 27 and 35): damage of
every kind (bytes changed in pages, headers, footer and statistics; a forged file of the same
size and rows; truncated and deleted files and records; a foreign file; a table folder and the
lock replaced by symbolic links; an input rewritten with its size and mtime kept). After each:
verify, report, show and the API serve no wrong number with exit 0 and no traceback, a
sentinel tree beside OUT is unchanged, and the repair verify prints gives back a clean run's
tables. Every kind once, and 60 cycles, behind -m slow (RESULTS.md has that run)."""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import run_json_script

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "damage_loop.py")
pytestmark = pytest.mark.skipif(shutil.which("pzstd") is None, reason="needs pzstd (Debian package zstd)")
TABLE = ("flip_data_page", "flip_page_header", "flip_footer", "change_statistic", "flip_anywhere", "forge_same_size")
TABLE += ("truncate_part", "delete_part")
DEFAULT = ("flip_data_page", "change_statistic", "forge_same_size", "delete_part", "flip_record", "foreign_file")
DEFAULT += ("link_table_folder", "rewrite_input")


def _loop(kinds: tuple[str, ...] | None, seed: int, cycles: int | None = None) -> dict:
    args = ["--seed", str(seed), "--copies", "2", "--compact-games", "1000"]
    if kinds:
        args += ["--kinds", ",".join(kinds)]
    if cycles:
        args += ["--cycles", str(cycles)]
    return run_json_script(SCRIPT, *args)


def _check(stats: dict, asked: tuple[str, ...] | None) -> None:
    assert stats["ok"], stats["failures"] or stats
    assert stats["wrong_numbers_served"] == stats["games_lost"] == stats["rows_wrong"] == 0, stats
    assert stats["tracebacks"] == stats["sentinel_changed"] == 0, stats
    kinds = stats["per_kind"]
    # every kind asked for (all of them: at least those named here) has its entry, so the loops
    # below cannot pass over an empty or short per_kind
    assert set(kinds) == set(asked) if asked else set(kinds) >= set(TABLE + DEFAULT), sorted(kinds)
    assert all(v["cycles"] >= 1 for v in kinds.values()), kinds
    for k, v in kinds.items():
        if k in TABLE:  # found by verify, refused by every reader, repaired by less than the source
            assert v["found_by_verify"] == v["refused_by_readers"] == v["cycles"], (k, v)
            assert v["games_recomputed"] < v["cycles"] * stats["input_games"], (k, v)


def test_damage_kinds():
    _check(_loop(DEFAULT, 3), DEFAULT)


@pytest.mark.slow
def test_every_kind_once():
    _check(_loop(None, 4), None)


@pytest.mark.slow
def test_sixty_cycles():
    _check(_loop(None, 1, 60), None)
