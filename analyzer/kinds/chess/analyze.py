"""One block of PGN text -> what analyzer.tables.build needs: headers, statuses, game facts,
and per edition the verdict matrix and events of the rule kernel.

Python here works per block (megabytes), never per ply: tags, replay and rules are numba
kernels over the whole block. Every game, Chess960
included, is replayed by the kernels: python-chess only sets up start positions other than the
standard one ([FEN], Chess960), once per distinct (variant, FEN) of a block, cached across
blocks. Errors get their messages in Python, game by game.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac, codes
from analyzer.kinds.chess import kernels, valuation
from analyzer.kinds.chess._tables import CT_CHESS960, CT_ROOK, CT_SIZE, STANDARD_CASTLING
from analyzer.kinds.chess.editions import IDENTITY_FIDE_1997, ChessEdition
from analyzer.kinds.chess.variants import variant_code
from analyzer.pgn.tags import TagValues, dict_lookup, text_of
from analyzer.tables import BlockOutput, EditionResult, coded, run_rule_kernel

TAG_NAMES = (
    "Event",
    "Site",
    "White",
    "Black",
    "Result",
    "WhiteElo",
    "BlackElo",
    "TimeControl",
    "Termination",
    "ECO",
    "UTCDate",
    "UTCTime",
    "Date",
    "Variant",
    "FEN",
    "SetUp",
    # Lichess broadcasts (over-the-board games relayed on Lichess; their monthly dumps)
    "WhiteFideId",
    "BlackFideId",
    "Board",
    "BroadcastName",
    "GameURL",
)

_STANDARD_VARIANTS = {"", "standard", "chess", "from position", "fromposition", "normal"}
# python-chess's spellings (chess.pgn.Headers.is_chess960), and "960".
_CHESS960_VARIANTS = {"chess960", "chess 960", "fischerandom", "fischerrandom", "fischer random", "960"}


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
    ct[CT_ROOK : CT_ROOK + 4] = -1
    ct[CT_CHESS960] = 1 if board.chess960 else 0
    c = 0
    for sq in chess.scan_forward(board.clean_castling_rights()):
        color = 0 if sq < 8 else 1
        king = board.king(color == 0)  # on sq's rank: python-chess cleaned the rights
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
    back = (4, 2, 3, 5, 6, 3, 2, 4)  # a1..h1: R N B Q K B N R
    mb = np.zeros(64, np.int8)
    mb[0:8] = back
    mb[8:16] = 1
    mb[48:56] = 1
    mb[56:64] = back
    bb = np.zeros(8, np.uint64)
    for sq in np.nonzero(mb)[0]:
        bb[mb[sq] - 1] |= np.uint64(1 << int(sq))
        bb[6 if sq < 32 else 7] |= np.uint64(1 << int(sq))
    st = np.array([0, 15, -1, 0], np.int64)  # white to move, KQkq, no e.p., clock 0
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
        reason = ", ".join(s.name for s in chess.Status if s and s.name and board.status() & s) if not ok else ""
    if not ok:
        return None, f'invalid [FEN "{fen}"]: {reason}'
    return _start_arrays(board), None


_FACT_TYPES = {
    "key": np.uint64,
    "hmc": np.int32,
    "flags": np.uint16,
    "rep_next": np.int8,
    "rep_next97": np.int8,
    "clock": np.float32,
    "eval": np.int16,
}
_workspace = threading.local()

# Work budget of the unwinnability kernel per position (nodes: moves made), for the final position
# of each game lost on time: past it the answer is `unknown` (docs/rules.md). The default of
# `--unwinnable-budget` (Config.unwinnable_budget); part of the results, so a scan with another
# budget does not reuse units computed with this one (Config.settings).
UNWINNABLE_BUDGET = 20_000
# The complete search's budget (positions) for a dead-position candidate with at most one pawn,
# rook or queen on the board (a forced capture of it is found in a few positions).
DEAD_SEARCH_BUDGET = 256


def _fact_buffers(cap: int) -> dict:
    """Per-thread replay output arrays of at least `cap` positions, reused from block to block:
    fresh ones (tens of MB at the worst-case capacity) cost an mmap, page faults and an munmap
    per block. Valid until the thread's next block (keep_facts callers get copies)."""
    bufs = getattr(_workspace, "facts", None)
    if bufs is None or len(bufs["key"]) < cap:
        bufs = {name: np.empty(cap, dtype) for name, dtype in _FACT_TYPES.items()}
        _workspace.facts = bufs
    return bufs


