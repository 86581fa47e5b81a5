"""Executing a source's units: one interface, `run_source`, behind which the units run
in-process, in worker threads, in a spawned process pool, on a Dask cluster, or (pzstd inputs
on Linux) in forked worker processes that write their own parts (engine.forked).

Every executor gets the units (a list, or the sequential reader's generator), a `reuse`
function that returns the record of a unit finished by an earlier run (or None), and reports
each finished unit to `progress`. It returns the records of this run and the failed units."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Executor, wait

from analyzer.engine import forked
from analyzer.engine.config import Config, UnitSpec
from analyzer.engine.dataset import UnitRecord
from analyzer.engine.numbering import OrderedFinalizer
from analyzer.engine.unit import run_unit_safe, run_unit_with_payload
from analyzer.errors import RunError

Reuse = Callable[[UnitSpec], "UnitRecord | None"]


class Job:
    """A source's units on their way through an executor, and what came back."""

    finalizer: OrderedFinalizer | None = None  # set by PoolExecutor.run_sources (not for forked jobs)

    def __init__(
        self, source: str, units: Iterable[UnitSpec], reuse: Reuse, ident: dict, frames: bool = False, plan=None
    ):
        self.source = source
        self.units = units
        self.reuse = reuse
        self.ident = ident
        self.frames = frames
        self.plan = plan
        self.records: list[dict] = []  # of this run
        self.failures: list[dict] = []
        self.n_units = 0
        self.running = 0
        self.planned = False
        self.engine: str | None = None
        self.index = 0  # the source's position in the run (engine.scan)
        self.digest: dict = {}  # "sha256" of the input, once its reader has read it to the end

    @property
    def finalizing(self) -> OrderedFinalizer:
        """The finalizer of a job that PoolExecutor.run_sources runs."""
        assert self.finalizer is not None
        return self.finalizer

    @property
    def streamed(self) -> list:
        """File entries of the groups its held units were written into (engine.compact.GroupStream)."""
        return self.finalizer.streamed if self.finalizer is not None else []


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class PoolExecutor:
    """inline (one worker), threads, processes (spawned pool) or dask: submit units, collect
    their records in any order. In-process kinds hand the tables back in memory and the final
    parts are written once, in unit order (OrderedFinalizer); the others stage their parts."""

    def __init__(self, kind: str, workers: int, scheduler: str | None = None):
        self.kind = kind
        self.client = None
        self.pool: Executor | None = None
        if kind == "dask":
            self.client = _dask_client(workers, scheduler)
        elif kind == "processes":
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
        elif kind == "threads":
            # The kernels release the GIL, units need no pickling and every worker shares the
            # compiled kernels (a process pool pays start-up and loading per worker).
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analyzer-unit")
        self.capacity = max(workers, 1) * 2
        if self.client is not None:  # a cluster: as many units queued as it has threads, twice
            try:
                self.capacity = max(self.capacity, 2 * sum(self.client.nthreads().values()))
            except Exception:  # noqa: BLE001
                pass
        self.hold = kind in ("inline", "threads")
        # Units described (byte ranges), not carried as text, where they go to other processes.
        self.describe = kind in ("processes", "dask")

    def engine_for(self, frames: bool, progress=None) -> str:
        return self.kind

    def _submit(self, spec: UnitSpec, cfg: Config):
        if self.client is not None:
            if spec.payload is not None:
                # Text of a compressed single-stream input, cut here: sent to a worker directly
                # (scatter), not through the scheduler's task graph.
                payload = self.client.scatter(spec.payload, hash=False)
                spec = dataclasses.replace(spec, payload=None)
                return self.client.submit(run_unit_with_payload, spec, cfg, payload, pure=False)
            return self.client.submit(run_unit_safe, spec, cfg, pure=False)
        if self.pool is not None:
            return self.pool.submit(run_unit_safe, spec, cfg, self.hold)
        return _Done(run_unit_safe(spec, cfg, self.hold))

    def _wait_some(self, futures):
        if self.client is not None:
            from dask.distributed import wait as dwait

            return dwait(list(futures), return_when="FIRST_COMPLETED").done
        if self.pool is not None:
            return wait(list(futures), return_when=FIRST_COMPLETED)[0]
        return set(futures)

    def run_source(
        self, source: str, units: Iterable[UnitSpec], reuse: Reuse, cfg: Config, ident: dict, progress
    ) -> tuple[list[dict], list[dict], int]:
        job = Job(source, units, reuse, ident)
        self.run_sources([job], cfg, progress)
        return job.records, job.failures, job.n_units

    def run_sources(self, jobs: list[Job], cfg: Config, progress, on_done=None) -> None:
        """Run the units of every job (source) through one queue: the next source's units are
        submitted while the last ones of the source before are still running, so the workers
        stay busy across sources. `on_done(job)` is called (in this thread) as soon as all of a
        job's units are analyzed without failure; it finalizes the source."""
        pending: dict = {}  # future -> (job, spec)
        for job in jobs:
            job.finalizer = OrderedFinalizer(cfg.dataset, job.source, cfg.compact_games)

        def finish(job) -> None:
            job.finalizing.close()  # the group being written, if any
            while job.finalizing.failures:
                job.failures.append(job.finalizing.failures.pop())
            if job.failures:
                job.finalizing.spill()
            elif on_done is not None:
                on_done(job)

        def collect() -> None:
            for fut in self._wait_some(pending):
                job, spec = pending.pop(fut)
                job.running -= 1
                try:
                    rec = fut.result()
                except BaseException as exc:  # noqa: BLE001
                    rec = {"source": spec.source, "unit": spec.index, "failed": True, "error": repr(exc)}
                if rec.get("failed"):
                    job.failures.append({k: rec[k] for k in ("source", "unit", "error")})
                    job.finalizing.fail()
                else:
                    rec["input"] = job.ident
                    if "_held" not in rec:
                        cfg.dataset.write_unit_record(rec)
                    job.records.append(rec)
                    progress.unit_done(rec)
                    job.finalizing.add(rec)  # held units: final parts and record written here, in unit order
                    while job.finalizing.failures:
                        job.failures.append(job.finalizing.failures.pop())
                if job.planned and job.running == 0:
                    finish(job)

        for job in jobs:
            for spec in job.units:
                job.n_units += 1
                progress.unit_planned(spec)
                done = job.reuse(spec)
                if done is not None:
                    progress.unit_reused(done)
                    job.finalizing.add(done)
                    continue
                while len(pending) >= self.capacity:
                    collect()
                pending[self._submit(spec, cfg)] = (job, spec)
                job.running += 1
            job.planned = True
            if job.running == 0:
                finish(job)
            elif self.kind == "inline":
                # One worker gains nothing from overlap: finish the source before reading the
                # next one (as before the shared queue).
                while job.running:
                    collect()
        while pending:
            collect()

    def run_all(self, fn, items: list[tuple]) -> list:
        """fn(*item) for every item, on this executor's workers (Dask: ahead of queued units),
        in order of results = order of items; raises the first error."""
        if self.client is not None:
            futs = [self.client.submit(fn, *item, pure=False, priority=10) for item in items]
            return self.client.gather(futs)
        if self.pool is not None and self.kind == "threads":
            return list(self.pool.map(lambda item: fn(*item), items))
        return [fn(*item) for item in items]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        if self.client is not None:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()


