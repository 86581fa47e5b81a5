"""`analyzer scan` as a batch job: inputs -> per-source decisions -> units -> executor ->
final parts -> records -> summary. Data flows down: this module calls the layers below
(plan, executors, numbering, parts, layout) and none of them calls back.

Results are additive and never silently replaced: a finished source is skipped when its
input and settings are unchanged and it already holds the requested editions; asked for more
editions, the source is recomputed with the editions it had plus the new ones; a changed input
(size, mtime or the hash of its first and last MiB) is recomputed; a source name that belongs
to another input in OUT, or an edition id with other parameters, is refused (exit 2) unless
--force, which recomputes the source with exactly the editions asked for."""
from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time

from analyzer.engine import layout
from analyzer.engine.config import Config, edition_ids, edition_params, unit_fingerprint
from analyzer.engine.executors import RunError, make_executor
from analyzer.engine.lock import LockHeld, OutLock
from analyzer.engine.numbering import finalize_source
from analyzer.engine.parts import read_json, write_json
from analyzer.engine.plan import iter_sequential_units, plan_frame_units
from analyzer.engine.progress import Progress
from analyzer.engine.summary import make_summary
from analyzer.io import sources

log = logging.getLogger("analyzer")


@dataclasses.dataclass
class SourcePlan:
    info: sources.InputInfo
    action: str            # "run" | "skip"
    editions: list         # editions to analyze (run) or held (skip)
    note: str = ""         # why (for the log and the summary)
    previous: dict | None = None
    clear: bool = False    # remove what OUT holds of the source first (else: resume its units)


def _check_out_dir(out: str) -> None:
    try:
        os.makedirs(out, exist_ok=True)
        probe = layout.temp_path(os.path.join(out, "write-probe"))
        with open(probe, "w") as fh:
            fh.write("x")
        os.remove(probe)
    except OSError as exc:
        raise RunError(f"output directory {out!r} is not writable: {exc.strerror or exc}") from None


def _read_previous(out: str, name: str) -> dict | None:
    try:
        return read_json(layout.source_record_path(out, name))
    except (OSError, ValueError):
        return None


def _edition_from_params(params: dict):
    from analyzer.editions import ChessEdition

    return ChessEdition(**params)


def _union_editions(previous: dict, requested: list) -> tuple[list, list[str]]:
    """The editions a source holds after this run: the previous ones, then the new ones."""
    held_ids = previous.get("editions", [])
    held_params = previous.get("edition_params", {})
    req = {e if isinstance(e, str) else e.id: e for e in requested}
    out = []
    for eid in held_ids:
        if eid in req:
            out.append(req[eid])
        elif eid in held_params:
            out.append(_edition_from_params(held_params[eid]))
        else:
            out.append(eid)
    added = [eid for eid in req if eid not in held_ids]
    out += [req[eid] for eid in added]
    return out, added


def plan_sources(infos: list[sources.InputInfo], cfg: Config, force: bool) -> list[SourcePlan]:
    """Decide what to do with each source, before any work: conflicts are refused up front."""
    plans = []
    problems = []
    for info in infos:
        requested = cfg.editions_for(info.game_type)
        prev = _read_previous(cfg.out, info.name)
        if force or prev is None:
            # --force starts over; without a finished record, units of an interrupted run are
            # reused where they match (a stream cannot be checked: it starts over too).
            plans.append(SourcePlan(info, "run", requested, clear=force or not info.seekable))
            continue
        ident = info.identity()
        prev_ident = prev.get("input", {})
        if not info.seekable or prev_ident.get("path") != ident["path"]:
            problems.append(
                f"source {info.name!r} in {cfg.out} holds the results of "
                f"{prev_ident.get('path', '?')!r}; {info.path!r} would replace them: name this input "
                f"with --source-name, or --force to replace")
            continue
        clash = [eid for eid, p in edition_params(requested).items()
                 if eid in prev.get("edition_params", {}) and prev["edition_params"][eid] != p]
        if clash:
            problems.append(f"source {info.name!r} in {cfg.out} was analyzed under edition(s) {clash} "
                            f"with other parameters: give the new ones other ids, or --force to replace")
            continue
        editions, added = _union_editions(prev, requested)
        if prev_ident != ident:
            plans.append(SourcePlan(info, "run", editions, "the input changed since the last run", prev, True))
        elif prev.get("settings") != cfg.settings():
            plans.append(SourcePlan(info, "run", editions, "settings changed since the last run", prev, True))
        elif added:
            plans.append(SourcePlan(info, "run", editions,
                                    f"adding edition(s) {added} to {prev.get('editions')}", prev, True))
        else:
            plans.append(SourcePlan(info, "skip", editions, "complete", prev))
    if problems:
        raise RunError("; ".join(problems))
    return plans


