"""Global numbering and final parts: a unit's games get their `game_index` and `byte_offset`
in the whole source once every unit before it is known. One routine (Numbering) serves the
in-process engines (final parts written as units finish, in order), the forked engine
(children write their own final parts when told their bases) and finalize_source, whose
compaction renumbers the staging parts of the process and Dask engines (and of an interrupted
run) as it reads them."""

from __future__ import annotations

import os

from analyzer.engine import compact, layout
from analyzer.engine.parts import read_json, write_json, write_table
from analyzer.engine.store import is_remote, open_store


def unit_start(rec: dict, text_base: int) -> int:
    """Text offset of the unit's first byte (frame units learn it from the units before)."""
    return rec["text_start"] if rec["text_start"] is not None else text_base


def unit_text_end(rec: dict, start: int) -> int:
    return start + (rec["frame_text_bytes"] if rec["frame_text_bytes"] is not None else rec["text_bytes"])


class Numbering:
    """Records come in any order; `ready()` yields (record, game_base, text_start) for each unit
    whose predecessors are all known, in unit order."""

    def __init__(self, first_unit: int = 0) -> None:
        self.next_unit = first_unit
        self.game_base = 0
        self.text_base = 0
        self.records: dict[int, dict] = {}

    def add(self, rec: dict) -> None:
        self.records[rec["unit"]] = rec

    def ready(self):
        while self.next_unit in self.records:
            rec = self.records[self.next_unit]
            start = unit_start(rec, self.text_base)
            yield rec, self.game_base, start
            self.game_base += rec["games"]
            self.text_base = unit_text_end(rec, start)
            self.next_unit += 1


def write_final(out: str, source: str, rec: dict, parts: tuple, game_base: int, start: int) -> None:
    """Final parts (one per layout.TABLES) with global numbering, then the record saying so (in
    that order: a record marked finalized always has its parts)."""
    written = tuple(
        write_table(compact.renumber(table, game_base, start), path)
        for table, path in zip(parts, layout.final_paths(out, source, rec["unit"]))
    )
    rec["finalized"] = [game_base, start]
    layout.name_parts(out, rec, written)
    write_json(rec, layout.unit_record_path(out, source, rec["unit"]))


def stage_unit(out: str, source: str, rec: dict, parts: tuple) -> None:
    """A unit's parts in staging (local numbering), then its record: a rerun reuses them."""
    written = tuple(
        write_table(table, path) for table, path in zip(parts, layout.staging_paths(out, source, rec["unit"]))
    )
    rec.pop("finalized", None)
    layout.name_parts(out, rec, written)
    write_json(rec, layout.unit_record_path(out, source, rec["unit"]))


class OrderedFinalizer:
    """Writes held units (run_unit(hold=True)) as final parts as soon as every unit before
    them is known, in unit order; units finished by an earlier run only advance the numbering
    (finalize_source turns any of them still in staging into final parts)."""

    def __init__(self, out: str, source: str):
        self.out = out
        self.source = source
        self.numbering = Numbering()
        self.failures: list[dict] = []  # units whose parts could not be written (drained by the caller)
        self.broken = False  # after a failure, later units are only spilled

    def fail(self) -> None:
        """A unit failed: the numbering after it is unknown for this run, so units from now on
        go to staging at once (memory stays bounded) and a rerun finishes the source."""
        self.broken = True
        self.spill()

    def add(self, rec: dict) -> None:
        self.numbering.add(rec)
        if self.broken:
            self.spill()
            return
        for r, game_base, start in self.numbering.ready():
            held = r.pop("_held", None)
            if held is None:
                continue
            try:
                write_final(self.out, self.source, r, held, game_base, start)
            except Exception as exc:  # noqa: BLE001 - e.g. disk full: a failed unit, the run goes on
                self.failures.append(
                    {
                        "source": self.source,
                        "unit": r["unit"],
                        "error": f"{type(exc).__name__}: {exc}",
                        "games": r["games"],
                    }
                )
                self.fail()
                return

    def spill(self) -> None:
        """Units still waiting (a unit before them failed): write them to staging, as
        run_unit(hold=False) would have, so a rerun does not recompute them."""
        for r in self.numbering.records.values():
            held = r.pop("_held", None)
            if held is None:
                continue
            try:
                stage_unit(self.out, self.source, r, held)
            except Exception:  # noqa: BLE001 - only saves work for a rerun; it recomputes the unit
                pass


def unit_bases(out: str, source: str, n_units: int) -> list[tuple[dict, int, int]]:
    """(record, game_base, text_start) of every unit of a source, from its records."""
    numbering = Numbering()
    for k in range(n_units):
        numbering.add(read_json(layout.unit_record_path(out, source, k)))
    return list(numbering.ready())


