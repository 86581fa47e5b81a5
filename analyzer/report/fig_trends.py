"""Series over time: a platform's measures by month (or year), with its time-control mix under
them and the places where the mix shifts marked; and the same measures by time-control class
(small multiples), which tell a change within the classes from a change of mix."""

from __future__ import annotations

import datetime as _dt

import polars as pl

from analyzer.report import periods, stats
from analyzer.report.cube import UNKNOWN
from analyzer.report.figkit import (
    SMALL_LABEL,
    WIDE,
    Figure,
    Layout,
    Points,
    frame,
    legend,
    plt_,
    point,
    series_handles,
    year_axis,
)
from analyzer.report.model import LICHESS_FIVEFOLD, MEASURE, TREND_MEASURES, Report, applies, platform_label

# The time-control mix: greys from light (fast) to dark (slow), so no class borrows an edition's
# colour; unknown is white with a hatch.
MIX_GREYS = {
    "ultrabullet": "#ececec",
    "bullet": "#cfcfcf",
    "blitz": "#a8a8a8",
    "rapid": "#7d7d7d",
    "classical": "#525252",
    "correspondence": "#2b2b2b",
    UNKNOWN: "#ffffff",
}
FIVEFOLD_LABEL = "Lichess: fivefold automatic from 2020-01-14"
SHIFT_LABEL = f"mix shifts by ≥ {round(100 * periods.MIX_SHIFT)} points"


def _half(kind: str) -> _dt.timedelta:
    return _dt.timedelta(days=14 if kind == "month" else 182)


def _plotted_range(per: pl.DataFrame) -> tuple[_dt.date, _dt.date] | None:
    """From the first to the last period with MIN_GAMES games (None: fewer than two such)."""
    big = per.filter(pl.col("games") >= stats.MIN_GAMES)
    if big.select("period").n_unique() < 2:
        return None
    lo, hi = big["period"].min(), big["period"].max()
    assert isinstance(lo, _dt.date) and isinstance(hi, _dt.date)  # a Date column with rows
    return lo, hi


def _draw_series(ax, rep, game_type, cls, rows, m, kind, rng, dodge, data, meta) -> float:
    """One series (an edition class) of one measure on one panel: a line with its band, gaps
    where a period has no games, small periods as grey open points; returns the top of what it
    drew (%). `meta` fills the data rows' keys."""
    ok = applies(cls.key, m)
    st = rep.styles(game_type, cls.editions)
    half = _half(kind)
    lo_p, hi_p = rng
    xs, ys, los, his = [], [], [], []
    small = Points(horizontal=False, ms=2.5)
    top = 0.0
    for r in rows.iter_rows(named=True):
        p = point(r[m.k], r[m.n], ok)
        data.append({**meta, "x": periods.label(r["period"], kind), "applicable": ok, **p})
        if not ok or not (lo_p <= r["period"] <= hi_p):
            continue
        x = r["period"] + half + dodge
        xs.append(x)
        if p["n"] and not p["small"]:
            ys.append(100 * p["rate"])
            los.append(100 * p["ci_low"])
            his.append(100 * p["ci_high"])
            top = max(top, 100 * p["ci_high"])
        else:
            ys.append(float("nan"))
            los.append(float("nan"))
            his.append(float("nan"))
            if p["n"]:
                from matplotlib.dates import date2num

                small.add(100 * p["rate"], float(date2num(x)), 100 * p["ci_low"], 100 * p["ci_high"], "", "o", True)
                top = max(top, 100 * p["rate"])
    if ok and xs:
        ax.plot(
            xs, ys, color=st.colour, marker=st.marker, ms=2.5, mfc=st.face, lw=1, ls=st.dash, zorder=2 + st.order / 100
        )
        ax.fill_between(xs, los, his, color=st.colour, alpha=0.15, lw=0)
        # a point with no neighbour has no band: its interval as a whisker
        alone = Points(horizontal=False, ms=2.5)
        from matplotlib.dates import date2num

        for i, y in enumerate(ys):
            if y == y and not any(0 <= j < len(ys) and ys[j] == ys[j] for j in (i - 1, i + 1)):
                alone.add(y, float(date2num(xs[i])), los[i], his[i], st.colour, st.marker, False, st.face)
        alone.draw(ax)
        small.draw(ax)
    return top


