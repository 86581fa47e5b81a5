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
import glob
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from analyzer.engine import layout, manifest, numbering
from analyzer.engine.config import Config, edition_ids, edition_params, unit_fingerprint
from analyzer.engine.executors import Job, RunError, make_executor
from analyzer.engine.lock import LockHeld
from analyzer.engine.numbering import finalize_source
from analyzer.engine.parts import read_json, write_json
from analyzer.engine.plan import iter_sequential_units, plan_frame_units
from analyzer.engine.progress import Progress
from analyzer.engine.store import is_remote, open_store
from analyzer.engine.summary import make_summary
from analyzer.io import remote, sources
from analyzer.tables import data_dictionary

log = logging.getLogger("analyzer")


@dataclasses.dataclass
class SourcePlan:
    info: sources.InputInfo
    action: str  # "run" | "skip"
    editions: list  # editions to analyze (run) or held (skip)
    note: str = ""  # why (for the log and the summary)
    previous: dict | None = None
    clear: bool = False  # remove what OUT holds of the source first (else: resume its units)
    kept: list = dataclasses.field(default_factory=list)  # a repair: the previous record's intact file entries
    damage: list = dataclasses.field(default_factory=list)  # a repair: what was found damaged (manifest.Damage)


def _check_out_dir(out: str) -> None:
    if is_remote(out):
        try:
            st = open_store(out)
            probe = f"{out}/_manifest/.analyzer-write-probe-{os.getpid()}"
            st.put(probe, b"x")
            st.delete(probe)
        except remote.MissingExtra as exc:
            raise RunError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - credentials, bucket, network: one line for the user
            raise RunError(f"output {out!r} is not writable: {type(exc).__name__}: {exc}") from None
        return
    if os.path.exists(out) and not os.path.isdir(out):  # else makedirs says "File exists"
        raise RunError(f"output {out!r} is a file, not a folder")
    try:
        os.makedirs(out, exist_ok=True)
        probe = layout.temp_path(os.path.join(out, "write-probe"))
        with open(probe, "w") as fh:
            fh.write("x")
        os.remove(probe)
    except OSError as exc:
        raise RunError(f"output directory {out!r} is not writable: {exc.strerror or exc}") from None


def _read_previous(out: str, name: str) -> dict | None:
    """The source's record, or None (none, or damaged: its units are then resumed as those of
    an unfinished run, each checked)."""
    try:
        return read_json(layout.source_record_path(out, name))
    except ValueError as exc:
        log.warning("%s: its source record is damaged (%s); its units are checked and resumed", name, exc)
        return None
    except OSError:
        return None


def _intact(cfg: Config, info, editions: list, entries: list[dict], deep: bool) -> tuple[list, list]:
    """(intact file entries, damage): the entries whose files are as described (cheaply, or
    deeply) and whose every unit record is readable and of this input and these settings, so
    that the units they cover can stand without their own parts."""
    state = manifest.SourceState(layout.source_dir(info.name), info.name, True, None, entries, 0, None)
    damage = manifest.check_source(cfg.out, state, deep=deep)
    bad = {tuple(d.units) for d in damage}
    want, ident = unit_fingerprint(cfg, editions), info.identity()
    kept = []
    for e in entries:
        if tuple(e["units"]) in bad:
            continue
        stale = [k for k in range(*e["units"]) if not _unit_record_matches(cfg.out, info.name, k, want, ident)]
        if stale:
            damage.append(
                manifest.Damage(
                    info.name,
                    (e["units"][0], e["units"][1]),
                    layout.rel(cfg.out, layout.unit_record_path(cfg.out, info.name, stale[0])),
                    "unit record damaged, missing or of other settings",
                )
            )
            continue
        kept.append(e)
    return kept, damage


def _restore_records(out: str, name: str, prev: dict) -> int:
    """A finished source's record holds a copy of every unit record and group entry: unit and
    group records that are missing or damaged (they decide reuse and numbering) are written
    again from it, instead of recomputing their units. Returns how many were restored."""
    stale = manifest.stale_records(out, name, prev)
    for path, rec in stale:
        write_json(rec, path)
    n = len(stale)
    started = layout.started_record_path(out, name)
    try:
        read_json(started)
    except (OSError, ValueError):  # (its own content is not in the source record: what is, is)
        known = {k: prev.get(k) for k in ("source", "input", "editions", "command")}
        write_json(known | {"units": len(prev.get("units", []))}, started)
        n += 1
    return n


