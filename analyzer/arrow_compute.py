"""The few Arrow compute functions a scan uses, called by name through pyarrow's `call_function`.

Why not `pyarrow.compute`: importing it builds a Python wrapper with a generated docstring for
each of Arrow's ~600 compute functions. That is ~0.2 G instructions, 25-60 ms of every run's
start-up (more than the scan of a small file), for the dozen functions used here. pyarrow's
own Array methods `cast`, `take`, `fill_null`, `dictionary_encode` import it too, so the scan
path calls these instead. The kernels are Arrow's; only the Python wrapper is skipped.
tests/test_start_up.py checks that a scan does not import pyarrow.compute.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

try:  # pyarrow's compiled module, which pyarrow.compute re-exports these from
    from pyarrow._compute import (  # type: ignore[import-not-found,unused-ignore]
        CastOptions,
        JoinOptions,
        MatchSubstringOptions,
        StrptimeOptions,
        call_function,
    )
except ImportError:  # pragma: no cover - a pyarrow that moved them: the public module, slower to import
    from pyarrow.compute import (  # type: ignore[assignment,no-redef,unused-ignore]
        CastOptions,
        JoinOptions,
        MatchSubstringOptions,
        StrptimeOptions,
        call_function,
    )

Arrayish = Any  # pa.Array or pa.ChunkedArray (pyarrow has no common static type for both)


def add(values: Arrayish, amount: int) -> Arrayish:
    return call_function("add", [values, amount])


def coalesce(*values: Arrayish) -> Arrayish:
    """The first non-null of the arguments, row by row."""
    return call_function("coalesce", list(values))


def fill_null(values: Arrayish, fill_value: Any) -> Arrayish:
    """values with nulls replaced by fill_value (as Array.fill_null, which casts it first)."""
    return call_function("coalesce", [values, pa.scalar(fill_value, type=values.type)])


def is_valid(values: Arrayish) -> Arrayish:
    return call_function("is_valid", [values])


def equal(values: Arrayish, other: Any) -> Arrayish:
    return call_function("equal", [values, other])


def greater_equal(values: Arrayish, other: Any) -> Arrayish:
    return call_function("greater_equal", [values, other])


def take(values: Arrayish, indices: Arrayish) -> Arrayish:
    return call_function("take", [values, indices])


def sort_indices(values: pa.Array) -> pa.Array:
    """Indices of a stable ascending sort (nulls last)."""
    return call_function("array_sort_indices", [values])


def cast(values: Arrayish, target_type: pa.DataType) -> Arrayish:
    """A safe cast, as Array.cast."""
    return call_function("cast", [values], CastOptions.safe(target_type))


def dictionary_encode(values: Arrayish) -> Arrayish:
    return call_function("dictionary_encode", [values])


def count_distinct(values: Arrayish) -> int:
    return call_function("count_distinct", [values]).as_py()


def starts_with(values: Arrayish, prefix: str) -> Arrayish:
    return call_function("starts_with", [values], MatchSubstringOptions(prefix))


def match_substring(values: Arrayish, pattern: str) -> Arrayish:
    return call_function("match_substring", [values], MatchSubstringOptions(pattern))


def match_substring_regex(values: Arrayish, pattern: str) -> Arrayish:
    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def utf8_lower(values: Arrayish) -> Arrayish:
    return call_function("utf8_lower", [values])


def utf8_trim_whitespace(values: Arrayish) -> Arrayish:
    return call_function("utf8_trim_whitespace", [values])


def join_with(left: Arrayish, right: Arrayish, separator: str) -> Arrayish:
    """left + separator + right, row by row (binary_join_element_wise)."""
    return call_function("binary_join_element_wise", [left, right, separator], JoinOptions())


def strptime(values: Arrayish, fmt: str) -> Arrayish:
    """Timestamps in seconds; null where a text does not parse."""
    return call_function("strptime", [values], StrptimeOptions(fmt, "s", error_is_null=True))
