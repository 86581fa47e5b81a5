"""analyzer: draw-rule statistics (FIDE Article 9, Russian draughts section 32) over game databases.

Public API: `analyze_bytes` (in-memory PGN/PDN), `scan_games` / `scan_verdicts` / `scan_events`
and `games_with_verdicts` (an output directory as polars LazyFrames). The CLI is
`analyzer scan|report|warmup`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import analyzer._numba_env  # noqa: F401  (NUMBA_CACHE_DIR before numba compiles or loads kernels)

if TYPE_CHECKING:  # the API loaded lazily by __getattr__, as type checkers see it
    from analyzer.api import (
        IncompleteDatasetWarning as IncompleteDatasetWarning,
        analyze_bytes as analyze_bytes,
        committed_files as committed_files,
        games_with_verdicts as games_with_verdicts,
        scan_events as scan_events,
        scan_games as scan_games,
        scan_verdicts as scan_verdicts,
    )
    from analyzer.errors import AnalyzerError as AnalyzerError, DatasetError as DatasetError

__version__ = "0.3.0"


_API = (
    "analyze_bytes",
    "scan_games",
    "scan_verdicts",
    "scan_events",
    "games_with_verdicts",
    "committed_files",
    "IncompleteDatasetWarning",
)


def __getattr__(name: str) -> Any:
    if name in _API:
        from analyzer import api

        return getattr(api, name)
    if name in ("DatasetError", "AnalyzerError"):
        from analyzer import errors

        return getattr(errors, name)
    raise AttributeError(name)


__all__ = [*_API, "AnalyzerError", "DatasetError", "__version__"]  # noqa: PLE0604 - _API is a tuple of str