def _cand_buffers(cap: int) -> dict:
    """Per-thread output arrays of the replay's dead-position candidates (at least `cap`)."""
    bufs = getattr(_workspace, "cands", None)
    if bufs is None or len(bufs["game"]) < cap:
        bufs = {
            "game": np.empty(cap, np.int64),
            "ply": np.empty(cap, np.int32),
            "bb": np.empty((cap, 8), np.uint64),
            "st": np.empty((cap, 4), np.int64),
            "n": np.zeros(1, np.int64),
        }
        _workspace.cands = bufs
    return bufs


def analyze_block(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    editions: list[ChessEdition],
    extra_status: dict | None = None,
    keep_facts: bool = False,
    default_variant: str | None = None,
    input_ends: bool = False,
    syzygy: tuple | list | None = None,
    unwinnable_budget: int = UNWINNABLE_BUDGET,
) -> BlockOutput:
    """Analyze the games buf[starts[i]:ends[i]]. `extra_status` maps game i -> (status, message)
    decided by the reader (e.g. game_too_large, truncated): such games are not replayed.
    Games of the seven Lichess variants other than Chess960 (by [Variant] tag, or
    `default_variant` for games without one, e.g. from a dump's file name) are replayed by the
    variants package into the same facts layout and judged by the same rule kernel.
    `syzygy`: folders of Syzygy tables; the 50- and 75-move events and the final positions get
    their tablebase values (kinds.chess.valuation, tablebase). `unwinnable_budget`: the
    unwinnability kernel's nodes per final position of a game lost on time (0: the static proofs
    and a mate on the board only; the rest `unknown`)."""
    n = len(starts)
    tags = TagValues(buf, starts, ends, TAG_NAMES)
    mt_start = tags.movetext_start

    # Start positions: standard unless the game has [FEN] or a [Variant] other than standard.
    # The others are set up in Python once per distinct (variant, FEN) of the block.
    variant_col, variant_codes = tags.dictionary("Variant")
    init_idx = np.zeros(n, np.int64)
    pre_status = np.full(n, -1, np.int64)
    messages: dict[int, str] = {}
    inits = [_STD_START]
    variants = [v.strip().lower() for v in variant_col.dictionary.to_pylist()]
    plain_variant = (variant_codes < 0) | dict_lookup(variant_codes, [v in _STANDARD_VARIANTS for v in variants])
    has_fen = tags.present("FEN")
    # The Lichess variants other than Chess960: replayed after the chess games (splice_variants).
    tag_vc = [variant_code(v) for v in variants]
    game_vc = np.array([-1 if c is None else c for c in tag_vc] + [-1], np.int64)[variant_codes]
    if default_variant is not None and variant_code(default_variant) is not None:
        game_vc[variant_codes < 0] = variant_code(default_variant)
    is_variant = game_vc >= 0
    special = np.nonzero((has_fen | ~plain_variant) & ~is_variant)[0]
    if len(special):
        fen_codes = np.full(n, -1, np.int32)
        fens: list = []
        if has_fen.any():
            fen_col, fen_codes = tags.dictionary("FEN")
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
                u_status[u] = codes.S_UNSUPPORTED
                u_message[u] = (
                    f"variant {variant!r} is not analyzed (standard, Chess960 and the seven Lichess variants only)"
                )
                continue
            arrays, error = _parse_start(fen, variant in _CHESS960_VARIANTS)
            if error is not None:
                u_status[u] = codes.S_BAD_FEN
                u_message[u] = error
                continue
            u_init[u] = len(inits)
            inits.append(arrays)
        init_idx[special] = u_init[inverse]
        pre_status[special] = u_status[inverse]
        for i in np.nonzero(u_status[inverse] >= 0)[0]:
            messages[int(special[i])] = u_message[inverse[i]]
    init_idx[is_variant] = -1
    if extra_status:
        for g, (code, msg) in extra_status.items():
            init_idx[g] = -1
            pre_status[g] = codes.STATUS_INDEX[code]
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
    f_next, f_next97, f_clock, f_eval = fb["rep_next"], fb["rep_next97"], fb["clock"], fb["eval"]
    want97 = any(ed.identity == IDENTITY_FIDE_1997 for ed in editions)
    final_bb = np.zeros((n, 8), np.uint64)
    final_st = np.empty((n, 4), np.int64)
    cands = _cand_buffers(2 * n + 1024)
    for _attempt in range(2):  # again, with room, if the candidates did not fit (rare)
        total = kernels.replay_batch(
            buf,
            mt_start,
            ends,
            init_idx,
            init_bb,
            init_mb,
            init_st,
            init_ct,
            fifty_min,
            want97,
            pos_off,
            status,
            err_ply,
            err_s,
            err_e,
            f_key,
            f_hmc,
            f_flags,
            f_next,
            f_next97,
            f_clock,
            final_bb,
            final_st,
            f_eval,
            cands["game"],
            cands["ply"],
            cands["bb"],
            cands["st"],
            cands["n"],
        )
        if cands["n"][0] <= len(cands["game"]):
            break
        cands = _cand_buffers(int(cands["n"][0]))
    n_cand = int(cands["n"][0])
    facts = {
        "key": f_key[:total],
        "hmc": f_hmc[:total],
        "flags": f_flags[:total],
        "rep_next": f_next[:total],
        "rep_next97": f_next97[:total],
        "clock": f_clock[:total],
        "eval": f_eval[:total],
    }
    stm0 = np.where(init_idx >= 0, init_st[np.maximum(init_idx, 0), 0], 0).astype(np.int64)
    status = status.astype(np.int64)
    pre = pre_status >= 0
    status[pre] = pre_status[pre]
    groups: dict = {}
    if len(variant_games):
        from analyzer.kinds.chess.variants.analyze import splice_variants

        vcodes = game_vc[variant_games]
        vfens: list[str | None] = []
        for g in variant_games:
            fen_tag = tags.value(int(g), "FEN") if has_fen[g] else None
            vfens.append(fen_tag.strip() if fen_tag is not None else None)
        facts, pos_off, stm0 = splice_variants(
            buf,
            mt_start,
            ends,
            variant_games,
            vcodes,
            vfens,
            facts,
            pos_off,
            stm0,
            status,
            err_ply,
            err_s,
            err_e,
            messages,
            fifty_min,
            codes.S_BAD_FEN,
        )
        groups = {int(v): variant_games[vcodes == v] for v in np.unique(vcodes)}
    replayed = pos_off[1:] > pos_off[:-1]
    plies = np.where(replayed, pos_off[1:] - pos_off[:-1] - 1, -1).astype(np.int32)
    if input_ends and n and not pre[n - 1]:
        _cut_off(buf, mt_start, ends, n - 1, status, err_ply, plies, messages)
    messages.update(_messages(buf, status, err_ply, err_s, err_e, stm0, pre, messages))
    error_ply = np.where((status != codes.S_OK) & (status != codes.S_NO_MOVES) & (err_ply >= 0), err_ply, -1).astype(
        np.int32
    )

    result, result_codes = tags.dictionary("Result")
    termination, termination_codes = tags.dictionary("Termination")
    headers = {
        "event": tags.text("Event"),
        "site": tags.text("Site"),
        "white": tags.text("White"),
        "black": tags.text("Black"),
        "result": result,
        "time_control": tags.dictionary("TimeControl")[0],
        "termination": termination,
        "eco": tags.dictionary("ECO")[0],
        "utc_date": tags.text("UTCDate"),
        "utc_time": tags.text("UTCTime"),
        "date_tag": tags.text("Date"),
        "variant": variant_col,
        "start_fen": tags.text("FEN"),
        "white_elo": tags.ints("WhiteElo"),
        "black_elo": tags.ints("BlackElo"),
        "white_fide_id": tags.text("WhiteFideId"),
        "black_fide_id": tags.text("BlackFideId"),
        "board": tags.text("Board"),
        "broadcast_name": tags.dictionary("BroadcastName")[0],
        "game_url": tags.text("GameURL"),
    }
    result_code = np.full(n, codes.RESULT_UNKNOWN, np.int64)
    result_texts = result.dictionary.to_pylist()
    for code, text in ((codes.RESULT_WHITE, "1-0"), (codes.RESULT_BLACK, "0-1"), (codes.RESULT_DRAW, "1/2-1/2")):
        result_code[dict_lookup(result_codes, [v == text for v in result_texts])] = code
    time_forfeit = dict_lookup(termination_codes, [v == "Time forfeit" for v in termination.dictionary.to_pylist()])
    date_for_rules = ac.coalesce(headers["utc_date"], headers["date_tag"])

    # The material of every window the 50/75-move counts run in (move limits by material, the
    # events' material column), then the rules, then the tablebase values of their events.
    src = valuation.BoardSource(buf, mt_start, ends, init_idx, init_bb, init_mb, init_st, init_ct)
    material_from = min((ed.material_clock for ed in editions), default=1 << 30)
    facts["material"] = valuation.window_material(src, pos_off, facts["hmc"], material_from)
    chess_game = init_idx >= 0

    game_facts = np.empty((n, codes.N_GAME_FACTS), np.int32)
    has_clock = np.empty(n, np.bool_)
    kernels.game_facts(pos_off, facts["key"], facts["hmc"], facts["flags"], facts["clock"], game_facts, has_clock)
    final = _final_positions(
        n,
        pos_off,
        facts["flags"],
        is_variant,
        {k: v[:n_cand] for k, v in cands.items() if k != "n"},
        final_bb,
        final_st,
        init_ct,
        init_idx,
        status,
        result_code,
        time_forfeit,
        unwinnable_budget,
    )
    game_inputs = (final["dead_ply"], final["can_mate"], final["insufficient"])

    results = []
    ev_cap = max(64, len(facts["key"]) // 8)
    for ed in editions:
        if ed.automatic_repetitions_from:
            auto_on = ac.fill_null(ac.greater_equal(date_for_rules, ed.automatic_repetitions_from), True)
            auto_on = auto_on.to_numpy(zero_copy_only=False).astype(np.bool_)
        else:
            auto_on = np.ones(n, np.bool_)
        out, events = _rules(pos_off, stm0, result_code, time_forfeit, auto_on, ed.params(), facts, ev_cap, game_inputs)
        if groups:
            from analyzer.kinds.chess.variants.analyze import apply_variant_rules

            events = apply_variant_rules(
                _rules, pos_off, stm0, result_code, time_forfeit, auto_on, ed, facts, groups, out, events
            )
        results.append(EditionResult(ed.id, out, events, counterfactual=ed.counterfactual))
    probes = None
    if syzygy:
        from analyzer.kinds.chess import tablebase

        probes = valuation.Probes()
        moves_at = []  # the positions of every edition's 50- and 75-move events
        for r in results:
            ev = r.events
            sel = np.isin(ev["rule"], valuation.MOVE_RULES) & chess_game[ev["game"]]
            moves_at.append(pos_off[ev["game"][sel]] + ev["ply"][sel].astype(np.int64))
        valuation.probe_positions(
            tablebase.tables(syzygy),
            src,
            pos_off,
            facts["key"],
            facts["material"],
            np.concatenate(moves_at + [np.zeros(0, np.int64)]),
            final_bb,
            final_st,
            probes,
            facts["flags"],
        )
    games_cols, final_sig = valuation.final_columns(pos_off, final_bb, final_st, probes)
    for ed, r in zip(editions, results):
        r.event_columns = valuation.event_columns(
            r.events, ed, pos_off, stm0, facts, facts["material"], chess_game, probes
        )
        wit = valuation.final_win_in_time(ed, games_cols, final_sig, final_st)
        if wit is not None:
            r.verdict_columns["final_win_in_time"] = wit
    extra = dict(games_cols)
    extra.update(final["columns"])
    if groups:
        from analyzer.kinds.chess.variants.analyze import final_variant_outcome

        white_final = (stm0 + np.maximum(plies, 0)) % 2 == 0
        extra["variant_end"] = pa.array(final_variant_outcome(facts, pos_off, white_final), pa.string())
    kept = None
    if keep_facts:
        kept = {k: v.copy() for k, v in facts.items()}  # (the buffers are reused by the next block)
        kept["game_offsets"] = pos_off
        kept["halfmove_clock"] = kept["hmc"]
        kept["clock_seconds"] = kept["clock"]
        kept["stm0"] = stm0
        kept["final_bb"] = final_bb
        kept["final_st"] = final_st
        kept["final_ct"] = init_ct[np.maximum(init_idx, 0)]  # each game's castling table (position.to_board)
        kept["board_source"] = src  # boards at any ply of the block's games (valuation.BoardSource)
    return BlockOutput(
        headers=headers,
        status=status,
        messages=messages,
        error_ply=error_ply,
        plies=plies,
        extra=extra,
        game_facts=game_facts,
        has_clock=has_clock,
        result_code=result_code,
        editions=results,
        facts=kept,
        notes=valuation.notes(probes),
        certificates=final["certificates"],
    )


def _rules(pos_off, stm0, result_code, time_forfeit, auto_on, params, facts, ev_cap, game_inputs=None):
    """The rule kernel over the block's facts with one parameter vector: (verdicts, events).
    game_inputs: (dead position ply, the timeout winner's codes.W_* answer, the winner's
    insufficient material) per game (_final_positions); none (-1) when not given."""
    out = np.empty((len(stm0), codes.N_VERDICT), np.int32)
    if game_inputs is None:
        none = np.full(len(stm0), -1, np.int32)
        game_inputs = (none, none.astype(np.int8), none.astype(np.int8))
    dead_ply, can_mate, insufficient = game_inputs
    events = run_rule_kernel(
        lambda ev: kernels.apply_rules(
            pos_off,
            stm0,
            result_code,
            time_forfeit,
            auto_on,
            dead_ply,
            can_mate,
            insufficient,
            params,
            facts["key"],
            facts["hmc"],
            facts["flags"],
            facts["rep_next"],
            facts["rep_next97"],
            facts["clock"],
            out,
            ev["game"],
            ev["ply"],
            ev["rule"],
            ev["kind"],
            ev["side"],
            ev["reps"],
            ev["hmc"],
            ev["clock"],
            facts.get("material", _NO_MATERIAL),
        ),
        ev_cap,
    )
    return out, events


_NO_MATERIAL = np.zeros(1, np.uint64)  # (editions without limits by material never read it)

# The dead-position proof of a game (games.dead_position_proof), by the two sides' proof kinds.
DEAD_PROOFS = (
    "unwinnable:insufficient_material",
    "unwinnable:blocked",
    "unwinnable:insufficient_material+blocked",
    "unwinnable:blocked+insufficient_material",
    "unwinnable:search",
    "unwinnable:insufficient_material+search",
    "unwinnable:search+insufficient_material",
    "unwinnable:blocked+search",
    "unwinnable:search+blocked",
)


def _final_positions(
    n,
    pos_off,
    flags,
    is_variant,
    cands,
    final_bb,
    final_st,
    init_ct,
    init_idx,
    status,
    result_code,
    time_forfeit,
    budget,
) -> dict:
    """The edition-free facts of dead positions and of the final positions of games lost on time
    (kinds.chess._unwinnable), as the rule kernel reads them and as games columns:
    - dead_ply: the first position, not mate or stalemate, where both sides provably cannot mate:
      python-chess's insufficient material (the replay's flag), or a candidate of the replay
      (every pawn blocked by a pawn) with a static proof for each side;
    - for a standard or Chess960 game lost on time (1-0/0-1, Termination "Time forfeit", replayed
      to its end): can the winner mate from the final position (codes.W_*), with a certificate or
      the proof's kind, and has it insufficient material (the Lichess test)."""
    dead_ply = np.empty(n, np.int32)
    chess_game = ~np.asarray(is_variant, np.bool_)
    # Insufficient material (both sides): the replay's flag, at a position with a legal move.
    kernels.first_insufficient(pos_off, flags, ~chess_game, dead_ply)
    dead_code = np.where(dead_ply >= 0, 0, -1).astype(np.int32)
    # Candidates with every pawn blocked: the static proofs for both sides.
    if len(cands["game"]):
        proofs = np.empty((len(cands["game"]), 2), np.int8)
        cand_ct = np.maximum(init_idx[cands["game"]], 0).astype(np.int64)
        kernels.dead_candidates(cands["bb"], cands["st"], init_ct, cand_ct, DEAD_SEARCH_BUDGET, proofs)
        dead = (proofs[:, 0] >= 0) & (proofs[:, 1] >= 0)
        for i in np.flatnonzero(dead).tolist():  # in game and ply order: the first per game wins
            gi, ply = int(cands["game"][i]), int(cands["ply"][i])
            if dead_ply[gi] < 0 or ply < dead_ply[gi]:
                a, b = codes.PROOF_KINDS[int(proofs[i, 0])], codes.PROOF_KINDS[int(proofs[i, 1])]
                dead_ply[gi] = ply
                dead_code[gi] = DEAD_PROOFS.index(f"unwinnable:{a}" if a == b else f"unwinnable:{a}+{b}")
    # Games lost on time: can the winner mate?
    decisive = (result_code == codes.RESULT_WHITE) | (result_code == codes.RESULT_BLACK)
    lost_on_time = np.flatnonzero(
        np.asarray(time_forfeit, np.bool_) & decisive & (final_st[:, 0] >= 0) & (status == codes.S_OK) & chess_game
    )
    can_mate = np.full(n, -1, np.int8)
    insufficient = np.full(n, -1, np.int8)
    texts = pa.nulls(n, pa.string())
    certificates: dict = {}
    if len(dead_ply):
        dead_games = np.flatnonzero(dead_ply >= 0)
        if len(dead_games):
            certificates[codes.R_DEAD_POSITION] = {int(g): DEAD_PROOFS[dead_code[g]] for g in dead_games.tolist()}
    if len(lost_on_time):
        m = len(lost_on_time)
        winner = np.where(result_code[lost_on_time] == codes.RESULT_WHITE, 0, 1).astype(np.int8)
        ct_idx = np.maximum(init_idx[lost_on_time], 0).astype(np.int64)
        verdict = np.empty(m, np.int8)
        proof = np.empty(m, np.int8)
        nodes = np.empty(m, np.int64)
        cert_off = np.empty(m + 1, np.int64)
        cert_moves = np.empty(m * 32 + 1024, np.int32)  # ~20 moves each; when short, the whole batch runs twice
        bb, st = final_bb[lost_on_time], final_st[lost_on_time]
        args = (bb, st, init_ct, ct_idx, winner, max(0, int(budget)), verdict, proof, nodes, cert_off)
        k = kernels.classify_batch(*args, cert_moves)
        if k > len(cert_moves):
            cert_moves = np.empty(k, np.int32)
            kernels.classify_batch(*args, cert_moves)
        can_mate[lost_on_time] = verdict
        insufficient[lost_on_time] = (proof == codes.PK_INSUFFICIENT).astype(np.int8)
        off = np.empty(n + 1, np.int32)
        valid = np.empty(n, np.uint8)
        data = np.empty(int(cert_off[m]) * 6 + 40 * m + 16, np.uint8)
        size = kernels.certificate_texts(lost_on_time, proof, cert_off, cert_moves, init_ct, ct_idx, off, valid, data)
        if size > len(data):
            data = np.empty(size, np.uint8)
            kernels.certificate_texts(lost_on_time, proof, cert_off, cert_moves, init_ct, ct_idx, off, valid, data)
        texts = pa.StringArray.from_buffers(
            n, pa.py_buffer(off), pa.py_buffer(data[:size]), pa.py_buffer(np.packbits(valid, bitorder="little"))
        )
        unwinnable = np.flatnonzero(verdict == codes.W_UNWINNABLE)
        if len(unwinnable):
            certificates[codes.R_TIMEOUT_UNWINNABLE] = {
                int(lost_on_time[i]): codes.PROOF_TEXT[int(proof[i])] for i in unwinnable.tolist()
            }
    columns = {
        "dead_position_ply": pa.array(dead_ply, mask=dead_ply < 0),
        "dead_position_proof": coded(dead_code, DEAD_PROOFS),
        "timeout_winner_can_mate": coded(can_mate, codes.WINNABILITY),
        "timeout_certificate": texts,
    }
    return {
        "dead_ply": dead_ply,
        "can_mate": can_mate,
        "insufficient": insufficient,
        "columns": columns,
        "certificates": certificates,
    }


_TERMINATION_MARKERS = (b"1-0", b"0-1", b"1/2-1/2", b"*")


def _cut_off(buf, mt_start, ends, g: int, status, err_ply, plies, messages: dict) -> None:
    """Game g is where the input ends: a movetext that does not end with a termination marker
    (PGN 8.2.6: 1-0, 0-1, 1/2-1/2 or *) was cut off there (a partial download, a full disk).
    Its facts and verdicts cover the plies before the cut; its status says it is truncated, as
    a draughts game without a result is."""
    if int(status[g]) not in (codes.S_OK, codes.S_NO_MOVES):
        return  # it already stopped at an error before the cut, which its status names
    tail = bytes(buf[int(mt_start[g]) : int(ends[g])]).rstrip()
    if tail.endswith(_TERMINATION_MARKERS):
        return
    n_plies = max(int(plies[g]), 0)
    status[g] = codes.S_TRUNCATED
    err_ply[g] = n_plies
    last = tail[-20:].decode("utf-8", "replace").split()[-1:] or [""]
    messages[g] = (
        f"the input ends inside this game's movetext after ply {n_plies} (last token {last[0]!r}, no "
        f"termination marker 1-0, 0-1, 1/2-1/2 or *): facts and verdicts cover the plies before the cut; "
        f"the result is the tag's"
    )


_WHAT = {
    codes.S_ILLEGAL: "illegal move",
    codes.S_AMBIGUOUS: "ambiguous move",
    codes.S_BAD_TOKEN: "unreadable token",
    codes.S_NULL_MOVE: "null move",
    codes.S_UNTERMINATED: "comment or variation not closed before the end of the game",
}


def _messages(buf, status, err_ply, err_s, err_e, stm0, pre, known) -> dict:
    """Error messages (rare: Python per erroneous game), naming the ply, move and token."""
    out: dict[int, str] = {}
    for g in np.nonzero((status != codes.S_OK) & (status != codes.S_NO_MOVES) & ~pre)[0].tolist():
        if g in known:
            continue
        ply = int(err_ply[g])
        token = text_of(buf, err_s[g], err_e[g]) if err_s[g] >= 0 else ""
        move_no = ply // 2 + 1
        side = "white" if (ply + int(stm0[g])) % 2 == 0 else "black"
        what = _WHAT.get(int(status[g]), codes.STATUSES[int(status[g])])
        out[g] = f"{what} {token!r} at ply {ply} (move {move_no}, {side} to move); facts kept up to ply {ply}"
    for g in np.nonzero((status == codes.S_OK) & (err_s >= 0))[0].tolist():
        if g not in known:
            out[g] = (
                f"note: null move {text_of(buf, err_s[g], err_e[g])!r} at ply {int(err_ply[g])} "
                "replayed as a pass (as python-chess does)"
            )
    for g in np.nonzero(status == codes.S_NO_MOVES)[0].tolist():
        if g not in known:
            out[g] = "the game has no moves"
    return out
