"""Compile the numba kernels once by analyzing a tiny chess and draughts sample: all of them
(`analyzer warmup`), or those of the kinds a scan needs (its first run on a machine)."""

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


# A cold compile on a shared 2-core VM (wall seconds, measured 2026-12-01 after the kernels
# compile once per argument type): chess 31 on one core; in two processes the chess replay
# kernel takes 18 in one while the other chess kernels (8), then the other kinds' (draughts 9),
# compile in the second.
COMPILE_SECONDS = {"chess": 31, "russian_draughts": 9}  # one process
CHESS_REPLAY_SECONDS = 18  # two processes: the replay kernel in one ...
CHESS_OTHERS_SECONDS = 8  # ... the other chess kernels, then the other kinds, in the second
AOT_BUILD_SECONDS = (
    27  # the chess kernels built ahead of time, two processes, the other kinds beside (22-33 s measured)
)


def compile_estimate(kinds: list[str], workers: int) -> int:
    """Seconds a cold compile of `kinds` takes here (for the first-run notice)."""
    if workers > 1 and "chess" in kinds:
        side = CHESS_OTHERS_SECONDS + sum(COMPILE_SECONDS.get(k, 20) for k in kinds if k != "chess")
        return max(CHESS_REPLAY_SECONDS, side)
    return sum(COMPILE_SECONDS.get(k, 20) for k in kinds)


_SAMPLES = {"chess": ("warmup-chess.pgn", _CHESS), "russian_draughts": ("warmup-draughts.pdn", _DRAUGHTS)}


def _marker(kind: str | None = None) -> str | None:
    """The file that says the kernels of `kind` (None: of every kind) are in the cache."""
    d = os.environ.get("NUMBA_CACHE_DIR")
    return os.path.join(d, ".analyzer-warm" + (f"-{kind}" if kind else "")) if d else None


def _all_kinds() -> list[str]:
    from analyzer import kinds

    return kinds.names()


def is_warm(kinds=None) -> bool:
    """Whether the cache holds the kernels of `kinds` (default: every kind). The chess kind's
    are also there when built ahead of time (analyzer.aot) and used."""
    full = _marker()
    if full is not None and os.path.exists(full):
        return True
    wanted = list(kinds) if kinds is not None else _all_kinds()
    return all(
        ((m := _marker(k)) is not None and os.path.exists(m)) or (k == "chess" and _chess_built()) for k in wanted
    )


def _chess_built() -> bool:
    """Whether a chess scan loads built kernels: this machine's, or the wheel's portable ones."""
    from analyzer import aot, kernels

    return kernels.mode() == "auto" and (aot.state() == "built" or aot.portable_folder() is not None)


def _will_build(kinds: list[str], even_if_portable: bool = False) -> bool:
    """Whether the chess kernels are to be built ahead of time now (see analyzer.aot): not
    where the wheel's portable modules serve (a scan then compiles nothing for chess), unless
    `even_if_portable` (`analyzer warmup`: the build for this CPU)."""
    from analyzer import aot, kernels

    return (
        "chess" in kinds
        and kernels.mode() == "auto"
        and aot.state() == "absent"
        and aot.compiler() is not None
        and (even_if_portable or aot.portable_folder() is None)
    )


def build_ahead(kinds, meanwhile=None, even_if_portable: bool = False) -> bool:
    """Build the chess kernels ahead of time (analyzer.aot) if `kinds` has chess and they are
    to be built here (ANALYZER_KERNELS=auto, a C compiler, not built or failed before for
    these sources, no portable modules unless `even_if_portable`); `meanwhile()` runs here
    while the build processes do. Returns whether it built them."""
    if not _will_build(list(kinds), even_if_portable):
        return False
    from analyzer import aot, kernels

    ok = aot.build(meanwhile=meanwhile)
    kernels.reset()
    return ok


def ensure_compiled(kinds=None) -> bool:
    """Compile the kernels the run needs (`kinds`: the game kinds of its inputs; default every
    kind) if this machine's cache does not hold them yet (the first run of this version),
    saying so on stderr with a line every 10 s while it runs. Returns whether it compiled.
    The chess scan's kernels are built ahead of time (analyzer.aot: the runs after load
    without numba) where a C compiler is, else compiled by numba's JIT; either way here,
    once, which spares every worker process compiling the same kernels. Kernels of other
    kinds, of the Lichess variants (compiled at the first variant game) and the perft used by
    tests are not compiled here."""
    wanted = sorted(set(kinds) if kinds is not None else _all_kinds())
    build = _will_build(wanted)
    missing = [k for k in wanted if (k == "chess" and build) or not is_warm([k])]
    if not missing:
        return False
    workers = compile_workers()
    log.warning(
        "compiling %s for this machine, first run only (%s), about %d s%s; `analyzer warmup` does it ahead",
        "the kernels (numba, ahead of time)" if build else "numba kernels",
        ", ".join(missing),
        AOT_BUILD_SECONDS if build else compile_estimate(missing, workers),  # other kinds compile beside a build
        f", {workers} processes" if workers > 1 else "",
    )
    t0 = time.time()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(10):
            log.warning("still compiling kernels (%.0f s)", time.time() - t0)

    th = threading.Thread(target=tick, name="analyzer-compile-progress", daemon=True)
    th.start()
    try:
        others = [k for k in missing if k != "chess"]
        if build:
            # The other kinds' JIT compile (draughts: ~9 s) runs here beside the two build
            # processes: the shorter one ends about when it would start (measured: a mixed
            # first run 37 s serial).
            build_ahead(["chess"], meanwhile=(lambda: warmup(others)) if others else None)
        rest = [k for k in missing if not is_warm([k])]
        if rest:
            warmup(rest, processes=workers)
    finally:
        stop.set()
        th.join()
    log.warning("kernels compiled in %.0f s", time.time() - t0)
    return True