def _dask_client(workers: int, scheduler: str | None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RunError(
            "the Dask engine needs the optional dependency: pip install 'draw-rule-analyzer[dask]'"
        ) from None
    if scheduler:
        try:
            return Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise RunError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster)


class LocalExecutor:
    """The default engine: pzstd sources in forked worker processes where that works (Linux,
    several workers, no other thread in the process), everything else in worker threads (or
    inline with one worker)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.pool = PoolExecutor("inline" if workers <= 1 else "threads", workers)
        self.kind = self.pool.kind

    def engine_for(self, frames: bool, progress=None) -> str:
        return "forked" if frames and forked.available(self.workers, progress) else self.pool.kind

    @property
    def describe(self) -> bool:
        return False

    def run_source(self, source, units, reuse, cfg, ident, progress):
        if (
            isinstance(units, list)
            and units
            and (units[0].frames is not None or units[0].row_groups is not None)
            and forked.available(self.workers, progress)
        ):
            return forked.run_frame_units(units, reuse, cfg, self.workers, ident, progress)
        return self.pool.run_source(source, units, reuse, cfg, ident, progress)

    def run_sources(self, jobs, cfg, progress, on_done=None) -> None:
        """pzstd sources one after another in forked children (where available), the others
        together through the thread pool."""
        rest = []
        for job in jobs:
            if job.frames and isinstance(job.units, list) and job.units and forked.available(self.workers, progress):
                job.engine = "forked"
                job.records, job.failures, job.n_units = forked.run_frame_units(
                    job.units, job.reuse, cfg, self.workers, job.ident, progress
                )
                if not job.failures and on_done is not None:
                    on_done(job)
            else:
                rest.append(job)
        if rest:
            self.pool.run_sources(rest, cfg, progress, on_done)

    def run_all(self, fn, items):
        return self.pool.run_all(fn, items)

    def close(self) -> None:
        self.pool.close()


def make_executor(engine: str, workers: int, scheduler: str | None = None):
    if scheduler or engine == "dask":
        return PoolExecutor("dask", workers, scheduler)
    if engine == "local":
        return LocalExecutor(workers)
    return PoolExecutor(engine, workers)
