"""Executing a source's units: one interface, `run_source`, behind which the units run
in-process, in worker threads, in a spawned process pool, on a Dask cluster, or (pzstd inputs
on Linux) in forked worker processes that write their own parts (engine.forked).

Every executor gets the units (a list, or the sequential reader's generator), a `reuse`
function that returns the record of a unit finished by an earlier run (or None), and reports
each finished unit to `progress`. It returns the records of this run and the failed units."""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, wait
from typing import Callable, Iterable

from analyzer.engine import forked
from analyzer.engine.config import Config, UnitSpec
from analyzer.engine.numbering import OrderedFinalizer
from analyzer.engine.parts import write_json
from analyzer.engine import layout
from analyzer.engine.unit import run_unit_safe


class RunError(Exception):
    """A problem with the run as a whole (bad output directory, unreachable scheduler, ...):
    a message for the user (exit 2)."""


Reuse = Callable[[UnitSpec], "dict | None"]


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
        self.pool = None
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
        self.hold = kind in ("inline", "threads")

    def engine_for(self, frames: bool) -> str:
        return self.kind

    def _submit(self, spec: UnitSpec, cfg: Config):
        if self.client is not None:
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

    def run_source(self, source: str, units: Iterable[UnitSpec], reuse: Reuse, cfg: Config,
                   ident: dict, progress) -> tuple[list[dict], list[dict], int]:
        finalizer = OrderedFinalizer(cfg.out, source)
        records: list[dict] = []
        failures: list[dict] = []
        pending: dict = {}
        n_units = 0

        def collect() -> None:
            for fut in self._wait_some(pending):
                spec = pending.pop(fut)
                try:
                    rec = fut.result()
                except BaseException as exc:  # noqa: BLE001
                    rec = {"source": spec.source, "unit": spec.index, "failed": True, "error": repr(exc)}
                if rec.get("failed"):
                    failures.append({k: rec[k] for k in ("source", "unit", "error")})
                    finalizer.fail()
                    continue
                rec["input"] = ident
                if "_held" not in rec:
                    write_json(rec, layout.unit_record_path(cfg.out, spec.source, spec.index))
                records.append(rec)
                progress.unit_done(rec)
                finalizer.add(rec)  # held units: final parts and record written here, in unit order
                while finalizer.failures:
                    failures.append(finalizer.failures.pop())

        for spec in units:
            n_units += 1
            progress.unit_planned(spec)
            done = reuse(spec)
            if done is not None:
                progress.unit_reused(done)
                finalizer.add(done)
                continue
            while len(pending) >= self.capacity:
                collect()
            pending[self._submit(spec, cfg)] = spec
        while pending:
            collect()
        if failures:
            finalizer.spill()
        return records, failures, n_units

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
        raise RunError("the Dask engine needs the optional dependency: pip install 'analyzer[dask]'") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise RunError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster)


class LocalExecutor:
    """The default engine: pzstd sources in forked worker processes where that works (Linux,
    several workers, no other thread in the process), everything else in worker threads (or
    inline with one worker)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.pool = PoolExecutor("inline" if workers <= 1 else "threads", workers)
        self.kind = self.pool.kind

    def engine_for(self, frames: bool) -> str:
        return "forked" if frames and forked.available(self.workers) else self.pool.kind

    def run_source(self, source, units, reuse, cfg, ident, progress):
        if isinstance(units, list) and units and units[0].frames is not None and forked.available(self.workers):
            return forked.run_frame_units(units, reuse, cfg, self.workers, ident, progress)
        return self.pool.run_source(source, units, reuse, cfg, ident, progress)

    def close(self) -> None:
        self.pool.close()


def make_executor(engine: str, workers: int, scheduler: str | None = None):
    if scheduler or engine == "dask":
        return PoolExecutor("dask", workers, scheduler)
    if engine == "local":
        return LocalExecutor(workers)
    return PoolExecutor(engine, workers)