def _unit_record_matches(out: str, source: str, k: int, fingerprint: dict, ident: dict) -> bool:
    try:
        rec = read_json(layout.unit_record_path(out, source, k))
    except (OSError, ValueError):
        return False
    return rec.get("fingerprint") == fingerprint and rec.get("input") == ident and rec.get("unit") == k


def _group_entries(out: str, source: str) -> list[dict]:
    """The file entries of a source's compacted groups, from their records (a source whose own
    record is lost keeps what they describe)."""
    st = open_store(out)
    folder = os.path.dirname(layout.group_record_path(out, source, 0, 0))
    found = []
    for name in st.list(folder):
        if name.startswith("group-") and name.endswith(".json"):
            try:
                found.append(read_json(f"{folder}/{name}" if is_remote(out) else os.path.join(folder, name)))
            except (OSError, ValueError):
                continue
    found.sort(key=lambda e: e["units"][0])
    out_entries: list[dict] = []
    for e in found:  # disjoint groups only (an older grouping's records may overlap)
        if not out_entries or e["units"][0] >= out_entries[-1]["units"][1]:
            out_entries.append(e)
    return out_entries


def _edition_from_params(kind: str, params: dict):
    """An edition of `kind` as a finished source recorded it (it may be a custom one this run
    does not name)."""
    from analyzer import kinds

    edition_type = type(next(iter(kinds.get(kind).editions().values())))
    return edition_type(**params)


def _union_editions(kind: str, previous: dict, requested: list) -> tuple[list, list[str]]:
    """The editions a source holds after this run: the previous ones, then the new ones."""
    held_ids = previous.get("editions", [])
    held_params = previous.get("edition_params", {})
    req = {e.id: e for e in requested}
    out = []
    for eid in held_ids:
        out.append(req[eid] if eid in req else _edition_from_params(kind, held_params[eid]))
    added = [eid for eid in req if eid not in held_ids]
    out += [req[eid] for eid in added]
    return out, added


def plan_sources(
    infos: list[sources.InputInfo], cfg: Config, force: bool, deep_verify: bool = False
) -> list[SourcePlan]:
    """Decide what to do with each source, before any work: conflicts are refused up front. A
    finished source is reused only if its committed files are what its record says (cheaply:
    size and footer rows; with deep_verify, their SHA-256 and page checksums too); otherwise
    the units of its damaged files are recomputed (a repair)."""
    plans = []
    problems = []
    for info in infos:
        requested = cfg.editions_for(info.game_type)
        prev = _read_previous(cfg.out, info.name)
        if force or prev is None:
            # --force starts over; without a finished record, units of an interrupted run are
            # reused where they match, and so are the compacted groups of a source whose record
            # was lost (a stream cannot be checked: it starts over too).
            kept: list = []
            if not force and info.seekable:
                kept, _ = _intact(cfg, info, requested, _group_entries(cfg.out, info.name), deep_verify)
            plans.append(SourcePlan(info, "run", requested, clear=force or not info.seekable, kept=kept))
            continue
        ident = info.identity()
        prev_ident = prev.get("input", {})
        if not info.seekable or prev_ident.get("path") != ident["path"]:
            problems.append(
                f"source {info.name!r} in {cfg.out} holds the results of "
                f"{prev_ident.get('path', '?')!r}; {info.path!r} would replace them: name this input "
                f"with --source-name, or --force to replace"
            )
            continue
        clash = [
            eid
            for eid, p in edition_params(requested).items()
            if eid in prev.get("edition_params", {}) and prev["edition_params"][eid] != p
        ]
        if clash:
            problems.append(
                f"source {info.name!r} in {cfg.out} was analyzed under edition(s) {clash} "
                f"with other parameters: give the new ones other ids, or --force to replace"
            )
            continue
        editions, added = _union_editions(info.game_type, prev, requested)
        if prev_ident != ident:
            plans.append(SourcePlan(info, "run", editions, "the input changed since the last run", prev, True))
        elif prev.get("settings") != cfg.settings():
            plans.append(SourcePlan(info, "run", editions, "settings changed since the last run", prev, True))
        elif added:
            plans.append(
                SourcePlan(info, "run", editions, f"adding edition(s) {added} to {prev.get('editions')}", prev, True)
            )
        else:
            restored = _restore_records(cfg.out, info.name, prev)
            if restored:
                log.info("%s: restored %d damaged or missing record(s) from its source record", info.name, restored)
            kept, damage = _intact(cfg, info, editions, manifest.files_of(cfg.out, prev), deep_verify)
            if damage:
                units = manifest.damaged_units(damage)
                plans.append(
                    SourcePlan(
                        info,
                        "run",
                        editions,
                        f"repairing {len(damage)} damaged file(s) ({damage[0].path}: {damage[0].problem}"
                        f"{'; ...' if len(damage) > 1 else ''}): recomputing {len(units)} of "
                        f"{len(prev.get('units', []))} unit(s)",
                        prev,
                        kept=kept,
                        damage=damage,
                    )
                )
            else:
                plans.append(SourcePlan(info, "skip", editions, "complete", prev))
    if problems:
        raise RunError("; ".join(problems))
    return plans


