"""Python API: analyze text in memory, and read an output directory lazily with polars."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzer import kinds
from analyzer.analysis import BlockTables, analyze_block
from analyzer.pgn.split import split_games

if TYPE_CHECKING:
    import polars as pl

    from analyzer.kinds import Edition


def analyze_bytes(
    data: bytes,
    source: str = "memory",
    editions: Sequence[str | Edition] = ("fide_2018",),
    keep_facts: bool = False,
    kind: str | None = None,
) -> BlockTables:
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
    return analyze_block(
        kind, buf, starts, ends, source=source, first_game_index=0, base_offset=0, editions=eds, keep_facts=keep_facts
    )


def _scan_table(out_dir: str, table: str, storage_options: dict[str, Any] | None = None) -> pl.LazyFrame:
    import polars as pl

    from analyzer.io import remote

    out_dir = remote.localize(out_dir)
    if remote.is_url(out_dir):
        return _scan_remote(out_dir.rstrip("/"), table, storage_options)
    # `source` is the hive partition key (the folders), not a column of the files.
    paths = sorted(glob.glob(os.path.join(glob.escape(out_dir), table, "*", "part-*.parquet")))
    if not paths:
        return _empty(out_dir, table)
    lf = pl.scan_parquet(paths, hive_partitioning=True, hive_schema={"source": pl.String})
    return _with_source_names(lf, paths)


def source_name(folder: str, part: str, filesystem: Any = None) -> str:
    """The source a `source=<dir>` folder holds: <dir> percent-decoded, as hive readers read it;
    for a name too long for a folder (shortened, with `~` and a hash: engine.layout.source_dir),
    the name its part files record in their metadata (`analyzer.source`)."""
    from urllib.parse import unquote

    value = unquote(folder.split("=", 1)[1] if folder.startswith("source=") else folder, errors="surrogateescape")
    if "~" not in value:
        return value
    import pyarrow.parquet as pq

    meta = pq.read_schema(part, filesystem=filesystem).metadata or {}
    return meta.get(b"analyzer.source", value.encode()).decode("utf-8", "surrogateescape")


def _with_source_names(lf: pl.LazyFrame, paths: list[str], filesystem: Any = None) -> pl.LazyFrame:
    """`source` first, and shortened folder names replaced by the full source names."""
    from urllib.parse import unquote

    import polars as pl

    first: dict[str, str] = {}
    for p in paths:
        first.setdefault(p.replace(os.sep, "/").rsplit("/", 2)[-2], p)
    short = {d: p for d, p in first.items() if "~" in d}
    if short:
        mapping = {unquote(d.split("=", 1)[1]): source_name(d, p, filesystem) for d, p in short.items()}
        lf = lf.with_columns(pl.col("source").replace(mapping))
    return lf.select("source", pl.exclude("source"))


def _empty(out: str, table: str) -> pl.LazyFrame:
    import polars as pl

    from analyzer import tables

    schema = tables.SCHEMAS.get(table)
    if schema is None:
        raise FileNotFoundError(f"{out}: no {table} table")
    empty = pl.from_arrow(schema.empty_table())
    assert isinstance(empty, pl.DataFrame)  # from a Table, not an Array: a DataFrame
    return empty.lazy().select(pl.lit(None, pl.String).alias("source"), pl.all())


def committed_parts(out: str, table: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """The parts of `table` that the source records under OUT (a URL) name, in source and unit
    order: on an object store only these are trusted (a part no record names may be left by a
    killed run; see analyzer.engine.store)."""
    from analyzer.engine import layout
    from analyzer.engine.store import open_store
    from analyzer.io import remote

    if storage_options is not None:  # fsspec options of OUT's protocol, e.g. {"endpoint_url": ...}
        remote.configure({remote.protocol(out): storage_options})
    st = open_store(out)
    found = []
    for d in st.folders(f"{out}/_manifest"):
        path = f"{out}/_manifest/{d}/source.json"
        try:
            rec = json.loads(st.get(path))
        except FileNotFoundError:
            continue  # a source being written or removed: not committed
        for unit in rec.get("units", []):
            parts = unit.get("parts")
            found.append(
                f"{out}/{parts[table]}"
                if parts
                else layout.final_paths(out, unit["source"], unit["unit"])[layout.TABLES.index(table)]
            )
    return found


def _scan_remote(out: str, table: str, storage_options: dict[str, Any] | None) -> pl.LazyFrame:
    import polars as pl
    import pyarrow as pa
    import pyarrow.dataset as ds

    from analyzer.io import remote

    parts = committed_parts(out, table, storage_options)
    if not parts:
        return _empty(out, table)
    fs = remote.filesystem(out)
    # Read through the same fsspec filesystem (and options) as the scan wrote with; `source`
    # from the folder names (the hive partition key).
    paths = [p.split("://", 1)[1] for p in parts]
    dataset = ds.dataset(
        paths,
        format="parquet",
        filesystem=fs,
        partitioning=ds.partitioning(pa.schema([("source", pa.string())]), flavor="hive"),
        partition_base_dir=f"{out.split('://', 1)[1]}/{table}",
    )
    return _with_source_names(pl.scan_pyarrow_dataset(dataset), paths, fs)


def scan_games(out_dir: str, storage_options: dict[str, Any] | None = None) -> pl.LazyFrame:
    """The `games` table under an `analyzer scan --out` directory or URL (one row per game), as
    a polars LazyFrame. On an object store, only the parts named by finished sources' records
    are read."""
    return _scan_table(out_dir, "games", storage_options)


def scan_verdicts(out_dir: str, storage_options: dict[str, Any] | None = None) -> pl.LazyFrame:
    """The `verdicts` table (one row per game and edition), lazily."""
    return _scan_table(out_dir, "verdicts", storage_options)


def scan_events(out_dir: str, storage_options: dict[str, Any] | None = None) -> pl.LazyFrame:
    """The `events` table (one row per chance or automatic draw, per edition), lazily."""
    return _scan_table(out_dir, "events", storage_options)


def games_with_verdicts(out_dir: str, edition: str, storage_options: dict[str, Any] | None = None) -> pl.LazyFrame:
    """Every game joined to one edition's verdicts (on source and game_index): what a study of
    one edition needs in one frame."""
    import polars as pl

    v = scan_verdicts(out_dir, storage_options).filter(pl.col("edition") == edition).drop("game_type")
    return scan_games(out_dir, storage_options).join(v, on=["source", "game_index"], how="left")
