"""What a position was worth where a move-count rule fired: the material of each window the
50- and 75-move counts run in, tablebase values (`--syzygy`) and the input's `[%eval]`.

Per block, in Python over numpy arrays (never per position):

- `window_material`: every position whose halfmove clock is at least the editions' smallest
  threshold gets its window's material signature (kinds.chess.material), from one board per
  window (_boards.boards_at replays those few games again): the rule kernel reads the move limit
  of the window by it, the events' `material` column names it.
- `Probes`: tablebase values of the positions of the 50- and 75-move events and of the final
  positions with no more pieces than the tables hold.
- `event_columns`, `final_columns`: the new columns of the events, games and verdicts tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac, codes
from analyzer.kinds.chess import kernels, material as mat
from analyzer.kinds.chess._tables import (
    EVAL_CP_MAX,
    EVAL_MATE_CODE,
    EVAL_NONE,
    FLAG_CHECKMATE,
    FLAG_INSUFFICIENT,
    FLAG_STALEMATE,
)

_DICT = pa.dictionary(pa.int32(), pa.string())
WIN_CHANCE_MULTIPLIER = -0.00368208  # lila WinPercent.winningChances (lila PR #11148)
WIN_CHANCE_CEILING = 1000  # lila Eval.Cp.CEILING: centipawns clamped to +-1000, a mate counts as +-1000
MOVE_RULES = (codes.R_FIFTY, codes.R_SEVENTYFIVE)
FINAL_MATERIAL_PIECES = 7  # games.final_material names the final material up to this many pieces


@dataclass
class BoardSource:
    """Where boards of the block's games come from: the text and the replay's start positions."""

    buf: np.ndarray
    mt_start: np.ndarray
    ends: np.ndarray
    init_idx: np.ndarray
    init_bb: np.ndarray
    init_mb: np.ndarray
    init_st: np.ndarray
    init_ct: np.ndarray

    def boards(self, games: np.ndarray, plies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bb k x 8, st k x 4) of each (game, ply), sorted by game then ply; st[:, 0] = -1 where
        the game does not reach the ply (it never happens for positions the replay wrote)."""
        k = len(games)
        out_bb = np.zeros((k, 8), np.uint64)
        out_st = np.full((k, 4), -1, np.int64)
        if k:
            kernels.boards_at(
                self.buf,
                self.mt_start,
                self.ends,
                self.init_idx,
                self.init_bb,
                self.init_mb,
                self.init_st,
                self.init_ct,
                np.ascontiguousarray(games, np.int64),
                np.ascontiguousarray(plies, np.int64),
                out_bb,
                out_st,
            )
        return out_bb, out_st

    def castling_table(self, g: int) -> np.ndarray:
        return self.init_ct[max(int(self.init_idx[g]), 0)]


def game_of(pos_off: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return (np.searchsorted(pos_off, positions, side="right") - 1).astype(np.int64)


def window_material(src: BoardSource, pos_off: np.ndarray, hmc: np.ndarray, threshold: int) -> np.ndarray:
    """Each position's material signature where its halfmove clock is >= threshold (in games the
    chess replay replayed); zero elsewhere, which no reader looks at. One board per window."""
    if threshold >= 1 << 29 or len(hmc) == 0:
        return np.zeros(1, np.uint64)
    hit = np.flatnonzero(hmc >= threshold)
    if len(hit) == 0:
        return np.zeros(1, np.uint64)
    games = game_of(pos_off, hit)
    keep = src.init_idx[games] >= 0
    hit, games = hit[keep], games[keep]
    if len(hit) == 0:
        return np.zeros(1, np.uint64)
    # A window's positions follow one another (the count goes up by one per ply): a new run
    # starts where the position before is not in it or belongs to another game.
    new = np.ones(len(hit), np.bool_)
    new[1:] = (hit[1:] != hit[:-1] + 1) | (games[1:] != games[:-1])
    starts = np.flatnonzero(new)
    bb, _ = src.boards(games[starts], hit[starts] - pos_off[games[starts]])
    sig = mat.signatures(bb)
    run_len = np.diff(np.append(starts, len(hit)))
    out = np.zeros(len(hmc), np.uint64)
    out[hit] = np.repeat(sig, run_len)
    return out


@dataclass
class Probes:
    """Tablebase values of a block's positions (by position index): WDL, DTZ, status."""

    wdl: dict = field(default_factory=dict)
    dtz: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)  # "events:<status>", "final:<status>" -> positions
    warnings: list = field(default_factory=list)

    def count(self, where: str, status: str, n: int = 1) -> None:
        if n:
            key = f"{where}:{status}"
            self.counts[key] = self.counts.get(key, 0) + n


