"""The summary of a scan: what was read, what was written, what went wrong (also saved as
OUT/_manifest/run.json), and its short form for a terminal."""

from __future__ import annotations

import dataclasses
import platform
import sys
from typing import Any

from analyzer.engine.config import version
from analyzer.engine.dataset.records import UnitRecord


@dataclasses.dataclass
class SourceOutcome:
    """What a run did with one source: its plan, and (once finished) its unit records, games,
    rows and files; an unfinished one's reused records and job (its failed units are the run's)."""

    plan: Any  # engine.scan.SourcePlan
    engine: str | None = None
    records: list[UnitRecord] | None = None  # every unit's record, once the source is finished
    games: int | None = None
    rows: int | None = None
    reused: list[UnitRecord] = dataclasses.field(default_factory=list)
    job: Any = None  # engine.executors.Job of a source this run analyzed
    compact_seconds: float | None = None
    files: int | None = None
    input_sha256: str | None = None
    rejected: str | None = None  # why the run did not commit it (ScanOptions.accept)


def _merge(into: dict, counts: dict) -> None:
    for k, v in counts.items():
        into[k] = into.get(k, 0) + v


def make_summary(
    results: list[SourceOutcome],
    failures: list[dict],
    seconds: float,
    cfg,
    options,
    executor,
    progress,
    compile_seconds: float = 0.0,
) -> dict:
    """The run's summary (printed, and saved as run.json). `seconds`: the whole run;
    `compile_seconds`: of it, compiling kernels on a machine's first run (not in games/s)."""
    import pyarrow

    from analyzer import kernels

    status: dict = {}
    rules: dict = {}
    events: dict = {}
    outcomes: dict = {}
    ends: dict = {}
    platforms: dict = {}
    tablebase: dict = {}
    tb_warnings: dict = {}
    edition_objects: dict = {}
    games = 0
    damage = []
    accounting = []
    warnings = []
    per_source = []
    failed_by_source: dict = {}
    for f in failures:
        failed_by_source.setdefault(f["source"], []).append(f)
    for o in results:
        plan = o.plan
        info = plan.info
        job = o.job
        complete = o.records is not None
        # A finished source: every unit's record. Otherwise what this run analyzed and what it
        # reused (its failed units are listed apart, with the games they held where known).
        recs = o.records if o.records is not None else [*o.reused, *(job.records if job else [])]
        src_status: dict = {}
        src_games = 0
        for r in recs:
            src_games += r["games"]
            _merge(src_status, r["counts"]["status"])
            _merge(rules, r["counts"]["rules"])
            _merge(events, r["counts"]["events"])
            _merge(outcomes, r["counts"].get("outcomes", {}))
            _merge(ends, {k: v for k, v in r["counts"].get("ends", {}).items() if not k.endswith(":-")})
            _merge(platforms, r["counts"].get("platforms", {}))
            _merge(tablebase, r["counts"].get("tablebase", {}))
            _merge(tb_warnings, r["counts"].get("tablebase_warnings", {}))
            damage += [f"{info.name} unit {r['unit']}: {d}" for d in r.get("damage", [])]
        _merge(status, src_status)
        games += src_games
        for e in plan.editions:
            edition_objects.setdefault(e.id, e)
        failed = failed_by_source.get(info.name, [])
        known = [f["games"] for f in failed if f.get("games") is not None]
        entry = {
            "source": info.name,
            "path": info.path,
            "compression": info.compression,
            "game_type": info.game_type,
            "size": info.size,
            "action": plan.action,
            "note": plan.note,
            "editions": [e.id for e in plan.editions],
            "engine": o.engine,
            "complete": complete,
            "units": len(recs) if complete else (job.n_units if job else 0),
            "games": src_games,
            "games_reused": sum(r["games"] for r in o.reused),
            "ok": src_status.get("ok", 0),
            "rows": o.rows,
            # finishing: staging renumbered and the units' files compacted into `files` files
            "compact_seconds": o.compact_seconds,
            "files": o.files,
            "input_sha256": o.input_sha256,
            "rejected": o.rejected,
            "units_failed": len(failed),
            "games_in_failed_units": sum(known),
            "failed_units_of_unknown_size": len(failed) - len(known),
        }
        per_source.append(entry)
        if not complete:
            continue  # failed units: listed in units_failed
        if o.rows is not None and o.rows != src_games:
            accounting.append(
                f"{info.name}: the reader found {src_games} games but the games table holds {o.rows} rows"
            )
        if src_games == 0:
            warnings.append(f"{info.name}: no games found in {info.path!r} (not a PGN/PDN file?)")
        elif src_status.get("ok", 0) + src_status.get("no_moves", 0) == 0:
            warnings.append(
                f"{info.name}: none of its {src_games} games could be analyzed "
                f"({', '.join(f'{k} {v}' for k, v in sorted(src_status.items()))})"
            )
    ok = status.get("ok", 0)
    analyzed = progress.games
    return {
        "games": games,
        "ok": ok,
        "errors": games - ok,
        "status": dict(sorted(status.items())),
        "games_analyzed": analyzed,
        "games_reused": sum(s["games_reused"] for s in per_source),
        "games_in_failed_units": sum(s["games_in_failed_units"] for s in per_source),
        "sources_incomplete": [s["source"] for s in per_source if not s["complete"]],
        "seconds": round(seconds, 3),
        "compile_seconds": round(compile_seconds, 3),
        "games_per_second": round(analyzed / work, 1) if (work := seconds - compile_seconds) > 0 and analyzed else None,
        "rules": dict(sorted(rules.items())),
        "events": dict(sorted(events.items())),
        "sources": per_source,
        "sources_skipped_as_complete": [s["source"] for s in per_source if s["action"] == "skip"],
        "units": sum(s["units"] for s in per_source),
        "units_failed": [
            f"{f['source']} unit {f['unit']}"
            + (f" ({f['games']:,} games)" if f.get("games") is not None else "")
            + f": {f['error']}"
            for f in failures
        ],
        "damage": damage,
        "accounting_errors": accounting,
        "warnings": warnings,
        "editions": sorted({e for s in per_source for e in s["editions"]}),
        "outcomes": dict(sorted(outcomes.items())),
        # games whose first automatic draw under an edition is of a rule ("edition:rule")
        "automatic_draws": dict(sorted(ends.items(), key=lambda kv: (kv[0].split(":")[0], -kv[1]))),
        "platforms": dict(sorted(platforms.items(), key=lambda kv: -kv[1])),
        "fifty_automatic": sorted(e for e, ed in edition_objects.items() if getattr(ed, "fifty_is_automatic", False)),
        "in_force": in_force_notes(platforms, edition_objects),
        # --syzygy: positions probed or not, by where ("events": of the 50/75-move events, "final")
        # and status; a missing or damaged table file is one warning here (never a failed scan)
        **(
            {"tablebase": {"positions": dict(sorted(tablebase.items())), "warnings": sorted(tb_warnings)}}
            if cfg.syzygy
            else {}
        ),
        "workers": options.workers,
        "engine": getattr(executor, "kind", None),
        "engine_by_source": {s["source"]: s["engine"] for s in per_source if s["engine"]},
        "versions": {
            "analyzer": version(),
            "python": platform.python_version(),
            "numba": _numba_version(),
            "kernels": kernels.source(),
            "pyarrow": pyarrow.__version__,
        },
        "out": cfg.out,
    }


