"""A Lichess month on one machine, measured end to end (issue 28): build an N-million-game
pzstd input from the shared sample, then scan it with 1 and 2 workers (and optionally Dask),
write the report, and run standard queries; record wall, CPU, peak RSS of the whole process
tree, output bytes and file counts.

    python benchmarks/bench_month.py --copies 1                     # 1x the sample (50,722 games)
    python benchmarks/bench_month.py --copies 10                    # 10x
    python benchmarks/bench_month.py --games 10 --dask --layouts    # 10 M games, the RESULTS.md run

The input is lichess_sample's text repeated (whole copies, so N M games rounds up), cut into
frames of 64 MiB of text like a Lichess dump's pzstd frames (each behind its 12-byte skippable
header; not one frame repeated), zstd level 3. It is kept in --work (built once per size).

Measured per command (benchmarks/bench_scan.measure): wall, user+sys CPU of the process tree,
peak summed RSS of the tree (sampled /proc every 0.1 s). Outputs: bytes and files per table,
and a row hash per table (order-free: the sum of the rows' hashes mod 2^32, categoricals as
text), which must be equal between the 1-worker, 2-worker, Dask and uncompacted runs.
--layouts also scans with --compact-games 1 (one file per unit and table: the layout before
compaction) and runs the queries on both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_scan import measure  # noqa: E402  (the same measuring wrapper as the scan bench)

SHARED = os.environ.get("ANALYZER_SHARED_DATA") or os.path.join(REPO, "..", "shared", "data")
SAMPLE_GAMES = 50_722
FRAME_TEXT = 64 << 20
SKIPPABLE = 0x184D2A50
EDITIONS = "fide_2018,lichess"


def build_input(work: str, copies: int, log) -> str:
    """lichess_sample x copies as 64 MiB-of-text pzstd frames (cached by copies)."""
    path = os.path.join(work, f"month-{copies}x.pgn.zst")
    if os.path.exists(path):
        return path
    with open(os.path.join(SHARED, "lichess_sample.pgn.zst"), "rb") as fh:
        text = zstandard.ZstdDecompressor().decompress(fh.read(), max_output_size=1 << 31)
    cctx = zstandard.ZstdCompressor(level=3, threads=2)
    tmp = path + ".partial"
    t0 = time.time()
    pending = bytearray()
    frames = 0
    with open(tmp, "wb") as out:

        def flush(chunk: bytes) -> None:
            nonlocal frames
            frame = cctx.compress(chunk)
            out.write(struct.pack("<III", SKIPPABLE, 4, len(frame)))
            out.write(frame)
            frames += 1

        for _ in range(copies):
            pending += text
            while len(pending) >= FRAME_TEXT:
                flush(bytes(pending[:FRAME_TEXT]))
                del pending[:FRAME_TEXT]
        if pending:
            flush(bytes(pending))
    os.replace(tmp, path)
    gb = os.path.getsize(path) / 1e9
    log(f"built {path}: {copies} copies, {frames} frames, {gb:.2f} GB in {time.time() - t0:.0f} s")
    return path


def _out_stats(out: str) -> dict:
    stats = {}
    for t in ("games", "verdicts", "events"):
        files = [os.path.join(r, n) for r, _, ns in os.walk(os.path.join(out, t)) for n in ns if n.endswith(".parquet")]
        stats[t] = {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files)}
    stats["files"] = sum(stats[t]["files"] for t in ("games", "verdicts", "events"))
    stats["bytes"] = sum(stats[t]["bytes"] for t in ("games", "verdicts", "events"))
    return stats


_HASH = """
import json, sys, polars as pl, analyzer
out = sys.argv[1]
res = {}
for t, scan in (("games", analyzer.scan_games), ("verdicts", analyzer.scan_verdicts), ("events", analyzer.scan_events)):
    lf = scan(out)
    lf = lf.with_columns(pl.col(pl.Categorical).cast(pl.String))
    row = lf.select(pl.len().alias("rows"), (pl.struct(pl.all()).hash(7) % (1 << 32)).sum().alias("hash")).collect()
    res[t] = {"rows": int(row["rows"][0]), "hash": int(row["hash"][0])}
