"""`analyzer verify OUT [--deep]`: the dataset's fsck. Every finished source's files against
their descriptions in its record (their SHA-256; --deep also decodes every page and re-hashes
the inputs it can reach against the SHA-256 recorded when the scan read them), the totals
against the record, files no record lists, and sources a run did not finish; for each problem,
what it covers (units, games) and the command that repairs it: a rerun of the scan for this
OUT, with input paths that work from the current folder (it recomputes only the damaged units,
or the whole source when its input changed)."""

from __future__ import annotations

import dataclasses
import os
import shlex

from analyzer.engine.dataset import TABLES, Dataset, SourceRecord, SourceState, StartedRecord, as_dataset, names
from analyzer.errors import DamagedRecord


@dataclasses.dataclass
class SourceReport:
    name: str
    state: str  # "whole" | "damaged" | "stale" | "unfinished"
    games: int
    files: int
    problems: list[str]
    repair: str | None  # the command that repairs it
    input: str | None = None  # the input's path, as the repair names it (None: not found)


@dataclasses.dataclass
class Report:
    out: str
    deep: bool
    sources: list[SourceReport]

    @property
    def whole(self) -> bool:
        return bool(self.sources) and all(s.state == "whole" for s in self.sources)

    def as_dict(self) -> dict:
        return {
            "out": self.out,
            "deep": self.deep,
            "whole": self.whole,
            "sources": [dataclasses.asdict(s) for s in self.sources],
        }

    def text(self) -> str:
        lines = []
        for s in self.sources:
            head = f"{s.name}: {s.state}, {s.games:,} games in {s.files} file(s)"
            lines.append(head)
            lines += [f"  {p}" for p in s.problems]
            if s.repair:
                lines.append(f"  repair: {s.repair}")
        n_bad = sum(s.state != "whole" for s in self.sources)
        check = (
            "SHA-256, every page, and the inputs' SHA-256"
            if self.deep
            else "SHA-256; --deep also reads every page and re-hashes the inputs"
        )
        lines.append(
            f"{self.out}: {'whole' if self.whole else f'{n_bad} of {len(self.sources)} source(s) not whole'} "
            f"({len(self.sources)} source(s) checked by {check})"
        )
        return "\n".join(lines)


def input_from_here(record: dict) -> tuple[str | None, str | None]:
    """(the input's path as it can be given from the current folder, or None; why not). The
    record holds the absolute path the scan read (and the folder it ran in)."""
    info = record.get("input") or {}
    path = info.get("path")
    if not path:
        return None, "the record does not say which input the source came from"
    if path == "-":
        return None, "its input was standard input: pipe the same text into the command"
    if "://" in path:
        return path, None
    if not os.path.isabs(path):
        path = os.path.join(record.get("cwd") or os.getcwd(), path)
    if not os.path.exists(path):
        return None, f"its input {path} is not there any more: give its path in place of INPUT"
    rel = os.path.relpath(path)
    return (rel if not rel.startswith(os.pardir + os.sep) and rel != os.pardir else path), None


def repair_command(out: str, name: str, record: dict, deep: bool) -> tuple[str, str | None, str | None]:
    """The scan command that recomputes what is damaged or missing in OUT (as the user named
    it): this OUT, the source's input from here, its name, and the options it was scanned with
    (`rerun_args`, recorded by the command line; else its editions). (command, input, why the
    input is not given)."""
    sync = record.get("sync")
    if sync and sync.get("listing"):
        # a month of `analyzer sync`: the same sync scans again the months it finds not whole
        # (--deep-verify: by their files' SHA-256), each read from its listing and checked again
        cmd = ["analyzer", "sync", sync["listing"], "--out", out, *(record.get("rerun_args") or []), "--deep-verify"]
        return shlex.join(cmd), sync["listing"], None
    path, why = input_from_here(record)
    cmd = ["analyzer", "scan", path or ("-" if "standard input" in (why or "") else "INPUT"), "--out", out]
    cmd += ["--source-name", name]
    rerun = record.get("rerun_args")
    if rerun is not None:
        cmd += list(rerun)
    elif record.get("editions"):
        cmd += ["--edition", ",".join(record["editions"])]
    if deep and "--deep-verify" not in cmd:
        cmd.append("--deep-verify")
    return shlex.join(cmd), path, why


