"""Python API: analyze text in memory, and read an output directory lazily with polars."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import numpy as np

from analyzer import kinds
from analyzer.analysis import BlockTables, analyze_block
from analyzer.pgn.split import split_games

if TYPE_CHECKING:
    import polars as pl


def analyze_bytes(data: bytes, source: str = "memory", editions: Sequence = ("fide_2018",),
                  keep_facts: bool = False, kind: str | None = None) -> BlockTables:
    """Analyze every game in `data` (whole PGN/PDN text); the tables as `analyzer scan` writes
    them. `editions`: ids or edition objects, all of one kind; `kind` defaults to theirs."""
    eds = [e for e in editions if not isinstance(e, str)]
    eds += kinds.resolve_editions([e for e in editions if isinstance(e, str)])
    kind = kind or (eds[0].kind if eds else "chess")
    if not eds:
        eds = kinds.resolve_editions(list(kinds.get(kind).default_editions))
    other = {e.kind for e in eds} - {kind}
    if other:
        raise ValueError(f"editions of {sorted(other)} given for {kind} games")
    buf = np.frombuffer(data, dtype=np.uint8)
    buf.flags.writeable = False  # one compiled signature for bytes and bytearray input alike
    starts, ends = split_games(buf, final=True, draughts=kinds.get(kind).draughts_markers)[:2]
    return analyze_block(kind, buf, starts, ends, source=source, first_game_index=0, base_offset=0,
                         editions=eds, keep_facts=keep_facts)


def _scan_table(out_dir: str, table: str) -> "pl.LazyFrame":
    import polars as pl

    # The `source` column inside the files is authoritative: folder names are escaped and, for
    # names longer than ~160 bytes, shortened (analyzer.engine.layout.source_dir).
    return pl.scan_parquet(os.path.join(out_dir, table, "*", "part-*.parquet"), hive_partitioning=False)


def scan_games(out_dir: str) -> "pl.LazyFrame":
    """The `games` table under an `analyzer scan --out` directory (one row per game), lazily."""
    return _scan_table(out_dir, "games")


def scan_verdicts(out_dir: str) -> "pl.LazyFrame":
    """The `verdicts` table (one row per game and edition), lazily."""
    return _scan_table(out_dir, "verdicts")


def scan_events(out_dir: str) -> "pl.LazyFrame":
    """The `events` table (one row per chance or automatic draw, per edition), lazily."""
    return _scan_table(out_dir, "events")


def games_with_verdicts(out_dir: str, edition: str) -> "pl.LazyFrame":
    """Every game joined to one edition's verdicts (on source and game_index): what a study of
    one edition needs in one frame."""
    import polars as pl

    v = scan_verdicts(out_dir).filter(pl.col("edition") == edition).drop("game_type")
    return scan_games(out_dir).join(v, on=["source", "game_index"], how="left")
