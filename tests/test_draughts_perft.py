"""Perft of Russian draughts from the initial position against the published figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzer.kinds.russian_draughts._board import perft
from conftest import need

PERFT_FILE = Path(need("perft/draughts_perft.txt"))


def _russian_figures() -> dict[int, int]:
    text = PERFT_FILE.read_text(encoding="utf-8")
    section = text.split("[variant russian", 1)[1].split("[variant", 1)[0]
    assert "fen W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12" in section
    return {int(d): int(n) for d, n in re.findall(r"^perft (\d+) (\d+)$", section, re.M)}


FIGURES = _russian_figures()


@pytest.mark.parametrize("depth", range(9))
def test_perft_initial(depth):
    assert perft(depth) == FIGURES[depth]


@pytest.mark.slow
@pytest.mark.parametrize("depth", [9, 10, 11])
def test_perft_initial_deep(depth):
    assert perft(depth) == FIGURES[depth]


def test_perft_counts_positions_not_paths():
    # At depth 8 some captures reach the same position by different paths; the published
    # figures count them once (929,899), counting every path gives more.
    assert perft(8, dedup=False) > FIGURES[8]
