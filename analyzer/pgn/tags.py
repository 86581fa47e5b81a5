"""Tag values of a block of games as Arrow columns, read by the numba scanner (pgn._scan):
one pass over the tag sections, then per column only the distinct values of dictionary
columns become Python strings. Shared by every game kind (PGN and PDN have the same tags)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac
from analyzer.pgn import kernels
from analyzer.pgn.tag_names import parse_tags


class TagValues:
    """The values of `names` in the games buf[starts[i]:ends[i]], and where each movetext starts."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, names: tuple[str, ...]):
        self.buf = buf
        self.index = {name: i for i, name in enumerate(names)}
        n = len(starts)
        nt = len(names)
        names_buf = np.frombuffer("".join(names).encode(), dtype=np.uint8).copy()
        names_off = np.cumsum([0] + [len(x) for x in names]).astype(np.int64)
        self.vs = np.empty((n, nt), np.int64)
        self.ve = np.empty((n, nt), np.int64)
        self.esc = np.empty((n, nt), np.bool_)
        self.movetext_start = np.empty(n, np.int64)
        parse_tags(buf, starts, ends, names_buf, names_off, self.vs, self.ve, self.esc, self.movetext_start)

    def _cols(self, name: str):
        t = self.index[name]
        return self.vs[:, t], self.ve[:, t], self.esc[:, t]

    def present(self, name: str) -> np.ndarray:
        return self.vs[:, self.index[name]] >= 0

    def text(self, name: str) -> pa.Array:
        """A string column (null where the tag is absent)."""
        return strings(self.buf, *self._cols(name))[0]

    def dictionary(self, name: str) -> tuple[pa.DictionaryArray, np.ndarray]:
        """A dictionary column and its codes (-1 = absent)."""
        return dict_strings(self.buf, *self._cols(name))

    def ints(self, name: str) -> pa.Array:
        vs, ve, _ = self._cols(name)
        out = np.zeros(len(vs), np.int64)
        valid = np.zeros(len(vs), np.bool_)
        kernels.parse_int_values(self.buf, vs, ve, out, valid)
        return pa.array(out.astype(np.int32), mask=~valid)

    def value(self, g: int, name: str) -> str | None:
        """One game's value (for the rare games handled one by one)."""
        vs, ve, esc = (x[g : g + 1] for x in self._cols(name))
        if vs[0] < 0:
            return None
        return strings(self.buf, vs, ve, esc)[0][0].as_py()


def text_of(buf, a: int, b: int) -> str:
    return bytes(buf[a:b]).decode("utf-8", "replace")


def strings(buf, vs, ve, esc) -> tuple[pa.Array, bool]:
    """Arrow string array from value byte ranges (null where absent), UTF-8 checked, and whether
    every value is its bytes as UTF-8 (False: some were decoded with replacement characters, so
    different byte strings may have become equal)."""
    n = len(vs)
    lengths = np.where(vs >= 0, ve - vs, 0)
    offsets = np.empty(n + 1, np.int32)
    data = np.empty(max(int(lengths.sum()), 1), np.uint8)
    kernels.gather_strings(buf, vs, ve, esc, offsets, data)
    valid = vs >= 0
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), bitmap)
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        # Non-UTF-8 bytes (Latin-1 exports, damage): decode each value with replacement.
        raw = data.tobytes()
        vals = [raw[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") if valid[i] else None for i in range(n)]
        return pa.array(vals, pa.string()), False
    return arr, True


def dict_strings(buf, vs, ve, esc) -> tuple[pa.DictionaryArray, np.ndarray]:
    """A dictionary string column (the tables' int32 dictionary type) and its codes (-1 =
    null), encoded by a kernel over the value bytes: the distinct values (a few per block for
    Result, TimeControl, ...) are the only strings built."""
    n = len(vs)
    codes = np.empty(n, np.int32)
    first = np.empty(max(n, 1), np.int64)
    table = np.full(1 << max(4, (2 * n).bit_length()), -1, np.int64)
    u = kernels.dictionary_codes(buf, vs, ve, esc, codes, first, table)
    if u >= 0:
        f = first[:u]
        dictionary, exact = strings(buf, vs[f], ve[f], esc[f])
        if exact or ac.count_distinct(dictionary) == u:  # undecodable bytes may make two alike
            return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), dictionary), codes
    arr = ac.dictionary_encode(strings(buf, vs, ve, esc)[0])
    codes = ac.fill_null(arr.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return arr, codes


def dict_lookup(codes: np.ndarray, values_mask) -> np.ndarray:
    """Per row: is the row's value one of those where `values_mask` (over the dictionary) is
    True? False for null rows (code -1)."""
    hit = np.append(np.asarray(values_mask, np.bool_), False)  # code -1 -> the extra False
    return hit[codes]
