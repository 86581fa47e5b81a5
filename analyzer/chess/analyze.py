"""One block of PGN text -> the `games` and `events` tables for each requested edition.

Python here works per block (megabytes), never per ply: tags, replay and rules are numba
kernels over the whole block; Arrow columns are built from flat buffers. Every game, Chess960
included, is replayed by the kernels: python-chess only sets up start positions other than the
standard one ([FEN], Chess960), once per distinct (variant, FEN) of a block, cached across
blocks. Errors get their messages in Python, game by game.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analyzer import tables
from analyzer.chess import _replay as R
from analyzer.chess._tables import CT_CHESS960, CT_ROOK, CT_SIZE, STANDARD_CASTLING
from analyzer.editions import IDENTITY_FIDE_1997, ChessEdition
from analyzer.pgn import _scan
from analyzer.rules import _kernels as K
from analyzer.variants import variant_code

TAG_NAMES = ("Event", "Site", "White", "Black", "Result", "WhiteElo", "BlackElo", "TimeControl",
             "Termination", "ECO", "UTCDate", "UTCTime", "Date", "Variant", "FEN", "SetUp")
_T = {name: i for i, name in enumerate(TAG_NAMES)}
_NAMES_BUF = np.frombuffer("".join(TAG_NAMES).encode(), dtype=np.uint8).copy()
_NAMES_OFF = np.cumsum([0] + [len(n) for n in TAG_NAMES]).astype(np.int64)

_STANDARD_VARIANTS = {"", "standard", "chess", "from position", "fromposition", "normal"}
# python-chess's spellings (chess.pgn.Headers.is_chess960), and "960".
_CHESS960_VARIANTS = {"chess960", "chess 960", "fischerandom", "fischerrandom", "fischer random", "960"}
STATUS_INDEX = {s: i for i, s in enumerate(tables.STATUS_CODES)}


@dataclass
class BlockResult:
    games: pa.Table
    events: pa.Table
    facts: dict | None
    n_games: int


def _start_arrays(board):
    """(bitboards, mailbox, state, castling table) of a python-chess Board, as the replay kernel
    takes them. The castling rights are python-chess's (`clean_castling_rights`, under the
    board's own rules: X-FEN KQkq = the outermost rooks, Shredder-FEN file letters, standard);
    each right becomes a bit (WK, WQ, BK, BQ: the rook on the king's h-side or a-side), the table
    holds its rook's square and the squares whose move loses it (that rook's and the king's)."""
    import chess

    bb = np.zeros(8, np.uint64)
    mb = np.zeros(64, np.int8)
    for sq, piece in board.piece_map().items():
        bb[piece.piece_type - 1] |= np.uint64(1 << sq)
        bb[6 + (0 if piece.color else 1)] |= np.uint64(1 << sq)
        mb[sq] = piece.piece_type
    ct = np.zeros(CT_SIZE, np.int64)
    ct[CT_ROOK:CT_ROOK + 4] = -1
    ct[CT_CHESS960] = 1 if board.chess960 else 0
    c = 0
    for sq in chess.scan_forward(board.clean_castling_rights()):
        color = 0 if sq < 8 else 1
        king = board.king(color == 0)       # on sq's rank: python-chess cleaned the rights
        i = (0 if sq > king else 1) + 2 * color
        c |= 1 << i
        ct[CT_ROOK + i] = sq
        ct[sq] |= 1 << i
        ct[king] |= 1 << i
    ep = -1 if board.ep_square is None else board.ep_square
    st = np.array([0 if board.turn else 1, c, ep, board.halfmove_clock], np.int64)
    return bb, mb, st, ct


def _standard_start():
    """_start_arrays(chess.Board()) without importing python-chess (~60 ms of every scan's
    start-up; tests/test_polyglot.py checks the two agree)."""
    back = (4, 2, 3, 5, 6, 3, 2, 4)                    # a1..h1: R N B Q K B N R
    mb = np.zeros(64, np.int8)
    mb[0:8] = back
    mb[8:16] = 1
    mb[48:56] = 1
    mb[56:64] = back
    bb = np.zeros(8, np.uint64)
    for sq in np.nonzero(mb)[0]:
        bb[mb[sq] - 1] |= np.uint64(1 << int(sq))
        bb[6 if sq < 32 else 7] |= np.uint64(1 << int(sq))
    st = np.array([0, 15, -1, 0], np.int64)           # white to move, KQkq, no e.p., clock 0
    return bb, mb, st, STANDARD_CASTLING.copy()


_STD_START = _standard_start()


@functools.lru_cache(maxsize=4096)
def _parse_start(fen: str | None, chess960: bool):
    """(start arrays, None) of a game's start position, or (None, message) if it is invalid;
    as python-chess sets up a game (chess.pgn.Headers.board): the FEN (default: the standard
    start) under Chess960 rules if the variant is Chess960 or the FEN's castling rights only
    make sense in Chess960. Cached: a Chess960 dump has at most 960 distinct start FENs."""
    import chess

    try:
        board = chess.Board(chess.STARTING_FEN if fen is None else fen, chess960=chess960)
        board.chess960 = board.chess960 or board.has_chess960_castling_rights()
        ok = board.is_valid()
    except ValueError as exc:
        ok = False
        reason = str(exc)
    else:
        reason = ", ".join(s.name for s in chess.Status if s and board.status() & s) if not ok else ""
    if not ok:
        return None, f"invalid [FEN \"{fen}\"]: {reason}"
    return _start_arrays(board), None


_FACT_TYPES = {"key": np.uint64, "hmc": np.int32, "flags": np.uint16, "rep_next": np.int8,
               "rep_next97": np.int8, "clock": np.float32}
_workspace = threading.local()


def _fact_buffers(cap: int) -> dict:
    """Per-thread replay output arrays of at least `cap` positions, reused from block to block:
    fresh ones (tens of MB at the worst-case capacity) cost an mmap, page faults and an munmap
    per block. Valid until the thread's next block (keep_facts callers get copies)."""
    bufs = getattr(_workspace, "facts", None)
    if bufs is None or len(bufs["key"]) < cap:
        bufs = {name: np.empty(cap, dtype) for name, dtype in _FACT_TYPES.items()}
        _workspace.facts = bufs
    return bufs


def _strings(buf, vs, ve, esc) -> pa.Array:
    """Arrow string array from value byte ranges (null where absent), UTF-8 checked."""
    return _strings_exact(buf, vs, ve, esc)[0]


def _strings_exact(buf, vs, ve, esc) -> tuple[pa.Array, bool]:
    """_strings, and whether every value is its bytes as UTF-8 (False: some were decoded with
    replacement characters, so different byte strings may have become equal)."""
    n = len(vs)
    lengths = np.where(vs >= 0, ve - vs, 0)
    offsets = np.empty(n + 1, np.int32)
    data = np.empty(max(int(lengths.sum()), 1), np.uint8)
    _scan.gather_strings(buf, vs, ve, esc, offsets, data)
    valid = vs >= 0
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), bitmap)
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        # Non-UTF-8 bytes (Latin-1 exports, damage): decode each value with replacement.
        raw = data.tobytes()
        vals = [raw[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") if valid[i] else None
                for i in range(n)]
        return pa.array(vals, pa.string()), False
    return arr, True


def _dict_strings(buf, vs, ve, esc) -> tuple[pa.DictionaryArray, np.ndarray]:
    """A dictionary string column (the tables' int32 dictionary type) and its codes (-1 =
    null), encoded by a kernel over the value bytes: the distinct values (a few per block for
    Result, TimeControl, ...) are the only strings built."""
    n = len(vs)
    codes = np.empty(n, np.int32)
    first = np.empty(max(n, 1), np.int64)
    table = np.full(1 << max(4, (2 * n).bit_length()), -1, np.int64)
    u = _scan.dictionary_codes(buf, vs, ve, esc, codes, first, table)
    if u >= 0:
        f = first[:u]
        dictionary, exact = _strings_exact(buf, vs[f], ve[f], esc[f])
        if exact or pc.count_distinct(dictionary).as_py() == u:  # undecodable bytes may make two alike
            return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), dictionary), codes
    arr = _strings(buf, vs, ve, esc).dictionary_encode()
    codes = arr.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return arr, codes


