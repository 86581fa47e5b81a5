"""Read an `analyzer scan --out` directory a piece at a time and reduce it to small additive
aggregates (counts), so that neither an OUT of hundreds of monthly dumps nor one dump of 90 M
games is ever loaded whole: the committed files are read in chunks of at most CHUNK_GAMES games
of one source (engine.dataset.Dataset.chunks: small files grouped, a compacted file by game_index
range, its other row groups skipped by their statistics); each chunk's `games`, `verdicts` and
`events` are scanned lazily (polars), joined on `game_index`, grouped, and only the grouped
counts are kept. Every count is a sum over games, so the chunks' aggregates are added up
afterwards; memory is bounded by the chunk, not by the source (tests/test_report_memory.py).

Aggregates (`collect(out_dir)` returns them as polars DataFrames):

  cube          source x game_type x platform x edition x month x time_control_class x
                rating_band: games and the counts of every measure (analyzed games, status ok)
  coverage      source x game_type x platform x status x data_issue: games read, and of them
                the games left out by --exclude-data-issues
  pairs         game_type x platform x edition pair: games compared, games whose verdict differs
                (missed, avoided, claimed, automatic end), example Site URLs
  missed_results  game_type x platform x edition x missed rule x result of the side that missed
  rule_outcomes   game_type x platform x edition x rule x kind x outcome: events and games
  rules_reached   game_type x platform x edition: games where each rule's condition arose
                (first_*_ply) and where it was the first automatic draw (end_rule)
  hist_plies, hist_clock  game_type x platform x edition x bin: plies played after the first
                missed claim (bins of 10, 200+ last) and the clock then (bins of 15 s, 600+ last)
  audit_counts, audit_games  the audit of recorded results (docs/report.md)
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from analyzer import codes, tables
from analyzer.errors import DatasetError
from analyzer.report import audit, values

PLATFORMS = ("lichess", "chess.com", "otb", "other")
GAME_TYPES = ("chess", "russian_draughts")
UNKNOWN = "unknown"  # the class of a game without a readable TimeControl, the band without both ratings
TC_ORDER = ("ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence")

# Verdict columns that tell where a rule's condition first arose (rule -> column).
REACHED = {
    "threefold": "first_threefold_ply",
    "fifty": "first_fifty_ply",
    "fivefold": "first_fivefold_ply",
    "seventyfive": "first_seventyfive_ply",
    "balance": "first_balance_ply",
    "kings_vs_king": "first_kings_vs_king_ply",
    "main_diagonal": "first_main_diagonal_ply",
    "small_ending": "first_small_ending_ply",
}
# What "the same verdict" means per measure when two editions are compared game by game.
SIGNATURES = {
    "missed": ("first_missed_claim_ply", "missed_claim_rule"),
    "avoided": ("first_avoided_claim_ply", "avoided_claim_rule"),
    "claimed": ("claimed",),
    "automatic": ("end_ply", "end_rule"),
    "missed_threefold": ("board_chance_threefold", "missed_threefold"),
    "missed_fifty": ("board_chance_fifty", "missed_fifty"),
}
# The claim rules whose chances on the board are counted per game: a game "had the chance" of a
# rule when the side to move could claim it on the board at some position (an event claim_now).
CLAIM_RULES = ("threefold", "fifty")
EXAMPLES = 3  # example games per edition pair and platform

CUBE_DIMS = ["source", "game_type", "platform", "edition", "month", "time_control_class", "rating_band"]
COUNTS = [
    "games",
    "chance",
    "missed",
    "missed_won",
    "missed_drew",
    "missed_lost",
    "missed_result_known",
    "avoided",
    "claimed",
    "passed_on",
    "automatic_end",
    "decisive",
    "result_changed",
    # per claim rule: games with a chance on the board, and games that played on past one
    "board_chance",
    "board_chance_threefold",
    "missed_threefold",
    "board_chance_fifty",
    "missed_fifty",
    # chess, dead positions and flag fall (docs/rules.md): games lost on time (1-0/0-1,
    # Termination "Time forfeit") whose final position was checked; of them, the winner could not
    # mate by the edition's test, or the kernel's answer is unknown; games with a dead position
    # (the games fact, the same under every edition); of them, games played on after it
    "lost_on_time",
    "timeout_unwinnable",
    "timeout_unknown",
    "dead_position",
    "played_on_after_dead",
]

_GAME_COLS = [
    "source",
    "game_type",
    "game_index",
    "platform",
    "time_control_class",
    "rating_band",
    "date",
    "status",
    "result",
    "site",
    "plies",
    "termination",
    "event",
    "white",
    "black",
    "data_issue",
    "dead_position_ply",
    "timeout_winner_can_mate",
]
_VERDICT_COLS = [
    "edition",
    "game_index",
    "first_missed_claim_ply",
    "missed_claim_rule",
    "missed_claim_side",
    "missed_claim_result",
    "plies_after_missed_claim",
    "missed_claim_clock_seconds",
    "first_avoided_claim_ply",
    "avoided_claim_rule",
    "end_ply",
    "end_rule",
    "result_changed",
    "draw_reason",
    "first_threefold_claim_ply",
    "final_win_in_time",
    "timeout_unwinnable",
    *REACHED.values(),
]


@dataclass
class Collected:
    tables: dict[str, pl.DataFrame | None] = field(default_factory=dict)  # None: no source had rows for it
    editions: dict[str, list[str]] = field(default_factory=dict)  # game_type -> editions, in scan order
    sources: list[str] = field(default_factory=list)
    counterfactual: set[str] = field(default_factory=set)  # editions marked counterfactual in the verdicts


# Games per chunk: the memory of a chunk's queries grows with it (ANALYZER_REPORT_CHUNK_GAMES
# sets it, for a test or a machine with little memory).
CHUNK_GAMES = int(os.environ.get("ANALYZER_REPORT_CHUNK_GAMES", "100000"))


def _scan(ds, chunk, table: str, schema, cols: list[str]) -> pl.LazyFrame:
    """The columns `cols` of a chunk's rows of a table (its files checked by the Dataset);
    `source` (the partition key, not a column of the files) is the source's name, as its
    record gives it."""
    files, d = chunk.files[table], chunk.source
    stored = [c for c in cols if c != "source"]
    if not files:
        empty = pl.from_arrow(schema.empty_table())
        assert isinstance(empty, pl.DataFrame)  # from a Table, not an Array: a DataFrame
        lf = empty.lazy()
    else:
        lf = ds.scan_files(files)
    if chunk.filtered:  # a range of a compacted file: the row groups outside it are not read
        lf = lf.filter(pl.col("game_index").is_between(chunk.games[0], chunk.games[1], closed="left"))
    missing = [c for c in stored if c not in lf.collect_schema().names()]
    if missing:  # a column added after these files were written (e.g. the tablebase columns): null
        empty = pl.from_arrow(schema.empty_table())
        assert isinstance(empty, pl.DataFrame)  # from a Table: a DataFrame
        types = empty.schema
        lf = lf.with_columns([pl.lit(None, types[c]).alias(c) for c in missing])
    lf = lf.select(stored).with_columns(pl.col(pl.Categorical).cast(pl.String))
    if "source" in cols:
        lf = lf.with_columns(pl.lit(d, pl.String).alias("source")).select(cols)
    return lf


def excluded(issues: tuple[str, ...]) -> pl.Expr:
    """Games that carry one of the known data issues `issues` (games.data_issue: ids joined by ';')."""
    pattern = "(^|;)(" + "|".join(re.escape(i) for i in issues) + ")(;|$)"
    return pl.col("data_issue").fill_null("").str.contains(pattern)


def _queries(ds, chunk, editions: dict[str, list[str]], exclude: tuple[str, ...] = ()) -> dict[str, pl.LazyFrame]:
    """The aggregates of one chunk, as lazy queries (run together by collect_all). `exclude`:
    known data issues whose games are left out of every aggregate but the coverage."""
    g_all = _scan(ds, chunk, "games", tables.GAMES_SCHEMA, _GAME_COLS)
    g = g_all.filter(~excluded(exclude)) if exclude else g_all
    v = _scan(ds, chunk, "verdicts", tables.VERDICTS_SCHEMA, _VERDICT_COLS)
    e = _scan(ds, chunk, "events", tables.EVENTS_SCHEMA, values.EVENT_COLS)
    e = e.filter(pl.col("kind") != "offer")
    gs = g.filter(pl.col("status") == "ok").with_columns(
        pl.col("date").dt.truncate("1mo").alias("month"),
        audit.in_force().alias("in_force"),
        pl.col("time_control_class", "rating_band").fill_null(UNKNOWN),
    )
    flags = e.group_by("edition", "game_index").agg(
        (pl.col("outcome") == "claimed").any().alias("claimed"),
        (pl.col("outcome") == "passed_on").any().alias("passed_on"),
        pl.col("kind").is_in(["claim_now", "claim_intended"]).any().alias("chance"),
        (pl.col("kind") == "claim_now").any().alias("board_chance"),
        *[
            ((pl.col("kind") == "claim_now") & (pl.col("rule") == r)).any().alias(f"board_chance_{r}")
            for r in CLAIM_RULES
        ],
        *[((pl.col("outcome") == "missed") & (pl.col("rule") == r)).any().alias(f"missed_{r}") for r in CLAIM_RULES],
    )
    flag_cols = ["claimed", "passed_on", "chance", "board_chance"]
    flag_cols += [f"{w}_{r}" for r in CLAIM_RULES for w in ("board_chance", "missed")]
    ge = (
        gs.join(v, on="game_index", how="inner")
        .join(flags, on=["edition", "game_index"], how="left")
        .with_columns(pl.col(flag_cols).fill_null(False))
    )
    res = pl.col("missed_claim_result")
    # lost on time, its final position checked (the scan answers for every standard and
    # Chess960 game lost on time that was replayed to its end)
    lost_on_time = pl.col("timeout_winner_can_mate").is_not_null()
    q: dict[str, pl.LazyFrame] = {}
    q["cube"] = ge.group_by(CUBE_DIMS).agg(
        pl.len().alias("games"),
        pl.col("chance").sum().alias("chance"),
        pl.col("first_missed_claim_ply").is_not_null().sum().alias("missed"),
        (res == "win").sum().alias("missed_won"),
        (res == "draw").sum().alias("missed_drew"),
        (res == "loss").sum().alias("missed_lost"),
        res.is_not_null().sum().alias("missed_result_known"),
        pl.col("first_avoided_claim_ply").is_not_null().sum().alias("avoided"),
        pl.col("claimed").sum().alias("claimed"),
        pl.col("passed_on").sum().alias("passed_on"),
        pl.col("end_ply").is_not_null().sum().alias("automatic_end"),
        pl.col("result").is_in(["1-0", "0-1"]).sum().alias("decisive"),
        # decisive games an automatic draw ends first (stalemate_win's stalemates, draws it makes
        # decisive, are not draws: left out, so that the measure stays a share of decisive games)
        (pl.col("result_changed").fill_null(False) & pl.col("result").is_in(["1-0", "0-1"]))
        .sum()
        .alias("result_changed"),
        *[pl.col(c).sum().alias(c) for c in COUNTS[COUNTS.index("board_chance") : COUNTS.index("lost_on_time")]],
        lost_on_time.sum().alias("lost_on_time"),
        pl.col("timeout_unwinnable").fill_null(False).sum().alias("timeout_unwinnable"),
        (pl.col("timeout_unwinnable").is_null() & (pl.col("timeout_winner_can_mate") == "unknown"))
        .fill_null(False)
        .sum()
        .alias("timeout_unknown"),
        pl.col("dead_position_ply").is_not_null().sum().alias("dead_position"),
        (pl.col("plies") > pl.col("dead_position_ply")).fill_null(False).sum().alias("played_on_after_dead"),
    )
    q["coverage"] = g_all.group_by("source", "game_type", "platform", "status", "data_issue").agg(
        pl.len().alias("games"), (excluded(exclude) if exclude else pl.lit(False)).sum().alias("games_left_out")
    )
    q["missed_results"] = (
        ge.filter(pl.col("first_missed_claim_ply").is_not_null())
        .group_by("game_type", "platform", "edition", "missed_claim_rule", "missed_claim_result")
        .agg(pl.len().alias("games"))
    )
    q["rule_outcomes"] = (
        e.join(gs.select("game_index", "game_type", "platform"), on="game_index", how="inner")
        .group_by("game_type", "platform", "edition", "rule", "kind", "outcome")
        .agg(pl.len().alias("events"), pl.col("game_index").n_unique().alias("games"))
    )
    q["rules_reached"] = ge.group_by("game_type", "platform", "edition").agg(
        pl.len().alias("games"),
        *[pl.col(c).is_not_null().sum().alias(f"reached_{r}") for r, c in REACHED.items()],
        *[(pl.col("end_rule") == r).sum().alias(f"ended_{r}") for r in codes.RULES],
    )
    missed = ge.filter(pl.col("first_missed_claim_ply").is_not_null())
    q["hist_plies"] = (
        missed.with_columns(pl.min_horizontal(pl.col("plies_after_missed_claim") // 10 * 10, 200).alias("bin"))
        .group_by("game_type", "platform", "edition", "bin")
        .agg(pl.len().alias("games"))
    )
    q["hist_clock"] = (
        missed.filter(pl.col("missed_claim_clock_seconds").is_not_null())
        .with_columns(
            pl.min_horizontal((pl.col("missed_claim_clock_seconds").clip(0) // 15 * 15).cast(pl.Int64), 600).alias(
                "bin"
            )
        )
        .group_by("game_type", "platform", "edition", "bin")
        .agg(pl.len().alias("games"))
    )
    # Edition pairs: one wide row per game, the verdict columns of every edition side by side.
    pair_frames = []
    for gt, eds in editions.items():
        if len(eds) < 2:
            continue
        base = ge.filter(pl.col("game_type") == gt)
        wide = gs.filter(pl.col("game_type") == gt).select("source", "game_index", "platform", "site")
        for i, ed in enumerate(eds):
            cols = [c for sig in SIGNATURES.values() for c in sig]
            part = base.filter(pl.col("edition") == ed).select(
                "game_index", pl.lit(True).alias(f"present__{i}"), *[pl.col(c).alias(f"{c}__{i}") for c in cols]
            )
            wide = wide.join(part, on="game_index", how="left")
        url = pl.col("site").fill_null("").str.contains(r"^https?://\S+$")
        for i in range(len(eds)):
            for j in range(i + 1, len(eds)):
                both = pl.col(f"present__{i}").fill_null(False) & pl.col(f"present__{j}").fill_null(False)
                diffs = {
                    m: both & pl.any_horizontal([pl.col(f"{c}__{i}").ne_missing(pl.col(f"{c}__{j}")) for c in sig])
                    for m, sig in SIGNATURES.items()
                }
                anyd = pl.any_horizontal(list(diffs.values()))
                pair_frames.append(
                    wide.group_by("platform").agg(
                        pl.lit(gt).alias("game_type"),
                        pl.lit(eds[i]).alias("edition_a"),
                        pl.lit(eds[j]).alias("edition_b"),
                        both.sum().alias("games_compared"),
                        *[d_.sum().alias(f"differ_{m}") for m, d_ in diffs.items()],
                        anyd.sum().alias("differ_any"),
                        # the first games in game order (chunks come in source and game order)
                        pl.col("site")
                        .filter(anyd & url)
                        .sort_by(pl.col("game_index").filter(anyd & url))
                        .head(EXAMPLES)
                        .alias("examples"),
                        pl.format("{}#{}", "source", "game_index")
                        .filter(anyd)
                        .sort_by(pl.col("game_index").filter(anyd))
                        .head(EXAMPLES)
                        .alias("example_games"),
                    )
                )
    if pair_frames:
        q["pairs"] = pl.concat(pair_frames, how="vertical")
    q.update(values.queries(gs, ge, e))  # position values at the events (tablebase, [%eval])
    # Audit: each chess game under the edition in force for it, when that edition was scanned.
    aud = ge.filter(pl.col("edition") == pl.col("in_force"))
    kinds = audit.flags()
    categories = {
        "contradiction": pl.any_horizontal([kinds[k] for k in audit.CONTRADICTIONS]),
        "lead": pl.any_horizontal([kinds[k] for k in audit.LEADS]),
    }
    q["audit_counts"] = (
        gs.filter(pl.col("game_type") == "chess")
        .group_by("platform", "in_force")
        .agg(pl.len().alias("games"))
        .join(
            aud.group_by("platform", "in_force").agg(
                pl.len().alias("games_audited"),
                *[k.sum().alias(n) for n, k in kinds.items()],
                *[k.sum().alias(n) for n, k in categories.items()],
            ),
            on=["platform", "in_force"],
            how="left",
            nulls_equal=True,
        )
    )
    cols = [
        "source",
        "game_index",
        "platform",
        "in_force",
        "date",
        "site",
        "event",
        "white",
        "black",
        "result",
        "termination",
        "plies",
        "end_ply",
        "end_rule",
        "first_threefold_claim_ply",
        "draw_reason",
    ]
    q["audit_games"] = pl.concat(
        [
            aud.filter(k).select(pl.lit(audit.KIND[n].category).alias("category"), pl.lit(n).alias("kind"), *cols)
            for n, k in kinds.items()
        ]
    )
    return q


def _editions(ds, chunks: list, counterfactual: set | None = None) -> dict[str, list[str]]:
    """game_type -> editions present in the verdicts (in the order of codes / first seen); the
    editions the verdicts mark counterfactual are added to `counterfactual`."""
    seen = None
    for k in range(0, len(chunks), 8):
        frames = [
            _scan(ds, c, "verdicts", tables.VERDICTS_SCHEMA, ["game_type", "edition", "counterfactual"]).unique()
            for c in chunks[k : k + 8]
        ]
        got = pl.concat([*([] if seen is None else [seen]), *pl.collect_all(frames)])
        seen = got.unique(maintain_order=True)
    if seen is None:
        return {}
    out: dict[str, list[str]] = {}
    for gt, ed, cf in seen.iter_rows():
        out.setdefault(gt, [])
        if ed not in out[gt]:
            out[gt].append(ed)
        if cf and counterfactual is not None:
            counterfactual.add(ed)
    order = [
        "fide_2018",
        "fide_2014",
        "fide_2009",
        "fide_1997",
        "fide_1988",
        "lichess",
        "no_fifty",
        "stalemate_win",
        "fshr_russian",
        "fmjd_64",
    ]
    for gt in out:
        out[gt].sort(key=lambda e: (order.index(e) if e in order else len(order), e))
    return dict(sorted(out.items(), key=lambda kv: GAME_TYPES.index(kv[0]) if kv[0] in GAME_TYPES else 99))


def _batches(chunks: list, batch: int) -> list[list]:
    """Chunks run together (one collect_all): up to `batch` of them, CHUNK_GAMES games in all."""
    out: list[list] = []
    held = 0
    for c in chunks:
        n = c.games[1] - c.games[0]
        if out and len(out[-1]) < batch and held + n <= CHUNK_GAMES:
            out[-1].append(c)
            held += n
        else:
            out.append([c])
            held = n
    return out


# The keys each aggregate is added up by across chunks (the cube and coverage carry the source).
_SUM_BY = {
    "cube": CUBE_DIMS,
    "coverage": ["source", "game_type", "platform", "status", "data_issue"],
    "missed_results": ["game_type", "platform", "edition", "missed_claim_rule", "missed_claim_result"],
    "rule_outcomes": ["game_type", "platform", "edition", "rule", "kind", "outcome"],
    "rules_reached": ["game_type", "platform", "edition"],
    "hist_plies": ["game_type", "platform", "edition", "bin"],
    "hist_clock": ["game_type", "platform", "edition", "bin"],
    "audit_counts": ["platform", "in_force"],
    **values.SUM_BY,
}


def _add_up(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    df = pl.concat(frames, how="vertical_relaxed")
    vals = [c for c in df.columns if c not in keys]
    return df.group_by(keys).agg(pl.col(vals).sum()).sort(keys, nulls_last=True)


def _detached(df: pl.DataFrame) -> pl.DataFrame:
    """A copy of df that owns its data. polars' strings are views: a few rows filtered or
    grouped out of a chunk (the audit's games, a pair's example sites) keep the whole chunk's
    string buffers alive, ~6 MB per 100,000 games, so holding them grew the report's memory
    with the source (1.9 GB for 10 M games). An IPC round trip writes only the bytes the rows
    use."""
    buf = io.BytesIO()
    df.write_ipc(buf)
    buf.seek(0)
    return pl.read_ipc(buf)


def reduce_chunks(
    ds, chunks: list, editions: dict[str, list[str]], batch: int = 8, exclude: tuple[str, ...] = ()
) -> dict[str, list[pl.DataFrame]]:
    """Every chunk's aggregates, by name; the additive ones added up as they come (at most 64
    frames held per name), every one detached from the chunk it came from."""
    parts: dict[str, list[pl.DataFrame]] = {}
    for group in _batches(chunks, batch):
        queries = [_queries(ds, c, editions, exclude) for c in group]
        names = [(i, n) for i, q in enumerate(queries) for n in q]
        frames = pl.collect_all([queries[i][n] for i, n in names])
        for (_, n), df in zip(names, frames):
            parts.setdefault(n, []).append(_detached(df))
            if n in _SUM_BY and len(parts[n]) >= 64:  # keep what is held small: add up as it goes
                parts[n] = [_add_up(parts[n], _SUM_BY[n])]
    return parts


def collect(
    ds, batch: int = 8, partial: bool = False, check: str = "digest", states=None, exclude: tuple[str, ...] = ()
) -> Collected:
    """The aggregates of every source of a Dataset (a folder or an object-store URL), added
    up (see the module docstring). Every file is checked before it is read (`check`, by the
    Dataset), the games read per source are compared with its record, and a file that cannot
    be read is a DatasetError, never a number: a damaged OUT gives no report. `exclude`: the
    known data issues (io.lichess_db ids) whose games are left out of every aggregate but the
    coverage, which counts them (`games_left_out`)."""
    states = ds.sources() if states is None else states
    chunks = ds.chunks(CHUNK_GAMES, partial=partial, check=check, states=states)
    counterfactual: set[str] = set()
    try:
        editions = _editions(ds, chunks, counterfactual)
        parts = reduce_chunks(ds, chunks, editions, batch, exclude)
    except (pl.exceptions.PolarsError, OSError, pa.ArrowException) as exc:
        raise DatasetError(
            f"{ds.root}: a table file could not be read ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            f"`analyzer verify {ds.root}` lists the damage and the command that repairs it"
        ) from None
    for n, keys in _SUM_BY.items():
        frames = [f for f in parts.get(n, []) if f.height]
        if len(frames) > 1:
            parts[n] = [_add_up(frames, keys)]
    out = Collected(editions=editions, counterfactual=counterfactual)
    t = out.tables
    t["cube"] = _cat(parts, "cube", _empty_cube())
    coverage = _cat(  # with an empty default: never None
        parts,
        "coverage",
        pl.DataFrame(
            schema={
                "source": pl.String,
                "game_type": pl.String,
                "platform": pl.String,
                "status": pl.String,
                "data_issue": pl.String,
                "games": pl.UInt32,
                "games_left_out": pl.UInt32,
            }
        ),
    )
    t["coverage"] = coverage
    _compare_with_records(ds, coverage, states)
    out.sources = sorted(coverage["source"].unique().to_list())
    for name, keys in _SUM_BY.items():
        if name in ("cube", "coverage"):
            continue
        df = _cat(parts, name, None)
        t[name] = None if df is None else _add_up([df], keys)
    pairs = _cat(parts, "pairs", None)
    if pairs is not None:
        keys = ["game_type", "platform", "edition_a", "edition_b"]
        nums = [c for c in pairs.columns if c not in keys and c not in ("examples", "example_games")]
        pairs = (
            pairs.group_by(keys, maintain_order=True)
            .agg(
                *[pl.col(c).sum() for c in nums],
                pl.col("examples").list.explode(keep_nulls=False, empty_as_null=False).head(EXAMPLES),
                pl.col("example_games").list.explode(keep_nulls=False, empty_as_null=False).head(EXAMPLES),
            )
            .sort(keys)
        )
    t["pairs"] = pairs
    ag = _cat(parts, "audit_games", None)
    t["audit_games"] = ag.sort("category", "kind", "source", "game_index") if ag is not None else None
    return out


def _compare_with_records(ds, coverage: pl.DataFrame, states) -> None:
    """The games read of each finished source against its record: a report never publishes a
    number from a table that holds fewer (or more) games than the record committed."""
    read = dict(coverage.group_by("source").agg(pl.col("games").sum()).iter_rows())
    wrong = []
    for state in states:
        if state.complete and read.get(state.name, 0) != state.games:
            wrong.append(f"{state.name}: {read.get(state.name, 0):,} games read, its record commits {state.games:,}")
    if wrong:
        raise DatasetError(
            f"{ds.root}: the tables do not hold the games their records commit ({'; '.join(wrong[:3])}); "
            f"`analyzer verify {ds.root} --deep` lists the damage and the command that repairs it"
        )


def _cat(parts, name, empty):
    frames = [f for f in parts.get(name, []) if f.height]
    if not frames:
        frames = parts.get(name, [])[:1]
    if not frames:
        return empty
    return pl.concat(frames, how="vertical_relaxed")


def _empty_cube() -> pl.DataFrame:
    schema: dict[str, type[pl.DataType]] = dict.fromkeys(CUBE_DIMS, pl.String)
    schema["month"] = pl.Date
    schema.update(dict.fromkeys(COUNTS, pl.UInt32))
    return pl.DataFrame(schema=schema)
