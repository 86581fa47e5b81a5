"""The report's figures: which are drawn, in page order, in both layouts (figkit.WIDE for print
and wide screens: SVG + PDF + CSV files; figkit.NARROW for phones: inline only), and how a figure
becomes SVG. The figures themselves: fig_grids (points per platform, category, rule) and
fig_trends (series over time)."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from functools import partial

from analyzer.report.fig_grids import (
    fig_draughts_rules,
    fig_missed_by_class,
    fig_outcomes,
    fig_rating,
    fig_time_control,
)
from analyzer.report.fig_trends import fig_trend, fig_trend_by_class
from analyzer.report.fig_values import fig_missed_by_win_chance, fig_move_draws_tb
from analyzer.report.figkit import LAYOUTS, NARROW, WIDE, Figure, Layout
from analyzer.report.model import Report

__all__ = ["NARROW", "WIDE", "Figure", "build_figures", "figure_plan", "freeze_layout", "save", "svg_text"]


def _builders(rep: Report) -> list[tuple[float, Callable[[Layout], Figure | None]]]:
    """(relative cost, builder taking a layout), in page order."""
    plan: list[tuple[float, Callable[[Layout], Figure | None]]] = []
    for gt in rep.editions:
        plan.append((4.0 if gt == "chess" else 1.5, partial(fig_outcomes, rep, gt)))
    if "chess" in rep.editions:
        for g, p in rep.populations:
            if g == "chess":
                plan.append((1.4, partial(fig_trend, rep, "chess", p)))
                plan.append((2.5, partial(fig_trend_by_class, rep, "chess", p)))
        plan.append((2.0, partial(fig_missed_by_class, rep, "chess")))
        plan.append((1.5, partial(fig_missed_by_win_chance, rep)))
        plan.append((1.0, partial(fig_move_draws_tb, rep)))
        plan.append((1.5, partial(fig_time_control, rep, "chess")))
        plan.append((3.5, partial(fig_rating, rep, "chess")))
    for gt in rep.editions:
        if gt != "chess":
            plan.append((0.7, partial(fig_draughts_rules, rep, gt)))
            for g, p in rep.populations:
                if g == gt:
                    plan.append((1.2, partial(fig_trend, rep, gt, p)))
    return plan


def figure_plan(rep: Report, layouts: tuple[Layout, ...] = LAYOUTS) -> list[tuple[float, Callable[[], Figure | None]]]:
    """The figures to draw, in page order (each in every layout), as (relative cost, builder);
    a builder returns a Figure or None. The costs (about the number of panels) let two processes
    share the work."""
    return [(cost, partial(b, layout)) for cost, b in _builders(rep) for layout in layouts]


def build_figures(rep: Report, layouts: tuple[Layout, ...] = (WIDE,)) -> list[Figure]:
    figs = [build() for _, build in figure_plan(rep, layouts)]
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


def stem(f: Figure) -> str:
    """The file stem and id prefix of a figure in its layout (the wide one has the bare name)."""
    return f.name if f.layout is WIDE else f"{f.name}.{f.layout.name}"


def save(f: Figure, directory: str) -> None:
    """SVG (and, for the wide layout, PDF) of a figure under directory (its CSV is written by
    the report, beside the figure)."""
    os.makedirs(directory, exist_ok=True)
    svg = svg_text(f.fig, stem(f))
    with open(os.path.join(directory, stem(f) + ".svg"), "w", encoding="utf-8") as fh:
        fh.write('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg)
    if f.layout is WIDE:
        f.fig.savefig(os.path.join(directory, f.name + ".pdf"), format="pdf", metadata={"CreationDate": None})
