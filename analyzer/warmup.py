"""Compile every numba kernel once by analyzing a tiny chess and draughts sample."""
from __future__ import annotations

_CHESS = b"""[Event "warmup"]
[Site "?"]
[White "a"]
[Black "b"]
[Result "1/2-1/2"]
[TimeControl "60+0"]

1. Nf3 { [%clk 0:01:00] } Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. e4 e5 1/2-1/2

[Event "warmup 2"]
[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 99 80"]
[SetUp "1"]
[Result "*"]

1. Kd2 *
"""

_DRAUGHTS = b"""[GameType "25"]
[Result "1-0"]

1. c3-d4 d6-e5 2. b2-c3 1-0
"""


def warmup() -> None:
    import numpy as np

    from analyzer.api import analyze_bytes
    from analyzer.editions import BUILTIN

    analyze_bytes(_CHESS, editions=list(BUILTIN), keep_facts=True)
    from analyzer.chess import perft

    perft("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", 2)
    from analyzer.draughts import analyze_draughts_bytes

    analyze_draughts_bytes(_DRAUGHTS)
    del np
