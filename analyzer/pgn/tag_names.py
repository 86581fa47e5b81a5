"""parse_tags: the tag values of wanted names in each game of a block, by the numba scanner.

The wanted names are looked up in a hash table of their length and first 8 bytes, built here
once per list of names (pure Python: importing it loads no kernel) and probed by
`pgn._scan._parse_tags`.
"""

from __future__ import annotations

import numpy as np

from analyzer.pgn import kernels
from analyzer.pgn._name_hash import HASH_BITS as _HASH_BITS, HASH_MUL as _HASH_MUL

# _name_table builds, for the wanted names, hash buckets of candidate indices.
_U64 = (1 << 64) - 1


def _name_key(name: bytes) -> int:
    """First 8 bytes of a name (zero padded) as a little-endian integer."""
    return int.from_bytes(name[:8].ljust(8, b"\0"), "little")


def _name_hash(key: int, ln: int, mul: int) -> int:
    return (((key + ln * _HASH_MUL) & _U64) * mul & _U64) >> (64 - _HASH_BITS)


def _name_table(names: bytes, name_off: np.ndarray):
    """(bucket starts, indices by bucket, keys, multiplier) for the wanted names.

    Within a bucket the indices ascend, so the first of equal names is found first, as in a
    scan of the list. The multiplier is the first of a fixed sequence that separates the
    distinct names (any multiplier is correct: each candidate is compared in full).
    """
    off = [int(x) for x in name_off]
    items = [names[off[t] : off[t + 1]] for t in range(len(off) - 1)]
    keys = [_name_key(x) for x in items]
    rng = np.random.default_rng(12345)
    best = None
    for attempt in range(200):
        mul = int(rng.integers(1, 1 << 62)) * 2 + 1 if attempt else 0xC2B2AE3D27D4EB4F
        hs = [_name_hash(k, len(x), mul) for k, x in zip(keys, items)]
        clashes = len({(h, x) for h, x in zip(hs, items)}) - len(set(hs))
        if best is None or clashes < best[0]:
            best = (clashes, mul, hs)
        if clashes == 0:
            break
    assert best is not None  # 200 attempts, the first always taken
    _, mul, hs = best
    order = sorted(range(len(items)), key=lambda t: (hs[t], t))
    counts = np.bincount(np.array(hs, np.int64), minlength=1 << _HASH_BITS)
    starts = np.zeros((1 << _HASH_BITS) + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts, np.array(order, np.int64), np.array(keys, np.uint64), np.uint64(mul)


_NAME_TABLES: dict = {}  # (names, name_off) bytes -> _name_table


def parse_tags(buf, starts, ends, names, name_off, val_s, val_e, esc, mt_start):
    """Find tag values of the wanted tag names in each game [starts[g], ends[g]).

    names/name_off hold the wanted names back to back. Writes value byte ranges (val_s = -1 when
    absent; the last occurrence wins, as in python-chess), an 'has escapes' flag and the start of
    the movetext (first line that is not a tag, '%' or ';' line).

    A tag section is read line by line: a tag line (`[`, a name, blanks, `"`), a '%' or ';' line
    or a blank line. On a tag line, each `[` starts a tag: its name runs to a blank or quote, then
    blanks, then the value from the quote to the next unescaped quote or the line end (a `[`
    without a quote is passed over). buf and names: C-contiguous uint8.
    """
    key = (np.asarray(names, np.uint8).tobytes(), np.asarray(name_off, np.int64).tobytes())
    table = _NAME_TABLES.get(key)
    if table is None:
        table = _NAME_TABLES[key] = _name_table(key[0], np.asarray(name_off, np.int64))
    kernels.parse_tags(
        buf, starts, ends, names, name_off, table[0], table[1], table[2], table[3], val_s, val_e, esc, mt_start
    )
