"""From the collected aggregates (collect.py) to the report's tables: summary_cube (cube.py) and
the summaries rolled up from it, the period series and the time-control mix (periods.py), the
edition classes (editions whose verdicts agree game by game on a measure are one series) and
their looks (styles.py), the edition-pair matrix, the draughts rules and the audit (audit.py).
Everything here works on small frames of counts."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from analyzer import kinds
from analyzer.report import audit, cube as cube_, periods, stats, values
from analyzer.report.collect import GAME_TYPES, PLATFORMS, Collected, collect
from analyzer.report.styles import Styles


@dataclass(frozen=True)
class Measure:
    name: str
    k: str  # numerator count column
    n: str  # denominator count column
    label: str  # what the rate is, for captions and tables
    short: str  # panel title
    signature: str  # collect.SIGNATURES key: the verdict columns it depends on
    needs: str | None  # None, "intended" (written-move claims), "automatic", "fifty_claim"
    of: str = "games"  # what the denominator counts, in words: every rate says it

    @property
    def unit(self) -> str:
        return f"% of {self.of}"


MEASURES = (
    Measure(
        "missed_threefold",
        "missed_threefold",
        "board_chance_threefold",
        "games with a threefold claim on the board that was played past (missed), of the games that had one",
        "threefold missed: % of games with a threefold claim on the board",
        "missed_threefold",
        None,
        "games with a threefold claim on the board",
    ),
    Measure(
        "missed_fifty",
        "missed_fifty",
        "board_chance_fifty",
        "games with a 50-move claim on the board that was played past (missed), of the games that had one",
        "50 moves missed: % of games with a 50-move claim on the board",
        "missed_fifty",
        "fifty_claim",
        "games with a 50-move claim on the board",
    ),
    Measure(
        "missed",
        "missed",
        "games",
        "games in which a claim on the board was played past (missed), of all games",
        "missed: a claim on the board played past (% of all games)",
        "missed",
        None,
    ),
    Measure(
        "lost_after_missed",
        "missed_lost",
        "missed_result_known",
        "games with a missed claim that the side that missed then lost",
        "the side that missed then lost (% of games with a missed claim)",
        "missed",
        None,
        "games with a missed claim (result known)",
    ),
    Measure(
        "avoided",
        "avoided",
        "games",
        "games in which a written-move claim was avoided, of all games",
        "avoided: a written-move claim steered away from (% of all games)",
        "avoided",
        "intended",
    ),
    Measure(
        "claimed",
        "claimed",
        "games",
        "games that ended on a claim, of all games",
        "claimed: the game ended on a claim (% of all games)",
        "claimed",
        None,
    ),
    Measure(
        "automatic_draw",
        "result_changed",
        "decisive",
        "decisive games an automatic rule would have drawn first",
        "decisive games an automatic draw would have ended first (% of decisive games)",
        "automatic",
        "automatic",
        "decisive games",
    ),
)
# The measures of "missed among the games that had the chance", by rule (the report's first question).
RULE_MEASURES = ("missed_threefold", "missed_fifty")
MEASURE = {m.name: m for m in MEASURES}
TREND_MEASURES = ("missed", "avoided", "claimed")
LICHESS_FIVEFOLD = _dt.date(2020, 1, 14)

CHESS_RULES = (
    "threefold",
    "fifty",
    "fivefold",
    "seventyfive",
    "insufficient_material",
    "dead_position",
    "timeout_vs_unwinnable",
)
DRAUGHTS_RULES = ("threefold", "balance", "kings_vs_king", "main_diagonal", "small_ending", "king_moves")
RULE_LABELS = {
    "threefold": "threefold repetition (32.2)",
    "balance": "balance of forces unchanged (32.1)",
    "kings_vs_king": "3+ kings vs a lone king (32.1)",
    "main_diagonal": "3 kings vs a king on the main diagonal (32.1)",
    "small_ending": "2 kings, or king + man, vs one piece (32.1)",
    "king_moves": "king moves only (FMJD 7.2.5)",
}
# The columns that name an edition class (a series of editions with one verdict on a measure),
# in every table of classes or of their rates.
CLASS_SCHEMA = {
    "game_type": pl.String,
    "platform": pl.String,
    "measure": pl.String,
    "series": pl.String,
    "editions": pl.String,
}
# The columns of a rate and its Wilson interval (stats.wilson), in the tables and figure data
# that give one.
RATE_SCHEMA = {
    "applicable": pl.Boolean,
    "k": pl.Int64,
    "n": pl.Int64,
    "rate": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
}
PLATFORM_LABELS = {"lichess": "Lichess", "chess.com": "Chess.com", "otb": "over the board", "other": "other"}
GAME_TYPE_LABELS = {"chess": "chess", "russian_draughts": "Russian draughts"}


def platform_label(p: str | None) -> str:
    if not p:
        return "unknown"
    return PLATFORM_LABELS.get(p, p)


def edition_features(ed: str) -> dict[str, bool | None]:
    """Which measures an edition can have: written-move claims, automatic draws (None if the
    edition is not a built-in one: unknown)."""
    try:
        (e,) = kinds.resolve_editions([ed])
    except Exception:  # noqa: BLE001 - a custom edition the report cannot resolve
        return {"intended": None, "automatic": None, "fifty_claim": None}
    if hasattr(e, "claim_intended_move"):
        auto = bool(e.automatic_repetitions or e.automatic_moves or e.fifty_is_automatic or e.insufficient_is_automatic)
        fifty = bool(e.claim_moves) and not e.fifty_is_automatic
        return {"intended": bool(e.claim_intended_move), "automatic": auto, "fifty_claim": fifty}
    # draughts: no 50-move rule (its counterpart, the balance of forces, is in the rules table)
    return {"intended": bool(getattr(e, "threefold_intended", True)), "automatic": True, "fifty_claim": False}


def applies(ed: str, m: Measure) -> bool:
    return m.needs is None or edition_features(ed).get(m.needs) is not False


def rule_applies(ed: str, rule: str) -> bool:
    """Whether a draughts rule exists under an edition (an unresolvable custom edition: shown)."""
    try:
        (e,) = kinds.resolve_editions([ed])
    except Exception:  # noqa: BLE001 - a custom edition the report cannot resolve: the rule is shown
        return True
    if rule == "king_moves":
        return bool(getattr(e, "king_moves", 0))
    return True


@dataclass
class EdClass:
    editions: list[str]

    @property
    def key(self) -> str:
        return self.editions[0]

    @property
    def label(self) -> str:
        return " = ".join(self.editions)


@dataclass
class Report:
    collected: Collected
    # every table build() makes; None: "edition_pairs" when no edition pairs were collected
    tables: dict[str, pl.DataFrame | None] = field(default_factory=dict)
    classes: dict[tuple[str, str], list[EdClass]] = field(default_factory=dict)  # (game_type, measure)
    pop_classes: dict[tuple[str, str, str], list[EdClass]] = field(
        default_factory=dict
    )  # (game_type, platform, measure)
    populations: list[tuple[str, str]] = field(default_factory=list)  # (game_type, platform) with games
    styles: Styles = field(default_factory=lambda: Styles({}, []))  # one look per series, report-wide
    # a report of an unfinished run (--partial): per unfinished source, games so far and expected
    partial: list[dict] = field(default_factory=list)
    # the known data issues (io.lichess_db ids) whose games were left out (--exclude-data-issues)
    excluded_issues: tuple[str, ...] = ()

    @property
    def editions(self) -> dict[str, list[str]]:
        return self.collected.editions

    def table(self, name: str) -> pl.DataFrame:
        """One of the tables build() always makes (all but "edition_pairs")."""
        df = self.tables[name]
        if df is None:
            raise KeyError(f"report table {name!r} was not built")
        return df


def _order_key(col: str, values: Sequence) -> dict:
    return {v: i for i, v in enumerate(values)}


def _sort_pop(df: pl.DataFrame) -> pl.DataFrame:
    """Game types and platforms in their fixed order (chess first; Lichess, Chess.com, OTB, other)."""
    keys = []
    if "game_type" in df.columns:
        keys.append(
            pl.col("game_type")
            .replace_strict(_order_key("", GAME_TYPES), default=99, return_dtype=pl.Int32)
            .alias("_g")
        )
    if "platform" in df.columns:
        keys.append(
            pl.col("platform").replace_strict(_order_key("", PLATFORMS), default=99, return_dtype=pl.Int32).alias("_p")
        )
    if not keys or df.height == 0:
        return df
    names = [k.meta.output_name() for k in keys]
    return df.with_columns(keys).sort(names, maintain_order=True).drop(names)


def edition_classes(
    pairs: pl.DataFrame | None, editions: list[str], game_type: str, m: Measure, platform: str | None = None
) -> list[EdClass]:
    """Editions whose verdicts agree on every game (of the platform, if given) for measure m, and
    that can both have it."""
    parent = {e: e for e in editions}

    def find(e):
        while parent[e] != e:
            e = parent[e]
        return e

    if pairs is not None and pairs.height:
        s = pairs.filter(pl.col("game_type") == game_type)
        if platform is not None:
            s = s.filter(pl.col("platform") == platform)
        s = s.group_by("edition_a", "edition_b").agg(
            pl.col("games_compared").sum(), pl.col(f"differ_{m.signature}").sum().alias("d")
        )
        for a, b, n, d in s.iter_rows():
            if a in parent and b in parent and n > 0 and d == 0 and applies(a, m) == applies(b, m):
                ra, rb = find(a), find(b)
                if ra != rb:
                    parent[max(ra, rb, key=editions.index)] = min(ra, rb, key=editions.index)
    groups: dict[str, list[str]] = {}
    for e in editions:
        groups.setdefault(find(e), []).append(e)
    return [EdClass(g) for g in groups.values()]


def _rules(c: Collected) -> pl.DataFrame:
    """Per population, edition and rule: games where the rule's condition arose, where it was
    the first automatic draw, and games with a claimed / missed / avoided chance of that rule."""
    rr, ro = c.tables.get("rules_reached"), c.tables.get("rule_outcomes")
    if rr is None or rr.height == 0:
        return pl.DataFrame(
            schema={
                "game_type": pl.String,
                "platform": pl.String,
                "edition": pl.String,
                "rule": pl.String,
                "games": pl.Int64,
            }
        )
    rows = []
    for r in rr.iter_rows(named=True):
        rules = CHESS_RULES if r["game_type"] == "chess" else DRAUGHTS_RULES
        for rule in rules:
            rows.append(
                {
                    "game_type": r["game_type"],
                    "platform": r["platform"],
                    "edition": r["edition"],
                    "rule": rule,
                    "games": r["games"],
                    "reached": r.get(f"reached_{rule}"),
                    "ended": r.get(f"ended_{rule}", 0),
                }
            )
    # rules without a first-ply column (king_moves, insufficient_material): their automatic events
    df = pl.DataFrame(rows, schema_overrides={"reached": pl.Int64, "ended": pl.Int64, "games": pl.Int64})
    if ro is not None and ro.height:
        per = ro.filter(pl.col("outcome").is_not_null()).pivot(
            on="outcome", index=["game_type", "platform", "edition", "rule"], values="games", aggregate_function="sum"
        )
        for o in ("claimed", "missed", "avoided", "passed_on", "automatic", "ended"):
            if o not in per.columns:
                per = per.with_columns(pl.lit(0, pl.UInt32).alias(o))
        per = per.select(
            "game_type",
            "platform",
            "edition",
            "rule",
            *[
                pl.col(o).fill_null(0).cast(pl.Int64).alias(f"games_{o}")
                for o in ("claimed", "missed", "avoided", "passed_on", "automatic")
            ],
        )
        df = df.join(per, on=["game_type", "platform", "edition", "rule"], how="left").with_columns(
            pl.col("^games_.*$").fill_null(0)
        )
    else:
        df = df.with_columns(
            *[
                pl.lit(0, pl.Int64).alias(f"games_{o}")
                for o in ("claimed", "missed", "avoided", "passed_on", "automatic")
            ]
        )
    df = df.with_columns(
        pl.when(pl.col("reached").is_null())
        .then(pl.col("games_automatic"))
        .otherwise(pl.col("reached"))
        .alias("reached")
    )
    df = df.with_columns(
        *stats.wilson_exprs("reached", "games", "reached"), *stats.wilson_exprs("ended", "games", "ended")
    )
    return _sort_pop(df.sort("game_type", "platform", "edition", "rule"))


def _audit(c: Collected, editions: dict[str, list[str]]) -> pl.DataFrame:
    """Per platform: games, games audited under the edition in force, games with a
    contradiction, with a lead, and with each kind (Wilson intervals over the audited games),
    and why the others were not audited."""
    ac = c.tables.get("audit_counts")
    if ac is None or ac.height == 0:
        return pl.DataFrame(schema={"platform": pl.String, "games": pl.Int64, "games_audited": pl.Int64})
    scanned = set(editions.get("chess", []))
    rows = []
    counted = (audit.CONTRADICTION, audit.LEAD, *audit.NAMES)
    for plat, grp in ac.group_by("platform", maintain_order=True):
        plat = plat[0]
        games = int(grp["games"].sum())
        audited = int(grp["games_audited"].fill_null(0).sum())
        reasons = []
        for r in grp.iter_rows(named=True):
            left = r["games"] - (r["games_audited"] or 0)
            if left <= 0:
                continue
            if r["in_force"] is None:
                why = (
                    "no full date, or played before the 1997 Laws"
                    if plat == "otb"
                    else "no edition models this platform's rules"
                )
            elif r["in_force"] not in scanned:
                why = f"{r['in_force']} (in force) not scanned"
            else:
                why = "not audited"
            reasons.append(f"{left:,}: {why}")
        row = {
            "platform": plat,
            "games": games,
            "games_audited": audited,
            "not_audited": games - audited,
            "why_not_audited": "; ".join(reasons) or None,
        }
        for k in counted:
            row[k] = int(grp[k].fill_null(0).sum()) if audited and k in grp.columns else None
        rows.append(row)
    df = pl.DataFrame(rows, schema_overrides=dict.fromkeys(counted, pl.Int64))
    for k in counted:
        df = df.with_columns(stats.wilson_exprs(k, "games_audited", k))
    return _sort_pop(df)


def _pairs_matrix(pairs: pl.DataFrame | None) -> pl.DataFrame | None:
    if pairs is None:
        return None
    keys = ["game_type", "edition_a", "edition_b"]
    nums = [c for c in pairs.columns if c.startswith(("games_", "differ_"))]
    lists = ("examples", "example_games")
    allp = pairs.group_by(keys, maintain_order=True).agg(
        *[pl.col(c).sum() for c in nums],
        *[pl.col(c).list.explode(keep_nulls=False, empty_as_null=False).head(3) for c in lists],
    )
    allp = allp.with_columns(pl.lit("all platforms").alias("platform"))
    out = pl.concat([pairs, allp.select(pairs.columns)], how="vertical_relaxed")
    return out.with_columns(pl.col(c).list.join(" ") for c in lists)


IN_FORCE = "in force"  # the `edition` of the rows read under the edition in force for each game
ALL_CLASSES = "all"


def in_force_rows(cube: pl.DataFrame) -> pl.DataFrame:
    """The cube's rows under the edition in force for their games (audit.in_force: lichess for
    Lichess games, for over-the-board games the FIDE Laws of their month), their edition kept;
    games of platforms no edition models, of unknown date, or whose edition was not scanned
    have none."""
    if cube.height == 0:
        return cube
    ed = cube.with_columns(pl.col("month").alias("date")).select(audit.in_force())
    return cube.filter(pl.col("edition") == ed.to_series())


def missed_by_rule(cube: pl.DataFrame) -> pl.DataFrame:
    """Per game kind, platform, reading (each edition, and IN_FORCE), time-control class (ALL
    and each) and claim rule: games, games with a chance of the rule on the board, games that
    played on past it; missed as a share of the games with the chance and of all games, with
    95 % Wilson intervals. `editions`: the editions read (for IN_FORCE, those in force for some
    of its games); `games_of_population`: the population's games, of which an IN_FORCE row
    covers `games`; `applicable`: the edition has that claim (lichess: no 50-move claim)."""
    from analyzer.report.collect import CLAIM_RULES

    cols = ["games", *[f"{w}_{r}" for r in CLAIM_RULES for w in ("board_chance", "missed")]]
    keys = ["game_type", "platform", "edition", "time_control_class"]
    per_ed = cube.with_columns(pl.col("edition").alias("editions"))
    forced = in_force_rows(cube).with_columns(pl.col("edition").alias("editions"), pl.lit(IN_FORCE).alias("edition"))
    both = pl.concat([per_ed, forced], how="vertical_relaxed")
    agg = [pl.col(cols).sum().cast(pl.Int64), pl.col("editions").unique().sort().str.join(",")]
    by_class = both.group_by(keys).agg(agg)
    overall = both.group_by(keys[:-1]).agg(agg).with_columns(pl.lit(ALL_CLASSES).alias("time_control_class"))
    df = pl.concat([overall.select(by_class.columns), by_class])
    first = cube.group_by("game_type").agg(pl.col("edition").first())
    pop = (
        cube.join(first, on=["game_type", "edition"], how="semi")
        .group_by("game_type", "platform")
        .agg(pl.col("games").sum().cast(pl.Int64).alias("games_of_population"))
    )
    df = df.join(pop, on=["game_type", "platform"], how="left")
    frames = []
    for r in CLAIM_RULES:
        frames.append(
            df.select(
                *keys,
                "editions",
                pl.lit(r).alias("rule"),
                "games_of_population",
                "games",
                pl.col(f"board_chance_{r}").alias("games_with_chance"),
                pl.col(f"missed_{r}").alias("missed"),
            )
        )
    out = pl.concat(frames)
    if r"fifty" in CLAIM_RULES:
        fifty_ok = {
            e: edition_features(e).get("fifty_claim") is not False
            for e in set(",".join(out["editions"].to_list()).split(","))
            if e
        }
        out = out.with_columns(
            pl.when(pl.col("rule") == "fifty")
            .then(
                pl.col("editions").map_elements(
                    lambda s: any(fifty_ok.get(e, True) for e in s.split(",")), return_dtype=pl.Boolean
                )
            )
            .otherwise(pl.lit(True))
            .alias("applicable")
        )
    out = out.filter((pl.col("game_type") == "chess") | (pl.col("rule") == "threefold"))
    rates = [
        *stats.wilson_exprs("missed", "games_with_chance", "missed_of_chance"),
        *stats.wilson_exprs("missed", "games", "missed_of_games"),
    ]
    out = out.with_columns(pl.when(pl.col("applicable")).then(e).alias(e.meta.output_name()) for e in rates)
    cls_order = {c: i for i, c in enumerate((ALL_CLASSES, *periods.TC_CLASSES))}
    out = out.with_columns(
        pl.col("time_control_class").replace_strict(cls_order, default=99, return_dtype=pl.Int32).alias("_c"),
        (pl.col("edition") != IN_FORCE).alias("_e"),
        pl.col("rule").replace_strict({r: i for i, r in enumerate(CLAIM_RULES)}, return_dtype=pl.Int32).alias("_r"),
    )
    out = out.sort("game_type", "platform", "_e", "edition", "_r", "_c").drop("_c", "_e", "_r")
    return _sort_pop(out)


# Dead positions and flag fall (chess): count columns of the cube, and each rate's numerator and
# denominator (every rate says what it is a share of).
UNWINNABLE_COUNTS = (
    "games",
    "lost_on_time",
    "timeout_unwinnable",
    "timeout_unknown",
    "dead_position",
    "played_on_after_dead",
)
UNWINNABLE_RATES = (
    ("timeout_unwinnable", "lost_on_time", "timeout_unwinnable_of_lost_on_time"),
    ("timeout_unknown", "lost_on_time", "timeout_unknown_of_lost_on_time"),
    ("dead_position", "games", "dead_position_of_games"),
    ("played_on_after_dead", "dead_position", "played_on_of_dead"),
)


def unwinnable_by_time_control(cube: pl.DataFrame) -> pl.DataFrame:
    """Per chess population, edition and time-control class (`all` and each): games; games lost
    on time whose final position was checked (`lost_on_time`) and of them those whose winner
    could not mate by the edition's test (FIDE 6.9 or Lichess's insufficient material:
    `timeout_unwinnable`) or whose answer is unknown; games with a dead position and of them
    those played on after it; the rates with their 95 % Wilson intervals, named
    `<numerator>_of_<denominator>`."""
    keys = ["game_type", "platform", "edition", "time_control_class"]
    chess = cube.filter(pl.col("game_type") == "chess")
    agg = [pl.col(list(UNWINNABLE_COUNTS)).sum().cast(pl.Int64)]
    by_class = chess.group_by(keys).agg(agg)
    overall = chess.group_by(keys[:-1]).agg(agg).with_columns(pl.lit(ALL_CLASSES).alias("time_control_class"))
    df = pl.concat([overall.select(by_class.columns), by_class])
    df = df.with_columns([e for k, n, name in UNWINNABLE_RATES for e in stats.wilson_exprs(k, n, name)])
    cls_order = {c: i for i, c in enumerate((ALL_CLASSES, *periods.TC_CLASSES))}
    df = df.with_columns(
        pl.col("time_control_class").replace_strict(cls_order, default=99, return_dtype=pl.Int32).alias("_c")
    )
    return _sort_pop(df.sort("game_type", "platform", "edition", "_c").drop("_c"))


# The summaries by one category of the cube (its rollup by that dimension), by dimension.
SUMMARY_BY = {"time_control_class": "summary_by_time_control", "rating_band": "summary_by_rating_band"}


def build(ds, partial: bool = False, check: str = "digest", exclude: tuple[str, ...] = ()) -> Report:
    """The report's tables from a Dataset (engine.dataset; or its folder or URL), every file
    checked (`check`); the games of the known data issues `exclude` left out (the coverage
    counts them)."""
    from analyzer.engine.dataset import as_dataset

    ds = as_dataset(ds)
    states = ds.sources()
    c = collect(ds, partial=partial, check=check, states=states, exclude=exclude)
    rep = Report(collected=c)
    rep.excluded_issues = tuple(exclude)
    if partial:
        rep.partial = [
            {"source": s.name, "games": s.games, "expected_games": s.expected_games, "note": s.note}
            for s in ds.incomplete(states)
        ]
    collected_cube, coverage = c.tables["cube"], c.tables["coverage"]
    assert collected_cube is not None and coverage is not None  # collect() makes them, empty if need be
    t = rep.tables
    cube = cube_.build(collected_cube, MEASURES)
    t["summary_cube"] = _sort_pop(cube)
    by_population = _sort_pop(cube_.rollup(cube, [], MEASURES))
    t["summary_by_population"] = by_population
    by_source = cube_.rollup(collected_cube, ["source"], MEASURES)
    t["summary_by_source"] = by_source.select("source", pl.exclude("source"))
    per = _sort_pop(periods.series(cube, MEASURES))
    t["summary_by_period"] = per
    mix = periods.mix(per)
    t["time_control_mix"] = mix
    t["mix_shifts"] = periods.shifts(mix)
    for dim, name in SUMMARY_BY.items():
        t[name] = _sort_pop(cube_.rollup(cube, [dim], MEASURES))
    t["missed_by_rule"] = missed_by_rule(cube)
    t["unwinnable_by_time_control"] = unwinnable_by_time_control(collected_cube)
    t["coverage"] = coverage.sort("source", "game_type", "platform", "status", "data_issue", nulls_last=False)
    mr = c.tables.get("missed_results")
    t["missed_results"] = _sort_pop(mr) if mr is not None else pl.DataFrame()
    t["rules"] = _rules(c)
    ro = c.tables.get("rule_outcomes")
    t["rule_outcomes"] = _sort_pop(ro) if ro is not None else pl.DataFrame()
    for h in ("hist_plies", "hist_clock"):
        df = c.tables.get(h)
        t[h] = _sort_pop(df) if df is not None else pl.DataFrame()
    t["edition_pairs"] = _pairs_matrix(c.tables.get("pairs"))
    for name, df in values.tables(c.tables).items():  # position values: tablebase, [%eval]
        t[name] = _sort_pop(df)
    t["audit_summary"] = _audit(c, c.editions)
    ag = c.tables.get("audit_games")
    t["audit_games"] = ag if ag is not None else pl.DataFrame()
    pops = by_population.group_by("game_type", "platform", maintain_order=True).agg(pl.col("games").max())
    rep.populations = [(g, p) for g, p, n in pops.iter_rows() if n > 0]
    cls_rows = []
    for gt, eds in c.editions.items():
        for m in MEASURES:
            cl = edition_classes(c.tables.get("pairs"), eds, gt, m)
            rep.classes[(gt, m.name)] = cl
            for k in cl:
                cls_rows.append(
                    {
                        "game_type": gt,
                        "platform": "all platforms",
                        "measure": m.name,
                        "series": k.label,
                        "editions": ",".join(k.editions),
                    }
                )
            for g2, plat in rep.populations:
                if g2 != gt:
                    continue
                cl = edition_classes(c.tables.get("pairs"), eds, gt, m, plat)
                rep.pop_classes[(gt, plat, m.name)] = cl
                for k in cl:
                    cls_rows.append(
                        {
                            "game_type": gt,
                            "platform": plat,
                            "measure": m.name,
                            "series": k.label,
                            "editions": ",".join(k.editions),
                        }
                    )
    t["edition_classes"] = pl.DataFrame(cls_rows, schema=CLASS_SCHEMA)
    series = [(gt, tuple(k.editions)) for (gt, _), cl in rep.classes.items() for k in cl]
    series += [(gt, tuple(k.editions)) for (gt, _, _), cl in rep.pop_classes.items() for k in cl]
    series += [(gt, (e,)) for gt, eds in c.editions.items() if gt != "chess" for e in eds]  # the rules figure
    rep.styles = Styles(c.editions, series, frozenset(c.counterfactual))
    t["headline"] = headline(rep)
    return rep


def primary_class(rep: Report, game_type: str, platform: str, measure: str) -> EdClass | None:
    cl = rep.classes.get((game_type, measure)) or []
    prefer: tuple[str, ...] = ("lichess",) if platform == "lichess" else ()
    prefer += ("fide_2018", "fshr_russian")
    for p in prefer:
        for k in cl:
            if p in k.editions:
                return k
    return cl[0] if cl else None


def in_force_reading(rep: Report, game_type: str, platform: str, rule: str) -> dict | None:
    """The population's missed_by_rule row (all classes) under the edition in force, or None
    when no edition in force was scanned for any of its games."""
    mbr = rep.table("missed_by_rule").filter(
        (pl.col("game_type") == game_type)
        & (pl.col("platform") == platform)
        & (pl.col("edition") == IN_FORCE)
        & (pl.col("rule") == rule)
        & (pl.col("time_control_class") == ALL_CLASSES)
        & (pl.col("games") > 0)
    )
    return mbr.row(0, named=True) if mbr.height else None


def headline(rep: Report) -> pl.DataFrame:
    """One row per population, measure and edition class (and, for the missed-among-chances
    measures, the reading under the edition in force, primary where it exists): k, n, rate and
    its interval; `games` the games read, of which k is the share on the second line."""
    s = rep.table("summary_by_population")
    rows = []
    for gt, plat in rep.populations:
        for m in MEASURES:
            forced = in_force_reading(rep, gt, plat, m.name.split("_", 1)[1]) if m.name in RULE_MEASURES else None
            if forced is not None:
                ok = bool(forced["applicable"])
                kk, nn = (int(forced["missed"]), int(forced["games_with_chance"])) if ok else (0, 0)
                lo, hi = stats.wilson(kk, nn) if ok else (None, None)
                rows.append(
                    {
                        "game_type": gt,
                        "platform": plat,
                        "measure": m.name,
                        "series": IN_FORCE,
                        "editions": forced["editions"],
                        "primary": True,
                        "applicable": ok,
                        "k": kk if ok else None,
                        "n": nn if ok else None,
                        "rate": (kk / nn) if ok and nn else None,
                        "ci_low": lo,
                        "ci_high": hi,
                        "text": stats.count_pct(kk, nn) if ok else "not applicable",
                        "description": m.label,
                        "denominator": m.of,
                        "games": forced["games"],
                    }
                )
            for k in rep.classes.get((gt, m.name), []):
                r = s.filter((pl.col("game_type") == gt) & (pl.col("platform") == plat) & (pl.col("edition") == k.key))
                if r.height == 0:
                    continue
                row = r.row(0, named=True)
                ok = applies(k.key, m)
                c_k: int | None = None
                c_n: int | None = None
                lo = hi = None
                text = "not applicable"
                if ok:
                    c_k, c_n = row[m.k], row[m.n]
                    lo, hi = stats.wilson(c_k, c_n)
                    text = stats.count_pct(c_k, c_n)
                rows.append(
                    {
                        "game_type": gt,
                        "platform": plat,
                        "measure": m.name,
                        "series": k.label,
                        "editions": ",".join(k.editions),
                        "primary": forced is None and k is primary_class(rep, gt, plat, m.name),
                        "applicable": ok,
                        "k": c_k,
                        "n": c_n,
                        "rate": (c_k / c_n) if ok and c_k is not None and c_n else None,
                        "ci_low": lo,
                        "ci_high": hi,
                        "text": text,
                        "description": m.label,
                        "denominator": m.of,
                        "games": row["games"],
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            **CLASS_SCHEMA,
            "primary": pl.Boolean,
            **RATE_SCHEMA,
            "text": pl.String,
            "description": pl.String,
            "denominator": pl.String,
            "games": pl.Int64,
        },
    )
