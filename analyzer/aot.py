"""Where the chess scan's kernels built ahead of time are, and loading them without importing
numba (the build itself: analyzer.aot_build).

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

import functools
import importlib.util
import logging
import os
import sys
import sysconfig

log = logging.getLogger("analyzer")

# Two modules, built in parallel processes: the replay kernel alone takes about twice as long to
# compile as all the others together (26-38 s against 13-18 s from an empty cache here).
GROUPS: dict[str, tuple[str, ...]] = {
    "replay": ("replay_batch", "boards_at"),
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
