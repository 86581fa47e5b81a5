"""The report's figures (matplotlib, Agg): built for print (7 in wide, text >= 9 pt, constrained
layout, Okabe-Ito colours with distinct markers), each with the data it draws as a long table
(one row per point: k, n, rate, ci_low, ci_high), written as SVG, PDF and CSV."""

from __future__ import annotations

import datetime as _dt
import io
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from analyzer.report import stats
from analyzer.report.collect import TC_ORDER
from analyzer.report.model import (
    DRAUGHTS_RULES,
    LICHESS_FIVEFOLD,
    MEASURE,
    MEASURES,
    RATE_SCHEMA,
    RULE_LABELS,
    TREND_MEASURES,
    EdClass,
    Report,
    applies,
    platform_label,
)

if TYPE_CHECKING:  # matplotlib (the "report" extra) is imported where figures are drawn
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.typing import RcKeyType

WIDTH = 7.0  # inches: a two-column page
FONT = 9  # points, every text of every figure
# Okabe & Ito (2008), colour-blind safe; with a distinct marker per series.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS = ("o", "s", "D", "^", "v", "P", "X")
SMALL = "#9a9a9a"  # bins with fewer than stats.MIN_GAMES games
SMALL_CI = "#cfcfcf"  # and their intervals

RC: dict[RcKeyType, Any] = {
    "font.size": FONT,
    "axes.titlesize": FONT,
    "axes.labelsize": FONT,
    "xtick.labelsize": FONT,
    "ytick.labelsize": FONT,
    "legend.fontsize": FONT,
    "figure.titlesize": FONT,
    "figure.labelsize": FONT,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "svg.hashsalt": "analyzer-report",
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "lines.linewidth": 1.0,
}


@dataclass
class Figure:
    name: str  # file stem
    title: str
    caption: str
    fig: MplFigure
    data: pl.DataFrame  # what it draws


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(RC)
    return plt


class Styler:
    """Colour, marker and label of each series within one figure: an edition keeps its own
    colour where it can; two different series never share one; a series of every edition is
    labelled "all editions"."""

    def __init__(self, editions: list[str]):
        self.editions = editions
        self.seen: dict[tuple[str, ...], tuple[str, str, str]] = {}  # series -> colour, marker, label
        self.used: set[int] = set()  # palette indices taken

    def __call__(self, cls: EdClass) -> tuple[str, str, str]:
        key = tuple(cls.editions)
        if key not in self.seen:
            i = self.editions.index(cls.key) if cls.key in self.editions else len(self.editions)
            while i in self.used:
                i += 1
            self.used.add(i)
            label = "all editions" if len(self.editions) > 1 and set(cls.editions) == set(self.editions) else cls.short
            self.seen[key] = (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)], label)
        return self.seen[key]


def style(editions: list[str], ed: str) -> tuple[str, str]:
    i = editions.index(ed) if ed in editions else len(editions)
    return PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]


def _point(k, n, applicable=True) -> dict:
    if not applicable or k is None:
        return {"k": None, "n": None, "rate": None, "ci_low": None, "ci_high": None, "small": None}
    lo, hi = stats.wilson(k, n)
    return {
        "k": int(k),
        "n": int(n),
        "rate": (k / n) if n else None,
        "ci_low": lo,
        "ci_high": hi,
        "small": n < stats.MIN_GAMES,
    }


_DATA_SCHEMA = {
    "figure": pl.String,
    "row": pl.String,
    "column": pl.String,
    "series": pl.String,
    "editions": pl.String,
    "x": pl.String,
    **RATE_SCHEMA,
    "small": pl.Boolean,
}


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=_DATA_SCHEMA)


