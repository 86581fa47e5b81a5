"""pzstd frame units in forked worker processes that write their own final parts.

Worker threads share one GIL: between their kernels each runs Python (Arrow assembly, counts),
and every hand-over of the GIL can leave a core idle (measured: 4% of a worker's time, more
with the Parquet writes of the main thread). Forked children share nothing at run time. Each
analyzes the units the parent sends it (by index: the unit list is inherited with the fork),
holds their tables, and writes a unit's final parts itself once the parent sends the unit's
game and text base, which are known as soon as every earlier unit has been analyzed. Only unit
indexes, records and those bases cross the pipes.

Used by `executors.LocalExecutor` for pzstd inputs with several local workers on Linux, when the process
has no other thread (forking a threaded process can leave locks held in the child).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from multiprocessing.connection import Connection, Pipe, wait

from analyzer.engine.numbering import Numbering, stage_unit, write_final
from analyzer.engine.unit import run_unit_safe


def available(workers: int, progress=None) -> bool:
    """Forked workers can run: Linux, several workers, and no thread in this process but the
    main one and the progress timer (which run_frame_units pauses while it forks)."""
    others = progress.thread_count() if progress is not None else 0
    return workers > 1 and sys.platform.startswith("linux") and threading.active_count() - others == 1


class _Child:
    def __init__(self, pid: int, conn: Connection):
        self.pid = pid
        self.conn = conn
        self.units: list[int] = []  # sent, not yet reported analyzed
        self.held: set[int] = set()  # analyzed, tables held, no write order sent yet
        self.writing: set[int] = set()  # write order sent, not yet acknowledged


def _child_main(conn, specs, cfg) -> None:
    """Messages in: ("unit", k), ("final", record, game_base, text_start), ("staging",
    record), ("stop",). Out: ("done", record), ("written", k, error or None)."""
    held: dict[int, tuple] = {}
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "unit":
                rec = run_unit_safe(specs[msg[1]], cfg, True)
                if "_held" in rec:
                    held[rec["unit"]] = rec.pop("_held")
                conn.send(("done", rec))
            elif msg[0] in ("final", "staging"):
                rec = msg[1]
                parts = held.pop(rec["unit"])
                error = None
                try:
                    if msg[0] == "final":
                        write_final(cfg.dataset, rec, parts, msg[2], msg[3])
                    else:
                        stage_unit(cfg.dataset, rec, parts)
                except Exception as exc:  # noqa: BLE001 - e.g. disk full: a failed unit, the run goes on
                    error = f"{type(exc).__name__}: {exc}"
                conn.send(("written", rec["unit"], error))
            else:
                return
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the parent is gone or interrupted: it reruns whatever is not written


def _die_with(parent: int) -> None:
    """Have the kernel kill this child when the parent dies (kill -9 included): otherwise a
    child in the middle of a unit would finish it before it notices the closed pipe (measured:
    39 of 78 kills left a worker alive 0.3 s later)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)


