"""Generated very long chess games with one long reversible stretch (issue 36, point 5), as PGN
text, without python-chess (a million plies in about a second).

The "rook world": each side has walker rooks, one per rank, that only ever slide along their
rank; a walker's file is a digit of the side's state, and a move changes one digit (a rook slide
to any file of the rank: the rank holds nothing else, so every slide is one legal move, written
fully specified, e.g. `Rc2f2`). No pawn moves and no captures: the whole game is one repetition
window (unless pawn pushes are asked for). The kings stand on files the walkers never visit, so
nothing ever gives check.

- `plain` world: kings h1 and h8, white walkers on ranks 1-4, black on 8-5, files a-g.
- `castling` world: kings e1 and e8 with their h-rooks and the rights K and k, white walkers on
  ranks 2-4, black on 7-5, files a-d, f, g: a walker on the f- or g-file of one side attacks
  f1/g1 (f8/g8) unless a walker of the other side stands on that file, so whether castling is
  possible right now (the 1997-2005 identity, FLAG_WINDOW97) changes as the walkers move.

Games:

- `knight_shuffle(plies)`: 1. Nf3 Nf6 2. Ng1 Ng8 ... (four positions, each repeated plies/4 times).
- `gray_cycle_game(plies, white_radix, white_digits, black_radix, black_digits)`: each side
  walks a cyclic Gray code of its walkers' files (one digit +1 mod radix per move); with cycle
  lengths whose only common factor is 1 or 2 every position is new for 2 * lcm plies (the
  default: 7^4 and 6^4, 6.2 M plies); with equal cycles the game repeats a cycle of 2 * length
  distinct positions (a long repeating cycle).
- `random_walk_game(plies, seed, world, files, pawn_pushes)`: random walker moves over a few
  files (so positions repeat, with counts from 1 to dozens, and rep_next is often >= 2), plus
  optional pawn pushes (h-pawns in the plain world) that start new windows.

`rook_world_positions` replays a game's moves on the abstract position (for the test's reference).
"""

from __future__ import annotations

import random

FILES = "abcdefgh"

WORLDS = {
    # kings, castling rights, white walker ranks, black walker ranks, walker files
    "plain": ({"K": "h1", "k": "h8"}, "-", (1, 2, 3, 4), (8, 7, 6, 5), "abcdefg"),
    "castling": ({"K": "e1", "R": "h1", "k": "e8", "r": "h8"}, "Kk", (2, 3, 4), (7, 6, 5), "abcdfg"),
}