print(json.dumps(res))
"""

_QUERIES = {
    "polars: games by time control": (
        "import analyzer, polars as pl, sys; "
        "print(analyzer.scan_games(sys.argv[1]).group_by('time_control_class').len().collect().height)"
    ),
    "polars: games_with_verdicts by rating band": (
        "import analyzer, polars as pl, sys; "
        "print(analyzer.games_with_verdicts(sys.argv[1], 'fide_2018').group_by('rating_band')"
        ".agg(pl.len(), pl.col('first_missed_claim_ply').is_not_null().sum()).collect().height)"
    ),
    "duckdb: missed claims by time control": (
        'import duckdb, sys; o=sys.argv[1]; print(duckdb.sql(f"select g.time_control_class, count(*), '
        "count(v.first_missed_claim_ply) from read_parquet('{o}/games/*/*.parquet') g join "
        "read_parquet('{o}/verdicts/*/*.parquet') v using (source, game_index) where v.edition = 'fide_2018' "
        'group by 1").fetchall().__len__())'
    ),
}


def _py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def _m(cmd, work: str, name: str) -> dict:
    m = measure(cmd, stdout=os.path.join(work, f"{name}.out"), stderr=os.path.join(work, f"{name}.err"))
    return {k: round(m[k], 2) for k in ("wall", "cpu", "tree_rss_mb", "maxrss_mb")} | {"rc": m["rc"]}


def _scan(src: str, out: str, work: str, name: str, *extra: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "analyzer", "scan", src, "--out", out, "--edition", EDITIONS]
    cmd += ["--progress", "none", "--json", *extra]
    m = _m(cmd, work, name)
    with open(os.path.join(work, f"{name}.out")) as fh:
        summary = json.loads(fh.read().strip().splitlines()[-1])
    m |= {
        "games": summary["games"],
        "units": summary["units"],
        "engine": summary["engine_by_source"],
        "compile_s": summary.get("compile_seconds"),
    }
    m["out"] = _out_stats(out)
    return m


def _hash(out: str) -> dict:
    r = subprocess.run(_py(_HASH, out), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def _queries(out: str, work: str, tag: str) -> dict:
    res = {}
    for q, code in _QUERIES.items():
        if q.startswith("duckdb"):
            try:
                import duckdb  # noqa: F401
            except ImportError:
                continue
        res[q] = _m(_py(code, out), work, f"query-{tag}-{len(res)}")
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--games", type=float, help="millions of games (rounded up to whole copies of the sample)")
    size.add_argument("--copies", type=int, help="copies of lichess_sample (50,722 games each)")
    p.add_argument("--work", default="/tmp/analyzer-bench-month", help="where the input and outputs go")
    p.add_argument("--no-1w", action="store_true", help="skip the 1-worker scan")
    p.add_argument("--dask", action="store_true", help="also scan with --engine dask (local cluster, 2 workers)")
    p.add_argument("--layouts", action="store_true", help="also scan with --compact-games 1 and query both")
    p.add_argument("--no-report", action="store_true")
    p.add_argument(
        "--report-only", action="store_true", help="no scans: report and queries on the 2-worker OUT of an earlier run"
    )
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    copies = args.copies or max(1, -(-int((args.games or 0.05) * 1e6) // SAMPLE_GAMES))
    os.makedirs(args.work, exist_ok=True)

    def log(msg: str) -> None:
        print(f"[bench_month {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    src = build_input(args.work, copies, log)
    res: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "copies": copies,
        "input_bytes": os.path.getsize(src),
        "load_before": os.getloadavg(),
    }
    runs = {}
    out2 = os.path.join(args.work, f"out-{copies}x-w2")
    scans = not args.report_only
    if scans and not args.no_1w:
        log("scan, 1 worker")
        runs["scan_w1"] = _scan(
            src, os.path.join(args.work, f"out-{copies}x-w1"), args.work, "scan-w1", "--workers", "1"
        )
    if scans:
        log("scan, 2 workers")
        runs["scan_w2"] = _scan(src, out2, args.work, "scan-w2", "--workers", "2")
    if scans and args.dask:
        log("scan, dask (local cluster, 2 worker processes)")
        runs["scan_dask"] = _scan(
            src, os.path.join(args.work, f"out-{copies}x-dask"), args.work, "scan-dask", "--workers", "2",
            "--engine", "dask",
        )  # fmt: skip
    if scans and args.layouts:
        log("scan, 2 workers, --compact-games 1 (one file per unit: the layout before compaction)")
        runs["scan_units"] = _scan(
            src, os.path.join(args.work, f"out-{copies}x-units"), args.work, "scan-units", "--workers", "2",
            "--compact-games", "1",
        )  # fmt: skip
    res["runs"] = runs
    log("row hashes")
    hashes = {name: _hash(os.path.join(args.work, f"out-{copies}x-{name.split('_', 1)[1]}")) for name in runs}
    res["hashes"] = hashes
    res["tables_identical"] = len({json.dumps(h, sort_keys=True) for h in hashes.values()}) <= 1  # none: --report-only
    if not args.no_report:
        log("report")
        rep = os.path.join(args.work, f"report-{copies}x")
        shutil.rmtree(rep, ignore_errors=True)
        res["report"] = _m([sys.executable, "-m", "analyzer", "report", out2, "--report-dir", rep], args.work, "report")
    log("queries")
    res["queries"] = {"compacted": _queries(out2, args.work, "c")}
    if args.layouts:
        res["queries"]["one file per unit"] = _queries(os.path.join(args.work, f"out-{copies}x-units"), args.work, "u")
    res["load_after"] = os.getloadavg()
    text = json.dumps(res, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text)
    return 0 if res["tables_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