# The edition in force per population (as the report's audit reads it: analyzer.report.audit).
_OTB_IN_FORCE = (
    "fide_2018 from 2018-01-01, fide_2014 from 2014-07-01, fide_2009 from 2009-07-01, fide_1997 from 1997-07-01"
)
_PLATFORM_NAMES = {"lichess": "Lichess", "chess.com": "Chess.com", "otb": "over-the-board", "other": "other online"}


def in_force_notes(platforms: dict, editions: dict) -> list[str]:
    """Which edition is in force for which population of the games read, and a warning where a
    FIDE edition is the only reading of online games (Lichess plays by its own rules: no
    written-move claims, the 50-move draw automatic)."""
    chess = [e for e, ed in editions.items() if getattr(ed, "kind", "chess") == "chess"]
    fide = [e for e in chess if e != "lichess"]
    notes = []
    for plat, n in platforms.items():
        name = _PLATFORM_NAMES.get(plat, plat)
        if plat == "lichess":
            if "lichess" in chess:
                line = f"{n:,} Lichess games: lichess is the edition in force"
                if fide:
                    line += f" ({', '.join(fide)}: what FIDE's Laws would say of them)"
            elif fide:
                line = (
                    f"warning: {n:,} Lichess games read under {', '.join(fide)} only, FIDE's Laws applied to online "
                    "games: Lichess has no written-move claims and ends a game at 50 moves by itself; the edition "
                    "in force there is lichess (add --edition lichess)"
                )
            else:
                continue
        elif plat == "otb":
            if not fide:
                continue
            line = f"{n:,} over-the-board games: the FIDE Laws of their date are in force ({_OTB_IN_FORCE})"
        elif fide:
            line = (
                f"{n:,} {name} games: no edition models their server's rules; read under {', '.join(fide)} "
                "(FIDE's Laws applied to online games)"
            )
        else:
            continue
        notes.append(line)
    return notes


_RULES_SHOWN = (
    "first_threefold_claim_ply",
    "first_fifty_claim_ply",
    "first_fivefold_ply",
    "first_seventyfive_ply",
    "first_missed_claim_ply",
)


