"""Throughput from a local S3 API (moto's server on 127.0.0.1) against local disk, in one run.

    python benchmarks/bench_objstore.py [--input FILE.pgn.zst] [--copies N] [--rounds R] [--workers 1 2]

The input is decompressed and recompressed with `pzstd -p 2` (so it has frames: ~8 MiB of
text each at pzstd's default level); --copies files of it (dump-1 ... dump-N, as several
months) are scanned in one job, from disk and as objects in a bucket of a moto server started
here. Each round runs, back to back and in turn, `analyzer scan` (a fresh process, warm kernel
cache, --edition fide_2018) on:
  local -> local     the files on disk, OUT on disk
  s3 -> local        the objects (s3://bench/in/*.pgn.zst), OUT on disk: the cost of ranged reads
  s3 -> s3           the objects, OUT in the same bucket (parts by PUT, lease, manifest reads)
and reports wall time, games/s and the scan's own seconds (after start-up). Then the frame
index walk of the object: ranged reads and seconds, and the latency of one 12-byte ranged read
(median of 200). The moto server runs in this process, on the same 2 cores as the scan: its
CPU time is part of the overhead measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)  # this checkout's analyzer, also for the scans (run with cwd = ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", default="/work/shared/data/lichess_sample.pgn.zst")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--frames-per-unit", type=int, default=None)
    args = ap.parse_args()

    from servers import S3Server

    tmp = tempfile.mkdtemp(prefix="bench-objstore-")
    try:
        plain = os.path.join(tmp, "bench.pgn")
        with open(plain, "wb") as out:
            out.write(subprocess.run(["zstd", "-dc", args.input], check=True, capture_output=True).stdout)
        packed = os.path.join(tmp, "bench.pgn.zst")
        subprocess.run(["pzstd", "-q", "-p", "2", "-f", "-o", packed, plain], check=True)
        os.remove(plain)
        size = os.path.getsize(packed)
        local_dir = os.path.join(tmp, "in")
        os.makedirs(local_dir)
        server = S3Server()
        os.environ.update(server.env)
        client = server.client()
        client.create_bucket(Bucket="bench")
        with open(packed, "rb") as fh:
            body = fh.read()
        for k in range(args.copies):
            shutil.copy(packed, os.path.join(local_dir, f"dump-{k + 1}.pgn.zst"))
            client.put_object(Bucket="bench", Key=f"in/dump-{k + 1}.pgn.zst", Body=body)
        local_glob = os.path.join(local_dir, "*.pgn.zst")
        url = "s3://bench/in/*.pgn.zst"
        env = {**os.environ, **server.env}
        commit = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        print(
            f"bench_objstore  {time.strftime('%Y-%m-%d %H:%M:%S %Z')}  code {commit} (+ uncommitted edits if any)  "
            f"input {args.input} -> pzstd -p 2: {size / 1e6:.1f} MB, {args.copies} copies as {args.copies} sources; "
            f"load avg {os.getloadavg()[0]:.2f}",
            flush=True,
        )

        def scan(src, out, workers):
            cmd = [
                sys.executable,
                "-m",
                "analyzer",
                "-q",
                "scan",
                src,
                "--out",
                out,
                "--workers",
                str(workers),
                "--edition",
                "fide_2018",
                "--json",
                "--progress",
                "none",
                "--force",
            ]
            if args.frames_per_unit:
                cmd += ["--frames-per-unit", str(args.frames_per_unit)]
            t = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
            wall = time.perf_counter() - t
            if r.returncode != 0:
                raise SystemExit(f"{cmd}: exit {r.returncode}\n{r.stderr}")
            s = json.loads(r.stdout.strip().splitlines()[-1])
            return wall, s

        rows: dict = {}
        for rnd in range(args.rounds):
            for w in args.workers:
                for name, src, out in (
                    ("local -> local", local_glob, os.path.join(tmp, "out")),
                    ("s3 -> local", url, os.path.join(tmp, "out")),
                    ("s3 -> s3", url, "s3://bench/out"),
                ):
                    wall, s = scan(src, out, w)
                    rows.setdefault((name, w), []).append(
                        (wall, s["seconds"], s["games"], s["units"], sorted(set(s["engine_by_source"].values())))
                    )
                    print(
                        f"round {rnd + 1} w{w} {name}: {wall:.2f} s wall, scan {s['seconds']:.2f} s, "
                        f"{s['games']:,} games, {s['units']} units, {s['engine_by_source']}",
                        flush=True,
                    )

        print()
        print(
            "| run | workers | engine | wall s best (median) | scan s best (median) "
            "| games/s (scan, best) | scan ÷ local |"
        )
        print("|---|---:|---|---:|---:|---:|---:|")
        for w in args.workers:
            base = min(r[1] for r in rows[("local -> local", w)])
            for name in ("local -> local", "s3 -> local", "s3 -> s3"):
                rr = rows[(name, w)]
                walls = [r[0] for r in rr]
                scans = [r[1] for r in rr]
                games = rr[0][2]
                print(
                    f"| {name} | {w} | {'+'.join(rr[0][4])} | {min(walls):.2f} ({statistics.median(walls):.2f}) | "
                    f"{min(scans):.2f} ({statistics.median(scans):.2f}) | {games / min(scans):,.0f} | "
                    f"{min(scans) / base:.2f} |"
                )

        # The frame index walk and the latency of one small ranged read.
        from analyzer.io import remote, sources

        remote.configure({})
        stats: dict = {}
        t = time.perf_counter()
        one = "s3://bench/in/dump-1.pgn.zst"
        frames = sources.pzstd_frames(one, size, stats)
        walk = time.perf_counter() - t
        lat = []
        for _i in range(200):
            t = time.perf_counter()
            remote.read_range(one, 0, 12)
            lat.append(time.perf_counter() - t)
        print()
        big = []
        for _i in range(20):
            t = time.perf_counter()
            remote.read_range(one, 0, 8 << 20)
            big.append(time.perf_counter() - t)
        print(f"one 8 MiB ranged read: median {statistics.median(big) * 1000:.1f} ms")
        print(
            f"frame index walk of one object ({size / 1e6:.1f} MB): {len(frames)} frames, "
            f"{stats['reads']} ranged read(s), {walk * 1000:.1f} ms; "
            f"one 12-byte ranged read: median {statistics.median(lat) * 1000:.2f} ms, "
            f"p90 {sorted(lat)[179] * 1000:.2f} ms (moto on 127.0.0.1)"
        )
        server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
