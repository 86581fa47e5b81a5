"""`summary_cube`: the one tidy long table the report's summaries and figures are drawn from.

One row per game kind x platform x edition x time-control class x rating band x month that has
games (status ok), with the counts of every measure (collect.COUNTS) and each measure's rate and
95 % Wilson interval. Every other summary and every figure's points are sums of its counts over
some of its keys (`rollup`), with rates recomputed from the summed counts, so a reader can cross
any two keys (rating band by time-control class by month) without a rescan.

Keys with no value: `time_control_class` and `rating_band` are `unknown` (no readable
TimeControl, or a rating missing), never null; `month` is null for games without a full date.
"""

from __future__ import annotations

import polars as pl

from analyzer.report import stats
from analyzer.report.collect import COUNTS, UNKNOWN

KEYS = ["game_type", "platform", "edition", "time_control_class", "rating_band", "month"]
__all__ = ["KEYS", "UNKNOWN", "build", "rollup", "with_rates"]


def with_rates(df: pl.DataFrame, measures) -> pl.DataFrame:
    """`<measure>_rate`, `_ci_low`, `_ci_high` for each measure (k and n count columns), and
    `<measure>_denominator`: the name of the count column the rate is a share of (every rate
    says its denominator)."""
    exprs = []
    for m in measures:
        exprs += stats.wilson_exprs(m.k, m.n, m.name)
        exprs.append(pl.lit(m.n, pl.String).alias(f"{m.name}_denominator"))
    return df.with_columns(exprs)


def build(collected_cube: pl.DataFrame, measures) -> pl.DataFrame:
    """The cube summed over sources, with rates (collected_cube: collect's per-source counts, a
    missing class or band already UNKNOWN)."""
    df = collected_cube.group_by(KEYS).agg(pl.col(COUNTS).sum().cast(pl.Int64))
    return with_rates(df, measures).sort(KEYS, nulls_last=True)


def rollup(cube: pl.DataFrame, by: list[str], measures) -> pl.DataFrame:
    """The cube's counts summed over every key but game kind, platform, edition and `by`, with
    rates from the sums."""
    keys = ["game_type", "platform", "edition", *[b for b in by if b not in ("game_type", "platform", "edition")]]
    df = cube.group_by(keys).agg(pl.col(COUNTS).sum().cast(pl.Int64))
    return with_rates(df, measures).sort(keys, nulls_last=True)
