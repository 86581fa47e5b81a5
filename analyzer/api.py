"""Python API: analyze PGN text in memory, and read an output directory lazily with polars."""
from __future__ import annotations

import json
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


def _scan_table(out_dir: str, table: str, storage_options: dict | None = None) -> "pl.LazyFrame":
    import polars as pl

    from analyzer.io import remote

    out_dir = remote.localize(out_dir)
    if remote.is_url(out_dir):
        return _scan_remote(out_dir.rstrip("/"), table, storage_options)
    # The `source` column inside the files is authoritative: folder names are escaped and, for
    # names longer than ~160 bytes, shortened (analyzer.engine.layout.source_dir).
    return pl.scan_parquet(os.path.join(out_dir, table, "*", "part-*.parquet"), hive_partitioning=False)


def committed_parts(out: str, table: str, storage_options: dict | None = None) -> list[str]:
    """The parts of `table` that the source records under OUT (a URL) name, in source and unit
    order: on an object store only these are trusted (a part no record names may be left by a
    killed run; see analyzer.engine.store)."""
    from analyzer.engine import layout
    from analyzer.engine.store import open_store
    from analyzer.io import remote

    if storage_options is not None:   # fsspec options of OUT's protocol, e.g. {"endpoint_url": ...}
        remote.configure({remote.protocol(out): storage_options})
    st = open_store(out)
    found = []
    for d in st.folders(f"{out}/_manifest"):
        path = f"{out}/_manifest/{d}/source.json"
        try:
            rec = json.loads(st.get(path))
        except FileNotFoundError:
            continue   # a source being written or removed: not committed
        for unit in rec.get("units", []):
            parts = unit.get("parts")
            found.append(f"{out}/{parts[table]}" if parts else
                         layout.final_paths(out, unit["source"], unit["unit"])[layout.TABLES.index(table)])
    return found


def _scan_remote(out: str, table: str, storage_options: dict | None) -> "pl.LazyFrame":
    import polars as pl
    import pyarrow.dataset as ds

    from analyzer import tables
    from analyzer.io import remote

    parts = committed_parts(out, table, storage_options)
    schema = {"games": tables.GAMES_SCHEMA, "events": tables.EVENTS_SCHEMA}.get(table)
    if not parts:
        if schema is None:
            raise FileNotFoundError(f"{out}: no {table} table")
        return pl.from_arrow(schema.empty_table()).lazy()
    fs = remote.filesystem(out)
    # Read through the same fsspec filesystem (and options) as the scan wrote with.
    dataset = ds.dataset([p.split("://", 1)[1] for p in parts], format="parquet", filesystem=fs)
    return pl.scan_pyarrow_dataset(dataset)


def scan_games(out_dir: str, storage_options: dict | None = None) -> "pl.LazyFrame":
    """The `games` table(s) under an `analyzer scan --out` directory or URL, as a polars
    LazyFrame. On an object store, only the parts named by finished sources' records are read."""
    return _scan_table(out_dir, "games", storage_options)


def scan_events(out_dir: str, storage_options: dict | None = None) -> "pl.LazyFrame":
    """The `events` table(s) under an `analyzer scan --out` directory or URL, as a polars LazyFrame."""
    return _scan_table(out_dir, "events", storage_options)
