"""Kill-and-rerun loop: `analyzer scan` of a pzstd input with 2 workers, killed with SIGKILL at
random moments (the first run and the reruns alike), then rerun until a rerun finishes; the
final tables must equal a clean run's. Counts kills, reruns, hangs (a rerun that neither
finished nor was killed within --hang-seconds) and games lost or changed.

    python benchmarks/kill_loop.py --cycles 60 --seed 1          # the RESULTS.md run
    python benchmarks/kill_loop.py --cycles 5 --seed 7 --json    # what tests/test_kill_loop.py runs

The input is lichess_small.pgn (tests/fixtures/data) repeated --copies times, compressed with
`pzstd -1 -p 2` (2 MiB frames) and cut one frame per unit, so a kill lands among many units.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _small_text() -> bytes:
    with open(os.path.join(REPO, "tests", "fixtures", "data", "lichess_small.pgn.zst"), "rb") as fh:
        return zstandard.ZstdDecompressor().decompress(fh.read(), max_output_size=1 << 30)


COMPACT_GAMES = 2500  # several compacted files per source, so that kills land inside compaction too


def _scan_cmd(src: str, out: str, engine: str = "local", compact: int = COMPACT_GAMES) -> list[str]:
    return [
        sys.executable,
        "-m",
        "analyzer",
        "scan",
        src,
        "--out",
        out,
        "--workers",
        "2",
        "--frames-per-unit",
        "1",
        "--engine",
        engine,
        "--compact-games",
        str(compact),
        "--progress",
        "none",
        "--json",
    ]


def _tables(out: str):
    import polars as pl

    g, v, e = (
        pl.scan_parquet(os.path.join(out, t, "*", "part-*.parquet"), hive_partitioning=True).collect()
        for t in ("games", "verdicts", "events")
    )
    return (
        g.sort(["source", "game_index"]),
        v.sort(["source", "edition", "game_index"]),
        e.sort(["source", "edition", "game_index", "ply", "rule", "kind"]),
    )


def _children_alive(pids: set[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    return alive


def _descendants(pid: int) -> set[int]:
    kids = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.add(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return kids


class _Finished(Exception):
    """The run ended before the kill aimed at it."""


def _compaction_started(out: str) -> bool:
    folder = os.path.join(out, "_manifest", "games")
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(n.startswith("group-") for n in names) or any(
        n.startswith(".analyzer-tmp-") and "part-" in n and n.count("-") >= 6
        for t in ("games", "verdicts", "events")
        for n in _listdir(os.path.join(out, t, "source=games"))
    )


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _in_compaction(out: str) -> bool:
    """Compacted files or group records written, the source record not yet."""
    return _compaction_started(out) and not os.path.exists(os.path.join(out, "_manifest", "games", "source.json"))


def _wait_for_compaction(proc, out: str, seconds: float) -> bool:
    """Poll (every ms) until the run starts compacting; False if it ended first."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if _compaction_started(out):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.001)
    return False