class _Points:
    """Points with intervals for one panel, drawn with few artists: one line collection for all
    intervals, one marker line per style."""

    def __init__(self, horizontal: bool, ms: float = 4.5):
        self.horizontal, self.ms = horizontal, ms
        self.items: list[tuple] = []

    def add(self, v, pos, lo, hi, colour, marker, small):
        self.items.append((v, pos, lo, hi, SMALL if small else colour, "o" if small else marker, small))

    def draw(self, ax):
        if not self.items:
            return
        segs = [
            [(lo, pos), (hi, pos)] if self.horizontal else [(pos, lo), (pos, hi)] for v, pos, lo, hi, *_ in self.items
        ]
        from matplotlib.collections import LineCollection

        ax.add_collection(
            LineCollection(
                segs,
                colors=[SMALL_CI if small else c for *_, c, _, small in self.items],
                linewidths=[0.7 if small else 1.0 for *_, small in self.items],
            ),
            autolim=False,
        )
        styles: dict = {}
        for v, pos, _lo, _hi, c, mk, small in self.items:
            styles.setdefault((c, mk, small), []).append((v, pos) if self.horizontal else (pos, v))
        for (c, mk, small), xy in styles.items():
            ax.plot(
                [a for a, _ in xy],
                [b for _, b in xy],
                ls="none",
                marker=mk,
                ms=self.ms,
                color=c,
                mfc="white" if small else c,
                clip_on=not self.horizontal,
                zorder=3,
            )


def _scale(points) -> float:
    """Upper end of a rate axis (%): every point and the intervals of the bins that are not
    small fit (a small bin's interval may run off the panel, clipped)."""
    vals = [p["rate"] for p in points if p["rate"] is not None]
    vals += [p["ci_high"] for p in points if p["ci_high"] is not None and not p["small"]]
    top = max(vals, default=0.0) * 100
    return top * 1.08 if top > 0 else 1.0


def _handle(colour, marker, small=False):
    from matplotlib.lines import Line2D

    return Line2D(
        [],
        [],
        color=SMALL if small else colour,
        marker="o" if small else marker,
        ms=4.5,
        mfc="white" if small else colour,
        ls="-",
        lw=1,
    )


# ----------------------------------------------------------------------------------------------
# Dot grids: rows of panels (one row per measure), one panel per population (column), one
# point with its 95 % interval per series (edition class).


def _dot_grid(
    name: str, rows: list[tuple[str, str, list[EdClass], str]], columns: list[str], value, editions
) -> tuple[MplFigure, list[dict]]:
    """rows: (row key, row title, series, x label); value(row, column, class) -> (k, n, applicable)."""
    plt = _plt()
    heights = [0.95 + 0.26 * len(r[2]) for r in rows]
    fig = plt.figure(figsize=(WIDTH, sum(heights)), layout="constrained")
    subs = fig.subfigures(len(rows), 1, height_ratios=heights, hspace=0.02) if len(rows) > 1 else [fig]
    data = []
    from matplotlib.ticker import MaxNLocator

    sty = Styler(editions)
    for sf, (rkey, rtitle, series, xlabel) in zip(subs, rows):
        sf.suptitle(rtitle, x=0.005, ha="left", fontweight="bold")
        axes = sf.subplots(1, len(columns), sharex=True, sharey=True, squeeze=False)[0]
        pts = {}
        for col in columns:
            for s in series:
                k, n, ok = value(rkey, col, s)
                p = _point(k, n, ok)
                pts[(col, s.key)] = p
                data.append(
                    {
                        "figure": name,
                        "row": rkey,
                        "column": col,
                        "series": s.label,
                        "editions": ",".join(s.editions),
                        "x": None,
                        "applicable": ok,
                        **p,
                    }
                )
        xmax = _scale(pts.values())
        for ax, col in zip(axes, columns):
            ax.set_title(platform_label(col))
            pp = _Points(horizontal=True)
            for i, s in enumerate(series):
                y = len(series) - 1 - i
                p = pts[(col, s.key)]
                colour, marker, _ = sty(s)
                if p["n"] is None:
                    ax.text(0.03 * xmax, y, "n/a", va="center", color="0.35")
                elif p["n"] == 0:
                    ax.text(0.03 * xmax, y, "no games", va="center", color="0.35")
                else:
                    pp.add(100 * p["rate"], y, 100 * p["ci_low"], 100 * p["ci_high"], colour, marker, p["small"])
            pp.draw(ax)
            ax.set_yticks(range(len(series)), [sty(s)[2] for s in reversed(series)])
            ax.set_ylim(-0.6, len(series) - 0.4)
            ax.set_xlim(0, xmax)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=3, steps=[1, 2, 2.5, 5, 10]))
            ax.grid(axis="x", color="0.88", lw=0.6)
            ax.tick_params(axis="y", length=0)
        sf.supxlabel(xlabel)
    return fig, data