def finalize_source(
    out: str,
    source: str,
    n_units: int,
    run_all=None,
    kept: list[dict] | None = None,
    compact_games: int = 1_000_000,
) -> dict:
    """Make a source's tables whole: every unit's parts (final, or in staging with unit-local
    numbering, which is shifted on the way) compacted (engine.compact) into the file entries a
    source record lists. `kept`: file entries of the source's previous record that are intact
    (a repair): their units are not compacted again. `run_all(fn, items)` may run the groups
    elsewhere (threads, a Dask cluster); by default here, in order. Nothing is removed here:
    the caller commits the source record, then removes what it does not list (sweep)."""
    kept = kept or []
    items = unit_bases(out, source, n_units)
    games = items[-1][1] + items[-1][0]["games"] if items else 0
    recs = [r for r, _, _ in items]
    bases = [base for _, base, _ in items] + [games]
    starts = [start for _, _, start in items]
    files = _files(out, source, recs, bases, starts, kept, run_all, compact_games)
    rows = sum(e["tables"]["games"]["rows"] for e in files)
    return {"games": games, "units": n_units, "rows": rows, "records": recs, "files": files}


def _files(
    out: str,
    source: str,
    recs: list[dict],
    bases: list[int],
    starts: list[int],
    kept: list[dict],
    run_all,
    compact_games: int,
) -> list[dict]:
    """The source's file entries: the kept ones as they are, every run of units between them
    compacted in groups (engine.compact.plan_groups)."""
    by_first = {e["units"][0]: e for e in kept}
    for e in kept:
        (a, b), (g0, g1) = e["units"], e["games"]
        if b > len(recs) or (bases[a], bases[b]) != (g0, g1):
            raise RuntimeError(
                f"{source}: units {a}-{b - 1} now number games {bases[a]}-{bases[min(b, len(recs))]}, "
                f"their intact file {e['tables']['games']['path']} {g0}-{g1}; rerun with --force"
            )
    jobs: list[tuple] = []  # (position in the entry list, args of compact_group)
    entries: list = []
    k = 0
    n = len(recs)
    while k < n:
        if k in by_first:
            entries.append(by_first[k])
            k = by_first[k]["units"][1]
            continue
        end = k
        while end < n and end not in by_first:
            end += 1
        for a, b in compact.plan_groups([r["games"] for r in recs[k:end]], k, compact_games):
            jobs.append((len(entries), (out, source, recs[a:b], bases[a : b + 1], starts[a:b])))
            entries.append(None)
        k = end
    if run_all is not None and len(jobs) > 1:
        from analyzer.io import remote

        done = run_all(_compact_group_with, [(remote.current_options(), *args) for _, args in jobs])
    else:
        done = [compact.compact_group(*args) for _, args in jobs]
    for (pos, _), entry in zip(jobs, done):
        entries[pos] = entry
    return entries


def _compact_group_with(options: dict, *args) -> dict:
    """compact_group in a worker (a thread, or a Dask worker: with the driver's storage options)."""
    from analyzer.io import remote

    remote.configure(options)
    return compact.compact_group(*args)


def _sweep_group_records(out: str, source: str, files: list[dict]) -> int:
    """Group records (engine.compact) of groups the source record does not list."""
    st = open_store(out)
    keep = {os.path.basename(layout.group_record_path(out, source, *e["units"])) for e in files}
    folder = os.path.dirname(layout.group_record_path(out, source, 0, 0))
    n = 0
    for name in st.list(folder):
        if name.startswith("group-") and name.endswith(".json") and name not in keep:
            st.delete(f"{folder}/{name}" if is_remote(out) else os.path.join(folder, name))
            n += 1
    return n


def sweep(out: str, source: str, files: list[dict]) -> int:
    """After the source record is committed: remove the source's parts it does not list (unit
    parts now compacted, staging parts, parts of earlier runs) and group records of groups it
    does not list. Only the tool's own names, in the tool's own folders. The started-record
    stays: it says how the source was scanned when its record is lost. Returns how many files
    were removed."""
    keep = {os.path.normpath(os.path.join(out, e["tables"][t]["path"])) for e in files for t in layout.TABLES}
    n = _sweep_group_records(out, source, files)
    if is_remote(out):
        n += layout.sweep_source(out, source, {f"{out}/{e['tables'][t]['path']}" for e in files for t in layout.TABLES})
        return n
    for path in layout.final_paths(out, source, 0):
        folder = os.path.dirname(path)
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        with os.scandir(folder) as it:
            for e in it:
                if layout.is_part_name(e.name) and os.path.normpath(e.path) not in keep:
                    os.remove(e.path)
                    n += 1
    staging = os.path.dirname(layout.staging_paths(out, source, 0)[0])
    if os.path.isdir(staging) and not os.path.islink(staging):
        with os.scandir(staging) as it:
            for e in it:
                if e.name.startswith("unit-") and e.name.endswith(".parquet") and e.is_file(follow_symlinks=False):
                    os.remove(e.path)
                    n += 1
        for d in (staging, os.path.dirname(staging)):
            try:
                os.rmdir(d)  # only when empty
            except OSError:
                pass
    return n
