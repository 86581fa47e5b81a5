"""What the position was worth when a rule fired (issue 37): the report's aggregates of the
tablebase and evaluation columns, per chunk (collect.py adds them up) and the tables made of
them (model.py). Every count is of games with status ok, one per game and edition:

  move_draws        games that ended on a 50- or 75-move draw (the event claimed, or automatic),
                    by the tablebase value of that position: a win (for either side), a cursed
                    win, a draw, no value; and whether the win was in time
  first_chance      games whose first 50-move chance (board or written move) has a tablebase
                    value, by that value and by what became of the winning side (won, drew, lost):
                    "wins given away after a claim was available"
  endings_1988      games with a 50/75-move event in one of the six endings of the 1988 clause,
                    per ending and edition: a 50-move chance, claimed, missed, automatic, a win in
                    time at the end
  win_chance        each game's first claim chance on the board per rule that has an evaluation,
                    by the claimant's win chance (bins of 20 %), and whether it was missed

docs/measures.md defines the columns; docs/report.md the tables.
"""

from __future__ import annotations

import polars as pl

from analyzer.report import stats

ENDINGS_1988 = ("KBBvKN", "KBBvKQ", "KNNvKP", "KNNvKQ", "KQPvKQ", "KRBvKR")
MOVE_RULES = ("fifty", "seventyfive")
WIN_CHANCE_BINS = ((0, 20), (20, 40), (40, 60), (60, 80), (80, 101))
BIN_LABELS = tuple(f"{lo}-{min(hi, 100)} %" for lo, hi in WIN_CHANCE_BINS)
UNKNOWN = "unknown"

EVENT_COLS = [
    "edition",
    "game_index",
    "ply",
    "rule",
    "kind",
    "side",
    "outcome",
    "halfmove_clock",
    "material",
    "limit_plies",
    "tb_wdl",
    "tb_dtz",
    "win_in_time",
    "win_chance",
]
SUM_BY = {
    "move_draws": ["game_type", "platform", "edition", "rule", "tb", "in_time"],
    "first_chance": ["game_type", "platform", "edition", "tb", "winner_result", "in_time"],
    "endings_1988": ["game_type", "platform", "edition", "ending"],
    "win_chance": ["game_type", "platform", "edition", "time_control_class", "rule", "bin"],
}


def _tb_class(wdl: pl.Expr) -> pl.Expr:
    a = wdl.abs()
    return (
        pl.when(wdl.is_null())
        .then(pl.lit("no value"))
        .when(a == 2)
        .then(pl.lit("win"))
        .when(a == 1)
        .then(pl.lit("cursed win"))
        .otherwise(pl.lit("draw"))
    )


def queries(gs: pl.LazyFrame, ge: pl.LazyFrame, ev: pl.LazyFrame) -> dict[str, pl.LazyFrame]:
    """The chunk's aggregates. gs: its games with status ok (platform, time_control_class,
    result); ge: games joined to their verdicts (final_win_in_time); ev: its events (EVENT_COLS)."""
    keys = gs.select("game_index", "game_type", "platform", "time_control_class", "result")
    moves = ev.filter(pl.col("rule").is_in(MOVE_RULES)).join(keys, on="game_index", how="inner")
    q: dict[str, pl.LazyFrame] = {}
    ended = (
        moves.filter(pl.col("outcome").is_in(["claimed", "automatic"]))
        .sort("ply")
        .group_by("edition", "game_index")
        .first()
    )
    q["move_draws"] = (
        ended.with_columns(_tb_class(pl.col("tb_wdl")).alias("tb"), pl.col("win_in_time").alias("in_time"))
        .group_by(SUM_BY["move_draws"])
        .agg(pl.len().alias("games"))
    )
    first = moves.filter(pl.col("rule") == "fifty").sort("ply").group_by("edition", "game_index").first()
    winner_white = (pl.col("side") == "white") == (pl.col("tb_wdl") > 0)
    won = pl.when(winner_white).then(pl.lit("1-0")).otherwise(pl.lit("0-1"))
    q["first_chance"] = (
        first.filter(pl.col("tb_wdl").is_not_null())
        .with_columns(
            _tb_class(pl.col("tb_wdl")).alias("tb"),
            pl.col("win_in_time").alias("in_time"),
            pl.when(pl.col("tb_wdl") == 0)
            .then(pl.lit("no winner"))
            .when(pl.col("result") == won)
            .then(pl.lit("won"))
            .when(pl.col("result") == "1/2-1/2")
            .then(pl.lit("drew"))
            .when(pl.col("result").is_in(["1-0", "0-1"]))
            .then(pl.lit("lost"))
            .otherwise(pl.lit(UNKNOWN))
            .alias("winner_result"),
        )
        .group_by(SUM_BY["first_chance"])
        .agg(pl.len().alias("games"))
    )
    in_ending = (
        moves.filter(pl.col("material").is_in(ENDINGS_1988))
        .group_by("game_index")
        .agg(pl.col("material").first().alias("ending"))
    )
    per = (
        moves.join(in_ending, on="game_index", how="inner")
        .group_by("edition", "game_index")
        .agg(
            pl.col("ending").first(),
            ((pl.col("rule") == "fifty") & pl.col("kind").is_in(["claim_now", "claim_intended"])).any().alias("chance"),
            ((pl.col("rule") == "fifty") & (pl.col("outcome") == "claimed")).any().alias("claimed"),
            ((pl.col("rule") == "fifty") & (pl.col("outcome") == "missed")).any().alias("missed"),
            (pl.col("outcome") == "automatic").any().alias("automatic"),
            pl.col("tb_wdl").is_not_null().any().alias("tb_value"),
        )
    )
    games_in = in_ending.join(keys, on="game_index", how="inner")
    eds = ge.select("edition", "game_index", "final_win_in_time")
    q["endings_1988"] = (
        games_in.join(eds, on="game_index", how="inner")
        .join(per.drop("ending"), on=["edition", "game_index"], how="left")
        .group_by(SUM_BY["endings_1988"])
        .agg(
            pl.len().alias("games"),
            pl.col("chance").fill_null(False).sum().alias("fifty_chance"),
            pl.col("claimed").fill_null(False).sum().alias("fifty_claimed"),
            pl.col("missed").fill_null(False).sum().alias("fifty_missed"),
            pl.col("automatic").fill_null(False).sum().alias("automatic_draw"),
            (pl.col("result") == "1/2-1/2").sum().alias("drawn"),
            pl.col("result").is_in(["1-0", "0-1"]).sum().alias("decisive"),
            pl.col("final_win_in_time").is_not_null().sum().alias("final_tb_winner"),
            pl.col("final_win_in_time").fill_null(False).sum().alias("final_win_in_time"),
        )
    )
    board = (
        ev.filter(pl.col("kind") == "claim_now")
        .filter(pl.col("win_chance").is_not_null())
        .sort("ply")
        .group_by("edition", "game_index", "rule")
        .first()
        .join(keys, on="game_index", how="inner")
    )
    binned = pl.lit(None, pl.String)
    for (lo, hi), label in zip(WIN_CHANCE_BINS, BIN_LABELS):
        binned = (
            pl.when((pl.col("win_chance") >= lo) & (pl.col("win_chance") < hi)).then(pl.lit(label)).otherwise(binned)
        )
    q["win_chance"] = (
        board.with_columns(binned.alias("bin"))
        .group_by(SUM_BY["win_chance"])
        .agg(pl.len().alias("chances"), (pl.col("outcome") == "missed").sum().alias("missed"))
    )
    return q