def human(summary: dict) -> str:
    """The summary as a short table for a terminal."""
    lines = []
    w = max([len(s["source"]) for s in summary["sources"]] + [6])
    lines.append(f"{'source':<{w}}  {'games':>10}  {'ok':>10}  {'not ok':>8}  how")
    for s in summary["sources"]:
        act = "skipped: complete" if s["action"] == "skip" else (s["engine"] or "")
        if s["note"] and s["action"] != "skip":
            act += f" ({s['note']})"
        if not s.get("complete", True):
            lost = f"{s['units_failed']} unit(s) failed"
            if s["units_failed"]:
                lost += f", holding {s['games_in_failed_units']:,} games" + (
                    f" and {s['failed_units_of_unknown_size']} unit(s) of unknown size"
                    if s["failed_units_of_unknown_size"]
                    else ""
                )
            act += f"; INCOMPLETE: {lost}; rerun to finish"
        lines.append(f"{s['source']:<{w}}  {s['games']:>10,}  {s['ok']:>10,}  {s['games'] - s['ok']:>8,}  {act}")
    if len(summary["sources"]) > 1:
        lines.append(f"{'total':<{w}}  {summary['games']:>10,}  {summary['ok']:>10,}  {summary['errors']:>8,}")
    errs = {k: v for k, v in summary["status"].items() if k != "ok"}
    if errs:
        lines.append("not ok: " + ", ".join(f"{k} {v:,}" for k, v in errs.items()))
    editions = []
    for s in summary["sources"]:
        editions += [e for e in s["editions"] if e not in editions]
    if editions:
        per_ed: dict = {}
        for key, n in summary["rules"].items():
            ed, col = key.split(":", 1)
            per_ed.setdefault(ed, {})[col] = n
        short = {c: c.replace("first_", "").replace("_ply", "") for c in _RULES_SHOWN}
        ew = max(len(e) for e in editions + ["edition"])
        auto: dict = {}
        for key, n in summary.get("automatic_draws", {}).items():
            ed, rule = key.split(":", 1)
            auto.setdefault(ed, {})[rule] = n
        fifty_auto = set(summary.get("fifty_automatic", []))
        lines.append("games with each rule, per edition (automatic_draw: the games an automatic draw ends):")
        lines.append(
            f"  {'edition':<{ew}}  " + "  ".join(f"{short[c]:>16}" for c in _RULES_SHOWN) + f"  {'automatic_draw':>16}"
        )
        for ed in editions:
            d = per_ed.get(ed, {})
            cells = [
                f"{'-' if c == 'first_fifty_claim_ply' and ed in fifty_auto else format(d.get(c, 0), ','):>16}"
                for c in _RULES_SHOWN
            ]
            lines.append(f"  {ed:<{ew}}  " + "  ".join(cells) + f"  {sum(auto.get(ed, {}).values()):>16,}")
        for ed in editions:
            if auto.get(ed):
                by = ", ".join(
                    f"{r}{' (a win: counterfactual)' if r == 'stalemate' else ''} {n:,}" for r, n in auto[ed].items()
                )
                lines.append(f"  automatic draws under {ed}: {by}")
        if fifty_auto & set(editions):
            lines.append(f"  (-: the 50-move draw is automatic under {', '.join(sorted(fifty_auto & set(editions)))})")
    for note in summary.get("in_force", []):
        lines.append(note)
    tb = summary.get("tablebase")
    if tb is not None:
        tb_by: dict = {}
        for key, n in tb["positions"].items():
            where, status = key.split(":", 1)
            tb_by.setdefault(where, {})[status] = n
        parts = []
        for where, label in (("events", "positions of 50/75-move events"), ("final", "final positions")):
            d = tb_by.get(where, {})
            parts.append(
                f"{label}: {d.get('probed', 0):,} probed, {d.get('no_table', 0):,} without a table"
                + "".join(
                    f", {d[k]:,} {k.replace('_', ' ')}"
                    for k in ("damaged", "castling_rights", "too_many_pieces", "not_replayed")
                    if d.get(k)
                )
            )
        lines.append("tablebase: " + "; ".join(parts))
        for w in tb["warnings"]:
            lines.append(f"tablebase warning: {w}")
    rate = summary["games_per_second"]
    reused = f", {summary['games_reused']:,} reused from an earlier run" if summary["games_reused"] else ""
    compiling = summary.get("compile_seconds") or 0
    lines.append(
        f"{summary['games_analyzed']:,} games analyzed in {summary['seconds']:.1f} s"
        + (f", {compiling:.0f} s of it compiling kernels (first run only)" if compiling >= 0.5 else "")
        + (f" ({rate:,.0f} games/s{', compile left out' if compiling >= 0.5 else ''})" if rate else "")
        + reused
        + f"; tables in {summary['out']}"
    )
    problems = sum(len(summary[k]) for k in ("units_failed", "damage", "accounting_errors", "warnings"))
    if problems:
        lines.append(f"{problems} problem(s), listed on stderr and in {summary['out']}/_manifest/run.json")
    return "\n".join(lines)


def _numba_version() -> str:
    """numba's version, without importing it (a scan with the built kernels does not)."""
    module = sys.modules.get("numba")
    if module is not None:
        return module.__version__
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba")
    except PackageNotFoundError:
        return "unknown"
