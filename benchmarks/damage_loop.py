"""Damage loop: the dataset at rest under deleted, truncated and flipped files. A scan of a
pzstd input (2 workers, one unit per frame, small compacted files so a source has several)
writes OUT; then, cycle after cycle, a random file of OUT is damaged (a table file or a record:
deleted, truncated, or a byte flipped), `analyzer verify OUT --deep` is run, and then the
command it prints to repair (or, if it finds nothing, the plain rerun); the tables must then
equal a clean run's, `verify --deep` must say whole, and nothing may print a traceback.

    python benchmarks/damage_loop.py --cycles 50 --seed 1        # the RESULTS.md run
    python benchmarks/damage_loop.py --cycles 6 --seed 3 --copies 2 --compact-games 1000 --json  # the test's

Counts per damage kind: cycles, what verify found (exit 1), units recomputed by the repair
(games analyzed against the source's games), tables equal, games lost, rows wrong, tracebacks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kill_loop  # noqa: E402  (the same input, command and table reader as the kill loop)
from kill_loop import _small_text, _tables  # noqa: E402

KINDS = (
    "delete_part",
    "truncate_part",
    "flip_part",
    "delete_record",
    "truncate_record",
    "flip_record",
)


def _scan_cmd(src: str, out: str, compact: int) -> list[str]:
    return kill_loop._scan_cmd(src, out, compact=compact)


def _files(out: str, kind: str) -> list[str]:
    found = []
    for root, _dirs, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, out)
            table_file = n.endswith(".parquet") and not rel.startswith("report")
            # records: not the last run's summary (run.json), which nothing reads to decide anything
            record = rel.startswith("_manifest" + os.sep) and n.endswith(".json") and n != "run.json"
            if table_file if kind.endswith("part") else record:
                found.append(p)
    return sorted(found)


def _damage(rng: random.Random, out: str, kind: str) -> str:
    files = _files(out, kind)
    path = rng.choice(files)
    size = os.path.getsize(path)
    if kind.startswith("delete"):
        os.remove(path)
    elif kind.startswith("truncate"):
        os.truncate(path, rng.randrange(0, max(size, 1)))
    else:
        with open(path, "r+b") as fh:
            at = rng.randrange(size)
            fh.seek(at)
            b = fh.read(1)
            fh.seek(at)
            fh.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
    return os.path.relpath(path, out)


def _run(cmd: list[str]) -> tuple[int, str, str]:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return r.returncode, r.stdout, r.stderr


def run(cycles: int, seed: int, copies: int, compact: int, workdir: str) -> dict:
    rng = random.Random(seed)
    plain = os.path.join(workdir, "games.pgn")
    with open(plain, "wb") as fh:
        fh.write(_small_text() * copies)
    src = os.path.join(workdir, "games.pgn.zst")
    subprocess.run(["pzstd", "-q", "-1", "-p", "2", "-f", "-o", src, plain], check=True)
    os.remove(plain)
    ref = os.path.join(workdir, "ref")
    t0 = time.time()
    code, stdout, stderr = _run(_scan_cmd(src, ref, compact))
    if code != 0:
        raise SystemExit(f"reference run failed: {stderr[-2000:]}")
    clean_seconds = time.time() - t0
    ref_tables = _tables(ref)
    total_games = json.loads(stdout.splitlines()[-1])["games"]
    out = os.path.join(workdir, "out")
    code, _, stderr = _run(_scan_cmd(src, out, compact))
    if code != 0:
        raise SystemExit(f"first run failed: {stderr[-2000:]}")
    per_kind = {k: {"cycles": 0, "found_by_verify": 0, "games_recomputed": 0, "equal": 0} for k in KINDS}
    stats: dict = {
        "cycles": cycles,
        "seed": seed,
        "input_games": total_games,
        "compact_games": compact,
        "clean_run_seconds": round(clean_seconds, 2),
        "games_lost": 0,
        "rows_wrong": 0,
        "tracebacks": 0,
        "verify_whole_after": 0,
        "final_equal": 0,
        "repair_seconds": [],
        "failures": [],
    }
    for cycle in range(cycles):
        kind = KINDS[cycle % len(KINDS)] if cycle < len(KINDS) else rng.choice(KINDS)
        k = per_kind[kind]
        k["cycles"] += 1
        what = _damage(rng, out, kind)
        vcode, vout, verr = _run([sys.executable, "-m", "analyzer", "verify", out, "--deep", "--json"])
        stats["tracebacks"] += "Traceback" in verr
        report = json.loads(vout.strip().splitlines()[-1]) if vout.strip() else {"sources": []}
        repairs = [s["repair"] for s in report["sources"] if s.get("repair")]
        if vcode == 1:
            k["found_by_verify"] += 1
        else:
            k.setdefault("not_found", []).append(what)
        # The repair as verify prints it (the scan's own recorded command, or one built from the
        # record), else the plain rerun of the scan.
        cmd = shlex.split(repairs[0]) if repairs else ["analyzer", *_scan_cmd(src, out, compact)[3:]]
        cmd = [sys.executable, "-m", "analyzer", *cmd[1:], *([] if "--json" in cmd else ["--json"])]
        t0 = time.time()
        code, stdout, stderr = _run(cmd)
        stats["repair_seconds"].append(round(time.time() - t0, 2))
        stats["tracebacks"] += "Traceback" in stderr
        if code != 0:
            stats["failures"].append(f"cycle {cycle} ({kind} {what}): repair exited {code}: {stderr[-500:]}")
            continue
        summary = json.loads(stdout.splitlines()[-1])
        k["games_recomputed"] += summary["games_analyzed"]
        g, v, e = _tables(out)
        rg, rv, re_ = ref_tables
        stats["games_lost"] += max(0, rg.height - g.height)
        same = g.equals(rg) and v.equals(rv) and e.equals(re_)
        if same:
            k["equal"] += 1
            stats["final_equal"] += 1
        else:
            stats["rows_wrong"] += abs(rg.height - g.height) + abs(rv.height - v.height) or 1
            stats["failures"].append(f"cycle {cycle} ({kind} {what}): tables differ after the repair")
        wcode, _, werr = _run([sys.executable, "-m", "analyzer", "verify", out, "--deep"])
        stats["tracebacks"] += "Traceback" in werr
        stats["verify_whole_after"] += wcode == 0
    stats["per_kind"] = per_kind
    secs = sorted(stats["repair_seconds"])
    stats["repair_seconds"] = {"median": secs[len(secs) // 2] if secs else None, "max": secs[-1] if secs else None}
    stats["ok"] = (
        stats["games_lost"] == 0
        and stats["rows_wrong"] == 0
        and stats["tracebacks"] == 0
        and stats["final_equal"] == cycles
        and stats["verify_whole_after"] == cycles
    )
    return stats


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--copies", type=int, default=4, help="lichess_small repeated this many times")
    p.add_argument("--compact-games", type=int, default=2500, help="games per compacted file (several per source)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="analyzer-damage-loop-") as tmp:
        stats = run(args.cycles, args.seed, args.copies, args.compact_games, tmp)
    if args.json:
        print(json.dumps(stats))
    else:
        for k, v in stats.items():
            print(f"{k:>20}: {v}")
    return 0 if stats["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
