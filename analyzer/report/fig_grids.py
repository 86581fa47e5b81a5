"""Figures of points with intervals in a grid of panels: the outcomes per platform (a row per
measure), the measures by time-control class and by rating band, the draughts rules. Wide: the
platforms side by side; narrow: one panel per row, the platforms one under the other, each
titled, on the same scale as in the wide figure."""

from __future__ import annotations

import polars as pl

from analyzer.report import stats
from analyzer.report.collect import TC_ORDER
from analyzer.report.cube import UNKNOWN
from analyzer.report.figkit import (
    WIDE,
    Figure,
    Layout,
    Points,
    frame,
    handle,
    legend,
    plt_,
    point,
    scale,
    series_handles,
)
from analyzer.report.model import (
    DRAUGHTS_RULES,
    MEASURE,
    MEASURES,
    RULE_LABELS,
    RULE_MEASURES,
    SUMMARY_BY,
    TREND_MEASURES,
    Report,
    applies,
    platform_label,
    rule_applies,
)


def _dot_grid(rep: Report, game_type: str, name: str, rows, columns, value, layout: Layout):
    """rows: (row key, row title, series, x label); value(row, column, class) -> (k, n, applicable).
    Wide: a subfigure per row, its columns side by side (shared scale); narrow: the row's
    columns one under the other, each titled, on the row's scale."""
    from matplotlib.ticker import MaxNLocator

    plt = plt_()
    base = [0.42 + 0.26 * len(r[2]) for r in rows]
    heights = [len(columns) * (b + 0.38) + 0.6 if layout.narrow else b + 0.55 for b in base]
    fig = plt.figure(figsize=(layout.width, sum(heights)), layout="constrained")
    subs = fig.subfigures(len(rows), 1, height_ratios=heights, hspace=0.02) if len(rows) > 1 else [fig]
    data = []
    for sf, (rkey, rtitle, series, xlabel) in zip(subs, rows):
        if layout.narrow:
            axes = list(sf.subplots(len(columns), 1, sharex=True, squeeze=False)[:, 0])
        else:
            axes = list(sf.subplots(1, len(columns), sharex=True, sharey=True, squeeze=False)[0])
        sf.suptitle(layout.wrap(rtitle, bold=True), x=0.005, ha="left", fontweight="bold")
        pts = {}
        for col in columns:
            for s in series:
                k, n, ok = value(rkey, col, s)
                p = point(k, n, ok)
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
                        "denominator": MEASURE[rkey].of if rkey in MEASURE else None,
                        **p,
                    }
                )
        xmax = scale(pts.values())
        for ax, col in zip(axes, columns):
            ax.set_title(platform_label(col), loc="left" if layout.narrow else "center")
            pp = Points(horizontal=True)
            for i, s in enumerate(series):
                y = len(series) - 1 - i
                p = pts[(col, s.key)]
                st = rep.styles(game_type, s.editions)
                if p["n"] is None:
                    ax.text(0.03 * xmax, y, "n/a", va="center", color="0.35")
                elif p["n"] == 0:
                    ax.text(0.03 * xmax, y, "no games", va="center", color="0.35")
                else:
                    pp.add_rate(p, y, st)
            pp.draw(ax)
            ax.set_yticks(range(len(series)), [rep.styles(game_type, s.editions).label for s in reversed(series)])
            ax.set_ylim(-0.6, len(series) - 0.4)
            ax.set_xlim(0, xmax)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=3 if not layout.narrow else 4, steps=[1, 2, 2.5, 5, 10]))
            ax.tick_params(axis="x", labelbottom=True)
            ax.grid(axis="x", color="0.88", lw=0.6)
            ax.tick_params(axis="y", length=0)
        sf.supxlabel(xlabel)
    return fig, data