def gray_cycle(radix: int, digits: int) -> list[tuple[int, ...]]:
    """The modular (non-reflected) radix-`radix` Gray code of `digits` digits: radix**digits
    distinct tuples, consecutive ones (the last and the first included) differing in one digit."""
    out = []
    for i in range(radix**digits):
        a = [(i // radix**j) % radix for j in range(digits)]
        g = [(a[j] - (a[j + 1] if j + 1 < digits else 0)) % radix for j in range(digits)]
        out.append(tuple(g))
    return out


def fen(world: str, white: tuple[int, ...], black: tuple[int, ...], pawns: dict | None = None) -> str:
    """FEN of a rook-world position: walkers on the files `white` / `black` (indices into the
    world's walker files), white to move."""
    fixed, rights, wr, br, files = WORLDS[world]
    board = {sq: p for p, sq in fixed.items()}
    for rank, f in zip(wr, white):
        board[f"{files[f]}{rank}"] = "R"
    for rank, f in zip(br, black):
        board[f"{files[f]}{rank}"] = "r"
    board.update(pawns or {})
    rows = []
    for rank in range(8, 0, -1):
        row, empty = "", 0
        for file in FILES:
            p = board.get(f"{file}{rank}")
            if p is None:
                empty += 1
                continue
            if empty:
                row += str(empty)
                empty = 0
            row += p
        rows.append(row + (str(empty) if empty else ""))
    return f"{'/'.join(rows)} w {rights} - 0 1"


def pgn(
    moves: list[str],
    start_fen: str | None = None,
    result: str = "1/2-1/2",
    event: str = "long game",
    max_number: int | None = 9999,
) -> str:
    """One game's PGN text, 8 moves a line, with move numbers up to `max_number` (None: all).
    python-chess reads the "0000" in a move number of 10000 or more as a null move, so by
    default the later moves have none (the analyzer reads both alike)."""
    head = [f'[Event "{event}"]', '[Site "generated"]', f'[Result "{result}"]']
    if start_fen is not None:
        head += ['[SetUp "1"]', f'[FEN "{start_fen}"]']
    parts = []
    for i, m in enumerate(moves):
        if i % 2 == 0 and (max_number is None or i // 2 + 1 <= max_number):
            parts.append(f"{i // 2 + 1}. {m}")
        else:
            parts.append(m)
    lines = [" ".join(parts[k : k + 16]) for k in range(0, len(parts), 16)]
    return "\n".join(head) + "\n\n" + "\n".join(lines) + f" {result}\n\n"


def _slide(world: str, colour: int, digit: int, f0: int, f1: int) -> str:
    _, _, wr, br, files = WORLDS[world]
    rank = (wr, br)[colour][digit]
    return f"R{files[f0]}{rank}{files[f1]}{rank}"


def knight_shuffle(plies: int, max_number: int | None = 9999) -> str:
    cycle = ("Nf3", "Nf6", "Ng1", "Ng8")
    return pgn([cycle[i % 4] for i in range(plies)], event="knight shuffle", max_number=max_number)


def gray_cycle_game(
    plies: int,
    white_radix: int = 7,
    white_digits: int = 4,
    black_radix: int = 6,
    black_digits: int = 4,
    world: str = "plain",
    max_number: int | None = 9999,
) -> str:
    """Both sides walk their Gray cycles in turn (see the module's docstring)."""
    cycles = (gray_cycle(white_radix, white_digits), gray_cycle(black_radix, black_digits))
    n_white = len(WORLDS[world][2])
    n_black = len(WORLDS[world][3])
    pad = (n_white - white_digits, n_black - black_digits)
    state = [list(cycles[0][0]) + [0] * pad[0], list(cycles[1][0]) + [0] * pad[1]]
    start = fen(world, tuple(state[0]), tuple(state[1]))
    moves = []
    idx = [0, 0]
    for t in range(plies):
        c = t % 2
        cyc = cycles[c]
        nxt = cyc[(idx[c] + 1) % len(cyc)]
        cur = cyc[idx[c]]
        d = next(j for j in range(len(cur)) if cur[j] != nxt[j])
        moves.append(_slide(world, c, d, cur[d], nxt[d]))
        idx[c] = (idx[c] + 1) % len(cyc)
    event = f"gray cycles {white_radix}^{white_digits} {black_radix}^{black_digits}"
    return pgn(moves, start, event=event, max_number=max_number)


def random_walk_game(
    plies: int, seed: int = 1, world: str = "plain", files: str = "abc", pawn_pushes: int = 0, back: float = 0.3
) -> str:
    """Random walker slides among the walker files `files` (`back`: the chance of undoing
    the side's previous slide, which makes short repetitions too); `pawn_pushes` (plain world
    only, at most 2 per side) spread pawn pushes h2-h3-h4 / h7-h6-h5 over the game: each starts
    a new repetition window."""
    rng = random.Random(seed)
    _, _, wr, br, walker_files = WORLDS[world]
    allowed = [walker_files.index(f) for f in files]
    state = [[allowed[0]] * len(wr), [allowed[0]] * len(br)]
    pawns = {}
    pushes: dict[int, str] = {}
    if pawn_pushes:
        assert world == "plain" and pawn_pushes <= 4
        pawns = {"h2": "P", "h7": "p"}
        # white pushes at even plies, black at odd ones, spread over the game
        seq = ["h3", "h6", "h4", "h5"][:pawn_pushes]
        for i, m in enumerate(seq):
            t = (i + 1) * plies // (pawn_pushes + 1)
            t += (t % 2) != (i % 2)
            pushes[t] = m
    start = fen(world, tuple(state[0]), tuple(state[1]), pawns)
    last: list[tuple[int, int, int] | None] = [None, None]
    moves = []
    for t in range(plies):
        c = t % 2
        if t in pushes:
            moves.append(pushes[t])
            last[c] = None
            continue
        undo = last[c]
        if undo is not None and rng.random() < back:
            d, f0, f1 = undo
            f0, f1 = f1, f0
        else:
            d = rng.randrange(len(state[c]))
            f0 = state[c][d]
            f1 = rng.choice([f for f in allowed if f != f0])
        moves.append(_slide(world, c, d, f0, f1))
        state[c][d] = f1
        last[c] = (d, f0, f1)
    return pgn(moves, start, event=f"random walk {world} seed {seed}")


def rook_world_positions(world: str, start_fen: str, moves: list[str]) -> list[tuple]:
    """The abstract position before the first move and after each of `moves` (a rook-world game
    of this module): (white walkers' files, black walkers' files, white pawn, black pawn, side to
    move), files as letters by walker rank order, pawns as squares (or None)."""
    _, _, wr, br, _ = WORLDS[world]
    placement = start_fen.split()[0].split("/")
    squares: dict[str, str] = {}
    for row, text in zip(range(8, 0, -1), placement):
        f = 0
        for ch in text:
            if ch.isdigit():
                f += int(ch)
            else:
                squares[f"{FILES[f]}{row}"] = ch
                f += 1
    white = {r: next(sq[0] for sq, p in squares.items() if p == "R" and int(sq[1]) == r and sq != "h1") for r in wr}
    black = {r: next(sq[0] for sq, p in squares.items() if p == "r" and int(sq[1]) == r and sq != "h8") for r in br}
    pawns = [
        next((sq for sq, p in squares.items() if p == "P"), None),
        next((sq for sq, p in squares.items() if p == "p"), None),
    ]
    stm = 0

    def snap() -> tuple:
        return (tuple(white[r] for r in wr), tuple(black[r] for r in br), pawns[0], pawns[1], stm)

    out = [snap()]
    for m in moves:
        if m[0] == "R":
            side = white if stm == 0 else black
            rank = int(m[2])
            assert side[rank] == m[1] and m[4] == m[2], m
            side[rank] = m[3]
        else:
            pawns[stm] = m
        stm = 1 - stm
        out.append(snap())
    return out


def game_moves(text: str) -> tuple[str | None, list[str]]:
    """(the [FEN] tag or None, the SAN moves) of one game of this module."""
    start = None
    moves = []
    for line in text.splitlines():
        if line.startswith("[FEN "):
            start = line.split('"')[1]
        elif line and not line.startswith("["):
            moves += [t for t in line.split() if not t[0].isdigit()]
    return start, moves
