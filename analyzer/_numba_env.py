"""Point numba's on-disk cache at a writable place before any kernel module is imported.

`@njit(cache=True)` writes next to the source file by default; from a read-only install that
fails at import. We default NUMBA_CACHE_DIR to the user cache (XDG) unless the caller set it,
in a subdirectory named by a hash of the package's sources: numba keys a cached kernel on its
own file only, so an edit of a helper module (e.g. `_board.py`, inlined into `_replay.py`)
would otherwise leave stale machine code in use.
Import this module first in every module that defines kernels.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "analyzer", "numba")


# Pure-Python orchestration that no kernel imports: editing it must not throw away a minute of
# compiled kernels. Everything else (kernel modules and the constants they import) is hashed.
_NOT_KERNEL_CODE = ("engine", "io", "report", "cli.py", "api.py", "__main__.py", "warmup.py", "report.py")


def _source_stamp() -> str:
    """Hash of the package's .py files that kernels are compiled from (~1 ms)."""
    digest = hashlib.sha1()
    root = os.path.dirname(os.path.abspath(__file__))
    for dirpath, dirnames, files in os.walk(root):
        if dirpath == root:
            dirnames[:] = [d for d in dirnames if d not in _NOT_KERNEL_CODE]
        dirnames.sort()
        for name in sorted(files):
            if dirpath == root and name in _NOT_KERNEL_CODE:
                continue
            if name.endswith(".py"):
                digest.update(name.encode())
                with open(os.path.join(dirpath, name), "rb") as fh:
                    digest.update(fh.read())
    return digest.hexdigest()[:16]


# A cache folder of other sources (an older version, another checkout) not used for this long
# is removed when a new one is made: each holds 15-30 MB of machine code, and a developer's
# cache had grown to 46 folders (676 MB). A folder in use is touched at every start.
STALE_CACHE_DAYS = 30


def prune_stale(base: str, keep: str, max_age_days: float = STALE_CACHE_DAYS) -> list[str]:
    """Remove the source-stamp folders under `base` (16 hex digits, as _source_stamp names
    them; nothing else is touched) other than `keep` not used for `max_age_days`. Returns what
    was removed. Best effort: a folder another process removes or uses meanwhile is skipped."""
    import shutil
    import time

    removed: list[str] = []
    cutoff = time.time() - max_age_days * 86400
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        if name == keep or len(name) != 16 or any(c not in "0123456789abcdef" for c in name):
            continue
        path = os.path.join(base, name)
        try:
            if os.path.islink(path) or not os.path.isdir(path) or os.stat(path).st_mtime >= cutoff:
                continue
            shutil.rmtree(path)
        except OSError:
            continue
        removed.append(path)
    return removed


@functools.cache
def source_stamp() -> str:
    """_source_stamp(), computed once per process."""
    return _source_stamp()


def _ensure_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    stamp = source_stamp()
    for base in (_default_cache_dir(), os.path.join(tempfile.gettempdir(), f"analyzer-numba-{os.getuid()}")):
        path = os.path.join(base, stamp)
        try:
            new = not os.path.isdir(path)
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, ".write-probe")
            with open(probe, "w"):
                pass
            os.remove(probe)  # also marks the folder as used now (its mtime): see prune_stale
        except OSError:
            continue
        os.environ["NUMBA_CACHE_DIR"] = path
        if new:
            prune_stale(base, stamp)
        return


_ensure_cache_dir()

# No linear algebra here: keep numpy's OpenBLAS from starting a thread per core whose
# spin-waits showed up as ~3% of a 2-worker scan (perf). Effective when analyzer is imported
# before numpy (the CLI); the caller's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


_FAST_LOADS = {"wanted": False}


def request_fast_cache_loads() -> None:
    """skip_registry_refresh_on_cache_hits() for this process, applied when numba is first
    needed (by plain_calls, which every kernel module calls as it is imported): a scan whose
    kernels are all built ahead of time (analyzer.aot) never imports numba."""
    _FAST_LOADS["wanted"] = True
    if "numba" in sys.modules:
        skip_registry_refresh_on_cache_hits()


def skip_registry_refresh_on_cache_hits() -> bool:
    """Load cached kernels without numba's target-context refresh (~0.15 s of a scan's start-up,
    serial: it imports and installs every lowering registry, which only compiling needs).

    numba's `Cache.load_overload` refreshes the context before each load. Here a load first
    tries the cache with only the numba runtime initialised (the cached machine code links
    against it); on a miss the original path runs (refresh, load, then compile), and the
    context counts as refreshed from then on. Applied by the command line only, and only where
    numba has the internals this relies on (else returns False and nothing changes).
    tests/test_numba_cache.py runs scans through this path and compares their tables."""
    try:
        import numba.cpython.hashing  # noqa: F401  (its symbols, as the refresh would load them)
        from numba.core import caching
        from numba.core.runtime import nrt
    except ImportError:
        return False
    cache = caching.Cache
    original = cache.load_overload
    if getattr(original, "_analyzer_fast", False):
        return True
    if not (
        hasattr(cache, "_load_overload")
        and hasattr(cache, "_guard_against_spurious_io_errors")
        and hasattr(nrt.rtsys, "initialize")
    ):
        return False

    def load_overload(self, sig, target_context):
        if getattr(target_context, "_analyzer_refreshed", False):
            return original(self, sig, target_context)
        nrt.rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
        if loaded is None:
            target_context._analyzer_refreshed = True
            return original(self, sig, target_context)
        return loaded

    load_overload._analyzer_fast = True  # type: ignore[attr-defined]  # marks our patch (a plain function)
    cache.load_overload = load_overload  # type: ignore[method-assign]  # the patch of numba's method, on purpose
    return True


def plain_calls(namespace: dict) -> None:
    """Compile the kernels of a module once per argument *type*, not once per constant.

    A call from one kernel to another with a literal argument (`gen_legal(..., 1)`,
    `_push_if_legal(..., MF_NORMAL, -1, True, ...)`) makes numba compile the callee for that
    literal (`Literal[int](1)`), one more specialization per distinct constant: the chess
    replay compiled `_push_if_legal` 12 times, `castle_move_for` 7, `is_safe_after` 4,
    `gen_legal` 2 (~1/3 of a cold compile). Here each dispatcher of the module types its
    calls with the constants' plain types (`types.unliteral`), so one compiled version serves
    every call site; LLVM still sees the constants where it inlines the callee.
    Call at the end of every module that defines kernels: `plain_calls(globals())`."""
    from numba.core import types
    from numba.core.dispatcher import Dispatcher

    if _FAST_LOADS["wanted"]:
        skip_registry_refresh_on_cache_hits()
    for obj in list(namespace.values()):
        if not isinstance(obj, Dispatcher) or getattr(obj, "_analyzer_plain_calls", False):
            continue
        if not getattr(obj.py_func, "__module__", "").startswith("analyzer."):
            continue
        original = obj.get_call_template

        def get_call_template(args, kws, _original=original):
            return _original(tuple(types.unliteral(a) for a in args), {k: types.unliteral(v) for k, v in kws.items()})

        obj.get_call_template = get_call_template  # type: ignore[method-assign]  # the patch, on purpose
        obj._analyzer_plain_calls = True  # type: ignore[attr-defined]  # marks a patched dispatcher
