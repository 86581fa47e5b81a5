"""The Hugging Face mirror's Parquet against the PGN dump, the same games (issue 38, point 3):
games/s of `analyzer scan` over each, interleaved rounds, the default engine and 2 workers.

    python benchmarks/bench_hf_parquet.py --copies 10 --rounds 3

Inputs (built once per size in --work): lichess_sample's games repeated --copies times, as
(a) a Lichess dump: pzstd-style frames of 64 MiB of text (as bench_month.py builds them, zstd
level 3), and (b) one month of the mirror's layout (tests/hf_mirror.py: the mirror's columns and
types, `data/year=2021/month=10/train-NNNNN-of-NNNNN.parquet`) in files of --rows-per-file rows,
row groups of --row-group rows, compressed with --compression (zstd and snappy are both
measured by default). The PGN side holds the same games with the mirror's tags only
(hf_mirror.mirror_pgn): the same text the Parquet rows make, so both scans do the same work but
the reading. The tables of both are compared (order-free row hashes, as bench_month.py).

Measured per scan (benchmarks/bench_scan.measure): wall, CPU of the process tree, peak summed
RSS, and the run's own games/s (its summary, start-up and compile left out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time

import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))
from bench_scan import measure  # noqa: E402
from hf_mirror import SCHEMA, _row, mirror_pgn, split_games  # noqa: E402
from pzstd_frames import write_repeated  # noqa: E402

SHARED = os.environ.get("ANALYZER_SHARED_DATA") or os.path.join(REPO, "..", "shared", "data")
EDITIONS = "fide_2018,lichess"


def _games():
    with open(os.path.join(SHARED, "lichess_sample.pgn.zst"), "rb") as fh:
        text = zstandard.ZstdDecompressor().decompress(fh.read(), max_output_size=1 << 31).decode("utf-8")
    games = split_games(text)
    for tags, _ in games:  # one month, as a month of the mirror is (the dates are not used by the scan's work)
        tags["UTCDate"] = "2021.10.15"
    return games


def build(work: str, copies: int, compression: str, rows_per_file: int, row_group: int, log) -> tuple[str, str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pgn = os.path.join(work, f"pgn-{copies}x", "lichess_db_standard_rated_2021-10.pgn.zst")
    month = os.path.join(work, f"mirror-{copies}x-{compression}-{row_group}", "data", "year=2021", "month=10")
    games = None
    if not os.path.exists(pgn):
        games = games or _games()
        os.makedirs(os.path.dirname(pgn), exist_ok=True)
        write_repeated(pgn, mirror_pgn(games).encode(), copies, log)
    if not os.path.isdir(month):
        games = games or _games()
        table = pa.Table.from_pylist([_row(t, mt) for t, mt in games], schema=SCHEMA)
        os.makedirs(month + ".partial", exist_ok=True)
        t0 = time.time()
        n_files = -(-len(games) * copies // rows_per_file)
        writer = None
        k = written = 0
        for _ in range(copies):
            for batch in table.to_batches(max_chunksize=row_group):
                if writer is None:
                    name = f"train-{k:05d}-of-{n_files:05d}.parquet"
                    writer = pq.ParquetWriter(os.path.join(month + ".partial", name), SCHEMA, compression=compression)
                writer.write_batch(batch, row_group_size=row_group)
                written += batch.num_rows
                if written >= rows_per_file:
                    writer.close()
                    writer, k, written = None, k + 1, 0
        if writer is not None:
            writer.close()
        os.replace(month + ".partial", month)
        size = sum(os.path.getsize(os.path.join(month, f)) for f in os.listdir(month))
        log(f"built {month}: {len(os.listdir(month))} files, {size / 1e9:.2f} GB in {time.time() - t0:.0f} s")
    return pgn, month


def _scan(src: str, out: str, work: str, name: str, workers: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "analyzer", "scan", src, "--out", out, "--edition", EDITIONS]
    cmd += ["--workers", str(workers), "--json", "--progress", "none"]
    if src.endswith("month=10"):
        cmd += ["--source-name", "lichess_db_standard_rated_2021-10"]  # the same name: the same tables
    m = measure(cmd, stdout=os.path.join(work, f"{name}.out"), stderr=os.path.join(work, f"{name}.err"))
    with open(os.path.join(work, f"{name}.out")) as fh:
        summary = json.loads(fh.read().strip().splitlines()[-1])
    return {
        "wall": round(m["wall"], 2),
        "cpu": round(m["cpu"], 2),
        "tree_rss_mb": m.get("tree_rss_mb"),
        "games": summary["games"],
        "games_per_second": summary["games_per_second"],
        "engine": summary["engine_by_source"],
        "units": summary["units"],
    }


def _hash(out: str) -> dict:
    import polars as pl

    import analyzer

    res = {}
    tables = (("games", analyzer.scan_games), ("verdicts", analyzer.scan_verdicts), ("events", analyzer.scan_events))
    for t, scan in tables:
        df = scan(out).collect()
        df = df.with_columns([pl.col(c).cast(pl.String) for c, d in df.schema.items() if d == pl.Categorical])
        res[t] = [df.height, int(df.hash_rows().sum() % (1 << 32))]
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--copies", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--compression", default="zstd,snappy")
    p.add_argument("--rows-per-file", type=int, default=200_000)
    p.add_argument("--row-group", type=int, default=10_000)
    p.add_argument("--work", default="/tmp/analyzer-bench-hf")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    inputs = {}
    for comp in args.compression.split(","):
        pgn, month = build(args.work, args.copies, comp, args.rows_per_file, args.row_group, log)
        inputs["pgn"] = pgn
        inputs[f"parquet-{comp}"] = month
    runs: dict = {k: [] for k in inputs}
    hashes = {}
    for r in range(args.rounds):
        for k, src in inputs.items():
            res = _scan(src, os.path.join(args.work, f"out-{k}"), args.work, f"{k}-{r}", args.workers)
            runs[k].append(res)
            log(f"round {r} {k}: {res}")
            if r == 0:
                hashes[k] = _hash(os.path.join(args.work, f"out-{k}"))
    same = len({json.dumps(h, sort_keys=True) for h in hashes.values()}) == 1
    med = {k: statistics.median(x["games_per_second"] for x in v) for k, v in runs.items()}
    result = {
        "copies": args.copies,
        "games": runs["pgn"][0]["games"],
        "workers": args.workers,
        "row_group": args.row_group,
        "rows_per_file": args.rows_per_file,
        "inputs_bytes": {
            k: (
                os.path.getsize(v)
                if os.path.isfile(v)
                else sum(os.path.getsize(os.path.join(v, f)) for f in os.listdir(v))
            )
            for k, v in inputs.items()
        },
        "median_games_per_second": med,
        "ratio_to_pgn": {k: round(v / med["pgn"], 3) for k, v in med.items()},
        "tables_identical": same,
        "hashes": hashes,
        "runs": runs,
        "load": os.getloadavg(),
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
