"""The 1997 identity facts are computed only when an edition needs them (replay_batch's
want97). Skipping them must not change anything else: the other editions' tables are the same
whether or not fide_1997 is in the run, on real games."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from analyzer.analysis import analyze_block
from analyzer.kinds import resolve_editions as resolve
from analyzer.pgn.split import split_games
from conftest import need, nonempty


@pytest.mark.parametrize("name", ["lichess_small.pgn", "edge_cases.pgn"])
def test_other_editions_unchanged_by_1997_facts(name):
    path = Path(need(name))
    buf = np.frombuffer(path.read_bytes(), np.uint8)
    starts, ends, _ = split_games(buf, True)
    kw = {"source": "s", "first_game_index": 0, "base_offset": 0, "keep_facts": True}
    without = analyze_block("chess", buf, starts, ends, editions=resolve(["fide_2018", "lichess"]), **kw)
    with97 = analyze_block("chess", buf, starts, ends, editions=resolve(["fide_2018", "lichess", "fide_1997"]), **kw)
    # the tables compared below hold every game of the file (equal empty tables prove nothing)
    assert without.games.num_rows == len(starts) == buf.tobytes().count(b"[Event ") > 0
    assert without.verdicts.num_rows == 2 * len(starts) and nonempty(without.events, "events")
    assert with97.games.equals(without.games)
    n_rows = without.verdicts.num_rows
    assert with97.verdicts.slice(0, n_rows).equals(without.verdicts)
    edition = pc.cast(with97.events.column("edition"), pa.string())
    ev97 = with97.events.filter(pc.not_equal(edition, "fide_1997"))
    assert ev97.to_pydict() == without.events.to_pydict()
    for k in ("key", "hmc", "rep_next", "clock"):
        np.testing.assert_array_equal(with97.facts[k], without.facts[k])
    # Flags differ only in the 1997 bits (castling-now and the 1997 window start).
    from analyzer.kinds.chess._replay import CASTLE_NOW_SHIFT, FLAG_WINDOW97

    keep = np.uint16(0xFFFF & ~((0xF << CASTLE_NOW_SHIFT) | FLAG_WINDOW97))
    np.testing.assert_array_equal(with97.facts["flags"] & keep, without.facts["flags"] & keep)
    # And the 1997 facts really were computed: castling-now bits appear in real games.
    assert ((with97.facts["flags"] >> CASTLE_NOW_SHIFT) & 0xF).any()
    assert not ((without.facts["flags"] >> CASTLE_NOW_SHIFT) & 0xF).any()
