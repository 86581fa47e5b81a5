"""Generated variant games (python-chess `chess.variant` boards) that repeat positions.

Random legal play, biased towards undoing the side's previous move (back-and-forth shuffles) and
towards non-pawn, non-capture moves, so threefold/fivefold repetitions and long halfmove clocks
occur; a few games get %clk comments and draw-offer comments. Deterministic for a seed.
"""

from __future__ import annotations

import random

import chess
import chess.pgn
import chess.variant

CLASSES = {
    "kingofthehill": chess.variant.KingOfTheHillBoard,
    "threecheck": chess.variant.ThreeCheckBoard,
    "antichess": chess.variant.AntichessBoard,
    "atomic": chess.variant.AtomicBoard,
    "horde": chess.variant.HordeBoard,
    "racingkings": chess.variant.RacingKingsBoard,
    "crazyhouse": chess.variant.CrazyhouseBoard,
}


def _chess960(rng: random.Random) -> chess.Board:
    return chess.Board.from_chess960_pos(rng.randrange(960))


# (a factory of a Chess960 start position, not a board class: the chess kind replays Chess960;
# CLASSES holds the seven variants of analyzer.kinds.chess.variants)
GENERATORS = {**CLASSES, "chess960": _chess960}


def generate_game(
    cls,
    rng: random.Random,
    max_plies: int = 220,
    shuffle: float = 0.55,
    quiet: float = 0.8,
    clocks: bool = False,
    index: int = 0,
) -> chess.pgn.Game:
    board = cls(rng) if cls is _chess960 else cls()
    game = chess.pgn.Game()
    game.setup(board)
    name = "Chess960" if cls is _chess960 else cls.aliases[0]
    game.headers["Event"] = f"Generated {name} game {index}"
    game.headers["Site"] = "analyzer tests/variant_games.py"
    game.headers["White"] = "random"
    game.headers["Black"] = "random"
    node = game
    t = [300.0, 300.0]
    for _ in range(max_plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        pick = None
        if len(board.move_stack) >= 2 and rng.random() < shuffle:
            prev = board.move_stack[-2]
            if not prev.drop:
                rev = chess.Move(prev.to_square, prev.from_square)
                if rev in legal:
                    pick = rev
        if pick is None and rng.random() < quiet:
            calm = [m for m in legal if not board.is_zeroing(m)]
            if calm:
                pick = rng.choice(calm)
        if pick is None:
            pick = rng.choice(legal)
        side = 0 if board.turn else 1
        node = node.add_variation(pick)
        if clocks:
            t[side] = max(0.0, t[side] - rng.randrange(0, 7))
            node.set_clock(t[side])
        if rng.random() < 0.01:
            node.comment = (node.comment + " " if node.comment else "") + (
                "White offers draw" if side == 0 else "Black offers draw"
            )
        board.push(pick)
    outcome = board.outcome()
    game.headers["Result"] = outcome.result() if outcome else rng.choice(["1-0", "0-1", "1/2-1/2"])
    return game


def generate_pgn(variant: str, n: int, seed: int = 0, **kw) -> str:
    rng = random.Random(f"{variant}-{seed}")
    cls = GENERATORS[variant]
    out = []
    for i in range(n):
        g = generate_game(cls, rng, clocks=(i % 3 == 0), index=i, max_plies=rng.choice([40, 120, 220, 300]), **kw)
        out.append(str(g))
    return "\n\n".join(out) + "\n"
