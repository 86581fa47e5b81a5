"""Count "missed" claims per source and edition under the 0.1 measure and under the 0.2 one
(issue 13): the old count included every threefold preceded by a written-move chance, so it
mostly counted games that were claimed on the spot. Prints a Markdown table for RESULTS.md.

    python benchmarks/measures_old_vs_new.py OLD_OUT NEW_OUT

OLD_OUT is an `analyzer scan --out` directory written by 0.1 (games one row per game and
edition, missed columns there); NEW_OUT one written by 0.2 or later (verdicts table), from the
same inputs and editions. Reads the Parquet parts directly, so both layouts load.
"""

from __future__ import annotations

import argparse
import os

import polars as pl


def _table(out: str, name: str) -> pl.DataFrame:
    return pl.scan_parquet(os.path.join(out, name, "**", "*.parquet"), hive_partitioning=True).collect()


def old_counts(out: str) -> pl.DataFrame:
    """Per source and edition: games, missed, missed then lost, and missed followed one ply
    later by the end of a drawn game (the claim that was in fact made)."""
    g = _table(out, "games")
    missed = pl.col("first_missed_claim_ply").is_not_null()
    return g.group_by("source", "edition").agg(
        pl.len().alias("games"),
        missed.sum().alias("missed (old)"),
        (missed & (pl.col("missed_claim_result") == "loss")).sum().alias("missed then lost (old)"),
        (missed & (pl.col("plies_after_missed_claim") == 1) & (pl.col("result") == "1/2-1/2"))
        .sum()
        .alias("missed, then claimed next ply (old)"),
    )


def new_counts(out: str) -> pl.DataFrame:
    v = _table(out, "verdicts")
    missed = pl.col("first_missed_claim_ply").is_not_null()
    return v.group_by("source", "edition").agg(
        missed.sum().alias("missed (new)"),
        (missed & (pl.col("missed_claim_result") == "loss")).sum().alias("missed then lost (new)"),
        pl.col("first_avoided_claim_ply").is_not_null().sum().alias("avoided (new)"),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old_out")
    ap.add_argument("new_out")
    a = ap.parse_args(argv)
    t = old_counts(a.old_out).join(new_counts(a.new_out), on=["source", "edition"], how="full", coalesce=True)
    cols = [
        "source",
        "edition",
        "games",
        "missed (old)",
        "missed then lost (old)",
        "missed (new)",
        "missed then lost (new)",
        "missed, then claimed next ply (old)",
        "avoided (new)",
    ]
    t = t.select(cols).sort("source", "edition")
    print("| " + " | ".join(cols) + " |")
    print("|---|---|" + "---:|" * (len(cols) - 2))
    for row in t.iter_rows():
        cells = [str(x) if isinstance(x, str) else f"{x:,}" if x is not None else "" for x in row]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
