"""Figures of what the position was worth when a rule fired (report tables of values.py):

missed_by_win_chance_chess  the share of first claim chances on the board that were missed,
                            by the claimant's win chance ([%eval]), per platform, edition and
                            time-control class
move_draws_tb_chess         of the games ended by a 50- or 75-move draw with a tablebase value,
                            the share the tables call a win (cursed or not), per platform and
                            edition
"""

from __future__ import annotations

import textwrap

import polars as pl

from analyzer.report import stats
from analyzer.report.collect import TC_ORDER
from analyzer.report.figkit import (
    WIDE,
    Figure,
    Layout,
    Points,
    frame,
    legend,
    plt_,
    point,
    series_handles,
    small_handle,
)
from analyzer.report.model import Report, platform_label
from analyzer.report.values import BIN_LABELS

TB_KINDS = (("tb_win", "a tablebase win (cursed or not)"), ("tb_cursed_win", "a cursed win"))


def _table(rep: Report, name: str) -> pl.DataFrame | None:
    df = rep.tables.get(name)
    return df if df is not None and df.height else None


def _editions_of(df: pl.DataFrame, plat: str, rep: Report) -> list[str]:
    eds = df.filter(pl.col("platform") == plat)["edition"].unique().to_list()
    order = rep.editions.get("chess", [])
    return sorted(eds, key=lambda e: order.index(e) if e in order else len(order))


def _reading(eds: list[str], plat: str) -> list[str]:
    """The edition a population is read under here: lichess for Lichess games where it was
    scanned, else FIDE 2018, else the first (the headline's choice)."""
    for ed in (("lichess",) if plat == "lichess" else ()) + ("fide_2018",):
        if ed in eds:
            return [ed]
    return eds[:1]


