"""What every figure of the report is made with: the two layouts (wide for print and wide
screens, narrow for phones), matplotlib's settings (text 9 pt), points with intervals drawn
with few artists, the long table of what a figure draws, legends and date axes."""

from __future__ import annotations

import datetime as _dt
import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from analyzer.report import stats
from analyzer.report.model import RATE_SCHEMA
from analyzer.report.styles import SMALL, SMALL_CI

if TYPE_CHECKING:  # matplotlib (the "report" extra) is imported where figures are drawn
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.typing import RcKeyType

FONT = 9  # points, every text of every figure
CHAR_IN = 0.075  # about the width of a character at 9 pt, inches


@dataclass(frozen=True)
class Layout:
    """wide: 7 in (a two-column page; the page's figure above 600 px); narrow: 3.4 in, panels in
    one column (the page's figure on phones, where a 7-in figure would be scaled to unreadable
    text)."""

    name: str
    width: float
    narrow: bool

    def wrap(self, text: str, indent: float = 0.0, bold: bool = False) -> str:
        """Text broken into lines that fit the figure's width less `indent` inches (narrow
        layout only); bold text is wider."""
        if not self.narrow:
            return text
        per_char = CHAR_IN * (1.15 if bold else 1.0)
        return "\n".join(textwrap.wrap(text, max(20, int((self.width - 0.2 - indent) / per_char))))


WIDE = Layout("wide", 7.0, False)
NARROW = Layout("narrow", 3.4, True)
LAYOUTS = (WIDE, NARROW)

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
    name: str  # file stem (the same for both layouts)
    title: str
    caption: str
    fig: MplFigure
    data: pl.DataFrame  # what it draws
    layout: Layout = WIDE
    source: tuple[str, str] | None = None  # (report table, its columns) every point is drawn from


def plt_():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(RC)
    return plt


def point(k, n, applicable=True) -> dict:
    """A rate with its interval, as a figure's data row has it."""
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


DATA_SCHEMA = {
    "figure": pl.String,
    "row": pl.String,
    "column": pl.String,
    "series": pl.String,
    "editions": pl.String,
    "time_control_class": pl.String,
    "x": pl.String,
    **RATE_SCHEMA,
    "small": pl.Boolean,
    "denominator": pl.String,  # what n counts, in words
}


def frame(rows: list[dict], denominator: str | None = None) -> pl.DataFrame:
    """A figure's data, one row per point; `denominator` for the rows that do not say it."""
    return pl.DataFrame(
        [{"time_control_class": None, "denominator": denominator, **r} for r in rows], schema=DATA_SCHEMA
    )


class Points:
    """Points with intervals for one panel, drawn with few artists: one line collection for all
    intervals, one marker line per style."""

    def __init__(self, horizontal: bool, ms: float = 4.5):
        self.horizontal, self.ms = horizontal, ms
        self.items: list[tuple] = []

    def add(self, v, pos, lo, hi, colour, marker, small, face=None):
        """A point; `face` the marker's fill (default: the colour; small points are open)."""
        fill = "white" if small else (face or colour)
        self.items.append((v, pos, lo, hi, SMALL if small else colour, "o" if small else marker, small, fill))

    def add_rate(self, p: dict, pos, style) -> None:
        """A measure's point (`rate`, `ci_low`, `ci_high` as fractions; `small`) in percent, in
        a series' style."""
        lo, hi = 100 * p["ci_low"], 100 * p["ci_high"]
        self.add(100 * p["rate"], pos, lo, hi, style.colour, style.marker, p["small"], style.face)

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
                colors=[SMALL_CI if small else c for *_, c, _, small, _ in self.items],
                linewidths=[0.7 if small else 1.0 for *_, small, _ in self.items],
            ),
            autolim=False,
        )
        styles: dict = {}
        for v, pos, _lo, _hi, c, mk, _small, fill in self.items:
            styles.setdefault((c, mk, fill), []).append((v, pos) if self.horizontal else (pos, v))
        for (c, mk, fill), xy in styles.items():
            ax.plot(
                [a for a, _ in xy],
                [b for _, b in xy],
                ls="none",
                marker=mk,
                ms=self.ms,
                color=c,
                mfc=fill,
                clip_on=not self.horizontal,
                zorder=3,
            )


