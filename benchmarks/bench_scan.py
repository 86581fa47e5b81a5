#!/usr/bin/env python3
"""End-to-end throughput benchmark of `analyzer scan` against its peers, in one run, on one file.

Measured on the same input, interleaved in rounds so that machine load hits every tool alike:

  floor          zstd -d -c FILE > /dev/null
  analyzer w1/w2 python -m analyzer.cli scan FILE --out TMP --workers {1,2} --force
                 --progress-interval 0   (.pgn.zst in, Parquet out, edition fide_2018 with
                 intended-move claims), warm: `analyzer warmup` is run first with an empty
                 NUMBA_CACHE_DIR and reported separately as the (cold) compile time
  pgn-extract    pgn-extract --repetition -o /dev/null TEXT   (on the decompressed text)
  python-chess   read_game + push every mainline move (replay), and the same with
                 can_claim_threefold_repetition / can_claim_fifty_moves / is_fivefold_repetition /
                 is_seventyfive_moves / is_checkmate at every ply (claims), on the first N games
                 (time-bounded), extrapolated to games/s
  stages         in-process, one core: zstd decode, split_games, analyze_block (with its kernels
                 timed separately), Parquet write
  10x            the decompressed text repeated 10 times (--multiples 10,20 for more), recompressed
                 with zstd -1 -T2, scanned with --workers 2: peak RSS must not grow with the input

Every external command runs under a small wrapper process (`bench_scan.py _measure`) that
reports the command's wall time, user+sys CPU (getrusage RUSAGE_CHILDREN), peak RSS of its
largest process (ru_maxrss) and the peak of the summed RSS of its process tree (sampled /proc).

The analyzer code measured is a snapshot (default: `git archive HEAD analyzer`) in a temp dir,
so that concurrent edits of the working tree cannot change the code (or invalidate the numba
cache) in the middle of a run. Everything lives in one temp dir, removed at the end.

    python benchmarks/bench_scan.py                  # full run (~15-20 min on 2 busy cores)
    python benchmarks/bench_scan.py --quick          # first 5,000 games, no 10x (~2-3 min)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_INPUT = "/work/shared/data/lichess_sample.pgn.zst"
PEERS_DIR = (
    os.path.join(os.path.dirname(REPO), "shared", "peers")
    if os.path.isdir(os.path.join(os.path.dirname(REPO), "shared", "peers"))
    else "/work/shared/peers"
)


# ------------------------------------------------------------------------------------------------
# The measuring wrapper (runs in its own process so that ru_maxrss covers only one command)


def _proc_children() -> dict:
    kids: dict = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                s = fh.read()
            ppid = int(s[s.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree_rss(root: int, page: int) -> dict:
    """{pid: resident bytes} for root and all its descendants."""
    kids = _proc_children()
    out = {}
    stack = [root]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm", "rb") as fh:
                out[p] = int(fh.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
        stack.extend(kids.get(p, ()))
    return out


def _measure_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    # handed to the child; this one-shot wrapper process exits when the child has
    out = open(spec["stdout"], "wb") if spec.get("stdout") else subprocess.DEVNULL  # noqa: SIM115
    err = open(spec["stderr"], "wb") if spec.get("stderr") else subprocess.DEVNULL  # noqa: SIM115
    inp = open(spec["stdin"], "rb") if spec.get("stdin") else subprocess.DEVNULL  # noqa: SIM115
    page = os.sysconf("SC_PAGE_SIZE")
    peak = [0]
    per_pid: dict = {}
    stop = threading.Event()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(spec["cmd"], stdin=inp, stdout=out, stderr=err, cwd=spec.get("cwd"))

    def sample():
        while not stop.wait(spec.get("sample", 0.1)):
            rss = _tree_rss(proc.pid, page)
            peak[0] = max(peak[0], sum(rss.values()))
            for k, v in rss.items():
                per_pid[k] = max(per_pid.get(k, 0), v)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    rc = proc.wait()
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "rc": rc,
                "wall": wall,
                "user": r1.ru_utime - r0.ru_utime,
                "sys": r1.ru_stime - r0.ru_stime,
                "maxrss_mb": r1.ru_maxrss / 1024.0,
                "tree_rss_mb": peak[0] / 2**20,
                "main_rss_mb": per_pid.get(proc.pid, 0) / 2**20,
                "child_rss_mb": max([v for k, v in per_pid.items() if k != proc.pid] or [0]) / 2**20,
            }
        )
    )
    return 0


def measure(cmd, *, env=None, cwd=None, stdout=None, stderr=None, stdin=None, check=True) -> dict:
    """Run cmd under the wrapper; {'rc','wall','user','sys','cpu','maxrss_mb','tree_rss_mb'}."""
    spec = {"cmd": cmd, "cwd": cwd, "stdout": stdout, "stderr": stderr, "stdin": stdin}
    r = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "_measure", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise RuntimeError(f"measuring wrapper failed for {cmd}: {r.stderr}")
    m = json.loads(r.stdout.strip().splitlines()[-1])
    m["cpu"] = m["user"] + m["sys"]
    if check and m["rc"] != 0:
        tail = ""
        if stderr and os.path.exists(stderr):
            with open(stderr, "rb") as fh:
                tail = fh.read()[-2000:].decode("utf-8", "replace")
        raise RuntimeError(f"command failed (exit {m['rc']}): {' '.join(cmd)}\n{tail}")
    return m


# ------------------------------------------------------------------------------------------------
# python-chess peer (runs as `bench_scan.py _pychess MODE N BUDGET FILE`)


def _pychess_main(mode: str, n: int, budget: float, path: str) -> int:
    import io

    import chess
    import chess.pgn

    if path.endswith(".zst"):
        import zstandard

        # read until this one-shot peer process exits
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))  # noqa: SIM115
        fh = io.TextIOWrapper(io.BufferedReader(raw, 1 << 20), encoding="utf-8", errors="replace")
    else:
        fh = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - as above
    claims = mode == "claims"
    counts = {"threefold_claim": 0, "fifty_claim": 0, "fivefold": 0, "seventyfive": 0, "checkmate": 0}

    def check(b: chess.Board) -> None:
        if b.can_claim_threefold_repetition():
            counts["threefold_claim"] += 1
        if b.can_claim_fifty_moves():
            counts["fifty_claim"] += 1
        if b.is_fivefold_repetition():
            counts["fivefold"] += 1
        if b.is_seventyfive_moves():
            counts["seventyfive"] += 1
        if b.is_checkmate():
            counts["checkmate"] += 1

    games = plies = 0
    t_read = 0.0
    t0 = time.perf_counter()
    c0 = time.process_time()
    while games < n and time.perf_counter() - t0 < budget:
        a = time.perf_counter()
        g = chess.pgn.read_game(fh)
        t_read += time.perf_counter() - a
        if g is None:
            break
        board = g.board()
        if claims:
            check(board)
        for mv in g.mainline_moves():
            board.push(mv)
            plies += 1
            if claims:
                check(board)
        games += 1
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    out = {
        "mode": mode,
        "games": games,
        "plies": plies,
        "seconds": wall,
        "cpu_seconds": cpu,
        "read_game_seconds": t_read,
        "games_per_second": games / wall if wall else None,
        "chess_version": chess.__version__,
    }
    if claims:
        out["ply_counts"] = counts
    print(json.dumps(out))
    return 0


# ------------------------------------------------------------------------------------------------
# Per-stage timings in-process (runs as `bench_scan.py _stages ZST_FILE`, with the snapshot on
# PYTHONPATH and the warm numba cache)


def _stages_main(path: str) -> int:
    import numpy as np
    import pyarrow as pa
    import zstandard

    import analyzer.analysis as AN
    import analyzer.kinds.chess._replay as R
    import analyzer.kinds.chess.analyze as A
    import analyzer.tables as T
    from analyzer.engine.parts import write_table
    from analyzer.kinds import resolve_editions as resolve
    from analyzer.pgn.split import split_games

    clocks: dict = {}

    # load every kernel from the numba cache first (its cost is the "cache load" row, not a stage)
    w, c = time.perf_counter(), time.process_time()
    from analyzer.warmup import warmup

    try:
        warmup(["chess"])
    except TypeError:  # a --code revision from before per-kind warmups
        warmup()
    kernel_load = {"wall": time.perf_counter() - w, "cpu": time.process_time() - c}

    def timed(mod, name, label):
        fn = getattr(mod, name, None)
        if fn is None:
            print(f"bench_scan: stage {label!r}: {mod.__name__}.{name} not found", file=sys.stderr)
            return

        def wrapper(*a, **k):
            w, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                acc = clocks.setdefault(label, [0.0, 0.0])
                acc[0] += time.perf_counter() - w
                acc[1] += time.process_time() - c

        setattr(mod, name, wrapper)

    def span(label, w, c):
        acc = clocks.setdefault(label, [0.0, 0.0])
        acc[0] += time.perf_counter() - w
        acc[1] += time.process_time() - c

    # stage 1: decompression alone, in 4 MiB reads (as the pipeline reads)
    w, c = time.perf_counter(), time.process_time()
    parts = []
    with open(path, "rb") as fh:
        reader = zstandard.ZstdDecompressor().stream_reader(fh)
        while True:
            chunk = reader.read(4 << 20)
            if not chunk:
                break
            parts.append(chunk)
    span("zstd decode (zstandard, in-process)", w, c)
    text = b"".join(parts)
    del parts

    # stage 2: split into 8 MiB blocks of whole games (as RegionAnalyzer does)
    block = 8 << 20
    blocks = []
    w, c = time.perf_counter(), time.process_time()
    pos = 0
    view = memoryview(text)
    while pos < len(text):
        buf = np.frombuffer(view[pos : pos + block], dtype=np.uint8)  # read-only, no copy (as the stream)
        final = pos + block >= len(text)
        starts, ends, consumed = split_games(buf, final)
        if consumed == 0:
            raise SystemExit("split_games consumed nothing: a game larger than the block size")
        blocks.append((pos, buf, starts, ends))
        pos += consumed
    span("split_games (numba scan)", w, c)

    # stage 3: analyze_block, with its kernels timed separately. Since the kernels built ahead of
    # time, the scan calls them through analyzer.kernels (built or JIT); before, from their modules.
    try:
        import analyzer.kernels as K
    except ImportError:
        K = None
    timed(A, "TagValues", "  tags (numba parse_tags + header columns)")
    timed(K or R, "replay_batch", "  replay_batch (numba replay + facts)")
    timed(A, "_rules", "  rules per edition (numba apply_rules)")
    timed(T, "build", "  tables (Arrow: games, verdicts, events; with the measures)")
    timed(K or T, "apply_measures", "    measures (numba, inside tables)")
    eds = resolve(["fide_2018"])
    results = []
    games = 0
    w, c = time.perf_counter(), time.process_time()
    for base, buf, starts, ends in blocks:
        res = AN.analyze_block(
            "chess",
            buf,
            starts[: len(ends)],
            ends,
            source="bench",
            first_game_index=games,
            base_offset=base,
            editions=eds,
        )
        games += len(starts)
        results.append((res.games, res.verdicts, res.events))
    span("analyze_block (total)", w, c)

    # stage 4: Parquet write, to a temp dir, as the engine writes its parts (engine.parts)
    tmp = tempfile.mkdtemp(prefix="bench_stages-")
    sizes = {}
    try:
        w, c = time.perf_counter(), time.process_time()
        for t, name in enumerate(("games", "verdicts", "events")):
            path = os.path.join(tmp, f"{name}.parquet")
            write_table(pa.concat_tables([r[t] for r in results]), path)
            sizes[name] = os.path.getsize(path)
        span("Parquet write (engine.parts.write_table)", w, c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        json.dumps(
            {
                "games": games,
                "text_bytes": len(text),
                "blocks": len(blocks),
                "kernel_load": kernel_load,
                "parquet_bytes": sizes,
                "stages": {k: {"wall": v[0], "cpu": v[1]} for k, v in clocks.items()},
            }
        )
    )
    return 0


# ------------------------------------------------------------------------------------------------
# Orchestration


def _sh(cmd, **kw) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, **kw).stdout.strip()


def machine_info() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                    break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram": mem,
        "python": platform.python_version(),
        "host": platform.node(),
        "kernel": platform.release(),
    }


def snapshot_code(source: str, dest: str) -> dict:
    """Copy the analyzer package into dest: `HEAD`/a revision via git archive, or `worktree`."""
    info = {"source": source, "head": _sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])}
    if source == "worktree":
        shutil.copytree(
            os.path.join(REPO, "analyzer"),
            os.path.join(dest, "analyzer"),
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        dirty = subprocess.run(
            ["git", "-C", REPO, "status", "--porcelain", "--", "analyzer"], capture_output=True, text=True
        ).stdout.rstrip()
        info["commit"] = info["head"] + ("+dirty" if dirty else "")
        info["dirty_files"] = [ln[3:] for ln in dirty.splitlines()]
    else:
        rev = _sh(["git", "-C", REPO, "rev-parse", "--short", source])
        if not rev:
            raise SystemExit(f"bench_scan: unknown revision {source!r}")
        arch = subprocess.run(["git", "-C", REPO, "archive", rev, "analyzer"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", dest], input=arch.stdout, check=True)
        info["commit"] = rev
    # Byte-compiled, as an installed package is (with PYTHONDONTWRITEBYTECODE set, as on the
    # team's machines, the snapshot would otherwise be compiled from source at every start).
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(dest, "analyzer")], check=True)
    return info


def build_peers(out: str, log) -> dict:
    """Build the native peers (chess-library driver cl2, byte tokenizer tok) with their own
    build.sh into `out`; {} when there is no compiler or no peers directory."""
    src = ARGS_PEERS_DIR[0]
    script = os.path.join(src, "build.sh")
    if not os.path.exists(script):
        log(f"native peers not found in {src}: skipped")
        return {}
    if not (shutil.which("g++") and shutil.which("gcc")):
        log("g++/gcc not found (apt-get install -y g++): native peers skipped")
        return {}
    r = subprocess.run(["bash", script, out], capture_output=True, text=True)
    if r.returncode != 0:
        log(f"building the native peers failed: {r.stderr[-500:]}")
        return {}
    return {name: os.path.join(out, name) for name in ("cl2", "tok") if os.path.exists(os.path.join(out, name))}


ARGS_PEERS_DIR = [PEERS_DIR]


def find_pgn_extract() -> str | None:
    return shutil.which("pgn-extract") or next(
        (p for p in ("/usr/games/pgn-extract", "/usr/bin/pgn-extract") if os.path.exists(p)), None
    )


def count_games(text: bytes) -> int:
    return text.count(b"\n[Event ") + (1 if text.startswith(b"[Event ") else 0)


def first_games(text: bytes, n: int) -> bytes:
    pos = 0 if text.startswith(b"[Event ") else text.find(b"\n[Event ")
    for _ in range(n):
        nxt = text.find(b"\n[Event ", pos + 1)
        if nxt < 0:
            return text
        pos = nxt
    return text[: pos + 1]


def _summary_json(path: str) -> dict:
    with open(path) as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f} {b:.2f} {c:.2f}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_measure":
        return _measure_main(argv[1])
    if argv and argv[0] == "_pychess":
        return _pychess_main(argv[1], int(argv[2]), float(argv[3]), argv[4])
    if argv and argv[0] == "_stages":
        return _stages_main(argv[1])

    p = argparse.ArgumentParser(
        description="End-to-end throughput of analyzer scan vs zstd, pgn-extract and "
        "python-chess, measured in one run on one file."
    )
    p.add_argument("--input", default=DEFAULT_INPUT, help=f".pgn.zst input (default: {DEFAULT_INPUT})")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: first --quick-games games, 1 round, small python-chess samples, no 10x, "
        "numba cache reused from --cache-dir or the user cache (compile not cold)",
    )
    p.add_argument("--quick-games", type=int, default=5000)
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of the fast commands (default 3; --quick 1); best and median are reported",
    )
    p.add_argument(
        "--replay-games", type=int, default=None, help="python-chess replay sample (default 2000; quick 500)"
    )
    p.add_argument("--claims-games", type=int, default=None, help="python-chess claims sample (default 300; quick 100)")
    p.add_argument(
        "--pychess-budget", type=float, default=None, help="seconds per python-chess sample (default 120; quick 30)"
    )
    p.add_argument(
        "--code",
        default="HEAD",
        help="analyzer code to measure: HEAD (default), a git revision, or "
        "'worktree' (the working tree as it is, uncommitted edits included)",
    )
    p.add_argument(
        "--cache-dir",
        default=None,
        help="reuse this NUMBA_CACHE_DIR (warmup then measures a cache "
        "load, not a cold compile); default: a fresh empty dir (full) / the user cache (quick)",
    )
    p.add_argument(
        "--unit-mb",
        type=float,
        action="append",
        default=None,
        help="extra --workers 2 rows with this --unit-mb (repeatable; default 64 in full runs)",
    )
    p.add_argument(
        "--multiples",
        default=None,
        help="comma-separated input multiples for the RSS runs (default 10, none with --quick; e.g. 10,20)",
    )
    p.add_argument("--no-10x", action="store_true", help="skip the multiplied-input RSS runs")
    p.add_argument(
        "--scaling",
        type=int,
        default=None,
        help="also scan the input repeated K times as a pzstd multi-frame file (the Lichess "
        "dump format) with 1 and 2 workers in every round (default 3; --quick 0)",
    )
    p.add_argument("--no-stages", action="store_true", help="skip the in-process per-stage timings")
    p.add_argument(
        "--pin",
        default="0",
        help="CPU for the one-core rows of the peers table (taskset -c; default 0; 'none' = no pinning)",
    )
    p.add_argument(
        "--no-peers", action="store_true", help="do not build and run the native peers of ../shared/peers (cl2, tok)"
    )
    p.add_argument("--peers-dir", default=PEERS_DIR, help=f"sources of the native peers (default {PEERS_DIR})")
    p.add_argument("--json-out", help="also write the JSON result to this file")
    p.add_argument("--keep-temp", action="store_true", help="keep the temp dir (for debugging)")
    args = p.parse_args(argv)

    ARGS_PEERS_DIR[0] = args.peers_dir
    quick = args.quick
    rounds = args.rounds or (1 if quick else 3)
    n_replay = args.replay_games or (500 if quick else 2000)
    n_claims = args.claims_games or (100 if quick else 300)
    budget = args.pychess_budget or (30.0 if quick else 120.0)
    unit_variants = args.unit_mb if args.unit_mb is not None else ([] if quick else [64.0])
    do_10x = not args.no_10x and (args.multiples is not None or not quick)
    args.multiples = args.multiples or "10"
    if not os.path.exists(args.input):
        print(f"bench_scan: input not found: {args.input}", file=sys.stderr)
        return 2
    pgn_extract = find_pgn_extract()
    if not shutil.which("zstd"):
        print("bench_scan: zstd not on PATH (apt-get install zstd)", file=sys.stderr)
        return 2

    tmp = tempfile.mkdtemp(prefix="bench_scan-")
    t_start = time.time()
    result: dict = {
        "benchmark": "bench_scan",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine_info(),
        "argv": sys.argv[1:],
        "input": args.input,
        "quick": quick,
        "rounds": rounds,
        "load_start": load(),
        "pin": args.pin,
    }
    log = lambda msg: print(f"[bench {time.strftime('%H:%M:%S')} load {load()}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        # -- code snapshot and environment ------------------------------------------------------
        # numba's cache is keyed by the source path and its mtime: a reused cache needs the
        # snapshot at a stable path (git archive / copy2 keep mtimes), a cold one a fresh dir.
        cold = args.cache_dir is None and not quick
        if args.cache_dir:
            cache = os.path.abspath(args.cache_dir)
        elif quick:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            cache = os.path.join(base, "analyzer", "bench-numba")
        else:
            cache = os.path.join(tmp, "numba")
        os.makedirs(cache, exist_ok=True)
        code_dir = os.path.join(tmp, "code") if cold else cache.rstrip("/") + "-code"
        shutil.rmtree(code_dir, ignore_errors=True)
        os.makedirs(code_dir)
        result["code"] = snapshot_code(args.code, code_dir)
        log(f"analyzer code: {result['code']['commit']} ({args.code}) snapshot in {code_dir}")
        env = dict(os.environ, PYTHONPATH=code_dir, NUMBA_CACHE_DIR=cache)
        env.pop("PYTHONSTARTUP", None)

        # -- input ------------------------------------------------------------------------------
        text = subprocess.run(["zstd", "-d", "-c", "-q", args.input], capture_output=True, check=True).stdout
        if quick:
            text = first_games(text, args.quick_games)
            zst = os.path.join(tmp, "input.pgn.zst")
            subprocess.run(["zstd", "-12", "-T2", "-q", "-f", "-o", zst], input=text, check=True)
        else:
            zst = args.input
        pgn = os.path.join(tmp, "input.pgn")
        with open(pgn, "wb") as fh:
            fh.write(text)
        n_games = count_games(text)
        result["games"] = n_games
        result["text_bytes"] = len(text)
        result["zst_bytes"] = os.path.getsize(zst)
        log(f"input {zst}: {n_games} games, {len(text) / 1e6:.1f} MB text, {result['zst_bytes'] / 1e6:.1f} MB zst")

        # -- compile ----------------------------------------------------------------------------
        py = sys.executable
        warm_cmd = [py, "-m", "analyzer.cli", "warmup"]
        first = os.path.join(tmp, "first.pgn.zst")
        subprocess.run(["zstd", "-q", "-f", "-o", first], input=first_games(text, 1), check=True)
        if cold:
            # What a user sees on a new machine: the first scan (one chess game) on an empty
            # cache compiles the kernels that scan needs, saying so on stderr.
            log("first scan on an empty NUMBA_CACHE_DIR (compiles the chess kernels) ...")
            fe = os.path.join(tmp, "first.err")
            m0 = measure(
                [py, "-m", "analyzer.cli", "scan", first, "--out", os.path.join(tmp, "first-out"), "--force", "--json"],
                env=env,
                cwd=code_dir,
                stdout=os.path.join(tmp, "first.out"),
                stderr=fe,
            )
            with open(fe, "rb") as fh:
                m0["stderr"] = fh.read()[-3000:].decode("utf-8", "replace")
            result["first_scan"] = m0
            log(f"first scan (cold cache): {m0['wall']:.1f} s wall, {m0['cpu']:.1f} s CPU")
        log(f"warmup ({'cold: empty NUMBA_CACHE_DIR' if cold else 'cache reused'}) ...")
        m = measure(
            warm_cmd, env=env, cwd=code_dir, stdout=os.path.join(tmp, "warm.out"), stderr=os.path.join(tmp, "warm.err")
        )
        m["cold"] = cold
        result["compile"] = m
        log(f"warmup {m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU")
        m2 = measure(
            warm_cmd,
            env=env,
            cwd=code_dir,
            stdout=os.path.join(tmp, "warm2.out"),
            stderr=os.path.join(tmp, "warm2.err"),
        )
        result["cache_load"] = m2
        log(f"warmup again (cache load + tiny sample) {m2['wall']:.2f} s")

        # -- rounds of the fast commands ---------------------------------------------------------
        out_dir = os.path.join(tmp, "out")

        def scan_cmd(workers, extra=()):
            return [
                py,
                "-m",
                "analyzer.cli",
                "scan",
                zst,
                "--out",
                out_dir,
                "--workers",
                str(workers),
                "--force",
                "--progress",
                "none",
                "--json",
                *extra,
            ]

        # Start-up (interpreter, imports, loading the cached kernels): the same scan on 10 games.
        tiny = os.path.join(tmp, "tiny.pgn.zst")
        subprocess.run(["zstd", "-q", "-f", "-o", tiny], input=first_games(text, 10), check=True)
        one = os.path.join(tmp, "one.pgn.zst")
        subprocess.run(["zstd", "-q", "-f", "-o", one], input=first_games(text, 1), check=True)
        pin = ["taskset", "-c", args.pin] if args.pin != "none" and shutil.which("taskset") else []
        commands = {
            "zstd -d (floor)": (["zstd", "-d", "-c", "-q", zst], None),
            "analyzer w1": (scan_cmd(1), "scan"),
            "analyzer w2": (scan_cmd(2), "scan"),
            "analyzer w1 start-up (10 games)": (scan_cmd(1)[:4] + [tiny] + scan_cmd(1)[5:], "tiny"),
        }
        # The issue-18 comparison: every row on one pinned core, in the same rounds.
        peers = build_peers(os.path.join(tmp, "peers"), log) if not args.no_peers else {}
        zq = shlex.quote(zst)
        if pin:
            commands["analyzer w1, pinned"] = (pin + scan_cmd(1), "scan")
            commands["analyzer start-up, pinned (1 game)"] = (pin + scan_cmd(1)[:4] + [one] + scan_cmd(1)[5:], "tiny")
            commands["zstd -dc, pinned"] = (pin + ["zstd", "-d", "-c", "-q", zst], None)
        if "tok" in peers:
            commands["zstd -dc | tok, pinned"] = (
                pin + ["sh", "-c", f"zstd -d -c -q {zq} | {shlex.quote(peers['tok'])}"],
                "peer",
            )
        if "cl2" in peers:
            commands["cl2 on plain text, pinned"] = (pin + [peers["cl2"], pgn], "peer")
            commands["zstd -dc | cl2, pinned"] = (
                pin + ["sh", "-c", f"zstd -d -c -q {zq} | {shlex.quote(peers['cl2'])} -"],
                "peer",
            )
        k_scale = args.scaling if args.scaling is not None else (0 if quick else 3)
        if k_scale:
            xs = os.path.join(tmp, f"x{k_scale}.pzstd.pgn.zst")
            log(f"building the {k_scale}x pzstd multi-frame input (pzstd -p 2 -1) ...")
            z = subprocess.Popen(["pzstd", "-p", "2", "-1", "-q", "-f", "-o", xs], stdin=subprocess.PIPE)
            for _ in range(k_scale):
                z.stdin.write(text)
            z.stdin.close()
            if z.wait() != 0:
                raise RuntimeError("pzstd failed building the scaling input")
            result["scaling"] = {"k": k_scale, "games": k_scale * n_games, "zst_bytes": os.path.getsize(xs)}
            for w in (1, 2):
                commands[f"analyzer w{w}, {k_scale}x pzstd"] = (scan_cmd(w)[:4] + [xs] + scan_cmd(w)[5:], "scan")
        for u in unit_variants:
            commands[f"analyzer w2 unit-mb {u:g}"] = (scan_cmd(2, ["--unit-mb", f"{u:g}"]), "scan")
        if pgn_extract:
            commands["pgn-extract --repetition"] = (pin + [pgn_extract, "--repetition", "-o", "/dev/null", pgn], "pgnx")
        else:
            log("pgn-extract not found (apt-get install pgn-extract): skipped")
        runs: dict = {k: [] for k in commands}
        summaries: dict = {}
        for r in range(rounds):
            for name, (cmd, kind) in commands.items():
                so = os.path.join(tmp, "cmd.out")
                se = os.path.join(tmp, "cmd.err")
                m = measure(
                    cmd, env=env, cwd=code_dir, stdout=so if kind in ("scan", "tiny", "peer") else None, stderr=se
                )
                m["load"] = load()
                if kind == "scan":
                    s = _summary_json(so)
                    summaries[name] = {k: s.get(k) for k in ("games", "ok", "errors", "units", "seconds", "rules")}
                    expect = n_games * _multiple(name)
                    if s.get("games") != expect:
                        log(f"WARNING: {name} reported {s.get('games')} games, the file has {expect}")
                    m["games_reported"] = s.get("games")
                    m["units"] = s.get("units")
                if kind == "peer":
                    with open(so, "rb") as fh:
                        m["output"] = fh.read()[-400:].decode("utf-8", "replace").strip()
                if kind == "pgnx":
                    with open(se, "rb") as fh:
                        tail = fh.read()[-300:].decode("utf-8", "replace")
                    import re

                    mm = re.search(r"(\d+) games matched out of (\d+)", tail)
                    if mm:
                        m["matched"], m["games_reported"] = int(mm.group(1)), int(mm.group(2))
                runs[name].append(m)
                log(
                    f"round {r + 1}/{rounds} {name}: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU, "
                    f"{m['maxrss_mb']:.0f} MB"
                )
        result["runs"] = runs
        result["scan_summaries"] = summaries

        # -- python-chess ------------------------------------------------------------------------
        pyc = {}
        for mode, n in (("replay", n_replay), ("claims", n_claims)):
            log(f"python-chess {mode}: first {n} games, budget {budget:.0f} s ...")
            so = os.path.join(tmp, f"pychess_{mode}.out")
            m = measure(
                [py, os.path.abspath(__file__), "_pychess", mode, str(n), str(budget), zst],
                env=env,
                cwd=tmp,
                stdout=so,
                stderr=os.path.join(tmp, "pychess.err"),
            )
            with open(so) as fh:
                m["result"] = json.loads(fh.read().strip().splitlines()[-1])
            m["load"] = load()
            pyc[mode] = m
            res = m["result"]
            log(
                f"python-chess {mode}: {res['games']} games in {res['seconds']:.1f} s = "
                f"{res['games_per_second']:.1f} games/s"
            )
        result["python_chess"] = pyc

        # -- stages in-process ---------------------------------------------------------------------
        if not args.no_stages:
            log("per-stage timings in-process ...")
            so = os.path.join(tmp, "stages.out")
            m = measure(
                [py, os.path.abspath(__file__), "_stages", zst],
                env=env,
                cwd=code_dir,
                stdout=so,
                stderr=os.path.join(tmp, "stages.err"),
            )
            with open(so) as fh:
                m["result"] = json.loads(fh.read().strip().splitlines()[-1])
            result["stages"] = m

        # -- 10x (and more): memory bounded by the configuration, not the input ------------------
        if do_10x:
            os.remove(pgn)  # the 1x text is no longer needed on disk
            result["multiples"] = {}
            for k in [int(x) for x in args.multiples.split(",") if x.strip()]:
                xk = os.path.join(tmp, f"x{k}.pgn.zst")
                log(f"building the {k}x input (zstd -1 -T2) ...")
                z = subprocess.Popen(["zstd", "-1", "-T2", "-q", "-f", "-o", xk], stdin=subprocess.PIPE)
                for _ in range(k):
                    z.stdin.write(text)
                z.stdin.close()
                if z.wait() != 0:
                    raise RuntimeError(f"zstd failed building the {k}x input")
                log(f"{k}x input: {os.path.getsize(xk) / 1e6:.0f} MB zst; scanning with --workers 2 ...")
                so = os.path.join(tmp, "xk.out")
                cmd = [
                    py,
                    "-m",
                    "analyzer.cli",
                    "scan",
                    xk,
                    "--out",
                    os.path.join(tmp, "outk"),
                    "--workers",
                    "2",
                    "--force",
                    "--progress",
                    "none",
                    "--json",
                ]
                m = measure(cmd, env=env, cwd=code_dir, stdout=so, stderr=os.path.join(tmp, "xk.err"))
                s = _summary_json(so)
                m["games_reported"] = s.get("games")
                m["units"] = s.get("units")
                m["load"] = load()
                result["multiples"][str(k)] = m
                log(
                    f"{k}x: {s.get('games')} games, {m['wall']:.1f} s, {m['maxrss_mb']:.0f} MB max process, "
                    f"{m['tree_rss_mb']:.0f} MB tree"
                )
                os.remove(xk)
                shutil.rmtree(os.path.join(tmp, "outk"), ignore_errors=True)
        result["load_end"] = load()
        result["total_seconds"] = time.time() - t_start
        report(result)
        if args.json_out:
            with open(args.json_out, "w") as fh:
                json.dump(result, fh, indent=1)
        print(json.dumps(result, separators=(",", ":")))
        return 0
    finally:
        if args.keep_temp:
            print(f"bench_scan: temp dir kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# The printed table


def _multiple(name: str) -> int:
    """The input multiple a row's name states ("analyzer w1, 10x pzstd" -> 10), else 1."""
    import re

    m = re.search(r", (\d+)x ", name + " ")
    return int(m.group(1)) if m else 1


