"""`analyzer sync` over synthetic Lichess months served by a local HTTP server (issue 38, point 5).

    python benchmarks/bench_sync.py --copies 20            # 3 months of ~1 M games (quick)
    python benchmarks/bench_sync.py --copies 198           # 3 months of 10,042,956 games each (RESULTS.md)

Each month is lichess_sample's text repeated --copies times, rotated by a different number of
games per month (so that the three months differ), cut into pzstd-style frames of 64 MiB of
text at zstd level 3 (as benchmarks/bench_month.py builds its month), named
`standard/lichess_db_standard_rated_2030-0M.pgn.zst` beside the listing's `list.txt`,
`sha256sums.txt` (sha256sum's format) and `counts.txt` (the sample has 50,722 `[Site ` lines:
copies x 50,722). The listing is served by tests/servers.py's HTTP server (byte ranges, ETag) in
a process of its own, and synced by `analyzer sync URL --out OUT --workers W --json` measured by
benchmarks/bench_scan.measure (wall, CPU of the process tree, peak summed RSS). Meanwhile the
disk is sampled every second: OUT's size and the file system's used bytes, so that the disk used
beside OUT (temporary files, copies: none is expected, the months are streamed) is
max(used - used at the start - OUT). Then a second sync of the same listing (nothing new).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time

import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_scan import measure  # noqa: E402

SHARED = os.environ.get("ANALYZER_SHARED_DATA") or os.path.join(REPO, "..", "shared", "data")
SAMPLE_GAMES = 50_722
FRAME_TEXT = 64 << 20
SKIPPABLE = 0x184D2A50
EDITIONS = "fide_2018,lichess"
MONTHS = ("2030-01", "2030-02", "2030-03")


def _sample_games() -> list[bytes]:
    with open(os.path.join(SHARED, "lichess_sample.pgn.zst"), "rb") as fh:
        text = zstandard.ZstdDecompressor().decompress(fh.read(), max_output_size=1 << 31)
    parts = text.split(b"\n\n[Event ")
    games = [parts[0]] + [b"[Event " + p for p in parts[1:]]
    games = [g.rstrip(b"\n") + b"\n\n" for g in games]
    assert len(games) == SAMPLE_GAMES, len(games)
    return games


def build_month(path: str, games: list[bytes], copies: int, rotate: int, log) -> None:
    if os.path.exists(path):
        return
    text = b"".join(games[rotate:] + games[:rotate])
    cctx = zstandard.ZstdCompressor(level=3, threads=2)
    t0 = time.time()
    with open(path + ".partial", "wb") as out:
        pending = bytearray()
        for _ in range(copies):
            pending += text
            while len(pending) >= FRAME_TEXT:
                frame = cctx.compress(bytes(pending[:FRAME_TEXT]))
                out.write(struct.pack("<III", SKIPPABLE, 4, len(frame)) + frame)
                del pending[:FRAME_TEXT]
        if pending:
            frame = cctx.compress(bytes(pending))
            out.write(struct.pack("<III", SKIPPABLE, 4, len(frame)) + frame)
    os.replace(path + ".partial", path)
    log(f"built {path}: {os.path.getsize(path) / 1e9:.2f} GB in {time.time() - t0:.0f} s")


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def build_listing(root: str, copies: int, log) -> list[str]:
    d = os.path.join(root, "standard")
    os.makedirs(d, exist_ok=True)
    games = None
    files = []
    for k, month in enumerate(MONTHS):
        name = f"lichess_db_standard_rated_{month}.pgn.zst"
        path = os.path.join(d, name)
        if not os.path.exists(path):
            games = games or _sample_games()
            build_month(path, games, copies, 1000 * (k + 1), log)
        files.append(name)
    sums_path = os.path.join(d, "sha256sums.txt")
    if not os.path.exists(sums_path):
        with open(sums_path + ".partial", "w") as fh:
            for name in files:
                fh.write(f"{_sha256(os.path.join(d, name))}  {name}\n")
        os.replace(sums_path + ".partial", sums_path)
    with open(os.path.join(d, "counts.txt"), "w") as fh:
        fh.writelines(f"{name} {copies * SAMPLE_GAMES}\n" for name in files)
    with open(os.path.join(d, "list.txt"), "w") as fh:
        fh.write("\n".join(f"https://database.lichess.org/standard/{n}" for n in files))
    return files


SERVER = """
import sys, time
sys.path.insert(0, {tests!r})
from servers import HTTPRangeServer
srv = HTTPRangeServer({root!r})
print(srv.url, flush=True)
time.sleep(10**6)
"""


def _tree_size(path: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


class DiskSampler(threading.Thread):
    def __init__(self, out: str, every: float = 1.0):
        super().__init__(daemon=True)
        self.out = out
        self.every = every
        self.start_used = shutil.disk_usage(os.path.dirname(out) or ".").used
        self.peak_out = 0
        self.peak_beside = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            out = _tree_size(self.out) if os.path.isdir(self.out) else 0
            used = shutil.disk_usage(os.path.dirname(self.out) or ".").used - self.start_used
            self.peak_out = max(self.peak_out, out)
            self.peak_beside = max(self.peak_beside, used - out)
            self.stop.wait(self.every)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--copies", type=int, default=20, help="copies of lichess_sample per month (198: 10 M games)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--work", default="/tmp/analyzer-bench-sync")
    p.add_argument("--keep", action="store_true", help="keep OUT afterwards")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    root = os.path.join(args.work, f"site-{args.copies}x")
    files = build_listing(root, args.copies, log)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(tests=os.path.join(REPO, "tests"), root=root)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        out = os.path.join(args.work, f"out-{args.copies}x")
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "analyzer", "sync", url, "--out", out, "--workers", str(args.workers)]
        cmd += ["--edition", EDITIONS, "--json", "--progress", "log", "--progress-interval", "60"]
        sampler = DiskSampler(out)
        sampler.start()
        stdout, stderr = os.path.join(args.work, "sync.out"), os.path.join(args.work, "sync.err")
        m = measure(cmd, stdout=stdout, stderr=stderr, check=False)
        sampler.stop.set()
        sampler.join()
        with open(stdout) as fh:
            summary = json.loads(fh.read().strip().splitlines()[-1])
        log(f"sync: exit {m['rc']}, {m['wall']:.1f} s, {summary['exit_cause']}")
        m2 = measure(cmd, stdout=stdout + "2", stderr=stderr + "2", check=False)
        with open(stdout + "2") as fh:
            again = json.loads(fh.read().strip().splitlines()[-1])
        games = summary["games"]
        input_bytes = sum(os.path.getsize(os.path.join(root, "standard", f)) for f in files)
        result = {
            "copies": args.copies,
            "months": len(files),
            "games": games,
            "input_gb": round(input_bytes / 1e9, 3),
            "workers": args.workers,
            "exit": m["rc"],
            "exit_cause": summary["exit_cause"],
            "wall_s": round(m["wall"], 1),
            "cpu_s": round(m["cpu"], 1),
            "games_per_s_wall": round(games / m["wall"]),
            "input_mb_per_s": round(input_bytes / 1e6 / m["wall"], 1),
            "tree_peak_rss_mb": round(m["tree_rss_mb"]),
            "largest_process_rss_mb": round(m["maxrss_mb"]),
            "out_mb": round(_tree_size(out) / 1e6, 1),
            "out_peak_mb": round(sampler.peak_out / 1e6, 1),
            "disk_beside_out_peak_mb": round(sampler.peak_beside / 1e6, 1),
            "per_month_seconds": {x["source"]: x["seconds"] for x in summary["months"]},
            "resumes": summary["resumes"],
            "second_run": {"exit": m2["rc"], "wall_s": round(m2["wall"], 2), "exit_cause": again["exit_cause"]},
            "load": os.getloadavg(),
        }
        print(json.dumps(result))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(result, fh, indent=1)
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
        return 0 if m["rc"] == 0 and m2["rc"] == 0 else 1
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
