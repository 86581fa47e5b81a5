"""Python API: analyze PGN text in memory, and read an output directory lazily with polars."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import numpy as np

from analyzer.chess.analyze import BlockResult, analyze_block
from analyzer.editions import ChessEdition, resolve
from analyzer.pgn.split import split_games

if TYPE_CHECKING:
    import polars as pl


def analyze_bytes(data: bytes, source: str = "memory", editions: Sequence[str | ChessEdition] = ("fide_2018",),
                  keep_facts: bool = False) -> BlockResult:
    """Analyze every chess game in `data` (whole PGN text); tables as `analyzer scan` writes them."""
    eds = [e for e in editions if isinstance(e, ChessEdition)]
    eds += resolve([e for e in editions if not isinstance(e, ChessEdition)])
    buf = np.frombuffer(data, dtype=np.uint8)
    buf.flags.writeable = False  # one compiled signature for bytes and bytearray input alike
    starts, ends = split_games(buf, final=True)[:2]
    return analyze_block(buf, starts, ends, source=source, first_game_index=0, base_offset=0,
                         editions=eds, keep_facts=keep_facts)


def _scan_table(out_dir: str, table: str) -> "pl.LazyFrame":
    import polars as pl

    # The `source` column inside the files is authoritative: folder names are escaped and, for
    # names longer than ~160 bytes, shortened (analyzer.engine.layout.source_dir).
    return pl.scan_parquet(os.path.join(out_dir, table, "*", "part-*.parquet"), hive_partitioning=False)


def scan_games(out_dir: str) -> "pl.LazyFrame":
    """The `games` table(s) under an `analyzer scan --out` directory, as a polars LazyFrame."""
    return _scan_table(out_dir, "games")


def scan_events(out_dir: str) -> "pl.LazyFrame":
    """The `events` table(s) under an `analyzer scan --out` directory, as a polars LazyFrame."""
    return _scan_table(out_dir, "events")