def _rates(df: pl.DataFrame, k: str, n: str, prefix: str) -> pl.DataFrame:
    return df.with_columns(stats.wilson_exprs(k, n, prefix))


def tables(collected: dict) -> dict[str, pl.DataFrame]:
    """The report's tables of position values (empty frames when the scan had none)."""
    out: dict[str, pl.DataFrame] = {}
    md = collected.get("move_draws")
    if md is not None and md.height:
        t = md.group_by("game_type", "platform", "edition", "rule").agg(
            pl.col("games").sum().alias("move_draws"),
            pl.col("games").filter(pl.col("tb") != "no value").sum().alias("with_tb_value"),
            pl.col("games").filter(pl.col("tb").is_in(["win", "cursed win"])).sum().alias("tb_win"),
            pl.col("games").filter(pl.col("tb") == "win").sum().alias("tb_win_not_cursed"),
            pl.col("games").filter(pl.col("tb") == "cursed win").sum().alias("tb_cursed_win"),
            pl.col("games").filter(pl.col("in_time").fill_null(False)).sum().alias("win_in_time"),
        )
        t = _rates(t, "tb_win", "with_tb_value", "tb_win")
        t = _rates(t, "tb_cursed_win", "with_tb_value", "tb_cursed_win")
        out["value_move_draws"] = t.sort("game_type", "platform", "edition", "rule")
    fc = collected.get("first_chance")
    if fc is not None and fc.height:
        wins = fc.filter(pl.col("tb").is_in(["win", "cursed win"]))
        t = wins.group_by("game_type", "platform", "edition", "tb").agg(
            pl.col("games").sum().alias("tb_win_at_first_chance"),
            pl.col("games").filter(pl.col("winner_result") != "won").sum().alias("given_away"),
            pl.col("games").filter(pl.col("winner_result") == "drew").sum().alias("given_away_drawn"),
            pl.col("games").filter(pl.col("winner_result") == "lost").sum().alias("given_away_lost"),
            pl.col("games").filter(pl.col("in_time").fill_null(False)).sum().alias("win_in_time"),
        )
        t = _rates(t, "given_away", "tb_win_at_first_chance", "given_away")
        out["value_first_chance"] = t.sort("game_type", "platform", "edition", "tb")
    e8 = collected.get("endings_1988")
    if e8 is not None and e8.height:
        t = _rates(e8, "fifty_claimed", "games", "fifty_claimed")
        t = _rates(t, "final_win_in_time", "final_tb_winner", "final_win_in_time")
        out["endings_1988"] = t.sort("game_type", "platform", "ending", "edition")
    wc = collected.get("win_chance")
    if wc is not None and wc.height:
        by = ["game_type", "platform", "edition", "bin"]
        every = (
            wc.group_by(by)
            .agg(pl.col("chances", "missed").sum())
            .with_columns(pl.lit("all").alias("time_control_class"))
        )
        per = wc.group_by([*by, "time_control_class"]).agg(pl.col("chances", "missed").sum())
        t = pl.concat([every.select(per.columns), per], how="vertical_relaxed")
        t = _rates(t, "missed", "chances", "missed")
        order = {b: i for i, b in enumerate(BIN_LABELS)}
        out["missed_by_win_chance"] = (
            t.with_columns(pl.col("bin").replace_strict(order, default=99, return_dtype=pl.Int32).alias("_b"))
            .sort("game_type", "platform", "edition", "time_control_class", "_b")
            .drop("_b")
        )
    return out