def _reuse_fn(out: str, cfg: Config, ident: dict, seekable: bool):
    def reuse(spec) -> dict | None:
        if not seekable:
            return None
        try:
            rec = read_json(layout.unit_record_path(out, spec.source, spec.index))
        except (OSError, ValueError):
            return None
        if rec.get("fingerprint") != unit_fingerprint(cfg, spec.editions) or rec.get("input") != ident:
            return None
        g, e = layout.staging_paths(out, spec.source, spec.index)
        fg, fe = layout.final_paths(out, spec.source, spec.index)
        if (os.path.exists(g) and os.path.exists(e)) or (os.path.exists(fg) and os.path.exists(fe) and rec.get("finalized")):
            return rec
        return None
    return reuse


def run_scan(inputs: list[str], cfg: Config, *, workers: int = 1, engine: str = "local",
             scheduler: str | None = None, force: bool = False, progress_interval: float = 10.0,
             progress_mode: str = "log", source_names: list[str] | None = None,
             log_stream=None) -> tuple[dict, int]:
    """Run the batch job; returns (summary, exit_code). Raises RunError, LockHeld or
    sources.InputError for problems the user must fix (exit 2)."""
    t0 = time.time()
    if source_names is not None and len(source_names) != len(inputs):
        raise RunError(f"--source-name was given {len(source_names)} time(s) for {len(inputs)} input(s)")
    infos = [sources.inspect(p, source_names[i] if source_names else None) for i, p in enumerate(inputs)]
    names = [i.name for i in infos]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise RunError(f"several inputs share the source name(s) {dups}; name them with --source-name")
    _check_out_dir(cfg.out)
    lock = OutLock(cfg.out)
    lock.acquire()
    try:
        removed = layout.clean_temp(cfg.out)
        if removed:
            log.info("removed %d temporary file(s) left by an interrupted run", removed)
        plans = plan_sources(infos, cfg, force)
        return _run(plans, cfg, workers, engine, scheduler, progress_interval, progress_mode, log_stream, t0)
    finally:
        lock.release()


def _run(plans, cfg, workers, engine, scheduler, progress_interval, progress_mode, log_stream, t0):
    todo_bytes = [p.info.size for p in plans if p.action == "run"]
    total = sum(todo_bytes) if todo_bytes and all(b >= 0 for b in todo_bytes) else None
    progress = Progress(progress_mode, progress_interval, total, log_stream or sys.stderr)
    executor = make_executor(engine, workers, scheduler)
    failures: list[dict] = []
    outcomes: list[dict] = []
    try:
        for plan in plans:
            info = plan.info
            if plan.note:
                log.info("%s: %s", info.name, plan.note)
            if plan.action == "skip":
                progress.source_skipped(info.size)
                outcomes.append({"plan": plan, "records": plan.previous["units"], "engine": None,
                                 "games": plan.previous.get("games"), "rows": plan.previous.get("rows")})
                continue
            if plan.clear:
                layout.remove_source(cfg.out, info.name)
            ident = info.identity()
            frames = sources.pzstd_frames(info.path) if info.compression == "zstd" and info.seekable else None
            if frames:
                units = plan_frame_units(info, frames, cfg, plan.editions)
            else:
                units = iter_sequential_units(info, cfg, plan.editions)
            reuse = _reuse_fn(cfg.out, cfg, ident, info.seekable)
            records, fails, n_units = executor.run_source(info.name, units, reuse, cfg, ident, progress)
            failures += fails
            outcome = {"plan": plan, "engine": executor.engine_for(bool(frames)), "records": None,
                       "games": None, "rows": None}
            outcomes.append(outcome)
            if fails:
                continue
            fin = finalize_source(cfg.out, info.name, n_units)
            recs = [read_json(layout.unit_record_path(cfg.out, info.name, k)) for k in range(n_units)]
            outcome.update(records=recs, games=fin["games"], rows=fin["rows"])
            write_json({"input": ident, "settings": cfg.settings(), "editions": edition_ids(plan.editions),
                        "edition_params": edition_params(plan.editions), "units": recs,
                        "games": fin["games"], "rows": fin["rows"]},
                       layout.source_record_path(cfg.out, info.name))
    finally:
        executor.close()
        progress.close()
    summary = make_summary(outcomes, failures, time.time() - t0, cfg, workers, executor, progress)
    write_json(summary, layout.run_record_path(cfg.out))
    code = 1 if (failures or summary["damage"] or summary["accounting_errors"] or summary["warnings"]) else 0
    return summary, code


__all__ = ["run_scan", "RunError", "LockHeld", "plan_sources"]