def compile_workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return 2 if n > 1 else 1


def warmup(kinds=None, processes: int = 1) -> None:
    """Compile the kernels of `kinds` (default: every kind, and the perft of the tests) for
    the argument types the scan itself uses: the in-memory API and a real `run_scan` over a
    small file of each kind (a kernel first called with other array types, e.g. writable
    instead of read-only text, would compile again mid-scan).

    processes > 1 (a cold cache): the chess replay kernel, the longest compile, is compiled
    here while a second process compiles the other chess kernels (tag scanner, rules,
    measures) into the same on-disk cache; this process then loads them from it."""
    everything = kinds is None
    wanted = list(_all_kinds() if everything else kinds)
    side = None
    if processes > 1 and "chess" in wanted and os.environ.get("NUMBA_CACHE_DIR") and not _chess_built():
        from analyzer.aot import python_process

        # The second process also compiles the other kinds wanted (draughts: ~9 s), which
        # would otherwise follow the ~18 s replay compile here.
        others = [k for k in wanted if k != "chess"]
        side = python_process(
            "import sys; from analyzer.warmup import _side_compile; _side_compile(sys.argv[1:])", *others
        )
        t0 = time.time()
        try:
            _compile_chess_replay()
        finally:
            t1 = time.time()
            _, err = side.communicate()
            log.info(
                "chess replay kernel compiled in %.0f s; the other chess kernels (second process) "
                "were ready %.0f s later",
                t1 - t0,
                time.time() - t1,
            )
            if side.returncode != 0:  # not fatal: what it did not compile is compiled below
                log.debug("side compile process failed: %s", err.decode("utf-8", "replace")[-2000:])
    for kind in wanted:
        _warm_kind(kind)
        m = _marker(kind)
        if m is not None:
            _touch(m)
    if everything:
        from analyzer.kinds.chess import perft

        perft("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", 2)
        m = _marker()
        if m is not None:
            _touch(m)


def _touch(path: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
    except OSError:
        pass


def _warm_kind(kind: str) -> None:
    import tempfile

    from analyzer import kinds
    from analyzer.api import analyze_bytes
    from analyzer.engine import Config, run_scan

    k = kinds.get(kind)
    editions = list(k.editions().values())
    name, text = _SAMPLES[kind]
    analyze_bytes(text, editions=editions, keep_facts=True)
    with tempfile.TemporaryDirectory(prefix="analyzer-warmup-") as tmp:
        path = os.path.join(tmp, name)
        with open(path, "wb") as fh:
            fh.write(text)
        for eds in (list(k.default_editions), [e.id for e in editions]):
            cfg = Config(out=os.path.join(tmp, "out"), editions=kinds.resolve_editions(eds))
            run_scan([path], cfg, workers=1, force=True, progress_interval=0, progress_mode="none")


def _compile_chess_replay() -> None:
    """Compile the chess replay kernel alone, with the argument types analyze_block passes."""
    import numpy as np

    from analyzer.kinds.chess import _replay as replay_kernels, analyze as chess_analyze

    text = b"1. e4 e5 *\n"
    buf = np.frombuffer(text, dtype=np.uint8)  # read-only, as the scan's text
    ends = np.array([len(text)], np.int64)
    bb, mb, st, ct = chess_analyze._STD_START
    fb = chess_analyze._fact_buffers(64)
    replay_kernels.replay_batch(
        buf,
        np.zeros(1, np.int64),
        ends,
        np.zeros(1, np.int64),
        np.stack([bb]),
        np.stack([mb]),
        np.stack([st]),
        np.stack([ct]),
        100,
        False,
        np.empty(2, np.int64),
        np.empty(1, np.int8),
        np.empty(1, np.int32),
        np.empty(1, np.int64),
        np.empty(1, np.int64),
        fb["key"],
        fb["hmc"],
        fb["flags"],
        fb["rep_next"],
        fb["rep_next97"],
        fb["clock"],
    )


def _side_compile(other_kinds: list[str] | None = None) -> None:
    """(In a second process, beside _compile_chess_replay.) Every chess kernel but the replay:
    the warmup path runs with the replay replaced by a stub that writes one start position per
    game, so the tag scanner, rules and measures compile for their real argument types. Then
    the kernels of `other_kinds` (e.g. russian_draughts), each marked warm when done."""
    import inspect

    import numpy as np

    from analyzer.codes import S_OK
    from analyzer.kinds.chess import _replay as replay_kernels

    # The stub takes replay_batch's arguments by their names (bound to its signature, not
    # spelled out again here) and fills what analyze_block reads of a replay.
    bind = inspect.signature(replay_kernels.replay_batch.py_func).bind

    def stub(*args, **kwargs):
        arg = bind(*args, **kwargs).arguments
        n = len(arg["mt_start"])
        arg["pos_off"][:] = np.arange(n + 1)
        arg["status"][:] = S_OK
        for name in ("err_ply", "err_s", "err_e"):
            arg[name][:] = -1
        for name in ("key", "hmc", "flags", "rep_next", "rep_next97"):
            arg[name][:n] = 0
        arg["clock"][:n] = np.nan
        return n

    replay = replay_kernels.replay_batch
    replay_kernels.replay_batch = stub
    try:
        _warm_kind("chess")
    finally:
        replay_kernels.replay_batch = replay
    for kind in other_kinds or ():
        _warm_kind(kind)
        m = _marker(kind)
        if m is not None:
            _touch(m)