def _records(ds: Dataset, state: SourceState) -> list[str]:
    """Unit and group records that no longer match the copies in the source record (a rerun
    restores them from it)."""
    bad = [name for name, _ in ds.stale_records(state.name, state.record or {})]
    try:
        ds.started_record(state.name)
    except DamagedRecord:
        bad.append(names.started_record(state.dir))
    if not bad:
        return []
    shown = ", ".join(bad[:3]) + (", ..." if len(bad) > 3 else "")
    return [f"{len(bad)} record(s) missing or damaged ({shown}); a rerun restores them from source.json"]


def _totals(state: SourceState) -> list[str]:
    """The record's own totals against its file entries."""
    rec: SourceRecord = state.record or {}
    games_rows = sum(e["tables"]["games"].get("rows", 0) for e in state.files)
    out = []
    if rec.get("games") is not None and games_rows != rec["games"]:
        out.append(f"the games files hold {games_rows:,} rows, the record {rec['games']:,} games")
    units = rec.get("units") or []
    covered = sorted(u for e in state.files for u in range(*e["units"]))
    if covered != list(range(len(units))):
        out.append(f"the files cover units {covered[:3]}..., the record has {len(units)}")
    return out


def _input_changed(ds: Dataset, record: SourceRecord) -> str | None:
    """--deep: the input re-hashed against the SHA-256 the scan recorded (where it can be
    reached); a problem if it differs."""
    from analyzer.io import sources

    want = record.get("input_sha256")
    path = (record.get("input") or {}).get("path")
    if not want or not path or path == "-":
        return None
    if record.get("sync") and "://" in path:
        # a month `analyzer sync` read by HTTP: its SHA-256 was the listing's when it was read, and
        # the sync notices a month republished with another (no download of a month here)
        return None
    try:
        info = sources.inspect(path, record.get("source"), ds.storage_options)
        got = sources.input_sha256(info, ds.storage_options)
    except Exception:  # noqa: BLE001 - not reachable from here: nothing to compare
        return None
    if got is not None and got != want:
        return (
            f"its input {path} changed since the scan (its SHA-256 is not the one recorded when it was read): "
            f"the tables are stale; the repair rescans it"
        )
    return None


def verify(out_dir: Dataset | str, deep: bool = False, out_as_given: str | None = None) -> Report:
    """Check OUT (a Dataset, or its folder or URL: see the module doc); repair lines name OUT
    as `out_as_given` (default: its root)."""
    ds = as_dataset(out_dir)
    out = out_as_given or ds.root
    reports = []
    for state in ds.sources():
        if not state.complete:
            try:
                started: StartedRecord = ds.started_record(state.name) or {}
            except DamagedRecord:
                started = {}
            u_cmd, u_path, why = repair_command(out, state.name, dict(started), False)
            problems = [f"a run did not finish it: {state.note}; readers leave it out (the report: --partial)"]
            if why:
                problems.append(why)
            reports.append(
                SourceReport(state.name, "unfinished", state.games, len(state.files), problems, u_cmd, u_path)
            )
            continue
        record = state.record or {}
        damage = ds.check_source(state, "deep" if deep else "digest")
        problems = [f"units {d.units[0]}-{d.units[1] - 1}: {d.path}: {d.problem}" for d in damage]
        problems += _totals(state)
        problems += _records(ds, state)
        stale = _input_changed(ds, record) if deep else None
        if stale:
            problems.append(stale)
        rescan = bool(problems)
        unlisted = ds.unlisted_files(state)
        if unlisted:
            ours = ds.ours(state.name, record)
            mine = [f for f in unlisted if f in ours]
            foreign = [f for f in unlisted if f not in ours]
            if mine:
                rescan = True
                shown = ", ".join(mine[:3]) + (", ..." if len(mine) > 3 else "")
                problems.append(
                    f"{len(mine)} file(s) of an interrupted run that no record lists ({shown}); readers of the "
                    f"folders (pyarrow, DuckDB) would count them; a rerun removes them"
                )
            if foreign:
                shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
                problems.append(
                    f"{len(foreign)} file(s) the analyzer did not write, in its table folders ({shown}); readers "
                    f"of the folders (pyarrow, DuckDB) would count them; the analyzer leaves them alone: move them "
                    f"out of {out}"
                )
        cmd: str | None = None
        path: str | None = None
        if rescan:
            cmd, path, why = repair_command(out, state.name, dict(record), deep and bool(damage or stale))
            if why:
                problems.append(why)
        reports.append(
            SourceReport(
                state.name,
                ("stale" if stale and not damage else "damaged") if problems else "whole",
                state.games,
                len(state.files) * len(TABLES),
                problems,
                cmd,
                path,
            )
        )
    return Report(out, deep, reports)
