"""Independent helpers for the report tests: the raw tables read straight from the Parquet files
(no report code), a Wilson interval solved as the roots of its quadratic, and the text-layout
check of a matplotlib figure."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from statistics import NormalDist

import numpy as np
import polars as pl

Z = NormalDist().inv_cdf(0.975)


def split_games(text: str) -> list[str]:
    """A PGN text's games, each ending in a blank line (for building test inputs from a sample)."""
    return [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", text) if g.strip()]


def wilson_roots(k: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson interval as the two p with (k/n - p)^2 = z^2 p (1 - p) / n."""
    ph = k / n
    a = 1 + Z * Z / n
    b = -(2 * ph + Z * Z / n)
    c = ph * ph
    r = sorted(float(x.real) for x in np.roots([a, b, c])) if c > 0 else [0.0, -b / a]
    return max(0.0, r[0]), min(1.0, r[1])


def raw(out: str, table: str) -> pl.DataFrame:
    """A table as polars reads it (`source` from the hive folder names)."""
    return pl.read_parquet(
        os.path.join(out, table, "*", "part-*.parquet"), hive_partitioning=True, hive_schema={"source": pl.String}
    ).with_columns(pl.col(pl.Categorical).cast(pl.String))


def raw_joined(out: str) -> pl.DataFrame:
    """Analyzed games (status ok) x their verdicts, with `claimed` (an event claimed) per edition."""
    g = raw(out, "games").filter(pl.col("status") == "ok")
    v = raw(out, "verdicts").drop("game_type")
    e = raw(out, "events")
    claimed = (
        e.filter(pl.col("outcome") == "claimed")
        .select("source", "game_index", "edition")
        .unique()
        .with_columns(pl.lit(True).alias("claimed"))
    )
    out = (
        g.join(v, on=["source", "game_index"])
        .join(claimed, on=["source", "game_index", "edition"], how="left")
        .with_columns(pl.col("claimed").fill_null(False))
    )
    # per claim rule: a chance on the board (kind claim_now), and one played past (outcome missed)
    for rule in ("threefold", "fifty"):
        for name, cond in (
            (f"board_chance_{rule}", pl.col("kind") == "claim_now"),
            (f"missed_{rule}", pl.col("outcome") == "missed"),
        ):
            hit = e.filter(cond & (pl.col("rule") == rule)).select("source", "game_index", "edition").unique()
            out = out.join(
                hit.with_columns(pl.lit(True).alias(name)), on=["source", "game_index", "edition"], how="left"
            )
            out = out.with_columns(pl.col(name).fill_null(False))
    return out


def counts(rows: pl.DataFrame) -> dict[str, int]:
    """The measures' numerators and denominators over a set of (game, edition) rows."""
    res = rows["missed_claim_result"]
    return {
        "games": rows.height,
        "missed": int(rows["first_missed_claim_ply"].is_not_null().sum()),
        "missed_lost": int((res == "loss").sum()),
        "missed_result_known": int(res.is_not_null().sum()),
        "avoided": int(rows["first_avoided_claim_ply"].is_not_null().sum()),
        "claimed": int(rows["claimed"].sum()),
        "decisive": int(rows["result"].is_in(["1-0", "0-1"]).sum()),
        "result_changed": int(rows["result_changed"].fill_null(False).sum()),
        **{c: int(rows[c].sum()) for r in ("threefold", "fifty") for c in (f"board_chance_{r}", f"missed_{r}")},
    }


# (k, n) of each figure row, as the report's measures are documented (docs/report.md)
MEASURE_KN = {
    "missed_threefold": ("missed_threefold", "board_chance_threefold"),
    "missed_fifty": ("missed_fifty", "board_chance_fifty"),
    "missed": ("missed", "games"),
    "lost_after_missed": ("missed_lost", "missed_result_known"),
    "avoided": ("avoided", "games"),
    "claimed": ("claimed", "games"),
    "automatic_draw": ("result_changed", "decisive"),
}


def text_problems(fig, min_size: float = 9.0) -> list[str]:
    """Texts a figure actually draws that are smaller than min_size points, leave the figure, or
    overlap another text (window extents after the layout)."""
    import matplotlib.text as mtext

    drawn = []
    orig = mtext.Text.draw

    def draw(self, renderer):
        orig(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append((self, self.get_window_extent(renderer)))

    mtext.Text.draw = draw
    try:
        fig.canvas.draw()
    finally:
        mtext.Text.draw = orig
    problems = []
    W, H = fig.bbox.width, fig.bbox.height
    for t, bb in drawn:
        if t.get_fontsize() < min_size - 1e-6:
            problems.append(f"{t.get_text()!r}: {t.get_fontsize()} pt")
        if bb.x0 < -0.5 or bb.y0 < -0.5 or bb.x1 > W + 0.5 or bb.y1 > H + 0.5:
            problems.append(f"{t.get_text()!r} clipped: {bb.bounds} outside {W}x{H}")
    for i in range(len(drawn)):
        for j in range(i + 1, len(drawn)):
            a, b = drawn[i][1], drawn[j][1]
            ox = min(a.x1, b.x1) - max(a.x0, b.x0)
            oy = min(a.y1, b.y1) - max(a.y0, b.y0)
            if ox > 0.5 and oy > 0.5:
                problems.append(f"{drawn[i][0].get_text()!r} overlaps {drawn[j][0].get_text()!r}")
    return problems


def check_print_figures(figs, freeze_layout, width: float | None = None) -> None:
    """Lay out each figure for print with `freeze_layout` (analyzer.report.figures', passed in:
    this module holds no report code), a layout warning being an error, and assert that its
    text is readable and never overlaps (and, given, its width in inches). The figures are
    closed whatever happens, so that a failure leaves no open figures behind."""
    import warnings

    import matplotlib.pyplot as plt
    import pytest

    assert figs, "no figures to check"
    try:
        for f in figs:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # e.g. "constrained_layout not applied"
                freeze_layout(f.fig)
            assert text_problems(f.fig) == [], f.name
            if width is not None:
                w, _ = f.fig.get_size_inches()
                assert w == pytest.approx(width)
    finally:
        for f in figs:
            plt.close(f.fig)


def cli(*args, cwd=None, timeout=900):
    """Run `python -m analyzer ...` with this checkout's package; the last stdout line (JSON for
    scan)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    if args[0] == "scan":
        args = (*args, "--json", "--workers", "1", "--progress", "none")
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd or root,
    )
    return proc, (
        json.loads(proc.stdout.strip().splitlines()[-1]) if args[0] == "scan" and proc.returncode in (0, 1) else None
    )
