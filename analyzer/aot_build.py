"""Build the chess scan's kernels (every `analyzer.kernels.Kernel` in ENTRIES) ahead of time
as extension modules with numba.pycc, into the folders analyzer.aot locates and loads.

The kernels are declared beside the packages that own them (analyzer.pgn.kernels,
analyzer.kinds.chess.kernels, analyzer.measures_kernels); this module gathers them, the one
place that knows them all, and is imported only to build (a first run, a wheel, the tests).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import time

from analyzer import measures_kernels
from analyzer.aot import FAILED, GROUPS, MANIFEST, _module_file, _module_name, folder, portable_cpus, state
from analyzer.kernels import Kernel, parse_arg
from analyzer.kinds.chess import kernels as chess_kernels
from analyzer.pgn import kernels as pgn_kernels

log = logging.getLogger("analyzer")

# Every kernel built ahead of time, by name (GROUPS says which module holds which).
ENTRIES: dict[str, Kernel] = {k.name: k for m in (pgn_kernels, chess_kernels, measures_kernels) for k in m.ALL}


def compiler() -> str | None:
    """The C compiler pycc would use (the CC variable, else cc or gcc on the PATH), or None."""
    cc = os.environ.get("CC", "").split()
    if cc:
        return shutil.which(cc[0])
    return shutil.which("cc") or shutil.which("gcc")


def build(timeout: float = 600.0, meanwhile=None) -> bool:
    """Build every group, each in its own process (in parallel), into folder(); True if all
    are built. Without them the JIT kernels run. A compile error (or no compiler) is logged and
    written to FAILED in the folder, and not retried for these sources; a build that timed out
    or was killed by a signal is tried again by the next run. `meanwhile()` runs in this
    process while the build processes do. Another run building the same folder is waited for
    (a lock in the folder), and its modules used."""
    d = folder()
    if d is None:
        return False
    if state() == "built":
        return True
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as exc:  # a read-only NUMBA_CACHE_DIR given by the caller
        log.warning("cannot build the kernels ahead of time in %s (%s); the JIT kernels run", d, exc)
        return False
    with _build_lock(d):
        now = state()
        if now != "absent":  # another run built them meanwhile, or its build failed
            if meanwhile is not None:
                meanwhile()
            return now == "built"
        return _build_unlocked(d, timeout, meanwhile)


@contextlib.contextmanager
def _build_lock(d: str):
    """Hold an advisory lock on d/.build.lock (released by the kernel however its holder ends),
    waiting for another holder: two first runs on one machine build once."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, at worst two builds of the same files
        yield
        return
    fd = os.open(os.path.join(d, ".build.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("another analyzer run is building the kernels in %s; waiting for it", d)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _build_unlocked(d: str, timeout: float, meanwhile) -> bool:
    if compiler() is None:
        _failed(d, "no C compiler on the PATH (numba.pycc needs one)")
        return False
    t0 = time.time()
    missing = [g for g in GROUPS if not os.path.exists(os.path.join(d, _module_file(g)))]
    procs = {g: python_process(_BUILD_GROUP, g, d) for g in missing}
    try:
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        for p in procs.values():
            p.kill()
            p.wait()
        raise
    errors, lasting = _wait_groups(procs, t0, timeout)  # lasting: not retried for these sources
    if errors:
        if lasting:
            _failed(d, "\n".join(errors))
        else:
            log.warning("building the kernels ahead of time stopped (%s); the JIT kernels run", errors[0][:200])
        return False
    log.info("built kernels in %.0f s (%s)", time.time() - t0, d)
    return state() == "built"


_BUILD_GROUP = "import sys; from analyzer.aot_build import build_group; build_group(*sys.argv[1:])"


def _wait_groups(procs: dict, t0: float, timeout: float, label: str = "") -> tuple[list[str], bool]:
    """Wait for each group's build process (killed at `timeout` seconds after t0): its errors,
    and whether one is a compile error (an exit > 0), not a timeout or a signal."""
    import subprocess

    errors = []
    lasting = False
    for g, p in procs.items():
        try:
            _, err = p.communicate(timeout=max(1.0, timeout - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            errors.append(f"{g}{label}: timed out after {timeout:.0f} s")
            continue
        if p.returncode != 0:
            lasting = lasting or p.returncode > 0
            errors.append(f"{g}{label}: exit {p.returncode}: {err.decode('utf-8', 'replace')[-3000:]}")
    return errors, lasting


def python_process(code: str, *args: str, env: dict | None = None):
    """A child of this interpreter running `code` with `args` (sys.argv[1:]); its stderr is
    kept for the error message. The compiles that run beside the main process."""
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def build_for_cpu(d: str, cpu: str, timeout: float = 1800.0) -> float:
    """Build every group for the LLVM CPU `cpu` (e.g. x86-64-v2, a portable target; `host`: this
    machine's, as a first run builds them) into folder `d`, each group in its own process;
    returns the seconds it took, raises RuntimeError with the build's stderr if a group fails.
    For the wheel's portable modules and the benchmarks.

    numba's JIT compiles the callees that pycc links into the module: here it compiles them
    for `cpu` with no features of this machine's CPU added (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES
    empty), into a cache of its own, so no instruction of this CPU ends up in the module."""
    import tempfile

    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="analyzer-aot-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        env.pop("NUMBA_CPU_NAME", None)
        env.pop("NUMBA_CPU_FEATURES", None)
        if cpu != "host":  # host: as a first run builds them, for this CPU and its features
            env.update(NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="")
        procs = {g: python_process(_BUILD_GROUP, g, d, env=env) for g in GROUPS}
        errors, _ = _wait_groups(procs, t0, timeout, label=f" for {cpu}")
    if errors:
        raise RuntimeError("\n".join(errors))
    return time.time() - t0


def _failed(d: str, why: str) -> None:
    log.warning("could not build the kernels ahead of time (%s); the JIT kernels run", why.splitlines()[0][:200])
    try:
        with open(os.path.join(d, FAILED), "w") as fh:
            fh.write(why + "\n")
    except OSError:
        pass


def build_group(group: str, d: str) -> None:
    """(In a build process.) Compile GROUPS[group] with numba.pycc into folder `d` (the
    caller's folder(): named by the sources the caller loaded), atomically: the module is
    written to a temporary folder, then renamed into place."""
    import tempfile
    import warnings

    import numba.pycc.compiler as pycc_compiler
    from numba.pycc import CC

    os.makedirs(d, exist_ok=True)

    compile_extra = pycc_compiler.compile_extra

    def compile_one(typingctx, targetctx, func, args, return_type, flags, *rest, **kwargs):
        """Each entry with its own copy of pycc's flags (compiling one can switch off SSA in
        them, and the next then fails to type), and without the GIL: the JIT kernels are
        nogil (the scan's threads run them in parallel), pycc's wrappers hold it by default."""
        flags = flags.copy()
        flags.release_gil = True
        return compile_extra(typingctx, targetctx, func, args, return_type, flags, *rest, **kwargs)

    pycc_compiler.compile_extra = compile_one  # this build process only
    name = _module_name(group)
    with tempfile.TemporaryDirectory(dir=d, prefix=f".build-{group}-") as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pycc's pending-deprecation warning
            cc = CC(name)
            cc.output_dir = tmp
            cc.verbose = False
            # As the JIT compiles: for this CPU, or NUMBA_CPU_NAME (pycc's default is the arch's generic CPU)
            cc.target_cpu = os.environ.get("NUMBA_CPU_NAME") or "host"
            for entry in GROUPS[group]:
                cc.export(entry, signature(entry))(ENTRIES[entry].jit().py_func)
            cc.compile()
        os.replace(os.path.join(tmp, _module_file(group)), os.path.join(d, _module_file(group)))


def signature(entry: str):
    """The numba signature of ENTRIES[entry]."""
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    ret, args = ENTRIES[entry].returns, ENTRIES[entry].arguments

    def one(s: str):
        if s == "none":
            return types.none
        if s.startswith("("):
            return types.Tuple(tuple(one(x) for x in s.strip("()").split(",")))
        _, dtype, ndim, contiguous, writable = parse_arg(s)
        if ndim == 0:
            return from_dtype(dtype)
        return types.Array(from_dtype(dtype), ndim, "C" if contiguous else "A", readonly=not writable)

    return one(ret)(*(one(a) for a in args.split()))


def build_portable(dest: str, cpus: tuple[str, ...] | None = None) -> dict:
    """(The wheel's build.) Both modules for each portable target into dest/<cpu>/, and
    dest/MANIFEST; returns the manifest."""
    import json
    import platform

    from analyzer._numba_env import source_stamp

    import numpy as np

    cpus = cpus or portable_cpus()
    seconds = {}
    for cpu in cpus:
        seconds[cpu] = round(build_for_cpu(os.path.join(dest, cpu), cpu), 1)
        log.warning("built the chess kernels for %s in %.0f s", cpu, seconds[cpu])
    manifest = {
        "source_stamp": source_stamp(),
        "python": sys.implementation.cache_tag,
        "machine": platform.machine(),
        "numpy": np.__version__,
        "cpus": list(cpus),
        "build_seconds": seconds,
    }
    with open(os.path.join(dest, MANIFEST), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    return manifest
