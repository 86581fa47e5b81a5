"""Russian draughts: PDN block -> replay (numba) -> rules per edition (numba) -> Arrow tables."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from .. import tables
from . import pdn
from ._board import initial_position
from ._replay import (RES_BLACK, RES_DRAW, RES_NONE, RES_UNKNOWN, RES_WHITE, ST_BAD_TOKEN,
                      ST_ILLEGAL, ST_NULL_MOVE, ST_OK, ST_TRUNCATED, STATUS_NAMES, replay_batch)
from .rules import (KIND_NAMES, R_BALANCE, R_DIAG, R_KVK, R_SMALL, R_THREEFOLD,
                    RULE_NAMES, apply_rules, get_edition)

GAME_TYPE = "russian_draughts"
SIDE_NAMES = ("white", "black")
_RESULT_FROM_CODE = {RES_WHITE: "1-0", RES_BLACK: "0-1", RES_DRAW: "1/2-1/2", RES_UNKNOWN: "*"}


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


def replay_games(buf: np.ndarray, mt_start: np.ndarray, mt_end: np.ndarray, init_pos: np.ndarray,
                 init_stm: np.ndarray, active: np.ndarray) -> Facts:
    n = len(mt_start)
    caps = np.where(active, (mt_end - mt_start) // 2 + 2, 0).astype(np.int64)
    f = Facts(n, caps)
    replay_batch(buf, mt_start, mt_end, init_pos, init_stm, active, f.off,
                 f.wm, f.wk, f.bm, f.bk, f.stm, f.key, f.rep, f.intended, f.nlegal, f.irrev, f.matclock, f.material,
                 f.status, f.plies, f.err_s, f.err_e, f.result_tok, f.moves_seen)
    return f


def _result_for(side: int, result: str | None) -> str | None:
    if result == "1/2-1/2":
        return "draw"
    if result == "1-0":
        return "win" if side == 0 else "loss"
    if result == "0-1":
        return "win" if side == 1 else "loss"
    return None


def _position_fen(f: Facts, slot: int) -> str:
    def sq(bb, king):
        return [("K" if king else "") + str(i + 1) for i in range(32) if int(bb) >> i & 1]
    w = sq(f.wm[slot], False) + sq(f.wk[slot], True)
    b = sq(f.bm[slot], False) + sq(f.bk[slot], True)
    return f"{'W' if f.stm[slot] == 0 else 'B'}:W{','.join(w)}:B{','.join(b)}"


def _prepare(block: bytes, spans: np.ndarray):
    """Per game (Python, once per game): tags, movetext start, start position, GameType check."""
    n = len(spans)
    mt_start = np.zeros(n, np.int64)
    mt_end = np.zeros(n, np.int64)
    init_pos = np.zeros((n, 4), np.uint64)
    init_stm = np.zeros(n, np.int8)
    active = np.zeros(n, np.bool_)
    pre_status: list[str | None] = [None] * n
    pre_error: list[str | None] = [None] * n
    tags_list: list[dict[str, str]] = []
    start0 = initial_position()
    for i in range(n):
        s, e = int(spans[i, 0]), int(spans[i, 1])
        tags, mt = pdn.parse_tags(block[s:e])
        tags_list.append(tags)
        mt_start[i] = s + mt
        mt_end[i] = e
        gt = pdn.gametype_number(tags.get("GameType"))
        if gt is not None and gt != pdn.RUSSIAN_GAMETYPE:
            pre_status[i] = "unsupported_variant"
            pre_error[i] = f"GameType {tags.get('GameType')!r} is not Russian draughts (25)"
            continue
        fen = tags.get("FEN")
        if fen:
            try:
                wm, wk, bm, bk, stm = pdn.parse_fen(fen)
            except pdn.FenError as exc:
                pre_status[i] = "bad_fen"
                pre_error[i] = f"bad FEN {fen!r}: {exc}"
                continue
        else:
            wm, wk, bm, bk, stm = (int(x) for x in start0)
        init_pos[i] = (wm, wk, bm, bk)
        init_stm[i] = stm
        active[i] = True
    return tags_list, mt_start, mt_end, init_pos, init_stm, active, pre_status, pre_error


def analyze_draughts_block(block: bytes, spans: np.ndarray, *, source: str, first_game_index: int,
                           base_offset: int, editions: Sequence[str]) -> tuple[pa.Table, pa.Table]:
    """Analyze the Russian-draughts games at `spans` ([start, end) offsets into `block`).

    One games row per (game, edition); every game gets a row (a status and a readable error when
    it is not `ok`). Events: one row per claim opportunity (every ply at which the side to move
    could claim) and one per automatic draw (its first ply).
    """
    if isinstance(editions, str):
        editions = [editions]
    eds = [get_edition(e) for e in editions]
    if not eds:
        raise ValueError("at least one draughts edition is required")
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    n = len(spans)
    buf = np.frombuffer(block, dtype=np.uint8)
    tags_list, mt_start, mt_end, init_pos, init_stm, active, pre_status, pre_error = _prepare(block, spans)
    facts = replay_games(buf, mt_start, mt_end, init_pos, init_stm, active)

    # results
    results: list[str | None] = []
    for i in range(n):
        raw = tags_list[i].get("Result")
        res = pdn.RESULT_MAP.get(raw.strip()) if raw else None
        if res is None and facts.result_tok[i] != RES_NONE:
            res = _RESULT_FROM_CODE[int(facts.result_tok[i])]
        results.append(res)
    res_code = np.array([{"1-0": 0, "0-1": 1, "1/2-1/2": 2}.get(r or "", -1) for r in results], np.int8)

    status_names: list[str] = []
    errors: list[str | None] = []
    error_ply: list[int | None] = []
    plies: list[int | None] = []
    for i in range(n):
        if pre_status[i] is not None:
            status_names.append(pre_status[i])
            errors.append(pre_error[i])
            error_ply.append(None)
            plies.append(None)
            continue
        st = int(facts.status[i])
        P = int(facts.plies[i])
        plies.append(P)
        if st == ST_OK or STATUS_NAMES[st] == "no_moves":
            status_names.append(STATUS_NAMES[st])
            errors.append(None if st == ST_OK else "no moves in the movetext")
            error_ply.append(None)
            continue
        es, ee = int(facts.err_s[i]), int(facts.err_e[i])
        tok = block[es:ee].decode("utf-8", "replace") if es >= 0 else ""
        if st in (ST_BAD_TOKEN, ST_ILLEGAL) and es >= 0 and not block[ee:int(mt_end[i])].strip():
            # the bad token is the last thing in the game and no termination token follows
            st = ST_TRUNCATED
        side = "white" if facts.stm[facts.off[i] + P] == 0 else "black"
        move_no = (P + int(init_stm[i])) // 2 + 1  # move numbers as in the movetext (FEN games from move 1)
        where = f"at ply {P} (move {move_no}, {side} to move)"
        if st == ST_TRUNCATED:
            msg = f"game ends without a termination token {where}" + (f"; last token {tok!r}" if tok else "")
        elif st == ST_NULL_MOVE:
            msg = f"placeholder move {tok!r} {where}: the moves are not recorded"
        elif st == ST_BAD_TOKEN:
            msg = f"unreadable movetext token {tok!r} {where}"
        elif st == ST_ILLEGAL:
            nl = int(facts.nlegal[facts.off[i] + P])
            msg = (f"illegal move {tok!r} {where}; position {_position_fen(facts, int(facts.off[i] + P))}, "
                   f"{nl} legal moves")
        else:
            msg = f"ambiguous move {tok!r} {where}: several legal captures match"
        status_names.append(STATUS_NAMES[st])
        errors.append(msg)
        error_ply.append(P)

    valid = active.copy()
    game_rows: dict[str, list] = {k: [] for k in (
        "source", "game_type", "edition", "game_index", "byte_offset", "event", "site", "white", "black",
        "result", "date", "variant", "start_fen", "status", "error", "error_ply", "plies",
        "first_threefold_ply", "first_threefold_claim_ply", "first_missed_claim_ply", "missed_claim_rule",
        "missed_claim_side", "missed_claim_result", "plies_after_missed_claim", "final_repetition_count",
        "final_halfmove_clock", "draw_reason", "end_ply", "end_rule", "end_result", "result_changed",
        "first_balance_ply", "first_kings_vs_king_ply", "first_main_diagonal_ply", "first_small_ending_ply")}
    ev_tables = []
    for ed in eds:
        params = ed.params()
        first = np.zeros((n, 6), np.int64)
        end_ply = np.zeros(n, np.int64)
        end_rule = np.zeros(n, np.int64)
        m_ply = np.zeros(n, np.int64)
        m_rule = np.zeros(n, np.int64)
        m_side = np.zeros(n, np.int64)
        cap = int(np.sum(np.where(valid, 3 * (facts.plies.astype(np.int64) + 1) + 8, 0))) + 1
        ev_game = np.zeros(cap, np.int64)
        ev_ply = np.zeros(cap, np.int64)
        ev_rule = np.zeros(cap, np.int64)
        ev_kind = np.zeros(cap, np.int64)
        ev_side = np.zeros(cap, np.int64)
        ev_rep = np.zeros(cap, np.int64)
        ev_counter = np.zeros(cap, np.int64)
        ev_missed = np.zeros(cap, np.bool_)
        ne = apply_rules(params, facts.off, facts.plies, valid, res_code,
                         facts.wm, facts.wk, facts.bm, facts.bk, facts.stm, facts.rep, facts.intended,
                         facts.nlegal, facts.irrev, facts.matclock,
                         first, end_ply, end_rule, m_ply, m_rule, m_side,
                         ev_game, ev_ply, ev_rule, ev_kind, ev_side, ev_rep, ev_counter, ev_missed)
        for i in range(n):
            tags = tags_list[i]
            ok_facts = bool(valid[i])
            P = int(facts.plies[i]) if ok_facts else None
            fin = int(facts.off[i] + P) if ok_facts else -1
            g = game_rows
            g["source"].append(source)
            g["game_type"].append(GAME_TYPE)
            g["edition"].append(ed.name)
            g["game_index"].append(first_game_index + i)
            g["byte_offset"].append(base_offset + int(spans[i, 0]))
            g["event"].append(tags.get("Event"))
            g["site"].append(tags.get("Site"))
            g["white"].append(tags.get("White"))
            g["black"].append(tags.get("Black"))
            g["result"].append(results[i])
            g["date"].append(tags.get("Date"))
            g["variant"].append(tags.get("GameType"))
            g["start_fen"].append(tags.get("FEN"))
            g["status"].append(status_names[i])
            g["error"].append(errors[i])
            g["error_ply"].append(error_ply[i])
            g["plies"].append(plies[i])

            def fp(r):
                return int(first[i, r]) if ok_facts and first[i, r] >= 0 else None
            g["first_threefold_ply"].append(fp(R_THREEFOLD))
            g["first_threefold_claim_ply"].append(None)
            g["first_balance_ply"].append(fp(R_BALANCE))
            g["first_kings_vs_king_ply"].append(fp(R_KVK))
            g["first_main_diagonal_ply"].append(fp(R_DIAG))
            g["first_small_ending_ply"].append(fp(R_SMALL))
            if ok_facts and m_ply[i] >= 0:
                side = int(m_side[i])
                g["first_missed_claim_ply"].append(int(m_ply[i]))
                g["missed_claim_rule"].append(RULE_NAMES[int(m_rule[i])])
                g["missed_claim_side"].append(SIDE_NAMES[side])
                g["missed_claim_result"].append(_result_for(side, results[i]))
                g["plies_after_missed_claim"].append(P - int(m_ply[i]))
            else:
                for k in ("first_missed_claim_ply", "missed_claim_rule", "missed_claim_side",
                          "missed_claim_result", "plies_after_missed_claim"):
                    g[k].append(None)
            g["final_repetition_count"].append(int(facts.rep[fin]) if ok_facts else None)
            g["final_halfmove_clock"].append(int(facts.irrev[fin]) if ok_facts else None)
            if ok_facts and end_ply[i] >= 0:
                g["end_ply"].append(int(end_ply[i]))
                g["end_rule"].append(RULE_NAMES[int(end_rule[i])])
                g["end_result"].append("1/2-1/2")
                g["result_changed"].append(None if results[i] in (None, "*") else results[i] != "1/2-1/2")
            else:
                g["end_ply"].append(None)
                g["end_rule"].append(None)
                g["end_result"].append(None)
                g["result_changed"].append(None)
            g["draw_reason"].append(None)  # filled below
        # threefold claim plies and draw reasons from the events
        ev_game_l = ev_game[:ne]
        row0 = len(game_rows["source"]) - n
        first_claim = {}
        final_claims: dict[int, set] = {}
        for j in range(ne):
            gi = int(ev_game_l[j])
            P = int(facts.plies[gi])
            r = int(ev_rule[j])
            if r == R_THREEFOLD and gi not in first_claim:
                first_claim[gi] = int(ev_ply[j])
            if int(ev_ply[j]) == P:
                final_claims.setdefault(gi, set()).add(r)
        for i in range(n):
            if i in first_claim:
                game_rows["first_threefold_claim_ply"][row0 + i] = first_claim[i]
            if results[i] == "1/2-1/2" and status_names[i] == "ok":
                at_end = final_claims.get(i, set())
                reason = "agreement"
                ep = end_ply[i]
                if ep >= 0 and ep == facts.plies[i]:
                    reason = RULE_NAMES[int(end_rule[i])]
                elif R_THREEFOLD in at_end:
                    reason = "threefold"
                elif R_BALANCE in at_end:
                    reason = "balance"
                game_rows["draw_reason"][row0 + i] = reason
        ev_tables.append(pa.table({
            "source": pa.array([source] * ne, pa.string()),
            "game_type": pa.array([GAME_TYPE] * ne, pa.string()),
            "edition": pa.array([ed.name] * ne, pa.string()),
            "game_index": pa.array(first_game_index + ev_game_l, pa.int64()),
            "ply": pa.array(ev_ply[:ne], pa.int32()),
            "rule": pa.array([RULE_NAMES[int(x)] for x in ev_rule[:ne]], pa.string()),
            "kind": pa.array([KIND_NAMES[int(x)] for x in ev_kind[:ne]], pa.string()),
            "side": pa.array([SIDE_NAMES[int(x)] for x in ev_side[:ne]], pa.string()),
            "repetition_count": pa.array([int(x) if x >= 0 else None for x in ev_rep[:ne]], pa.int16()),
            "halfmove_clock": pa.array(ev_counter[:ne], pa.int32()),
            "missed": pa.array(ev_missed[:ne], pa.bool_()),
        }))
    games = tables.conform(pa.table(game_rows), tables.GAMES_SCHEMA)
    events = tables.conform(pa.concat_tables(ev_tables), tables.EVENTS_SCHEMA)
    return games, events


def analyze_draughts_bytes(data: bytes, *, source: str = "test",
                           editions: Sequence[str] = ("fshr_russian",)) -> tuple[pa.Table, pa.Table]:
    """Split `data` into games with the simple PDN splitter and analyze them."""
    spans = pdn.split_games(data)
    return analyze_draughts_block(data, spans, source=source, first_game_index=0, base_offset=0,
                                  editions=editions)


def replay_facts(data: bytes) -> tuple[np.ndarray, np.ndarray, Facts]:
    """Test/debug helper: (spans, replayed mask, per-ply facts) of the games in `data`."""
    spans = pdn.split_games(data)
    _, mt_start, mt_end, init_pos, init_stm, active, _, _ = _prepare(data, spans)
    f = replay_games(np.frombuffer(data, dtype=np.uint8), mt_start, mt_end, init_pos, init_stm, active)
    return spans, active, f


def replay_positions(data: bytes) -> list[tuple[str, list[tuple[int, int, int, int, int]]]]:
    """Test/debug helper: per game, (status name, positions at plies 0..plies) as
    (white men, white kings, black men, black kings, side to move); no positions for games
    that were not replayed (other GameTypes, bad FEN)."""
    games, _ = analyze_draughts_bytes(data)
    status = games.column("status").to_pylist()
    spans, active, f = replay_facts(data)
    out = []
    for i in range(len(spans)):
        if not active[i]:
            out.append((status[i], []))
            continue
        o = int(f.off[i])
        out.append((status[i], [(int(f.wm[o + k]), int(f.wk[o + k]), int(f.bm[o + k]), int(f.bk[o + k]),
                                 int(f.stm[o + k])) for k in range(int(f.plies[i]) + 1)]))
    return out
