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
    marker there was cut off (status truncated). `options["data_issues"]`, if given, is not the
    kind's: the known data issues of the source's dump (pairs of an issue id and the UTCDate it
    is limited to, or None for all the dump's games), written as the games' `data_issue`."""
    options = dict(options or {})
    issues = options.pop("data_issues", None)
    out = kinds.get(kind).analyze_block(
        buf,
        starts,
        ends,
        editions=editions,
        extra_status=extra_status,
        keep_facts=keep_facts,
        input_ends=input_ends,
        **options,
    )
    g, v, e = tables.build(
        out,
        source=source,
        game_type=kind,
        first_game_index=first_game_index,
        byte_offsets=np.asarray(starts, np.int64) + base_offset,
    )
    if issues:
        g = g.set_column(
            g.schema.get_field_index("data_issue"), "data_issue", data_issue_column(g.column("utc_date"), issues)
        )
    return BlockTables(g, v, e, out.facts, len(starts), out.notes)


def data_issue_column(utc_date, issues) -> pa.DictionaryArray:
    """The games' `data_issue`: per game, the ids of `issues` ((id, UTCDate or None) pairs) that
    concern it, joined by ';' in the order given (null for none): an issue with a date concerns
    the games of that day, one without every game. One pass per issue over the column."""
    from analyzer import arrow_compute as ac

    n = len(utc_date)
    bits = np.zeros(n, np.int64)
    for k, (_, day) in enumerate(issues):
        if day is None:
            bits |= 1 << k
        else:
            hit = ac.fill_null(ac.equal(utc_date, day), False)
            bits |= np.asarray(hit.to_numpy(zero_copy_only=False), np.int64) << k
    labels = [";".join(iid for k, (iid, _) in enumerate(issues) if c >> k & 1) for c in range(1 << len(issues))]
    return pa.DictionaryArray.from_arrays(
        pa.array(bits.astype(np.int32), mask=bits == 0), pa.array(labels, pa.string())
    )
