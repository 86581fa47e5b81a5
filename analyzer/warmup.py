"""Compile every numba kernel once by analyzing a tiny chess and draughts sample."""
from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger("analyzer")

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


COMPILE_SECONDS = 60   # a cold compile of every kernel on a 2-core VM (measured 49-65 s)


def _marker() -> str | None:
    d = os.environ.get("NUMBA_CACHE_DIR")
    return os.path.join(d, ".analyzer-warm") if d else None


def is_warm() -> bool:
    m = _marker()
    return m is not None and os.path.exists(m)


def ensure_compiled() -> bool:
    """Compile the kernels now if this machine's cache does not hold them yet (the first run
    of this version), saying so on stderr with a line every 10 s while it runs. Returns whether
    it compiled. Compiling here, once, spares every worker process compiling the same kernels."""
    if is_warm():
        return False
    log.warning("compiling numba kernels for this machine, first run only, about %d s; "
                "`analyzer warmup` does it ahead", COMPILE_SECONDS)
    t0 = time.time()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(10):
            log.warning("still compiling numba kernels (%.0f s)", time.time() - t0)

    th = threading.Thread(target=tick, name="analyzer-compile-progress", daemon=True)
    th.start()
    try:
        warmup()
    finally:
        stop.set()
        th.join()
    log.warning("kernels compiled in %.0f s", time.time() - t0)
    return True


def warmup() -> None:
    """Compile every kernel for the argument types the scan itself uses: the in-memory API and
    a real `run_scan` over small chess and draughts files (a kernel first called with other
    array types, e.g. writable instead of read-only text, would compile again mid-scan)."""
    import tempfile

    from analyzer.engine import Config, run_scan
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
        for eds in (["fide_2018"], list(BUILTIN)):
            cfg = Config(out=os.path.join(tmp, "out"), editions=resolve(eds))
            run_scan(inputs, cfg, workers=1, force=True, progress_interval=0, progress_mode="none")
    m = _marker()
    if m is not None:
        try:
            with open(m, "w") as fh:
                fh.write(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
        except OSError:
            pass
