"""Cut PGN/PDN text into games (byte spans), with the numba scanner."""

from __future__ import annotations

import numpy as np

from analyzer.pgn import kernels


def split_games(buf: np.ndarray, final: bool, draughts: bool = False):
    """(starts, ends, consumed): spans of the complete games in buf; see _scan.find_games."""
    n = len(buf)
    starts = np.empty(n // 2 + 2, np.int64)
    ng, consumed = kernels.find_games(buf, n, final, draughts, starts)
    starts = starts[:ng].copy()
    ends = np.empty(ng, np.int64)
    if ng:
        ends[:-1] = starts[1:]
        ends[-1] = consumed
    return starts, ends, consumed
