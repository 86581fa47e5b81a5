"""Period series from the cube: months where they are well filled, years otherwise; every
period from the first to the last, empty ones as gaps; per time-control class as well as for
all games; and the time-control mix per period with the places where it shifts (a change of
mix moves a pooled rate without any change within a class: the series by class show which).
"""

from __future__ import annotations

import datetime as _dt
import itertools

import polars as pl

from analyzer.report import stats
from analyzer.report.collect import COUNTS, TC_ORDER
from analyzer.report.cube import UNKNOWN, with_rates

TRUNC = {"month": "1mo", "year": "1y"}
ALL = "all"  # the time_control_class of the series of all games
# Months when at least this share of the months that have games, between the first and the last
# with stats.MIN_GAMES games (the range drawn), have MIN_GAMES games; otherwise years (a sparse
# monthly series is a row of grey whiskers).
MONTH_SHARE = 0.8
# A mix shift: between two consecutive periods with MIN_GAMES games, at least this share of
# the games would have to change class for one mix to become the other (total variation).
MIX_SHIFT = 0.3
TC_CLASSES = (*TC_ORDER, UNKNOWN)


def label(period: _dt.date, kind: str) -> str:
    return period.isoformat()[: 7 if kind == "month" else 4]


def choose_kind(games: pl.DataFrame) -> str:
    """`month` or `year` for counts per month (columns month, games; months with games only)."""
    big = games.filter(pl.col("games") >= stats.MIN_GAMES)["month"]
    if big.len() < 2:  # no month series to draw: perhaps a yearly one
        return "year"
    have = games.filter((pl.col("games") > 0) & pl.col("month").is_between(big.min(), big.max()))
    share = (have["games"] >= stats.MIN_GAMES).mean()
    assert isinstance(share, float)  # the mean of a non-empty boolean column
    return "month" if share >= MONTH_SHARE else "year"


def _games_per_month(cube: pl.DataFrame) -> pl.DataFrame:
    """Games per month (the largest count over editions: every edition reads the same games)."""
    return cube.group_by("month", "edition").agg(pl.col("games").sum()).group_by("month").agg(pl.col("games").max())


def kinds(cube: pl.DataFrame) -> dict[tuple[str, str], str]:
    """(game_type, platform) -> the period kind of its series."""
    dated = cube.filter(pl.col("month").is_not_null())
    return {
        (gt, plat): choose_kind(_games_per_month(pop))
        for (gt, plat), pop in dated.group_by("game_type", "platform", maintain_order=True)
    }


def _empty(measures) -> pl.DataFrame:
    schema = {
        "game_type": pl.String,
        "platform": pl.String,
        "edition": pl.String,
        "time_control_class": pl.String,
        "period_kind": pl.String,
        "period": pl.Date,
        **dict.fromkeys(COUNTS, pl.Int64),
    }
    return with_rates(pl.DataFrame(schema=schema), measures)


def series(cube: pl.DataFrame, measures) -> pl.DataFrame:
    """Per population, edition and time-control class (and `all`): one row per period from the
    population's first to its last dated period, empty periods included (games = 0: a gap)."""
    dated = cube.filter(pl.col("month").is_not_null())
    kind_of = kinds(cube)
    out = []
    for (gt, plat), pop in dated.group_by("game_type", "platform", maintain_order=True):
        kind = kind_of.get((gt, plat), "month")
        trunc = TRUNC[kind]
        p = pop.with_columns(pl.col("month").dt.truncate(trunc).alias("period"))
        per_class = p.group_by("edition", "time_control_class", "period").agg(pl.col(COUNTS).sum().cast(pl.Int64))
        total = (
            per_class.group_by("edition", "period")
            .agg(pl.col(COUNTS).sum())
            .with_columns(pl.lit(ALL).alias("time_control_class"))
        )
        agg = pl.concat([total, per_class], how="diagonal")
        lo, hi = agg["period"].min(), agg["period"].max()
        assert isinstance(lo, _dt.date) and isinstance(hi, _dt.date)  # a Date column with rows
        rng = pl.date_range(lo, hi, interval=trunc, eager=True).alias("period").to_frame()
        keys = agg.select("edition", "time_control_class").unique()
        full = keys.join(rng, how="cross").join(agg, on=["edition", "time_control_class", "period"], how="left")
        out.append(
            full.with_columns(
                pl.col(COUNTS).fill_null(0),
                pl.lit(gt).alias("game_type"),
                pl.lit(plat).alias("platform"),
                pl.lit(kind).alias("period_kind"),
            )
        )
    if not out:
        return _empty(measures)
    order = {c: i for i, c in enumerate((ALL, *TC_CLASSES))}
    df = pl.concat(out, how="diagonal_relaxed").select(
        "game_type", "platform", "edition", "time_control_class", "period_kind", "period", *COUNTS
    )
    df = with_rates(df, measures).with_columns(
        pl.col("time_control_class").replace_strict(order, default=len(order), return_dtype=pl.Int32).alias("_c")
    )
    return df.sort("game_type", "platform", "edition", "_c", "period").drop("_c")


