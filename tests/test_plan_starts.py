"""The planner's game starts (plan.GameStarts) are the reader's: a unit carries them
(UnitSpec.game_starts) and its region uses them instead of scanning the text again, so they must
be exactly the starts a whole-text split finds, and a region given them must write the same
tables as one that scans."""

from __future__ import annotations

import functools
import os
import random

import numpy as np
import pyarrow as pa
import pytest

from analyzer.engine.plan import GameStarts
from analyzer.engine.region import RegionAnalyzer
from analyzer.kinds import resolve_editions
from conftest import FIXTURES, game_spans, nonempty, read_data


@functools.cache
def _texts() -> dict[str, tuple[bytes, bool]]:
    """Inputs whose game boundaries are hard to find, and real games (name -> (text, draughts))."""
    small = read_data("lichess_small.pgn")[:400_000]
    games = small.split(b"\n\n[Event ")
    no_blank = b"\n[Event ".join(g.replace(b"\n\n", b"\n") for g in games[:200])
    crlf = b"\r\n\r\n[Event ".join(g.replace(b"\n", b"\r\n") for g in games[:150])
    return {
        "lichess_small": (small, False),
        "edge_cases": (read_data("edge_cases.pgn")[:300_000], False),
        "hostile": (_read(os.path.join(FIXTURES, "hostile", "mixed.pgn")), False),
        "leading junk": (b"\xef\xbb\xbfjunk line\n% escape\n\n" + small[:50_000], False),
        "tagless": (b"1. e4 *\n\n" * 3000 + b"1. d4 d5 1-0\n1. c4 0-1\n" * 2000, False),
        "no blank lines": (no_blank, False),
        "crlf": (crlf, False),
        "trailing junk": (small[:60_000] + b'\n\n   \n[Event "cut', False),
        "huge comment": (
            small[:30_000] + b'\n\n[Event "x"]\n\n1. e4 {' + b"c" * 300_000 + b"} e5 *\n\n" + small[:30_000],
            False,
        ),
        "draughts": (read_data("draughts/russian_gametype25.pdn")[:200_000], True),
    }


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _pieces(text: bytes, rng: random.Random) -> list[bytes]:
    out = []
    i = 0
    while i < len(text):
        n = rng.choice([1, 7, 100, 4096, 65536, 300_000])
        out.append(text[i : i + n])
        i += n
    return out


@pytest.mark.parametrize("name", list(_texts()))
def test_planner_starts_are_the_readers(name):
    text, draughts = _texts()[name]
    want, _ = game_spans(text, draughts=draughts)
    nonempty(want, f"game starts in {name}")
    for seed in range(3):
        gs = GameStarts(draughts=draughts)
        found = [gs.feed(p) for p in _pieces(text, random.Random(seed))]
        found.append(gs.finish())
        got = np.concatenate(found)
        assert got.tolist() == want.tolist(), (name, seed)


def _region_tables(text: bytes, draughts: bool, starts, block_size: int, max_game_bytes: int):
    parts: list = []
    ra = RegionAnalyzer(
        game_type="russian_draughts" if draughts else "chess",
        source="t",
        editions=resolve_editions(["fshr_russian"] if draughts else ["fide_2018", "lichess"]),
        sink=lambda *t: parts.append(t),
        block_size=block_size,
        max_game_bytes=max_game_bytes,
        game_starts=starts,
    )
    for k in range(0, len(text), 50_000):
        ra.feed(text[k : k + 50_000])
    stats = ra.finish()
    return stats.games, tuple(pa.concat_tables([p[t] for p in parts]) if parts else None for t in range(3))


@pytest.mark.parametrize("name", list(_texts()))
def test_region_with_planner_starts_writes_the_same_tables(name):
    """Small blocks and a small game-size limit, so blocks end mid-game and the huge comment
    is an oversized game skipped by the region (the planner's starts then no longer apply)."""
    text, draughts = _texts()[name]
    gs = GameStarts(draughts=draughts)
    starts = np.concatenate([gs.feed(text), gs.finish()])
    for block_size, max_game_bytes in ((1 << 16, 1 << 17), (8 << 20, 16 << 20)):
        scanned = _region_tables(text, draughts, None, block_size, max_game_bytes)
        given = _region_tables(text, draughts, starts, block_size, max_game_bytes)
        # the tables compared hold the games (two regions that wrote nothing would be equal)
        assert scanned[1][0] is not None and scanned[1][0].num_rows == scanned[0] > 0, name
        assert scanned[0] == given[0]
        for a, b in zip(scanned[1], given[1]):
            assert (a is None and b is None) or a.equals(b), name


def test_units_carry_their_starts_unless_described_by_byte_range(tmp_path):
    """Units whose text the planner holds carry its game starts (offsets from the unit's start,
    equal to a split of the unit's text); units sent as byte ranges (Dask, process pools) do not,
    so their descriptions stay small."""
    from analyzer.engine.config import Config
    from analyzer.engine.plan import iter_sequential_units
    from analyzer.io import sources

    text = read_data("lichess_small.pgn")
    src = tmp_path / "s.pgn"
    src.write_bytes(text)
    info = sources.inspect(str(src))
    cfg = Config(out=str(tmp_path / "o"), editions=[], unit_text_bytes=1 << 20)
    units = list(iter_sequential_units(info, cfg, []))
    assert len(units) > 3
    for u in units:
        unit_text = b"".join(u.payload)
        want, _ = game_spans(unit_text)
        assert u.game_starts is not None and u.game_starts.tolist() == want.tolist()
    described = list(iter_sequential_units(info, cfg, [], describe=True))
    assert [u.text_range for u in described] == [(u.text_start, u.text_start + len(b"".join(u.payload))) for u in units]
    assert all(u.game_starts is None and u.payload is None for u in described)