def probe_positions(
    tb,
    src: BoardSource,
    pos_off: np.ndarray,
    key: np.ndarray,
    material_sig: np.ndarray,
    event_positions: np.ndarray,
    final_bb: np.ndarray,
    final_st: np.ndarray,
    probes: Probes,
    flags: np.ndarray,
) -> None:
    """Probe the distinct positions of the 50/75-move events (WDL and DTZ) and the final
    positions (games the chess replay replayed) with no more pieces than the tables hold (WDL;
    DTZ where the final position is also an event, or a draw, mate or stalemate, which need no
    probe). DTZ probes are most of the cost (python-chess: ~1.3 ms against ~0.2 for WDL), and
    final positions are a tenth of a Lichess dump's games: probing DTZ at every one of them costs
    the scan 1.4x on lichess_sample (benchmarks/RESULTS.md)."""
    from analyzer.kinds.chess.position import to_board
    from analyzer.kinds.chess.tablebase import STATUS_NAMES

    maxp = tb.max_pieces
    ev = np.unique(event_positions)
    if len(ev):
        few = mat.pieces(material_sig[ev]) <= maxp
        probes.count("events", "too_many_pieces", int((~few).sum()))
        ev = ev[few]
        games = game_of(pos_off, ev)
        bb, st = src.boards(games, ev - pos_off[games])
        for j in range(len(ev)):
            if st[j, 0] < 0:
                probes.count("events", "not_replayed")
                continue
            p = int(ev[j])
            board = to_board(bb[j], st[j], src.castling_table(int(games[j])))
            wdl, dtz, status = tb.probe(int(key[p]), board, True, _ended(flags[p]))
            probes.count("events", STATUS_NAMES[status])
            if status == 0:
                probes.wdl[p] = wdl
                probes.dtz[p] = dtz
    replayed = np.flatnonzero(final_st[:, 0] >= 0)
    if len(replayed):
        n_pieces = np.bitwise_count(final_bb[replayed, 6] | final_bb[replayed, 7])
        few = replayed[n_pieces <= maxp]
        probes.count("final", "too_many_pieces", len(replayed) - len(few))
        # a material without a table: no board to build, no probe (most 5-piece positions with a
        # 3-4-piece set, say)
        sigs = mat.signatures(final_bb[few])
        uniq, inv = np.unique(sigs, return_inverse=True)
        covered = np.array([tb.covers(mat.table_name(int(u))) for u in uniq], np.bool_)[inv]
        probes.count("final", "no_table", int((~covered).sum()))
        few = few[covered]
        for g in few.tolist():
            p = int(pos_off[g + 1] - 1)
            if p in probes.wdl or p < int(pos_off[g]):
                continue
            board = to_board(final_bb[g], final_st[g], src.castling_table(g))
            ended = _ended(flags[p])
            wdl, dtz, status = tb.probe(int(key[p]), board, False, ended)
            probes.count("final", STATUS_NAMES[status])
            if status == 0:
                probes.wdl[p] = wdl
                probes.dtz[p] = dtz
    probes.warnings = tb.warnings()


def _ended(flag: int) -> int:
    """What the replay's flags already say of a position's tablebase values (Tables.probe's
    `ended`): 1 checkmate, 2 stalemate, 3 dead by material (insufficient material on both
    sides: the tables can only call it a draw), 0 nothing."""
    if flag & FLAG_CHECKMATE:
        return 1
    if flag & FLAG_STALEMATE:
        return 2
    return 3 if flag & FLAG_INSUFFICIENT else 0