def fig_outcomes(rep: Report, game_type: str) -> Figure | None:
    pops = [p for g, p in rep.populations if g == game_type]
    eds = rep.editions.get(game_type, [])
    if not pops or not eds:
        return None
    s = rep.table("summary_by_population")
    rows = [(m.name, m.short, rep.classes[(game_type, m.name)], m.unit) for m in MEASURES]

    def value(mname, plat, cls):
        m = MEASURE[mname]
        r = s.filter((pl.col("game_type") == game_type) & (pl.col("platform") == plat) & (pl.col("edition") == cls.key))
        if r.height == 0:
            return 0, 0, True
        rec = r.row(0, named=True)
        return rec[m.k], rec[m.n], applies(cls.key, m)

    name = f"outcomes_{game_type}"
    fig, data = _dot_grid(name, rows, pops, value, eds)
    gt = "Russian-draughts" if game_type != "chess" else "Chess"
    return Figure(
        name,
        f"{gt}: what became of the claim chances, per platform",
        "Each point is the share of analyzed games (status ok) of one platform, with its 95 % Wilson "
        "interval; editions whose verdicts agree on every game for that measure are one series "
        "(labels joined by “=”). Grey open points: fewer than "
        f"{stats.MIN_GAMES} games in the denominator. n/a: the edition has no such chance "
        "(no written-move claims, or no automatic draws).",
        fig,
        _frame(data),
    )


