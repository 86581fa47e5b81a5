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

    from analyzer.kinds.base import Edition


def analyze_bytes(
    data: bytes,
    source: str = "memory",
    editions: Sequence[str | Edition] = ("fide_2018",),
    keep_facts: bool = False,
    kind: str | None = None,
    syzygy: Sequence[str] | None = None,
    unwinnable_budget: int | None = None,
) -> BlockTables:
    """Analyze every game in `data` (whole PGN/PDN text); the tables as `analyzer scan` writes
    them. `editions`: ids or edition objects, all of one kind; `kind` defaults to theirs.
    `syzygy`: folders of Syzygy tables (chess), as `analyzer scan --syzygy`; `unwinnable_budget`
    as `--unwinnable-budget` (chess)."""
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
        options=kinds.block_options(kind, syzygy=tuple(syzygy or ()), unwinnable_budget=unwinnable_budget) or None,
    )


class IncompleteDatasetWarning(UserWarning):
    """OUT holds sources whose run did not finish; the readers left them out."""


def _dataset(out_dir: str, storage_options: dict[str, Any] | None) -> Any:
    from analyzer.engine.dataset import open_dataset

    return open_dataset(out_dir, storage_options)


def _states(ds: Any, partial: bool, stacklevel: int) -> Any:
    """OUT's sources, with a warning naming the unfinished ones that are left out."""
    states = ds.sources()
    if not partial:
        unfinished = [s.name for s in ds.incomplete(states)]
        if unfinished:
            warnings.warn(
                f"{ds.root}: left out {len(unfinished)} unfinished source(s) {unfinished[:5]} (rerun the scan to "
                f"finish them, or read them with partial=True)",
                IncompleteDatasetWarning,
                stacklevel=stacklevel,
            )
    return states


def committed_files(
    out_dir: str,
    table: str,
    partial: bool = False,
    storage_options: dict[str, Any] | None = None,
    check: str = "digest",
) -> list[str]:
    """The files of `table` that OUT's source records commit, in source and game order: only
    these are served (a file no record lists may be a killed run's, or half of a compaction),
    each checked first (`check`: "digest", its SHA-256 against the record, the default;
    "stat", only that it exists with its size, for a user who has just run `analyzer verify`).
    Unfinished sources are left out with an IncompleteDatasetWarning, unless `partial`, which
    adds the units they finalized. A file that is not as written raises analyzer.DatasetError
    (`analyzer verify OUT` says how to repair)."""
    ds = _dataset(out_dir, storage_options)
    by_source = ds.committed(table, partial, check, _states(ds, partial, 3))
    return [ds.file_location(d["path"]) for name in by_source for d in by_source[name]]


def committed_parts(out: str, table: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """committed_files of finished sources (the name earlier versions exported)."""
    return committed_files(out, table, False, storage_options)


def _scan_table(
    out_dir: str, table: str, storage_options: dict[str, Any] | None, partial: bool, check: str
) -> pl.LazyFrame:
    ds = _dataset(out_dir, storage_options)
    return ds.scan(table, partial, check, _states(ds, partial, 4))


def scan_games(
    out_dir: str, storage_options: dict[str, Any] | None = None, partial: bool = False, check: str = "digest"
) -> pl.LazyFrame:
    """The `games` table under an `analyzer scan --out` directory or URL (one row per game), as
    a polars LazyFrame: the files its finished sources' records list, each checked by its
    SHA-256 before a row is served (committed_files; with `partial`, also what unfinished
    sources finalized; `check="stat"` skips the hashing). `storage_options`: fsspec options of
    OUT's protocol, for this call only."""
    return _scan_table(out_dir, "games", storage_options, partial, check)


def scan_verdicts(
    out_dir: str, storage_options: dict[str, Any] | None = None, partial: bool = False, check: str = "digest"
) -> pl.LazyFrame:
    """The `verdicts` table (one row per game and edition), lazily."""
    return _scan_table(out_dir, "verdicts", storage_options, partial, check)


def scan_events(
    out_dir: str, storage_options: dict[str, Any] | None = None, partial: bool = False, check: str = "digest"
) -> pl.LazyFrame:
    """The `events` table (one row per chance or automatic draw, per edition), lazily."""
    return _scan_table(out_dir, "events", storage_options, partial, check)


def games_with_verdicts(
    out_dir: str,
    edition: str,
    storage_options: dict[str, Any] | None = None,
    partial: bool = False,
    check: str = "digest",
) -> pl.LazyFrame:
    """Every game joined to one edition's verdicts (on source and game_index): what a study of
    one edition needs in one frame."""
    import polars as pl

    v = scan_verdicts(out_dir, storage_options, partial, check).filter(pl.col("edition") == edition)
    return scan_games(out_dir, storage_options, partial, check).join(
        v.drop("game_type"), on=["source", "game_index"], how="left"
    )