def _mix_panel(ax, mix_rows: pl.DataFrame, shifts: pl.DataFrame, kind: str, rng, handles: dict) -> None:
    """Stacked shares of the time-control classes per period, and ▼ where the mix shifts."""
    lo_p, hi_p = rng
    half = _half(kind)
    rows = mix_rows.filter((pl.col("period") >= lo_p) & (pl.col("period") <= hi_p))
    classes = [c for c in periods.TC_CLASSES if c in set(rows["time_control_class"].to_list())]
    by_period: dict[_dt.date, dict[str, float]] = {}
    for r in rows.iter_rows(named=True):
        by_period.setdefault(r["period"], {})[r["time_control_class"]] = r["share"] or 0.0
    xs = sorted(by_period)
    width = half.days * 2 * 0.85
    bottom = [0.0] * len(xs)
    for c in classes:
        h = [100 * by_period[x].get(c, 0.0) for x in xs]
        bars = ax.bar(
            [x + half for x in xs],
            h,
            width=width,
            bottom=bottom,
            color=MIX_GREYS.get(c, "#dddddd"),
            edgecolor="0.45",
            linewidth=0.3,
            hatch="////" if c == UNKNOWN else None,
        )
        handles.setdefault(c, bars)
        bottom = [b + v for b, v in zip(bottom, h)]
    ax.set_ylim(0, 118)
    ax.set_yticks([0, 50, 100])
    ax.set_ylabel("%")
    for r in shifts.iter_rows(named=True):
        ax.plot([r["period_to"] + half], [110], marker="v", color="black", ms=5, ls="none", clip_on=False)
    if shifts.height:
        from matplotlib.lines import Line2D

        handles.setdefault(SHIFT_LABEL, Line2D([], [], marker="v", color="black", ms=5, ls="none"))


def fig_trend(rep: Report, game_type: str, platform: str, layout: Layout = WIDE) -> Figure | None:
    per_all = rep.table("summary_by_period").filter(
        (pl.col("game_type") == game_type) & (pl.col("platform") == platform)
    )
    per = per_all.filter(pl.col("time_control_class") == periods.ALL)
    if per.height == 0:
        return None
    kind = per["period_kind"][0]
    rng = _plotted_range(per)
    if rng is None:
        return None
    lo_p, hi_p = rng
    mix_rows = rep.table("time_control_mix").filter(
        (pl.col("game_type") == game_type) & (pl.col("platform") == platform)
    )
    show_mix = mix_rows.filter(pl.col("games") > 0)["time_control_class"].n_unique() > 1
    shifts = rep.table("mix_shifts").filter((pl.col("game_type") == game_type) & (pl.col("platform") == platform))
    plt = plt_()
    ms = list(TREND_MEASURES)
    n = len(ms) + (1 if show_mix else 0)
    heights = [1.75] * len(ms) + ([1.1] if show_mix else [])
    fig, axes = plt.subplots(
        n,
        1,
        sharex=True,
        figsize=(layout.width, sum(heights) + (1.3 if not layout.narrow else 2.4)),
        height_ratios=heights,
        layout="constrained",
        squeeze=False,
    )
    axes = list(axes[:, 0])
    data: list[dict] = []
    handles: dict[str, object] = {}
    half = _half(kind)
    name = f"trend_{game_type}_{platform}"
    drawn: dict[tuple[str, ...], object] = {}
    small_seen = False
    for ax, mname in zip(axes, ms):
        m = MEASURE[mname]
        ax.set_title(layout.wrap(m.short, indent=0.6), loc="left")
        classes = sorted(
            rep.pop_classes[(game_type, platform, mname)], key=lambda c: rep.styles(game_type, c.editions).order
        )
        k = len(classes)
        top = 0.0
        for j, cls in enumerate(classes):
            rows = per.filter(pl.col("edition") == cls.key).sort("period")
            dodge = _dt.timedelta(days=round((j - (k - 1) / 2) * 40)) if kind == "year" and k > 1 else _dt.timedelta(0)
            meta = {
                "figure": name,
                "row": mname,
                "column": platform,
                "series": cls.label,
                "editions": ",".join(cls.editions),
                "time_control_class": periods.ALL,
            }
            top = max(top, _draw_series(ax, rep, game_type, cls, rows, m, kind, rng, dodge, data, meta))
            if applies(cls.key, m):
                drawn.setdefault(tuple(cls.editions), None)
            small_seen = small_seen or bool(
                rows.filter(
                    (pl.col(m.n) > 0) & (pl.col(m.n) < stats.MIN_GAMES) & pl.col("period").is_between(lo_p, hi_p)
                ).height
            )
        ax.set_ylim(0, (top * 1.1) if top > 0 else 1)
        ax.set_ylabel("% of games")
        ax.grid(axis="y", color="0.88", lw=0.6)
        if game_type == "chess" and platform == "lichess" and lo_p <= LICHESS_FIVEFOLD <= hi_p + half * 2:
            ax.axvline(LICHESS_FIVEFOLD, color="0.2", ls=":", lw=1.2)
    handles.update(series_handles(rep, game_type, drawn, small_seen, SMALL_LABEL + " (not joined)"))
    if game_type == "chess" and platform == "lichess" and lo_p <= LICHESS_FIVEFOLD <= hi_p + half * 2:
        from matplotlib.lines import Line2D

        handles[FIVEFOLD_LABEL] = Line2D([], [], color="0.2", ls=":", lw=1.2)
    if show_mix:
        axes[-1].set_title(layout.wrap("time-control mix (% of the period's games)", indent=0.6), loc="left")
        _mix_panel(axes[-1], mix_rows, shifts, kind, rng, handles)
    axes[-1].set_xlim(lo_p, hi_p + half * 2)
    year_axis(axes[-1], lo_p, hi_p, kind, layout.width - 0.7)
    legend(fig, handles, layout)
    word = "months" if kind == "month" else "years (months too thin)"
    gt = "Russian draughts" if game_type != "chess" else "chess"
    pl_ = platform_label(platform)
    caption = (
        f"{pl_} games by the {word} of their own date (UTCDate, else Date; games without a full date are "
        f"left out), with 95 % Wilson bands. A period without games is a gap (the line is not drawn across "
        f"it); a period with fewer than {stats.MIN_GAMES} games is a grey open point with its interval, not "
        f"joined. The plotted range runs from the first to the last period with {stats.MIN_GAMES} games or "
        "more; summary_by_period.csv has every period."
    )
    if show_mix:
        caption += (
            " Bottom panel: the share of each time-control class; ▼ marks a period whose mix differs from the "
            f"previous one by {round(100 * periods.MIX_SHIFT)} points or more (the share of games that would "
            "have to change class): a pooled rate can move there without any change within a class — see the "
            "series by time-control class."
        )
    if FIVEFOLD_LABEL in handles:
        caption += " Dotted line: Lichess made fivefold repetition automatic on 2020-01-14."
    return Figure(
        name,
        f"{pl_[:1].upper() + pl_[1:]} {gt} by {'month' if kind == 'month' else 'year'}",
        caption,
        fig,
        frame(data, "games"),
        layout,
        ("summary_by_period", "missed, avoided, claimed / games"),
    )


