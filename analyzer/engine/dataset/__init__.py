"""The one owner of an output folder (OUT): its layout, its store (a local folder or an fsspec
URL), its manifest and typed records, atomic writes, listing, the checks of every read, and the
reading of its tables and of the game text they come from. Every writer (scan, compaction,
repair) and every reader (analyzer.scan_*, report, show, verify) goes through a Dataset; no
other module joins a path under OUT or asks whether OUT is remote (as Delta Lake's table object
owns a table's files and commits).

What it guarantees:

- Readers serve only files that a finished source's record lists, and each one is checked
  before a row of it is served: its SHA-256 must be the one recorded when it was written
  (check="digest", the default), which a flipped byte in a page, a header, the footer or its
  statistics, a truncation or a forged file of the same size and rows all change. A file that
  does not match raises DatasetError naming it and the repair; check="stat" (exists, size) is
  the opt-out of a user who has just verified.
- Nothing inside OUT is followed through a symbolic link, and nothing is deleted, truncated or
  overwritten that the analyzer did not write: a table file is published under a new name of
  its own (a token), the intent to create it is recorded before it exists, and cleanup removes
  only files that a record or an intent of this OUT names, or temporary files of this tool.
  Anything else is left alone, with a warning.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.engine.dataset import names, records
from analyzer.engine.dataset.records import (
    FileDesc,
    FileEntry,
    IntentRecord,
    SourceRecord,
    StartedRecord,
    UnitRecord,
)
from analyzer.engine.dataset.store import LocalStore, ObjectStore, Sink, parquet_options
from analyzer.errors import DamagedRecord, DatasetError, RunError, UnsafePath
from analyzer.io import remote

if TYPE_CHECKING:
    import polars as pl

log = logging.getLogger("analyzer")

TABLES = names.TABLES
CHECKS = ("stat", "digest", "deep")  # how a file is checked against its description, cheapest first


@dataclasses.dataclass
class SourceState:
    """What OUT holds of one source: finished (a source record) or not; its committed files."""

    dir: str
    name: str
    complete: bool
    record: SourceRecord | None
    files: list[FileEntry]  # committed: a finished source's; else its finalized units'
    games: int  # games in those files
    expected_games: int | None  # a finished source's games; an unfinished one's estimate (None: unknown)
    note: str = ""
    damaged: str | None = None  # its source record is damaged: readers refuse it (a rerun restores it)


@dataclasses.dataclass
class Damage:
    source: str
    units: tuple[int, int]  # [first, end) units of the damaged file's group
    path: str  # relative to OUT
    problem: str


@dataclasses.dataclass
class Chunk:
    """A piece of one source's tables for a reader that must not hold the whole source: the
    files of each table that hold games [first, end), and whether rows outside that range are
    in them too (then the reader filters on game_index: the files are sorted by it and their
    row groups carry its statistics, so the other row groups are not read)."""

    source: str
    files: dict[str, list[str]]  # table -> local paths or URLs, checked
    games: tuple[int, int]
    filtered: bool


class TableWriter:
    """One table file on its way: rows appended, then published under its name with its
    description (rows, bytes, SHA-256), or thrown away."""

    def __init__(self, sink: Sink, schema: pa.Schema, on_close=None):
        self.sink = sink
        self.name = sink.name
        self.rows = 0
        self.description: FileDesc = {}
        self.on_close = on_close
        self.writer = pq.ParquetWriter(sink.target, schema, **parquet_options(schema))

    def write(self, table: pa.Table, row_group_size: int | None = None) -> None:
        if table.num_rows:
            self.writer.write_table(table, row_group_size=row_group_size)
            self.rows += table.num_rows

    def close(self) -> FileDesc:
        self.writer.close()
        size, digest = self.sink.commit()
        self.description = {"path": self.name, "rows": self.rows, "bytes": size, "sha256": digest}
        if self.on_close is not None:
            self.on_close(self.name)
        return self.description

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
            self.sink.abort()

    def rename(self, name: str) -> None:
        """Publish under another name (one an intent names) than the one it was opened with."""
        self.name = self.sink.name = name


class Dataset:
    """OUT: a local folder or an fsspec URL (with the storage options of this call)."""

    def __init__(self, root: str, storage_options: dict | None = None, run_id: str | None = None):
        root = remote.localize(str(root))
        self.remote = remote.is_url(root)
        self.root = root.rstrip("/") if self.remote else root
        self.storage_options = dict(storage_options or {})
        self.run_id = run_id or names.token()
        self._store: LocalStore | ObjectStore | None = None
        self._verified: dict[str, Any] = {}  # name -> its stat when its digest last matched (this object)

    def __getstate__(self):
        return {"root": self.root, "storage_options": self.storage_options, "run_id": self.run_id}

    def __setstate__(self, state):
        Dataset.__init__(self, state["root"], state["storage_options"], state["run_id"])

    def __repr__(self) -> str:
        return f"Dataset({self.root!r})"

    @property
    def store(self) -> LocalStore | ObjectStore:
        if self._store is None:
            if self.remote:
                self._store = ObjectStore(self.root, self.storage_options, self.run_id)
            else:
                self._store = LocalStore(self.root, self.run_id)
        return self._store

    def display(self, name: str = "") -> str:
        """Where `name` is, for a message (a path or a URL)."""
        return self.store.display(name) if name else self.root

    def file_location(self, name: str) -> str:
        """A path (local) or URL of a file, for a reader that takes one (polars, pyarrow)."""
        return self.store.path(name)

    # -- is it one, and is it safe -------------------------------------------------------------

    def is_dataset(self) -> bool:
        """OUT was written by `analyzer scan` (it has a manifest folder)."""
        if self.remote:
            return bool(self.manifest_dirs())
        return os.path.isdir(self.root) and self.store.safe_folder(names.MANIFEST)

    def check_layout(self) -> None:
        """UnsafePath if a symbolic link (or anything but a folder) stands where OUT's own
        folders belong: the top folders and every source's folders."""
        st = self.store
        if self.remote:
            return
        for top in names.TOP_FOLDERS:
            if not st.safe_folder(top):
                continue
            for name, kind in st.entries(top):
                if kind == "link":
                    raise UnsafePath(
                        f"{st.display(top + '/' + name)} is a symbolic link; the analyzer does not follow links "
                        f"inside its output folder (remove it, or give --out the folder it points to)",
                        f"{top}/{name}",
                    )
        for name, kind in st.entries(""):
            if name == names.LOCK and kind == "link":
                raise UnsafePath(
                    f"{st.display(name)} is a symbolic link; the analyzer does not write its lock through a link",
                    name,
                )

    # -- a writer's run ----------------------------------------------------------------------

    def prepare(self) -> None:
        """Make sure OUT can be written (creating it): RunError with one line if not."""
        if self.remote:
            try:
                probe = f"{names.MANIFEST}/.analyzer-write-probe-{os.getpid()}"
                self.store.put(probe, b"x")
                self.store.delete(probe)
            except remote.MissingExtra as exc:
                raise RunError(str(exc)) from None
            except Exception as exc:  # noqa: BLE001 - credentials, bucket, network: one line for the user
                raise RunError(f"output {self.root!r} is not writable: {type(exc).__name__}: {exc}") from None
            return
        if os.path.lexists(self.root) and not os.path.isdir(self.root):
            raise RunError(f"output {self.root!r} is a file, not a folder")
        try:
            os.makedirs(self.root, exist_ok=True)
            tmp = names.temp_name("write-probe", self.run_id, os.getpid())
            with open(self.store.path(tmp), "x") as fh:
                fh.write("x")
            os.remove(self.store.path(tmp))
        except OSError as exc:
            raise RunError(f"output directory {self.root!r} is not writable: {exc.strerror or exc}") from None
        self.check_layout()

    def lock(self):
        """The run's lock (a context manager; acquire() raises LockHeld or UnsafePath)."""
        return self.store.lock()

    def _our_folders(self) -> list[str]:
        """OUT and the folders the tool creates in it (never through a symbolic link)."""
        st = self.store
        found = [""]
        for top in names.TOP_FOLDERS:
            if st.safe_folder(top):
                found.append(top)
                found += [f"{top}/{d}" for d in st.folders(top)]
        return found

    def clean_temp(self) -> int:
        """Remove the temporary files (this tool's, by their name) an interrupted run left in our
        folders; the caller holds the lock, so no live run owns any. Returns how many."""
        if self.remote:
            return 0
        n = 0
        for folder in self._our_folders():
            for name in self.store.list(folder):
                if names.is_temp(name) and self.store.delete(f"{folder}/{name}" if folder else name):
                    n += 1
        return n

    # -- records --------------------------------------------------------------------------------

    def read_record(self, name: str) -> dict | None:
        """A record (None if absent); DamagedRecord if it is damaged."""
        try:
            data = self.store.get(name)
        except FileNotFoundError:
            return None
        return records.decode(data, name)

    def read_record_or_none(self, name: str) -> dict | None:
        """A record, or None if it is absent or damaged (its work is then redone)."""
        try:
            return self.read_record(name)
        except (DamagedRecord, UnsafePath):
            return None

    def write_record(self, name: str, obj: dict) -> None:
        """A record, replacing its older version. The files that the older version names and
        this one does not (a unit recomputed, a group compacted again, a source repaired) stay
        known as the analyzer's: an intent names them first, so that a run killed before its
        cleanup leaves nothing that looks foreign."""
        base = names.base_of(name)
        if names.unit_of_record(base) is not None or names.is_group_record(base) or base == "source.json":
            old = self.read_record_or_none(name)
            if old:
                dropped = sorted(_named_files(self, old) - _named_files(self, obj))
                if dropped:
                    self._intend_in(names.folder_of(name), dropped)
        self.store.put(name, records.encode(obj))

    def source_record(self, source: str) -> SourceRecord | None:
        """A finished source's record (by its name); None if it has none; DamagedRecord."""
        return self.read_record(names.source_record(names.source_dir(source)))  # type: ignore[return-value]

    def source_record_by_dir(self, sdir: str) -> SourceRecord | None:
        return self.read_record(names.source_record(sdir))  # type: ignore[return-value]

    def unit_record(self, source: str, unit: int) -> UnitRecord | None:
        """A unit's record, or None if it is absent or damaged."""
        return self.read_record_or_none(names.unit_record(names.source_dir(source), unit))  # type: ignore[return-value]

    def started_record(self, source: str) -> StartedRecord | None:
        """How a run started the source; None if absent; DamagedRecord."""
        return self.read_record(names.started_record(names.source_dir(source)))  # type: ignore[return-value]

    def write_unit_record(self, rec: UnitRecord) -> None:
        self.write_record(names.unit_record(names.source_dir(rec["source"]), rec["unit"]), dict(rec))

    def write_started(self, source: str, rec: StartedRecord) -> None:
        self.write_record(names.started_record(names.source_dir(source)), dict(rec))

    def commit_source(self, source: str, rec: SourceRecord) -> None:
        """The commit of a source's tables: from now on readers serve the files it lists."""
        self.write_record(names.source_record(names.source_dir(source)), dict(rec))

    def write_run_summary(self, summary: dict) -> None:
        self.write_record(names.RUN_RECORD, summary)

    def write_sync_summary(self, summary: dict) -> None:
        self.write_record(names.SYNC_RECORD, summary)

    def write_data_dictionary(self, dictionary: dict) -> None:
        self.write_record(names.DATASET, dictionary)

    def group_records(self, source: str) -> list[FileEntry]:
        """The file entries of a source's compacted groups, from their records, disjoint (a
        source whose own record is lost keeps what they describe)."""
        folder = names.manifest_folder(names.source_dir(source))
        found: list[FileEntry] = []
        for name in self.store.list(folder):
            if names.is_group_record(name):
                rec = self.read_record_or_none(f"{folder}/{name}")
                if rec is not None:
                    found.append(rec)  # type: ignore[arg-type]
        found.sort(key=lambda e: e["units"][0])
        out: list[FileEntry] = []
        for e in found:  # disjoint groups only (an older grouping's records may overlap)
            if not out or e["units"][0] >= out[-1]["units"][1]:
                out.append(e)
        return out

    def stale_records(self, source: str, record: SourceRecord) -> list[tuple[str, dict]]:
        """(name, content) of the unit and group records of a finished source that are missing,
        damaged or differ from the copies its record holds: what verify reports and a rerun
        writes again."""
        sdir = names.source_dir(source)
        wanted: list[tuple[str, dict]] = [
            (names.unit_record(sdir, r["unit"]), dict(r)) for r in record.get("units", [])
        ]
        wanted += [(names.group_record(sdir, *e["units"]), dict(e)) for e in record.get("files", [])]
        stale = []
        for name, want in wanted:
            if self.read_record_or_none(name) != want:
                stale.append((name, want))
        return stale

    def restore_records(self, source: str, stale: list[tuple[str, dict]]) -> None:
        for name, rec in stale:
            self.write_record(name, rec)

    # -- table files ------------------------------------------------------------------------

    def _intend(self, source: str, files: list[str]) -> None:
        """Record the files about to be created, before they exist (see the module doc)."""
        self._intend_in(names.manifest_folder(names.source_dir(source)), files)

    def _intend_in(self, folder: str, files: list[str]) -> None:
        intent: IntentRecord = {"run": self.run_id, "files": files}
        self.store.put(f"{folder}/{names.base_of(names.intent_record(''))}", records.encode(dict(intent)))

    def intend_unit_parts(self, source: str, unit: int, staging: bool) -> list[str]:
        """New names for a unit's parts (one per TABLES), their intent recorded: final parts
        (staging=False: rows with the source's numbering) or staging parts (unit-local)."""
        sdir = names.source_dir(source)
        new = [names.staging_part(t, sdir, unit) if staging else names.part(t, sdir, unit) for t in TABLES]
        self._intend(source, new)
        return new

    def intend_group(self, source: str, first: int, end: int) -> list[str]:
        """New names for the compacted files of units [first, end), their intent recorded."""
        sdir = names.source_dir(source)
        new = [names.group_part(t, sdir, first, end) for t in TABLES]
        self._intend(source, new)
        return new

    def writer(self, name: str, schema: pa.Schema) -> TableWriter:
        """A writer of a table file under a name that intend_* gave."""
        return TableWriter(self.store.sink(name), schema, self._written)

    def _written(self, name: str) -> None:
        """A file this object just published: its digest is the one its writer computed (a
        reader in this process need not hash it again while its stat is unchanged)."""
        if not self.remote:
            st = self.store.stat(name)
            if st is not None:
                self._verified[name] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)  # type: ignore[union-attr]

    def unit_writers(self, source: str, unit: int, schemas: list[pa.Schema], staging: bool) -> list[TableWriter]:
        """Writers of a unit's parts (one per TABLES)."""
        return [self.writer(n, s) for n, s in zip(self.intend_unit_parts(source, unit, staging), schemas)]

    def write_unit_tables(self, rec: UnitRecord, tables: Iterable[pa.Table], staging: bool) -> None:
        """A unit's tables as its parts, then its record naming them (in that order: a record
        always has its parts)."""
        tables = list(tables)
        writers = self.unit_writers(rec["source"], rec["unit"], [t.schema for t in tables], staging)
        try:
            for w, t in zip(writers, tables):
                w.write(t)
            descs = [w.close() for w in writers]
        except BaseException:
            for w in writers:
                if not w.description:
                    w.abort()
            raise
        self.name_parts(rec, descs)
        self.write_unit_record(rec)

    @staticmethod
    def name_parts(rec: UnitRecord, descs: list[FileDesc]) -> None:
        """Record a unit's parts in its record (name and description per TABLES)."""
        rec["parts"] = {t: d["path"] for t, d in zip(TABLES, descs)}
        rec["checks"] = {
            t: {"rows": d["rows"], "bytes": d["bytes"], "sha256": d["sha256"]} for t, d in zip(TABLES, descs)
        }

    def unit_part_names(self, rec: UnitRecord) -> tuple[str, ...]:
        """The parts (one per TABLES) a unit record commits: those it names, or (records written
        before parts were named) the names of that time; none for a unit whose rows went
        straight into its group's compacted files ("group")."""
        parts = rec.get("parts")
        if parts:
            return tuple(parts[t] for t in TABLES)
        if rec.get("group"):
            return ()
        sdir = names.source_dir(rec["source"])
        k = rec["unit"]
        if rec.get("finalized"):
            return tuple(f"{names.table_folder(t, sdir)}/part-{k:06d}.parquet" for t in TABLES)
        return tuple(f"{names.staging_folder(sdir)}/unit-{k:06d}.{t}.parquet" for t in TABLES)

    def unit_entry(self, rec: UnitRecord) -> FileEntry:
        """The file entry of one unit's own final parts."""
        checks = rec.get("checks") or {}
        tables: dict[str, FileDesc] = {}
        for t, name in zip(TABLES, self.unit_part_names(rec)):
            tables[t] = {"path": name, **checks.get(t, {})}
        return {"units": [rec["unit"], rec["unit"] + 1], "games": [0, rec.get("games", 0)], "tables": tables}

    def read_table(self, name: str, desc: FileDesc | None = None) -> pa.Table:
        """A table file, whole; checked against its description first when there is one."""
        if desc:
            problem = self.check_file({**desc, "path": name}, "digest")
            if problem:
                raise DatasetError(f"{self.display(name)}: {problem}", name)
        return self.store.read_table(name)

    # -- checking files against their description --------------------------------------------

    def check_file(self, desc: FileDesc, check: str = "digest") -> str | None:
        """None if the file is what its description says; else what is wrong with it.
        stat: it exists as a regular file with its size; digest: also its SHA-256 (the bytes
        as written: pages, headers, footer, statistics); deep: also every page decodes with
        its checksum verified (a check of the writer, as the digest rules out any later change)."""
        name = desc["path"]
        try:
            st = self.store.stat(name)
        except UnsafePath as exc:
            return str(exc)
        if st is None:
            return "missing"
        if self.remote:
            size = int(st.get("size") or 0)  # type: ignore[union-attr]
        else:
            import stat as stat_mod

            if not stat_mod.S_ISREG(st.st_mode):  # type: ignore[union-attr]
                return "not a regular file (a symbolic link or a folder stands where the file was written)"
            size = st.st_size  # type: ignore[union-attr]
        if "bytes" in desc and size != desc["bytes"]:
            return f"{size:,} bytes instead of {desc['bytes']:,} (truncated or changed)"
        if check == "stat":
            return None
        sig = None if self.remote else (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)  # type: ignore[union-attr]
        if "sha256" in desc:
            if sig is None or self._verified.get(name) != sig or check == "deep":
                try:
                    _, digest = self.store.sha256(name)
                except (OSError, DatasetError) as exc:
                    return f"cannot be read ({exc})"
                if digest != desc["sha256"]:
                    self._verified.pop(name, None)
                    return "content changed (its SHA-256 differs from the one recorded when it was written)"
                if sig is not None:
                    self._verified[name] = sig
        elif check != "deep":  # a file of an older version, without a digest: its footer's rows
            try:
                rows = self.store.parquet_file(name).metadata.num_rows
            except Exception as exc:  # noqa: BLE001 - any footer that does not parse is damage
                return f"unreadable footer ({type(exc).__name__}: {exc})"
            if "rows" in desc and rows != desc["rows"]:
                return f"{rows:,} rows in its footer instead of {desc['rows']:,}"
        if check != "deep":
            return None
        try:
            # One thread: a page that fails to decode must not leave decoding tasks of pyarrow's
            # pool running at exit (a C++ terminate, exit 134, once in 13 runs before).
            pf = self.store.parquet_file(name, page_checksum_verification=True, pre_buffer=False)
            if "rows" in desc and pf.metadata.num_rows != desc["rows"]:
                return f"{pf.metadata.num_rows:,} rows in its footer instead of {desc['rows']:,}"
            for i in range(pf.num_row_groups):  # a row group at a time: a compacted file is 1 M games
                pf.read_row_group(i, use_threads=False)
        except Exception as exc:  # noqa: BLE001 - a page that does not decode is damage
            return f"a page does not decode ({type(exc).__name__}: {exc})"
        return None

    def check_entries(self, source: str, entries: list[FileEntry], check: str = "digest") -> list[Damage]:
        """Every file of some file entries against its description."""
        found = []
        for entry in entries:
            for t in TABLES:
                desc = entry["tables"][t]
                problem = self.check_file(desc, check)
                if problem:
                    found.append(Damage(source, (entry["units"][0], entry["units"][1]), desc["path"], problem))
        return found

    def check_source(self, state: SourceState, check: str = "digest") -> list[Damage]:
        return self.check_entries(state.name, state.files, check)

    def unit_parts_problem(self, rec: UnitRecord, check: str = "digest") -> str | None:
        """None if the parts a unit record names are what it recorded; else what is wrong
        (records of older versions, without descriptions: the parts exist)."""
        if rec.get("group") and not rec.get("parts"):
            first, end = rec["group"]
            return f"its rows are in the compacted files of units {first}-{end - 1} only, and those are not intact"
        checks = rec.get("checks") or {}
        for t, name in zip(TABLES, self.unit_part_names(rec)):
            if checks:
                problem = self.check_file({"path": name, **checks.get(t, {})}, check)
            else:
                problem = None if self.store.exists(name) else "missing"
            if problem:
                return f"{name}: {problem}"
        return None

    # -- what OUT holds ----------------------------------------------------------------------

    def manifest_dirs(self) -> list[str]:
        """The source folders under OUT/_manifest (every source a run started)."""
        return self.store.folders(names.MANIFEST)

    def sources(self) -> list[SourceState]:
        """Every source OUT holds, finished or not, in folder order."""
        found = []
        for d in self.manifest_dirs():
            try:
                rec = self.source_record_by_dir(d)
            except DamagedRecord as exc:  # its units are what a rerun can check and resume
                state = self._unfinished(d)
                state.note = f"its source record is damaged ({exc}); " + state.note
                state.damaged = f"{names.source_record(d)}: {exc}"
                found.append(state)
                continue
            if rec is None:  # a run started it (a folder of its records) and did not finish
                found.append(self._unfinished(d))
                continue
            name = rec.get("source") or (rec.get("units") or [{}])[0].get("source", d)
            found.append(SourceState(d, name, True, rec, self.files_of(rec), rec.get("games", 0), rec.get("games")))
        return found

    def files_of(self, record: SourceRecord) -> list[FileEntry]:
        """A source record's file entries ("files"; for a format-1 record, one per unit from its
        unit records), each with "games" [first, end) game_index."""
        if "files" in record:
            return record["files"]
        out: list[FileEntry] = []
        base = 0
        for rec in record.get("units", []):
            entry = self.unit_entry(rec)
            entry["games"] = [base, base + rec["games"]]
            base += rec["games"]
            out.append(entry)
        return out

    def _unfinished(self, d: str) -> SourceState:
        """A source a run started and did not finish (or whose record is lost): its partial
        content is its first units, as far as each one's games are in files that exist: a
        compacted group (its group record) or the unit's own final parts."""
        st = self.store
        folder = names.manifest_folder(d)
        recs: dict[int, Any] = {}
        groups: dict[int, Any] = {}
        for name in st.list(folder):
            if names.is_group_record(name) or names.unit_of_record(name) is not None:
                found = self.read_record_or_none(f"{folder}/{name}")
                if found is None:
                    continue
                if names.is_group_record(name):
                    groups[found["units"][0]] = found
                else:
                    recs[found["unit"]] = found
        started = self.read_record_or_none(names.started_record(d)) or {}
        files: list[FileEntry] = []
        base = read_bytes = k = 0
        while True:
            group = groups.get(k)
            if group is not None and group["games"][0] == base and self._present(group):
                files.append(group)
                for u in range(*group["units"]):
                    read_bytes += (recs.get(u) or {}).get("input_bytes") or 0
                base, k = group["games"][1], group["units"][1]
                continue
            rec: UnitRecord | None = recs.get(k)
            if rec is None or not rec.get("finalized") or rec["finalized"][0] != base:
                break
            entry = self.unit_entry(rec)
            if not self._present(entry):
                break
            entry["games"] = [base, base + rec["games"]]
            files.append(entry)
            base += rec["games"]
            read_bytes += rec.get("input_bytes") or 0
            k += 1
        name = started.get("source") or next((r["source"] for r in recs.values()), d)
        size = (started.get("input") or {}).get("size")
        expected = round(base * size / read_bytes) if isinstance(size, int) and size > 0 and read_bytes > 0 else None
        note = f"{k} of {started.get('units') or '?'} unit(s) in its files so far"
        return SourceState(d, name, False, None, files, base, expected, note)

    def _present(self, entry: FileEntry) -> bool:
        """Every file of a file entry is there with its recorded size (a cheap look)."""
        return all(self.check_file(desc, "stat") is None for desc in entry["tables"].values())

    def incomplete(self, states: list[SourceState] | None = None) -> list[SourceState]:
        return [s for s in (self.sources() if states is None else states) if not s.complete]

    def committed(
        self,
        table: str,
        partial: bool = False,
        check: str = "digest",
        states: list[SourceState] | None = None,
    ) -> dict[str, list[FileDesc]]:
        """Source name -> the files of `table` that OUT commits for it, in game order: the
        finished sources' (and with partial=True also the finalized units of unfinished ones),
        each checked (`check`); a file that is not as written raises DatasetError."""
        out: dict[str, list[FileDesc]] = {}
        damaged = []
        for state in self.sources() if states is None else states:
            if state.damaged:
                damaged.append(f"{state.name}: {state.damaged}")
                continue
            if not state.complete and not partial:
                continue
            descs = []
            for entry in state.files:
                desc = entry["tables"][table]
                problem = self.check_file(desc, check)
                if problem:
                    damaged.append(f"{state.name}: {desc['path']}: {problem}")
                    continue
                descs.append(desc)
            out[state.name] = descs
        if damaged:
            raise self.damage_error(damaged)
        return out

    def damage_error(self, damaged: list[str]) -> DatasetError:
        return DatasetError(
            f"{self.root}: {len(damaged)} damaged or missing file(s) ({'; '.join(damaged[:5])}"
            f"{'; ...' if len(damaged) > 5 else ''}); `analyzer verify {self.root}` lists them and the command "
            f"that repairs them",
            damaged[0].split(": ", 2)[1] if damaged else None,
        )

    def unlisted_files(self, state: SourceState) -> list[str]:
        """Part files in the source's table folders that its record does not list: ones the
        analyzer wrote (left by an interrupted compaction or repair; a rerun removes them) and
        foreign ones (left alone). Readers of the folders would count both."""
        if not state.complete:
            return []
        listed = {e["tables"][t]["path"] for e in state.files for t in TABLES}
        found = []
        for t in TABLES:
            folder = names.table_folder(t, state.dir)
            for name, _kind in self.store.entries(folder):
                if f"{folder}/{name}" not in listed and not names.is_temp(name):
                    found.append(f"{folder}/{name}")
        return sorted(found)

    def ours(self, source: str, record: SourceRecord | None = None) -> set[str]:
        """Every file of a source that a record or an intent of this OUT names: the files the
        analyzer may remove."""
        sdir = names.source_dir(source)
        folder = names.manifest_folder(sdir)
        found: set[str] = set()
        for name in self.store.list(folder):
            full = f"{folder}/{name}"
            if names.unit_of_record(name) is not None or names.is_group_record(name) or names.is_intent(name):
                rec = self.read_record_or_none(full)
                if rec:
                    found.update(rec.get("files") or []) if names.is_intent(name) else found.update(
                        _named_files(self, rec)
                    )
        if record:
            found.update(_named_files(self, dict(record)))
        prefixes = tuple(f + "/" for f in names.source_folders(sdir))
        return {n for n in found if n.startswith(prefixes)}

    def sweep(self, source: str, files: list[FileEntry]) -> int:
        """After the source record is committed: remove the source's files that the analyzer
        wrote (a record or an intent names them) and that the record does not list (unit parts
        now compacted, staging parts, files of earlier runs), group records of groups it does
        not list, and the intents. Anything else is left alone, with a warning. The started
        record stays: it says how the source was scanned when its record is lost. Returns how
        many files were removed."""
        sdir = names.source_dir(source)
        keep = {e["tables"][t]["path"] for e in files for t in TABLES}
        n = 0
        for name in sorted(self.ours(source) - keep):
            n += self.store.delete(name)
        mfolder = names.manifest_folder(sdir)
        keep_groups = {names.base_of(names.group_record(sdir, *e["units"])) for e in files}
        for name in self.store.list(mfolder):
            if (names.is_group_record(name) and name not in keep_groups) or names.is_intent(name):
                n += self.store.delete(f"{mfolder}/{name}")
        self._warn_foreign(source, keep)
        self.store.remove_folder(names.staging_folder(sdir))
        self.store.remove_folder(names.STAGING)
        return n

    def _warn_foreign(self, source: str, keep: set[str]) -> None:
        sdir = names.source_dir(source)
        foreign = []
        for folder in names.source_folders(sdir)[1:]:
            for name, _kind in self.store.entries(folder):
                full = f"{folder}/{name}"
                if full not in keep and not names.is_temp(name):
                    foreign.append(full)
        if foreign:
            log.warning(
                "%s: %d file(s) in the source's folders that the analyzer did not write, left as they are "
                "(readers of the folders, such as pyarrow or DuckDB, would count them): %s%s",
                source,
                len(foreign),
                ", ".join(foreign[:3]),
                ", ..." if len(foreign) > 3 else "",
            )

    def remove_source(self, source: str) -> None:
        """Forget a source (--force): remove the files the analyzer wrote for it (those its
        records and intents name), then its records, then its folders if they are empty.
        Nothing else is touched (a warning names what is left); links are not followed."""
        sdir = names.source_dir(source)
        try:
            record = self.source_record(source)
        except DamagedRecord:
            record = None
        mfolder = names.manifest_folder(sdir)
        self.store.delete(names.source_record(sdir))  # first: readers stop trusting its files
        for name in sorted(self.ours(source, record)):
            self.store.delete(name)
        for name in self.store.list(mfolder):
            if (
                names.unit_of_record(name) is not None
                or names.is_group_record(name)
                or names.is_intent(name)
                or name in ("source.json", "started.json")
                or names.is_temp(name)
            ):
                self.store.delete(f"{mfolder}/{name}")
        self._warn_foreign(source, set())
        for folder in names.source_folders(sdir):
            self.store.remove_folder(folder)

    # -- reading ----------------------------------------------------------------------------

    def scan(
        self,
        table: str,
        partial: bool = False,
        check: str = "digest",
        states: list[SourceState] | None = None,
    ) -> pl.LazyFrame:
        """A table as a polars LazyFrame of the checked files its records list, with `source`
        (the source's full name, as its record gives it) first."""
        import polars as pl

        frames = []
        for name, descs in self.committed(table, partial, check, states).items():
            if not descs:
                continue
            lf = self.scan_files([d["path"] for d in descs])
            # `source` is the hive partition key (the folders), not a column of the files; files
            # of earlier versions hold it too: theirs is dropped.
            lf = lf.drop("source", strict=False).select(pl.lit(name, pl.String).alias("source"), pl.all())
            frames.append(lf)
        if not frames:
            from analyzer import tables

            empty = pl.from_arrow(tables.SCHEMAS[table].empty_table())
            assert isinstance(empty, pl.DataFrame)  # from a Table, not an Array: a DataFrame
            return empty.lazy().select(pl.lit(None, pl.String).alias("source"), pl.all())
        if len(frames) == 1:
            return frames[0]
        # sources written by earlier versions may lack columns added since (null there)
        from analyzer import tables

        lf = pl.concat(frames, how="diagonal_relaxed")
        names = lf.collect_schema().names()
        order = ["source"] + [c for c in tables.SCHEMAS[table].names if c in names]
        return lf.select(order + [c for c in names if c not in order])

    def scan_files(self, files: list[str]) -> pl.LazyFrame:
        """Some of OUT's table files (names relative to OUT, checked by the caller) as one
        LazyFrame (an object store's through the fsspec filesystem of this Dataset)."""
        import polars as pl

        if self.remote:
            import pyarrow.dataset as ds

            paths = [self.store.path(f).split("://", 1)[1] for f in files]
            return pl.scan_pyarrow_dataset(ds.dataset(paths, format="parquet", filesystem=self.store.fs))  # type: ignore[union-attr]
        return pl.scan_parquet([self.store.path(f) for f in files], hive_partitioning=False)

    def chunks(
        self, max_games: int, partial: bool = False, check: str = "digest", states: list[SourceState] | None = None
    ) -> list[Chunk]:
        """OUT's committed files in pieces of at most about max_games games, checked: small
        files (one per unit) grouped, large ones (compacted) cut by game_index ranges."""
        found: list[Chunk] = []
        states = self.sources() if states is None else states
        by_source = self.committed("games", partial=partial, check=check, states=states)
        for t in TABLES[1:]:
            self.committed(t, partial=partial, check=check, states=states)
        for state in states:
            if state.name not in by_source or (not state.complete and not partial):
                continue
            group: list[FileEntry] = []
            for entry in [*state.files, None]:
                size = (entry["games"][1] - entry["games"][0]) if entry else 0
                held = sum(e["games"][1] - e["games"][0] for e in group)
                if group and (entry is None or held + size > max_games):
                    found.append(self._chunk(state.name, group, (group[0]["games"][0], group[-1]["games"][1]), False))
                    group = []
                if entry is None:
                    break
                if size > max_games:
                    a, b = entry["games"]
                    for lo in range(a, b, max_games):
                        found.append(self._chunk(state.name, [entry], (lo, min(lo + max_games, b)), True))
                    continue
                group.append(entry)
        return found

    def _chunk(self, source: str, entries: list[FileEntry], games: tuple[int, int], filtered: bool) -> Chunk:
        files = {t: [e["tables"][t]["path"] for e in entries] for t in TABLES}
        return Chunk(source, files, games, filtered)

    def game_texts(
        self,
        source: str,
        offsets: list[int],
        budget: int | None = None,
        window: int | None = None,
        games: list[int] | None = None,
    ) -> tuple[dict[int, str], str | None]:
        """The text at each offset of the source's decompressed input (in the input's own
        encoding, as the scan read it), and why some could not be read (engine.dataset.gametext).
        `games`: the game_index of each offset (a Parquet source reads a game by its row)."""
        from analyzer.engine.dataset import gametext

        try:
            record = self.source_record(source) or {}
        except (DamagedRecord, UnsafePath):
            record = {}
        return gametext.read_texts(dict(record), offsets, budget, window, games)


