"""Orchestration of `analyzer scan`: inputs -> units -> executor -> finalize -> summary."""
from __future__ import annotations

import glob
import json
import os
import platform
import shutil
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, wait

from analyzer import forked, pipeline
from analyzer.io import sources


class RunError(Exception):
    """A problem with the run as a whole (bad output directory, ...): message for the user."""


class _Progress:
    def __init__(self, interval: float, stream=sys.stderr):
        self.interval = interval
        self.stream = stream
        self.t0 = time.time()
        self.last = self.t0
        self.games = 0
        self.text_bytes = 0
        self.units_done = 0
        self.units_total = 0

    def add(self, rec: dict) -> None:
        self.games += rec["games"]
        self.text_bytes += rec["text_bytes"]
        self.units_done += 1
        self.maybe_print()

    def maybe_print(self, force: bool = False) -> None:
        now = time.time()
        if self.interval <= 0 or (not force and now - self.last < self.interval):
            return
        self.last = now
        dt = max(now - self.t0, 1e-9)
        print(f"[analyzer] {time.strftime('%H:%M:%S')} elapsed={dt:8.1f}s units={self.units_done}/"
              f"{self.units_total or '?'} games={self.games} text_MB={self.text_bytes / 1e6:.1f} "
              f"games/s={self.games / dt:.0f}", file=self.stream, flush=True)


def _check_out_dir(out: str) -> None:
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, f".write-probe-{os.getpid()}")
        with open(probe, "w") as fh:
            fh.write("x")
        os.remove(probe)
    except OSError as exc:
        raise RunError(f"output directory {out!r} is not writable: {exc.strerror or exc}") from None


def _clean_temp(out: str) -> None:
    for p in glob.glob(os.path.join(out, "**", "*.tmp-*"), recursive=True):
        try:
            os.remove(p)
        except OSError:
            pass


def _source_manifest(out: str, name: str) -> str:
    return os.path.join(out, "_manifest", name, "source.json")


def _identity(info: sources.InputInfo) -> dict:
    return {"path": os.path.abspath(info.path) if info.path != "-" else "-", "size": info.size,
            "mtime": info.mtime, "compression": info.compression, "game_type": info.game_type}


def _forget_source(out: str, name: str) -> None:
    for sub in (os.path.join("_manifest", name), os.path.join("_staging", name),
                os.path.join("games", f"source={name}"), os.path.join("events", f"source={name}")):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)


def _unit_done(out: str, spec: pipeline.UnitSpec, fingerprint: dict, identity: dict) -> dict | None:
    path = pipeline.unit_manifest_path(out, spec.source, spec.index)
    try:
        with open(path) as fh:
            rec = json.load(fh)
    except (OSError, ValueError):
        return None
    if rec.get("fingerprint") != fingerprint or rec.get("input") != identity:
        return None
    g, e = pipeline.staging_paths(out, spec.source, spec.index)
    fg, fe = pipeline.final_paths(out, spec.source, spec.index)
    if (os.path.exists(g) and os.path.exists(e)) or (os.path.exists(fg) and os.path.exists(fe) and rec.get("finalized")):
        return rec
    return None