def run(
    cycles: int,
    seed: int,
    copies: int,
    hang_seconds: float,
    max_kill: float,
    workdir: str,
    compaction_share: float = 0.3,
    engine: str = "local",
) -> dict:
    rng = random.Random(seed)
    plain = os.path.join(workdir, "games.pgn")
    with open(plain, "wb") as fh:
        fh.write(_small_text() * copies)
    src = os.path.join(workdir, "games.pgn.zst")
    subprocess.run(["pzstd", "-q", "-1", "-p", "2", "-f", "-o", src, plain], check=True)
    os.remove(plain)
    ref = os.path.join(workdir, "ref")
    t0 = time.time()
    r = subprocess.run(_scan_cmd(src, ref, "threads"), capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"reference run failed: {r.stderr[-2000:]}")
    clean_seconds = time.time() - t0
    ref_tables = _tables(ref)
    stats = {
        "cycles": cycles,
        "seed": seed,
        "input_games": json.loads(r.stdout.splitlines()[-1])["games"],
        "clean_run_seconds": round(clean_seconds, 2),
        "kills": 0,
        "kills_of_reruns": 0,
        "runs": 0,
        "finished_runs": 0,
        "hangs": 0,
        "orphan_workers": 0,
        "final_equal": 0,
        "games_lost": 0,
        "rows_changed": 0,
        "kills_in_compaction": 0,
    }
    for cycle in range(cycles):
        out = os.path.join(workdir, f"out{cycle}")
        killed_before = 0
        while True:
            stats["runs"] += 1
            proc = subprocess.Popen(_scan_cmd(src, out, engine), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            kill_now = killed_before < 3 and rng.random() < (0.8 if killed_before == 0 else 0.5)
            deadline = rng.uniform(0.2, max_kill or max(0.5, 1.1 * clean_seconds)) if kill_now else hang_seconds
            # A share of the kills aims at compaction: when the first compacted file or group
            # record of the run appears, a few milliseconds later.
            at_compaction = kill_now and rng.random() < compaction_share
            try:
                if at_compaction:
                    if not _wait_for_compaction(proc, out, hang_seconds):
                        if proc.poll() is not None:
                            raise _Finished
                        raise subprocess.TimeoutExpired(proc.args, 0)
                    time.sleep(rng.uniform(0, 0.04))
                    if proc.poll() is not None:
                        raise _Finished
                    raise subprocess.TimeoutExpired(proc.args, 0)
                proc.wait(timeout=deadline)
            except _Finished:
                pass
            except subprocess.TimeoutExpired:
                kids = _descendants(proc.pid)
                if _in_compaction(out):
                    stats["kills_in_compaction"] += 1
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                if not kill_now:
                    stats["hangs"] += 1
                    raise SystemExit(
                        f"hang: cycle {cycle} run {stats['runs']} did not finish in {hang_seconds} s"
                    ) from None
                stats["kills"] += 1
                if killed_before:
                    stats["kills_of_reruns"] += 1
                killed_before += 1
                time.sleep(0.3)
                stats["orphan_workers"] += len(_children_alive(kids))
                continue
            proc.stdout.read()
            err = proc.stderr.read().decode(errors="replace")
            if proc.returncode != 0:
                raise SystemExit(f"cycle {cycle}: rerun exited {proc.returncode}: {err[-2000:]}")
            stats["finished_runs"] += 1
            break
        g, v, e = _tables(out)
        rg, rv, re_ = ref_tables
        stats["games_lost"] += max(0, rg.height - g.height)
        same = g.equals(rg) and v.equals(rv) and e.equals(re_)
        stats["final_equal"] += int(same)
        if not same:
            stats["rows_changed"] += abs(rg.height - g.height) or 1
        shutil.rmtree(out, ignore_errors=True)
    stats["ok"] = (
        stats["hangs"] == 0
        and stats["games_lost"] == 0
        and stats["orphan_workers"] == 0
        and stats["final_equal"] == cycles
    )
    return stats


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--copies", type=int, default=5, help="lichess_small repeated this many times (~14 frames at 5)")
    p.add_argument("--hang-seconds", type=float, default=180.0)
    p.add_argument(
        "--max-kill",
        type=float,
        default=0,
        help="kill at a random moment up to this many seconds (default: 1.1 x a clean run)",
    )
    p.add_argument(
        "--compaction-share", type=float, default=0.3, help="share of the kills aimed at the start of compaction"
    )
    p.add_argument(
        "--engine",
        default="local",
        choices=("local", "threads"),
        help="local: forked workers for the pzstd input; threads: held units written straight into their groups",
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="analyzer-kill-loop-") as tmp:
        stats = run(
            args.cycles,
            args.seed,
            args.copies,
            args.hang_seconds,
            args.max_kill,
            tmp,
            args.compaction_share,
            args.engine,
        )
    if args.json:
        print(json.dumps(stats))
    else:
        for k, v in stats.items():
            print(f"{k:>20}: {v}")
    return 0 if stats["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