def mix(per: pl.DataFrame) -> pl.DataFrame:
    """The time-control mix of each population's periods (from `series`' rows): games per class
    and their share of the period's games (the first edition's rows: every edition reads the same
    games)."""
    if per.height == 0:
        return pl.DataFrame(
            schema={
                "game_type": pl.String,
                "platform": pl.String,
                "period_kind": pl.String,
                "period": pl.Date,
                "time_control_class": pl.String,
                "games": pl.Int64,
                "share": pl.Float64,
            }
        )
    first = per.group_by("game_type", "platform", maintain_order=True).agg(pl.col("edition").first())
    rows = per.join(first, on=["game_type", "platform", "edition"], how="semi")
    total = rows.filter(pl.col("time_control_class") == ALL).select(
        "game_type", "platform", "period", pl.col("games").alias("_n")
    )
    cls = rows.filter(pl.col("time_control_class") != ALL).join(total, on=["game_type", "platform", "period"])
    return cls.select(
        "game_type",
        "platform",
        "period_kind",
        "period",
        "time_control_class",
        "games",
        pl.when(pl.col("_n") > 0).then(pl.col("games") / pl.col("_n")).alias("share"),
    )


def shifts(mix_rows: pl.DataFrame) -> pl.DataFrame:
    """Where the mix shifts: consecutive periods, both with MIN_GAMES games (empty or small ones
    between them skipped), whose mixes are at least MIX_SHIFT apart (total variation distance),
    with the classes whose share changed most."""
    out = []
    for (gt, plat), pop in mix_rows.group_by("game_type", "platform", maintain_order=True):
        kind = pop["period_kind"][0]
        n = pop.group_by("period").agg(pl.col("games").sum()).filter(pl.col("games") >= stats.MIN_GAMES)
        big = sorted(n["period"].to_list())
        share = {(r["period"], r["time_control_class"]): r["share"] or 0.0 for r in pop.iter_rows(named=True)}
        classes = [c for c in TC_CLASSES if c in set(pop["time_control_class"].to_list())]
        for a, b in itertools.pairwise(big):
            delta = {c: share.get((b, c), 0.0) - share.get((a, c), 0.0) for c in classes}
            dist = 0.5 * sum(abs(v) for v in delta.values())
            if dist < MIX_SHIFT:
                continue
            moved = sorted((c for c in classes if abs(delta[c]) >= 0.05), key=lambda c: -abs(delta[c]))[:3]
            what = ", ".join(
                f"{c} {stats.sig2(100 * share.get((a, c), 0.0))} % → {stats.sig2(100 * share.get((b, c), 0.0))} %"
                for c in moved
            )
            out.append(
                {
                    "game_type": gt,
                    "platform": plat,
                    "period_kind": kind,
                    "period_from": a,
                    "period_to": b,
                    "distance": dist,
                    "text": f"{label(a, kind)} → {label(b, kind)}: {what}",
                }
            )
    return pl.DataFrame(
        out,
        schema={
            "game_type": pl.String,
            "platform": pl.String,
            "period_kind": pl.String,
            "period_from": pl.Date,
            "period_to": pl.Date,
            "distance": pl.Float64,
            "text": pl.String,
        },
    )
