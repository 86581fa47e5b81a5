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
    """Compile every kernel for the argument types the scan itself uses: the in-memory API and
    a real `run_scan` over small chess and draughts files (a kernel first called with other
    array types, e.g. writable instead of read-only text, would compile again mid-scan)."""
    import os
    import tempfile

    from analyzer import pipeline, run
    from analyzer.api import analyze_bytes
    from analyzer.chess import perft
    from analyzer.draughts import analyze_draughts_bytes
    from analyzer.editions import BUILTIN, resolve

    analyze_bytes(_CHESS, editions=list(BUILTIN), keep_facts=True)
    perft("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", 2)
    analyze_draughts_bytes(_DRAUGHTS)
    with tempfile.TemporaryDirectory(prefix="analyzer-warmup-") as tmp:
        inputs = []
        for name, text in (("warmup-chess.pgn", _CHESS), ("warmup-draughts.pdn", _DRAUGHTS)):
            path = os.path.join(tmp, name)
            with open(path, "wb") as fh:
                fh.write(text)
            inputs.append(path)
        with open(os.devnull, "w") as devnull:
            for eds in (["fide_2018"], list(BUILTIN)):
                cfg = pipeline.Config(out=os.path.join(tmp, "out"), editions=resolve(eds))
                run.run_scan(inputs, cfg, workers=1, force=True, progress_interval=0, log=devnull)
