"""PDN reading for Russian draughts: game splitting, tag pairs, GameType, FEN, results.

Per-game work here is plain Python (tag dicts, one FEN per game); the movetext itself is read
by the numba replay kernel straight from the block bytes (no Python object per move).
"""
from __future__ import annotations

import re

import numpy as np

from ._board import algebraic_to_index

_TAG_RE = re.compile(rb'\[\s*([A-Za-z0-9_]+)\s+"((?:[^"\\]|\\.)*)"\s*\]')
_RESULT_TOKENS = (b"1-0", b"0-1", b"1/2-1/2", b"2-0", b"1-1", b"0-2", b"*")
_RESULT_RE = re.compile(rb"(?:^|\s)(1-0|0-1|1/2-1/2|2-0|1-1|0-2|\*)\s*$")

# draughts-style scores -> the project's result strings
RESULT_MAP = {
    "1-0": "1-0", "0-1": "0-1", "1/2-1/2": "1/2-1/2", "*": "*",
    "2-0": "1-0", "0-2": "0-1", "1-1": "1/2-1/2",
}

RUSSIAN_GAMETYPE = 25


class FenError(ValueError):
    pass


def split_games(data: bytes) -> np.ndarray:
    """[start, end) byte spans of the games in `data` (simple line-based splitter).

    A new game starts at a tag line (`[`) that follows movetext or a blank line after tags (a
    game without movetext), or at the first non-blank line after a game-termination token
    (1-0 0-1 1/2-1/2 2-0 1-1 0-2 *) ended a movetext.
    """
    spans: list[tuple[int, int]] = []
    start = -1          # start of the current game, -1 = none
    seen_moves = False  # current game has movetext
    ended = False       # current game's movetext ended with a result token
    last_content_end = 0
    pos = 0
    n = len(data)
    depth = 0           # inside a {comment} spanning lines
    gap = False         # a blank line followed the current game's tags
    while pos < n:
        nl = data.find(b"\n", pos)
        line_end = n if nl < 0 else nl + 1
        line = data[pos:line_end]
        stripped = line.strip()
        if stripped:
            is_tag = stripped.startswith(b"[") and depth == 0
            if start >= 0 and ((is_tag and (seen_moves or gap)) or (ended and depth == 0)):
                spans.append((start, last_content_end))
                start = -1
            if start < 0:
                start = pos
                seen_moves = False
                ended = False
                gap = False
            if not is_tag:
                seen_moves = True
                depth += stripped.count(b"{") - stripped.count(b"}")
                depth = max(depth, 0)
                if depth == 0 and _RESULT_RE.search(stripped):
                    ended = True
            last_content_end = pos + len(line.rstrip())
        elif start >= 0 and depth == 0:
            gap = True
        pos = line_end
    if start >= 0:
        spans.append((start, last_content_end))
    return np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def parse_tags(text: bytes) -> tuple[dict[str, str], int]:
    """Tag pairs at the start of a game, and the offset where the movetext begins."""
    tags: dict[str, str] = {}
    pos = 0
    n = len(text)
    while True:
        while pos < n and text[pos] in b" \t\r\n":
            pos += 1
        if pos >= n or text[pos] != 0x5B:  # '['
            break
        m = _TAG_RE.match(text, pos)
        if not m:
            # a malformed tag line: skip the line
            nl = text.find(b"\n", pos)
            pos = n if nl < 0 else nl + 1
            continue
        key = m.group(1).decode("ascii", "replace")
        val = m.group(2).decode("utf-8", "replace").replace('\\"', '"').replace("\\\\", "\\")
        tags.setdefault(key, val)
        pos = m.end()
    return tags, pos


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
