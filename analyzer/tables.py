"""The output tables (the data contract) and the one builder every game kind's block goes through.

  games     one row per game: headers, derived columns, status, edition-independent facts
  verdicts  one row per game and edition: every column an edition decides
  events    one row per chance to claim a draw, automatic draw or draw offer, per edition

Keys: (source, game_index) and edition; `source` is the folder (the hive partition key). A kind
hands over numpy arrays (codes from analyzer.codes) and header columns; this module applies the
measures (analyzer.measures) and builds the Arrow tables, so every kind gets the same columns,
codes and derived values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac, codes, measures_kernels

_DICT = pa.dictionary(pa.int32(), pa.string())

# The key `source` (the input's name: file name without extensions, or --source-name) is the hive
# partition key: the folders are `source=<name, escaped>` (engine.dataset.names), and it is not stored
# inside the files, so that every hive reader takes it from the folder names with no type to
# reconcile (pyarrow's dataset infers a string, pandas a dictionary: a key stored in the files
# too clashes with one of them). analyzer.scan_* add it, with long names in full.

# (name, type, meaning, unit) of every column: the schemas and OUT/_dataset.json come from here.
# Tags are strings as written; the columns derived from them and the codes are dictionaries.
_KEY = [
    ("game_type", _DICT, "game kind: chess, russian_draughts, ...", None),
]
GAMES_COLUMNS = _KEY + [
    ("game_index", pa.int64(), "0-based index of the game within its source", None),
    ("byte_offset", pa.int64(), "start of the game in the decompressed text", "bytes"),
    ("event", pa.string(), "[Event] header", None),
    ("site", pa.string(), "[Site] header", None),
    ("white", pa.string(), "[White] header", None),
    ("black", pa.string(), "[Black] header", None),
    ("result", pa.string(), "[Result] header (draughts 2-0/1-1/0-2 mapped to 1-0/1/2-1/2/0-1)", None),
    ("white_elo", pa.int32(), "[WhiteElo] header", "Elo"),
    ("black_elo", pa.int32(), "[BlackElo] header", "Elo"),
    ("time_control", pa.string(), "[TimeControl] header", None),
    ("termination", pa.string(), "[Termination] header", None),
    ("eco", pa.string(), "[ECO] header", None),
    ("utc_date", pa.string(), "[UTCDate] header, as written", None),
    ("utc_time", pa.string(), "[UTCTime] header, as written", None),
    ("date_tag", pa.string(), "[Date] header, as written", None),
    ("variant", pa.string(), "[Variant] header (chess) or [GameType] (draughts)", None),
    ("start_fen", pa.string(), "[FEN] header", None),
    ("white_fide_id", pa.string(), "[WhiteFideId] header (Lichess broadcasts), as written", None),
    ("black_fide_id", pa.string(), "[BlackFideId] header (Lichess broadcasts), as written", None),
    ("board", pa.string(), "[Board] header (Lichess broadcasts: the board in a team or round)", None),
    ("broadcast_name", pa.string(), "[BroadcastName] header (Lichess broadcasts)", None),
    ("game_url", pa.string(), "[GameURL] header (Lichess broadcasts: the game's page)", None),
    (
        "platform",
        _DICT,
        "lichess, chess.com, otb (a place, no URL; or a Lichess broadcast of an over-the-board game) or "
        "other, from Site, Event and the broadcast tags",
        None,
    ),
    (
        "time_control_class",
        _DICT,
        "ultrabullet/bullet/blitz/rapid/classical from base + 40 x increment "
        "(< 30, 180, 480, 1500 s; Lichess's estimate), correspondence for '-', unknown without a "
        "readable TimeControl",
        None,
    ),
    (
        "rating_band",
        _DICT,
        "mean Elo of the two players in 200-point bands ('1800-1999'); null unless both are known",
        None,
    ),
    ("date", pa.date32(), "the game's date from UTCDate, else Date; null if partial or absent", None),
    ("has_clock", pa.bool_(), "the movetext carries clock comments ([%clk])", None),
    ("status", _DICT, "ok, or why the game was not (fully) analyzed: see analyzer.codes.STATUSES", None),
    ("error", pa.string(), "what went wrong, naming the ply and the token; notes for ok games", None),
    ("error_ply", pa.int32(), "the position at which replay stopped (facts are kept up to it)", "ply"),
    ("plies", pa.int32(), "half-moves replayed (ply 0 is the start position)", "plies"),
    (
        "first_third_occurrence_ply",
        pa.int32(),
        "first position that occurs for the 3rd time (FIDE 2009+ identity)",
        "ply",
    ),
    (
        "first_fifth_occurrence_ply",
        pa.int32(),
        "first position that occurs for the 5th time (FIDE 2009+ identity)",
        "ply",
    ),
    ("first_halfmove_clock_100_ply", pa.int32(), "first position with 100 plies without capture or pawn move", "ply"),
    ("first_halfmove_clock_150_ply", pa.int32(), "first position with 150 plies without capture or pawn move", "ply"),
    ("final_repetition_count", pa.int16(), "occurrences of the final position (FIDE 2009+ identity)", None),
    (
        "final_halfmove_clock",
        pa.int32(),
        "halfmove clock of the final position (draughts: plies without a man move or capture)",
        "plies",
    ),
    ("final_is_checkmate", pa.bool_(), "the final position is checkmate", None),
    ("final_is_stalemate", pa.bool_(), "the final position is stalemate", None),
    ("final_insufficient_material", pa.bool_(), "neither side can mate (python-chess's material rule)", None),
    (
        "variant_end",
        _DICT,
        "Lichess variants: the final position ends the game by the variant's own rule "
        "(king exploded, hill reached, third check, race won, antichess, horde wiped out): "
        "the winner white / black, or draw",
        None,
    ),
    (
        "final_material",
        pa.string(),
        "the material of the final position as a Syzygy table name, the stronger side first (e.g. KBBvKN), "
        "when it has at most 7 pieces (the largest tablebases); null with more",
        None,
    ),
    (
        "final_tb_wdl",
        pa.int8(),
        "--syzygy: the tablebase value of the final position for the side to move (2 win, 1 cursed win, 0 draw, "
        "-1 blessed loss, -2 loss); null with more pieces than the tables hold or without a table",
        None,
    ),
    (
        "final_tb_dtz",
        pa.int16(),
        "--syzygy: DTZ of the final position (python-chess probe_dtz) where it is also a 50- or 75-move event "
        "(probed there), a draw (0) or mate (-1); null elsewhere (a DTZ probe costs ~1.3 ms: docs/measures.md)",
        "plies",
    ),
    (
        "data_issue",
        _DICT,
        "known data issues of the Lichess database that concern this game (ids joined by ';': its dump's month, "
        "its day for the day-long ones; docs/lichess-data-issues.md); null for none or another input",
        None,
    ),
    (
        "dead_position_ply",
        pa.int32(),
        "chess: first position from which no series of legal moves leads to a mate by either side (a dead "
        "position: FIDE 5.2.2), not mate or stalemate; as proved by the kernel (docs/rules.md, dead positions)",
        "ply",
    ),
    (
        "dead_position_proof",
        _DICT,
        "why that position is dead: unwinnable:insufficient_material, unwinnable:blocked, or one kind per side "
        "(white's first) joined by +",
        None,
    ),
    (
        "timeout_winner_can_mate",
        _DICT,
        "chess, a game lost on time (Termination 'Time forfeit', 1-0 or 0-1): could the winner still checkmate "
        "from the final position by any series of legal moves (FIDE 6.9): winnable, unwinnable, unknown "
        "(the work budget spent); null for other games",
        None,
    ),
    (
        "timeout_certificate",
        pa.string(),
        "for such a game: the winner's mate as UCI moves from the final position (both sides' moves, "
        "replayable), or unwinnable:<proof kind>, or unknown:budget",
        None,
    ),
]
VERDICTS_COLUMNS = _KEY + [
    ("edition", _DICT, "rule edition: fide_2018, lichess, fshr_russian, ...", None),
    ("game_index", pa.int64(), "0-based index of the game within its source", None),
    (
        "first_threefold_ply",
        pa.int32(),
        "first position that is an N-th occurrence (N = the edition's claim count)",
        "ply",
    ),
    (
        "first_threefold_claim_ply",
        pa.int32(),
        "first position where threefold can be claimed, on the board or by a written move",
        "ply",
    ),
    ("first_fifty_ply", pa.int32(), "first position with the edition's 50-move count reached and a legal move", "ply"),
    (
        "first_fifty_claim_ply",
        pa.int32(),
        "first position where the 50-move draw can be claimed, on the board or by a written move",
        "ply",
    ),
    ("first_fivefold_ply", pa.int32(), "first position where the automatic repetition rule applies", "ply"),
    (
        "first_seventyfive_ply",
        pa.int32(),
        "first position where the automatic move-count rule applies (mate first)",
        "ply",
    ),
    ("first_missed_claim_ply", pa.int32(), "first claim chance on the board after which the game went on", "ply"),
    ("missed_claim_rule", _DICT, "rule of that chance", None),
    ("missed_claim_side", _DICT, "the side to move there (the player who could claim)", None),
    ("missed_claim_result", _DICT, "the recorded result seen from that side: win, draw, loss", None),
    ("plies_after_missed_claim", pa.int32(), "plies played after that chance", "plies"),
    ("missed_claim_clock_seconds", pa.float32(), "that side's clock at the chance ([%clk])", "seconds"),
    (
        "first_avoided_claim_ply",
        pa.int32(),
        "first written-move chance whose played move did not make the position claimable",
        "ply",
    ),
    ("avoided_claim_rule", _DICT, "rule of that chance", None),
    ("avoided_claim_side", _DICT, "the side to move there", None),
    ("draw_reason", _DICT, "drawn games: why, as far as the moves tell (agreement otherwise)", None),
    ("end_ply", pa.int32(), "counterfactual: first position where the edition's automatic rules end the game", "ply"),
    ("end_rule", _DICT, "the automatic rule at end_ply", None),
    ("end_result", _DICT, "the result the automatic rule gives (1/2-1/2)", None),
    ("result_changed", pa.bool_(), "an automatic rule would have ended a game recorded as decisive", None),
    ("first_balance_ply", pa.int32(), "draughts: balance of forces unchanged for the limit (32.3; FMJD 7.2.6)", "ply"),
    ("first_kings_vs_king_ply", pa.int32(), "draughts: 3+ kings vs a lone king not captured in time", "ply"),
    ("first_main_diagonal_ply", pa.int32(), "draughts: 3 kings vs a king on the main diagonal", "ply"),
    ("first_small_ending_ply", pa.int32(), "draughts: 2 kings / king + man vs a man or king", "ply"),
    (
        "claimed_ply",
        pa.int32(),
        "first chance whose outcome is claimed (the game ended on it, recorded drawn): the last position, "
        "or the one before it for a claim by a written move recorded as the last move; null if none",
        "ply",
    ),
    ("claimed_rule", _DICT, "rule of that chance (threefold first when both)", None),
    (
        "counterfactual",
        pa.bool_(),
        "the edition is a counterfactual rule set, never in force (no_fifty, stalemate_win, custom editions "
        "marked so): its verdicts say what such a rule would have done",
        None,
    ),
    (
        "final_win_in_time",
        pa.bool_(),
        "--syzygy: at the final position, could the side that wins by the tablebase (final_tb_wdl) make its "
        "next zeroing move before the halfmove clock reaches the edition's count for that material (its "
        "claim count, else its automatic one; none: true): final_halfmove_clock + |final_tb_dtz| <= count, or "
        "without final_tb_dtz what WDL decides (a win with clock + 100 <= count: true; a cursed win and a count "
        "of at most 100: false); null otherwise, for a draw, and under editions where stalemate is not a draw "
        "(docs/measures.md)",
        None,
    ),
    (
        "dead_position_ply",
        pa.int32(),
        "chess: the first dead position, under editions where a dead position ends the game (FIDE); "
        "null under the others (lichess) and when there is none",
        "ply",
    ),
    (
        "timeout_unwinnable",
        pa.bool_(),
        "a loss on time (1-0/0-1, Termination 'Time forfeit'): the winner could not checkmate, by the "
        "edition's test (FIDE 6.9: no series of legal moves mates; lichess: insufficient material); null for "
        "other games and where the answer is unknown",
        None,
    ),
]
EVENTS_COLUMNS = _KEY + [
    ("edition", _DICT, "rule edition", None),
    ("game_index", pa.int64(), "0-based index of the game within its source", None),
    ("ply", pa.int32(), "the position of the chance", "ply"),
    (
        "rule",
        _DICT,
        "threefold, fifty, fivefold, seventyfive, insufficient_material, offer, dead_position, "
        "timeout_vs_unwinnable; draughts rules",
        None,
    ),
    ("kind", _DICT, "claim_now (on the board), claim_intended (by a written move), automatic, offer", None),
    ("side", _DICT, "the side entitled (the side to move; for offers, the side that offered)", None),
    ("repetition_count", pa.int16(), "occurrences of the position so far", None),
    ("halfmove_clock", pa.int32(), "halfmove clock (draughts: the rule's counter)", "plies"),
    ("clock_seconds", pa.float32(), "clock of the side to move ([%clk])", "seconds"),
    ("outcome", _DICT, "claimed, missed, avoided, passed_on, automatic, ended (docs/measures.md)", None),
    (
        "eval_cp",
        pa.int32(),
        "the evaluation the input stores for this position ([%eval V] after the move that led here, as "
        "python-chess's GameNode.eval() reads it), centipawns from White's view; null if none or a mate",
        "centipawns",
    ),
    (
        "eval_mate",
        pa.int16(),
        "[%eval #N]: mate in N moves, from White's view (N > 0: White mates; 0: the side to move is mated)",
        "moves",
    ),
    (
        "win_chance",
        pa.float32(),
        "the side to move's win chance by Lichess's formula 50 + 50 (2 / (1 + exp(-0.00368208 cp)) - 1), cp "
        "from the side to move's view clamped to +-1000, a mate +-1000; null without an evaluation",
        "percent",
    ),
    (
        "material",
        pa.string(),
        "50- and 75-move events: the material of the window (a Syzygy table name, the stronger side first, "
        "e.g. KBBvKN); null for other rules",
        None,
    ),
    (
        "limit_plies",
        pa.int32(),
        "50- and 75-move events: the edition's count for this rule in this window (100 = 50 moves; by material "
        "under fide_1988 and editions with limits)",
        "plies",
    ),
    (
        "tb_wdl",
        pa.int8(),
        "--syzygy, 50- and 75-move events: the tablebase value for the side to move (python-chess probe_wdl: "
        "2 win, 1 cursed win, 0 draw, -1 blessed loss, -2 loss); null where no table covers the position",
        None,
    ),
    (
        "tb_dtz",
        pa.int16(),
        "--syzygy: plies to the next zeroing move with best play, signed as tb_wdl (python-chess probe_dtz; "
        "may be one short, see docs/measures.md)",
        "plies",
    ),
    (
        "win_in_time",
        pa.bool_(),
        "--syzygy: could the side that wins by the tablebase make its next zeroing move before the halfmove "
        "clock reaches limit_plies, counted from halfmove_clock: halfmove_clock + |tb_dtz| <= limit_plies; "
        "null for draws and without a value",
        None,
    ),
    (
        "certificate",
        pa.string(),
        "dead_position and timeout_vs_unwinnable: why no mate was possible, unwinnable:<proof kind> "
        "(docs/rules.md); null for other rules",
        None,
    ),
]


def _schema(columns) -> pa.Schema:
    return pa.schema([(name, typ) for name, typ, _, _ in columns])


GAMES_SCHEMA = _schema(GAMES_COLUMNS)
VERDICTS_SCHEMA = _schema(VERDICTS_COLUMNS)
EVENTS_SCHEMA = _schema(EVENTS_COLUMNS)
SCHEMAS = {"games": GAMES_SCHEMA, "verdicts": VERDICTS_SCHEMA, "events": EVENTS_SCHEMA}


def data_dictionary() -> dict:
    """Column, type, meaning and unit of every table (written as OUT/_dataset.json)."""
    out = {}
    for table, cols in (("games", GAMES_COLUMNS), ("verdicts", VERDICTS_COLUMNS), ("events", EVENTS_COLUMNS)):
        out[table] = [{"column": n, "type": str(t), "meaning": m, "unit": u} for n, t, m, u in cols]
    return out


# ---------------------------------------------------------------------------------------------
# What a kind hands over for a block


EVENT_TYPES = {
    "game": np.int64,
    "ply": np.int32,
    "rule": np.int8,
    "kind": np.int8,
    "side": np.int8,
    "reps": np.int16,
    "hmc": np.int32,
    "clock": np.float32,
}


def event_buffers(cap: int) -> dict:
    return {name: np.empty(cap, dtype) for name, dtype in EVENT_TYPES.items()}


def run_rule_kernel(call, cap: int) -> dict:
    """Call a rule kernel `call(events) -> n` with event arrays of `cap` rows, again with room
    if it reports more events than fit; the events trimmed to their number."""
    cap = max(cap, 16)
    while True:
        ev = event_buffers(cap)
        n = call(ev)
        if n <= cap:
            return {k: v[:n] for k, v in ev.items()}
        cap = n


@dataclass
class EditionResult:
    """A rule kernel's output for one edition: the verdict matrix (n x codes.N_VERDICT, int32,
    -1 = null; the missed/avoided columns are filled by the builder) and the events."""

    edition: str
    verdicts: np.ndarray
    events: dict
    counterfactual: bool = False  # the edition is a rule set never in force (no_fifty, stalemate_win)
    # further columns a kind computes itself: name -> Arrow array (one row per event / per game)
    event_columns: dict = field(default_factory=dict)
    verdict_columns: dict = field(default_factory=dict)


@dataclass
class BlockOutput:
    """A kind's analysis of a block of n games (numpy arrays of length n unless noted)."""

    headers: dict  # column name -> Arrow array (the kind's headers; absent ones null)
    status: np.ndarray  # codes.S_*
    messages: dict  # game -> error message or note
    error_ply: np.ndarray  # -1 = null
    plies: np.ndarray  # -1 = not replayed
    game_facts: np.ndarray  # n x codes.N_GAME_FACTS, -1 = null
    has_clock: np.ndarray  # bool
    result_code: np.ndarray  # codes.RESULT_*
    editions: list = field(default_factory=list)  # EditionResult per edition
    facts: dict | None = None  # per-ply facts, for tests (keep_facts)
    extra: dict = field(default_factory=dict)  # kind-specific games columns (name -> Arrow array)
    notes: dict = field(default_factory=dict)  # counts for the scan's summary: {group: {name: n}}
    # The events' `certificate` text by rule code: {rule: {game: text}}; an event of that rule gets
    # its game's text (the others: null)
    certificates: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# The builder


