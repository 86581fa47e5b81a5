"""`analyzer report OUT_DIR`: summary tables (Parquet + CSV) and one self-contained HTML page.

Reads the `games` and `events` tables of an `analyzer scan --out` directory lazily with polars
(`analyzer.scan_games` / `scan_events`), derives the grouping columns the tables do not carry
(month, time-control class, rating band, platform, Lichess era, the edition in force), and
writes under the report directory:

  summary_by_edition, summary_by_source, summary_by_month, summary_by_time_control,
  summary_by_rating_band, summary_by_lichess_era   one row per (edition, group): the metrics
  missed_claim_results     edition x missed rule x result of the side that missed
  result_changes           edition x automatic rule x recorded result
  event_counts             edition x rule x kind (events table)
  audit_summary, audit_games   recorded results contradicted by the replay (edition in force)
  headline                 the figures at the top of the page
  index.html               the page: plots as base64 PNG (matplotlib, Agg backend)

Every table is written as `<name>.parquet` and `<name>.csv`. See docs/report.md for what each
figure means, the audit rules and the Lichess eras.
"""
from __future__ import annotations

import base64
import datetime as _dt
import glob
import html
import io
import os

import polars as pl

from analyzer import api, tables

# ----------------------------------------------------------------------------------------------
# Derived columns

# Dated scalachess changes (rules.md 3.1): the era a Lichess game was played in.
LICHESS_ERAS = (
    ("2014-07-19", "1: before 2014-07-19"),             # hash without side to move, 2-byte hashes
    ("2016-01-28", "2: 2014-07-19 to 2016-01-27"),      # side to move hashed; no e.p./castling; castling reset the 50-move count
    ("2016-08-28", "3: 2016-01-28 to 2016-08-27"),      # Zobrist hashing; all hashes compared
    ("2020-01-14", "4: 2016-08-28 to 2020-01-13"),      # same-side hashes only; no fivefold auto-draw
    (None, "5: from 2020-01-14"),                       # fivefold automatic
)
ERA_UNKNOWN = "unknown date"

# FIDE editions in force for over-the-board games, by date (the earliest date the Date tag allows).
FIDE_IN_FORCE = (
    ("2018-01-01", "fide_2018"),
    ("2014-07-01", "fide_2014"),
    ("2009-07-01", "fide_2009"),
    ("1997-07-01", "fide_1997"),
)

TC_CLASSES = ("bullet", "blitz", "rapid", "classical", "correspondence", "unknown")
AUTOMATIC_RULES = ("fivefold", "seventyfive", "fifty", "insufficient_material")
RESULTS = ("win", "draw", "loss")


def _date_expr() -> pl.Expr:
    """ISO date 'YYYY-MM-DD' from UTCDate, else Date; unknown month/day ('??') -> 01 (earliest)."""
    raw = pl.coalesce(pl.col("utc_date"), pl.col("date"))
    y = raw.str.extract(r"^\s*(\d{4})", 1)
    m = raw.str.extract(r"^\s*\d{4}[.\-/](\d{2})", 1)
    d = raw.str.extract(r"^\s*\d{4}[.\-/]\d{2}[.\-/](\d{2})", 1)
    m = pl.when(m.is_in([f"{i:02d}" for i in range(1, 13)])).then(m)
    d = pl.when(d.is_in([f"{i:02d}" for i in range(1, 32)])).then(d)
    iso = pl.concat_str([y, pl.lit("-"), m.fill_null("01"), pl.lit("-"), d.fill_null("01")])
    month = pl.when(m.is_not_null()).then(pl.concat_str([y, pl.lit("-"), m]))
    return iso, month


def _tc_class_expr() -> pl.Expr:
    """bullet/blitz/rapid/classical from the estimated duration base + 40 * increment (seconds)."""
    tc = pl.col("time_control").str.strip_chars()
    base = tc.str.extract(r"^(\d+)(?:\+\d+)?$", 1).cast(pl.Int64, strict=False)
    inc = tc.str.extract(r"^\d+\+(\d+)$", 1).cast(pl.Int64, strict=False).fill_null(0)
    # PGN "moves/seconds[:...]" (e.g. 40/7200:3600): the first period's seconds for 40 moves.
    per = tc.str.extract(r"^\d+/(\d+)", 1).cast(pl.Int64, strict=False)
    est = pl.coalesce(base + 40 * inc, per)
    return (pl.when(tc == "-").then(pl.lit("correspondence"))
            .when(est.is_null()).then(pl.lit("unknown"))
            .when(est < 180).then(pl.lit("bullet"))
            .when(est < 480).then(pl.lit("blitz"))
            .when(est < 1500).then(pl.lit("rapid"))
            .otherwise(pl.lit("classical")))