def fig_missed_by_win_chance(rep: Report, layout: Layout = WIDE) -> Figure | None:
    """Missed first claim chances on the board, by the claimant's win chance: panels per
    platform (one per time-control class with such chances, 'all' first), read under the
    population's edition (lichess for Lichess games, else FIDE 2018); x the win-chance bin, y
    the share missed with its Wilson interval."""
    df = _table(rep, "missed_by_win_chance")
    if df is None:
        return None
    df = df.filter(pl.col("game_type") == "chess")
    plats = [p for g, p in rep.populations if g == "chess" and df.filter(pl.col("platform") == p).height]
    if not plats:
        return None
    panels = []
    for plat in plats:
        sub = df.filter(pl.col("platform") == plat)
        classes = ["all"] + [c for c in (*TC_ORDER, "unknown") if sub.filter(pl.col("time_control_class") == c).height]
        for tc in classes:
            panels.append((plat, tc))
    ncol = 1 if layout.narrow else 2
    nrow = -(-len(panels) // ncol)
    plt = plt_()
    fig = plt.figure(figsize=(layout.width, 1.9 * nrow + 0.9), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    data = []
    drawn: dict = {}
    small_seen = False
    name = "missed_by_win_chance_chess"
    for i, (plat, tc) in enumerate(panels):
        ax = axes[i // ncol][i % ncol]
        sub = df.filter((pl.col("platform") == plat) & (pl.col("time_control_class") == tc))
        eds = _reading(_editions_of(sub, plat, rep), plat)
        pp = Points(horizontal=False, ms=4)
        pts = []
        for j, ed in enumerate(eds):
            st = rep.styles("chess", (ed,))
            drawn[(ed,)] = st.label
            for b, label in enumerate(BIN_LABELS):
                r = sub.filter((pl.col("edition") == ed) & (pl.col("bin") == label))
                if not r.height:
                    continue
                p = point(int(r["missed"][0]), int(r["chances"][0]))
                x = b + (j - (len(eds) - 1) / 2) * 0.12
                pp.add_rate(p, x, st)
                pts.append(p)
                small_seen = small_seen or p["small"]
                data.append(
                    {
                        "figure": name,
                        "row": platform_label(plat),
                        "column": tc,
                        "series": st.label,
                        "editions": ed,
                        "time_control_class": tc,
                        "x": label,
                        "applicable": True,
                        "denominator": "first claim chances on the board with an evaluation",
                        **p,
                    }
                )
        pp.draw(ax)
        top = max([100 * p["ci_high"] for p in pts if not p["small"]] + [100 * p["rate"] for p in pts] + [1.0])
        ax.set_ylim(0, min(100, top * 1.08))
        ax.set_xlim(-0.5, len(BIN_LABELS) - 0.5)
        ax.set_xticks(range(len(BIN_LABELS)), [b.replace(" %", "") for b in BIN_LABELS])
        ax.grid(axis="y", color="0.88", lw=0.6)
        n = sum(p["n"] for p in pts if p["n"])
        reading = rep.styles("chess", tuple(eds)).label if eds else ""
        ax.set_title(layout.wrap(f"{platform_label(plat)} ({reading}) · {tc} · {n:,} chances"), loc="left")
        if i % ncol == 0:
            ax.set_ylabel("% missed")
    for j in range(len(panels), nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel(layout.wrap("win chance of the side that could claim (%)"))
    handles = series_handles(rep, "chess", drawn, small_seen, f"fewer than {stats.MIN_GAMES} chances")
    legend(fig, handles, layout, "outside lower center")
    return Figure(
        name,
        "Chess: missed claims by the claimant's win chance",
        "Each game's first claim chance on the board of each rule (the side to move could claim a threefold "
        "repetition or the 50-move rule) whose position carries an evaluation ([%eval] in the input), read under "
        "the population's edition (lichess for Lichess games, else FIDE 2018): the share "
        "that was played past (missed), by the win chance of the side that could claim, from Lichess's formula "
        "50 + 50 (2 / (1 + exp(-0.00368208 cp)) - 1); 95 % Wilson intervals. Left: the claimant was worse; right: "
        f"better. Grey open points: fewer than {stats.MIN_GAMES} chances. About 6 % of Lichess games carry "
        "evaluations (those analysed on the site), so these are a selected sample.",
        fig,
        frame(data),
        layout,
        ("missed_by_win_chance", "missed / chances"),
    )


def fig_move_draws_tb(rep: Report, layout: Layout = WIDE) -> Figure | None:
    """Of the games ended by a 50- or 75-move draw whose position the tables cover, the share
    the tables call a win (cursed or not: a filled point) and a cursed win (an open diamond): a
    panel per platform, a row per rule and group of editions with the same counts."""
    from matplotlib.lines import Line2D

    from analyzer.report.styles import PALETTE

    df = _table(rep, "value_move_draws")
    if df is None:
        return None
    df = df.filter((pl.col("game_type") == "chess") & (pl.col("with_tb_value") > 0))
    plats = [p for g, p in rep.populations if g == "chess" and df.filter(pl.col("platform") == p).height]
    if not plats:
        return None
    looks = {"tb_win": (PALETTE[0], "o", PALETTE[0]), "tb_cursed_win": (PALETTE[1], "D", "white")}
    rows_of: dict[str, list] = {}
    for plat in plats:
        sub = df.filter(pl.col("platform") == plat)
        groups: dict[tuple, list[str]] = {}
        for ed in _editions_of(sub, plat, rep):
            for r in sub.filter(pl.col("edition") == ed).iter_rows(named=True):
                key = (r["rule"], r["tb_win"], r["tb_cursed_win"], r["with_tb_value"])
                groups.setdefault(key, []).append(ed)
        rows_of[plat] = list(groups.items())
    heights = [0.6 + (0.6 if layout.narrow else 0.42) * len(rows_of[p]) for p in plats]
    plt = plt_()
    fig = plt.figure(figsize=(layout.width, sum(heights) + 0.9), layout="constrained")
    axes = fig.subplots(len(plats), 1, squeeze=False, height_ratios=heights)
    data = []
    small_seen = False
    for ax, plat in zip(axes[:, 0], plats):
        pp = Points(horizontal=True, ms=4.5)
        labels = []
        rows = rows_of[plat]
        for y, ((rule, win, cursed, n), eds) in enumerate(reversed(rows)):
            label = rep.styles.counterfactual and " = ".join(
                e + (" (counterfactual)" if e in rep.styles.counterfactual else "") for e in eds
            )
            label = label or " = ".join(eds)
            labels.append((y, f"{label} · {'75' if rule == 'seventyfive' else '50'} moves · {n:,} draws"))
            for col, k in (("tb_win", win), ("tb_cursed_win", cursed)):
                p = point(int(k), int(n))
                colour, marker, face = looks[col]
                pp.add(100 * p["rate"], y, 100 * p["ci_low"], 100 * p["ci_high"], colour, marker, p["small"], face)
                small_seen = small_seen or p["small"]
                data.append(
                    {
                        "figure": "move_draws_tb_chess",
                        "row": platform_label(plat),
                        "column": rule,
                        "series": dict(TB_KINDS)[col],
                        "editions": ",".join(eds),
                        "x": col,
                        "applicable": True,
                        "denominator": "games ended by a move-count draw with a tablebase value",
                        **p,
                    }
                )
        pp.draw(ax)
        width = 26 if layout.narrow else 44
        ax.set_yticks([a for a, _ in labels], [textwrap.fill(b, width) for _, b in labels])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlim(0, 100)
        ax.grid(axis="x", color="0.88", lw=0.6)
        ax.set_title(platform_label(plat), loc="left")
    axes[-1, 0].set_xlabel(layout.wrap("% of the move-count draws the tables cover"))
    handles = {
        what: Line2D([], [], color=looks[col][0], marker=looks[col][1], mfc=looks[col][2], ls="none", ms=4.5)
        for col, what in TB_KINDS
    }
    if small_seen:
        handles[f"fewer than {stats.MIN_GAMES} games (grey)"] = small_handle()
    legend(fig, handles, layout, "outside lower center")
    return Figure(
        "move_draws_tb_chess",
        "Chess: 50- and 75-move draws in positions the tablebases call won",
        "Games that ended on a 50-move draw (claimed, or automatic on Lichess) or a 75-move draw, whose position "
        "there the Syzygy tables cover (--syzygy): the share the tables call a win for either side (filled: "
        "WDL 2 or 1, for the side to move or its opponent) and a cursed win (open diamond: a win, but not "
        "within 50 moves from a zeroed count), with 95 % Wilson intervals; editions with the same counts share "
        "a row. The tables cover positions of at most as many pieces as the folder's largest table.",
        fig,
        frame(data),
        layout,
        ("value_move_draws", "tb_win / with_tb_value, tb_cursed_win / with_tb_value"),
    )
