"""`analyzer scan` as a batch job: inputs -> per-source decisions -> units -> executor ->
final parts -> records -> summary. Data flows down: this module calls the layers below
(plan, executors, numbering, the Dataset that owns OUT) and none of them calls back.

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

from analyzer.engine.config import Config, ScanOptions, edition_ids, edition_params, unit_fingerprint
from analyzer.engine.dataset import Damage, Dataset, FileEntry, SourceRecord, StartedRecord, UnitRecord, names
from analyzer.engine.executors import Job, make_executor
from analyzer.engine.numbering import finalize_source
from analyzer.engine.plan import iter_sequential_units, plan_frame_units, plan_row_group_units
from analyzer.engine.progress import Progress
from analyzer.engine.summary import SourceOutcome, make_summary
from analyzer.errors import DamagedRecord, InputError, LockHeld, MissingExtra, RunError
from analyzer.io import hf_parquet, remote, sources
from analyzer.tables import data_dictionary

log = logging.getLogger("analyzer")


@dataclasses.dataclass
class SourcePlan:
    info: sources.InputInfo
    action: str  # "run" | "skip"
    editions: list  # editions to analyze (run) or held (skip)
    note: str = ""  # why (for the log and the summary)
    previous: SourceRecord | None = None
    clear: bool = False  # remove what OUT holds of the source first (else: resume its units)
    kept: list[FileEntry] = dataclasses.field(default_factory=list)  # a repair: the previous record's intact entries
    damage: list[Damage] = dataclasses.field(default_factory=list)  # a repair: what was found damaged


def _read_previous(ds: Dataset, name: str) -> SourceRecord | None:
    """The source's record, or None (none, or damaged: its units are then resumed as those of
    an unfinished run, each checked)."""
    try:
        return ds.source_record(name)
    except DamagedRecord as exc:
        log.warning("%s: its source record is damaged (%s); its units are checked and resumed", name, exc)
        return None


def _intact(
    ds: Dataset, cfg: Config, info, editions: list, entries: list[FileEntry], check: str
) -> tuple[list[FileEntry], list[Damage]]:
    """(intact file entries, damage): the entries whose files are as described (by their
    SHA-256; check="deep" also decodes every page) and whose every unit record is readable and
    of this input and these settings, so that the units they cover can stand without their
    own parts."""
    damage = ds.check_entries(info.name, entries, check)
    bad = {tuple(d.units) for d in damage}
    want, ident = unit_fingerprint(cfg, editions), info.identity()
    kept = []
    for e in entries:
        if tuple(e["units"]) in bad:
            continue
        stale = [k for k in range(*e["units"]) if not _unit_record_matches(ds, info.name, k, want, ident)]
        if stale:
            damage.append(
                Damage(
                    info.name,
                    (e["units"][0], e["units"][1]),
                    names.unit_record(names.source_dir(info.name), stale[0]),
                    "unit record damaged, missing or of other settings",
                )
            )
            continue
        kept.append(e)
    return kept, damage


def _restore_records(ds: Dataset, name: str, prev: SourceRecord) -> int:
    """A finished source's record holds a copy of every unit record and group entry: unit and
    group records that are missing or damaged (they decide reuse and numbering) are written
    again from it, instead of recomputing their units. Returns how many were restored."""
    stale = ds.stale_records(name, prev)
    ds.restore_records(name, stale)
    n = len(stale)
    try:
        started = ds.started_record(name)
    except DamagedRecord:
        started = None
    if started is None:  # (its own content is not in the source record: what is, is)
        known = {k: prev.get(k) for k in ("source", "input", "editions", "command", "rerun_args", "cwd")}
        ds.write_started(name, known | {"units": len(prev.get("units", []))})  # type: ignore[arg-type]
        n += 1
    return n


def _unit_record_matches(ds: Dataset, source: str, k: int, fingerprint: dict, ident: dict) -> bool:
    rec = ds.unit_record(source, k)
    if rec is None:
        return False
    return rec.get("fingerprint") == fingerprint and rec.get("input") == ident and rec.get("unit") == k


def _edition_from_params(kind: str, params: dict):
    """An edition of `kind` as a finished source recorded it (it may be a custom one this run
    does not name)."""
    from analyzer import kinds

    edition_type = type(next(iter(kinds.get(kind).editions().values())))
    return edition_type(**params)


def union_editions(kind: str, previous: SourceRecord, requested: list) -> tuple[list, list[str]]:
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
    ds: Dataset, infos: list[sources.InputInfo], cfg: Config, force: bool, deep_verify: bool = False
) -> list[SourcePlan]:
    """Decide what to do with each source, before any work: conflicts are refused up front. A
    finished source is reused only if its committed files are what its record says (their
    SHA-256; with deep_verify, every page decoded too, and the input re-hashed against the
    SHA-256 recorded when it was read); otherwise the units of its damaged files are
    recomputed (a repair), or, if the input changed, the whole source."""
    check = "deep" if deep_verify else "digest"
    plans = []
    problems = []
    for info in infos:
        requested = cfg.editions_for(info.game_type)
        prev = _read_previous(ds, info.name)
        if force or prev is None:
            # --force starts over; without a finished record, units of an interrupted run are
            # reused where they match, and so are the compacted groups of a source whose record
            # was lost (a stream cannot be checked: it starts over too).
            kept: list = []
            if not force and info.seekable:
                kept, _ = _intact(ds, cfg, info, requested, ds.group_records(info.name), check)
            plans.append(SourcePlan(info, "run", requested, clear=force or not info.seekable, kept=kept))
            continue
        ident = info.identity()
        prev_ident = prev.get("input", {})
        if not info.seekable or prev_ident.get("path") != ident["path"]:
            problems.append(
                f"source {info.name!r} in {ds.root} holds the results of "
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
                f"source {info.name!r} in {ds.root} was analyzed under edition(s) {clash} "
                f"with other parameters: give the new ones other ids, or --force to replace"
            )
            continue
        editions, added = union_editions(info.game_type, prev, requested)
        rehashed = None
        if deep_verify and prev_ident == ident and prev.get("input_sha256"):
            rehashed = sources.input_sha256(info, cfg.storage_options)
        if prev_ident != ident:
            plans.append(SourcePlan(info, "run", editions, "the input changed since the last run", prev, True))
        elif rehashed is not None and rehashed != prev.get("input_sha256"):
            plans.append(
                SourcePlan(
                    info,
                    "run",
                    editions,
                    "the input's content changed since the last run (its SHA-256 differs from the one recorded "
                    "when it was read, though its size and modification time did not): rescanning it",
                    prev,
                    True,
                )
            )
        elif prev.get("settings") != cfg.settings():
            plans.append(SourcePlan(info, "run", editions, "settings changed since the last run", prev, True))
        elif added:
            plans.append(
                SourcePlan(info, "run", editions, f"adding edition(s) {added} to {prev.get('editions')}", prev, True)
            )
        else:
            restored = _restore_records(ds, info.name, prev)
            if restored:
                log.info("%s: restored %d damaged or missing record(s) from its source record", info.name, restored)
            kept, damage = _intact(ds, cfg, info, editions, ds.files_of(prev), check)
            hurt = {r["unit"] for r in prev.get("units", []) if r.get("damage")}
            for e in [e for e in kept if hurt and e["units"][1] > min(hurt)]:
                # the input was damaged there when it was read (a cut download, a bad frame): its
                # units are read again, so that an input made whole again gives whole tables (and
                # the units after them, whose game numbers follow from theirs)
                kept.remove(e)
                damage.append(
                    Damage(
                        info.name, (e["units"][0], e["units"][1]), e["tables"]["games"]["path"], "input damaged there"
                    )
                )
            if damage:
                units = {u for d in damage for u in range(*d.units)}
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


def _reuse_fn(ds: Dataset, cfg: Config, ident: dict, seekable: bool, kept: list[FileEntry] | None = None):
    """The record of a unit an earlier run finished, if it can stand as it is: same input and
    settings, no damage of the input found in it, and its parts as written (checked by their
    SHA-256) or, in a repair, inside an intact file of the source's record."""
    covered = {u for e in kept or [] for u in range(*e["units"])}

    def reuse(spec) -> UnitRecord | None:
        if not seekable:
            return None
        rec = ds.unit_record(spec.source, spec.index)
        if rec is None:
            return None
        if rec.get("fingerprint") != unit_fingerprint(cfg, spec.editions) or rec.get("input") != ident:
            return None
        if rec.get("damage"):  # the input was damaged there (a cut download, a rewritten frame): read it again
            return None
        if spec.index in covered:
            return rec
        if ds.unit_parts_problem(rec) is None:
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