def fig_outcomes(rep: Report, game_type: str, layout: Layout = WIDE) -> Figure | None:
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
    fig, data = _dot_grid(rep, game_type, name, rows, pops, value, layout)
    gt = "Russian-draughts" if game_type != "chess" else "Chess"
    return Figure(
        name,
        f"{gt}: what became of the claim chances, per platform",
        "Each point is a share, of what the row's title says (the games that had a threefold or a 50-move "
        "claim on the board for the first two rows; all analyzed games, status ok, of the platform for missed, "
        "avoided and claimed), with its 95 % Wilson interval; editions whose verdicts agree on every game for "
        "that measure are one series (labels joined by “=”). Grey open points: fewer than "
        f"{stats.MIN_GAMES} games in the denominator. n/a: the edition has no such chance "
        "(no written-move claims, no 50-move claim, or no automatic draws).",
        fig,
        frame(data),
        layout,
        ("summary_by_population", "per measure <measure> / <measure>_denominator (docs/report.md)"),
    )


# ----------------------------------------------------------------------------------------------
# Categories: time-control class, rating band


def _category_axes(layout: Layout, n_rows: int, plats: list[str], panel_h: float):
    """[row][platform] axes: wide, rows x platforms, shared x and a shared y per row; narrow,
    each platform's rows one under the other (the y scales set equal per row by the caller)."""
    plt = plt_()
    if not layout.narrow:
        fig, axes = plt.subplots(
            n_rows,
            len(plats),
            sharex=True,
            sharey="row",
            squeeze=False,
            figsize=(layout.width, panel_h * n_rows + 1.5),
            layout="constrained",
        )
        return fig, [[axes[r][c] for c in range(len(plats))] for r in range(n_rows)]
    fig, axes = plt.subplots(
        n_rows * len(plats),
        1,
        sharex=True,
        squeeze=False,
        figsize=(layout.width, (panel_h + 0.3) * n_rows * len(plats) + 1.4),
        layout="constrained",
    )
    flat = axes[:, 0]
    return fig, [[flat[c * n_rows + r] for c in range(len(plats))] for r in range(n_rows)]


