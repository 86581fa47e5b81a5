"""KBB v KN games built from the Syzygy tables, for the tablebase and 1988-clause tests (the
samples have no such game): each starts from a FEN found in the tables and is played by
python-chess with moves chosen by the tables, so what the tables say of every position is known
independently of the analyzer.

  a_win_in_time    the defender (KN) to move in a blessed loss whose zeroing move is 101-140
                   plies away; both sides play best by DTZ for 100 plies, then the defender
                   claims the 50-move draw (1/2-1/2). At the claim the tables call the position a
                   plain loss for the claimant (the win comes within 50 plies): under the 1988
                   clause (75 moves) the claim was not yet possible and the win was in time.
  a_win_in_time_black  the same with colours swapped (Black has the bishops).
  b_cursed         the defender to move in a blessed loss; the stronger side keeps the position a
                   cursed win without progress for 100 plies, then the defender claims: the
                   50-move draw of a cursed win (not a win in time under 75 moves either).
  c_won_after_claim  as a_win_in_time, but the defender does not claim: the stronger side wins
                   (best play by DTZ to the capture, then to mate; 1-0). Under FIDE 2018 the
                   defender missed a claim at ply 100; under the 1988 clause it had none.

`python tests/tb_games.py DIR` prints the games (tests/fixtures/kbbkn_games.pgn was written so).
"""

from __future__ import annotations

import random
import sys

import chess
import chess.pgn
import chess.syzygy

SEED = 37


def _value(tb, board: chess.Board) -> tuple[int, int]:
    return tb.probe_wdl(board), tb.probe_dtz(board)


def _random_kbbkn(rng: random.Random, strong_white: bool, turn: bool) -> chess.Board:
    """A random legal position: the strong side K+B+B (bishops on both colours), the other K+N."""
    while True:
        board = chess.Board(None)
        squares = rng.sample(range(64), 5)
        s, w = strong_white, not strong_white
        board.set_piece_at(squares[0], chess.Piece(chess.KING, s))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, w))
        board.set_piece_at(squares[2], chess.Piece(chess.BISHOP, s))
        board.set_piece_at(squares[3], chess.Piece(chess.BISHOP, s))
        board.set_piece_at(squares[4], chess.Piece(chess.KNIGHT, w))
        if (chess.square_file(squares[2]) + chess.square_rank(squares[2])) % 2 == (
            chess.square_file(squares[3]) + chess.square_rank(squares[3])
        ) % 2:
            continue
        board.turn = turn
        if board.is_valid() and not board.is_game_over():
            return board


def find_start(tb, rng: random.Random, strong_white: bool, lo: int, hi: int) -> chess.Board:
    """The defender to move, a blessed loss with lo < |DTZ| <= hi."""
    while True:
        board = _random_kbbkn(rng, strong_white, turn=not strong_white)
        wdl, dtz = _value(tb, board)
        if wdl == -1 and lo < -dtz <= hi:
            return board


def _children(tb, board: chess.Board):
    """(move, WDL and DTZ of the position after it, for the side to move there), non-zeroing moves
    first considered; zeroing ones flagged."""
    out = []
    for move in board.legal_moves:
        zeroing = board.is_zeroing(move)
        board.push(move)
        try:
            if board.is_checkmate():
                wdl, dtz = -2, 0
            else:
                wdl, dtz = _value(tb, board)
        finally:
            board.pop()
        out.append((move, wdl, dtz, zeroing))
    return out


def best_move(tb, board: chess.Board) -> chess.Move:
    """Best play by DTZ (python-chess's convention): the winner goes to the child with the
    smallest distance to its zeroing move (a mate first), the loser to the longest; a draw keeps
    the draw."""
    kids = _children(tb, board)
    mates = [m for m, w, d, z in kids if w == -2 and d == 0]
    if mates:
        return mates[0]
    own = tb.probe_wdl(board)
    if own > 0:  # win: a child that is lost for the opponent, fastest zeroing (a zeroing move wins at once)
        cands = [(z is False, abs(d), m.uci(), m) for m, w, d, z in kids if w < 0 and (w == -2 or own == 1)]
        return min(cands)[3]
    cands = [(-abs(d) if not z else 0, m.uci(), m) for m, w, d, z in kids if w == -own]
    return min(cands)[2]


def shuffle_move(tb, board: chess.Board, seen: dict, rng: random.Random) -> chess.Move:
    """A non-zeroing move that keeps the tables' value (the winner stays cursed-winning, the loser
    stays losing), to the position seen least often (no fivefold, few repetitions)."""
    own = tb.probe_wdl(board)
    kids = _children(tb, board)
    cands = []
    for m, w, _d, z in kids:
        if z or w != -own:
            continue
        board.push(m)
        key = board._transposition_key()
        board.pop()
        cands.append((seen.get(key, 0), rng.random(), m))
    return min(cands)[2]


def _game(board: chess.Board, moves: list[chess.Move], result: str, name: str, strong_white: bool) -> str:
    game = chess.pgn.Game()
    game.headers["Event"] = f"KBBvKN test game {name}"
    game.headers["Site"] = "tests/tb_games.py"
    game.headers["White"] = "strong (KBB)" if strong_white else "defender (KN)"
    game.headers["Black"] = "defender (KN)" if strong_white else "strong (KBB)"
    game.headers["Result"] = result
    game.setup(board)
    node = game
    for m in moves:
        node = node.add_variation(m)
    return str(game) + "\n"


def build(tb_dir: str) -> dict[str, str]:
    """name -> PGN text of each game (deterministic for a given set of tables)."""
    rng = random.Random(SEED)
    out = {}
    with chess.syzygy.open_tablebase(tb_dir) as tb:
        for name, strong_white in (("a_win_in_time", True), ("a_win_in_time_black", False)):
            start = find_start(tb, rng, strong_white, 110, 140)
            board, moves = start.copy(), []
            for _ in range(100):
                m = best_move(tb, board)
                moves.append(m)
                board.push(m)
            out[name] = _game(start, moves, "1/2-1/2", name, strong_white)
            if strong_white:  # c: the same start, played on to the win
                while not board.is_game_over():
                    m = best_move(tb, board)
                    moves.append(m)
                    board.push(m)
                assert board.is_checkmate()
                out["c_won_after_claim"] = _game(start, moves, "1-0", "c_won_after_claim", True)
        start = find_start(tb, rng, True, 100, 200)
        board, moves, seen = start.copy(), [], {start._transposition_key(): 1}
        for _ in range(100):
            m = shuffle_move(tb, board, seen, rng)
            moves.append(m)
            board.push(m)
            key = board._transposition_key()
            seen[key] = seen.get(key, 0) + 1
        out["b_cursed"] = _game(start, moves, "1/2-1/2", "b_cursed", True)
    return out


if __name__ == "__main__":
    for text in build(sys.argv[1]).values():
        print(text)