PEER_ROWS = (
    "zstd -dc, pinned",
    "zstd -dc | tok, pinned",
    "cl2 on plain text, pinned",
    "zstd -dc | cl2, pinned",
    "pgn-extract --repetition",
)


def peers_table(res: dict) -> None:
    """The table of issue 18: every row on one pinned core, same rounds; the analyzer's games/s
    end to end and with the start-up (a one-game scan of the same round) subtracted, and per
    round the analyzer's games/s divided by the row's."""
    runs = res["runs"]
    a = runs.get("analyzer w1, pinned")
    su = runs.get("analyzer start-up, pinned (1 game)")
    if not a or not su:
        return
    n = res["games"]
    nan = float("nan")

    def rate(ms, sub=None, key="wall"):
        if sub is None:
            return [n / m[key] for m in ms]
        return [n / (m[key] - x[key]) if m[key] > x[key] else nan for m, x in zip(ms, sub)]

    med = statistics.median
    print()
    print(
        f"peers (issue 18), one pinned core (taskset -c {res.get('pin')}), {len(a)} interleaved round(s); "
        "ratio = analyzer games/s ÷ the row's games/s, per round, then the median; on wall time and on "
        "CPU time (user+sys of the whole command; steadier when other jobs share the core):"
    )
    print(
        "| run | games/s wall (median) | analyzer ÷ it: start-up subtracted / end to end (wall) | "
        "same on CPU time | per round, start-up subtracted (wall) |"
    )
    print("|---|---:|---:|---:|---|")
    rows = {"analyzer w1 (fide_2018, all tables)": None}
    for name in PEER_ROWS:
        if runs.get(name):
            rows[name] = runs[name]
    for name, ms in rows.items():
        if ms is None:
            continue
        out = []
        for key in ("wall", "cpu"):
            net, e2e, gps = rate(a, su, key), rate(a, None, key), rate(ms, None, key)
            out.append(
                (
                    med([x / y for x, y in zip(net, gps)]),
                    med([x / y for x, y in zip(e2e, gps)]),
                    [x / y for x, y in zip(net, gps)],
                )
            )
        print(
            f"| `{name}` | {med(rate(ms)):,.0f} | {out[0][0]:.2f} / {out[0][1]:.2f} "
            f"| {out[1][0]:.2f} / {out[1][1]:.2f} | "
            f"{' '.join(f'{x:.2f}' for x in out[0][2])} |"
        )
    print(
        f"| analyzer w1 (fide_2018, all tables), start-up subtracted / end to end | "
        f"{med(rate(a, su)):,.0f} / {med(rate(a)):,.0f} | — | — | "
        f"CPU: {med(rate(a, su, 'cpu')):,.0f} / {med(rate(a, None, 'cpu')):,.0f} games/CPU-s |"
    )
    print(
        f"start-up (one-game scan, warm cache, pinned): median {med(m['wall'] for m in su):.3f} s wall "
        f"({med(m['cpu'] for m in su):.3f} s CPU), best {min(m['wall'] for m in su):.3f} s; analyzer w1 pinned "
        f"end to end median {med(m['wall'] for m in a):.3f} s wall ({med(m['cpu'] for m in a):.3f} s CPU)"
    )
    for name in ("cl2 on plain text, pinned", "zstd -dc | cl2, pinned"):
        if runs.get(name) and runs[name][-1].get("output"):
            print(f"  {name} said: {runs[name][-1]['output'].splitlines()[-1]}")