def _class_series(rep: Report, game_type: str, platform: str):
    """The classes worth a panel, their period kind and their rows (rolled up from the cube):
    classes with 2 x MIN_GAMES games; months only if every such class is well filled by month;
    then the classes with at least two periods of MIN_GAMES games."""
    cube = rep.table("summary_cube").filter(
        (pl.col("game_type") == game_type) & (pl.col("platform") == platform) & pl.col("month").is_not_null()
    )
    if cube.height == 0:
        return None
    first = rep.editions[game_type][0]
    per_month = (
        cube.filter(pl.col("edition") == first).group_by("time_control_class", "month").agg(pl.col("games").sum())
    )
    totals = per_month.group_by("time_control_class").agg(pl.col("games").sum())
    cands = [
        c
        for c in periods.TC_CLASSES
        if totals.filter((pl.col("time_control_class") == c) & (pl.col("games") >= 2 * stats.MIN_GAMES)).height
    ]
    if len(cands) < 2:
        return None
    kind = (
        "month"
        if all(
            periods.choose_kind(per_month.filter(pl.col("time_control_class") == c).select("month", "games")) == "month"
            for c in cands
        )
        else "year"
    )
    from analyzer.report.collect import COUNTS
    from analyzer.report.cube import with_rates
    from analyzer.report.model import MEASURES

    rows = (
        cube.with_columns(pl.col("month").dt.truncate(periods.TRUNC[kind]).alias("period"))
        .group_by("edition", "time_control_class", "period")
        .agg(pl.col(COUNTS).sum())
    )
    rows = with_rates(rows, MEASURES)
    big = rows.filter((pl.col("edition") == first) & (pl.col("games") >= stats.MIN_GAMES))
    shown = [c for c in cands if big.filter(pl.col("time_control_class") == c).height >= 2]
    if len(shown) < 2:
        return None
    return shown, kind, rows


