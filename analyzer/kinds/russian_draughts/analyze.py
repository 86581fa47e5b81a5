"""Russian draughts: one block of PDN text -> what analyzer.tables.build needs (headers,
statuses, game facts, and per edition the rule kernel's verdict matrix and events).

Tags are read by the shared scanner (analyzer.pgn.tags); GameType and FEN values are checked
once per distinct value of the block; the movetext is read by the numba replay kernel.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac, codes
from analyzer.kinds.russian_draughts import pdn
from analyzer.kinds.russian_draughts._board import initial_position
from analyzer.kinds.russian_draughts._replay import RES_NONE, replay_batch
from analyzer.kinds.russian_draughts._rules import apply_rules, game_facts
from analyzer.kinds.russian_draughts.editions import DraughtsEdition
from analyzer.pgn.tags import TagValues, text_of
from analyzer.tables import BlockOutput, EditionResult, run_rule_kernel

TAG_NAMES = ("Event", "Site", "White", "Black", "Result", "Date", "GameType", "FEN")


class Facts:
    """Flat per-ply facts of a batch of games (output of the replay kernel)."""

    def __init__(self, n: int, caps: np.ndarray):
        self.off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(caps, out=self.off[1:])
        total = int(self.off[-1])
        self.wm = np.zeros(total, np.uint64)
        self.wk = np.zeros(total, np.uint64)
        self.bm = np.zeros(total, np.uint64)
        self.bk = np.zeros(total, np.uint64)
        self.stm = np.zeros(total, np.int8)
        self.key = np.zeros(total, np.uint64)
        self.rep = np.zeros(total, np.int16)
        self.intended = np.zeros(total, np.int16)
        self.nlegal = np.zeros(total, np.int16)
        self.irrev = np.zeros(total, np.int32)
        self.matclock = np.zeros(total, np.int32)
        self.material = np.zeros(total, np.int32)
        self.status = np.zeros(n, np.int8)
        self.plies = np.zeros(n, np.int32)
        self.err_s = np.zeros(n, np.int64)
        self.err_e = np.zeros(n, np.int64)
        self.result_tok = np.zeros(n, np.int8)
        self.moves_seen = np.zeros(n, np.int32)


def replay_games(
    buf: np.ndarray,
    mt_start: np.ndarray,
    mt_end: np.ndarray,
    init_pos: np.ndarray,
    init_stm: np.ndarray,
    active: np.ndarray,
) -> Facts:
    n = len(mt_start)
    caps = np.where(active, (mt_end - mt_start) // 2 + 2, 0).astype(np.int64)
    f = Facts(n, caps)
    replay_batch(
        buf,
        mt_start,
        mt_end,
        init_pos,
        init_stm,
        active,
        f.off,
        f.wm,
        f.wk,
        f.bm,
        f.bk,
        f.stm,
        f.key,
        f.rep,
        f.intended,
        f.nlegal,
        f.irrev,
        f.matclock,
        f.material,
        f.status,
        f.plies,
        f.err_s,
        f.err_e,
        f.result_tok,
        f.moves_seen,
    )
    return f


def _position_fen(f: Facts, slot: int) -> str:
    def sq(bb, king):
        return [("K" if king else "") + str(i + 1) for i in range(32) if int(bb) >> i & 1]

    w = sq(f.wm[slot], False) + sq(f.wk[slot], True)
    b = sq(f.bm[slot], False) + sq(f.bk[slot], True)
    return f"{'W' if f.stm[slot] == 0 else 'B'}:W{','.join(w)}:B{','.join(b)}"


def _prepare(tags: TagValues, n: int, extra_status: dict | None):
    """Start positions, and the games not replayed (another GameType, a bad FEN, or decided by
    the reader), checking each distinct GameType and FEN of the block once."""
    init_pos = np.zeros((n, 4), np.uint64)
    init_stm = np.zeros(n, np.int8)
    pre_status = np.full(n, -1, np.int64)
    messages: dict[int, str] = {}
    start = [int(x) for x in initial_position()]
    init_pos[:] = start[:4]
    init_stm[:] = start[4]
    gt_col, gt_codes = tags.dictionary("GameType")
    for u, value in enumerate(gt_col.dictionary.to_pylist()):
        number = pdn.gametype_number(value)
        if number is not None and number != pdn.RUSSIAN_GAMETYPE:
            for g in np.nonzero(gt_codes == u)[0]:
                pre_status[g] = codes.S_UNSUPPORTED
                messages[int(g)] = f"GameType {value!r} is not Russian draughts (25)"
    fen_col, fen_codes = tags.dictionary("FEN")
    for u, fen in enumerate(fen_col.dictionary.to_pylist()):
        games = np.nonzero((fen_codes == u) & (pre_status < 0))[0]
        if not len(games) or not fen:
            continue
        try:
            wm, wk, bm, bk, stm = pdn.parse_fen(fen)
        except pdn.FenError as exc:
            pre_status[games] = codes.S_BAD_FEN
            for g in games:
                messages[int(g)] = f"bad FEN {fen!r}: {exc}"
            continue
        init_pos[games] = (wm, wk, bm, bk)
        init_stm[games] = stm
    for g, (code, msg) in (extra_status or {}).items():
        pre_status[g] = codes.STATUS_INDEX[code]
        messages[g] = msg
    return init_pos, init_stm, pre_status, messages


def _results(tags: TagValues, facts: Facts, n: int) -> tuple[pa.Array, np.ndarray]:
    """The Result column (draughts scores 2-0/1-1/0-2 as 1-0/1/2-1/2/0-1; without the tag, the
    movetext's termination token) and its codes."""
    col, cds = tags.dictionary("Result")
    mapped = [pdn.RESULT_MAP.get(v.strip()) if v is not None else None for v in col.dictionary.to_pylist()]
    code_of = {r: i for i, r in enumerate(codes.RESULTS)}
    per_value = np.array([code_of.get(m, -1) if m else -1 for m in mapped] + [-1], np.int64)
    result_code = per_value[cds]
    from_token = (result_code < 0) & (facts.result_tok != RES_NONE)
    result_code[from_token] = facts.result_tok[from_token]
    shown = np.where(result_code >= 0, result_code, -1)
    # A Result value that is no score (e.g. "?") stays as written.
    other = (result_code < 0) & (cds >= 0)
    if other.any():
        values = np.array([codes.RESULTS[c] if c >= 0 else None for c in shown], dtype=object)
        raw = col.dictionary.to_pylist()
        for g in np.nonzero(other)[0]:
            values[g] = raw[cds[g]]
        column = ac.dictionary_encode(pa.array(values, pa.string()))
    else:
        from analyzer.tables import coded

        column = coded(shown, codes.RESULTS)
    return column, np.where(result_code >= 0, result_code, codes.RESULT_UNKNOWN)


def _messages(buf, facts: Facts, status: np.ndarray, mt_end: np.ndarray, init_stm, replayed, known) -> dict:
    """Readable errors of the replayed games that stopped early (Python, per such game)."""
    out: dict[int, str] = {}
    for i in np.nonzero(replayed & (status != codes.S_OK))[0].tolist():
        if i in known:
            continue
        st = int(status[i])
        P = int(facts.plies[i])
        es, ee = int(facts.err_s[i]), int(facts.err_e[i])
        tok = text_of(buf, es, ee) if es >= 0 else ""
        if st == codes.S_NO_MOVES:
            out[i] = "no moves in the movetext"
            continue
        if st in (codes.S_BAD_TOKEN, codes.S_ILLEGAL) and es >= 0 and not bytes(buf[ee : int(mt_end[i])]).strip():
            st = codes.S_TRUNCATED  # the bad token is the last thing, and no termination token follows
            status[i] = st
        side = "white" if facts.stm[facts.off[i] + P] == 0 else "black"
        move_no = (P + int(init_stm[i])) // 2 + 1  # move numbers as in the movetext (FEN games from move 1)
        where = f"at ply {P} (move {move_no}, {side} to move)"
        if st == codes.S_TRUNCATED:
            msg = f"game ends without a termination token {where}" + (f"; last token {tok!r}" if tok else "")
        elif st == codes.S_NULL_MOVE:
            msg = f"placeholder move {tok!r} {where}: the moves are not recorded"
        elif st == codes.S_BAD_TOKEN:
            msg = f"unreadable movetext token {tok!r} {where}"
        elif st == codes.S_ILLEGAL:
            nl = int(facts.nlegal[facts.off[i] + P])
            msg = (
                f"illegal move {tok!r} {where}; position {_position_fen(facts, int(facts.off[i] + P))}, "
                f"{nl} legal moves"
            )
        elif st == codes.S_AMBIGUOUS:
            msg = f"ambiguous move {tok!r} {where}: several legal captures match"
        else:
            msg = f"{codes.STATUSES[st]} {where}"
        out[i] = msg
    return out


def analyze_block(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    editions: list[DraughtsEdition],
    extra_status: dict | None = None,
    keep_facts: bool = False,
    input_ends: bool = False,
) -> BlockOutput:
    """Analyze the Russian-draughts games buf[starts[i]:ends[i]]; games in `extra_status` (decided
    by the reader) and those of another GameType or with a bad FEN are not replayed. Every game
    whose movetext ends without a result is truncated (the replay says so), wherever it is, so
    `input_ends` adds nothing here."""
    n = len(starts)
    tags = TagValues(buf, starts, ends, TAG_NAMES)
    init_pos, init_stm, pre_status, messages = _prepare(tags, n, extra_status)
    active = pre_status < 0
    mt_end = np.asarray(ends, np.int64)
    facts = replay_games(buf, tags.movetext_start, mt_end, init_pos, init_stm, active)
    status = np.where(active, facts.status, pre_status).astype(np.int64)
    messages.update(_messages(buf, facts, status, mt_end, init_stm, active, messages))
    error_ply = np.where(active & (status != codes.S_OK) & (status != codes.S_NO_MOVES), facts.plies, -1)
    plies = np.where(active, facts.plies, -1).astype(np.int32)
    result_col, result_code = _results(tags, facts, n)
    headers = {
        "event": tags.text("Event"),
        "site": tags.text("Site"),
        "white": tags.text("White"),
        "black": tags.text("Black"),
        "result": result_col,
        "date_tag": tags.text("Date"),
        "variant": tags.dictionary("GameType")[0],
        "start_fen": tags.text("FEN"),
    }
    gf = np.empty((n, codes.N_GAME_FACTS), np.int32)
    game_facts(facts.off, facts.plies, active, facts.rep, facts.irrev, gf)
    results = []
    cap = int(np.sum(np.where(active, 3 * (facts.plies.astype(np.int64) + 1) + 8, 0))) + 16
    for ed in editions:
        out = np.empty((n, codes.N_VERDICT), np.int32)
        params = ed.params()
        events = run_rule_kernel(
            lambda ev, params=params, out=out: apply_rules(
                params,
                facts.off,
                facts.plies,
                active,
                result_code,
                facts.wm,
                facts.wk,
                facts.bm,
                facts.bk,
                facts.stm,
                facts.rep,
                facts.intended,
                facts.nlegal,
                facts.irrev,
                facts.matclock,
                out,
                ev["game"],
                ev["ply"],
                ev["rule"],
                ev["kind"],
                ev["side"],
                ev["reps"],
                ev["hmc"],
                ev["clock"],
            ),
            cap,
        )
        results.append(EditionResult(ed.id, out, events))
    return BlockOutput(
        headers=headers,
        status=status,
        messages=messages,
        error_ply=error_ply,
        plies=plies,
        game_facts=gf,
        has_clock=np.zeros(n, np.bool_),
        result_code=result_code,
        editions=results,
        facts={"facts": facts, "active": active} if keep_facts else None,
    )


def replay_facts(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, Facts]:
    """Test/debug helper: (starts, ends, replayed mask, per-ply facts) of the games in `data`."""
    from analyzer.pgn.split import split_games

    buf = np.frombuffer(data, dtype=np.uint8)
    starts, ends, _ = split_games(buf, True, draughts=True)
    tags = TagValues(buf, starts, ends, TAG_NAMES)
    init_pos, init_stm, pre_status, _ = _prepare(tags, len(starts), None)
    active = pre_status < 0
    return starts, ends, active, replay_games(buf, tags.movetext_start, ends, init_pos, init_stm, active)


def replay_positions(data: bytes) -> list[tuple[str, list[tuple[int, int, int, int, int]]]]:
    """Test/debug helper: per game, (status name, positions at plies 0..plies) as
    (white men, white kings, black men, black kings, side to move); no positions for games
    that were not replayed (other GameTypes, bad FEN)."""
    from analyzer.kinds.russian_draughts.editions import BUILTIN
    from analyzer.pgn.split import split_games

    buf = np.frombuffer(data, dtype=np.uint8)
    starts, ends, _ = split_games(buf, True, draughts=True)
    block = analyze_block(buf, starts, ends, editions=[BUILTIN["fshr_russian"]])
    status = [codes.STATUSES[int(c)] for c in block.status]
    _, _, active, f = replay_facts(data)
    out: list[tuple[str, list[tuple[int, int, int, int, int]]]] = []
    for i in range(len(active)):
        if not active[i]:
            out.append((status[i], []))
            continue
        o = int(f.off[i])
        out.append(
            (
                status[i],
                [
                    (int(f.wm[o + k]), int(f.wk[o + k]), int(f.bm[o + k]), int(f.bk[o + k]), int(f.stm[o + k]))
                    for k in range(int(f.plies[i]) + 1)
                ],
            )
        )
    return out