def _best(ms: list) -> dict:
    return min(ms, key=lambda m: m["wall"])


def report(res: dict) -> None:
    n = res["games"]
    rows = []  # name, cores, best wall, median wall, cpu(best), maxrss, tree rss, games/s

    for name, ms in res["runs"].items():
        if "start-up" in name:
            continue
        b = _best(ms)
        cores = 2 if " w2" in name else 1
        g = n * _multiple(name)
        rows.append(
            (
                name,
                cores,
                b["wall"],
                statistics.median(m["wall"] for m in ms),
                b["cpu"],
                max(m["maxrss_mb"] for m in ms),
                max(m["tree_rss_mb"] for m in ms),
                g / b["wall"],
                g,
            )
        )
    for mode, m in res.get("python_chess", {}).items():
        r = m["result"]
        g = r["games"]
        rows.append(
            (
                f"python-chess {mode} ({g} games)",
                1,
                r["seconds"],
                r["seconds"],
                r["cpu_seconds"],
                m["maxrss_mb"],
                m["tree_rss_mb"],
                g / r["seconds"],
                g,
            )
        )
    for k, m in res.get("multiples", {}).items():
        g = m.get("games_reported") or int(k) * n
        rows.append(
            (
                f"analyzer w2, {k}x input",
                2,
                m["wall"],
                m["wall"],
                m["cpu"],
                m["maxrss_mb"],
                m["tree_rss_mb"],
                g / m["wall"],
                g,
            )
        )
    by = {r[0]: r for r in rows}
    w1 = by.get("analyzer w1")
    w2 = by.get("analyzer w2")
    c = res["code"]
    print()
    print(
        f"bench_scan  {res['date']}  code {c['commit']} ({c['source']})  input {res['input']}"
        f"{f' (first {n} games)' if res['quick'] else ''}"
    )
    print(
        f"machine: {res['machine']['nproc']} cpu, {res['machine']['cpu']}, {res['machine']['ram']}; "
        f"load avg start {res['load_start']} end {res.get('load_end')}"
    )
    print(
        f"games {n:,}, text {res['text_bytes'] / 1e6:.1f} MB, zst {res['zst_bytes'] / 1e6:.1f} MB; "
        f"{res['rounds']} round(s), best wall (median in brackets)"
    )
    fs = res.get("first_scan")
    if fs:
        print(
            "first scan of one chess game on an empty NUMBA_CACHE_DIR (compiles what it needs): "
            f"{fs['wall']:.1f} s wall, "
            f"{fs['cpu']:.1f} s CPU (both processes); its stderr:"
        )
        for line in fs.get("stderr", "").splitlines():
            if line.startswith("[analyzer]"):
                print(f"    {line}")
    comp = res["compile"]
    when = "after the first scan" if fs else "cold, empty NUMBA_CACHE_DIR" if comp["cold"] else "cache reused"
    print(
        f"compile (analyzer warmup: every kind and the test perft, {when}): "
        f"{comp['wall']:.1f} s wall, {comp['cpu']:.1f} s CPU; cache load (warmup again): "
        f"{res['cache_load']['wall']:.2f} s wall"
    )
    print()
    hdr = (
        "| run | wall s | games/s | games/s/core | CPU s | CPU µs/game | games/CPU-s | "
        "peak RSS MB (max proc / tree) | analyzer w1 ÷ this |"
    )
    print(hdr)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, cores, wall, med, cpu, rss, trss, gps, g in rows:
        ratio = (w1[7] / gps) if w1 and gps else float("nan")
        print(
            f"| {name} | {wall:.2f} ({med:.2f}) | {gps:,.0f} | {gps / cores:,.0f} | {cpu:.2f} | "
            f"{1e6 * cpu / g:,.1f} | {g / cpu:,.0f} | {rss:,.0f} / {trss:,.0f} | {ratio:.3g} |"
        )
    print()
    if w1 and w2:
        print(
            f"2-worker speed-up over 1 worker: {w1[2] / w2[2]:.2f}x (wall, best of rounds); "
            f"units per run: {res['runs']['analyzer w2'][0].get('units')}"
        )
        for name in res["runs"]:
            if name.startswith("analyzer w2 unit-mb"):
                print(f"  {name}: {w1[2] / by[name][2]:.2f}x, units {res['runs'][name][0].get('units')}")
    for name, sm in res.get("scan_summaries", {}).items():
        print(
            f"{name}: the scan's own 'seconds' (last round, after interpreter start and imports) "
            f"{sm.get('seconds')} s, units {sm.get('units')}, games {sm.get('games')}, ok {sm.get('ok')}"
        )
    if w1:
        print(
            f"analyzer w1: {w1[7]:,.0f} games/s wall, {n / w1[4]:,.0f} games per CPU-second, "
            f"{1e6 * w1[4] / n:.1f} µs CPU/game (goal >= 60,000 games/s/core = <= 16.7 µs/game)"
        )
    tiny = res["runs"].get("analyzer w1 start-up (10 games)")
    if w1 and tiny:
        t = min(tiny, key=lambda m: m["wall"])
        tc = min(m["cpu"] for m in tiny)
        print(
            f"start-up (same scan on 10 games: interpreter, imports, cached kernels): {t['wall']:.2f} s wall, "
            f"{tc:.2f} s CPU"
        )
        if w1[2] > t["wall"] and w1[4] > tc:
            print(
                f"analyzer w1 without the start-up: {n / (w1[2] - t['wall']):,.0f} games/s wall, "
                f"{1e6 * (w1[4] - tc) / n:.1f} µs CPU/game = {n / (w1[4] - tc):,.0f} games per CPU-second"
            )
    sc = res.get("scaling")
    if sc:
        a = by.get(f"analyzer w1, {sc['k']}x pzstd")
        b2 = by.get(f"analyzer w2, {sc['k']}x pzstd")
        if a and b2:
            print(
                f"{sc['k']}x input as pzstd frames ({sc['games']:,} games, {sc['zst_bytes'] / 1e6:.0f} MB): "
                f"w1 {a[7]:,.0f} games/s ({1e6 * a[4] / sc['games']:.1f} µs CPU/game), "
                f"w2 {b2[7]:,.0f} games/s: 2-worker speed-up {a[2] / b2[2]:.2f}x"
            )
            if tiny:
                t = min(tiny, key=lambda m: m["wall"])["wall"]
                tc = min(m["cpu"] for m in tiny)
                if b2[2] > t and a[4] > tc:
                    print(
                        f"  without the start-up ({t:.2f} s, serial in both): w1 {sc['games'] / (a[2] - t):,.0f} "
                        f"games/s ({1e6 * (a[4] - tc) / sc['games']:.1f} µs CPU/game), w2 "
                        f"{sc['games'] / (b2[2] - t):,.0f} games/s: speed-up {(a[2] - t) / (b2[2] - t):.2f}x"
                    )
            r1 = res["runs"][f"analyzer w1, {sc['k']}x pzstd"]
            r2 = res["runs"][f"analyzer w2, {sc['k']}x pzstd"]
            pairs = [x["wall"] / y["wall"] for x, y in zip(r1, r2)]
            # The machine's speed drifts by +-10% over minutes: the w1 and w2 runs of one round
            # follow each other, so their ratio is the least disturbed estimate.
            print(
                f"  per round (w1 and w2 back to back): {' '.join(f'{x:.2f}x' for x in pairs)}; "
                f"median {statistics.median(pairs):.2f}x"
            )
    if w2:
        m1 = max(res["runs"]["analyzer w2"], key=lambda m: m["maxrss_mb"])
        print("peak RSS with --workers 2 (sampled main process / largest worker / tree sum; ru_maxrss):")
        print(
            f"  1x: {m1['main_rss_mb']:.0f} / {m1['child_rss_mb']:.0f} / {m1['tree_rss_mb']:.0f} MB; "
            f"{m1['maxrss_mb']:.0f} MB"
        )
        for k, m in res.get("multiples", {}).items():
            print(
                f"  {k}x: {m['main_rss_mb']:.0f} / {m['child_rss_mb']:.0f} / {m['tree_rss_mb']:.0f} MB; "
                f"{m['maxrss_mb']:.0f} MB  ({m.get('units')} units)"
            )
    peers_table(res)
    st = res.get("stages")
    if st:
        s = st["result"]
        print()
        print(
            f"per stage, in-process, one core ({s['games']:,} games, {s['blocks']} blocks of 8 MiB; "
            f"kernels loaded from the cache first: {s['kernel_load']['wall']:.2f} s):"
        )
        if s.get("parquet_bytes"):
            print(
                "Parquet parts of this in-process run (one part per table): "
                + ", ".join(f"{k} {v:,} bytes" for k, v in s["parquet_bytes"].items())
            )
        print("| stage | wall s | CPU s | CPU µs/game | games/CPU-s |")
        print("|---|---:|---:|---:|---:|")
        for k, v in s["stages"].items():
            print(
                f"| {k} | {v['wall']:.2f} | {v['cpu']:.2f} | {1e6 * v['cpu'] / s['games']:.1f} | "
                f"{s['games'] / v['cpu'] if v['cpu'] else float('inf'):,.0f} |"
            )
    print()


if __name__ == "__main__":
    sys.exit(main())