class _Executor:
    """In-process, threads (`local`, `threads`), process pool (`processes`) or Dask:
    submit(spec) -> future-like; results in any order. (`local` runs pzstd sources in forked
    processes instead, see analyzer.forked, when it can.)"""

    def __init__(self, workers: int, engine: str, scheduler: str | None):
        self.kind = "inline" if (workers <= 1 and engine == "local" and not scheduler) else engine
        self.client = None
        self.pool = None
        if scheduler or engine == "dask":
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                raise RunError("the Dask engine needs the optional dependency: pip install 'analyzer[dask]'") from None
            if scheduler:
                self.client = Client(scheduler)
            else:
                cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                                       dashboard_address=None)
                self.client = Client(cluster)
            self.kind = "dask"
        elif self.kind == "processes":
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
        elif self.kind != "inline":
            # Threads: the kernels release the GIL, units need no pickling and every worker
            # shares the compiled kernels (a process pool pays start-up and loading per worker).
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analyzer-unit")
        self.capacity = max(workers, 1) * 2
        # In-process engines hand the unit tables back in memory, so the final parts are
        # written once, in unit order (pipeline.OrderedFinalizer); other engines stage them.
        self.hold = self.kind not in ("dask", "processes")

    def submit(self, spec, cfg):
        if self.kind == "dask":
            return self.client.submit(_run_unit_safe, spec, cfg, pure=False)
        if self.pool is not None:
            return self.pool.submit(_run_unit_safe, spec, cfg, self.hold)
        return _Done(_run_unit_safe(spec, cfg, self.hold))

    def wait_some(self, futures):
        if self.kind == "dask":
            from dask.distributed import wait as dwait

            done = dwait(list(futures), return_when="FIRST_COMPLETED").done
            return done
        if self.pool is not None:
            done, _ = wait(list(futures), return_when=FIRST_COMPLETED)
            return done
        return set(futures)

    def result(self, fut):
        return fut.result()

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        if self.client is not None:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _run_unit_safe(spec, cfg, hold=False):
    """A worker entry point that never raises: failures come back as records."""
    try:
        from analyzer.editions import ChessEdition  # noqa: F401  (unpickling in workers)

        return pipeline.run_unit(spec, cfg, hold=hold)
    except BaseException as exc:  # noqa: BLE001 - reported per unit, the run goes on
        return {"source": spec.source, "unit": spec.index, "failed": True,
                "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}


def run_scan(inputs: list[str], cfg: pipeline.Config, *, workers: int = 1, engine: str = "local",
             scheduler: str | None = None, force: bool = False, progress_interval: float = 10.0,
             log=sys.stderr) -> tuple[dict, int]:
    """Run the batch job; returns (summary, exit_code)."""
    t0 = time.time()
    infos = [sources.inspect(p) for p in inputs]
    names = [i.name for i in infos]
    dups = {n for n in names if names.count(n) > 1}
    if dups:
        raise RunError(f"several inputs share the source name(s) {sorted(dups)}; rename or analyze them separately")
    _check_out_dir(cfg.out)
    _clean_temp(cfg.out)
    fingerprint = cfg.fingerprint()
    progress = _Progress(progress_interval, log)
    executor = _Executor(workers, engine, scheduler)
    failures: list[dict] = []
    records: dict[str, list] = {}
    skipped_sources = []
    engines: dict[str, str] = {}     # source -> how its units ran in this run
    try:
        for info in infos:
            ident = _identity(info)
            if force and info.path != "-":
                _forget_source(cfg.out, info.name)
            sm = _source_manifest(cfg.out, info.name)
            if not force and os.path.exists(sm) and info.path != "-":
                with open(sm) as fh:
                    prev = json.load(fh)
                if prev.get("input") == ident and prev.get("fingerprint") == fingerprint:
                    skipped_sources.append(info.name)
                    records[info.name] = prev["units"]
                    continue
            if info.path == "-":
                _forget_source(cfg.out, info.name)
            frames = sources.pzstd_frames(info.path) if info.compression == "zstd" and info.path != "-" else None
            units = pipeline.plan_frame_units(info, frames, cfg) if frames else pipeline.iter_sequential_units(info, cfg)
            if frames:
                progress.units_total += len(units)
            recs: list = []
            pending = {}
            n_units = 0
            finalizer = pipeline.OrderedFinalizer(cfg.out, info.name)
            if frames and executor.kind == "local" and forked.available(workers):
                # Frame units in forked processes (no shared GIL); they write their own parts.
                engines[info.name] = "forked"
                n_units = len(units)
                done_recs = {}
                for spec in units:
                    rec = None if force else _unit_done(cfg.out, spec, fingerprint, ident)
                    if rec is not None:
                        done_recs[spec.index] = rec
                        progress.add(rec)
                todo = [s.index for s in units if s.index not in done_recs]
                recs, fails = forked.run_frame_units(units, todo, done_recs, cfg, workers, ident, progress,
                                                     _run_unit_safe)
                failures += fails
            else:
                engines[info.name] = "threads" if executor.kind == "local" else executor.kind
                for spec in units:
                    n_units += 1
                    if not frames:
                        progress.units_total += 1
                    done = None if force else _unit_done(cfg.out, spec, fingerprint, ident)
                    if done is not None:
                        recs.append(done)
                        progress.add(done)
                        finalizer.add(done)
                        continue
                    while len(pending) >= executor.capacity:
                        _collect(executor, pending, recs, failures, progress, cfg, ident, finalizer)
                    pending[executor.submit(spec, cfg)] = spec
                while pending:
                    _collect(executor, pending, recs, failures, progress, cfg, ident, finalizer)
            if any(f["source"] == info.name for f in failures):
                finalizer.spill()
                continue
            recs.sort(key=lambda r: r["unit"])
            pipeline.finalize_source(cfg.out, info.name, n_units)
            _remove_stale_parts(cfg.out, info.name, n_units)
            recs = []
            for k in range(n_units):
                with open(pipeline.unit_manifest_path(cfg.out, info.name, k)) as fh:
                    recs.append(json.load(fh))
            records[info.name] = recs
            if info.path != "-":
                pipeline._atomic_write_json({"input": ident, "fingerprint": fingerprint, "units": recs}, sm)
    finally:
        executor.close()
    progress.maybe_print(force=True)
    summary = _summary(infos, records, failures, skipped_sources, time.time() - t0, cfg, workers, engine)
    summary["engine_by_source"] = engines
    pipeline._atomic_write_json(summary | {"units_failed": failures}, os.path.join(cfg.out, "_manifest", "run.json"))
    damaged = any(u.get("damage") for recs in records.values() for u in recs)
    code = 1 if failures or damaged else 0
    return summary, code


def _collect(executor, pending, recs, failures, progress, cfg, ident, finalizer):
    for fut in executor.wait_some(pending):
        spec = pending.pop(fut)
        try:
            rec = executor.result(fut)
        except BaseException as exc:  # noqa: BLE001
            rec = {"source": spec.source, "unit": spec.index, "failed": True, "error": repr(exc)}
        if rec.get("failed"):
            failures.append({k: rec[k] for k in ("source", "unit", "error")})
            finalizer.fail()
            continue
        rec["input"] = ident
        if "_held" not in rec:
            pipeline._atomic_write_json(rec, pipeline.unit_manifest_path(cfg.out, spec.source, spec.index))
        recs.append(rec)
        progress.add(rec)
        finalizer.add(rec)  # held units: final parts and record written here, in unit order
        while finalizer.failures:
            failures.append(finalizer.failures.pop())


def _remove_stale_parts(out: str, name: str, n_units: int) -> None:
    for table in ("games", "events"):
        for p in glob.glob(os.path.join(out, table, f"source={name}", "part-*.parquet")):
            k = int(os.path.basename(p)[5:11])
            if k >= n_units:
                os.remove(p)


def _summary(infos, records, failures, skipped, seconds, cfg, workers, engine) -> dict:
    import numba
    import pyarrow

    status: dict = {}
    rules: dict = {}
    events: dict = {}
    games = 0
    damage = []
    for recs in records.values():
        for r in recs:
            games += r["games"]
            for k, v in r["counts"]["status"].items():
                status[k] = status.get(k, 0) + v
            for k, v in r["counts"]["rules"].items():
                rules[k] = rules.get(k, 0) + v
            for k, v in r["counts"]["events"].items():
                events[k] = events.get(k, 0) + v
            damage += [f"{r['source']} unit {r['unit']}: {d}" for d in r.get("damage", [])]
    ok = status.get("ok", 0)
    return {
        "games": games, "ok": ok, "errors": games - ok, "status": dict(sorted(status.items())),
        "seconds": round(seconds, 3), "games_per_second": round(games / seconds, 1) if seconds else None,
        "rules": dict(sorted(rules.items())), "events": dict(sorted(events.items())),
        "inputs": [{"path": i.path, "source": i.name, "size": i.size, "mtime": i.mtime,
                    "compression": i.compression, "game_type": i.game_type} for i in infos],
        "sources_skipped_as_complete": skipped,
        "units": sum(len(v) for v in records.values()), "units_failed": [
            f"{f['source']} unit {f['unit']}: {f['error']}" for f in failures],
        "damage": damage, "editions": [e.id for e in cfg.editions],
        "draughts_editions": list(cfg.draughts_editions), "workers": workers, "engine": engine,
        "versions": {"analyzer": pipeline._version(), "python": platform.python_version(),
                     "numba": numba.__version__, "pyarrow": pyarrow.__version__},
        "out": cfg.out,
    }