def coded(col, names) -> pa.DictionaryArray:
    """Codes (-1 = null) as a dictionary column of `names`, without a Python string per row."""
    col = np.asarray(col)
    return pa.DictionaryArray.from_arrays(
        pa.array(col.astype(np.int32), mask=col < 0), pa.array(list(names), pa.string())
    )


def constant(value: str, n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))


def _opt_int(col, dtype=np.int32) -> pa.Array:
    col = np.asarray(col)
    return pa.array(col.astype(dtype), mask=col < 0)


def _opt_bool(col) -> pa.Array:
    col = np.asarray(col)
    return pa.array(col > 0, mask=col < 0)


_TC_CLASSES = ("ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence", "unknown")


def time_control_class(text: str | None) -> str:
    """Lichess's estimate of a game's duration, base + 40 x increment seconds: ultrabullet
    < 30 s, bullet < 180, blitz < 480, rapid < 1500, classical otherwise; '-' is
    correspondence; PGN's 'moves/seconds' counts the first period; no tag or anything else is
    `unknown` (a class of its own, so that such games are counted, not dropped)."""
    if text is None:
        return "unknown"
    t = text.strip()
    if t == "-":
        return "correspondence"
    est = None
    head = t.split(":")[0]
    if "/" in head:
        secs = head.split("/", 1)[1]
        est = int(secs) if secs.isdigit() else None
    else:
        base, _, inc = head.partition("+")
        if base.isdigit() and (inc == "" or inc.isdigit()):
            est = int(base) + 40 * int(inc or 0)
    if est is None:
        return "unknown"
    for limit, name in ((30, "ultrabullet"), (180, "bullet"), (480, "blitz"), (1500, "rapid")):
        if est < limit:
            return name
    return "classical"


