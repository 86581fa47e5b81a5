"""Boards at requested positions: the few games whose positions Python must see whole (the
material of a long window without capture or pawn move, for editions whose move limit depends
on it; a tablebase probe at a 50- or 75-move event) are replayed again here, each up to its last
requested ply. The replay kernel keeps no boards (it would cost every position 100 bytes); these
games are a few in ten thousand (halfmove clock >= 99), so replaying them again is the cheap way.

The movetext is read exactly as the replay reads it (_replay.next_move_token, resolve_san,
make_move, null moves as passes), from the same start positions.
"""

from __future__ import annotations

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit

from analyzer.kinds.chess._board import JIT, checks_and_pins, king_square, make_move
from analyzer.kinds.chess._replay import (
    TOK_END,
    TOK_SAN,
    TOK_UNTERMINATED,
    _load_start,
    _pass_turn,
    next_move_token,
    resolve_san,
)
from analyzer.kinds.chess._tables import CT_SIZE, ST_STM


@njit(**JIT)
def boards_at(buf, mt_start, mt_end, init_idx, init_bb, init_mb, init_st, init_ct, req_game, req_ply, out_bb, out_st):
    """The board of game req_game[r] at ply req_ply[r] for every request r (requests sorted by
    game, then ply; games and start positions as replay_batch takes them): out_bb[r] its 8
    bitboards, out_st[r] its state (side to move, castling bits, e.p. square, halfmove clock),
    as the replay holds them. out_st[r, 0] = -1 where the game does not reach that ply. Returns
    the number of requests answered."""
    n_req = len(req_game)
    bb = np.empty(8, np.uint64)
    mb = np.empty(64, np.int8)
    st = np.empty(4, np.int64)
    ct = np.empty(CT_SIZE, np.int64)
    pin_out = np.zeros(1, np.uint64)
    last_clk = np.zeros(2, np.float64)
    flags = np.zeros(1, np.uint16)  # (next_move_token notes offers and evaluations: not kept here)
    evals = np.zeros(1, np.int16)
    answered = 0
    r = 0
    while r < n_req:
        g = req_game[r]
        r_end = r
        while r_end < n_req and req_game[r_end] == g:
            out_st[r_end, 0] = -1
            r_end += 1
        ii = init_idx[g]
        if ii < 0:
            r = r_end
            continue
        _load_start(init_bb, init_mb, init_st, ii, bb, mb, st)
        for q in range(CT_SIZE):
            ct[q] = init_ct[ii, q]
        i = mt_start[g]
        e = mt_end[g]
        plies = 0
        line_start = True
        while True:
            while r < r_end and req_ply[r] == plies:
                for q in range(8):
                    out_bb[r, q] = bb[q]
                for q in range(4):
                    out_st[r, q] = st[q]
                answered += 1
                r += 1
            if r >= r_end:
                break
            flags[0] = 0
            evals[0] = 0
            kind, a, b, i, line_start = next_move_token(
                buf, i, e, plies, last_clk, flags, 0, 1 - st[ST_STM], line_start, False, evals
            )
            if kind != TOK_SAN:
                if kind == TOK_END or kind == TOK_UNTERMINATED:
                    break
                _pass_turn(st)  # a null move
            else:
                stm = st[ST_STM]
                chk = checks_and_pins(bb, stm, king_square(bb, stm), pin_out)
                m, nmatch = resolve_san(bb, mb, st, ct, buf, a, b, chk, pin_out[0])
                if nmatch != 1:
                    break
                make_move(bb, mb, st, ct, m)
            plies += 1
        r = r_end
    return answered


analyzer._numba_env.plain_calls(globals())