def scale(points) -> float:
    """Upper end of a rate axis (%): every point and the intervals of the bins that are not
    small fit (a small bin's interval may run off the panel, clipped)."""
    vals = [p["rate"] for p in points if p["rate"] is not None]
    vals += [p["ci_high"] for p in points if p["ci_high"] is not None and not p["small"]]
    top = max(vals, default=0.0) * 100
    return top * 1.08 if top > 0 else 1.0


def handle(style, line: bool = True):
    """A legend entry of a series (a Style): its marker, fill and, for series drawn as lines,
    its line."""
    from matplotlib.lines import Line2D

    return Line2D(
        [], [], color=style.colour, marker=style.marker, ms=4.5, mfc=style.face, ls=style.dash if line else "-", lw=1
    )


def small_handle():
    from matplotlib.lines import Line2D

    return Line2D([], [], color=SMALL, marker="o", mfc="white", ls="none", ms=4)


SMALL_LABEL = f"fewer than {stats.MIN_GAMES} games"


def series_handles(rep, game_type: str, drawn, small_seen: bool, small_label: str = SMALL_LABEL) -> dict:
    """Legend entries of the series drawn (tuples of editions), in the report's series order,
    then the small-sample entry if a small point was drawn."""
    handles: dict[str, object] = {}
    for eds in sorted(drawn, key=lambda e: rep.styles(game_type, e).order):
        st = rep.styles(game_type, eds)
        handles[st.label] = handle(st)
    if small_seen:
        handles[small_label] = small_handle()
    return handles


def legend(fig, handles: dict, layout: Layout, loc: str = "outside lower center") -> None:
    """One legend per figure, entries in the order given (series in the report's order first,
    then the rest); as many columns as fit the figure's width."""
    if not handles:
        return
    keys = list(handles)
    ncol = 1
    for n in range(len(keys), 0, -1):  # the most columns that fit (entries fill column by column)
        rows = -(-len(keys) // n)
        cols = [keys[i : i + rows] for i in range(0, len(keys), rows)]
        if sum(max(len(k) for k in c) * CHAR_IN + 0.55 for c in cols) <= layout.width - 0.2:
            ncol = len(cols)
            break
    fig.legend([handles[k] for k in keys], keys, loc=loc, ncol=ncol, frameon=False)


def year_axis(ax, lo: _dt.date, hi: _dt.date, kind: str, panel_width: float) -> None:
    """Ticks under a date axis: for a yearly series one tick per plotted year, at its point
    (mid-year), labelled by the year, every step-th so the labels fit; for months the years'
    starts."""
    from matplotlib.ticker import FixedLocator, NullLocator

    years = list(range(lo.year, hi.year + 1))
    step = max(1, math.ceil(len(years) * 0.42 / max(panel_width, 0.5)))
    for s in (1, 2, 4, 5, 10, 20, 25, 50):  # round steps
        if s >= step:
            step = s
            break
    shown = [y for y in years if y % step == 0] or years[:1]
    if kind == "year":
        ticks = [_dt.date(y, 7, 2) for y in shown]
    else:
        ticks = [_dt.date(y, 1, 1) for y in shown if _dt.date(y, 1, 1) >= lo]
        if not ticks:
            ticks = [lo]
    from matplotlib.dates import date2num

    ax.xaxis.set_major_locator(FixedLocator([date2num(t) for t in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    from matplotlib.ticker import FixedFormatter

    ax.xaxis.set_major_formatter(FixedFormatter([str(t.year) for t in ticks]))
