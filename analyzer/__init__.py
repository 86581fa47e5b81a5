"""analyzer: draw-rule statistics (FIDE Article 9, Russian draughts section 32) over game databases.

Public API: `analyze_bytes` (in-memory PGN), `scan_games` / `scan_events` (an output directory
as polars LazyFrames). The CLI is `analyzer scan|report|warmup`.
"""
from __future__ import annotations

import analyzer._numba_env  # noqa: F401  (NUMBA_CACHE_DIR before numba compiles or loads kernels)

__version__ = "0.1.0"


def __getattr__(name):
    if name in ("analyze_bytes", "scan_games", "scan_events"):
        from analyzer import api

        return getattr(api, name)
    raise AttributeError(name)


__all__ = ["analyze_bytes", "scan_games", "scan_events", "__version__"]
