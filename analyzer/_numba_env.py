"""Point numba's on-disk cache at a writable place before any kernel module is imported.

`@njit(cache=True)` writes next to the source file by default; from a read-only install that
fails at import. We default NUMBA_CACHE_DIR to the user cache (XDG) unless the caller set it.
Import this module first in every module that defines kernels.
"""
from __future__ import annotations

import os
import tempfile


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "analyzer", "numba")


def _ensure_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    for path in (_default_cache_dir(), os.path.join(tempfile.gettempdir(), f"analyzer-numba-{os.getuid()}")):
        try:
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, ".write-probe")
            with open(probe, "w"):
                pass
            os.remove(probe)
        except OSError:
            continue
        os.environ["NUMBA_CACHE_DIR"] = path
        return


_ensure_cache_dir()

# No linear algebra here: keep numpy's OpenBLAS from starting a thread per core whose
# spin-waits showed up as ~3% of a 2-worker scan (perf). Effective when analyzer is imported
# before numpy (the CLI); the caller's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