def _derived_tc(tc: pa.Array) -> pa.Array:
    if not pa.types.is_dictionary(tc.type):
        tc = ac.dictionary_encode(tc)
    classes = [time_control_class(v) for v in tc.dictionary.to_pylist()]
    codes_ = np.array([_TC_CLASSES.index(c) for c in classes] + [_TC_CLASSES.index("unknown")], np.int32)
    idx = ac.fill_null(tc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return coded(codes_[idx], _TC_CLASSES)


_BANDS = tuple(f"{lo:04d}-{lo + 199:04d}" for lo in range(0, 4000, 200))


def _rating_band(white: pa.Array, black: pa.Array) -> pa.Array:
    w = (
        white.to_numpy(zero_copy_only=False)
        if white.null_count == 0
        else ac.fill_null(white, 0).to_numpy(zero_copy_only=False)
    )
    b = (
        black.to_numpy(zero_copy_only=False)
        if black.null_count == 0
        else ac.fill_null(black, 0).to_numpy(zero_copy_only=False)
    )
    ok = (w > 0) & (b > 0)
    band = np.where(ok, np.clip(((w.astype(np.int64) + b) // 2) // 200, 0, len(_BANDS) - 1), -1)
    return coded(band, _BANDS)


_PLATFORMS = ("lichess", "chess.com", "otb", "other")
_ONLINE = r"://|www\.|\.com\b|\.org\b|\.net\b|internet|\bicc\b|\bfics\b|playchess|chess24|online|lidraughts"


_BROADCAST = "https://lichess.org/broadcast/"


def _platform(site: pa.Array, event: pa.Array, broadcast_name: pa.Array | None = None) -> pa.Array:
    """lichess / chess.com by name in Site or Event; other when Site or Event names a server or
    a URL, or Site is unknown; otb when Site names a place, and for the over-the-board games
    that Lichess relays (broadcasts: a BroadcastName tag, or a Site on lichess.org/broadcast/)."""
    # Lichess games (a Lichess dump is all of them) are told by a prefix test alone; the
    # lower-casing and the regular expressions run only on the other rows.
    code = np.zeros(len(site), np.int64)
    lichess_site = ac.fill_null(ac.starts_with(site, "https://lichess.org/"), False).to_numpy(zero_copy_only=False)
    relayed = np.zeros(len(site), np.bool_)
    if broadcast_name is not None and broadcast_name.null_count < len(broadcast_name):
        relayed |= ac.is_valid(broadcast_name).to_numpy(zero_copy_only=False)
    if lichess_site.any():
        relayed |= ac.fill_null(ac.starts_with(site, _BROADCAST), False).to_numpy(zero_copy_only=False)
    lichess_site &= ~relayed
    code[relayed] = 2
    rest = np.flatnonzero(~lichess_site & ~relayed)
    if len(rest):
        idx = pa.array(rest)
        s = ac.utf8_lower(ac.fill_null(ac.take(site, idx), ""))
        e = ac.utf8_lower(ac.fill_null(ac.take(event, idx), ""))
        both = ac.join_with(s, e, " | ")
        lichess = ac.match_substring(both, "lichess.org").to_numpy(zero_copy_only=False)
        chesscom = ac.match_substring(both, "chess.com").to_numpy(zero_copy_only=False)
        online = ac.match_substring_regex(both, _ONLINE).to_numpy(zero_copy_only=False)
        unknown = ac.match_substring_regex(s, r"^\s*(\?*|-)\s*$").to_numpy(zero_copy_only=False)
        code[rest] = np.where(lichess, 0, np.where(chesscom, 1, np.where(online | unknown, 3, 2)))
    return coded(code, _PLATFORMS)


def _date(utc_date: pa.Array, date_tag: pa.Array) -> pa.Array:
    """A date from UTCDate, else Date; parsed once per distinct text (a dump has a month's)."""
    raw = ac.dictionary_encode(ac.coalesce(utc_date, date_tag))
    words = ac.utf8_trim_whitespace(raw.dictionary)
    out = None
    for fmt in ("%Y.%m.%d", "%Y-%m-%d", "%Y/%m/%d"):
        d = ac.strptime(words, fmt)
        out = d if out is None else ac.coalesce(out, d)
    if out is None or len(words) == 0:
        return pa.nulls(len(raw), pa.date32())
    return ac.take(ac.cast(out, pa.date32()), raw.indices)


def _side_result(result_code: np.ndarray, side: np.ndarray) -> np.ndarray:
    """The recorded result from `side`'s view: codes.SR_* (-1 when side or result unknown)."""
    out = np.full(len(side), -1, np.int32)
    out[(result_code == codes.RESULT_DRAW) & (side >= 0)] = codes.SR_DRAW
    decisive = ((result_code == codes.RESULT_WHITE) | (result_code == codes.RESULT_BLACK)) & (side >= 0)
    won = (result_code == codes.RESULT_WHITE) == (side == codes.WHITE)
    out[decisive & won] = codes.SR_WIN
    out[decisive & ~won] = codes.SR_LOSS
    return out


def build(
    block: BlockOutput, *, source: str, game_type: str, first_game_index: int, byte_offsets: np.ndarray
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The games, verdicts and events tables of a block (of source `source`: the folder they are
    written to names it; no column holds it)."""
    n = len(block.status)
    h = block.headers
    header = {
        name: h[name] if name in h else pa.nulls(n, GAMES_SCHEMA.field(name).type)
        for name in (
            "event",
            "site",
            "white",
            "black",
            "result",
            "white_elo",
            "black_elo",
            "time_control",
            "termination",
            "eco",
            "utc_date",
            "utc_time",
            "date_tag",
            "variant",
            "start_fen",
            "white_fide_id",
            "black_fide_id",
            "board",
            "broadcast_name",
            "game_url",
        )
    }
    index = pa.array(np.arange(first_game_index, first_game_index + n, dtype=np.int64))
    if block.messages:
        err = np.full(n, None, dtype=object)
        err[list(block.messages)] = list(block.messages.values())
        error = pa.array(err, pa.string())
    else:
        error = pa.nulls(n, pa.string())
    facts = block.game_facts
    replayed = np.asarray(block.plies) >= 0
    games = {
        "game_type": constant(game_type, n),
        "game_index": index,
        "byte_offset": pa.array(np.asarray(byte_offsets, np.int64)),
        **header,
        "platform": _platform(header["site"], header["event"], header["broadcast_name"]),
        "time_control_class": _derived_tc(header["time_control"]),
        "rating_band": _rating_band(header["white_elo"], header["black_elo"]),
        "date": _date(header["utc_date"], header["date_tag"]),
        "has_clock": pa.array(np.asarray(block.has_clock, np.bool_), mask=~replayed),
        "status": coded(block.status, codes.STATUSES),
        "error": error,
        "error_ply": _opt_int(block.error_ply),
        "plies": _opt_int(block.plies),
    }
    for c, name in enumerate(codes.GAME_FACT_COLUMNS):
        col = facts[:, c]
        if name.startswith("final_is") or name == "final_insufficient_material":
            games[name] = _opt_bool(col)
        elif name == "final_repetition_count":
            games[name] = _opt_int(col, np.int16)
        else:
            games[name] = _opt_int(col)
    games.update(block.extra)
    games_t = conform(pa.table(games), GAMES_SCHEMA)

    plies = np.where(replayed, block.plies, -1).astype(np.int64)
    v_tables, e_tables = [], []
    for ed in block.editions:
        out = ed.verdicts
        ev = ed.events
        m = len(ev["game"])
        missed_clock = np.empty(n, np.float32)
        outcome = np.empty(m, np.int8)
        measures_kernels.apply_measures(
            m,
            plies,
            block.result_code,
            ev["game"],
            ev["ply"],
            ev["rule"],
            ev["kind"],
            ev["side"],
            ev["clock"],
            out,
            missed_clock,
            outcome,
        )
        cols = {
            "game_type": constant(game_type, n),
            "edition": constant(ed.edition, n),
            "game_index": index,
        }
        for c, name in enumerate(codes.VERDICT_COLUMNS):
            vocab = codes.VERDICT_CODED.get(name)
            if vocab:
                cols[name] = coded(out[:, c], vocab)
            elif name in codes.VERDICT_BOOL:
                cols[name] = _opt_bool(out[:, c])
            else:
                cols[name] = _opt_int(out[:, c])
        missed = out[:, codes.V_MISSED_PLY]
        cols["missed_claim_result"] = coded(
            _side_result(block.result_code, out[:, codes.V_MISSED_SIDE]), codes.SIDE_RESULTS
        )
        cols["plies_after_missed_claim"] = pa.array((plies - missed).astype(np.int32), mask=missed < 0)
        cols["missed_claim_clock_seconds"] = pa.array(missed_clock, mask=np.isnan(missed_clock))
        end = out[:, codes.V_END_PLY]
        end_result = np.where(
            end >= 0, np.where(out[:, codes.V_END_RESULT] >= 0, out[:, codes.V_END_RESULT], codes.RESULT_DRAW), -1
        )
        cols["end_result"] = coded(end_result, codes.RESULTS)
        cols["result_changed"] = pa.array(
            (end >= 0) & (block.result_code != end_result), mask=block.result_code == codes.RESULT_UNKNOWN
        )
        cols["counterfactual"] = pa.array(np.full(n, ed.counterfactual, np.bool_))
        cols.update(ed.verdict_columns)
        v_tables.append(conform(pa.table(cols), VERDICTS_SCHEMA))
        reps = ev["reps"]
        e_tables.append(
            conform(
                pa.table(
                    {
                        "game_type": constant(game_type, m),
                        "edition": constant(ed.edition, m),
                        "game_index": pa.array(ev["game"].astype(np.int64) + first_game_index),
                        "ply": pa.array(ev["ply"]),
                        "rule": coded(ev["rule"], codes.RULES),
                        "kind": coded(ev["kind"], codes.KINDS),
                        "side": coded(ev["side"], codes.SIDES),
                        "repetition_count": pa.array(reps, mask=reps < 0),
                        "halfmove_clock": pa.array(ev["hmc"]),
                        "clock_seconds": pa.array(ev["clock"], mask=np.isnan(ev["clock"])),
                        "outcome": coded(outcome, codes.OUTCOMES),
                        **ed.event_columns,
                        "certificate": _certificates(block.certificates, ev["game"], ev["rule"]),
                    }
                ),
                EVENTS_SCHEMA,
            )
        )
    verdicts_t = pa.concat_tables(v_tables) if v_tables else VERDICTS_SCHEMA.empty_table()
    events_t = pa.concat_tables(e_tables) if e_tables else EVENTS_SCHEMA.empty_table()
    return games_t, verdicts_t, events_t


def _certificates(by_rule: dict, game: np.ndarray, rule: np.ndarray) -> pa.Array:
    """The events' certificate column: the game's text for the rules in `by_rule`, else null."""
    m = len(game)
    if not by_rule or m == 0:
        return pa.nulls(m, pa.string())
    out = np.full(m, None, dtype=object)
    for r, per_game in by_rule.items():
        for e in np.flatnonzero(rule == r).tolist():
            out[e] = per_game.get(int(game[e]))
    return pa.array(out, pa.string())


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Add missing columns as nulls, order and cast to `schema` (dictionary columns encoded)."""
    n = table.num_rows
    index = {name: i for i, name in enumerate(table.schema.names)}  # (table.column_names is slow)
    cols = []
    for fld in schema:
        i = index.get(fld.name)
        if i is not None:
            col = table.column(i)
            if col.type != fld.type:
                if pa.types.is_dictionary(fld.type) and not pa.types.is_dictionary(col.type):
                    col = ac.dictionary_encode(ac.cast(col, pa.string()))
                    col = ac.cast(col, fld.type)
                else:
                    col = ac.cast(col, fld.type)
            cols.append(col)
        else:
            cols.append(pa.nulls(n, fld.type))
    return pa.Table.from_arrays(cols, schema=schema)
