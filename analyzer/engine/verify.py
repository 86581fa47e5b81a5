"""`analyzer verify OUT [--deep]`: the dataset's fsck. Every finished source's files against
their descriptions in its record (engine.manifest), the totals against the record, files
no record lists, and sources a run did not finish; for each problem, what it covers (units,
games) and the command that repairs it (a rerun of the scan, which recomputes only the
damaged units)."""

from __future__ import annotations

import dataclasses
import os
import shlex

from analyzer.engine import layout, manifest
from analyzer.engine.store import is_remote, open_store


@dataclasses.dataclass
class SourceReport:
    name: str
    state: str  # "whole" | "damaged" | "unfinished"
    games: int
    files: int
    problems: list[str]
    repair: str | None  # the command that repairs it


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
            "SHA-256 and every page"
            if self.deep
            else "size and footer row count; --deep re-hashes and reads every page"
        )
        lines.append(
            f"{self.out}: {'whole' if self.whole else f'{n_bad} of {len(self.sources)} source(s) not whole'} "
            f"({len(self.sources)} source(s) checked by {check})"
        )
        return "\n".join(lines)


def _repair_command(out: str, name: str, record: dict | None, deep: bool, started: dict | None = None) -> str:
    """The scan command that recomputes what is damaged or missing: the one recorded with the
    source (its record, else the record of the run that started it), else one built from what
    is known of its input and editions."""
    record = record or started or {}
    cmd = record.get("command") or (started or {}).get("command")
    if cmd:
        text = shlex.join(cmd)
    else:
        path = (record.get("input") or {}).get("path", "INPUT")
        text = shlex.join(["analyzer", "scan", path, "--out", out, "--source-name", name])
        if record.get("editions"):
            text += " --edition " + shlex.quote(",".join(record["editions"]))
    if deep and "--deep-verify" not in text:
        text += " --deep-verify"
    return text


def _started(out: str, d: str) -> dict | None:
    try:
        return manifest.decode_record(open_store(out).get(os.path.join(out, "_manifest", d, "started.json")))
    except (FileNotFoundError, ValueError):
        return None


def _records(out: str, state: manifest.SourceState) -> list[str]:
    """Unit and group records that no longer match the copies in the source record (a rerun
    restores them from it)."""
    from analyzer.engine.parts import read_json

    bad = [layout.rel(out, path) for path, _ in manifest.stale_records(out, state.name, state.record or {})]
    started = layout.started_record_path(out, state.name)
    try:
        read_json(started)
    except FileNotFoundError:
        pass  # (sources scanned before it was kept have none)
    except (OSError, ValueError):
        bad.append(layout.rel(out, started))
    if not bad:
        return []
    shown = ", ".join(bad[:3]) + (", ..." if len(bad) > 3 else "")
    return [f"{len(bad)} record(s) missing or damaged ({shown}); a rerun restores them from source.json"]


def _totals(state: manifest.SourceState) -> list[str]:
    """The record's own totals against its file entries."""
    rec = state.record or {}
    games_rows = sum(e["tables"]["games"].get("rows", 0) for e in state.files)
    out = []
    if rec.get("games") is not None and games_rows != rec["games"]:
        out.append(f"the games files hold {games_rows:,} rows, the record {rec['games']:,} games")
    units = rec.get("units") or []
    covered = sorted(u for e in state.files for u in range(*e["units"]))
    if covered != list(range(len(units))):
        out.append(f"the files cover units {covered[:3]}..., the record has {len(units)}")
    return out


def verify(out: str, deep: bool = False) -> Report:
    """Check OUT (see the module doc)."""
    reports = []
    for state in manifest.sources(out):
        if not state.complete:
            started = _started(out, state.dir)
            reports.append(
                SourceReport(
                    state.name,
                    "unfinished",
                    state.games,
                    len(state.files),
                    [f"a run did not finish it: {state.note}; readers leave it out (the report: --partial)"],
                    _repair_command(out, state.name, started, False),
                )
            )
            continue
        damage = manifest.check_source(out, state, deep=deep)
        problems = [f"units {d.units[0]}-{d.units[1] - 1}: {d.path}: {d.problem}" for d in damage]
        problems += _totals(state)
        problems += _records(out, state)
        unlisted = manifest.unlisted_files(out, state)
        if unlisted:
            shown = ", ".join(unlisted[:3]) + (", ..." if len(unlisted) > 3 else "")
            problems.append(
                f"{len(unlisted)} file(s) no record lists ({shown}): left by an interrupted run; readers of "
                f"the folders (pyarrow, DuckDB) would count them; a rerun removes them"
            )
        reports.append(
            SourceReport(
                state.name,
                "damaged" if problems else "whole",
                state.games,
                len(state.files) * len(layout.TABLES),
                problems,
                _repair_command(out, state.name, state.record, deep and bool(damage), _started(out, state.dir))
                if problems
                else None,
            )
        )
    return Report(out, deep, reports)


def is_dataset(out: str) -> bool:
    """OUT was written by `analyzer scan` (it has a manifest folder)."""
    if is_remote(out):
        return bool(manifest.manifest_dirs(out))
    return os.path.isdir(os.path.join(out, "_manifest"))
