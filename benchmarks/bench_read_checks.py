"""What the read checks cost (issue 35): `analyzer report OUT` with every file's SHA-256
checked (the default) against `--no-check` (only that each listed file exists with its size),
interleaved, several rounds, on one OUT (e.g. the 10 M-game output of bench_month.py); and the
API's `scan_games(OUT).select(...).collect()` with check="digest" and check="stat".

    python benchmarks/bench_read_checks.py /tmp/analyzer-bench-month/out-198x-w2 --rounds 3

Also the inputs' hashing (issue 35 point 5): SHA-256 of an input's bytes, as the scan reads
them, against the scan's CPU seconds per core (--input; a scan of it with one worker):

    python benchmarks/bench_read_checks.py --input ../shared/data/lichess_sample.pgn.zst
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _timed(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one command (its own process)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{cmd}: failed\n{err.read().decode()[-2000:]}")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def reports(out: str, rounds: int) -> dict:
    rows: dict[str, list] = {"checked": [], "no_check": []}
    rep = tempfile.mkdtemp(prefix="analyzer-report-")
    try:
        for k in range(rounds):
            order = ("checked", "no_check") if k % 2 == 0 else ("no_check", "checked")
            for name in order:
                extra = ["--no-check"] if name == "no_check" else []
                cmd = [sys.executable, "-m", "analyzer", "report", out, "--report-dir", rep, *extra]
                rows[name].append(_timed(cmd))
            c, n = rows["checked"][-1], rows["no_check"][-1]
            print(f"[checks] round {k + 1}: report {c[0]:.1f} s checked, {n[0]:.1f} s not", file=sys.stderr)
    finally:
        shutil.rmtree(rep, ignore_errors=True)
    ratios = [c[0] / n[0] for c, n in zip(rows["checked"], rows["no_check"])]
    return {
        "report_wall_checked": [round(r[0], 2) for r in rows["checked"]],
        "report_wall_no_check": [round(r[0], 2) for r in rows["no_check"]],
        "report_cpu_checked": [round(r[1], 2) for r in rows["checked"]],
        "report_cpu_no_check": [round(r[1], 2) for r in rows["no_check"]],
        "report_peak_mb_checked": [round(r[2]) for r in rows["checked"]],
        "report_peak_mb_no_check": [round(r[2]) for r in rows["no_check"]],
        "ratio_per_round": [round(x, 3) for x in ratios],
        "median_ratio": round(statistics.median(ratios), 3),
    }


def api(out: str, rounds: int) -> dict:
    code = (
        "import sys, time, analyzer\n"
        "t = time.perf_counter()\n"
        "n = analyzer.scan_games(sys.argv[1], check=sys.argv[2]).select('game_index', 'result').collect().height\n"
        "print(time.perf_counter() - t, n)\n"
    )
    got: dict[str, list[float]] = {"digest": [], "stat": []}
    for k in range(rounds):
        for check in ("digest", "stat") if k % 2 == 0 else ("stat", "digest"):
            r = subprocess.run([sys.executable, "-c", code, out, check], capture_output=True, text=True, check=True)
            got[check].append(float(r.stdout.split()[0]))
    table_bytes = 0
    for root, _dirs, names in os.walk(os.path.join(out, "games")):
        table_bytes += sum(os.path.getsize(os.path.join(root, n)) for n in names if n.endswith(".parquet"))
    return {
        "api_games_seconds_digest": [round(x, 3) for x in got["digest"]],
        "api_games_seconds_stat": [round(x, 3) for x in got["stat"]],
        "games_table_mb": round(table_bytes / 1e6, 1),
    }


def input_hash(path: str) -> dict:
    """SHA-256 of the input as the reader reads it (4 MiB pieces), against a 1-worker scan's CPU."""
    h = hashlib.sha256()
    t0 = time.process_time()
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(4 << 20):
            h.update(chunk)
    hash_cpu = time.process_time() - t0
    out = tempfile.mkdtemp(prefix="analyzer-hash-")
    try:
        cmd = [sys.executable, "-m", "analyzer", "scan", path, "--out", out, "--workers", "1", "--progress", "none"]
        _timed(cmd)  # warm: kernels, page cache
        shutil.rmtree(out)
        wall, cpu, _ = _timed(cmd)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {
        "input": os.path.basename(path),
        "input_mb": round(os.path.getsize(path) / 1e6, 1),
        "sha256_cpu_seconds": round(hash_cpu, 3),
        "scan_cpu_seconds_1_worker": round(cpu, 3),
        "scan_wall_seconds_1_worker": round(wall, 3),
        "hash_share_of_scan_cpu": round(hash_cpu / cpu, 4),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", help="an OUT to report on")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--input", action="append", default=[], help="an input whose hashing to measure")
    args = p.parse_args()
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()}
    if args.out:
        res["report"] = reports(args.out, args.rounds)
        res["api"] = api(args.out, args.rounds)
    res["inputs"] = [input_hash(i) for i in args.input]
    res["load_after"] = os.getloadavg()
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