def win_in_time(wdl: np.ndarray, dtz: np.ndarray, clock: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """1 / 0 / -1 (null): can the side that wins by the tables (the side to move for WDL > 0, the
    other for WDL < 0) make its next zeroing move before the halfmove clock reaches `limit`
    (plies; 0 = no limit), counted from `clock`: clock + |DTZ| <= limit. Without DTZ, what WDL
    alone decides: a win (|DTZ| <= 100) with clock + 100 <= limit is in time, a cursed win
    (|DTZ| > 100) with a limit of at most 100 is not, no limit is always in time. Null where WDL
    is null or 0 (no side wins) or neither decides (wdl, dtz: -99 = null)."""
    out = np.full(len(wdl), -1, np.int8)
    won = (wdl != -99) & (wdl != 0)
    no_limit = limit <= 0
    with_dtz = won & (dtz != -99)
    out[with_dtz] = np.where(no_limit[with_dtz] | (clock + np.abs(dtz) <= limit)[with_dtz], 1, 0)
    bare = won & (dtz == -99)
    plain = np.abs(wdl) == 2
    out[bare & (no_limit | (plain & (clock + 100 <= limit)))] = 1
    out[bare & ~no_limit & ~plain & (limit <= 100)] = 0
    return out


def win_chance(code: np.ndarray, white_to_move: np.ndarray) -> np.ndarray:
    """The side to move's win chance in percent (NaN without an evaluation), by Lichess's
    formula 50 + 50 * (2 / (1 + exp(-0.00368208 * cp)) - 1), cp from the side to move's view,
    clamped to +-1000; a mate counts as +-1000 (lila WinPercent.fromMate), "#0" (the side to move
    is mated) as 0 %."""
    code = code.astype(np.int64)
    none = code == EVAL_NONE
    mate = (np.abs(code) > EVAL_CP_MAX) & ~none
    cp = np.clip(code, -WIN_CHANCE_CEILING, WIN_CHANCE_CEILING).astype(np.float64)
    cp = np.where(mate, np.sign(code) * WIN_CHANCE_CEILING, cp)
    cp = np.where(white_to_move, cp, -cp)
    pct = 50 + 50 * (2 / (1 + np.exp(WIN_CHANCE_MULTIPLIER * cp)) - 1)
    mated = mate & (np.abs(code) == EVAL_MATE_CODE)
    pct = np.where(mated, 0.0, pct)
    return np.where(none, np.nan, pct).astype(np.float32)


def eval_parts(code: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """(eval_cp, eval_mate) columns of eval codes: centipawns or mate in N, from White's view."""
    code = code.astype(np.int64)
    none = code == EVAL_NONE
    mate = (np.abs(code) > EVAL_CP_MAX) & ~none
    cp = pa.array(code.astype(np.int32), mask=none | mate)
    n = np.sign(code) * (EVAL_MATE_CODE - np.abs(code))
    return cp, pa.array(n.astype(np.int16), mask=~mate)


def _lookup(d: dict, positions: np.ndarray, null: int) -> np.ndarray:
    """d[p] per position (null where absent or None), vectorised over the few positions probed."""
    out = np.full(len(positions), null, np.int64)
    items = [(p, v) for p, v in d.items() if v is not None]
    if items and len(positions):
        keys = np.array([p for p, _ in items], np.int64)
        vals = np.array([v for _, v in items], np.int64)
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        j = np.minimum(np.searchsorted(keys, positions), len(keys) - 1)
        hit = keys[j] == positions
        out[hit] = vals[j[hit]]
    return out


def event_columns(
    ev: dict,
    ed,
    pos_off: np.ndarray,
    stm0: np.ndarray,
    facts: dict,
    material_sig: np.ndarray,
    chess_game: np.ndarray,
    probes: Probes | None,
) -> dict:
    """The events' value columns of one edition's events (Arrow arrays, one row per event).
    material_sig: window_material's array; chess_game: per game, replayed by the chess replay
    (the variants' games have no material signature: their limits are the edition's own)."""
    m = len(ev["game"])
    games = ev["game"].astype(np.int64)
    pos = pos_off[games] + ev["ply"].astype(np.int64)
    code = facts["eval"][pos] if m else np.zeros(0, np.int16)
    cp, mate_n = eval_parts(code)
    white = (stm0[games] + ev["ply"]) % 2 == 0
    chance = win_chance(code, white)
    cols: dict = {"eval_cp": cp, "eval_mate": mate_n, "win_chance": pa.array(chance, mask=np.isnan(chance))}
    moves = np.isin(ev["rule"], MOVE_RULES)
    known = moves & chess_game[games] & (len(material_sig) > 1)
    sig = np.zeros(m, np.uint64)
    if known.any():
        sig[known] = material_sig[pos[known]]
    limit = np.zeros(m, np.int64)
    base = (2 * ed.claim_moves, 2 * ed.automatic_moves)
    for s in np.unique(sig[known]).tolist():
        claim, auto = ed.move_limits(int(s))
        sel = known & (sig == s)
        limit[sel] = np.where(ev["rule"][sel] == codes.R_FIFTY, claim, auto)
    other = moves & ~known
    limit[other] = np.where(ev["rule"][other] == codes.R_FIFTY, base[0], base[1])
    cols["material"] = _names_column(sig, known)
    cols["limit_plies"] = pa.array(limit.astype(np.int32), mask=~moves | (limit <= 0))
    if probes is not None:
        wdl = np.where(moves, _lookup(probes.wdl, pos, -99), -99)
        dtz = np.where(wdl != -99, _lookup(probes.dtz, pos, -99), -99)
        wit = win_in_time(wdl, dtz, ev["hmc"].astype(np.int64), limit)
        if ed.stalemate_wins:  # the tables score stalemate as a draw: no answer under this edition
            wit[:] = -1
        cols["tb_wdl"] = pa.array(wdl.astype(np.int8), mask=wdl == -99)
        cols["tb_dtz"] = pa.array(dtz.astype(np.int16), mask=dtz == -99)
        cols["win_in_time"] = pa.array(wit > 0, mask=wit < 0)
    return cols


def _names_column(sig: np.ndarray, valid: np.ndarray) -> pa.Array:
    """Material names (strings, null where not valid), one name computed per distinct material.
    Plain strings, not an Arrow dictionary: a dictionary that differs from block to block makes
    Parquet files whose size depends on how the blocks were cut (Parquet's own dictionary
    encoding compresses them alike)."""
    uniq, inv = np.unique(np.where(valid, sig, 0), return_inverse=True)
    labels = pa.array(mat.names(uniq), pa.string())
    idx = np.where(valid, inv, -1).astype(np.int32)
    return ac.take(labels, pa.array(idx, mask=idx < 0))


def final_limit(ed, sig: int) -> int:
    """The count a final position runs into under an edition: its claim count if it has one,
    else its automatic count, else 0 (none)."""
    claim, auto = ed.move_limits(sig)
    return claim if claim > 0 else auto


def final_columns(
    pos_off: np.ndarray, final_bb: np.ndarray, final_st: np.ndarray, probes: Probes | None
) -> tuple[dict, np.ndarray]:
    """(games columns final_material, final_tb_wdl, final_tb_dtz; each game's final material
    signature, 0 where not replayed)."""
    replayed = final_st[:, 0] >= 0
    sig = np.where(replayed, mat.signatures(final_bb), 0).astype(np.uint64)
    # named up to 7 pieces (the largest tablebases): an endgame's material; the middlegames'
    # thousands of distinct materials per block would cost a name each and a large dictionary
    named = replayed & (mat.pieces(sig) <= FINAL_MATERIAL_PIECES)
    cols: dict = {"final_material": _names_column(sig, named)}
    if probes is not None:
        last = (pos_off[1:] - 1).astype(np.int64)
        wdl = np.where(replayed, _lookup(probes.wdl, last, -99), -99)
        dtz = np.where(wdl != -99, _lookup(probes.dtz, last, -99), -99)
        cols["final_tb_wdl"] = pa.array(wdl.astype(np.int8), mask=wdl == -99)
        cols["final_tb_dtz"] = pa.array(dtz.astype(np.int16), mask=dtz == -99)
    return cols, sig


def final_win_in_time(ed, games_cols: dict, final_sig: np.ndarray, final_st: np.ndarray) -> pa.Array | None:
    """The verdicts' final_win_in_time of one edition (None without tablebase columns)."""
    if "final_tb_wdl" not in games_cols:
        return None
    wdl = np.asarray(ac.fill_null(games_cols["final_tb_wdl"], -99).to_numpy(zero_copy_only=False), np.int64)
    dtz = np.asarray(ac.fill_null(games_cols["final_tb_dtz"], -99).to_numpy(zero_copy_only=False), np.int64)
    limit = np.zeros(len(wdl), np.int64)
    need = np.flatnonzero((wdl != -99) & (wdl != 0))  # (a few: the others are null anyway)
    if len(need):
        uniq, inv = np.unique(final_sig[need], return_inverse=True)
        limit[need] = np.array([final_limit(ed, int(s)) for s in uniq], np.int64)[inv]
    wit = win_in_time(wdl, dtz, final_st[:, 3].astype(np.int64), limit)
    if ed.stalemate_wins:
        wit[:] = -1
    return pa.array(wit > 0, mask=wit < 0)


def notes(probes: Probes | None) -> dict:
    """What the block tells the scan's summary about tablebase probes."""
    if probes is None:
        return {}
    return {"tablebase": dict(probes.counts), "tablebase_warnings": dict.fromkeys(probes.warnings, 1)}