def _legend(fig, handles: dict, loc: str, ncol: int) -> None:
    """Series first, then the grey small-bin marker and reference lines; as many columns as fit
    the figure's width (about 0.075 in per character at 9 pt, plus the handle)."""
    keys = sorted(handles, key=lambda k: (k.startswith(("fewer than", "Lichess:")), list(handles).index(k)))
    width = max((len(k) for k in keys), default=1) * 0.075 + 0.6
    ncol = max(1, min(ncol, len(keys), int((WIDTH - 0.2) // width)))
    fig.legend([handles[k] for k in keys], keys, loc=loc, ncol=ncol, frameon=False)


# ----------------------------------------------------------------------------------------------
# Period series (months, or years where months are thin)


def fig_trend(rep: Report, game_type: str, platform: str) -> Figure | None:
    per = rep.table("summary_by_period").filter((pl.col("game_type") == game_type) & (pl.col("platform") == platform))
    if per.height == 0:
        return None
    eds = rep.editions.get(game_type, [])
    kind = per["period_kind"][0]
    # the plotted range: from the first to the last period with MIN_GAMES games (all are in the CSV)
    big = per.filter(pl.col("games") >= stats.MIN_GAMES)
    if big.select("period").n_unique() < 2:
        return None
    lo_p, hi_p = big["period"].min(), big["period"].max()
    assert isinstance(lo_p, _dt.date) and isinstance(hi_p, _dt.date)  # a Date column with rows
    plt = _plt()
    from matplotlib.lines import Line2D

    ms = list(TREND_MEASURES)
    fig, axes = plt.subplots(len(ms), 1, sharex=True, figsize=(WIDTH, 1.75 * len(ms) + 0.9), layout="constrained")
    data = []
    handles: dict[str, object] = {}
    half = _dt.timedelta(days=14 if kind == "month" else 182)
    sty = Styler(eds)
    for ax, mname in zip(axes, ms):
        m = MEASURE[mname]
        ax.set_title(m.short, loc="left")
        top = 0.0
        for cls in rep.pop_classes[(game_type, platform, mname)]:
            ok = applies(cls.key, m)
            sub = per.filter(pl.col("edition") == cls.key).sort("period")
            colour, marker, label = sty(cls)
            xs, ys, los, his, sx, sy, slo, shi = [], [], [], [], [], [], [], []
            for r in sub.iter_rows(named=True):
                p = _point(r[m.k], r[m.n], ok)
                data.append(
                    {
                        "figure": f"trend_{game_type}_{platform}",
                        "row": mname,
                        "column": platform,
                        "series": cls.label,
                        "editions": ",".join(cls.editions),
                        "x": r["period"].isoformat()[: 7 if kind == "month" else 4],
                        "applicable": ok,
                        **p,
                    }
                )
                if not ok or not (lo_p <= r["period"] <= hi_p):
                    continue
                x = r["period"] + half
                if p["n"] and not p["small"]:
                    xs.append(x)
                    ys.append(100 * p["rate"])
                    los.append(100 * p["ci_low"])
                    his.append(100 * p["ci_high"])
                    top = max(top, 100 * p["ci_high"])
                else:
                    xs.append(x)
                    ys.append(float("nan"))
                    los.append(float("nan"))
                    his.append(float("nan"))
                    if p["n"]:
                        sx.append(x)
                        sy.append(100 * p["rate"])
                        slo.append(100 * p["ci_low"])
                        shi.append(100 * p["ci_high"])
            if not ok:
                continue
            (line,) = ax.plot(xs, ys, color=colour, marker=marker, ms=2.5, lw=1)
            ax.fill_between(xs, los, his, color=colour, alpha=0.18, lw=0)
            handles.setdefault(label, line)
            if sx:
                from matplotlib.dates import date2num

                pp = _Points(horizontal=False, ms=2.5)
                for a, b, c_, d_ in zip(sx, sy, slo, shi):
                    pp.add(b, float(date2num(a)), c_, d_, colour, marker, True)
                pp.draw(ax)
                handles.setdefault(
                    f"fewer than {stats.MIN_GAMES} games (not joined)",
                    Line2D([], [], color=SMALL, marker="o", mfc="white", ls="none", ms=4),
                )
        ax.set_ylim(0, (top * 1.1) if top > 0 else 1)
        ax.set_ylabel("%")
        ax.grid(axis="y", color="0.88", lw=0.6)
        if lo_p <= LICHESS_FIVEFOLD <= hi_p + half * 2:
            ax.axvline(LICHESS_FIVEFOLD, color="0.2", ls=":", lw=1.2)
            handles.setdefault(
                "Lichess: fivefold automatic from 2020-01-14", Line2D([], [], color="0.2", ls=":", lw=1.2)
            )
    axes[-1].set_xlim(lo_p, hi_p + half * 2)
    _legend(fig, handles, "outside lower center", 2)
    word = "months" if kind == "month" else "years (months too thin)"
    name = f"trend_{game_type}_{platform}"
    gt = "Russian draughts" if game_type != "chess" else "chess"
    pl_ = platform_label(platform)
    return Figure(
        name,
        f"{pl_[:1].upper() + pl_[1:]} {gt} by {'month' if kind == 'month' else 'year'}",
        f"{platform_label(platform)} games by the {word} of their own date (UTCDate, else Date; games "
        f"without a full date are left out), with 95 % Wilson bands. A period without games is a gap "
        f"(the line is not drawn across it); a period with fewer than {stats.MIN_GAMES} games is a grey "
        "open point with its interval, not joined. The plotted range runs from the first to the last "
        f"period with {stats.MIN_GAMES} games or more; summary_by_period.csv has every period. "
        "Dotted line: Lichess made fivefold repetition automatic on 2020-01-14.",
        fig,
        _frame(data),
    )


# ----------------------------------------------------------------------------------------------
# Categories: time-control class, rating band


def fig_categories(
    rep: Report,
    game_type: str,
    table: str,
    dim: str,
    order: list[str] | None,
    title: str,
    caption: str,
    xlabel: str,
    tick=lambda v: v,
) -> Figure | None:
    df = rep.table(table).filter(pl.col("game_type") == game_type)
    eds = rep.editions.get(game_type, [])
    if df.height == 0 or not eds:
        return None
    tot = df.group_by("platform", "edition").agg(pl.col("games").sum()).group_by("platform").agg(pl.col("games").max())
    plats = [
        p
        for g, p in rep.populations
        if g == game_type and tot.filter((pl.col("platform") == p) & (pl.col("games") >= stats.MIN_GAMES)).height
    ]
    if not plats:
        return None
    present = set(df.filter(pl.col("platform").is_in(plats))[dim].to_list())
    cats = [c for c in (order or sorted(present)) if c in present]
    plt = _plt()
    from matplotlib.lines import Line2D

    ms = list(TREND_MEASURES)
    fig, axes = plt.subplots(
        len(ms),
        len(plats),
        sharex=True,
        sharey="row",
        squeeze=False,
        figsize=(WIDTH, 1.6 * len(ms) + 1.5),
        layout="constrained",
    )
    data = []
    handles: dict[str, object] = {}
    pos = {c: i for i, c in enumerate(cats)}
    sty = Styler(eds)
    for r_i, mname in enumerate(ms):
        m = MEASURE[mname]
        top = 0.0
        for c_i, plat in enumerate(plats):
            classes = [c for c in rep.pop_classes[(game_type, plat, mname)] if applies(c.key, m)]
            width = 0.7 / max(1, len(classes))
            ax = axes[r_i][c_i]
            pp = _Points(horizontal=False, ms=3.5)
            if r_i == 0:
                ax.set_title(platform_label(plat))
            for j, cls in enumerate(classes):
                colour, marker, label = sty(cls)
                sub = df.filter((pl.col("platform") == plat) & (pl.col("edition") == cls.key))
                for r in sub.iter_rows(named=True):
                    if r[dim] not in pos:
                        continue
                    p = _point(r[m.k], r[m.n])
                    data.append(
                        {
                            "figure": f"{dim}_{game_type}",
                            "row": mname,
                            "column": plat,
                            "series": cls.label,
                            "editions": ",".join(cls.editions),
                            "x": r[dim],
                            "applicable": True,
                            **p,
                        }
                    )
                    if not p["n"]:
                        continue
                    x = pos[r[dim]] + (j - (len(classes) - 1) / 2) * width
                    y, lo, hi = 100 * p["rate"], 100 * p["ci_low"], 100 * p["ci_high"]
                    if not p["small"]:
                        top = max(top, hi)
                    pp.add(y, x, lo, hi, colour, marker, p["small"])
                    if not p["small"]:
                        handles.setdefault(label, _handle(colour, marker))
                    else:
                        handles.setdefault(
                            f"fewer than {stats.MIN_GAMES} games",
                            Line2D([], [], color=SMALL, marker="o", mfc="white", ls="none", ms=4),
                        )
            pp.draw(ax)
            ax.grid(axis="y", color="0.88", lw=0.6)
            # vertical labels about 0.15 in apart at least: label every step-th category
            step = max(1, -(-len(cats) * 0.16 * len(plats) // (WIDTH - 0.8)))
            step = int(step)
            ax.set_xticks(range(len(cats)), [tick(c) if i % step == 0 else "" for i, c in enumerate(cats)], rotation=90)
            ax.set_xlim(-0.6, len(cats) - 0.4)
            if c_i == 0:
                ax.set_ylabel(f"{mname} (%)")
        axes[r_i][0].set_ylim(0, top * 1.1 if top > 0 else 1)
    fig.supxlabel(xlabel)
    _legend(fig, handles, "outside upper center", 3)
    name = f"{dim}_{game_type}"
    return Figure(name, title, caption, fig, _frame(data))


def fig_time_control(rep: Report, game_type: str = "chess") -> Figure | None:
    return fig_categories(
        rep,
        game_type,
        "summary_by_time_control",
        "time_control_class",
        list(TC_ORDER),
        "Chess by time-control class",
        "Missed, avoided and claimed chances (% of games, 95 % Wilson intervals) by the time-control class of "
        "the TimeControl tag (Lichess's estimate base + 40 × increment: ultrabullet < 30 s, bullet < 180 s, "
        "blitz < 480 s, rapid < 1500 s, classical otherwise; “-” correspondence). Platforms without "
        f"classified games are left out, and so are editions without written-move claims (lichess) from "
        f"the avoided row. Grey open points: fewer than {stats.MIN_GAMES} games (their intervals, light grey, "
        "may run off the panel: the scale is set by the larger bins). Within a row the panels share their "
        "scales.",
        "time-control class",
    )


def fig_rating(rep: Report, game_type: str = "chess") -> Figure | None:
    return fig_categories(
        rep,
        game_type,
        "summary_by_rating_band",
        "rating_band",
        None,
        "Chess by rating band",
        "The same measures by the mean Elo of the two players (both known) in 200-point bands, labelled by "
        f"their lower bound. Grey open points: fewer than {stats.MIN_GAMES} games; within a row the panels "
        "share their scales.",
        "mean Elo of the two players (band start)",
        tick=lambda v: str(int(v[:4])),
    )


# ----------------------------------------------------------------------------------------------
# Draughts: section 32 draw kinds


def _rule_applies(ed: str, rule: str) -> bool:
    from analyzer import kinds

    try:
        (e,) = kinds.resolve_editions([ed])
    except Exception:  # noqa: BLE001 - a custom edition the report cannot resolve: the rule is shown
        return True
    if rule == "king_moves":
        return bool(getattr(e, "king_moves", 0))
    return True


def fig_draughts_rules(rep: Report, game_type: str = "russian_draughts") -> Figure | None:
    rules = rep.table("rules").filter(pl.col("game_type") == game_type)
    eds = rep.editions.get(game_type, [])
    pops = [p for g, p in rep.populations if g == game_type]
    if rules.height == 0 or not pops:
        return None
    present = [r for r in DRAUGHTS_RULES if any(_rule_applies(e, r) for e in eds)]
    name = f"rules_{game_type}"
    plt = _plt()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(
        1,
        len(pops),
        sharex=True,
        sharey=True,
        squeeze=False,
        figsize=(WIDTH, 0.42 * len(present) * max(1, len(eds)) / 2 + 1.6),
        layout="constrained",
    )
    data, pts = [], {}
    for plat in pops:
        for rule in present:
            for ed in eds:
                x = rules.filter((pl.col("platform") == plat) & (pl.col("edition") == ed) & (pl.col("rule") == rule))
                ok = _rule_applies(ed, rule)
                k, n = (x["reached"][0], x["games"][0]) if x.height else (0, 0)
                p = _point(k, n, ok)
                pts[(plat, rule, ed)] = p
                data.append(
                    {
                        "figure": name,
                        "row": rule,
                        "column": plat,
                        "series": ed,
                        "editions": ed,
                        "x": None,
                        "applicable": ok,
                        **p,
                    }
                )
    xmax = _scale(pts.values())
    handles: dict[str, object] = {}
    step = 0.7 / max(1, len(eds))
    for ax, plat in zip(axes[0], pops):
        ax.set_title(platform_label(plat))
        pp = _Points(horizontal=True)
        for i, rule in enumerate(present):
            y0 = len(present) - 1 - i
            for j, ed in enumerate(eds):
                y = y0 + ((len(eds) - 1) / 2 - j) * step
                p = pts[(plat, rule, ed)]
                colour, marker = style(eds, ed)
                if p["n"] is None:
                    ax.text(0.03 * xmax, y, f"n/a ({ed})", va="center", color="0.35")
                elif p["n"]:
                    pp.add(100 * p["rate"], y, 100 * p["ci_low"], 100 * p["ci_high"], colour, marker, p["small"])
                    handles.setdefault(ed, _handle(colour, marker))
        pp.draw(ax)
        ax.set_yticks(range(len(present)), [RULE_LABELS[r].replace(" (", "\n(") for r in reversed(present)])
        ax.set_ylim(-0.6, len(present) - 0.4)
        ax.set_xlim(0, xmax)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
        ax.grid(axis="x", color="0.88", lw=0.6)
        ax.tick_params(axis="y", length=0)
    fig.supxlabel("% of games in which the rule's condition arose")
    _legend(fig, handles, "outside upper center", max(1, len(handles)))
    return Figure(
        name,
        "Russian draughts: games in which each section 32 draw rule arose",
        "Share of analyzed games (95 % Wilson interval) in which the rule's condition arose at some "
        "ply under each edition: a third occurrence of a position (claim, 32.2), the balance of forces "
        "unchanged for 32 moves (claim under fshr_russian, automatic under fmjd_64), and the "
        "automatic king endings of 32.1. n/a: the edition has no such rule. Grey open points: fewer than "
        f"{stats.MIN_GAMES} games.",
        fig,
        _frame(data),
    )


# ----------------------------------------------------------------------------------------------


def figure_plan(rep: Report) -> list[tuple[float, Callable[[], Figure | None]]]:
    """The figures to draw, in page order, as (relative cost, builder); a builder returns a
    Figure or None. The costs (about the number of panels) let two processes share the work."""
    from functools import partial

    plan: list[tuple[float, Callable[[], Figure | None]]] = []
    for gt in rep.editions:
        plan.append((4.0 if gt == "chess" else 1.5, partial(fig_outcomes, rep, gt)))
    if "chess" in rep.editions:
        for g, p in rep.populations:
            if g == "chess":
                plan.append((1.2, partial(fig_trend, rep, "chess", p)))
        plan.append((1.5, partial(fig_time_control, rep)))
        plan.append((3.5, partial(fig_rating, rep)))
    for gt in rep.editions:
        if gt != "chess":
            plan.append((0.7, partial(fig_draughts_rules, rep, gt)))
            for g, p in rep.populations:
                if g == gt:
                    plan.append((1.2, partial(fig_trend, rep, gt, p)))
    return plan


def build_figures(rep: Report) -> list[Figure]:
    figs = [build() for _, build in figure_plan(rep)]
    return [f for f in figs if f is not None]


def freeze_layout(fig) -> None:
    """Run the constrained layout once and keep its result (later saves skip the layout)."""
    fig.draw_without_rendering()
    fig.set_layout_engine(None)  # None, not "none": a placeholder engine makes every save lay out (and draw) twice


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(\bid="|"#|\(#)([^")]+)')


def svg_text(fig, prefix: str) -> str:
    """The figure as an inline <svg> element (ids prefixed, so several figures share a page)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    s = buf.getvalue()
    s = s[s.index("<svg") :]
    ids = set(_ID.findall(s))
    # one pass: id="x", href="#x" and url(#x) of the figure's own ids
    s = _REF.sub(lambda m: m.group(1) + prefix + "-" + m.group(2) if m.group(2) in ids else m.group(0), s)
    return s


def save(f: Figure, directory: str) -> dict[str, str]:
    """SVG, PDF and CSV of a figure under directory; returns the inline SVG and the file names."""
    os.makedirs(directory, exist_ok=True)
    svg = svg_text(f.fig, f.name)
    with open(os.path.join(directory, f.name + ".svg"), "w", encoding="utf-8") as fh:
        fh.write('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg)
    f.fig.savefig(os.path.join(directory, f.name + ".pdf"), format="pdf", metadata={"CreationDate": None})
    f.data.write_csv(os.path.join(directory, f.name + ".csv"))
    return {"svg": svg, "svg_file": f.name + ".svg", "pdf_file": f.name + ".pdf", "csv_file": f.name + ".csv"}
