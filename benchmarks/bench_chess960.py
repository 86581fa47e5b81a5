#!/usr/bin/env python3
"""Chess960 against standard chess, per ply, in one run; python-chess on the same Chess960 games.

In-process timings (CPU seconds, one core) of `analyze_block` (tags, replay, rules fide_2018,
Arrow tables) and of its replay kernel alone (`replay_batch`), on three inputs:

  standard    the standard games of --standard (default lichess_sample.pgn.zst, 50,722 Lichess
              games) in 8 MiB blocks, as a scan cuts them
  matched     for every Chess960 game, a standard game of --standard with the same number of
              plies (the nearest when none is left) and, like it, with or without %clk comments
              (most of a Lichess game's text), same order: one block
  chess960    the Chess960 games of --chess960 (default tests/fixtures/variants/chess960.pgn,
              365 Lichess games): one block
  matched960  `matched` with [Variant "Chess960"] and the standard start as [FEN] in every game
              (instead of its own [Variant]): the same moves through the Chess960 path, which
              shows what that path costs apart from the games themselves

`matched`, `chess960` and `matched960` are repeated --repeat times (default 8: an ~8 MB block,
as in a scan).
Each input is analyzed in passes until --budget seconds are spent (at least 3 passes); the
fastest pass is reported (the machine is shared: the minimum is the steadiest figure), with the
median. Per-ply figures divide by the half-moves played (positions - 1 per game).

python-chess on the Chess960 games (no repeat): `replay` = read_game + push every mainline move;
`claims` = the same plus can_claim_threefold_repetition / can_claim_fifty_moves /
is_fivefold_repetition / is_seventyfive_moves / is_checkmate at every ply (as bench_scan.py).

The analyzer measured is a snapshot of --code (default: the working tree; a revision via
git archive; bench_scan.snapshot_code), run in a child process. Several --code values give a
same-run A/B: the children run alternately, --rounds times, and the best of each is reported.
Code without native Chess960 (before branch chess960) replays Chess960 games with python-chess:
then the chess960 input is timed once, without repeat (per-ply figures stay comparable).

    python benchmarks/bench_chess960.py                              # ~2 min with a warm cache
    python benchmarks/bench_chess960.py --code b120e26 --code HEAD   # A/B, alternating
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_scan import load, machine_info, snapshot_code  # noqa: E402

DEFAULT_STANDARD = "/work/shared/data/lichess_sample.pgn.zst"
DEFAULT_CHESS960 = os.path.join(REPO, "tests", "fixtures", "variants", "chess960.pgn")
BLOCK = 8 << 20


def _read(path: str) -> bytes:
    if path.endswith(".zst"):
        import zstandard

        with open(path, "rb") as fh:
            return zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
    with open(path, "rb") as fh:
        return fh.read()


# ------------------------------------------------------------------------------------------------
# The measured child (runs as `bench_chess960.py _child JSON` with the snapshot on PYTHONPATH)


def _child_main(spec_json: str) -> int:
    import numpy as np

    import analyzer.kinds.chess._replay as R
    import analyzer.kinds.chess.analyze as A
    from analyzer.kinds import resolve_editions as resolve
    from analyzer.pgn.split import split_games
    from analyzer.warmup import warmup

    spec = json.loads(spec_json)
    eds = resolve(["fide_2018"])
    w = time.perf_counter()
    warmup()
    warm_s = time.perf_counter() - w

    def blocks_of(text: bytes, block: int):
        out = []
        pos = 0
        view = memoryview(text)
        while pos < len(text):
            buf = np.frombuffer(view[pos : pos + block], dtype=np.uint8)
            starts, ends, consumed = split_games(buf, pos + block >= len(text))
            out.append((pos, buf, starts[: len(ends)], ends))
            pos += consumed
        return out

    try:  # since the kernels built ahead of time the scan calls them through analyzer.kernels
        import analyzer.kernels as K

        R = K
    except ImportError:
        pass
    replay_cpu = [0.0]
    replay_fn = R.replay_batch

    def timed_replay(*a, **k):
        c = time.process_time()
        try:
            return replay_fn(*a, **k)
        finally:
            replay_cpu[0] += time.process_time() - c

    R.replay_batch = timed_replay

    def one_pass(blocks):
        replay_cpu[0] = 0.0
        games = plies = 0
        statuses: dict = {}
        c = time.process_time()
        for base, buf, starts, ends in blocks:
            res = A.analyze_block(
                buf, starts, ends, source="bench", first_game_index=games, base_offset=base, editions=eds
            )
            games += len(starts)
            plies += int(np.asarray(res.games.column("plies").to_numpy(zero_copy_only=False)).sum())
            for s in res.games.column("status").to_pylist():
                statuses[s] = statuses.get(s, 0) + 1
        return time.process_time() - c, replay_cpu[0], games, plies, statuses

    def measure(blocks, budget, min_passes=3):
        runs = []
        t0 = time.perf_counter()
        while len(runs) < min_passes or time.perf_counter() - t0 < budget:
            runs.append(one_pass(blocks))
            if runs[0][0] > budget:  # slow (python-chess path): one pass is enough
                break
        cpu = [r[0] for r in runs]
        rep = [r[1] for r in runs]
        _, _, games, plies, statuses = runs[0]
        return {
            "passes": len(runs),
            "cpu_s": min(cpu),
            "cpu_s_median": statistics.median(cpu),
            "replay_cpu_s": min(rep),
            "replay_cpu_s_median": statistics.median(rep),
            "games": games,
            "plies": plies,
            "statuses": statuses,
        }

    std_text = _read(spec["standard"])
    std_blocks = blocks_of(std_text, BLOCK)
    out = {"code": spec["code"], "warmup_s": warm_s}
    if spec["inputs"] != ["standard"]:
        c960_text = _read(spec["chess960"])
        # plies of every standard game (a pass of its own, not timed)
        std_plies = []
        std_spans = []
        for base, buf, starts, ends in std_blocks:
            res = A.analyze_block(buf, starts, ends, source="p", first_game_index=0, base_offset=base, editions=eds)
            ok = np.asarray(res.games.column("status").to_pylist()) == "ok"
            pl = res.games.column("plies").to_numpy(zero_copy_only=False)
            for i in range(len(starts)):
                if ok[i]:
                    std_plies.append(int(pl[i]))
                    std_spans.append((base + int(starts[i]), base + int(ends[i])))
        c960_blocks_1 = blocks_of(c960_text, len(c960_text) + 1)
        probe = one_pass(c960_blocks_1)
        c960_games = []  # (has %clk, plies)
        for base, buf, starts, ends in c960_blocks_1:
            res = A.analyze_block(buf, starts, ends, source="p", first_game_index=0, base_offset=base, editions=eds)
            pl = res.games.column("plies").to_numpy(zero_copy_only=False)
            c960_games = [
                (b"%clk" in c960_text[base + int(a) : base + int(b)], int(n)) for a, b, n in zip(starts, ends, pl)
            ]
        # matched standard games: the same ply count (the nearest when that count is used up),
        # with %clk comments if the Chess960 game has them (they are most of a Lichess game's text)
        pools: dict = {}
        for i, n in enumerate(std_plies):
            a, b = std_spans[i]
            pools.setdefault(b"%clk" in std_text[a:b], {}).setdefault(n, []).append(i)
        picked = []
        for clk, n in c960_games:
            by_len = pools[clk] if pools.get(clk) else pools[not clk]
            j = n if by_len.get(n) else min((x for x in by_len if by_len[x]), key=lambda x: (abs(x - n), x))
            picked.append(by_len[j].pop())
        matched_text = b"".join(std_text[a:b].rstrip(b"\n") + b"\n\n" for a, b in (std_spans[i] for i in picked))
        as960 = b'[Variant "Chess960"]\n[SetUp "1"]\n[FEN "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"]\n'
        matched960_text = b"".join(
            as960 + re.sub(rb"(?m)^\[(Variant|FEN|SetUp) [^\n]*\n", b"", std_text[a:b]).rstrip(b"\n") + b"\n\n"
            for a, b in (std_spans[i] for i in picked)
        )
        assert matched960_text.count(b"[Variant ") == len(picked)
        native = probe[0] < 0.5 * spec["budget"]
        rep = spec["repeat"] if native else 1
        mrep = spec["repeat"]
        out.update(native_chess960=native, repeat=rep)
    inputs = {
        "standard": lambda: std_blocks,
        "matched": lambda: blocks_of(matched_text * mrep, len(matched_text) * mrep + 1),
        "chess960": lambda: blocks_of(c960_text * rep, len(c960_text) * rep + 1),
        "matched960": lambda: blocks_of(matched960_text * rep, len(matched960_text) * rep + 1),
    }
    for key in spec["inputs"]:
        out[key] = measure(inputs[key](), spec["budget"])
    print(json.dumps(out))
    return 0


# ------------------------------------------------------------------------------------------------
# python-chess on the Chess960 games


def pychess(path: str, budget: float) -> dict:
    import io

    import chess
    import chess.pgn

    def check(board) -> None:
        board.can_claim_threefold_repetition()
        board.can_claim_fifty_moves()
        board.is_fivefold_repetition()
        board.is_seventyfive_moves()
        board.is_checkmate()

    text = _read(path).decode("utf-8", "replace")
    out = {}
    for mode in ("replay", "claims"):
        fh = io.StringIO(text)
        games = plies = 0
        c0 = time.process_time()
        while time.process_time() - c0 < budget:
            g = chess.pgn.read_game(fh)
            if g is None:
                break
            board = g.board()
            claims = mode == "claims"
            if claims:
                check(board)
            for mv in g.mainline_moves():
                board.push(mv)
                plies += 1
                if claims:
                    check(board)
            games += 1
        cpu = time.process_time() - c0
        out[mode] = {"games": games, "plies": plies, "cpu_s": cpu}
    out["chess_version"] = chess.__version__
    return out


# ------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        return _child_main(argv[1])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--code",
        action="append",
        default=None,
        help="analyzer code: worktree (default), HEAD or a revision; repeat for an A/B",
    )
    p.add_argument("--standard", default=DEFAULT_STANDARD)
    p.add_argument("--chess960", default=DEFAULT_CHESS960)
    p.add_argument("--rounds", type=int, default=None, help="child runs per code (default 1; 3 with several --code)")
    p.add_argument("--budget", type=float, default=3.0, help="seconds of passes per input per child (default 3)")
    p.add_argument("--repeat", type=int, default=8, help="copies of the Chess960 / matched text per block")
    p.add_argument("--pychess-budget", type=float, default=60.0, help="CPU seconds per python-chess mode")
    p.add_argument(
        "--inputs",
        default="standard,matched,chess960,matched960",
        help="comma-separated inputs to time (default all four; `standard` for a quick A/B)",
    )
    p.add_argument("--no-pychess", action="store_true")
    p.add_argument("--json-out")
    a = p.parse_args(argv)
    codes = a.code or ["worktree"]
    rounds = a.rounds or (3 if len(codes) > 1 else 1)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = load()
    print(f"bench_chess960  {started}  codes {codes}  standard {a.standard}  chess960 {a.chess960}", file=sys.stderr)
    results: dict = {c: [] for c in codes}
    infos = {}
    with tempfile.TemporaryDirectory(prefix="bench_chess960-") as tmp:
        dirs = {}
        for i, c in enumerate(codes):
            d = os.path.join(tmp, f"code{i}")
            os.makedirs(d)
            infos[c] = snapshot_code(c, d)
            dirs[c] = d
        for r in range(rounds):
            for c in codes:
                spec = {
                    "code": infos[c]["commit"],
                    "standard": a.standard,
                    "chess960": a.chess960,
                    "budget": a.budget,
                    "repeat": a.repeat,
                    "inputs": a.inputs.split(","),
                }
                env = dict(os.environ, PYTHONPATH=dirs[c])
                print(f"round {r + 1}/{rounds}: {infos[c]['commit']} ...", file=sys.stderr)
                cp = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "_child", json.dumps(spec)],
                    env=env,
                    cwd=tmp,
                    capture_output=True,
                    text=True,
                )
                if cp.returncode != 0:
                    print(cp.stderr, file=sys.stderr)
                    raise SystemExit(f"child failed for {c}")
                results[c].append(json.loads(cp.stdout.strip().splitlines()[-1]))
    pc = None if a.no_pychess else pychess(a.chess960, a.pychess_budget)
    res = {
        "started": started,
        "load_start": load0,
        "load_end": load(),
        "machine": machine_info(),
        "codes": {c: infos[c] for c in codes},
        "runs": results,
        "python_chess": pc,
    }
    report(res)
    print(json.dumps(res))
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


def _best(runs: list, key: str) -> dict:
    """The fastest pass of input `key` over the rounds (and the median of the per-round bests)."""
    items = [r[key] for r in runs]
    best = min(items, key=lambda x: x["cpu_s"])
    return dict(
        best,
        cpu_s_rounds_median=statistics.median(x["cpu_s"] for x in items),
        replay_rounds_median=statistics.median(x["replay_cpu_s"] for x in items),
    )


def report(res: dict) -> None:
    m = res["machine"]
    print(
        f"bench_chess960  {res['started']}  machine: {m['nproc']} cpu, {m['cpu']}; load avg start "
        f"{res['load_start']} end {res['load_end']}"
    )
    print()
    print(
        "| code | input | games | plies | passes | CPU s (best) | µs/game | ns/ply | replay ns/ply "
        "| ns/ply median of rounds |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_ply = {}
    keys = [
        k
        for k in ("standard", "matched", "chess960", "matched960")
        if all(k in r for runs in res["runs"].values() for r in runs)
    ]
    for c, runs in res["runs"].items():
        commit = res["codes"][c]["commit"]
        for key in keys:
            b = _best(runs, key)
            ns = 1e9 * b["cpu_s"] / b["plies"]
            per_ply[(c, key)] = (ns, 1e9 * b["replay_cpu_s"] / b["plies"])
            print(
                f"| {commit} | {key} | {b['games']:,} | {b['plies']:,} | {b['passes']} | {b['cpu_s']:.3f} "
                f"| {1e6 * b['cpu_s'] / b['games']:.1f} | {ns:.1f} | {1e9 * b['replay_cpu_s'] / b['plies']:.1f} "
                f"| {1e9 * b['cpu_s_rounds_median'] / b['plies']:.1f} |"
            )
    print()
    for c in res["runs"]:
        commit = res["codes"][c]["commit"]
        for num, den in (("chess960", "matched"), ("chess960", "standard"), ("matched960", "matched")):
            if num in keys and den in keys:
                x, y = per_ply[(c, num)], per_ply[(c, den)]
                print(f"{commit}: {num} / {den} per ply: analyze_block {x[0] / y[0]:.3f}, replay {x[1] / y[1]:.3f}")
    codes = list(res["runs"])
    if len(codes) > 1:
        a0, b0 = codes[0], codes[-1]
        for key in [k for k in ("standard", "matched") if k in keys]:
            x, y = per_ply[(a0, key)], per_ply[(b0, key)]
            print(
                f"A/B {key}: {res['codes'][b0]['commit']} / {res['codes'][a0]['commit']} per ply: analyze_block "
                f"{y[0] / x[0]:.3f}, replay {y[1] / x[1]:.3f}"
            )
            for c in codes:
                print(
                    f"    {res['codes'][c]['commit']} {key} ns/ply per round: "
                    + ", ".join(f"{1e9 * r[key]['cpu_s'] / r[key]['plies']:.1f}" for r in res["runs"][c])
                )
    pc = res.get("python_chess")
    if pc and "chess960" in keys:
        c = codes[-1]
        x = per_ply[(c, "chess960")][0]
        print()
        for mode in ("replay", "claims"):
            d = pc[mode]
            ns = 1e9 * d["cpu_s"] / d["plies"]
            print(
                f"python-chess {pc['chess_version']} {mode} on the Chess960 games: {d['games']} games, "
                f"{d['plies']:,} plies, {d['cpu_s']:.2f} CPU s = {d['games'] / d['cpu_s']:,.0f} games/s, "
                f"{ns / 1000:.1f} µs/ply = {ns / x:,.0f}x the analyzer ({res['codes'][c]['commit']})"
            )


if __name__ == "__main__":
    sys.exit(main())
