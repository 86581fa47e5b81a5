"""The chess kernels built ahead of time for a portable x86-64 target against the same kernels
built for this machine's CPU, in one run (issue 30: the wheel carries portable modules).

    python benchmarks/aot_portable.py [--input ../shared/data/lichess_sample.pgn.zst] \\
        [--cpus host,x86-64-v3,x86-64-v2] [--rounds 5] [--built DIR]

Builds both modules (analyzer.aot_build.build_for_cpu: numba.pycc, the callees compiled by numba's JIT
for that CPU into a private cache) for every CPU of --cpus into a temporary folder (or takes
DIR/<cpu>/ when --built DIR holds them), loads each build (same module names, other files),
checks that every build gives the host build's outputs on every replay call of an in-process
analysis of --input (8 MiB blocks, fide_2018, as the scan makes them), then times, in --rounds
interleaved rounds (the order rotating), the replay kernel over all those calls and the whole
in-process analysis (analyze_block: every kernel of a chess scan, plus its Python and Arrow
work, which is the same for every build). Prints CPU seconds per round, the median and best
ratio of each build to the host build, and one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
os.environ["ANALYZER_KERNELS"] = "jit"  # the builds are swapped in by hand below
DEFAULT_INPUT = os.path.join(ROOT, "..", "shared", "data", "lichess_sample.pgn.zst")
BLOCK = 8 << 20

from aot_replay import run_all, same  # noqa: E402  (the spike's replay-and-compare helpers)


def load_build(d: str, tag: str) -> dict:
    """{entry: function} of the modules in folder d (loaded under their own names from d's
    files: CPython keys extension modules by file, so several builds load side by side)."""
    from analyzer import aot

    functions = {}
    for group, names in aot.GROUPS.items():
        name = aot._module_name(group)
        spec = importlib.util.spec_from_file_location(name, os.path.join(d, aot._module_file(group)))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[f"{name}_{tag}"] = module
        for entry in names:
            functions[entry] = getattr(module, entry)
    return functions


def blocks(path: str):
    """The input's text cut into ~8 MiB read-only blocks at game boundaries:
    [(block, starts, ends, first game index)]."""
    import zstandard

    from analyzer.pgn.split import split_games

    with open(path, "rb") as fh:
        data = zstandard.ZstdDecompressor().stream_reader(fh).read() if path.endswith(".zst") else fh.read()
    buf = np.frombuffer(data, np.uint8)
    starts, ends, _ = split_games(buf, True)
    out = []
    lo = 0
    while lo < len(starts):
        hi = max(int(np.searchsorted(starts, starts[lo] + BLOCK)), lo + 1)
        a, b = starts[lo], ends[hi - 1]
        block = buf[a:b].copy()
        block.flags.writeable = False
        out.append((block, starts[lo:hi] - a, ends[lo:hi] - a, lo))
        lo = hi
    return out, len(starts)


def analyze_all(parts, kernels_dict: dict | None, capture: list | None = None) -> None:
    """analyze_block over every block with the given built kernels (None: the JIT's)."""
    from analyzer import kernels
    from analyzer.analysis import analyze_block
    from analyzer.kinds import resolve_editions

    eds = resolve_editions(["fide_2018"])
    kernels.reset()
    if kernels_dict is not None:
        kernels._LOADED["functions"] = dict(kernels_dict)
    if capture is not None:
        fn = kernels._LOADED["functions"]["replay_batch"]

        def spy(*args):
            capture.append(tuple(a.copy() if isinstance(a, np.ndarray) and a.flags.writeable else a for a in args))
            return fn(*args)

        kernels._LOADED["functions"]["replay_batch"] = spy
    try:
        for block, starts, ends, first in parts:
            analyze_block("chess", block, starts, ends, source="b", first_game_index=first, base_offset=0, editions=eds)
    finally:
        kernels.reset()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=DEFAULT_INPUT)
    ap.add_argument("--cpus", default="host,x86-64-v3,x86-64-v2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--built", help="a folder with <cpu>/ subfolders already built (else built here)")
    args = ap.parse_args()
    from analyzer import aot_build

    cpus = [c.strip() for c in args.cpus.split(",") if c.strip()]
    if cpus[0] != "host":
        cpus.insert(0, "host")
    tmp = tempfile.mkdtemp(prefix="aot-portable-")
    builds, build_seconds = {}, {}
    for cpu in cpus:
        d = os.path.join(args.built, cpu) if args.built else os.path.join(tmp, cpu)
        if not args.built:
            build_seconds[cpu] = round(aot_build.build_for_cpu(d, cpu), 1)
            print(f"built {cpu} in {build_seconds[cpu]} s", file=sys.stderr, flush=True)
        builds[cpu] = load_build(d, cpu.replace("-", "_"))
    parts, n_games = blocks(args.input)
    calls: list = []
    analyze_all(parts, builds["host"], capture=calls)
    for a in calls:
        a[0].flags.writeable = False
    reference = run_all(builds["host"]["replay_batch"], calls)
    identical = {}
    for cpu in cpus[1:]:
        mine = run_all(builds[cpu]["replay_batch"], calls)
        identical[cpu] = all(
            r1 == r2 and all(same(x, y) for x, y in zip(a1, a2)) for (r1, a1), (r2, a2) in zip(reference, mine)
        )
    print(f"replay outputs identical to the host build on {len(calls)} blocks: {identical}", file=sys.stderr)
    replay: dict[str, list[float]] = {c: [] for c in cpus}
    whole: dict[str, list[float]] = {c: [] for c in cpus}
    for r in range(args.rounds):
        order = cpus[r % len(cpus) :] + cpus[: r % len(cpus)]
        for cpu in order:
            fn = builds[cpu]["replay_batch"]
            t = time.process_time()
            for a in calls:
                fn(*a)
            replay[cpu].append(time.process_time() - t)
            t = time.process_time()
            analyze_all(parts, builds[cpu])
            whole[cpu].append(time.process_time() - t)
        print(
            f"round {r + 1}: "
            + "  ".join(f"{c} replay {replay[c][-1]:.3f} s, analysis {whole[c][-1]:.3f} s" for c in cpus),
            file=sys.stderr,
            flush=True,
        )

    def ratios(times: dict) -> dict:
        per_round = {c: [t / h for t, h in zip(times[c], times["host"])] for c in cpus[1:]}
        return {
            c: {"median": round(statistics.median(v), 3), "best": round(min(times[c]) / min(times["host"]), 3)}
            for c, v in per_round.items()
        }

    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "input": os.path.basename(args.input),
        "games": n_games,
        "blocks": len(calls),
        "machine": platform.machine(),
        "host_cpu": _host_cpu(),
        "build_seconds": build_seconds,
        "identical": identical,
        "replay_cpu_seconds": {c: [round(t, 3) for t in v] for c, v in replay.items()},
        "analysis_cpu_seconds": {c: [round(t, 3) for t in v] for c, v in whole.items()},
        "replay_ratio_to_host": ratios(replay),
        "analysis_ratio_to_host": ratios(whole),
    }
    print(
        "| build | replay CPU s (median) | ratio to host (median of rounds, best) | analysis CPU s (median) | ratio |"
    )
    print("|---|---|---|---|---|")
    for c in cpus:
        rr = result["replay_ratio_to_host"].get(c, {"median": 1.0, "best": 1.0})
        ar = result["analysis_ratio_to_host"].get(c, {"median": 1.0, "best": 1.0})
        print(
            f"| {c} | {statistics.median(replay[c]):.3f} | {rr['median']:.3f}, {rr['best']:.3f} "
            f"| {statistics.median(whole[c]):.3f} | {ar['median']:.3f}, {ar['best']:.3f} |"
        )
    print(json.dumps(result))
    return 0 if all(identical.values()) else 1


def _host_cpu() -> str:
    try:
        import llvmlite.binding as ll

        return ll.get_host_cpu_name()
    except Exception:  # noqa: BLE001 - only a label
        return "?"


if __name__ == "__main__":
    sys.exit(main())
