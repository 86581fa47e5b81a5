"""Python API: analyze text in memory, and read an output directory lazily with polars."""

from __future__ import annotations

import warnings
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
        kind,
        buf,
        starts,
        ends,
        source=source,
        first_game_index=0,
        base_offset=0,
        editions=eds,
        keep_facts=keep_facts,
        input_ends=True,
    )


class IncompleteDatasetWarning(UserWarning):
    """OUT holds sources whose run did not finish; the readers left them out."""


def committed_files(
    out_dir: str, table: str, partial: bool = False, storage_options: dict[str, Any] | None = None
) -> list[str]:
    """The files of `table` that OUT's source records commit, in source and game order: only
    these are served (a file no record lists may be a killed run's, or half of a compaction).
    Unfinished sources are left out with an IncompleteDatasetWarning, unless `partial`, which
    adds the units they finalized. A committed file that is missing or has another size raises
    analyzer.DatasetError (`analyzer verify OUT` says how to repair)."""
    by_source = committed_files_by_source(out_dir, table, partial, storage_options, stacklevel=4)
    return [p for name in by_source for p in by_source[name]]


def committed_files_by_source(
    out_dir: str,
    table: str,
    partial: bool = False,
    storage_options: dict[str, Any] | None = None,
    stacklevel: int = 3,
) -> dict[str, list[str]]:
    """committed_files per source name (the names in full, as the sources' records give them)."""
    from analyzer.engine import manifest
    from analyzer.io import remote

    out = remote.localize(out_dir)
    if remote.is_url(out):
        out = out.rstrip("/")
        if storage_options is not None:  # fsspec options of OUT's protocol, e.g. {"endpoint_url": ...}
            remote.configure({remote.protocol(out): storage_options})
    states = manifest.sources(out)
    if not partial:
        unfinished = [s.name for s in manifest.incomplete(out, states)]
        if unfinished:
            warnings.warn(
                f"{out}: left out {len(unfinished)} unfinished source(s) {unfinished[:5]} (rerun the scan to "
                f"finish them, or read them with partial=True)",
                IncompleteDatasetWarning,
                stacklevel=stacklevel,
            )
    return manifest.committed(out, table, partial=partial, states=states)


def committed_parts(out: str, table: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """committed_files of finished sources (the name earlier versions exported)."""
    return committed_files(out, table, False, storage_options)


def _scan_table(
    out_dir: str, table: str, storage_options: dict[str, Any] | None = None, partial: bool = False
) -> pl.LazyFrame:
    import polars as pl

    from analyzer.io import remote

    by_source = committed_files_by_source(out_dir, table, partial, storage_options, stacklevel=5)
    frames = []
    for name, files in by_source.items():
        if not files:
            continue
        if remote.is_url(files[0]):
            import pyarrow.dataset as ds

            # Read through the same fsspec filesystem (and options) as the scan wrote with.
            dataset = ds.dataset(
                [p.split("://", 1)[1] for p in files], format="parquet", filesystem=remote.filesystem(files[0])
            )
            lf = pl.scan_pyarrow_dataset(dataset)
        else:
            lf = pl.scan_parquet(files, hive_partitioning=False)
        # `source` is the hive partition key (the folders), not a column of the files; the
        # source's record gives its name in full (folder names are escaped, long ones shortened).
        # Files of earlier versions hold it too: theirs is dropped.
        lf = lf.drop("source", strict=False).select(pl.lit(name, pl.String).alias("source"), pl.all())
        frames.append(lf)
    if not frames:
        return _empty(table)
    return pl.concat(frames, how="vertical_relaxed") if len(frames) > 1 else frames[0]


def _empty(table: str) -> pl.LazyFrame:
    import polars as pl

    from analyzer import tables

    empty = pl.from_arrow(tables.SCHEMAS[table].empty_table())
    assert isinstance(empty, pl.DataFrame)  # from a Table, not an Array: a DataFrame
    return empty.lazy().select(pl.lit(None, pl.String).alias("source"), pl.all())


def scan_games(out_dir: str, storage_options: dict[str, Any] | None = None, partial: bool = False) -> pl.LazyFrame:
    """The `games` table under an `analyzer scan --out` directory or URL (one row per game), as
    a polars LazyFrame: the files its finished sources' records list (committed_files; with
    `partial`, also what unfinished sources finalized)."""
    return _scan_table(out_dir, "games", storage_options, partial)


def scan_verdicts(out_dir: str, storage_options: dict[str, Any] | None = None, partial: bool = False) -> pl.LazyFrame:
    """The `verdicts` table (one row per game and edition), lazily."""
    return _scan_table(out_dir, "verdicts", storage_options, partial)


def scan_events(out_dir: str, storage_options: dict[str, Any] | None = None, partial: bool = False) -> pl.LazyFrame:
    """The `events` table (one row per chance or automatic draw, per edition), lazily."""
    return _scan_table(out_dir, "events", storage_options, partial)


def games_with_verdicts(
    out_dir: str, edition: str, storage_options: dict[str, Any] | None = None, partial: bool = False
) -> pl.LazyFrame:
    """Every game joined to one edition's verdicts (on source and game_index): what a study of
    one edition needs in one frame."""
    import polars as pl

    v = scan_verdicts(out_dir, storage_options, partial).filter(pl.col("edition") == edition).drop("game_type")
    return scan_games(out_dir, storage_options, partial).join(v, on=["source", "game_index"], how="left")
