"""Intervals and number formatting used by every table, figure and headline of the report."""

from __future__ import annotations

import math

import polars as pl

Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal distribution

# A bin (month, time-control class, rating band, population) with fewer games than this is drawn
# grey and not joined to its neighbours; its interval is still given.
MIN_GAMES = 30


def wilson(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """The Wilson score interval of k successes in n trials (None, None when n == 0)."""
    if not n:
        return None, None
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def wilson_exprs(k: str, n: str, prefix: str, z: float = Z95) -> list[pl.Expr]:
    """`<prefix>_rate`, `<prefix>_ci_low`, `<prefix>_ci_high` from count columns k and n
    (null where n is 0)."""
    kk = pl.col(k).cast(pl.Float64)
    nn = pl.col(n).cast(pl.Float64)
    p = kk / nn
    d = 1 + z * z / nn
    centre = (p + z * z / (2 * nn)) / d
    half = z * (p * (1 - p) / nn + z * z / (4 * nn * nn)).sqrt() / d
    ok = pl.col(n) > 0
    return [
        pl.when(ok).then(p).alias(f"{prefix}_rate"),
        pl.when(ok)
        .then(pl.when(pl.col(k) == 0).then(0.0).otherwise(pl.max_horizontal(centre - half, pl.lit(0.0))))
        .alias(f"{prefix}_ci_low"),
        pl.when(ok)
        .then(pl.when(pl.col(k) == pl.col(n)).then(1.0).otherwise(pl.min_horizontal(centre + half, pl.lit(1.0))))
        .alias(f"{prefix}_ci_high"),
    ]


def sig2(x: float) -> str:
    """x with 2 significant digits (integers of 100 and more in full): 0.0015, 0.90, 12, 100."""
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return "–"
    digits = max(0, 1 - math.floor(math.log10(abs(x))))
    s = f"{x:.{digits}f}"
    # rounding may add a digit (9.96 -> 10.0): format again from the rounded value
    r = float(s)
    if r != 0:
        digits = max(0, 1 - math.floor(math.log10(abs(r))))
        s = f"{r:.{digits}f}"
    return s


def pct(k: int, n: int) -> str:
    """'p %' with 2 significant digits, '–' without games."""
    return "–" if not n else f"{sig2(100 * k / n)} %"


def count_pct(k: int, n: int) -> str:
    """'740 of 81,879 (0.90 %)'."""
    if not n:
        return "no games"
    return f"{k:,} of {n:,} ({pct(k, n)})"


def ci_text(k: int, n: int) -> str:
    """'95 % CI 0.84–0.97 %' (2 significant digits)."""
    lo, hi = wilson(k, n)
    if lo is None or hi is None:  # both or neither
        return ""
    return f"95 % CI {sig2(100 * lo)}–{sig2(100 * hi)} %"
