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
under temporary names and renamed, then the source record lists them (the commit), and only
then are the unit parts removed. Killed before the commit, a rerun finds the unit parts listed
by their unit records and compacts again (same names); after it, the record lists the
compacted files, and the unit parts left over are removed by the next run. Readers only read
the files a source record lists: never both, never neither.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer import arrow_compute as ac
from analyzer.engine import layout
from analyzer.engine.manifest import describe
from analyzer.engine.parts import write_json
from analyzer.engine.store import is_remote, open_store, parquet_options

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


def _write_group(unit_parts: list[tuple[str, tuple | None]], out: str, path: str) -> tuple[str, dict]:
    """One table of a group: its unit parts (path, and the (game_base, text_start) to renumber
    a staging part by, or None for a final one), in order, into one file (see the module doc)."""
    st = open_store(out)
    remote = is_remote(out)

    def read(k: int) -> pa.Table:
        part, shift = unit_parts[k]
        t = st.read_table(part)
        return t if shift is None else renumber(t, *shift)

    first = read(0)
    schema = first.schema
    name = st.committed_name(path)
    if remote:
        sink = pa.BufferOutputStream()
        writer = pq.ParquetWriter(sink, schema, **parquet_options(schema))
        tmp = None
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = layout.temp_path(path)
        writer = pq.ParquetWriter(tmp, schema, **parquet_options(schema))
    rows = 0
    try:
        pending: list[pa.Table] = []
        held = 0
        for k, (part, _) in enumerate(unit_parts):
            t = first if k == 0 else read(k)
            if not t.schema.equals(schema, check_metadata=False):
                raise ValueError(f"{part}: its schema differs from {unit_parts[0][0]}'s; rerun the scan with --force")
            pending.append(t.replace_schema_metadata(schema.metadata))
            held += t.num_rows
            if held >= ROW_GROUP_ROWS:  # whole units per row group: one game's rows never straddle two
                writer.write_table(_sorted(pending), row_group_size=held)
                rows += held
                pending, held = [], 0
        if pending:
            writer.write_table(_sorted(pending), row_group_size=max(held, 1))
            rows += held
        writer.close()
    except BaseException:
        writer.close()
        if tmp is not None:
            try:
                os.remove(tmp)
            except OSError:
                pass
        raise
    if remote:
        data = sink.getvalue().to_pybytes()
        st.put(name, data)
        return name, describe(name, rows, data)
    assert tmp is not None
    desc = describe(tmp, rows)
    os.replace(tmp, path)
    return path, desc


def compact_group(out: str, source: str, recs: list[dict], bases: list[int], starts: list[int]) -> dict:
    """The file entry (engine.manifest) of units recs[0]..recs[-1] compacted into one file per
    table, also saved as the group's record (so that a source whose record is lost keeps its
    intact groups). `bases`: the game_index of each unit's first game and, last, the group's
    end; `starts`: each unit's text offset. A unit's parts are read as its record names them:
    final parts (numbered already), or staging parts (renumbered here, so that the engines that
    stage write every row twice, not three times). The unit parts are left in place (removed
    after the source record's commit)."""
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
    paths = layout.compacted_paths(out, source, first, end)
    tables = {}
    for i, t in enumerate(layout.TABLES):
        parts = [(layout.committed_parts(out, source, r)[i], sh) for r, sh in zip(recs, shifts)]
        name, desc = _write_group(parts, out, paths[i])
        tables[t] = {"path": layout.rel(out, name), **desc}
    entry = {"units": [first, end], "games": [bases[0], bases[-1]], "tables": tables}
    write_json(entry, layout.group_record_path(out, source, first, end))
    return entry
