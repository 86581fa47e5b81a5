"""The text kernels of analyzer.pgn._scan as the rest of the package calls them (analyzer.kernels:
built ahead of time where they are, else numba's JIT; _scan is imported only for the JIT)."""

from __future__ import annotations

from types import ModuleType

from analyzer.kernels import Kernel


def _scan() -> ModuleType:
    from analyzer.pgn import _scan

    return _scan


find_games = Kernel("find_games", _scan, "(i8,i8)", "u1[:]r i8 b1 b1 i8[:]")
parse_tags = Kernel(
    "parse_tags",
    _scan,
    "none",
    "u1[:]r i8[:] i8[:] u1[:] i8[:] i8[:] i8[:] u8[:] u8 i8[:,:] i8[:,:] b1[:,:] i8[:]",
    function="_parse_tags",
)
gather_strings = Kernel("gather_strings", _scan, "i8", "u1[:]r i8[a] i8[a] b1[a] i4[:] u1[:]")
parse_int_values = Kernel("parse_int_values", _scan, "none", "u1[:]r i8[a] i8[a] i8[:] b1[:]")
dictionary_codes = Kernel("dictionary_codes", _scan, "i8", "u1[:]r i8[a] i8[a] b1[a] i4[:] i8[:] i8[:]")

ALL = (find_games, parse_tags, gather_strings, parse_int_values, dictionary_codes)
