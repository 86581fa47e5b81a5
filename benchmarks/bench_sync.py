"""`analyzer sync` over synthetic Lichess months served by a local HTTP server (issue 38, point 5).

    python benchmarks/bench_sync.py --copies 20            # 3 months of ~1 M games (quick)
    python benchmarks/bench_sync.py --copies 198           # 3 months of 10,042,956 games each (RESULTS.md)

Each month is lichess_sample's text repeated --copies times, rotated by a different number of
games per month (so that the three months differ), cut into pzstd-style frames of 64 MiB of
text at zstd level 3 (as benchmarks/bench_month.py builds its month), named
`standard/lichess_db_standard_rated_2030-0M.pgn.zst` beside the listing's `list.txt`,
`sha256sums.txt` (sha256sum's format) and `counts.txt` (the sample has 50,722 `[Site ` lines:
copies x 50,722). The listing is served by tests/servers.py's HTTP server (byte ranges, ETag) in
a process of its own, and synced by `analyzer sync URL --out OUT --workers W --json` (one process: its worker threads
analyze the units its reader cuts from the stream), measured from here: wall, CPU and peak RSS
(wait4), and the bytes it wrote to storage (/proc/PID/io): against OUT's size, the disk used
beside OUT (none is expected: the months are streamed, no copy is written). OUT's size and the
file system's used bytes are also sampled every second (the latter moves with every other
process on the disk). Then a second sync of the same listing (nothing new).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from pzstd_frames import write_repeated  # noqa: E402

SHARED = os.environ.get("ANALYZER_SHARED_DATA") or os.path.join(REPO, "..", "shared", "data")
SAMPLE_GAMES = 50_722
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
    write_repeated(path, b"".join(games[rotate:] + games[:rotate]), copies, log)


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


def _io(pid: int) -> dict:
    try:
        with open(f"/proc/{pid}/io") as fh:
            return {k: int(v) for k, v in (line.split(": ") for line in fh)}
    except OSError:
        return {}


def run_measured(cmd: list[str], stdout: str, stderr: str) -> dict:
    """cmd as one process (the sync: worker threads, no child process), measured from here:
    wall, CPU and peak RSS (wait4), and the bytes it wrote to and read from storage
    (/proc/PID/io, sampled until it exits: its own writes, whoever else uses the disk)."""
    t0 = time.time()
    with open(stdout, "w") as out, open(stderr, "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        last: dict = {}
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)  # (not poll(): its rusage is wanted)
            if pid:
                break
            last = _io(proc.pid) or last
            time.sleep(0.2)
    wall = time.time() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "rc": proc.returncode,
        "wall": wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "maxrss_mb": ru.ru_maxrss / 1024.0,
        "write_bytes": last.get("write_bytes", 0),
        "read_bytes": last.get("read_bytes", 0),
    }


READER = """
import json, sys, time, resource
from analyzer.engine.config import Config
from analyzer.engine.plan import iter_sequential_units
from analyzer.io import listing, sources
from analyzer.kinds import resolve_editions
url = sys.argv[1]
raw = listing.HTTPStream(url).open()
info = sources.inspect_stream(url, raw, "m", raw.size, raw.mtime, "x", url=True)
cfg = Config(out="/nonexistent", editions=resolve_editions(["fide_2018"]))
t0, c0 = time.time(), time.process_time()
units = games = text = 0
for spec in iter_sequential_units(info, cfg, cfg.editions, digest_into={}):
    units += 1
    games += len(spec.game_starts) if spec.game_starts is not None else 0
    text += sum(len(p) for p in spec.payload)
print(json.dumps({"games": games, "units": units, "text_gb": round(text / 1e9, 2),
                  "wall_s": round(time.time() - t0, 1), "cpu_s": round(time.process_time() - c0, 1)}))
"""


def reader_rate(url: str) -> dict:
    """The stream reader alone (one thread: HTTP, SHA-256, zstd decode, game starts, units cut):
    the ceiling of one month's sync, whatever the number of workers."""
    r = subprocess.run([sys.executable, "-c", READER, url], capture_output=True, text=True, check=True)
    m = json.loads(r.stdout.strip().splitlines()[-1])
    m["games_per_s_wall"] = round(m["games"] / m["wall_s"])
    m["games_per_cpu_s"] = round(m["games"] / m["cpu_s"])
    return m


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
        m = run_measured(cmd, stdout, stderr)
        sampler.stop.set()
        sampler.join()
        with open(stdout) as fh:
            summary = json.loads(fh.read().strip().splitlines()[-1])
        log(f"sync: exit {m['rc']}, {m['wall']:.1f} s, {summary['exit_cause']}")
        m2 = run_measured(cmd, stdout + "2", stderr + "2")
        with open(stdout + "2") as fh:
            again = json.loads(fh.read().strip().splitlines()[-1])
        reader = reader_rate(f"{url}/standard/{files[0]}")
        log(f"reader alone: {reader}")
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
            "peak_rss_mb": round(m["maxrss_mb"]),
            "written_mb": round(m["write_bytes"] / 1e6, 1),
            "read_mb": round(m["read_bytes"] / 1e6, 1),
            "out_mb": round(_tree_size(out) / 1e6, 1),
            "out_peak_mb": round(sampler.peak_out / 1e6, 1),
            "disk_beside_out_peak_mb": round(sampler.peak_beside / 1e6, 1),
            "per_month_seconds": {x["source"]: x["seconds"] for x in summary["months"]},
            "resumes": summary["resumes"],
            "second_run": {"exit": m2["rc"], "wall_s": round(m2["wall"], 2), "exit_cause": again["exit_cause"]},
            "reader_alone_one_month": reader,
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