def _named_files(ds: Dataset, rec: dict) -> set[str]:
    """The table files a unit, group or source record names."""
    found: set[str] = set()
    if "unit" in rec and "source" in rec and "tables" not in rec:
        found.update(ds.unit_part_names(rec))  # type: ignore[arg-type]
    for d in (rec.get("tables") or {}).values():
        found.add(d["path"])
    for u in rec.get("units") or []:
        if isinstance(u, dict):
            found.update(ds.unit_part_names(u))  # type: ignore[arg-type]
    for e in rec.get("files") or []:
        found.update(d["path"] for d in e["tables"].values())
    return found


def as_dataset(out: Dataset | str) -> Dataset:
    """A Dataset, or the Dataset of a folder or URL."""
    return out if isinstance(out, Dataset) else Dataset(out)


def open_dataset(root: str, storage_options: dict | None = None) -> Dataset:
    """The Dataset of an output folder or URL (storage_options: fsspec options of its protocol,
    {"key": value}, or per protocol, {"s3": {...}})."""
    return Dataset(root, normalise_options(root, storage_options))


def normalise_options(root: str, storage_options: dict | None) -> dict:
    """{protocol or "*": {key: value}} from either that or the plain {key: value} of OUT's own
    protocol (what the API takes)."""
    if not storage_options:
        return {}
    if all(isinstance(v, dict) for v in storage_options.values()):
        return {k: dict(v) for k, v in storage_options.items()}
    return {
        remote.protocol(remote.localize(root)) if remote.is_url(remote.localize(root)) else "*": dict(storage_options)
    }


__all__ = [
    "CHECKS",
    "TABLES",
    "Chunk",
    "Damage",
    "Dataset",
    "FileDesc",
    "FileEntry",
    "SourceRecord",
    "SourceState",
    "StartedRecord",
    "TableWriter",
    "UnitRecord",
    "as_dataset",
    "names",
    "open_dataset",
    "records",
]
