"""Compaction: a finished source's unit parts (one per work unit and table: ~6-25k games each,
thousands for a Lichess month) rewritten as a few large files, so that a month is tens of
files, not tens of thousands, and readers prune by game_index.

A group of consecutive units holding at least Config.compact_games games (1 M by default)
becomes one file per table,
`part-<first>-<end>.parquet`: rows sorted by game_index (stable, so a game's rows keep their
order), row groups of about ROW_GROUP_ROWS rows, min/max statistics on the numeric columns.
Memory stays bounded: a table is streamed unit part by unit part, and at most one row group
(plus one unit) is held at once.

Crash safety comes from the order of commits (engine.scan): the compacted files are written
under temporary names and published under new names of their own (their intent recorded
first), then the source record lists them (the commit), and only then are the unit parts
removed. Killed before the commit, a rerun finds the unit parts listed
by their unit records and compacts again (same names); after it, the record lists the
compacted files, and the unit parts left over are removed by the next run. Readers only read
the files a source record lists: never both, never neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac
from analyzer.engine.dataset import TABLES, Dataset, FileDesc, FileEntry, TableWriter, UnitRecord, names

ROW_GROUP_ROWS = 128 * 1024


def plan_groups(unit_games: list[int], first: int, min_games: int) -> list[tuple[int, int]]:
    """[first, end) unit ranges of at least min_games games each (the last one may be smaller
    only if it is the only one: a remainder of less than half a group joins the group before)."""
    groups: list[tuple[int, int]] = []
    start = first
    acc = 0
    for k, n in enumerate(unit_games, start=first):
        acc += n
        if acc >= min_games:
            groups.append((start, k + 1))
            start, acc = k + 1, 0
    end = first + len(unit_games)
    if start < end:
        if groups and acc < min_games // 2:
            groups[-1] = (groups[-1][0], end)
        else:
            groups.append((start, end))
    return groups


def renumber(table: pa.Table, game_base: int, text_start: int) -> pa.Table:
    """A unit's table with unit-local game_index (and byte_offset, where the table has one)
    shifted to the source's numbering."""
    meta = table.schema.metadata
    i = table.schema.get_field_index("game_index")
    table = table.set_column(i, "game_index", ac.add(table.column(i), game_base))
    j = table.schema.get_field_index("byte_offset")
    if j >= 0:
        table = table.set_column(j, "byte_offset", ac.add(table.column(j), text_start))
    return table.replace_schema_metadata(meta)


def _in_order(tables: list[pa.Table]) -> bool:
    """The game_index column runs without a step back through the tables (the games table
    does: a unit's games are in order, and units follow each other)."""
    last = None
    for t in tables:
        for chunk in t.column("game_index").chunks:
            v = chunk.to_numpy(zero_copy_only=False)
            if len(v) == 0:
                continue
            if (last is not None and v[0] < last) or (len(v) > 1 and (np.diff(v) < 0).any()):
                return False
            last = v[-1]
    return True


def _sorted(tables: list[pa.Table]) -> pa.Table:
    """The rows of `tables` in game_index order (stable: a game's rows keep their order). In
    order already, they are only chained (no copy); else gathered and taken in order."""
    if _in_order(tables):
        return pa.concat_tables(tables)
    t = pa.concat_tables(tables).unify_dictionaries().combine_chunks()
    if t.num_rows == 0:
        return t
    return ac.take(t, ac.sort_indices(t.column("game_index").chunk(0)))


def _write_group(ds: Dataset, unit_parts: list[tuple[str, Any, tuple | None]], writer_of) -> FileDesc:
    """One table of a group: its unit parts (name, description, and the (game_base,
    text_start) to renumber a staging part by, or None for a final one), in order, into one
    file (see the module doc); `writer_of(schema)` opens it. Returns its description."""

    def read(k: int) -> pa.Table:
        name, desc, shift = unit_parts[k]
        t = ds.read_table(name, desc)
        return t if shift is None else renumber(t, *shift)

    first = read(0)
    schema = first.schema
    writer: TableWriter = writer_of(schema)
    try:
        pending: list[pa.Table] = []
        held = 0
        for k, (name, _, _) in enumerate(unit_parts):
            t = first if k == 0 else read(k)
            if not t.schema.equals(schema, check_metadata=False):
                raise ValueError(f"{name}: its schema differs from {unit_parts[0][0]}'s; rerun the scan with --force")
            pending.append(t.replace_schema_metadata(schema.metadata))
            held += t.num_rows
            if held >= ROW_GROUP_ROWS:  # whole units per row group: one game's rows never straddle two
                writer.write(_sorted(pending), row_group_size=held)
                pending, held = [], 0
        if pending:
            writer.write(_sorted(pending), row_group_size=max(held, 1))
        return writer.close()
    except BaseException:
        if not writer.description:
            writer.abort()
        raise


def compact_group(ds: Dataset, source: str, recs: list[UnitRecord], bases: list[int], starts: list[int]) -> FileEntry:
    """The file entry of units recs[0]..recs[-1] compacted into one file per table, also saved
    as the group's record (so that a source whose record is lost keeps its intact groups).
    `bases`: the game_index of each unit's first game and, last, the group's end; `starts`:
    each unit's text offset. A unit's parts are read as its record names them: final parts
    (numbered already), or staging parts (renumbered here, so that the engines that stage write
    every row twice, not three times), each checked against its description first. The unit
    parts are left in place (removed after the source record's commit)."""
    first, end = recs[0]["unit"], recs[-1]["unit"] + 1
    shifts: list[tuple | None] = []
    for rec, base, start in zip(recs, bases, starts):
        done = rec.get("finalized")
        if done is not None and done != [base, start]:
            raise RuntimeError(
                f"{source} unit {rec['unit']}: final parts numbered from {done}, not {[base, start]}; "
                f"rerun with --force"
            )
        shifts.append(None if done is not None else (base, start))
    tables: dict = {}
    new = ds.intend_group(source, first, end)
    for i, t in enumerate(TABLES):
        parts = [(ds.unit_part_names(r)[i], (r.get("checks") or {}).get(t) or {}, sh) for r, sh in zip(recs, shifts)]
        tables[t] = _write_group(ds, parts, lambda schema, name=new[i]: ds.writer(name, schema))
    entry: FileEntry = {"units": [first, end], "games": [bases[0], bases[-1]], "tables": tables}
    ds.write_record(names.group_record(names.source_dir(source), first, end), dict(entry))
    return entry