def _reuse_fn(out: str, cfg: Config, ident: dict, seekable: bool, kept: list | None = None):
    """The record of a unit an earlier run finished, if it can stand as it is: same input and
    settings, and its parts as written (checked by size and footer rows) or, in a repair, inside
    an intact file of the source's record."""
    covered = {u for e in kept or [] for u in range(*e["units"])}

    def reuse(spec) -> dict | None:
        if not seekable:
            return None
        try:
            rec = read_json(layout.unit_record_path(out, spec.source, spec.index))
        except (OSError, ValueError):
            return None
        if rec.get("fingerprint") != unit_fingerprint(cfg, spec.editions) or rec.get("input") != ident:
            return None
        if spec.index in covered:
            return rec
        if manifest.unit_parts_problem(out, rec) is None:
            return rec
        return None

    return reuse


def _counting(reuse, into: list):
    """`reuse`, keeping what it returned (the summary counts reused games per source)."""

    def wrapped(spec):
        rec = reuse(spec)
        if rec is not None:
            into.append(rec)
        return rec

    return wrapped


def _started_record(info, plan, units, command) -> dict:
    """What a source's unfinished run says of itself (readers estimate its size from it)."""
    return {
        "source": info.name,
        "input": info.identity(),
        "units": len(units) if isinstance(units, list) else None,
        "editions": edition_ids(plan.editions),
        "command": command,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def run_scan(
    inputs: list[str],
    cfg: Config,
    *,
    workers: int = 1,
    engine: str = "local",
    scheduler: str | None = None,
    force: bool = False,
    progress_interval: float = 10.0,
    progress_mode: str = "log",
    source_names: list[str] | None = None,
    log_stream=None,
    prepare=None,
    deep_verify: bool = False,
    command: list[str] | None = None,
) -> tuple[dict, int]:
    """Run the batch job; returns (summary, exit_code). Raises RunError, LockHeld or
    sources.InputError for problems the user must fix (exit 2). `prepare`, if given, is called
    with the set of game kinds the run analyzes, before any unit runs (the command line
    compiles their kernels there on a machine's first run). `deep_verify`: check finished
    sources' files by their SHA-256 and page checksums before reusing them. `command`: the
    command line, recorded so that `analyzer verify` can say how to repair."""
    t0 = time.time()
    remote.configure(cfg.storage_options)
    cfg.out = remote.localize(cfg.out)
    if remote.is_url(cfg.out):
        cfg.out = cfg.out.rstrip("/")
    inputs = expand_inputs(inputs)
    if source_names is not None and len(source_names) != len(inputs):
        raise RunError(f"--source-name was given {len(source_names)} time(s) for {len(inputs)} input(s)")
    infos = _inspect_all(inputs, source_names)
    names = [i.name for i in infos]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise RunError(f"several inputs share the source name(s) {dups}; name them with --source-name")
    _check_out_dir(cfg.out)
    lock = open_store(cfg.out).lock()
    lock.acquire()
    try:
        removed = layout.clean_temp(cfg.out)
        if removed:
            log.info("removed %d temporary file(s) left by an interrupted run", removed)
        plans = plan_sources(infos, cfg, force, deep_verify)
        compile_seconds = 0.0
        if prepare is not None:
            t_prepare = time.time()
            if prepare({p.info.game_type for p in plans if p.action == "run"}):
                compile_seconds = time.time() - t_prepare
        summary, code = _run(
            plans,
            cfg,
            workers,
            engine,
            scheduler,
            progress_interval,
            progress_mode,
            log_stream,
            t0,
            lock,
            compile_seconds,
            command,
        )
        return summary, code
    except KeyboardInterrupt:
        # Ctrl-C, SIGTERM, SIGHUP: the workers are stopped (executors, engine.forked); what they
        # were writing is removed now, under the lock, rather than by the next run.
        layout.clean_temp(cfg.out)
        raise
    finally:
        lock.release()


def expand_inputs(inputs: list[str]) -> list[str]:
    """Globs and URL prefixes -> the inputs they name (sorted), in the order given. A local
    path that exists is taken as it is (even with glob characters in its name); a pattern that
    matches nothing is an error."""
    out: list[str] = []
    for p in inputs:
        q = remote.localize(p)
        if remote.is_url(q):
            try:
                found = remote.expand(q)
            except remote.MissingExtra as exc:
                raise sources.InputError(str(exc)) from None
            except FileNotFoundError:
                found = []
            except Exception as exc:  # noqa: BLE001
                raise sources.InputError(f"{p}: cannot list ({type(exc).__name__}: {exc})") from None
            if not found:
                raise sources.InputError(f"{p}: matches no object")
            out += found
        elif q != "-" and not os.path.exists(q) and any(c in q for c in "*?["):
            found = sorted(f for f in glob.glob(q) if os.path.isfile(f))
            if not found:
                raise sources.InputError(f"{p}: matches no file")
            out += found
        else:
            out.append(q)
    return out


def _inspect_all(inputs: list[str], source_names: list[str] | None) -> list:
    """sources.inspect of every input; URLs several at a time (each is a few round trips)."""
    names = [source_names[i] if source_names else None for i in range(len(inputs))]
    if sum(remote.is_url(p) for p in inputs) < 2:
        return [sources.inspect(p, n) for p, n in zip(inputs, names)]
    with ThreadPoolExecutor(max_workers=16, thread_name_prefix="analyzer-inspect") as pool:
        return list(pool.map(sources.inspect, inputs, names))


WALK_THREADS = 32  # a walk waits on one small read at a time: many at once cost little


def _frame_indexes(plans) -> dict:
    """Source name -> pzstd frames (or None) of the sources to run: URLs are walked several at
    a time (a walk is one ranged read per header, so latency-bound), local files in turn."""
    # (a UTF-16/32 text is transcoded as one stream: its frames are not cut apart)
    todo = [
        p.info
        for p in plans
        if p.action == "run" and p.info.compression == "zstd" and p.info.seekable and p.info.encoding == "utf-8"
    ]
    out = {}

    def walk(info):
        stats: dict = {}
        t = time.time()
        frames = sources.pzstd_frames(info.path, info.size, stats)
        if info.url:
            log.info(
                "%s: frame index by %d ranged read(s) in %.2f s (%s frames)",
                info.name,
                stats.get("reads", 0),
                time.time() - t,
                len(frames) if frames else "no pzstd",
            )
        return frames

    urls = [i for i in todo if i.url]
    with ThreadPoolExecutor(max_workers=WALK_THREADS, thread_name_prefix="analyzer-walk") as pool:
        for info, frames in zip(urls, pool.map(walk, urls)):
            out[info.name] = frames
    for info in todo:
        if not info.url:
            out[info.name] = walk(info)
    return out


def _run(
    plans,
    cfg,
    workers,
    engine,
    scheduler,
    progress_interval,
    progress_mode,
    log_stream,
    t0,
    lock=None,
    compile_seconds: float = 0.0,
    command: list[str] | None = None,
):
    todo_bytes = [p.info.size for p in plans if p.action == "run"]
    total = sum(todo_bytes) if todo_bytes and all(b >= 0 for b in todo_bytes) else None
    if not todo_bytes:  # nothing to analyze (a rerun of finished sources): no empty bar beside the log lines
        progress_mode = "none"
    progress = Progress(progress_mode, progress_interval, total, log_stream or sys.stderr)
    executor = make_executor(engine, workers, scheduler)
    failures: list[dict] = []
    outcomes: dict[int, dict] = {}
    try:
        try:
            indexes = _frame_indexes(plans)
        except Exception as exc:  # noqa: BLE001 - a URL that stopped answering after inspect
            raise RunError(f"cannot read the frame index of an input: {type(exc).__name__}: {exc}") from None
        jobs = []
        for i, plan in enumerate(plans):
            info = plan.info
            if plan.note:
                log.info("%s: %s", info.name, plan.note)
            if info.encoding != "utf-8" and plan.action == "run":
                log.info("%s: %s text (byte-order mark), read as UTF-8", info.name, info.encoding.upper())
            if plan.action == "skip":
                removed = numbering.sweep(cfg.out, info.name, manifest.files_of(cfg.out, plan.previous))
                if removed:
                    log.info(
                        "%s: removed %d file(s) its record does not list (an interrupted run's)", info.name, removed
                    )
                progress.source_skipped()
                outcomes[i] = {
                    "plan": plan,
                    "records": plan.previous["units"],
                    "engine": None,
                    "games": plan.previous.get("games"),
                    "rows": plan.previous.get("rows"),
                }
                continue
            if plan.clear:
                layout.remove_source(cfg.out, info.name)
            ident = info.identity()
            frames = indexes.get(info.name)
            if frames:
                units = plan_frame_units(info, frames, cfg, plan.editions)
            else:
                units = iter_sequential_units(info, cfg, plan.editions, describe=executor.describe)
            if plan.previous is None or plan.clear:  # not a repair: the source is unfinished from here on
                write_json(_started_record(info, plan, units, command), layout.started_record_path(cfg.out, info.name))
            reused: list[dict] = []
            reuse = _counting(_reuse_fn(cfg.out, cfg, ident, info.seekable, plan.kept), reused)
            job = Job(info.name, units, reuse, ident, bool(frames), plan)
            job.index = i
            job.engine = executor.engine_for(bool(frames), progress)
            jobs.append(job)
            outcomes[i] = {
                "plan": plan,
                "engine": job.engine,
                "records": None,
                "games": None,
                "rows": None,
                "reused": reused,
                "job": job,
            }

        def source_done(job) -> None:
            """Every unit analyzed: finalize and compact, commit the source record (readers
            serve what it lists from then on), then remove what it does not list."""
            info, plan = job.plan.info, job.plan
            t_fin = time.time()
            fin = finalize_source(
                cfg.out,
                info.name,
                job.n_units,
                run_all=executor.run_all,
                kept=plan.kept,
                compact_games=cfg.compact_games,
            )
            recs = fin["records"]
            outcomes[job.index].update(
                records=recs,
                games=fin["games"],
                rows=fin["rows"],
                engine=job.engine,
                compact_seconds=round(time.time() - t_fin, 3),
                files=len(fin["files"]) * len(layout.TABLES),
            )
            write_json(
                {
                    "format": manifest.FORMAT,
                    "source": info.name,
                    "input": job.ident,
                    "settings": cfg.settings(),
                    "editions": edition_ids(plan.editions),
                    "edition_params": edition_params(plan.editions),
                    "units": recs,
                    "files": fin["files"],
                    "games": fin["games"],
                    "rows": fin["rows"],
                    "command": command,
                },
                layout.source_record_path(cfg.out, info.name),
            )
            numbering.sweep(cfg.out, info.name, fin["files"])

        executor.run_sources(jobs, cfg, progress, on_done=source_done)
        for job in jobs:
            failures += job.failures
            outcomes[job.index]["engine"] = job.engine
    finally:
        executor.close()
        progress.close()
    summary = make_summary(
        [outcomes[i] for i in sorted(outcomes)],
        failures,
        time.time() - t0,
        cfg,
        workers,
        executor,
        progress,
        compile_seconds,
    )
    summary["command"] = command
    if lock is not None and getattr(lock, "lost", None):
        summary["accounting_errors"].append(lock.lost + "; its results may be mixed with that run's: rerun")
    write_json(summary, layout.run_record_path(cfg.out))
    write_json({"tables": data_dictionary(), "layout": layout.__doc__.strip()}, layout.dataset_path(cfg.out))
    code = 1 if (failures or summary["damage"] or summary["accounting_errors"] or summary["warnings"]) else 0
    return summary, code


__all__ = ["LockHeld", "RunError", "plan_sources", "run_scan"]
