"""Variant games inside a block: replay (numba) into the block's facts, rules per variant.

The chess kind's `analyze_block` (analyzer.kinds.chess.analyze) routes games whose [Variant] tag names one of the seven
Lichess variants here (or all untagged games of a block when the caller passes the variant of the
file, see `analyzer.kinds.chess.variants.variant_from_filename`):

- `splice_variants` replays them with `_replay.replay_batch` and inserts their facts into the
  block's flat arrays (same layout as chess), returning the per-position `vflags` alongside;
- `apply_variant_rules` re-runs the rule kernel on each variant's games with the edition as that
  variant applies it (`editions.variant_params`): Crazyhouse without 50/75-move rules, the
  `lichess` edition's insufficient material per scalachess.
"""

from __future__ import annotations

import numpy as np


def _start(v: int, fen: str | None):
    from analyzer.kinds.chess.variants._start import start_arrays

    return start_arrays(v, fen)


def replay(buf, mt_start, ends, vcodes, fens, fifty_min):
    """Replay games buf[mt_start[i]:ends[i]] (movetext) as variants vcodes[i] from fens[i] (None =
    the variant's start). Returns (facts dict incl. vflags, pos_off, status, err_ply, err_s, err_e,
    stm0, messages) where messages holds FEN errors by game."""
    from analyzer.kinds.chess.variants import _replay as VR

    n = len(mt_start)
    init_idx = np.full(n, -1, np.int64)
    inits: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    where: dict = {}
    errs: dict = {}
    messages: dict[int, str] = {}
    for i in range(n):
        k = (int(vcodes[i]), fens[i])
        if k not in where:
            try:
                arrays = _start(*k)
            except ValueError as exc:
                where[k] = -1
                errs[k] = str(exc)
            else:
                where[k] = len(inits)
                inits.append(arrays)
        init_idx[i] = where[k]
        if where[k] < 0:
            messages[i] = f'invalid [FEN "{fens[i]}"]: {errs[k]}'
    if not inits:
        inits.append(_start(int(vcodes[0]) if n else 1, None))
    init_bb = np.stack([x[0] for x in inits])
    init_mb = np.stack([x[1] for x in inits])
    init_st = np.stack([x[2] for x in inits])
    mt_len = np.where(init_idx >= 0, np.asarray(ends) - np.asarray(mt_start), 0)
    cap = int((mt_len // 2 + 2).sum()) + 2 * n + 16
    pos_off = np.empty(n + 1, np.int64)
    status = np.empty(n, np.int8)
    err_ply = np.empty(n, np.int32)
    err_s = np.empty(n, np.int64)
    err_e = np.empty(n, np.int64)
    facts: dict[str, np.ndarray] = {
        "key": np.empty(cap, np.uint64),
        "hmc": np.empty(cap, np.int32),
        "flags": np.empty(cap, np.uint16),
        "rep_next": np.empty(cap, np.int8),
        "rep_next97": np.empty(cap, np.int8),
        "clock": np.empty(cap, np.float32),
        "vflags": np.empty(cap, np.uint8),
        "eval": np.empty(cap, np.int16),
    }
    total = VR.replay_batch(
        buf,
        np.asarray(mt_start, np.int64),
        np.asarray(ends, np.int64),
        np.asarray(vcodes, np.int64),
        init_idx,
        init_bb,
        init_mb,
        init_st,
        fifty_min,
        pos_off,
        status,
        err_ply,
        err_s,
        err_e,
        facts["key"],
        facts["hmc"],
        facts["flags"],
        facts["rep_next"],
        facts["rep_next97"],
        facts["clock"],
        facts["vflags"],
        facts["eval"],
    )
    facts = {k: v[:total] for k, v in facts.items()}
    stm0 = np.where(init_idx >= 0, init_st[np.maximum(init_idx, 0), 0], 0).astype(np.int64)
    return facts, pos_off, status, err_ply, err_s, err_e, stm0, messages


def splice_variants(
    buf,
    mt_start,
    ends,
    games,
    vcodes,
    fens,
    facts,
    pos_off,
    stm0,
    status,
    err_ply,
    err_s,
    err_e,
    messages,
    fifty_min,
    bad_fen_status,
):
    """Replay the variant games (block indices `games`) and put their facts in place of their
    (empty) ranges in the block's flat arrays. Returns (facts incl. vflags, pos_off, stm0)."""
    games = np.asarray(games, np.int64)
    vf, voff, vstatus, vply, vs, ve, vstm0, vmsg = replay(buf, mt_start[games], ends[games], vcodes, fens, fifty_min)
    for j, g in enumerate(games):
        status[g] = vstatus[j]
        err_ply[g] = vply[j]
        err_s[g] = vs[j]
        err_e[g] = ve[j]
        stm0[g] = vstm0[j]
        if j in vmsg:
            status[g] = bad_fen_status
            messages[int(g)] = vmsg[j]
    n = len(pos_off) - 1
    lengths = np.diff(pos_off).astype(np.int64)
    lengths[games] = np.diff(voff)
    new_off = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=new_off[1:])
    total = int(new_off[-1])
    out = {}
    is_var = np.zeros(n, np.bool_)
    is_var[games] = True
    # Source index of every new position: chess positions from `facts`, variant ones from `vf`.
    src = np.empty(total, np.int64)
    from_var = np.repeat(is_var, lengths)
    starts_new = np.repeat(new_off[:-1], lengths)
    within = np.arange(total, dtype=np.int64) - starts_new
    old_start = np.repeat(pos_off[:-1], lengths)
    vstart = np.zeros(n, np.int64)
    vstart[games] = voff[:-1]
    var_start = np.repeat(vstart, lengths)
    src[:] = np.where(from_var, var_start + within, old_start + within)
    for k, arr in facts.items():
        col = np.empty(total, arr.dtype)
        col[~from_var] = arr[src[~from_var]]
        col[from_var] = vf[k][src[from_var]]
        out[k] = col
    vflags = np.zeros(total, np.uint8)
    vflags[from_var] = vf["vflags"][src[from_var]]
    out["vflags"] = vflags
    return out, new_off, stm0


def apply_variant_rules(rules, pos_off, stm0, result_code, time_forfeit, auto_on, ed, facts, groups, out, ev):
    """Run the rule kernel again for each variant's games with that variant's parameters and put
    their verdict rows (in `out`) and events in place. `groups`: {vcode: block game indices};
    `rules(sub_off, stm0, result_code, time_forfeit, auto_on, params, facts, cap)` is the chess
    kind's call of the kernel. Returns the events, the variant games' rows replaced."""
    from analyzer.codes import V_END_PLY, V_END_RULE
    from analyzer.kinds.chess._tables import FLAG_INSUFFICIENT
    from analyzer.kinds.chess.variants._replay import VF_END, VF_LICHESS_INSUFFICIENT
    from analyzer.kinds.chess.variants.editions import variant_params

    if not groups:
        return ev
    drop = np.zeros(len(stm0), np.bool_)
    new_events = []
    for v, games in groups.items():
        games = np.asarray(games, np.int64)
        drop[games] = True
        params, lichess_insufficient = variant_params(ed, v)
        lengths = (pos_off[games + 1] - pos_off[games]).astype(np.int64)
        sub_off = np.zeros(len(games) + 1, np.int64)
        np.cumsum(lengths, out=sub_off[1:])
        idx = np.repeat(pos_off[games] - sub_off[:-1], lengths) + np.arange(int(sub_off[-1]))
        sub = {k: facts[k][idx] for k in ("key", "hmc", "flags", "rep_next", "rep_next97", "clock")}
        if lichess_insufficient:
            li = (facts["vflags"][idx] & VF_LICHESS_INSUFFICIENT) != 0
            sub["flags"] = (sub["flags"] & np.uint16(~FLAG_INSUFFICIENT & 0xFFFF)) | np.where(
                li, np.uint16(FLAG_INSUFFICIENT), np.uint16(0)
            ).astype(np.uint16)
        sub_out, sub_ev = rules(
            sub_off,
            stm0[games],
            result_code[games],
            time_forfeit[games],
            auto_on[games],
            params,
            sub,
            max(64, int(sub_off[-1]) // 8),
        )
        # A game whose last position ended it by the variant's own rule (king exploded, hill,
        # third check, race, no pieces) did not end by an automatic draw there: scalachess's
        # Position.status checks the variant end before autoDraw (python-chess's outcome() too).
        last = sub_off[1:] - 1
        if len(idx):
            ended = (facts["vflags"][idx[np.maximum(last, 0)]] & VF_END) != 0
            at_end = ended & (sub_out[:, V_END_PLY] == (sub_off[1:] - sub_off[:-1] - 1))
            sub_out[at_end, V_END_PLY] = -1
            sub_out[at_end, V_END_RULE] = -1
        out[games] = sub_out
        sub_ev["game"] = games[sub_ev["game"]]
        new_events.append(sub_ev)
    keep = ~drop[ev["game"]]
    merged = {k: np.concatenate([v[keep]] + [e[k] for e in new_events]) for k, v in ev.items()}
    order = np.lexsort((merged["ply"], merged["game"]))
    return {k: v[order] for k, v in merged.items()}


def final_variant_outcome(facts, pos_off, white_to_move_final):
    """Per game: 'white' / 'black' / 'draw' when the final position is a variant end (python-chess
    is_variant_win/loss/draw for the side to move), else None."""
    from analyzer.kinds.chess.variants._replay import VF_DRAW, VF_LOSS, VF_WIN

    n = len(pos_off) - 1
    out = np.full(n, None, dtype=object)
    vflags = facts.get("vflags")
    if vflags is None:
        return out
    has = pos_off[1:] > pos_off[:-1]
    last = np.maximum(pos_off[1:] - 1, 0)
    for g in np.nonzero(has)[0]:
        f = int(vflags[last[g]])
        if not f & (VF_WIN | VF_LOSS | VF_DRAW):
            continue
        if f & VF_DRAW:
            out[g] = "draw"
        elif f & VF_WIN:
            out[g] = "white" if white_to_move_final[g] else "black"
        elif f & VF_LOSS:
            out[g] = "black" if white_to_move_final[g] else "white"
    return out