def _started_record(info, plan, units, options: ScanOptions) -> StartedRecord:
    """What a source's unfinished run says of itself (readers estimate its size from it)."""
    return {
        "source": info.name,
        "input": info.identity(),
        "units": len(units) if isinstance(units, list) else None,
        "editions": edition_ids(plan.editions),
        "command": options.command,
        "rerun_args": options.rerun_args,
        "cwd": os.getcwd(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def run_scan(inputs: list[str], cfg: Config, options: ScanOptions | None = None, **kwargs) -> tuple[dict, int]:
    """Run the batch job; returns (summary, exit_code). `options`: how it runs (a ScanOptions;
    keyword arguments set its fields, e.g. workers=2). Raises RunError, LockHeld, InputError
    or another analyzer.errors.AnalyzerError for problems the user must fix (exit 2)."""
    options = dataclasses.replace(options or ScanOptions(), **kwargs)
    t0 = time.time()
    cfg.out = remote.localize(cfg.out)
    if remote.is_url(cfg.out):
        cfg.out = cfg.out.rstrip("/")
    cfg.run_id = cfg.run_id or names.token()
    ds = cfg.dataset
    inputs = expand_inputs(inputs, cfg.storage_options)
    if options.source_names is not None and len(options.source_names) != len(inputs):
        raise RunError(f"--source-name was given {len(options.source_names)} time(s) for {len(inputs)} input(s)")
    infos = _inspect_all(inputs, options.source_names, cfg.storage_options)
    all_names = [i.name for i in infos]
    dups = sorted({n for n in all_names if all_names.count(n) > 1})
    if dups:
        raise RunError(f"several inputs share the source name(s) {dups}; name them with --source-name")
    ds.prepare()
    lock = ds.lock()
    lock.acquire()
    try:
        return scan_locked(ds, infos, cfg, options, lock, t0)
    finally:
        lock.release()


def scan_locked(
    ds: Dataset, infos: list[sources.InputInfo], cfg: Config, options: ScanOptions, lock, t0: float | None = None
) -> tuple[dict, int]:
    """The scan of inspected inputs into OUT (`ds`, prepared) by a caller that holds its lock
    (run_scan; engine.sync holds it across the months it scans). Returns (summary, exit code)."""
    t0 = time.time() if t0 is None else t0
    try:
        removed = ds.clean_temp()
        if removed:
            log.info("removed %d temporary file(s) left by an interrupted run", removed)
        plans = plan_sources(ds, infos, cfg, options.force, options.deep_verify)
        compile_seconds = 0.0
        if options.prepare is not None:
            t_prepare = time.time()
            if options.prepare({p.info.game_type for p in plans if p.action == "run"}):
                compile_seconds = time.time() - t_prepare
        return _run(ds, plans, cfg, options, t0, lock, compile_seconds)
    except KeyboardInterrupt:
        # Ctrl-C, SIGTERM, SIGHUP: the workers are stopped (executors, engine.forked); what they
        # were writing is removed now, under the lock, rather than by the next run.
        ds.clean_temp()
        raise


def expand_inputs(inputs: list[str], storage_options: dict | None = None) -> list[str]:
    """Globs and URL prefixes -> the inputs they name (sorted), in the order given. A local
    path that exists is taken as it is (even with glob characters in its name); a pattern that
    matches nothing is an error. A folder or URL prefix of Parquet games in the Hugging Face
    mirror's layout names its months (io.hf_parquet.expand: `year=YYYY/month=MM`)."""
    out: list[str] = []
    for p in inputs:
        q = remote.localize(p)
        if remote.is_url(q):
            try:
                # a prefix of Parquet games (the Hugging Face mirror): its months, else its game files
                found = (hf_parquet.expand(q, storage_options) if q.endswith("/") else None) or remote.expand(
                    q, storage_options
                )
            except MissingExtra as exc:
                raise InputError(str(exc)) from None
            except FileNotFoundError:
                found = []
            except Exception as exc:  # noqa: BLE001
                raise InputError(f"{p}: cannot list ({type(exc).__name__}: {exc})") from None
            if not found:
                raise InputError(f"{p}: matches no object")
            out += found
        elif os.path.isdir(q) and (months := hf_parquet.expand(q)):
            out += months  # the month folders of a Parquet mirror (or the folder itself)
        elif q != "-" and not os.path.exists(q) and any(c in q for c in "*?["):
            found = sorted(f for f in glob.glob(q) if os.path.isfile(f))
            if not found:
                raise InputError(f"{p}: matches no file")
            out += found
        else:
            out.append(q)
    return out


def _inspect_all(inputs: list[str], source_names: list[str] | None, storage_options: dict | None) -> list:
    """sources.inspect of every input; URLs several at a time (each is a few round trips)."""
    given = [source_names[i] if source_names else None for i in range(len(inputs))]
    if sum(remote.is_url(p) for p in inputs) < 2:
        return [sources.inspect(p, n, storage_options) for p, n in zip(inputs, given)]
    with ThreadPoolExecutor(max_workers=16, thread_name_prefix="analyzer-inspect") as pool:
        return list(pool.map(lambda p, n: sources.inspect(p, n, storage_options), inputs, given))


WALK_THREADS = 32  # a walk waits on one small read at a time: many at once cost little


def _frame_indexes(plans, storage_options: dict | None) -> dict:
    """Source name -> pzstd frames (or None) of the sources to run: URLs are walked several at
    a time (a walk is one ranged read per header, so latency-bound), local files in turn."""
    # (a UTF-16/32 text is transcoded as one stream: its frames are not cut apart)
    # (an input opened as one stream, `analyzer sync`'s, is read in order whatever its layout)
    todo = [
        p.info
        for p in plans
        if p.action == "run"
        and p.info.compression == "zstd"
        and p.info.seekable
        and not p.info.stream
        and p.info.encoding == "utf-8"
    ]
    out = {}

    def walk(info):
        stats: dict = {}
        t = time.time()
        frames = sources.pzstd_frames(info.path, info.size, stats, storage_options)
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
    ds: Dataset, plans: list[SourcePlan], cfg: Config, options: ScanOptions, t0: float, lock, compile_seconds: float
) -> tuple[dict, int]:
    todo_bytes = [p.info.size for p in plans if p.action == "run"]
    total = sum(todo_bytes) if todo_bytes and all(b >= 0 for b in todo_bytes) else None
    progress_mode = options.progress_mode
    if not todo_bytes:  # nothing to analyze (a rerun of finished sources): no empty bar beside the log lines
        progress_mode = "none"
    progress = Progress(progress_mode, options.progress_interval, total, options.log_stream or sys.stderr)
    executor = make_executor(options.engine, options.workers, options.scheduler)
    failures: list[dict] = []
    rejected: list[dict] = []  # sources the run's `accept` did not let it commit
    outcomes: dict[int, SourceOutcome] = {}
    try:
        try:
            indexes = _frame_indexes(plans, cfg.storage_options)
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
                assert plan.previous is not None  # a skip reuses a finished record
                removed = ds.sweep(info.name, ds.files_of(plan.previous))
                if removed:
                    log.info(
                        "%s: removed %d file(s) its record does not list (an interrupted run's)", info.name, removed
                    )
                progress.source_skipped()
                outcomes[i] = SourceOutcome(
                    plan,
                    records=plan.previous["units"],
                    games=plan.previous.get("games"),
                    rows=plan.previous.get("rows"),
                    input_sha256=plan.previous.get("input_sha256"),
                )
                continue
            if plan.clear:
                ds.remove_source(info.name)
            ident = info.identity()
            frames = indexes.get(info.name)
            digest: dict = {}
            self_read = bool(frames)  # units that read their own input (frames, row groups)
            if frames:
                units = plan_frame_units(info, frames, cfg, plan.editions)
            elif info.compression == "parquet":  # row groups, each unit read by its worker as frames are
                units = plan_row_group_units(info, cfg, plan.editions)
                self_read = True
            else:
                units = iter_sequential_units(info, cfg, plan.editions, describe=executor.describe, digest_into=digest)
            if plan.previous is None or plan.clear:  # not a repair: the source is unfinished from here on
                ds.write_started(info.name, _started_record(info, plan, units, options))
            reused: list[UnitRecord] = []
            reuse = _counting(_reuse_fn(ds, cfg, ident, info.seekable, plan.kept), reused)
            job = Job(info.name, units, reuse, ident, self_read, plan)
            job.index = i
            job.engine = executor.engine_for(self_read, progress)
            job.digest = digest
            jobs.append(job)
            outcomes[i] = SourceOutcome(plan, engine=job.engine, reused=reused, job=job)

        def source_done(job) -> None:
            """Every unit analyzed: finalize and compact, commit the source record (readers
            serve what it lists from then on), then remove what it does not list."""
            info, plan = job.plan.info, job.plan
            t_fin = time.time()
            kept = sorted(plan.kept + job.streamed, key=lambda e: e["units"][0])
            fin = finalize_source(
                ds, info.name, job.n_units, run_all=executor.run_all, kept=kept, compact_games=cfg.compact_games
            )
            sha = _input_digest(job, info, plan, cfg)
            recs = fin["records"]
            out = outcomes[job.index]
            out.records, out.games, out.rows, out.engine = recs, fin["games"], fin["rows"], job.engine
            out.compact_seconds = round(time.time() - t_fin, 3)
            out.files = len(fin["files"]) * len(names.TABLES)
            out.input_sha256 = sha
            if options.accept is not None:
                why = options.accept(info, {**fin, "input_sha256": sha, "digest": job.digest})
                if why:
                    # not committed: what the run wrote of the source goes (records first, so that
                    # no reader or rerun trusts any of it), and OUT holds nothing of it
                    ds.remove_source(info.name)
                    out.records = None
                    out.rejected = why
                    rejected.append({"source": info.name, "reason": why})
                    return
            ds.commit_source(
                info.name,
                {
                    "format": 3,
                    "source": info.name,
                    "input": job.ident,
                    "input_sha256": sha,
                    "settings": cfg.settings(),
                    "editions": edition_ids(plan.editions),
                    "edition_params": edition_params(plan.editions),
                    "units": recs,
                    "files": fin["files"],
                    "games": fin["games"],
                    "rows": fin["rows"],
                    "command": options.command,
                    "rerun_args": options.rerun_args,
                    "cwd": os.getcwd(),
                    **options.record,
                },
            )
            ds.sweep(info.name, fin["files"])

        executor.run_sources(jobs, cfg, progress, on_done=source_done)
        for job in jobs:
            failures += job.failures
            outcomes[job.index].engine = job.engine
    finally:
        executor.close()
        progress.close()
    summary = make_summary(
        [outcomes[i] for i in sorted(outcomes)],
        failures,
        time.time() - t0,
        cfg,
        options,
        executor,
        progress,
        compile_seconds,
    )
    summary["command"] = options.command
    summary["rejected"] = rejected
    if getattr(lock, "lost", None):
        summary["accounting_errors"].append(lock.lost + "; its results may be mixed with that run's: rerun")
    ds.write_run_summary(summary)
    ds.write_data_dictionary({"tables": data_dictionary(), "layout": (names.__doc__ or "").strip()})
    code = (
        1 if (failures or rejected or summary["damage"] or summary["accounting_errors"] or summary["warnings"]) else 0
    )
    return summary, code


def _input_digest(job, info: sources.InputInfo, plan: SourcePlan, cfg: Config) -> str | None:
    """The SHA-256 of the input's bytes: as the reader read them (sequential inputs), or, for an
    input whose units read it by pieces (pzstd frames), the local file read through here; a
    repair keeps the one recorded before. None for a URL read by frames (a second download
    of the whole object is not worth it: `analyzer sync` streams and hashes its inputs)."""
    if job.digest.get("sha256"):
        return job.digest["sha256"]
    if plan.kept and plan.previous is not None and plan.previous.get("input_sha256"):
        return plan.previous["input_sha256"]
    if job.frames and not info.url and info.seekable and info.compression != "parquet":
        return sources.file_sha256(info.path)
    return None


__all__ = ["LockHeld", "RunError", "ScanOptions", "plan_sources", "run_scan", "scan_locked"]
