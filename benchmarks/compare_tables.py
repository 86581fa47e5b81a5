"""Compare the tables of two `analyzer scan --out` directories (a refactoring must not change
them): every column of `games` and `events`, row by row, after sorting by their keys.

    python benchmarks/compare_tables.py OUT_A OUT_B [--ignore COL ...]

Reads the Parquet parts directly (not through the analyzer's API, so old and new layouts
compare alike). An OUT with a `verdicts` table (0.2 layout: games one row per game) is compared
as the 0.1 layout: games joined to verdicts (one row per game and edition), the Date header as
`date`. Prints per table the row counts and, for every column that differs, how many rows
differ with an example; exit status 0 only when everything compared is equal.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

import polars as pl

KEYS = {
    "games": ["source", "edition", "game_index"],
    "events": ["source", "edition", "game_index", "ply", "rule", "kind"],
}


def _read(out: str, table: str) -> pl.DataFrame | None:
    parts = sorted(glob.glob(os.path.join(out, table, "*", "part-*.parquet")))
    if not parts:
        return None
    df = pl.concat(
        [pl.read_parquet(p, hive_partitioning=True, hive_schema={"source": pl.String}) for p in parts],
        how="diagonal_relaxed",
    )
    return df.with_columns([pl.col(c).cast(pl.String) for c, t in df.schema.items() if t == pl.Categorical])


def load(out: str, table: str) -> pl.DataFrame | None:
    df = _read(out, table)
    if df is None:
        return None
    if table == "games" and os.path.isdir(os.path.join(out, "verdicts")):
        v = _read(out, "verdicts").drop("game_type")
        df = df.drop("date").rename({"date_tag": "date"}).join(v, on=["source", "game_index"], how="inner")
    keys = [k for k in KEYS[table] if k in df.columns]
    return df.sort(keys)


def compare(a: pl.DataFrame, b: pl.DataFrame, table: str, ignore: set[str]) -> list[str]:
    problems = []
    if a.height != b.height:
        problems.append(f"{table}: {a.height} rows vs {b.height}")
    cols_a, cols_b = set(a.columns) - ignore, set(b.columns) - ignore
    for c in sorted(cols_a ^ cols_b):
        problems.append(f"{table}: column {c!r} only in {'A' if c in cols_a else 'B'}")
    if a.height != b.height:
        return problems
    for c in sorted(cols_a & cols_b):
        x, y = a[c], b[c]
        if x.dtype != y.dtype:
            try:
                y = y.cast(x.dtype)
            except Exception:  # noqa: BLE001
                problems.append(f"{table}.{c}: type {x.dtype} vs {y.dtype}")
                continue
        same = (x == y) | (x.is_null() & y.is_null())
        same = same.fill_null(False)
        n = int((~same).sum())
        if n:
            i = int((~same).arg_max())
            key = {k: a[k][i] for k in KEYS[table] if k in a.columns}
            problems.append(f"{table}.{c}: {n} rows differ, e.g. {key}: {x[i]!r} vs {y[i]!r}")
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--ignore", nargs="*", default=[], help="columns not compared")
    args = p.parse_args()
    problems = []
    for table in ("games", "events"):
        a, b = load(args.a, table), load(args.b, table)
        if a is None or b is None:
            problems.append(f"{table}: missing in {'A' if a is None else 'B'}")
            continue
        print(
            f"{table}: {a.height:,} rows in A, {b.height:,} in B; {len(set(a.columns) & set(b.columns))} common columns"
        )
        problems += compare(a, b, table, set(args.ignore))
    for line in problems:
        print("DIFF", line)
    print("identical" if not problems else f"{len(problems)} difference(s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
