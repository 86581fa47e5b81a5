"""A slow, obviously correct reference for "can `side` still checkmate?" (FIDE 5.2.2 and 6.9), in
python-chess, for test positions small enough to search whole.

- `helpmate(board, side, plies)`: an iterative-deepening search of every line of at most
  `plies` plies (both sides' moves, the last one `side`'s) for one that ends with `side`
  checkmating; returns the moves or None. Complete up to that length.
- `reachable_mate(board, side, cap)`: a breadth-first search of every position reachable from
  `board` (positions told apart as FIDE 9.2.2 does: python-chess's EPD with the legal e.p.
  square), True as soon as one is a mate by `side`, False when all were visited without one,
  None past `cap` positions. The only pruning is python-chess's own guarantee that
  `has_insufficient_material(side)` is False whenever `side` can still win.
- `truth(board, side)`: "winnable" / "unwinnable" by the two, or None when neither decides.
Nothing here shares code with the kernel (analyzer.kinds.chess._unwinnable).
"""

from __future__ import annotations

from collections import deque

import chess


def _is_mate_by(board: chess.Board, side: bool) -> bool:
    return board.turn != side and board.is_checkmate()


def helpmate(board: chess.Board, side: bool, plies: int) -> list[chess.Move] | None:
    """A line of at most `plies` plies from `board` ending with `side` mating, or None."""
    if _is_mate_by(board, side):
        return []
    first = 1 if board.turn == side else 2
    for depth in range(first, plies + 1, 2):
        line: list[chess.Move] = []
        if _dfs(board.copy(stack=False), side, depth, line):
            return line
    return None


def _dfs(board: chess.Board, side: bool, depth: int, line: list) -> bool:
    if depth == 0:
        return _is_mate_by(board, side)
    if board.has_insufficient_material(side):
        return False
    for move in list(board.legal_moves):
        board.push(move)
        # the last move must give check: every other last move cannot mate
        if depth > 1 or board.is_check():
            line.append(move)
            if _dfs(board, side, depth - 1, line):
                board.pop()
                return True
            line.pop()
        board.pop()
    return False


def _key(board: chess.Board) -> str:
    return board.epd(en_passant="legal")


def reachable_mate(board: chess.Board, side: bool, cap: int = 200_000) -> bool | None:
    """Is a mate by `side` among the positions reachable from `board`? None past `cap` positions."""
    start = board.copy(stack=False)
    seen = {_key(start)}
    todo = deque([start])
    while todo:
        b = todo.popleft()
        if _is_mate_by(b, side):
            return True
        if b.has_insufficient_material(side):
            continue
        for move in list(b.legal_moves):
            b.push(move)
            k = _key(b)
            if k not in seen:
                seen.add(k)
                if len(seen) > cap:
                    return None
                todo.append(b.copy(stack=False))
            b.pop()
    return False


def truth(board: chess.Board, side: bool, plies: int = 6, cap: int = 200_000) -> str | None:
    """'winnable', 'unwinnable' or None (undecided within the limits)."""
    if helpmate(board, side, plies) is not None:
        return "winnable"
    found = reachable_mate(board, side, cap)
    if found is None:
        return None
    return "winnable" if found else "unwinnable"
