"""Material signatures: the material of a position as one integer, for move limits by material
(the 1988 75-move clause, `[limits]` of custom editions) and the tables' `material` columns.

Within a window without capture or pawn move (where the 50- and 75-move counts run) the material
and every pawn's square are constant, so one signature per window serves every position in it.

A signature (uint64) holds, for White (c = 0) and Black (c = 1), the number of pawns, knights,
bishops, rooks and queens (4 bits each at bit 4 * (5c + t), t = P N B R Q) and the number of that
side's pawns on its 7th rank (White's rank 7, Black's rank 2; 4 bits at bit 40 + 4c). Kings are
not counted (one each).

Patterns (the keys of an edition's limits) are written as Syzygy names, the side with the
pieces first or not: "KBBvKN" matches a position where either colour has king and two bishops
and the other king and knight, nothing else. A pawn written "P7" must stand on its side's 7th
rank ("KQP7vKQ": the 1988 clause's "KQP(7th) v KQ"); a plain "P" is a pawn on any rank.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

TYPES = "PNBRQ"  # bitboard index 0..4 (analyzer.kinds.chess._tables BB_PAWNS..BB_QUEENS)
SEVENTH_SHIFT = 40
_RANK7 = np.uint64(0x00FF000000000000)  # White pawns one step from promotion
_RANK2 = np.uint64(0x000000000000FF00)  # Black's
_NIBBLE = np.uint64(15)


def signatures(bb: np.ndarray) -> np.ndarray:
    """The signature of each position of `bb` (n x 8 bitboards, as the replay holds them)."""
    bb = np.asarray(bb, np.uint64).reshape(-1, 8)
    out = np.zeros(len(bb), np.uint64)
    for c in range(2):
        side = bb[:, 6 + c]
        for t in range(5):
            n = np.minimum(np.bitwise_count(bb[:, t] & side), 15).astype(np.uint64)
            out |= n << np.uint64(4 * (5 * c + t))
        n7 = np.bitwise_count(bb[:, 0] & side & (_RANK7 if c == 0 else _RANK2)).astype(np.uint64)
        out |= n7 << np.uint64(SEVENTH_SHIFT + 4 * c)
    return out


def pieces(sigs: np.ndarray) -> np.ndarray:
    """Pieces on the board (kings included) of each signature."""
    sigs = np.asarray(sigs, np.uint64)
    total = np.full(len(sigs), 2, np.int64)
    for k in range(10):
        total += ((sigs >> np.uint64(4 * k)) & _NIBBLE).astype(np.int64)
    return total


def _side(sig: int, c: int) -> str:
    counts = [(sig >> (4 * (5 * c + t))) & 15 for t in range(5)]
    return "K" + "".join(TYPES[t] * counts[t] for t in (4, 3, 2, 1, 0))


_ORDER = "KQRBNP"  # python-chess's PCHR


@functools.lru_cache(maxsize=65536)
def table_name(sig: int) -> str:
    """The Syzygy table name of the material (e.g. KBBvKN: the stronger side first, whichever
    colour it has), as chess.syzygy.normalize_tablename orders it (tests compare the two)."""
    w, b = _side(int(sig), 0), _side(int(sig), 1)  # (each already in K Q R B N P order)
    if (len(w), [_ORDER.index(c) for c in b]) < (len(b), [_ORDER.index(c) for c in w]):
        return b + "v" + w
    return w + "v" + b


def names(sigs: np.ndarray) -> list[str]:
    return [table_name(int(s)) for s in sigs]


def _signature(white: dict, black: dict, w7: int, b7: int) -> int:
    sig = 0
    for c, side in enumerate((white, black)):
        for t, letter in enumerate(TYPES):
            sig |= side.get(letter, 0) << (4 * (5 * c + t))
    return sig | (w7 << SEVENTH_SHIFT) | (b7 << (SEVENTH_SHIFT + 4))


def _parse_side(text: str, pattern: str) -> tuple[dict, int, int]:
    """(counts by letter, pawns written P7, pawns written P) of one side of a pattern."""
    if not text.startswith("K") or "K" in text[1:]:
        raise ValueError(f"material pattern {pattern!r}: each side is a king and its pieces, e.g. KBBvKN")
    counts: dict = {}
    p7 = p_any = 0
    i = 1
    while i < len(text):
        ch = text[i]
        if ch not in TYPES:
            raise ValueError(f"material pattern {pattern!r}: {ch!r} is not a piece (Q R B N P, P7 = a pawn on its 7th)")
        if ch == "P" and text[i + 1 : i + 2] == "7":
            p7 += 1
            i += 1
        elif ch == "P":
            p_any += 1
        counts[ch] = counts.get(ch, 0) + 1
        i += 1
    if any(v > 15 for v in counts.values()) or counts.get("P", 0) > 8:
        raise ValueError(f"material pattern {pattern!r}: too many pieces of one kind")
    return counts, p7, p_any


@functools.lru_cache(maxsize=1024)
def parse_pattern(pattern: str) -> tuple[int, ...]:
    """The signatures a pattern matches (both colours; every number of plain P's on the 7th)."""
    text = pattern.strip()
    if text.count("v") != 1:
        raise ValueError(f"material pattern {pattern!r}: expected two sides joined by 'v', e.g. KBBvKN")
    a, b = text.split("v")
    sa, sb = _parse_side(a, pattern), _parse_side(b, pattern)
    out = set()
    for (white, w7, wp), (black, b7, bp) in ((sa, sb), (sb, sa)):
        for extra_w, extra_b in itertools.product(range(wp + 1), range(bp + 1)):
            out.add(_signature(white, black, w7 + extra_w, b7 + extra_b))
    return tuple(sorted(out))


def expand_limits(pairs) -> dict[int, int]:
    """{signature: moves} of an edition's limits ((pattern, moves) pairs). Where patterns overlap,
    the one with more P7 (the more specific) wins, then the later one."""
    ordered = sorted(pairs, key=lambda pm: pm[0].count("P7"))
    out: dict[int, int] = {}
    for pattern, moves in ordered:
        for sig in parse_pattern(pattern):
            out[sig] = int(moves)
    return out