def _dict_lookup(codes: np.ndarray, values_mask) -> np.ndarray:
    """Per row: is the row's value one of those where `values_mask` (over the dictionary) is
    True? False for null rows (code -1)."""
    hit = np.append(np.asarray(values_mask, np.bool_), False)   # code -1 -> the extra False
    return hit[codes]


def _ints(buf, vs, ve) -> pa.Array:
    out = np.zeros(len(vs), np.int64)
    valid = np.zeros(len(vs), np.bool_)
    _scan.parse_int_values(buf, vs, ve, out, valid)
    return pa.array(out.astype(np.int32), mask=~valid)


def _text(buf, a, b) -> str:
    return bytes(buf[a:b]).decode("utf-8", "replace")


def analyze_block(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, source: str,
                  first_game_index: int, base_offset: int, editions: list[ChessEdition],
                  keep_facts: bool = False, extra_status: dict | None = None,
                  default_variant: int | None = None) -> BlockResult:
    """Analyze the games buf[starts[i]:ends[i]]. `extra_status` maps game i -> (status, message)
    decided by the reader (e.g. game_too_large, truncated): such games are not replayed.
    `default_variant` (analyzer.variants V_* code, e.g. from `variant_from_filename`) is the
    variant of games without a [Variant] tag; games of the seven Lichess variants other than
    Chess960 are replayed by analyzer.variants."""
    n = len(starts)
    nt = len(TAG_NAMES)
    val_s = np.empty((n, nt), np.int64)
    val_e = np.empty((n, nt), np.int64)
    esc = np.empty((n, nt), np.bool_)
    mt_start = np.empty(n, np.int64)
    _scan.parse_tags(buf, starts, ends, _NAMES_BUF, _NAMES_OFF, val_s, val_e, esc, mt_start)

    def col(name):
        t = _T[name]
        return _strings(buf, val_s[:, t], val_e[:, t], esc[:, t])

    def dict_col(name):
        t = _T[name]
        return _dict_strings(buf, val_s[:, t], val_e[:, t], esc[:, t])

    # Start positions: standard unless the game has [FEN] or a [Variant] other than standard.
    # The others are set up in Python once per distinct (variant, FEN) of the block.
    variant_col, variant_codes = dict_col("Variant")
    init_idx = np.zeros(n, np.int64)
    pre_status = np.full(n, -1, np.int64)
    messages: dict[int, str] = {}
    inits = [_STD_START]
    variants = [v.strip().lower() for v in variant_col.dictionary.to_pylist()]
    plain_variant = (variant_codes < 0) | _dict_lookup(variant_codes, [v in _STANDARD_VARIANTS for v in variants])
    has_fen = val_s[:, _T["FEN"]] >= 0
    # The Lichess variants other than Chess960 (analyzer.variants): by [Variant] tag, or
    # default_variant for games without one. Replayed after the chess games (splice_variants).
    game_vc = np.full(n, -1, np.int64)
    tag_vc = [variant_code(v) for v in variants]
    if any(c is not None for c in tag_vc):
        game_vc = np.array([-1 if c is None else c for c in tag_vc] + [-1], np.int64)[variant_codes]
    if default_variant is not None:
        game_vc[variant_codes < 0] = default_variant
    is_variant = game_vc >= 0
    init_idx[is_variant] = -1
    special = np.nonzero((has_fen | ~plain_variant) & ~is_variant)[0]
    if len(special):
        fen_codes = np.full(n, -1, np.int32)
        fens: list = []
        if has_fen.any():
            fen_col, fen_codes = dict_col("FEN")
            fens = [f.strip() for f in fen_col.dictionary.to_pylist()]
        combo = (variant_codes[special].astype(np.int64) + 1) * (len(fens) + 1) + (fen_codes[special] + 1)
        uniq, inverse = np.unique(combo, return_inverse=True)
        u_init = np.full(len(uniq), -1, np.int64)
        u_status = np.full(len(uniq), -1, np.int64)
        u_message: list = [None] * len(uniq)
        for u, c in enumerate(uniq.tolist()):
            vc, fc = divmod(c, len(fens) + 1)
            variant = variants[vc - 1] if vc > 0 else ""
            fen = fens[fc - 1] if fc > 0 else None
            if variant not in _STANDARD_VARIANTS and variant not in _CHESS960_VARIANTS:
                u_status[u] = STATUS_INDEX["unsupported_variant"]
                u_message[u] = f"variant {variant!r} is not analyzed (standard chess and Chess960 only)"
                continue
            arrays, error = _parse_start(fen, variant in _CHESS960_VARIANTS)
            if error is not None:
                u_status[u] = STATUS_INDEX["bad_fen"]
                u_message[u] = error
                continue
            u_init[u] = len(inits)
            inits.append(arrays)
        init_idx[special] = u_init[inverse]
        pre_status[special] = u_status[inverse]
        for i in np.nonzero(u_status[inverse] >= 0)[0]:
            messages[int(special[i])] = u_message[inverse[i]]
    if extra_status:
        for g, (code, msg) in extra_status.items():
            init_idx[g] = -1
            pre_status[g] = STATUS_INDEX[code]
            messages[g] = msg
            is_variant[g] = False
    variant_games = np.nonzero(is_variant)[0]
    init_bb = np.stack([x[0] for x in inits])
    init_mb = np.stack([x[1] for x in inits])
    init_st = np.stack([x[2] for x in inits])
    init_ct = np.stack([x[3] for x in inits])

    fifty_min = min(ed.min_claim_clock for ed in editions)
    mt_len = np.where(init_idx >= 0, ends - mt_start, 0)
    cap = int((mt_len // 3 + 2).sum()) + 2 * n + 16
    pos_off = np.empty(n + 1, np.int64)
    status = np.empty(n, np.int8)
    err_ply = np.empty(n, np.int32)
    err_s = np.empty(n, np.int64)
    err_e = np.empty(n, np.int64)
    fb = _fact_buffers(cap)
    f_key, f_hmc, f_flags = fb["key"], fb["hmc"], fb["flags"]
    f_next, f_next97, f_clock = fb["rep_next"], fb["rep_next97"], fb["clock"]
    want97 = any(ed.identity == IDENTITY_FIDE_1997 for ed in editions)
    total = R.replay_batch(buf, mt_start, ends, init_idx, init_bb, init_mb, init_st, init_ct,
                           fifty_min, want97, pos_off, status, err_ply, err_s, err_e, f_key,
                           f_hmc, f_flags, f_next, f_next97, f_clock)
    facts = {"key": f_key[:total], "hmc": f_hmc[:total],
             "flags": f_flags[:total], "rep_next": f_next[:total],
             "rep_next97": f_next97[:total], "clock": f_clock[:total]}
    stm0 = np.where(init_idx >= 0, init_st[np.maximum(init_idx, 0), 0], 0).astype(np.int64)
    status = status.astype(np.int64)
    pre = pre_status >= 0
    status[pre] = pre_status[pre]
    variant_groups: dict = {}
    if len(variant_games):
        from analyzer.variants.analyze import splice_variants

        vcodes = game_vc[variant_games]
        vfens = [_text(buf, val_s[g, _T["FEN"]], val_e[g, _T["FEN"]]).strip() if has_fen[g] else None
                 for g in variant_games]
        facts, pos_off, stm0 = splice_variants(
            buf, mt_start, ends, variant_games, vcodes, vfens, facts, pos_off, stm0, status,
            err_ply, err_s, err_e, messages, fifty_min, STATUS_INDEX["bad_fen"])
        for vc in np.unique(vcodes):
            variant_groups[int(vc)] = variant_games[vcodes == vc]
    plies = np.maximum(pos_off[1:] - pos_off[:-1] - 1, 0).astype(np.int32)

    # Error messages (rare: Python per erroneous game).
    for g in np.nonzero((status != R.S_OK) & (status != R.S_NO_MOVES) & ~pre)[0]:
        g = int(g)
        if g in messages:
            continue
        code = tables.STATUS_CODES[status[g]]
        ply = int(err_ply[g])
        token = _text(buf, err_s[g], err_e[g]) if err_s[g] >= 0 else ""
        move_no = ply // 2 + 1
        side = "white" if (ply + int(stm0[g])) % 2 == 0 else "black"
        what = {
            "illegal_move": "illegal move", "ambiguous_move": "ambiguous move",
            "bad_token": "unreadable token", "null_move": "null move",
            "unterminated": "comment or variation not closed before the end of the game",
        }.get(code, code)
        messages[g] = f"{what} {token!r} at ply {ply} (move {move_no}, {side} to move); facts kept up to ply {ply}"
    for g in np.nonzero((status == R.S_OK) & (err_s >= 0))[0]:
        g = int(g)
        messages.setdefault(g, f"note: null move {_text(buf, err_s[g], err_e[g])!r} at ply {int(err_ply[g])} "
                               "replayed as a pass (as python-chess does)")
    for g in np.nonzero(status == R.S_NO_MOVES)[0]:
        messages.setdefault(int(g), "the game has no moves")

    result, result_codes = dict_col("Result")
    termination, termination_codes = dict_col("Termination")
    headers = {
        "event": col("Event"), "site": col("Site"), "white": col("White"), "black": col("Black"),
        "result": result, "time_control": dict_col("TimeControl")[0],
        "termination": termination, "eco": dict_col("ECO")[0], "utc_date": col("UTCDate"),
        "utc_time": col("UTCTime"), "date": col("Date"), "variant": variant_col,
        "start_fen": col("FEN"),
        "white_elo": _ints(buf, val_s[:, _T["WhiteElo"]], val_e[:, _T["WhiteElo"]]),
        "black_elo": _ints(buf, val_s[:, _T["BlackElo"]], val_e[:, _T["BlackElo"]]),
    }
    result_code = np.full(n, K.RESULT_UNKNOWN, np.int64)
    result_texts = result.dictionary.to_pylist()
    for code, text in ((K.RESULT_WHITE, "1-0"), (K.RESULT_BLACK, "0-1"), (K.RESULT_DRAW, "1/2-1/2")):
        result_code[_dict_lookup(result_codes, [v == text for v in result_texts])] = code
    time_forfeit = _dict_lookup(termination_codes,
                                [v == "Time forfeit" for v in termination.dictionary.to_pylist()])
    date_for_rules = pc.coalesce(headers["utc_date"], headers["date"])

    status_arr = _coded(status, tables.STATUS_CODES)
    if messages:
        err_obj = np.full(n, None, dtype=object)
        err_obj[list(messages)] = list(messages.values())
        error_arr = pa.array(err_obj, pa.string())
    else:
        error_arr = pa.nulls(n, pa.string())
    err_ply_arr = pa.array(np.where(status != R.S_OK, err_ply, 0).astype(np.int32),
                           mask=(status == R.S_OK) | (status == R.S_NO_MOVES) | (err_ply < 0))
    final_idx = np.maximum(pos_off[1:] - 1, 0)
    has_pos = pos_off[1:] > pos_off[:-1]
    fl = facts["flags"][final_idx] if len(facts["flags"]) else np.zeros(n, np.uint16)
    hm = facts["hmc"][final_idx] if len(facts["hmc"]) else np.zeros(n, np.int32)
    base = {
        "source": _constant(source, n),
        "game_type": _constant("chess", n),
        "game_index": pa.array(np.arange(first_game_index, first_game_index + n, dtype=np.int64)),
        "byte_offset": pa.array(starts.astype(np.int64) + base_offset),
        **headers,
        "status": status_arr, "error": error_arr, "error_ply": err_ply_arr,
        "plies": pa.array(plies),
        "final_halfmove_clock": pa.array(hm.astype(np.int32), mask=~has_pos),
        "final_is_checkmate": pa.array((fl & R.FLAG_CHECKMATE) != 0, mask=~has_pos),
        "final_is_stalemate": pa.array((fl & R.FLAG_STALEMATE) != 0, mask=~has_pos),
        "final_insufficient_material": pa.array((fl & R.FLAG_INSUFFICIENT) != 0, mask=~has_pos),
    }
    if len(variant_games):
        from analyzer.variants.analyze import final_variant_outcome

        white_final = (stm0 + plies) % 2 == 0
        base["variant_end"] = pa.array(final_variant_outcome(facts, pos_off, white_final), pa.string())
    game_tables = []
    event_tables = []
    for ed in editions:
        if ed.automatic_repetitions_from:
            auto_on = pc.fill_null(pc.greater_equal(date_for_rules, ed.automatic_repetitions_from), True)
            auto_on = auto_on.to_numpy(zero_copy_only=False).astype(np.bool_)
        else:
            auto_on = np.ones(n, np.bool_)
        g_cols, ev = _apply(pos_off, stm0, result_code, time_forfeit, auto_on, ed, facts, variant_groups)
        game_tables.append(_games_table(base, g_cols, ed, n, result_code))
        event_tables.append(_events_table(ev, ed, source, first_game_index))
    games = pa.concat_tables(game_tables) if len(game_tables) > 1 else game_tables[0]
    events = pa.concat_tables(event_tables) if len(event_tables) > 1 else event_tables[0]
    if keep_facts:
        facts = {k: v.copy() for k, v in facts.items()}   # (the buffers are reused by the next block)
        facts["game_offsets"] = pos_off
        facts["halfmove_clock"] = facts["hmc"]
        facts["clock_seconds"] = facts["clock"]
        facts["stm0"] = stm0
    return BlockResult(games, events, facts if keep_facts else None, n)


def _apply(pos_off, stm0, result_code, time_forfeit, auto_on, ed, facts, variant_groups=None):
    (out, missed_clock), ev = _run_rules(pos_off, stm0, result_code, time_forfeit, auto_on,
                                         ed.params(), facts)
    if variant_groups:
        from analyzer.variants.analyze import apply_variant_rules

        ev = apply_variant_rules(K, _run_rules, pos_off, stm0, result_code, time_forfeit, auto_on,
                                 ed, facts, variant_groups, out, missed_clock, ev)
    return (out, missed_clock), ev


def _run_rules(pos_off, stm0, result_code, time_forfeit, auto_on, params, facts):
    n = len(stm0)
    out = np.empty((n, K.N_GAME_COLS), np.int32)
    missed_clock = np.empty(n, np.float32)
    cap = max(64, len(facts["key"]) // 8)
    while True:
        ev = {
            "game": np.empty(cap, np.int64), "ply": np.empty(cap, np.int32),
            "rule": np.empty(cap, np.int8), "kind": np.empty(cap, np.int8),
            "side": np.empty(cap, np.int8), "reps": np.empty(cap, np.int16),
            "hmc": np.empty(cap, np.int32), "clock": np.empty(cap, np.float32),
            "missed": np.empty(cap, np.bool_),
        }
        ne = K.apply_rules(pos_off, stm0, result_code, time_forfeit, auto_on, params,
                           facts["key"], facts["hmc"], facts["flags"],
                           facts["rep_next"], facts["rep_next97"], facts["clock"], out,
                           missed_clock, ev["game"], ev["ply"], ev["rule"], ev["kind"],
                           ev["side"], ev["reps"], ev["hmc"], ev["clock"], ev["missed"])
        if ne <= cap:
            break
        cap = ne
    ev = {k: v[:ne] for k, v in ev.items()}
    return (out, missed_clock), ev


_SIDES = np.array(["white", "black"], dtype=object)


def _opt_int(col):
    return pa.array(col, pa.int32(), mask=col < 0)


def _coded(col, names):
    """Codes (-1 = null) as a dictionary column of `names`: built from the integers, without a
    Python string per row (and already of the tables' dictionary type)."""
    col = np.asarray(col)
    return pa.DictionaryArray.from_arrays(pa.array(col.astype(np.int32), mask=col < 0),
                                          pa.array(list(names), pa.string()))


def _constant(value: str, n: int):
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))


def _games_table(base, g_cols, ed, n, result_code):
    out, missed_clock = g_cols
    cols = dict(base)
    cols["edition"] = _constant(ed.id, n)
    cols["first_threefold_ply"] = _opt_int(out[:, K.G_THREEFOLD])
    cols["first_threefold_claim_ply"] = _opt_int(out[:, K.G_THREEFOLD_CLAIM])
    cols["first_fifty_ply"] = _opt_int(out[:, K.G_FIFTY])
    cols["first_fifty_claim_ply"] = _opt_int(out[:, K.G_FIFTY_CLAIM])
    cols["first_fivefold_ply"] = _opt_int(out[:, K.G_FIVEFOLD])
    cols["first_seventyfive_ply"] = _opt_int(out[:, K.G_SEVENTYFIVE])
    missed = out[:, K.G_MISSED]
    cols["first_missed_claim_ply"] = _opt_int(missed)
    cols["missed_claim_rule"] = _coded(out[:, K.G_MISSED_RULE], K.RULES)
    cols["missed_claim_side"] = _coded(out[:, K.G_MISSED_SIDE], ("white", "black"))
    cols["missed_claim_result"] = _coded(out[:, K.G_MISSED_RESULT], K.SIDE_RESULT)
    plies = base["plies"].to_numpy()
    cols["plies_after_missed_claim"] = pa.array((plies - missed).astype(np.int32), mask=missed < 0)
    cols["missed_claim_clock_seconds"] = pa.array(missed_clock, mask=np.isnan(missed_clock))
    cols["final_repetition_count"] = pa.array(out[:, K.G_FINAL_REPS].astype(np.int16),
                                              mask=out[:, K.G_FINAL_REPS] < 0)
    cols["draw_reason"] = _coded(out[:, K.G_DRAW_REASON], K.DRAW_REASONS)
    end = out[:, K.G_END_PLY]
    cols["end_ply"] = _opt_int(end)
    cols["end_rule"] = _coded(out[:, K.G_END_RULE], K.RULES)
    cols["end_result"] = _coded(np.where(end >= 0, 0, -1), ("1/2-1/2",))
    changed = (end >= 0) & (result_code != K.RESULT_DRAW)
    cols["result_changed"] = pa.array(changed, mask=result_code == K.RESULT_UNKNOWN)
    return tables.conform(pa.table(cols), tables.GAMES_SCHEMA)


def _events_table(ev, ed, source, first_game_index):
    m = len(ev["game"])
    cols = {
        "source": _constant(source, m),
        "game_type": _constant("chess", m),
        "edition": _constant(ed.id, m),
        "game_index": pa.array(ev["game"] + first_game_index),
        "ply": pa.array(ev["ply"]),
        "rule": _coded(ev["rule"].astype(np.int64), K.RULES),
        "kind": _coded(ev["kind"].astype(np.int64), K.KINDS),
        "side": _coded(ev["side"].astype(np.int64), ("white", "black")),
        "repetition_count": pa.array(ev["reps"]),
        "halfmove_clock": pa.array(ev["hmc"]),
        "clock_seconds": pa.array(ev["clock"], mask=np.isnan(ev["clock"])),
        "missed": pa.array(ev["missed"]),
    }
    return tables.conform(pa.table(cols), tables.EVENTS_SCHEMA)
