"""Analyze a block of games of one kind into the three tables: the kind's kernels (via the
registry), then the shared builder (analyzer.tables). Used by the batch engine per block and
by the in-memory API."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from analyzer import kinds, tables


@dataclass
class BlockTables:
    games: pa.Table  # one row per game
    verdicts: pa.Table  # one row per game and edition
    events: pa.Table
    facts: dict | None  # per-ply facts (keep_facts=True; chess: flat arrays, see kinds.chess.analyze)
    n_games: int
    notes: dict = field(default_factory=dict)  # the kind's counts for the scan's summary (tables.BlockOutput)


def analyze_block(
    kind: str,
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    source: str,
    first_game_index: int,
    base_offset: int,
    editions: list,
    extra_status: dict | None = None,
    keep_facts: bool = False,
    options: dict | None = None,
    input_ends: bool = False,
) -> BlockTables:
    """The tables of the games buf[starts[i]:ends[i]] of game kind `kind`. `extra_status` maps
    game i -> (status, message) decided by the reader (such games are reported, not replayed);
    `options`: what the kind reads of the source (e.g. chess: default_variant from a file name);
    `input_ends`: the last game is where the input ends, so a movetext without its termination
    marker there was cut off (status truncated)."""
    out = kinds.get(kind).analyze_block(
        buf,
        starts,
        ends,
        editions=editions,
        extra_status=extra_status,
        keep_facts=keep_facts,
        input_ends=input_ends,
        **(options or {}),
    )
    g, v, e = tables.build(
        out,
        source=source,
        game_type=kind,
        first_game_index=first_game_index,
        byte_offsets=np.asarray(starts, np.int64) + base_offset,
    )
    return BlockTables(g, v, e, out.facts, len(starts), out.notes)