def fig_trend_by_class(rep: Report, game_type: str, platform: str, layout: Layout = WIDE) -> Figure | None:
    """Small multiples: the trend measures of each time-control class (columns; narrow: one
    class under the other), on a common time axis and a common scale per measure."""
    got = _class_series(rep, game_type, platform)
    if got is None:
        return None
    shown, kind, rows = got
    # the common range: every period in which a shown class has MIN_GAMES games
    first = rep.editions[game_type][0]
    big = rows.filter(
        (pl.col("edition") == first) & pl.col("time_control_class").is_in(shown) & (pl.col("games") >= stats.MIN_GAMES)
    )
    lo_p, hi_p = big["period"].min(), big["period"].max()
    assert isinstance(lo_p, _dt.date) and isinstance(hi_p, _dt.date)
    rng = (lo_p, hi_p)
    half = _half(kind)
    all_periods = pl.date_range(lo_p, hi_p, interval=periods.TRUNC[kind], eager=True).alias("period").to_frame()
    ms = list(TREND_MEASURES)
    plt = plt_()
    if layout.narrow:
        fig, grid = plt.subplots(
            len(ms) * len(shown),
            1,
            sharex=True,
            squeeze=False,
            figsize=(layout.width, 1.25 * len(ms) * len(shown) + 1.6),
            layout="constrained",
        )
        flat = list(grid[:, 0])
        axes = [[flat[c * len(ms) + r] for c in range(len(shown))] for r in range(len(ms))]
        panel_w = layout.width - 0.7
    else:
        fig, grid = plt.subplots(
            len(ms),
            len(shown),
            sharex=True,
            sharey="row",
            squeeze=False,
            figsize=(layout.width, 1.6 * len(ms) + 1.4),
            layout="constrained",
        )
        axes = [[grid[r][c] for c in range(len(shown))] for r in range(len(ms))]
        panel_w = (layout.width - 0.7) / len(shown)
    data: list[dict] = []
    name = f"trend_by_class_{game_type}_{platform}"
    drawn: dict[tuple[str, ...], object] = {}
    small_seen = False
    for r_i, mname in enumerate(ms):
        m = MEASURE[mname]
        classes = sorted(
            rep.pop_classes[(game_type, platform, mname)], key=lambda c: rep.styles(game_type, c.editions).order
        )
        top = 0.0
        for c_i, tc in enumerate(shown):
            ax = axes[r_i][c_i]
            if layout.narrow:
                ax.set_title(f"{tc}: {mname}", loc="left")
            elif r_i == 0:
                ax.set_title(tc)
            for j, cls in enumerate(classes):
                sub = (
                    all_periods.join(
                        rows.filter((pl.col("edition") == cls.key) & (pl.col("time_control_class") == tc)),
                        on="period",
                        how="left",
                    )
                    .with_columns(pl.col(m.k, m.n, "games").fill_null(0))
                    .sort("period")
                )
                k = len(classes)
                dodge = (
                    _dt.timedelta(days=round((j - (k - 1) / 2) * 40)) if kind == "year" and k > 1 else _dt.timedelta(0)
                )
                meta = {
                    "figure": name,
                    "row": mname,
                    "column": platform,
                    "series": cls.label,
                    "editions": ",".join(cls.editions),
                    "time_control_class": tc,
                }
                top = max(top, _draw_series(ax, rep, game_type, cls, sub, m, kind, rng, dodge, data, meta))
                if applies(cls.key, m):
                    drawn.setdefault(tuple(cls.editions), None)
                small_seen = small_seen or bool(sub.filter((pl.col(m.n) > 0) & (pl.col(m.n) < stats.MIN_GAMES)).height)
            ax.grid(axis="y", color="0.88", lw=0.6)
            if c_i == 0 or layout.narrow:
                ax.set_ylabel("% of games" if layout.narrow else f"{mname}\n(% of games)")
        for c_i in range(len(shown)):
            axes[r_i][c_i].set_ylim(0, top * 1.1 if top > 0 else 1)
    for c_i in range(len(shown)):
        ax = axes[-1][c_i]
        ax.set_xlim(lo_p, hi_p + half * 2)
        year_axis(ax, lo_p, hi_p, kind, panel_w)
    handles: dict[str, object] = {}
    handles.update(series_handles(rep, game_type, drawn, small_seen, SMALL_LABEL + " (not joined)"))
    legend(fig, handles, layout, "outside upper center")
    pl_ = platform_label(platform)
    word = "month" if kind == "month" else "year"
    gt = "chess" if game_type == "chess" else "Russian draughts"
    return Figure(
        name,
        f"{pl_[:1].upper() + pl_[1:]} {gt} by {word} and time-control class",
        f"The measures of the {pl_} series above, for each time-control class with at least "
        f"{2 * stats.MIN_GAMES} games and two {word}s of {stats.MIN_GAMES} games or more, by {word} "
        f"({'months' if kind == 'month' else 'years: the classes are too thin by month'}); 95 % Wilson bands, a "
        f"common scale per row. A change that shows in the pooled series but in no class is a change of mix. "
        f"Grey open points: fewer than {stats.MIN_GAMES} games.",
        fig,
        frame(data, "games"),
        layout,
        ("summary_by_period", "missed, avoided, claimed / games"),
    )
