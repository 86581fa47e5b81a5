"""PDN values for Russian draughts: GameType numbers, FEN positions, draughts-style results.

Games are split and their tags read by the shared scanner (analyzer.pgn); these run once per
distinct value of a block, and the movetext is read by the numba replay kernel.
"""

from __future__ import annotations

from analyzer.kinds.russian_draughts._board import algebraic_to_index

# draughts-style scores -> the project's result strings
RESULT_MAP = {
    "1-0": "1-0",
    "0-1": "0-1",
    "1/2-1/2": "1/2-1/2",
    "*": "*",
    "2-0": "1-0",
    "0-2": "0-1",
    "1-1": "1/2-1/2",
}

RUSSIAN_GAMETYPE = 25


class FenError(ValueError):
    pass


def gametype_number(value: str | None) -> int | None:
    """First field of [GameType "25,W,8,8,A0,0"] as int (None when absent, -1 when unreadable)."""
    if value is None or not value.strip():
        return None
    head = value.strip().split(",", 1)[0].strip()
    try:
        return int(head)
    except ValueError:
        return -1


def _square(tok: str) -> int:
    tok = tok.strip()
    if not tok:
        raise FenError("empty square")
    if tok[0] in "abcdefgh":
        if len(tok) != 2 or not tok[1].isdigit():
            raise FenError(f"bad square {tok!r}")
        idx = algebraic_to_index("abcdefgh".index(tok[0]), int(tok[1]))
        if idx < 0:
            raise FenError(f"{tok!r} is not a playing square")
        return idx
    if not tok.isdigit():
        raise FenError(f"bad square {tok!r}")
    n = int(tok)
    if not 1 <= n <= 32:
        raise FenError(f"square {n} is off the 32-square board")
    return n - 1


def parse_fen(fen: str) -> tuple[int, int, int, int, int]:
    """PDN FEN `W:W21,22,K5:B1-12` (numeric or algebraic squares, K = king, ranges allowed).

    Returns (white men, white kings, black men, black kings, side to move) as Python ints.
    """
    s = fen.strip().rstrip(".").strip()
    if s.startswith('"') and s.endswith('"'):
        s = s[1:-1]
    parts = [p.strip() for p in s.split(":")]
    if not parts or parts[0].upper() not in ("W", "B"):
        raise FenError(f"side to move must be W or B in {fen!r}")
    stm = 0 if parts[0].upper() == "W" else 1
    boards = {"W": [0, 0], "B": [0, 0]}
    seen = {"W": False, "B": False}
    for part in parts[1:]:
        if not part:
            continue
        colour = part[0].upper()
        if colour not in ("W", "B"):
            if colour in ("H", "F"):  # lidraughts :H0:F1 counters
                continue
            raise FenError(f"bad FEN field {part!r}")
        seen[colour] = True
        body = part[1:].rstrip(".")
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            king = item[0] in "Kk"
            if king:
                item = item[1:]
            squares: range | list[int]
            if "-" in item and item[0].isdigit():
                a, b = item.split("-", 1)
                squares = range(_square(a), _square(b) + 1)
            else:
                squares = [_square(item)]
            for sq in squares:
                bit = 1 << sq
                if (boards["W"][0] | boards["W"][1] | boards["B"][0] | boards["B"][1]) & bit:
                    raise FenError(f"square {sq + 1} given twice")
                boards[colour][1 if king else 0] |= bit
    if not (seen["W"] or seen["B"]):
        raise FenError(f"no pieces in {fen!r}")
    wm, wk = boards["W"]
    bm, bk = boards["B"]
    if wm & 0xF:
        raise FenError("white man on white's promotion rank (rank 8)")
    if bm & (0xF << 28):
        raise FenError("black man on black's promotion rank (rank 1)")
    return wm, wk, bm, bk, stm
