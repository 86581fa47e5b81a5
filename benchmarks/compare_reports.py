"""Two `analyzer report` folders hold the same tables and figure data: every NAME.parquet of
one equals the other's (rows sorted, so that an order that carries no meaning is ignored), and
so does every figures/NAME.csv. For checking a change to how the report reads or aggregates.

    python benchmarks/compare_reports.py REPORT_A REPORT_B    # exit 0 when identical
    python benchmarks/compare_reports.py A B --ignore examples,example_games   # but for these columns
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

import polars as pl


def _frame(path: str, ignore: set[str]) -> pl.DataFrame:
    df = pl.read_parquet(path) if path.endswith(".parquet") else pl.read_csv(path, infer_schema_length=0)
    df = df.select(sorted(c for c in df.columns if c not in ignore))
    return df.sort(df.columns, nulls_last=True) if df.height and df.columns else df


def compare(a: str, b: str, ignore: set[str] | None = None) -> list[str]:
    ignore = ignore or set()
    problems = []
    for pattern in ("*.parquet", os.path.join("figures", "*.csv")):
        names_a = {os.path.relpath(p, a) for p in glob.glob(os.path.join(a, pattern))}
        names_b = {os.path.relpath(p, b) for p in glob.glob(os.path.join(b, pattern))}
        for name in sorted(names_a ^ names_b):
            problems.append(f"{name}: only in {'A' if name in names_a else 'B'}")
        for name in sorted(names_a & names_b):
            x, y = _frame(os.path.join(a, name), ignore), _frame(os.path.join(b, name), ignore)
            if x.shape != y.shape or not x.equals(y, null_equal=True):
                problems.append(f"{name}: differs ({x.shape} vs {y.shape})")
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--ignore", default="", help="comma-separated columns left out of the comparison")
    args = p.parse_args()
    a, b = args.a, args.b
    problems = compare(a, b, set(filter(None, args.ignore.split(","))))
    n = len(glob.glob(os.path.join(a, "*.parquet"))) + len(glob.glob(os.path.join(a, "figures", "*.csv")))
    print("\n".join(problems) or f"identical: {n} tables and figure data files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
