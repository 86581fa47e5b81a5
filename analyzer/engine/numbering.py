"""Global numbering and final parts: a unit's games get their `game_index` and `byte_offset`
in the whole source once every unit before it is known. One routine (Numbering) serves the
in-process engines (final parts written as units finish, in order), the forked engine
(children write their own final parts when told their bases) and finalize_source, whose
compaction renumbers the staging parts of the process and Dask engines (and of an interrupted
run) as it reads them."""

from __future__ import annotations

from analyzer.engine import compact
from analyzer.engine.dataset import Dataset, FileEntry, UnitRecord
from analyzer.errors import DatasetError


def unit_start(rec: UnitRecord, text_base: int) -> int:
    """Text offset of the unit's first byte (frame units learn it from the units before)."""
    return rec["text_start"] if rec["text_start"] is not None else text_base


def unit_text_end(rec: UnitRecord, start: int) -> int:
    return start + (rec["frame_text_bytes"] if rec["frame_text_bytes"] is not None else rec["text_bytes"])


class Numbering:
    """Records come in any order; `ready()` yields (record, game_base, text_start) for each unit
    whose predecessors are all known, in unit order."""

    def __init__(self, first_unit: int = 0) -> None:
        self.next_unit = first_unit
        self.game_base = 0
        self.text_base = 0
        self.records: dict[int, UnitRecord] = {}

    def add(self, rec: UnitRecord) -> None:
        self.records[rec["unit"]] = rec

    def ready(self):
        while self.next_unit in self.records:
            rec = self.records[self.next_unit]
            start = unit_start(rec, self.text_base)
            yield rec, self.game_base, start
            self.game_base += rec["games"]
            self.text_base = unit_text_end(rec, start)
            self.next_unit += 1


def write_final(ds: Dataset, rec: UnitRecord, parts: tuple, game_base: int, start: int) -> None:
    """Final parts (one per TABLES) with global numbering, then the record saying so (in that
    order: a record marked finalized always has its parts)."""
    rec["finalized"] = [game_base, start]
    try:
        ds.write_unit_tables(rec, (compact.renumber(t, game_base, start) for t in parts), staging=False)
    except BaseException:
        rec.pop("finalized", None)
        raise


def stage_unit(ds: Dataset, rec: UnitRecord, parts: tuple) -> None:
    """A unit's parts in staging (local numbering), then its record: a rerun reuses them."""
    rec.pop("finalized", None)
    ds.write_unit_tables(rec, parts, staging=True)


class OrderedFinalizer:
    """Writes held units (run_unit(hold=True)) as soon as every unit before them is known, in
    unit order: straight into the compacted files of their group (compact.GroupStream, given
    compact_games), or each as its own final parts; units finished by an earlier run only
    advance the numbering (finalize_source compacts them)."""

    def __init__(self, ds: Dataset, source: str, compact_games: int | None = None):
        self.ds = ds
        self.source = source
        self.numbering = Numbering()
        self.failures: list[dict] = []  # units whose parts could not be written (drained by the caller)
        self.broken = False  # after a failure, later units are only spilled
        self.stream = compact.GroupStream(ds, source, compact_games) if compact_games else None

    @property
    def streamed(self) -> list[FileEntry]:
        """The file entries of the groups written straight from held units."""
        return list(self.stream.entries) if self.stream is not None else []

    def fail(self) -> None:
        """A unit failed: the numbering after it is unknown for this run, so the group being
        written is closed (its units come before the failed one), units from now on go to
        staging at once (memory stays bounded) and a rerun finishes the source."""
        self.broken = True
        self.close()
        self.spill()

    def close(self) -> None:
        """Commit the group being written (the source's units are all in, or a failure)."""
        if self.stream is None or not self.stream.open:
            return
        try:
            self.stream.close()
        except Exception as exc:  # noqa: BLE001 - e.g. disk full: failed units, the run goes on
            self._failed(self.stream.abort(), exc)

    def _failed(self, recs: list[UnitRecord], exc: BaseException) -> None:
        for r in recs:
            self.failures.append(
                {"source": self.source, "unit": r["unit"], "error": f"{type(exc).__name__}: {exc}", "games": r["games"]}
            )
        self.broken = True

    def add(self, rec: UnitRecord) -> None:
        self.numbering.add(rec)
        if self.broken:
            self.spill()
            return
        for r, game_base, start in self.numbering.ready():
            held = r.pop("_held", None)
            if held is None:
                self.close()  # a unit of an earlier run: groups stay runs of consecutive units
                continue
            try:
                if self.stream is not None:
                    self.stream.add(r, held, game_base, start)
                else:
                    write_final(self.ds, r, held, game_base, start)
            except Exception as exc:  # noqa: BLE001 - e.g. disk full: a failed unit, the run goes on
                lost = self.stream.abort() if self.stream is not None else []
                self._failed([*lost, r] if r not in lost else lost, exc)
                self.spill()
                return

    def spill(self) -> None:
        """Units still waiting (a unit before them failed): write them to staging, as
        run_unit(hold=False) would have, so a rerun does not recompute them."""
        for r in self.numbering.records.values():
            held = r.pop("_held", None)
            if held is None:
                continue
            try:
                stage_unit(self.ds, r, held)
            except Exception:  # noqa: BLE001 - only saves work for a rerun; it recomputes the unit
                pass


def unit_bases(ds: Dataset, source: str, n_units: int) -> list[tuple[UnitRecord, int, int]]:
    """(record, game_base, text_start) of every unit of a source, from its records."""
    numbering = Numbering()
    for k in range(n_units):
        rec = ds.unit_record(source, k)
        if rec is None:
            raise DatasetError(f"{source}: the record of unit {k} is missing or damaged; rerun the scan")
        numbering.add(rec)
    return list(numbering.ready())


def finalize_source(
    ds: Dataset,
    source: str,
    n_units: int,
    run_all=None,
    kept: list[FileEntry] | None = None,
    compact_games: int = 1_000_000,
) -> dict:
    """Make a source's tables whole: every unit's parts (final, or in staging with unit-local
    numbering, which is shifted on the way) compacted (engine.compact) into the file entries a
    source record lists. `kept`: file entries of the source's previous record that are intact
    (a repair): their units are not compacted again. `run_all(fn, items)` may run the groups
    elsewhere (threads, a Dask cluster); by default here, in order. Nothing is removed here:
    the caller commits the source record, then removes what it does not list (Dataset.sweep)."""
    kept = kept or []
    items = unit_bases(ds, source, n_units)
    games = items[-1][1] + items[-1][0]["games"] if items else 0
    recs = [r for r, _, _ in items]
    bases = [base for _, base, _ in items] + [games]
    starts = [start for _, _, start in items]
    files = _files(ds, source, recs, bases, starts, kept, run_all, compact_games)
    rows = sum(e["tables"]["games"]["rows"] for e in files)
    return {"games": games, "units": n_units, "rows": rows, "records": recs, "files": files}


def _files(
    ds: Dataset,
    source: str,
    recs: list[UnitRecord],
    bases: list[int],
    starts: list[int],
    kept: list[FileEntry],
    run_all,
    compact_games: int,
) -> list[FileEntry]:
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
            jobs.append((len(entries), (ds, source, recs[a:b], bases[a : b + 1], starts[a:b])))
            entries.append(None)
        k = end
    if run_all is not None and len(jobs) > 1:
        done = run_all(compact.compact_group, [args for _, args in jobs])
    else:
        done = [compact.compact_group(*args) for _, args in jobs]
    for (pos, _), entry in zip(jobs, done):
        entries[pos] = entry
    return entries