def run_frame_units(specs: list, reuse, cfg, workers: int, ident: dict, progress) -> tuple[list, list, int]:
    """Analyze the frame units `specs` of a source in `workers` forked children (`reuse(spec)`:
    the record of a unit finished by an earlier run, or None). Returns (records of this run,
    failures, number of units)."""
    source = specs[0].source
    done = {}
    for spec in specs:
        progress.unit_planned(spec)
        rec = reuse(spec)
        if rec is not None:
            done[spec.index] = rec
            progress.unit_reused(rec)
    todo = [s.index for s in specs if s.index not in done]
    children: list[_Child] = []
    pause = getattr(progress, "pause", None)
    if pause is not None:
        pause()  # no other thread while forking
    try:
        for _ in range(workers):
            parent_end, child_end = Pipe()
            parent = os.getpid()
            pid = os.fork()
            if pid == 0:  # the child: never returns into the parent's code
                code = 0
                try:
                    _die_with(parent)
                    # Only the parent may hold the parent ends: a child keeping a sibling's
                    # open would stop that sibling from seeing the parent exit.
                    for end in [parent_end] + [c.conn for c in children]:
                        end.close()
                    _child_main(child_end, specs, cfg)
                except BaseException:  # noqa: BLE001
                    code = 1
                finally:
                    os._exit(code)
            child_end.close()
            children.append(_Child(pid, parent_end))
        if pause is not None:
            progress.resume()
        records, failures = _drive(children, todo, done, ident, progress, source, workers)
        return records, failures, len(specs)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM, SIGHUP) or failed: the children stop now, not after
        # their current unit; their temporary files are removed by the caller (Dataset.clean_temp).
        for c in children:
            try:
                os.kill(c.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise
    finally:
        if pause is not None:
            progress.resume()
        for c in children:
            try:
                c.conn.send(("stop",))
            except OSError:
                pass
            c.conn.close()
        for c in children:
            try:
                os.waitpid(c.pid, 0)
            except ChildProcessError:
                pass


def _drive(children, todo, done, ident, progress, source, workers):
    queue = list(todo)
    queue.reverse()  # pop() gives the lowest index first
    records: dict[int, dict] = dict(done)  # unit -> record (analyzed, this run or earlier)
    owner: dict[int, _Child] = {}
    this_run: list[dict] = []
    failures: list[dict] = []
    numbering = Numbering()  # units before numbering.next_unit have their bases
    broken = False  # a unit failed: later units go to staging
    window = 4 * workers  # units analyzed ahead of the numbering, at most

    def send(c: _Child, msg: tuple) -> None:
        try:
            c.conn.send(msg)
        except OSError:  # the child is gone: its end reads as EOF below, and its units fail
            pass

    def dispatch(c: _Child) -> None:
        while queue and len(c.units) < 2 and (broken or queue[-1] < numbering.next_unit + window):
            k = queue.pop()
            c.units.append(k)
            owner[k] = c
            send(c, ("unit", k))

    def order(k: int, what: tuple) -> None:
        c = owner[k]
        c.held.discard(k)
        c.writing.add(k)
        send(c, what)

    def advance() -> None:
        if broken:
            return
        for rec, game_base, start in numbering.ready():
            k = rec["unit"]
            if k in owner and k in owner[k].held:
                order(k, ("final", rec, game_base, start))

    def spill() -> None:
        for c in children:
            for k in sorted(c.held):
                order(k, ("staging", records[k]))

    def lost(c: _Child, why: str) -> None:
        nonlocal broken
        for k in sorted(set(c.units) | c.held | c.writing):
            failures.append({"source": source, "unit": k, "error": why, "games": records.get(k, {}).get("games")})
        c.units, c.held, c.writing = [], set(), set()
        broken = True
        spill()

    # Units finished by an earlier run count for the numbering before anything is sent: the
    # window is measured from the first unit without its bases, which may be far along.
    for rec in done.values():
        numbering.add(rec)
    advance()
    for c in children:
        dispatch(c)
    live = {c.conn: c for c in children}
    while live and (queue or any(c.units or c.held or c.writing for c in live.values())):
        for conn in wait(list(live)):
            c = live[conn]
            try:
                msg = c.conn.recv()  # = conn.recv(); wait() is typed as returning connections, sockets or fds
            except (EOFError, OSError):
                del live[conn]
                lost(c, "worker process exited unexpectedly")
                continue
            if msg[0] == "done":
                rec = msg[1]
                k = rec["unit"]
                c.units.remove(k)
                if rec.get("failed"):
                    failures.append({key: rec[key] for key in ("source", "unit", "error")})
                    broken = True
                    spill()
                else:
                    rec["input"] = ident
                    records[k] = rec
                    this_run.append(rec)
                    progress.unit_done(rec)
                    c.held.add(k)
                    if broken:
                        order(k, ("staging", rec))
                    else:
                        numbering.add(rec)
                    advance()
            else:  # ("written", k, error)
                k, error = msg[1], msg[2]
                c.writing.discard(k)
                if error:
                    failures.append({"source": source, "unit": k, "error": error, "games": records[k]["games"]})
                    broken = True
                    spill()
            for d in live.values():
                dispatch(d)
    if queue:  # every worker died: what was never sent failed too
        failures += [
            {"source": source, "unit": k, "error": "not analyzed: no worker process left"} for k in reversed(queue)
        ]
    return this_run, failures
