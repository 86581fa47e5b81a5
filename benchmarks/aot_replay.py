"""Feasibility of ahead-of-time compiled kernels (issue 18): build the chess replay kernel as a
plain extension module with numba.pycc, check that it gives the JIT kernel's outputs on real
games, time both, and time importing it without numba.

    python benchmarks/aot_replay.py [--input ../shared/data/lichess_sample.pgn.zst] [--passes 5]

Why: start-up (0.45 s for a one-game scan here) is mostly importing numba (0.25-0.3 s;
numpy, pyarrow, pyarrow.parquet and zstandard together take 0.15 s), so a 0.25 s start-up needs
kernels that run without numba at run time. pycc writes such a module (it links libc and libm
only); it is pending deprecation since numba 0.57 and needs a C compiler at build time. This was
the feasibility spike; the analyzer now builds every chess scan kernel this way (analyzer.aot,
used through analyzer.kernels), and tests/test_aot.py compares their tables with the JIT's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# The JIT kernels for the comparison (and no built module of the same name loaded from the cache).
os.environ["ANALYZER_KERNELS"] = "jit"
DEFAULT_INPUT = os.path.join(ROOT, "..", "shared", "data", "lichess_sample.pgn.zst")
BLOCK = 8 << 20


def replay_calls(path: str) -> list[tuple]:
    """The arguments of every replay_batch call of an in-process analysis of `path` in 8 MiB
    blocks, as the scan makes them (captured by wrapping the kernel)."""
    import zstandard

    from analyzer.analysis import analyze_block
    from analyzer.kinds import resolve_editions
    from analyzer.kinds.chess import kernels as chess_kernels
    from analyzer.pgn.split import split_games

    with open(path, "rb") as fh:
        data = zstandard.ZstdDecompressor().stream_reader(fh).read() if path.endswith(".zst") else fh.read()
    buf = np.frombuffer(data, np.uint8)
    starts, ends, _ = split_games(buf, True)
    calls: list[tuple] = []
    kernel_object = chess_kernels.replay_batch
    kernel = kernel_object.jit()

    def capture(*args):
        calls.append(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
        return kernel(*args)

    chess_kernels.replay_batch = capture  # type: ignore[assignment]
    try:
        eds = resolve_editions(["fide_2018"])
        lo = 0
        while lo < len(starts):
            hi = int(np.searchsorted(starts, starts[lo] + BLOCK))
            hi = max(hi, lo + 1)
            a, b = starts[lo], ends[hi - 1]
            block = buf[a:b].copy()
            block.flags.writeable = False
            analyze_block(
                "chess",
                block,
                starts[lo:hi] - a,
                ends[lo:hi] - a,
                source="aot",
                first_game_index=lo,
                base_offset=0,
                editions=eds,
            )
            lo = hi
    finally:
        chess_kernels.replay_batch = kernel_object  # type: ignore[assignment]
    for args in calls:
        args[0].flags.writeable = False  # the text: compiled for read-only input
    return calls


def build(out_dir: str) -> tuple[str, float]:
    """The analyzer's own build of the replay module (analyzer.aot_build.build_group) into out_dir;
    (module name, seconds)."""
    from analyzer import aot, aot_build

    t = time.time()
    aot_build.build_group("replay", out_dir)
    return aot._module_name("replay"), time.time() - t


def run_all(fn, calls) -> list:
    outs = []
    for args in calls:
        mine = [a.copy() if isinstance(a, np.ndarray) and a.flags.writeable else a for a in args]
        outs.append((fn(*mine), mine))
    return outs


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=DEFAULT_INPUT)
    ap.add_argument("--passes", type=int, default=5)
    args = ap.parse_args()
    from analyzer.kinds.chess import _replay

    calls = replay_calls(args.input)
    jit = _replay.replay_batch
    with tempfile.TemporaryDirectory() as tmp:
        name, seconds = build(tmp)
        print(f"pycc build of replay_batch: {seconds:.1f} s (callees from numba's cache when it holds them)")
        sys.path.insert(0, tmp)
        aot = __import__(name).replay_batch
        ok = all(
            r1 == r2 and all(same(x, y) for x, y in zip(a1, a2))
            for (r1, a1), (r2, a2) in zip(run_all(jit, calls), run_all(aot, calls))
        )
        print(f"outputs identical to the JIT kernel on {len(calls)} blocks: {ok}")
        best = {"jit": [], "aot": []}
        for _ in range(args.passes):
            for label, fn in (("jit", jit), ("aot", aot)):
                c = time.process_time()
                for a in calls:
                    fn(*a)
                best[label].append(time.process_time() - c)
        for label, times in best.items():
            each = ", ".join(f"{t:.3f}" for t in times)
            print(f"{label}: min {min(times):.4f} s CPU over {args.passes} passes ({each})")
        probe = f"import sys; sys.path.insert(0, {tmp!r}); import numpy, {name}; assert 'numba' not in sys.modules"
        py = os.path.realpath(sys.executable)
        imports = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([py, "-c", probe], check=True)
            imports.append(time.perf_counter() - t)
        base = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([py, "-c", "import numpy, numba"], check=True)
            base.append(time.perf_counter() - t)
        print(
            f"python -c 'import numpy, {name}' (no numba): median {sorted(imports)[2]:.3f} s; "
            f"'import numpy, numba': median {sorted(base)[2]:.3f} s"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
