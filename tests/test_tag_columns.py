"""Tag columns built by kernels (strings, dictionary codes) equal what plain Python gives for
the same value bytes: escapes, absent tags, non-UTF-8 bytes and many distinct values."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from analyzer.pgn import tags as A


def _python_value(raw: bytes | None, escaped: bool):
    if raw is None:
        return None
    if escaped:
        out = bytearray()
        k = 0
        while k < len(raw):
            c = raw[k]
            if c == 92 and k + 1 < len(raw):
                k += 1
                c = raw[k]
            out.append(c)
            k += 1
        raw = bytes(out)
    return raw.decode("utf-8", "replace")


def _column(values):
    """Text with each value's bytes and their (start, end, escaped) as parse_tags gives them."""
    text = bytearray()
    vs, ve, esc = [], [], []
    for raw, escaped in values:
        if raw is None:
            vs.append(-1)
            ve.append(-1)
        else:
            text += b'[Tag "'
            vs.append(len(text))
            text += raw
            ve.append(len(text))
            text += b'"]\n'
        esc.append(escaped)
    buf = np.frombuffer(bytes(text) + b"\0" * 64, np.uint8)
    return buf, np.array(vs, np.int64), np.array(ve, np.int64), np.array(esc, np.bool_)


def _check(values):
    buf, vs, ve, esc = _column(values)
    expected = [_python_value(raw, e) for raw, e in values]
    arr, codes = A.dict_strings(buf, vs, ve, esc)
    assert arr.type == pa.dictionary(pa.int32(), pa.string())
    assert arr.to_pylist() == expected
    assert len(set(arr.dictionary.to_pylist())) == len(arr.dictionary)  # no duplicate values
    assert list(codes) == [(-1 if v is None else arr.indices[i].as_py()) for i, v in enumerate(expected)]
    assert A.strings(buf, vs, ve, esc)[0].to_pylist() == expected


def test_dictionary_column_random_values():
    rng = random.Random(7)
    pool = [
        b"1-0",
        b"0-1",
        b"1/2-1/2",
        b"*",
        b"Normal",
        b"Time forfeit",
        b"",
        b"180+0",
        b"B01",
        "Caf\u00e9".encode(),
        b"Caf\xe9",
        b"Caf\xe8",
        b"\xff\xfe",
        bytes(range(32, 127)),
    ]
    for _ in range(200):
        n = rng.randint(0, 60)
        values = [(None, False) if rng.random() < 0.2 else (rng.choice(pool), False) for _ in range(n)]
        _check(values)


def test_dictionary_column_distinct_values_beyond_the_first_table_size():
    _check([(str(i).encode(), False) for i in range(5000)] + [(b"7", False), (None, False)])


def test_dictionary_column_with_escapes_falls_back_to_arrow():
    _check([(b'a\\"b', True), (b'a"b', False), (b"x", False), (None, False), (b'a\\"b', True)])


def test_undecodable_bytes_that_decode_alike_stay_one_value():
    # Two different invalid bytes both decode to U+FFFD: one dictionary value, not two.
    _check([(b"Caf\xe9", False), (b"Caf\xe8", False), (b"Caf\xe9", False)])