def _rating_band_expr() -> pl.Expr:
    """Mean Elo of the players (those given, > 0) in 200-point bands, e.g. '1800-1999'."""
    we = pl.when(pl.col("white_elo") > 0).then(pl.col("white_elo"))
    be = pl.when(pl.col("black_elo") > 0).then(pl.col("black_elo"))
    mean = pl.mean_horizontal(we, be)
    lo = (mean // 200 * 200).cast(pl.Int64)
    return (pl.when(lo.is_null()).then(pl.lit("unknown"))
            .otherwise(pl.concat_str([lo.cast(pl.String).str.zfill(4), pl.lit("-"),
                                      (lo + 199).cast(pl.String).str.zfill(4)])))


def _derive(lf: pl.LazyFrame) -> pl.LazyFrame:
    iso, month = _date_expr()
    site = pl.col("site").fill_null("").str.to_lowercase()
    platform = (pl.when(site.str.contains("lichess.org", literal=True)).then(pl.lit("lichess"))
                .when(site.str.contains("chess.com", literal=True)).then(pl.lit("chess.com"))
                .otherwise(pl.lit("otb/other")))
    lf = lf.with_columns(iso.alias("game_date"), month.alias("month"), platform.alias("platform"),
                         _tc_class_expr().alias("tc_class"), _rating_band_expr().alias("rating_band"))
    era = pl.when(pl.col("platform") != "lichess").then(pl.lit(None, pl.String))
    era = era.when(pl.col("game_date").is_null()).then(pl.lit(ERA_UNKNOWN))
    for bound, label in LICHESS_ERAS:
        era = era.when(pl.lit(True) if bound is None else pl.col("game_date") < bound).then(pl.lit(label))
    in_force = pl.when(pl.col("platform") == "lichess").then(pl.lit("lichess"))
    in_force = in_force.when(pl.col("platform") != "otb/other").then(pl.lit(None, pl.String))
    for bound, ed in FIDE_IN_FORCE:
        in_force = in_force.when(pl.col("game_date") >= bound).then(pl.lit(ed))
    return lf.with_columns(era.otherwise(pl.lit(None, pl.String)).alias("lichess_era"),
                           in_force.otherwise(pl.lit(None, pl.String)).alias("edition_in_force"))


# ----------------------------------------------------------------------------------------------
# Reading

def _is_url(path: str) -> bool:
    from analyzer.io import remote

    return remote.is_url(path)


def _title_name(out_dir: str) -> str:
    return out_dir.rstrip("/").rsplit("/", 1)[-1] if _is_url(out_dir) else os.path.basename(os.path.abspath(out_dir))


def _read(scan, out_dir: str, sub: str, schema) -> pl.LazyFrame:
    if _is_url(out_dir) or glob.glob(os.path.join(out_dir, sub, "*", "part-*.parquet")):
        lf = scan(out_dir)
    else:
        lf = pl.from_arrow(schema.empty_table()).lazy()
    return lf.with_columns(pl.col(pl.Categorical).cast(pl.String))


def load_games(out_dir: str) -> pl.LazyFrame:
    """Chess games joined to their verdicts, one row per game and edition (all statuses), with
    the derived grouping columns, lazily."""
    g = _read(api.scan_games, out_dir, "games", tables.GAMES_SCHEMA).filter(pl.col("game_type") == "chess")
    v = _read(api.scan_verdicts, out_dir, "verdicts", tables.VERDICTS_SCHEMA).drop("game_type")
    lf = g.drop("platform", "date").rename({"date_tag": "date"}).join(v, on=["source", "game_index"], how="inner")
    return _derive(lf)


def load_events(out_dir: str) -> pl.LazyFrame:
    lf = _read(api.scan_events, out_dir, "events", tables.EVENTS_SCHEMA)
    return lf.filter(pl.col("game_type") == "chess").with_columns((pl.col("outcome") == "missed").alias("missed"))


# ----------------------------------------------------------------------------------------------
# Metrics

def _metric_aggs() -> list[pl.Expr]:
    opp = pl.col("first_threefold_claim_ply").is_not_null() | pl.col("first_fifty_claim_ply").is_not_null()
    missed = pl.col("first_missed_claim_ply").is_not_null()
    decisive = pl.col("result").is_in(["1-0", "0-1"])
    res = pl.col("missed_claim_result")
    three = pl.col("missed_claim_rule") == "threefold"
    return [
        pl.len().alias("games"),
        opp.sum().alias("games_with_claim_opportunity"),
        missed.sum().alias("games_with_missed_claim"),
        (pl.col("plies_after_missed_claim") >= 2).sum().alias("games_missed_played_on"),
        (missed & three).sum().alias("missed_threefold"),
        (missed & (pl.col("missed_claim_rule") == "fifty")).sum().alias("missed_fifty"),
        (res == "win").sum().alias("missed_then_won"),
        (res == "draw").sum().alias("missed_then_drew"),
        (res == "loss").sum().alias("missed_then_lost"),
        (three & (res == "loss")).sum().alias("missed_threefold_then_lost"),
        (three & res.is_not_null()).sum().alias("missed_threefold_result_known"),
        pl.col("plies_after_missed_claim").median().alias("median_plies_after_missed_claim"),
        pl.col("plies_after_missed_claim").mean().alias("mean_plies_after_missed_claim"),
        pl.col("missed_claim_clock_seconds").count().alias("missed_claims_with_clock"),
        pl.col("missed_claim_clock_seconds").median().alias("median_clock_at_missed_claim_s"),
        pl.col("end_ply").is_not_null().sum().alias("games_with_automatic_end"),
        pl.col("result_changed").fill_null(False).sum().alias("games_result_changed"),
        decisive.sum().alias("decisive_games"),
        (decisive & pl.col("end_ply").is_not_null()).sum().alias("decisive_drawn_by_automatic_rule"),
        (decisive & missed).sum().alias("decisive_with_missed_claim"),
    ]


def _rates(df):
    def ratio(a, b):
        return pl.when(pl.col(b) > 0).then(pl.col(a) / pl.col(b)).otherwise(None)
    return df.with_columns(
        ratio("games_with_claim_opportunity", "games").alias("claim_opportunity_rate"),
        ratio("games_with_missed_claim", "games").alias("missed_claim_rate"),
        ratio("games_with_missed_claim", "games_with_claim_opportunity").alias("missed_share_of_opportunities"),
        ratio("games_missed_played_on", "games").alias("missed_played_on_rate"),
        ratio("missed_then_won", "games_with_missed_claim").alias("missed_won_share"),
        ratio("missed_then_drew", "games_with_missed_claim").alias("missed_drew_share"),
        ratio("missed_then_lost", "games_with_missed_claim").alias("missed_lost_share"),
        ratio("missed_threefold_then_lost", "missed_threefold_result_known").alias("missed_threefold_lost_share"),
        ratio("games_result_changed", "games").alias("result_changed_rate"),
        ratio("decisive_drawn_by_automatic_rule", "decisive_games").alias("decisive_drawn_share"),
    )


def summarize_lazy(games: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """Metrics per (edition, *by) over analyzed games (status ok); sorted."""
    keys = ["edition", *by]
    lf = games.filter(pl.col("status") == "ok").group_by(keys).agg(_metric_aggs())
    return _rates(lf).sort(keys, nulls_last=True)


def summarize(games: pl.LazyFrame, by: list[str]) -> pl.DataFrame:
    return summarize_lazy(games, by).collect()


# ----------------------------------------------------------------------------------------------
# Audit

def audit(games: pl.LazyFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Games whose recorded result/termination contradicts the replay under the edition in force.

    Returns (audit_games, audit_summary). Kinds:
      continued_past_automatic_draw   the game went on after the edition's automatic draw
      decisive_after_automatic_draw   1-0/0-1 recorded although an automatic draw came first
      lichess_agreement_after_claimable_draw  Lichess 1/2-1/2, Termination Normal, final position
                                      has no draw reason but agreement, yet a threefold claim or
                                      an automatic draw was available earlier
    """
    g = games.filter((pl.col("status") == "ok") & pl.col("edition_in_force").is_not_null()
                     & (pl.col("edition") == pl.col("edition_in_force")))
    cols = ["source", "game_index", "platform", "edition_in_force", "lichess_era", "game_date",
            "site", "event", "white", "black", "result", "termination", "plies", "end_ply",
            "end_rule", "first_threefold_claim_ply", "first_fifty_ply", "draw_reason"]
    auto = pl.col("end_ply").is_not_null()
    past = g.filter(auto & (pl.col("plies") > pl.col("end_ply"))).select(
        pl.lit("continued_past_automatic_draw").alias("kind"), *cols)
    decisive = g.filter(auto & pl.col("result").is_in(["1-0", "0-1"])).select(
        pl.lit("decisive_after_automatic_draw").alias("kind"), *cols)
    earlier = (pl.col("first_threefold_claim_ply").is_not_null()
               & (pl.col("first_threefold_claim_ply") < pl.col("plies"))) | (auto & (pl.col("end_ply") < pl.col("plies")))
    agreement = g.filter((pl.col("platform") == "lichess") & (pl.col("result") == "1/2-1/2")
                         & (pl.col("termination") == "Normal") & (pl.col("draw_reason") == "agreement")
                         & earlier).select(pl.lit("lichess_agreement_after_claimable_draw").alias("kind"), *cols)
    found = pl.concat([past, decisive, agreement]).sort("kind", "source", "game_index").collect()
    # Denominators: games audited (edition in force present among the scanned editions).
    ok = games.filter(pl.col("status") == "ok")
    scanned = ok.select(pl.col("edition").unique()).collect()["edition"].to_list()
    per_game = ok.group_by("source", "game_index").agg(
        pl.col("edition_in_force").first(), pl.col("platform").first(), pl.col("lichess_era").first())
    audited = (per_game.with_columns(
        pl.col("edition_in_force").is_in(scanned).fill_null(False).alias("audited"))
        .group_by("platform", "edition_in_force", "lichess_era")
        .agg(pl.len().alias("games"), pl.col("audited").sum().alias("games_audited")))
    counts = (found.lazy().group_by("platform", "edition_in_force", "lichess_era", "kind", "end_rule")
              .agg(pl.len().alias("flagged")))
    summary = (audited.join(counts, on=["platform", "edition_in_force", "lichess_era"], how="left",
                            nulls_equal=True)
               .sort("platform", "edition_in_force", "lichess_era", "kind", "end_rule", nulls_last=True)
               .collect())
    return found, summary


# ----------------------------------------------------------------------------------------------
# Plots

def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                         "axes.grid": True, "grid.alpha": 0.3})
    return plt


PANELS = (
    ("claim_opportunity_rate", "games with a claim opportunity", True),
    ("missed_claim_rate", "games with a missed claim", True),
    ("missed_lost_share", "missed claims: the side that missed lost", True),
    ("median_plies_after_missed_claim", "median plies played after the missed claim", False),
    ("median_clock_at_missed_claim_s", "median clock at the missed claim (s)", False),
    ("result_changed_rate", "games whose result changes", True),
)


def _int_locator():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _no_data(ax, text="no data"):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _month_date(m: str):
    return _dt.date(int(m[:4]), int(m[5:7]), 15)


def _panel_figure(df: pl.DataFrame, dim: str, editions: list[str], title: str, kind: str,
                  order: list[str] | None = None, min_games: int = 1) -> str:
    """2x3 panels of the metrics by `dim`, one series per edition: kind "bar" (categories),
    "line" (ordered categories) or "time" (dim holds 'YYYY-MM' months)."""
    plt = _plt()
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.2))
    fig.suptitle(title, fontsize=11)
    d = df.filter(pl.col("games") >= min_games)
    present = {v for v in d[dim].to_list() if v is not None}
    cats = [c for c in (order if order is not None else sorted(present)) if c in present]
    pos = {c: i for i, c in enumerate(cats)}
    styles = ("-", "--", "-.", ":", (0, (3, 1, 1, 1)))
    for ax, (metric, label, pct) in zip(axes.flat, PANELS):
        ax.set_title(label, fontsize=9)
        if not cats or d[metric].drop_nulls().len() == 0:
            _no_data(ax)
            continue
        width = 0.8 / max(1, len(editions))
        for k, ed in enumerate(editions):
            sub = d.filter(pl.col("edition") == ed)
            pts = [(c, v) for c, v in zip(sub[dim].to_list(), sub[metric].to_list())
                   if c in pos and v is not None]
            pts.sort(key=lambda cv: pos[cv[0]])
            ys = [100 * v if pct else v for _, v in pts]
            if kind == "bar":
                ax.bar([pos[c] + (k - (len(editions) - 1) / 2) * width for c, _ in pts], ys, width, label=ed)
            elif kind == "time":
                ax.plot([_month_date(c) for c, _ in pts], ys, lw=0.9, ls=styles[k % len(styles)],
                        marker=".", ms=2, label=ed)
            else:
                ax.plot([pos[c] for c, _ in pts], ys, marker="o", ms=2.5, lw=1,
                        ls=styles[k % len(styles)], label=ed)
        if kind != "time":
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats, rotation=45, ha="right", fontsize=7)
        else:
            ax.tick_params(axis="x", labelsize=7, rotation=30)
        if pct:
            ax.set_ylabel("%")
    handles, labels = [], []
    for ax in axes.flat:
        h, lab = ax.get_legend_handles_labels()
        if h:
            handles, labels = h, lab
            break
    if handles:
        fig.legend(handles, labels, loc="upper right", ncol=min(len(labels), 6), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return _png(fig)


def _fig_missed_results(mres: pl.DataFrame, editions: list[str]) -> str:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    colors = {"win": "#4c9a2a", "draw": "#9e9e9e", "loss": "#c0392b"}
    for ax, rule in zip(axes, ("threefold", "fifty")):
        ax.set_title(f"result of the side that missed a {rule} claim", fontsize=9)
        sub = mres.filter(pl.col("missed_claim_rule") == rule)
        if sub.height == 0:
            _no_data(ax)
            continue
        bottom = [0.0] * len(editions)
        tot = {ed: sub.filter(pl.col("edition") == ed)["games"].sum() for ed in editions}
        for res in RESULTS:
            vals = []
            for ed in editions:
                n = sub.filter((pl.col("edition") == ed) & (pl.col("missed_claim_result") == res))["games"].sum()
                vals.append(100 * n / tot[ed] if tot[ed] else 0)
            ax.bar(editions, vals, bottom=bottom, color=colors[res], label=res)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for i, ed in enumerate(editions):
            ax.text(i, 101, f"n={tot[ed]}", ha="center", fontsize=7)
        ax.set_ylim(0, 110)
        ax.set_ylabel("% of games with a missed claim")
        ax.tick_params(axis="x", rotation=30)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _png(fig)


def _fig_distributions(games: pl.LazyFrame, editions: list[str]) -> str:
    plt = _plt()
    d = (games.filter((pl.col("status") == "ok") & pl.col("first_missed_claim_ply").is_not_null())
         .select("edition", "plies_after_missed_claim", "missed_claim_clock_seconds").collect())
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    ax = axes[0]
    ax.set_title("plies played after the missed claim (first missed claim per game)", fontsize=9)
    any_data = False
    for ed in editions:
        v = d.filter(pl.col("edition") == ed)["plies_after_missed_claim"].drop_nulls().to_list()
        if v:
            any_data = True
            ax.hist([min(x, 200) for x in v], bins=40, range=(0, 200), histtype="step", label=ed,
                    density=True)
    if any_data:
        ax.set_xlabel("plies (200+ in the last bin)")
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
    else:
        _no_data(ax)
    ax = axes[1]
    ax.set_title("clock of the side that missed, at the missed claim", fontsize=9)
    any_data = False
    for ed in editions:
        v = d.filter(pl.col("edition") == ed)["missed_claim_clock_seconds"].drop_nulls().to_list()
        if v:
            any_data = True
            ax.hist([min(max(x, 0), 600) for x in v], bins=40, range=(0, 600), histtype="step",
                    label=ed, density=True)
    if any_data:
        ax.set_xlabel("seconds left (600+ in the last bin)")
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
    else:
        _no_data(ax, "no %clk data at missed claims")
    fig.tight_layout()
    return _png(fig)


def _fig_changes(changes: pl.DataFrame, by_ed: pl.DataFrame, editions: list[str]) -> str:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    ax = axes[0]
    ax.set_title("games whose result changes, by automatic rule", fontsize=9)
    ch = changes.filter(pl.col("result_changed"))
    if ch.height == 0:
        _no_data(ax, "no result changes")
    else:
        bottom = [0] * len(editions)
        for rule in AUTOMATIC_RULES:
            vals = [int(ch.filter((pl.col("edition") == ed) & (pl.col("end_rule") == rule))["games"].sum())
                    for ed in editions]
            if any(vals):
                ax.bar(editions, vals, bottom=bottom, label=rule)
                bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_ylabel("games")
        ax.yaxis.set_major_locator(_int_locator())
        ax.tick_params(axis="x", rotation=30)
        ax.legend(fontsize=7)
    ax = axes[1]
    ax.set_title("decisive games an automatic rule would have drawn", fontsize=9)
    if by_ed.height == 0 or by_ed["decisive_games"].sum() == 0:
        _no_data(ax)
    else:
        vals = []
        for ed in editions:
            sub = by_ed.filter(pl.col("edition") == ed)
            v = sub["decisive_drawn_share"][0] if sub.height else None
            vals.append(0 if v is None else 100 * v)
        ax.bar(editions, vals, color="#8e44ad")
        for i, v in enumerate(vals):
            ax.text(i, v, f"{v:.3f}%", ha="center", va="bottom", fontsize=7)
        ax.set_ylabel("% of decisive games")
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return _png(fig)


def _fig_audit(audit_sum: pl.DataFrame, era_sum: pl.DataFrame) -> str:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    ax = axes[0]
    ax.set_title("audit: flagged games by kind and edition in force", fontsize=9)
    a = audit_sum.filter(pl.col("kind").is_not_null())
    if a.height == 0:
        _no_data(ax, "no contradictions found")
    else:
        t = (a.group_by("edition_in_force", "kind").agg(pl.col("flagged").sum())
             .sort("edition_in_force", "kind"))
        eds = sorted(set(t["edition_in_force"].to_list()))
        kinds = sorted(set(t["kind"].to_list()))
        bottom = [0] * len(eds)
        for k in kinds:
            vals = [int(t.filter((pl.col("edition_in_force") == e) & (pl.col("kind") == k))["flagged"].sum())
                    for e in eds]
            ax.bar(eds, vals, bottom=bottom, label=k.replace("_", " "))
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_ylabel("games")
        ax.yaxis.set_major_locator(_int_locator())
        ax.legend(fontsize=7)
    ax = axes[1]
    ax.set_title("Lichess games by era (lichess edition): missed-claim rate", fontsize=9)
    if era_sum.height == 0:
        _no_data(ax, "no Lichess games")
    else:
        e = era_sum.filter(pl.col("edition") == "lichess")
        if e.height == 0:
            e = era_sum.filter(pl.col("edition") == era_sum["edition"][0])
        labels = e["lichess_era"].to_list()
        vals = [0 if v is None else 100 * v for v in e["missed_claim_rate"].to_list()]
        ax.bar(range(len(labels)), vals, color="#2980b9")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=7)
        for i, n in enumerate(e["games"].to_list()):
            ax.text(i, vals[i], f"n={n}", ha="center", va="bottom", fontsize=7)
        ax.set_ylabel("% of games")
    fig.tight_layout()
    return _png(fig)


# ----------------------------------------------------------------------------------------------
# HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;
color:#222;line-height:1.4;padding:0 16px}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:2em}
.meta{color:#666;font-size:.9em}
.headline{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:12px;margin:16px 0}
.card{background:#f5f7fa;border:1px solid #e1e5ea;border-radius:6px;padding:10px 12px}
.card .v{font-size:1.7em;font-weight:600;color:#1f4e79}.card .l{font-size:.85em;color:#444}
table{border-collapse:collapse;font-size:.82em;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f0f0f0}
td.t,th.t{text-align:left}td.t{white-space:nowrap}
details{margin:8px 0}.tw{overflow-x:auto;max-width:100%}summary{cursor:pointer;color:#1f4e79}figure{margin:12px 0}figcaption{font-size:.85em;color:#444;max-width:1000px}
img{max-width:100%;height:auto;border:1px solid #eee}
nav a{margin-right:12px}code{background:#f3f3f3;padding:0 3px}
"""

# Writes the number of plots that decoded (naturalWidth > 0) into the page, for headless checks.
_IMG_SCRIPT = """
<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) ok++; });
  var s = document.getElementById('img-status');
  s.setAttribute('data-loaded', ok); s.setAttribute('data-total', imgs.length);
  s.textContent = ok + ' of ' + imgs.length + ' plots rendered';
});
</script>
"""


def _fmt(v, col: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if col.endswith(("_rate", "_share", "share_of_opportunities")):
            return _pct_v(v)
        return f"{v:,.1f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return html.escape(str(v))


def _table_html(df: pl.DataFrame, cols: list[str] | None = None, max_rows: int = 60) -> str:
    if df.height == 0:
        return "<p class='meta'>(no rows)</p>"
    cols = [c for c in (cols or df.columns) if c in df.columns]
    text_cols = {c for c in cols if df.schema[c] == pl.String}
    out = ["<div class='tw'><table><tr>"]
    out += [f"<th class='{'t' if c in text_cols else ''}'>{html.escape(c.replace('_', ' '))}</th>" for c in cols]
    out.append("</tr>")
    for row in df.head(max_rows).select(cols).iter_rows(named=True):
        out.append("<tr>" + "".join(
            f"<td class='{'t' if c in text_cols else ''}'>{_fmt(row[c], c)}</td>" for c in cols) + "</tr>")
    out.append("</table></div>")
    if df.height > max_rows:
        out.append(f"<p class='meta'>{max_rows} of {df.height:,} rows shown; all in the CSV/Parquet file.</p>")
    return "".join(out)


def _details(label: str, df: pl.DataFrame, cols: list[str] | None = None, max_rows: int = 200) -> str:
    return (f"<details><summary>{html.escape(label)} ({df.height:,} rows)</summary>"
            f"{_table_html(df, cols, max_rows=max_rows)}</details>")


def _img(b64: str, alt: str, caption: str) -> str:
    return (f"<figure><img class='plot' alt='{html.escape(alt)}' src='data:image/png;base64,{b64}'>"
            f"<figcaption>{caption}</figcaption></figure>")


def _pct_v(v) -> str:
    if v is None:
        return "–"
    p = 100 * v
    if p == 0 or p >= 0.1:
        return f"{p:.2f}%"
    return f"{p:.3g}%"


def _pct(n, d) -> str:
    return "–" if not d else _pct_v(n / d)


# ----------------------------------------------------------------------------------------------
# Entry point

SUMMARY_COLS = ["games", "claim_opportunity_rate", "missed_claim_rate", "missed_share_of_opportunities",
                "missed_played_on_rate",
                "missed_won_share", "missed_drew_share", "missed_lost_share",
                "median_plies_after_missed_claim", "median_clock_at_missed_claim_s",
                "games_result_changed", "result_changed_rate", "decisive_drawn_share"]


def _write(df: pl.DataFrame, report_dir: str, name: str) -> None:
    df.write_parquet(os.path.join(report_dir, name + ".parquet"))
    df.write_csv(os.path.join(report_dir, name + ".csv"))


def build_tables(out_dir: str) -> dict[str, pl.DataFrame]:
    """All summary tables (also used by the tests to compare with direct computations)."""
    games = load_games(out_dir)
    events = load_events(out_dir)
    ok = games.filter(pl.col("status") == "ok")
    lazy: dict[str, pl.LazyFrame] = {
        "summary_by_edition": summarize_lazy(games, []),
        "summary_by_source": summarize_lazy(games, ["source"]),
        "summary_by_month": summarize_lazy(games, ["month"]),
        "summary_by_time_control": summarize_lazy(games, ["tc_class"]),
        "summary_by_rating_band": summarize_lazy(games, ["rating_band"]),
        "summary_by_lichess_era": summarize_lazy(games.filter(pl.col("platform") == "lichess"),
                                                 ["lichess_era"]),
        "missed_claim_results": (ok.filter(pl.col("first_missed_claim_ply").is_not_null())
                                 .group_by("edition", "missed_claim_rule", "missed_claim_result")
                                 .agg(pl.len().alias("games"))
                                 .sort("edition", "missed_claim_rule", "missed_claim_result", nulls_last=True)),
        "result_changes": (ok.filter(pl.col("end_ply").is_not_null())
                           .group_by("edition", "end_rule", "result", "result_changed")
                           .agg(pl.len().alias("games"))
                           .sort("edition", "end_rule", "result", nulls_last=True)),
        "event_counts": (events.group_by("edition", "rule", "kind")
                         .agg(pl.len().alias("events"), pl.col("missed").sum().alias("missed"),
                              pl.struct("source", "game_index").n_unique().alias("games"))
                         .sort("edition", "rule", "kind")),
    }
    t = dict(zip(lazy, pl.collect_all(list(lazy.values()))))
    t["audit_games"], t["audit_summary"] = audit(games)
    t["headline"] = _headline(t, games)
    return t


def _headline(t: dict[str, pl.DataFrame], games: pl.LazyFrame) -> pl.DataFrame:
    rows = []
    by_ed = t["summary_by_edition"]
    for r in by_ed.iter_rows(named=True):
        ed = r["edition"]
        rows += [
            (ed, "decisive_drawn_share", r["decisive_drawn_share"],
             f"share of decisive games ({r['decisive_games']:,}) that an automatic rule of {ed} would have drawn"),
            (ed, "missed_threefold_lost_share", r["missed_threefold_lost_share"],
             f"share of missed threefold claims ({r['missed_threefold_result_known']:,}) whose missing side then lost"),
            (ed, "claim_opportunity_rate", r["claim_opportunity_rate"],
             f"share of games ({r['games']:,}) with a threefold or 50-move claim opportunity under {ed}"),
            (ed, "missed_claim_rate", r["missed_claim_rate"], "share of games where a claim was available and play went on"),
            (ed, "missed_played_on_rate", r["missed_played_on_rate"],
             "share of games that went on 2 plies or more after the first missed claim"),
            (ed, "result_changed_rate", r["result_changed_rate"],
             f"share of games whose result {ed} changes ({r['games_result_changed']:,} games)"),
        ]
    a = t["audit_games"]
    n_games = games.filter(pl.col("status") == "ok").select(
        pl.struct("source", "game_index").n_unique()).collect().item() if by_ed.height else 0
    for kind in ("continued_past_automatic_draw", "decisive_after_automatic_draw",
                 "lichess_agreement_after_claimable_draw"):
        n = a.filter(pl.col("kind") == kind).height
        rows.append(("in force", "audit_" + kind, float(n),
                     f"games flagged by the audit ({kind.replace('_', ' ')}) of {n_games:,} analyzed games"))
    return pl.DataFrame(rows, schema={"edition": pl.String, "figure": pl.String, "value": pl.Float64,
                                      "description": pl.String}, orient="row")


def write_report(out_dir: str, report_dir: str | None = None) -> str:
    """Write the summary tables and index.html under report_dir (default OUT_DIR/report)."""
    if not _is_url(out_dir) and not os.path.isdir(out_dir):
        raise FileNotFoundError(f"{out_dir}: not a directory")
    report_dir = report_dir or os.path.join(out_dir, "report")
    os.makedirs(report_dir, exist_ok=True)
    t = build_tables(out_dir)
    for name, df in t.items():
        _write(df, report_dir, name)
    games = load_games(out_dir)
    page = _html(out_dir, t, games)
    path = os.path.join(report_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(tmp, path)
    return path


def _html(out_dir: str, t: dict[str, pl.DataFrame], games: pl.LazyFrame) -> str:
    by_ed = t["summary_by_edition"]
    editions = by_ed["edition"].to_list()
    n_rows = by_ed["games"].sum() if by_ed.height else 0
    n_games = games.filter(pl.col("status") == "ok").select(
        pl.struct("source", "game_index").n_unique()).collect().item() if by_ed.height else 0
    n_all = games.select(pl.struct("source", "game_index").n_unique()).collect().item()
    sources = sorted(set(t["summary_by_source"]["source"].to_list())) if by_ed.height else []
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>Draw-rule report: {html.escape(_title_name(out_dir))}</title>"
             f"<style>{_CSS}</style></head><body>"]
    parts.append("<h1>Draw rules: claims, missed claims and counterfactual results</h1>")
    parts.append(f"<p class='meta'>Tables: <code>{html.escape(out_dir if _is_url(out_dir) else os.path.abspath(out_dir))}</code> · "
                 f"sources: {html.escape(', '.join(sources) or 'none')} · editions: "
                 f"{html.escape(', '.join(editions) or 'none')} · {n_games:,} analyzed chess games "
                 f"(status ok) of {n_all:,} · generated {_dt.datetime.now().isoformat(timespec='seconds')} · "
                 f"<span id='img-status' data-loaded='0' data-total='-1'>plots not checked</span></p>")
    parts.append("<nav><a href='#headline'>Headline</a><a href='#edition'>By edition</a>"
                 "<a href='#month'>By month</a><a href='#tc'>By time control</a><a href='#rating'>By rating</a>"
                 "<a href='#changes'>Result changes</a><a href='#audit'>Audit</a><a href='#files'>Files</a></nav>")

    # Headline
    parts.append("<h2 id='headline'>Headline figures</h2>")
    if by_ed.height == 0:
        parts.append("<p>No analyzed chess games in these tables: nothing to report.</p>")
    else:
        eds = by_ed["edition"].to_list()
        fide = [e for e in eds if e != "lichess"]
        primary = "fide_2018" if "fide_2018" in eds else (fide[0] if fide else eds[0])
        picks = [primary] + (["lichess"] if "lichess" in eds and primary != "lichess" else [])
        cards = []
        for ed in picks:
            r = by_ed.filter(pl.col("edition") == ed).row(0, named=True)
            e = html.escape(ed)
            cards.append(f"<div class='card'><div class='v'>{_pct(r['decisive_drawn_by_automatic_rule'], r['decisive_games'])}</div>"
                         f"<div class='l'>of decisive games ({r['decisive_drawn_by_automatic_rule']:,} of "
                         f"{r['decisive_games']:,}) would have been drawn by an automatic rule of <b>{e}</b></div></div>")
            cards.append(f"<div class='card'><div class='v'>{_pct(r['missed_threefold_then_lost'], r['missed_threefold_result_known'])}</div>"
                         f"<div class='l'>of missed threefold claims ({r['missed_threefold_then_lost']:,} of "
                         f"{r['missed_threefold_result_known']:,}, <b>{e}</b>): the side that missed the claim then lost</div></div>")
            cards.append(f"<div class='card'><div class='v'>{_pct(r['games_with_claim_opportunity'], r['games'])}</div>"
                         f"<div class='l'>of games had a threefold or 50-move claim opportunity under <b>{e}</b>; "
                         f"{_pct(r['games_with_missed_claim'], r['games'])} went on after one, "
                         f"{_pct(r['games_missed_played_on'], r['games'])} by 2 plies or more</div></div>")
        a = t["audit_games"]
        for kind, label in (("continued_past_automatic_draw", "games continued past an automatic draw of the edition in force"),
                            ("decisive_after_automatic_draw", "decisive results recorded after an automatic draw of the edition in force"),
                            ("lichess_agreement_after_claimable_draw", "Lichess “Normal” draws by agreement after an earlier claimable or automatic draw")):
            n = a.filter(pl.col("kind") == kind).height
            cards.append(f"<div class='card'><div class='v'>{n:,}</div><div class='l'>{label} (audit)</div></div>")
        parts.append("<div class='headline'>" + "".join(cards) + "</div>")
        parts.append(_table_html(by_ed, ["edition", "decisive_games", "decisive_drawn_by_automatic_rule",
                                         "decisive_drawn_share", "missed_threefold_result_known",
                                         "missed_threefold_then_lost", "missed_threefold_lost_share",
                                         "claim_opportunity_rate", "missed_claim_rate", "missed_played_on_rate",
                                         "games_result_changed"]))

    # By edition
    parts.append("<h2 id='edition'>Per edition</h2>")
    parts.append(_table_html(by_ed, ["edition"] + SUMMARY_COLS))
    if by_ed.height:
        parts.append(_img(_panel_figure(by_ed.with_columns(pl.lit("all").alias("grp")), "grp", editions,
                                        "All games, per edition", "bar", order=["all"]),
                          "metrics per edition",
                          "Each panel compares the editions over all analyzed games. A <i>claim opportunity</i> is a "
                          "ply where the side to move could claim a threefold repetition or the 50-move rule "
                          "(now or with an intended move, where the edition allows it); a claim is <i>missed</i> "
                          "when the game went on. The result of the side that missed is the recorded result seen "
                          "from that side. A result <i>changes</i> when an automatic draw of the edition comes "
                          "before the end of a game not recorded as a draw."))
        parts.append(_img(_fig_missed_results(t["missed_claim_results"], editions), "missed claim results",
                          "Recorded result of the side that missed its first claim opportunity, by the rule of "
                          "that claim (n = games with a missed claim of that rule)."))
        parts.append(_img(_fig_distributions(games, editions), "distributions",
                          "Left: how long the game went on after the first missed claim. Right: the clock "
                          "(%clk) of the side that could have claimed, when it could (only games with clock "
                          "comments)."))
        parts.append(_details("Table: by source", t["summary_by_source"], ["edition", "source"] + SUMMARY_COLS))

    # By month
    parts.append("<h2 id='month'>By month</h2>")
    bm = t["summary_by_month"].filter(pl.col("month").is_not_null())
    if bm.height:
        parts.append(_img(_panel_figure(bm, "month", editions, "By month (UTCDate, else Date; months with ≥ 50 games)",
                                        "time", min_games=50),
                          "metrics by month", "Month of play from the UTCDate tag, else Date; months with "
                          "fewer than 50 games are left out of the plot (all months in summary_by_month)."))
    else:
        parts.append("<p class='meta'>No dated games.</p>")

    # By time control
    parts.append("<h2 id='tc'>By time-control class</h2>")
    tc = t["summary_by_time_control"]
    if tc.height:
        order = [c for c in TC_CLASSES if c in set(tc["tc_class"].to_list())]
        parts.append(_img(_panel_figure(tc, "tc_class", editions, "By time-control class", "bar", order=order),
                          "metrics by time control",
                          "Class from the TimeControl tag: estimated duration base + 40 × increment seconds; "
                          "bullet &lt; 180 s, blitz &lt; 480 s, rapid &lt; 1500 s, classical otherwise; "
                          "“-” = correspondence; missing or unreadable = unknown."))
        parts.append(_details("Table: by time-control class", tc, ["edition", "tc_class"] + SUMMARY_COLS))

    # By rating band
    parts.append("<h2 id='rating'>By rating band</h2>")
    rb = t["summary_by_rating_band"]
    if rb.height:
        parts.append(_img(_panel_figure(rb, "rating_band", editions, "By rating band (mean Elo, 200-point bands; bands with ≥ 20 games)",
                                        "line", min_games=20),
                          "metrics by rating band", "Mean of the two players' Elo (one if only one is given), "
                          "in 200-point bands; “unknown” without Elo."))
        parts.append(_details("Table: by rating band", rb, ["edition", "rating_band"] + SUMMARY_COLS))

    # Result changes
    parts.append("<h2 id='changes'>Games whose result changes under each edition</h2>")
    if by_ed.height:
        parts.append(_img(_fig_changes(t["result_changes"], by_ed, editions), "result changes",
                          "Left: games not recorded as a draw in which the edition's first automatic draw "
                          "(fivefold, 75-move; on Lichess also the 50-move rule at 100 plies and insufficient "
                          "material) comes first, by that rule (<code>result_changed</code>). Right: the same "
                          "as a share of the decisive (1-0/0-1) games."))
        parts.append(_table_html(t["result_changes"]))
    parts.append(_details("Table: events by edition, rule and kind (incl. draw offers)", t["event_counts"]))

    # Audit
    parts.append("<h2 id='audit'>Audit of recorded results</h2>")
    parts.append(
        "<p>Each game is checked under the edition that applied to it: Lichess games (Site on lichess.org) "
        "under <code>lichess</code> (fivefold automatic from 2020-01-14); other games by date under the FIDE "
        "Laws in force (<code>fide_2018</code> from 2018-01-01, <code>fide_2014</code> from 2014-07-01, "
        "<code>fide_2009</code> from 2009-07-01, <code>fide_1997</code> from 1997-07-01; earlier: none). "
        "Only the 2014 and later Laws have automatic draws. A game is audited only if its edition was "
        "scanned. Flags: play continued past an automatic draw; a decisive result recorded after an "
        "automatic draw; a Lichess draw with Termination “Normal” whose final position shows no reason but "
        "agreement although a threefold claim or an automatic draw was available earlier (Lichess repetition "
        "detection differed by era).</p>")
    aud = t["audit_games"]
    era_sum = t["summary_by_lichess_era"]
    parts.append(_img(_fig_audit(t["audit_summary"], era_sum), "audit",
                      "Left: flagged games by kind and edition in force. Right: Lichess games by era of the "
                      "dated scalachess changes (rules.md 3.1), missed-claim rate under the lichess edition."))
    parts.append("<h3>Audit counts</h3>" + _table_html(t["audit_summary"]))
    parts.append("<h3>Flagged games</h3>" + _table_html(
        aud, ["kind", "source", "game_index", "edition_in_force", "lichess_era", "game_date", "site",
              "result", "end_rule", "end_ply", "plies", "first_threefold_claim_ply"],
        max_rows=40))
    parts.append("<h3>Lichess eras</h3>" + _table_html(
        era_sum, ["edition", "lichess_era", "games", "claim_opportunity_rate", "missed_claim_rate",
                  "missed_played_on_rate", "missed_lost_share", "median_clock_at_missed_claim_s",
                  "games_result_changed"]))

    # Files
    parts.append("<h2 id='files'>Files</h2><ul>")
    for name in t:
        parts.append(f"<li><a href='{name}.csv'>{name}.csv</a> · <a href='{name}.parquet'>{name}.parquet</a> "
                     f"({t[name].height:,} rows)</li>")
    parts.append("</ul><p class='meta'>Rates are over games with status ok; one row per game and edition "
                 f"({n_rows:,} rows). See docs/report.md.</p>")
    parts.append(_IMG_SCRIPT + "</body></html>")
    return "".join(parts)
