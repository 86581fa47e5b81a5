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


class GroupStream:
    """Held units (the in-process engines: inline and threads), in unit order, written straight
    into the compacted files of their group: every row is written once, instead of once into a
    unit part and again by compaction (which read the parts back, decoded, sorted and
    re-encoded them: the larger part of the cost the dataset-at-rest work added to a scan).

    A group closes once it holds at least `min_games` games (or when the source ends, a unit
    that was not held arrives, or a unit fails): its files are published under the names an
    intent records first, then the group record, then its units' records (each with "group"
    and "finalized", no parts of its own). Killed before that, nothing of the open group is
    committed (its files are temporary) and a rerun recomputes its units; a write that fails
    leaves the group open for the caller to abort() (its units are the failed ones)."""

    def __init__(self, ds: Dataset, source: str, min_games: int):
        self.ds = ds
        self.source = source
        self.min_games = min_games
        self.entries: list[FileEntry] = []  # the groups closed so far
        self._reset()

    def _reset(self) -> None:
        self.writers: list[TableWriter] | None = None
        self.schemas: list[pa.Schema] = []
        self.pending: list[list[pa.Table]] = [[] for _ in TABLES]
        self.held = [0] * len(TABLES)
        self.recs: list[UnitRecord] = []
        self.game_first = 0
        self.games = 0

    @property
    def open(self) -> bool:
        return bool(self.recs)

    def add(self, rec: UnitRecord, tables: tuple, game_base: int, start: int) -> None:
        """Unit `rec` (its tables with unit-local numbering), next in order."""
        if self.writers is None:
            sdir = names.source_dir(self.source)
            self.schemas = [t.schema for t in tables]
            placeholder = [names.group_part(t, sdir, rec["unit"], rec["unit"]) for t in TABLES]
            self.writers = [self.ds.writer(n, s) for n, s in zip(placeholder, self.schemas)]
            self.game_first = game_base
        for i, t in enumerate(tables):
            t = renumber(t, game_base, start)
            if not t.schema.equals(self.schemas[i], check_metadata=False):
                raise ValueError(f"{self.source} unit {rec['unit']}: its {TABLES[i]} schema differs from its group's")
            self.pending[i].append(t.replace_schema_metadata(self.schemas[i].metadata))
            self.held[i] += t.num_rows
            if self.held[i] >= ROW_GROUP_ROWS:  # whole units per row group
                self._flush(i)
        rec["finalized"] = [game_base, start]
        self.recs.append(rec)
        self.games += rec["games"]
        if self.games >= self.min_games:
            self.close()

    def _flush(self, i: int) -> None:
        assert self.writers is not None
        if self.pending[i]:
            self.writers[i].write(_sorted(self.pending[i]), row_group_size=max(self.held[i], 1))
        self.pending[i], self.held[i] = [], 0

    def close(self) -> FileEntry | None:
        """Commit the open group (see the class doc); its entry, or None if none was open."""
        if not self.recs or self.writers is None:
            return None
        first, end = self.recs[0]["unit"], self.recs[-1]["unit"] + 1
        # (on an error the group stays open: the caller aborts it and counts its units as failed)
        for i in range(len(TABLES)):
            self._flush(i)
        for w, name in zip(self.writers, self.ds.intend_group(self.source, first, end)):
            w.rename(name)
        descs = [w.close() for w in self.writers]
        entry: FileEntry = {
            "units": [first, end],
            "games": [self.game_first, self.game_first + self.games],
            "tables": dict(zip(TABLES, descs)),
        }
        self.ds.write_record(names.group_record(names.source_dir(self.source), first, end), dict(entry))
        for rec in self.recs:
            rec["group"] = [first, end]
            rec.pop("parts", None)
            rec.pop("checks", None)
            self.ds.write_unit_record(rec)
        self.entries.append(entry)
        self._reset()
        return entry

    def abort(self) -> list[UnitRecord]:
        """Throw the open group away (its temporary files removed); returns its units."""
        lost = self.recs
        for w in self.writers or []:
            if not w.description:
                try:
                    w.abort()
                except Exception:  # noqa: BLE001 - its temporary file is removed by the next run anyway
                    pass
        for rec in lost:
            rec.pop("finalized", None)
        self._reset()
        return lost
