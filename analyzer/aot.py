"""Build the chess scan's kernels (`analyzer.kernels.ENTRIES`) ahead of time as extension
modules with numba.pycc, and load them without importing numba.

Why: a scan otherwise imports numba and loads its cached kernels, ~0.3 s of a 0.45 s start-up.
The built modules link only libc and libm and load in milliseconds. They are built on a
machine's first chess scan (`analyzer.warmup.ensure_compiled`), instead of the JIT compile and
in about its time, when a C compiler is there; without one, or if the build fails, the JIT
kernels run as before. They live beside numba's cache, in a folder named by the sources' hash,
the numpy and Python versions and the CPU they were built for, so an edit, an upgrade or another
machine sharing the cache never loads stale machine code. numba.pycc is pending deprecation (its
own warning, since 0.57): without it (or with `ANALYZER_KERNELS=jit`) only start-up is slower.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import shutil
import sys
import sysconfig
import time

log = logging.getLogger("analyzer")

# Two modules, built in parallel processes: the replay kernel alone takes about twice as long to
# compile as all the others together (26-38 s against 13-18 s from an empty cache here).
GROUPS: dict[str, tuple[str, ...]] = {
    "replay": ("replay_batch",),
    "scan": (
        "apply_rules",
        "game_facts",
        "apply_measures",
        "find_games",
        "parse_tags",
        "gather_strings",
        "parse_int_values",
        "dictionary_codes",
    ),
}
FAILED = "build-failed.txt"  # in the folder: why the last build failed (not retried until the sources change)


def _module_name(group: str) -> str:
    return f"analyzer_aot_{group}"


def _module_file(group: str) -> str:
    return _module_name(group) + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def folder() -> str | None:
    """Where the built modules of these sources, this numpy, this Python and this CPU are (or go)."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache:
        return None
    from analyzer._numba_env import source_stamp

    import numpy as np

    cpu = _cpu_tag(os.environ.get("NUMBA_CPU_NAME", ""))
    return os.path.join(cache, f"aot-{source_stamp()}-np{np.__version__}-{sys.implementation.cache_tag}-{cpu}")


@functools.cache  # a scan asks for folder() several times; the CPU does not change
def _cpu_tag(cpu_name: str) -> str:
    """The machine and a hash of its CPU's feature flags: the modules are built for this CPU
    (as numba's JIT cache is), and a cache folder shared by machines must not mix them. With
    NUMBA_CPU_NAME set (e.g. `generic`, to run under valgrind), that CPU."""
    import hashlib
    import platform

    if cpu_name:
        return platform.machine() + "-" + cpu_name

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features", "model name")):
                    flags += line
                    if line.startswith(("flags", "Features")):
                        break
    except OSError:
        pass
    return platform.machine() + ("-" + hashlib.sha1(flags.encode()).hexdigest()[:8] if flags else "")


def state() -> str:
    """'built', 'failed' (an earlier build failed: see FAILED in the folder) or 'absent'."""
    d = folder()
    if d is None:
        return "absent"
    if all(os.path.exists(os.path.join(d, _module_file(g))) for g in GROUPS):
        return "built"
    return "failed" if os.path.exists(os.path.join(d, FAILED)) else "absent"


def load() -> dict | None:
    """{entry name: built function}, or None if they are not built (or do not load)."""
    d = folder()
    if d is None or state() != "built":
        return None
    functions: dict = {}
    try:
        for group, names in GROUPS.items():
            name = _module_name(group)
            path = os.path.join(d, _module_file(group))
            module = sys.modules.get(name)
            if module is not None and os.path.realpath(getattr(module, "__file__", "")) != os.path.realpath(path):
                return None  # this process loaded another folder's build (another NUMBA_CACHE_DIR): not these
            if module is None:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    return None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[name] = module
            for entry in names:
                functions[entry] = getattr(module, entry)
    except (ImportError, OSError, AttributeError) as exc:
        log.warning("built kernels in %s do not load (%s); the JIT kernels run", d, exc)
        return None
    return functions


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
    import subprocess

    if compiler() is None:
        _failed(d, "no C compiler on the PATH (numba.pycc needs one)")
        return False
    t0 = time.time()
    procs = {
        g: python_process("import sys; from analyzer.aot import build_group; build_group(*sys.argv[1:])", g, d)
        for g in GROUPS
        if not os.path.exists(os.path.join(d, _module_file(g)))
    }
    try:
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        for p in procs.values():
            p.kill()
            p.wait()
        raise
    errors = []
    lasting = False  # a compile error (not a timeout or a signal): not retried for these sources
    for g, p in procs.items():
        try:
            _, err = p.communicate(timeout=max(1.0, timeout - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            errors.append(f"{g}: timed out after {timeout:.0f} s")
            continue
        if p.returncode != 0:
            lasting = lasting or p.returncode > 0
            errors.append(f"{g}: exit {p.returncode}: {err.decode('utf-8', 'replace')[-3000:]}")
    if errors:
        if lasting:
            _failed(d, "\n".join(errors))
        else:
            log.warning("building the kernels ahead of time stopped (%s); the JIT kernels run", errors[0][:200])
        return False
    log.info("built kernels in %.0f s (%s)", time.time() - t0, d)
    return state() == "built"


def python_process(code: str, *args: str):
    """A child of this interpreter running `code` with `args` (sys.argv[1:]); its stderr is
    kept for the error message. The compiles that run beside the main process."""
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


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

    from analyzer import kernels

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
                cc.export(entry, signature(entry))(kernels.jit_kernel(entry).py_func)
            cc.compile()
        os.replace(os.path.join(tmp, _module_file(group)), os.path.join(d, _module_file(group)))


def signature(entry: str):
    """The numba signature of kernels.ENTRIES[entry]."""
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    from analyzer import kernels

    _, _, ret, args = kernels.ENTRIES[entry]

    def one(s: str):
        if s == "none":
            return types.none
        if s.startswith("("):
            return types.Tuple(tuple(one(x) for x in s.strip("()").split(",")))
        _, dtype, ndim, contiguous, writable = kernels.parse_arg(s)
        if ndim == 0:
            return from_dtype(dtype)
        return types.Array(from_dtype(dtype), ndim, "C" if contiguous else "A", readonly=not writable)

    return one(ret)(*(one(a) for a in args.split()))