def fig_categories(
    rep: Report,
    game_type: str,
    dim: str,
    order: list[str] | None,
    title: str,
    caption: str,
    xlabel: str,
    layout: Layout = WIDE,
    tick=lambda v: v,
) -> Figure | None:
    """The trend measures by a category of the cube (its summary by `dim`)."""
    df = rep.table(SUMMARY_BY[dim]).filter(pl.col("game_type") == game_type)
    eds = rep.editions.get(game_type, [])
    if df.height == 0 or not eds:
        return None
    known = df.filter(pl.col(dim) != UNKNOWN)
    tot = (
        known.group_by("platform", "edition").agg(pl.col("games").sum()).group_by("platform").agg(pl.col("games").max())
    )
    plats = [
        p
        for g, p in rep.populations
        if g == game_type and tot.filter((pl.col("platform") == p) & (pl.col("games") >= stats.MIN_GAMES)).height
    ]
    if not plats:
        return None
    present = set(df.filter(pl.col("platform").is_in(plats))[dim].to_list())
    cats = [c for c in (order or sorted(present - {UNKNOWN})) if c in present]
    ms = list(TREND_MEASURES)
    fig, axes = _category_axes(layout, len(ms), plats, 1.6 if not layout.narrow else 1.15)
    data = []
    handles: dict[str, object] = {}
    pos = {c: i for i, c in enumerate(cats)}
    name = f"{dim}_{game_type}"
    series_seen: dict[tuple[str, ...], str] = {}
    small_seen = False
    panel_w = (layout.width - 0.8) / (1 if layout.narrow else len(plats))
    step = max(1, int(-(-len(cats) * 0.16 // panel_w)))  # vertical labels about 0.16 in apart at least
    for r_i, mname in enumerate(ms):
        m = MEASURE[mname]
        top = 0.0
        for c_i, plat in enumerate(plats):
            classes = [c for c in rep.pop_classes[(game_type, plat, mname)] if applies(c.key, m)]
            width = 0.7 / max(1, len(classes))
            ax = axes[r_i][c_i]
            pp = Points(horizontal=False, ms=3.5)
            if layout.narrow:
                ax.set_title(f"{platform_label(plat)}: {mname}", loc="left")
            elif r_i == 0:
                ax.set_title(platform_label(plat))
            for j, cls in enumerate(classes):
                st = rep.styles(game_type, cls.editions)
                sub = df.filter((pl.col("platform") == plat) & (pl.col("edition") == cls.key))
                for r in sub.iter_rows(named=True):
                    if r[dim] not in pos:
                        continue
                    p = point(r[m.k], r[m.n])
                    data.append(
                        {
                            "figure": name,
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
                    if not p["small"]:
                        top = max(top, 100 * p["ci_high"])
                        series_seen[tuple(cls.editions)] = st.label
                    else:
                        small_seen = True
                    pp.add_rate(p, x, st)
            pp.draw(ax)
            ax.grid(axis="y", color="0.88", lw=0.6)
            ax.set_xticks(range(len(cats)), [tick(c) if i % step == 0 else "" for i, c in enumerate(cats)], rotation=90)
            ax.set_xlim(-0.6, len(cats) - 0.4)
            if c_i == 0 or layout.narrow:
                ax.set_ylabel("% of games" if layout.narrow else f"{mname}\n(% of games)")
        for c_i in range(len(plats)):
            axes[r_i][c_i].set_ylim(0, top * 1.1 if top > 0 else 1)
    handles.update(series_handles(rep, game_type, series_seen, small_seen))
    fig.supxlabel(xlabel)
    legend(fig, handles, layout, "outside upper center")
    return Figure(
        name, title, caption, fig, frame(data, "games"), layout, (SUMMARY_BY[dim], "missed, avoided, claimed / games")
    )


def fig_time_control(rep: Report, game_type: str = "chess", layout: Layout = WIDE) -> Figure | None:
    return fig_categories(
        rep,
        game_type,
        "time_control_class",
        [*TC_ORDER, UNKNOWN],
        "Chess by time-control class: shares of all games",
        "Games with a missed, an avoided or a claimed chance, as a share of all the class's games (95 % "
        "Wilson intervals; for missed as a share of the games that had the chance, see the figure above), by "
        "the time-control class of "
        "the TimeControl tag (Lichess's estimate base + 40 × increment: ultrabullet < 30 s, bullet < 180 s, "
        "blitz < 480 s, rapid < 1500 s, classical otherwise; “-” correspondence; unknown: no readable "
        "TimeControl). Platforms without classified games are left out, and so are editions without "
        "written-move claims (lichess) from the avoided row. Grey open points: fewer than "
        f"{stats.MIN_GAMES} games (their intervals, light grey, may run off the panel: the scale is set by the "
        "larger bins). Within a row the panels share their scales.",
        "time-control class",
        layout,
    )


def fig_rating(rep: Report, game_type: str = "chess", layout: Layout = WIDE) -> Figure | None:
    return fig_categories(
        rep,
        game_type,
        "rating_band",
        None,
        "Chess by rating band",
        "Missed, avoided and claimed as shares of all the band's games, by the mean Elo of the two players "
        "(both known) in 200-point bands, labelled by "
        f"their lower bound; games without both ratings are left out (counted on the page). Grey open points: "
        f"fewer than {stats.MIN_GAMES} games; within a row the panels share their scales.",
        "mean Elo of the two players (band start)",
        layout,
        tick=lambda v: str(int(v[:4])),
    )


# ----------------------------------------------------------------------------------------------
# Draughts: section 32 draw kinds


def fig_draughts_rules(rep: Report, game_type: str = "russian_draughts", layout: Layout = WIDE) -> Figure | None:
    rules = rep.table("rules").filter(pl.col("game_type") == game_type)
    eds = rep.editions.get(game_type, [])
    pops = [p for g, p in rep.populations if g == game_type]
    if rules.height == 0 or not pops:
        return None
    present = [r for r in DRAUGHTS_RULES if any(rule_applies(e, r) for e in eds)]
    name = f"rules_{game_type}"
    plt = plt_()
    from matplotlib.ticker import MaxNLocator

    panel_h = 0.42 * len(present) * max(1, len(eds)) / 2 + 0.5
    if layout.narrow:
        fig, ax_grid = plt.subplots(
            len(pops), 1, sharex=True, squeeze=False, figsize=(layout.width, panel_h * len(pops) + 1.6)
        )
        axes = list(ax_grid[:, 0])
        fig.set_layout_engine("constrained")
    else:
        fig, ax_grid = plt.subplots(
            1,
            len(pops),
            sharex=True,
            sharey=True,
            squeeze=False,
            figsize=(layout.width, panel_h + 1.1),
            layout="constrained",
        )
        axes = list(ax_grid[0])
    data, pts = [], {}
    for plat in pops:
        for rule in present:
            for ed in eds:
                x = rules.filter((pl.col("platform") == plat) & (pl.col("edition") == ed) & (pl.col("rule") == rule))
                ok = rule_applies(ed, rule)
                k, n = (x["reached"][0], x["games"][0]) if x.height else (0, 0)
                p = point(k, n, ok)
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
    xmax = scale(pts.values())
    handles: dict[str, object] = {}
    step = 0.7 / max(1, len(eds))
    for ax, plat in zip(axes, pops):
        ax.set_title(platform_label(plat), loc="left" if layout.narrow else "center")
        pp = Points(horizontal=True)
        for i, rule in enumerate(present):
            y0 = len(present) - 1 - i
            for j, ed in enumerate(eds):
                y = y0 + ((len(eds) - 1) / 2 - j) * step
                p = pts[(plat, rule, ed)]
                st = rep.styles(game_type, (ed,))
                if p["n"] is None:
                    ax.text(0.03 * xmax, y, f"n/a ({ed})", va="center", color="0.35")
                elif p["n"]:
                    pp.add_rate(p, y, st)
                    handles.setdefault(ed, handle(st))
        pp.draw(ax)
        ax.set_yticks(range(len(present)), [RULE_LABELS[r].replace(" (", "\n(") for r in reversed(present)])
        ax.set_ylim(-0.6, len(present) - 0.4)
        ax.set_xlim(0, xmax)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
        ax.tick_params(axis="x", labelbottom=True)
        ax.grid(axis="x", color="0.88", lw=0.6)
        ax.tick_params(axis="y", length=0)
    fig.supxlabel(layout.wrap("% of games in which the rule's condition arose"))
    ordered = {e: handles[e] for e in sorted(handles, key=lambda e: rep.styles(game_type, (e,)).order)}
    legend(fig, ordered, layout, "outside upper center")
    return Figure(
        name,
        "Russian draughts: games in which each section 32 draw rule arose",
        "Share of analyzed games (95 % Wilson interval) in which the rule's condition arose at some "
        "ply under each edition: a third occurrence of a position (claim, 32.2), the balance of forces "
        "unchanged for 32 moves (claim under fshr_russian, automatic under fmjd_64), and the "
        "automatic king endings of 32.1. n/a: the edition has no such rule. Grey open points: fewer than "
        f"{stats.MIN_GAMES} games.",
        fig,
        frame(data, "games"),
        layout,
        ("rules", "reached / games"),
    )


# ----------------------------------------------------------------------------------------------
# Missed among the games that had the chance, by time-control class: one panel per class, each
# on its own scale


def fig_missed_by_class(rep: Report, game_type: str = "chess", layout: Layout = WIDE) -> Figure | None:
    """Missed among the games with a claim of the rule on the board, per time-control class: a
    panel per class (small multiples) on a scale set by its own points and intervals, so that a
    class of a few games does not flatten the others; `k of n` beside each point."""
    from matplotlib.ticker import MaxNLocator

    df = rep.table(SUMMARY_BY["time_control_class"]).filter(pl.col("game_type") == game_type)
    if df.height == 0:
        return None
    rules = [MEASURE[r] for r in RULE_MEASURES]
    panels = []  # (platform, measure, panel title, class, [(series, point)])
    for g, plat in rep.populations:
        if g != game_type:
            continue
        for m in rules:
            classes = [c for c in rep.pop_classes.get((game_type, plat, m.name), []) if applies(c.key, m)]
            sub = df.filter(pl.col("platform") == plat)
            for tc in [*TC_ORDER, UNKNOWN]:
                pts = []
                for cls in classes:
                    r = sub.filter((pl.col("edition") == cls.key) & (pl.col("time_control_class") == tc))
                    if r.height and r[m.n][0]:
                        pts.append((cls, point(r[m.k][0], r[m.n][0])))
                if pts:
                    games = int(
                        sub.filter((pl.col("time_control_class") == tc) & (pl.col("edition") == pts[0][0].key))[
                            "games"
                        ].sum()
                    )
                    panels.append((plat, m, f"{tc} · {games:,} games", tc, pts))
    if not panels:
        return None
    groups: dict[tuple[str, str], list] = {}
    for plat, m, head, tc, pts in panels:
        groups.setdefault((plat, m.name), []).append((head, tc, pts))
    ncol = 2 if layout.narrow else 3
    n_series = max(len(pts) for *_, pts in panels)
    panel_h = 0.42 + 0.24 * n_series
    heights = [(-(-len(v) // ncol)) * (panel_h + 0.42) + 0.5 for v in groups.values()]
    plt = plt_()
    fig = plt.figure(figsize=(layout.width, sum(heights) + 0.5), layout="constrained")
    subs = fig.subfigures(len(groups), 1, height_ratios=heights, hspace=0.03) if len(groups) > 1 else [fig]
    data = []
    drawn: dict[tuple[str, ...], str] = {}
    small_seen = False
    name = f"missed_by_time_control_class_{game_type}"
    for sf, ((plat, mname), items) in zip(subs, groups.items()):
        m = MEASURE[mname]
        nrow = -(-len(items) // ncol)
        axes = sf.subplots(nrow, ncol, squeeze=False)
        title = f"{platform_label(plat)}: {m.short}"
        sf.suptitle(layout.wrap(title, bold=True), x=0.005, ha="left", fontweight="bold")
        for i, (head, tc, pts) in enumerate(items):
            ax = axes[i // ncol][i % ncol]
            pp = Points(horizontal=True, ms=4)
            top = 0.0
            labels = []
            for j, (cls, p) in enumerate(pts):
                y = len(pts) - 1 - j
                st = rep.styles(game_type, cls.editions)
                pp.add_rate(p, y, st)
                top = max(top, 100 * p["ci_high"], 100 * p["rate"])
                small_seen = small_seen or p["small"]
                drawn[tuple(cls.editions)] = st.label  # (a series of small points only: its name too)
                labels.append(f"{p['k']:,} of {p['n']:,}")
                data.append(
                    {
                        "figure": name,
                        "row": mname,
                        "column": plat,
                        "series": cls.label,
                        "editions": ",".join(cls.editions),
                        "time_control_class": tc,
                        "x": tc,
                        "applicable": True,
                        "denominator": m.of,
                        **p,
                    }
                )
            pp.draw(ax)
            ax.set_xlim(0, top * 1.08 if top > 0 else 1)
            ax.set_ylim(-0.6, len(pts) - 0.4)
            ax.set_yticks([])
            ax.spines["left"].set_visible(False)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=3, steps=[1, 2, 2.5, 5, 10]))
            ax.grid(axis="x", color="0.88", lw=0.6)
            ax.set_title(head, loc="left")
            right = ax.twinx()  # k of n beside each point: the games with a chance, and those that missed it
            right.set_ylim(ax.get_ylim())
            right.set_yticks([len(pts) - 1 - j for j in range(len(pts))], labels)
            right.tick_params(axis="y", length=0)
            right.spines[["top", "right", "left"]].set_visible(False)
        for j in range(len(items), nrow * ncol):
            axes[j // ncol][j % ncol].set_visible(False)
        sf.supxlabel(layout.wrap(m.unit))
    legend(fig, series_handles(rep, game_type, drawn, small_seen), layout, "outside lower center")
    return Figure(
        name,
        "Chess: missed among the games that had the chance, by time-control class",
        "For each rule, each time-control class is a panel with its own scale: a point is the share of the "
        "class's games with a claim of that rule on the board (the side to move could claim) in which the claim "
        "was played past, with its 95 % Wilson interval; beside it, k of n: the games that missed it, of the "
        "games that had it. Editions whose verdicts agree game by game are one series. Classes without such a "
        f"chance are left out. Grey open points: fewer than {stats.MIN_GAMES} games with the chance. The scales "
        "differ from panel to panel: compare the numbers, not the lengths.",
        fig,
        frame(data),
        layout,
        ("summary_by_time_control", "missed_threefold / board_chance_threefold, missed_fifty / board_chance_fifty"),
    )
