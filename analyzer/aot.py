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

A wheel carries the same modules built for portable targets (PORTABLE_TARGETS, in analyzer/_aot/,
built by build_backend/analyzer_build.py): where this machine has no build of its own, they load
instead (no compile, no compiler needed); a machine's own build is preferred when there is one.
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
        "first_insufficient",
        "dead_candidates",
        "classify_batch",
        "certificate_texts",
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
    """{entry name: built function}: this machine's build (folder()) when there is one, else
    the wheel's portable build for this CPU (portable_folder()); None if neither loads."""
    d = folder()
    for where in ([d] if d is not None and state() == "built" else []) + [portable_folder()]:
        if where is not None:
            functions = _load_from(where)
            if functions is not None:
                _LOADED_FROM["folder"] = where
                return functions
    return None


_LOADED_FROM: dict[str, str] = {}  # "folder": where the modules this process uses were loaded from


def loaded_portable() -> str | None:
    """The portable CPU (e.g. x86-64-v3) if the modules in use are the wheel's, else None."""
    where = _LOADED_FROM.get("folder")
    if where is None or os.path.dirname(where) != PORTABLE:
        return None
    return os.path.basename(where)


def _load_from(d: str) -> dict | None:
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


# -- The wheel's portable build ------------------------------------------------------------------
#
# A wheel (`python -m build --wheel`, build_backend/analyzer_build.py) carries both modules built
# for portable targets in analyzer/_aot/<cpu>/, with MANIFEST naming the sources, Python and
# machine they were built for. A machine without a host build (first run, no C compiler) loads
# the best of them its CPU runs. x86-64 levels, best first, with the /proc/cpuinfo flags each
# needs beyond the one before (x86-64-v2: SSE4.2 and POPCNT; v3: AVX2, BMI, FMA, MOVBE...).
PORTABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_aot")
MANIFEST = "manifest.json"
X86_64_LEVELS: dict[str, tuple[str, ...]] = {
    "x86-64-v3": ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"),
    "x86-64-v2": ("cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"),
    "x86-64": (),
}


def portable_cpus(machine: str | None = None) -> tuple[str, ...]:
    """The targets a wheel is built for on `machine` (default: this one), best first."""
    import platform

    machine = machine or platform.machine()
    if machine in ("x86_64", "AMD64"):
        return PORTABLE_TARGETS
    return ("generic",)  # the architecture's baseline (e.g. armv8-a)


# The x86-64 targets a wheel carries. benchmarks/aot_portable.py (RESULTS.md, 2026-12-02) against the
# host build (an AVX-512 Xeon): replay 1.018x (v3), 1.023x (v2), 1.024x (x86-64) the host's CPU time,
# a whole analysis within 1.6 % for all three: v3 gains nothing over v2, which runs on every x86-64
# CPU since 2009; the baseline serves the rest (e.g. QEMU's default qemu64 CPU, which lacks SSE4.2).
PORTABLE_TARGETS: tuple[str, ...] = ("x86-64-v2", "x86-64")


def runs_here(cpu: str, flags: frozenset[str] | None = None) -> bool:
    """Whether this CPU (its /proc/cpuinfo flags) runs code built for `cpu`."""
    if cpu not in X86_64_LEVELS:
        return cpu == "generic"
    flags = _cpu_flags() if flags is None else flags
    levels = list(X86_64_LEVELS)
    needed = [f for level in levels[levels.index(cpu) :] for f in X86_64_LEVELS[level]]
    return all(f in flags for f in needed)


@functools.cache
def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def portable_folder(base: str | None = None) -> str | None:
    """The folder of the wheel's modules this process can use: built from these sources, for
    this Python and machine, for the best target this CPU runs; None otherwise (an editable
    install has none), or when NUMBA_CPU_NAME chooses another CPU."""
    import json
    import platform

    from analyzer._numba_env import source_stamp

    base = base or PORTABLE
    if os.environ.get("NUMBA_CPU_NAME"):
        return None
    try:
        with open(os.path.join(base, MANIFEST), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return None
    if (
        manifest.get("source_stamp") != source_stamp()
        or manifest.get("python") != sys.implementation.cache_tag
        or manifest.get("machine") != platform.machine()
    ):
        return None
    for cpu in manifest.get("cpus", []):
        d = os.path.join(base, cpu)
        if runs_here(cpu) and all(os.path.exists(os.path.join(d, _module_file(g))) for g in GROUPS):
            return d
    return None


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


_BUILD_GROUP = "import sys; from analyzer.aot import build_group; build_group(*sys.argv[1:])"


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
