"""The python-chess path for the rare games the bitboard kernels do not cover (Chess960).

It produces the same per-position facts as analyzer.chess._replay, one game at a time. Position
keys are 64-bit hashes of python-chess's `_transposition_key()` (only equality within a game
matters); the 1997 identity is not distinguished for Chess960 (its windows are the 2009+ ones).
"""
from __future__ import annotations

import io
import re

import chess
import chess.pgn
import numpy as np

from analyzer.chess import _replay as R
from analyzer.tables import STATUS_CODES


def _key(board: chess.Board) -> int:
    return hash(board._transposition_key()) & 0xFFFFFFFFFFFFFFFF


def _clock_of(node) -> float:
    c = node.clock()
    return float("nan") if c is None else float(c)


def replay_text(text: str, fifty_min_clock: int):
    """Facts of one game (mainline) as a dict of arrays, plus (status, err_ply, message)."""
    game = chess.pgn.read_game(io.StringIO(text))
    if game is None:
        return None, (R.S_NO_MOVES, -1, "no game found")
    try:
        board = game.board()
    except ValueError as exc:
        return None, (S_BAD_FEN, -1, f"invalid [FEN \"{game.headers.get('FEN', '')}\"]: {exc}")
    nodes = list(game.mainline())
    n = len(nodes) + 1
    keys = np.zeros(n, np.uint64)
    hmc = np.zeros(n, np.int32)
    flags = np.zeros(n, np.uint16)
    rep_next = np.zeros(n, np.int8)
    clock = np.full(n, np.nan, np.float32)
    history: list[int] = []
    ws = 0
    last_clk = [float("nan"), float("nan")]
    status = (R.S_OK if nodes else R.S_NO_MOVES, -1, None)
    p = 0
    while True:
        k = _key(board)
        history.append(k)
        keys[p] = k
        hmc[p] = board.halfmove_clock
        f = 0
        if p == ws:
            f |= R.FLAG_WINDOW_START | R.FLAG_WINDOW97
        legal = list(board.legal_moves)
        if legal:
            f |= R.FLAG_HAS_MOVE
        if board.is_check():
            f |= R.FLAG_CHECK
            if not legal:
                f |= R.FLAG_CHECKMATE
        elif not legal:
            f |= R.FLAG_STALEMATE
        if board.is_insufficient_material():
            f |= R.FLAG_INSUFFICIENT
        if board.has_legal_en_passant():
            f |= R.FLAG_LEGAL_EP
        window = history[ws:]
        best = 0
        for mv in legal:
            if board.is_irreversible(mv):
                continue
            board.push(mv)
            c = window.count(_key(board))
            board.pop()
            best = max(best, c if c >= 2 else 0)
        rep_next[p] = best
        if legal and board.halfmove_clock >= fifty_min_clock:
            f |= R.FLAG_FIFTY_LOOKED
            for mv in legal:
                if board.is_zeroing(mv):
                    continue
                board.push(mv)
                live = any(board.generate_legal_moves())
                board.pop()
                if live:
                    f |= R.FLAG_FIFTY_INTENDED
                    break
        flags[p] = f
        stm = 0 if board.turn == chess.WHITE else 1
        clock[p] = last_clk[stm]
        if p == len(nodes):
            break
        node = nodes[p]
        move = node.move
        irreversible = board.is_irreversible(move)
        board.push(move)
        c = _clock_of(node)
        if c == c:
            last_clk[1 - (0 if board.turn == chess.WHITE else 1)] = c
        p += 1
        if irreversible:
            ws = p
    if game.errors:
        status = _error_status(game.errors[0], len(nodes), stm0_of(game))
    facts = {"key": keys, "hmc": hmc, "flags": flags,
             "rep_next": rep_next, "rep_next97": rep_next.copy(), "clock": clock}
    return (facts, stm0_of(game)), status


S_BAD_FEN = STATUS_CODES.index("bad_fen")


def stm0_of(game) -> int:
    return 0 if game.board().turn == chess.WHITE else 1


def _error_status(error: Exception, ply: int, stm0: int):
    """(status, ply, message) for a python-chess parse error, worded as the fast path's."""
    if isinstance(error, chess.AmbiguousMoveError):
        code, what = R.S_AMBIGUOUS, "ambiguous move"
    elif isinstance(error, chess.IllegalMoveError):
        code, what = R.S_ILLEGAL, "illegal move"
    else:
        code, what = R.S_BAD_TOKEN, "unreadable token"
    m = re.search(r"san: '([^']*)'", str(error))
    token = m.group(1) if m else str(error)
    side = "white" if (ply + stm0) % 2 == 0 else "black"
    return code, ply, (f"{what} {token!r} at ply {ply} (move {ply // 2 + 1}, {side} to move); "
                       f"facts kept up to ply {ply}")
