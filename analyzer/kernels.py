"""The compiled kernels a chess scan calls from Python, by name: `kernels.replay_batch(...)`.

Each comes from the ahead-of-time built extension modules (`analyzer.aot`) when this machine
has them, else from its numba JIT dispatcher. Why: importing numba and loading its cached
kernels is most of a scan's start-up (~0.3 of 0.45 s); the built modules import in
milliseconds without numba. A call whose arguments do not have the types an entry was built
for goes to the JIT dispatcher (which compiles for them, as always): a built kernel trusts
its argument types, so they are checked here, per call (per block, not per game).

ANALYZER_KERNELS=jit uses the JIT dispatchers only (the tests do, to test the source); the
default, auto, uses the built modules when they are there.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Any

import numpy as np

log = logging.getLogger("analyzer")

# name -> (module, function, return type, argument types). Types: numba's short names; an
# array is `dtype[:]` (1-d, C-contiguous), `dtype[:,:]` (2-d, C), `dtype[a]` (1-d, any layout),
# with `r` after it if the kernel only reads it (a read-only array may be passed). The types
# are those the scan passes (tests/test_aot.py checks every call of a real analysis against them).
ENTRIES: dict[str, tuple[str, str, str, str]] = {
    "replay_batch": (
        "analyzer.kinds.chess._replay",
        "replay_batch",
        "i8",
        "u1[:]r i8[:] i8[:] i8[:] u8[:,:] i1[:,:] i8[:,:] i8[:,:] i8 b1 "  # text, games, start positions, options
        "i8[:] i1[:] i4[:] i8[:] i8[:] u8[:] i4[:] u2[:] i1[:] i1[:] f4[:] u8[:,:] i8[:,:] "  # outputs
        "i8[:] i4[:] u8[:,:] i8[:,:] i8[:]",  # dead-position candidates
    ),
    "apply_rules": (
        "analyzer.kinds.chess._rules",
        "apply_rules",
        "i8",
        "i8[:] i8[:] i8[:] b1[:] b1[:] i4[:] i1[:] i1[:] i8[:] u8[:] i4[:] u2[:] i1[:] i1[:] f4[:] "  # games, facts
        "i4[:,:] i8[:] i4[:] i1[:] i1[:] i1[:] i2[:] i4[:] f4[:]",  # verdicts, events
    ),
    "game_facts": ("analyzer.kinds.chess._rules", "game_facts", "none", "i8[:] u8[:] i4[:] u2[:] f4[:] i4[:,:] b1[:]"),
    "first_insufficient": ("analyzer.kinds.chess._unwinnable", "first_insufficient", "none", "i8[:] u2[:] b1[:] i4[:]"),
    "dead_candidates": (
        "analyzer.kinds.chess._unwinnable",
        "dead_candidates",
        "none",
        "u8[:,:] i8[:,:] i8[:,:] i8[:] i8 i1[:,:]",
    ),
    "classify_batch": (
        "analyzer.kinds.chess._unwinnable",
        "classify_batch",
        "i8",
        "u8[:,:] i8[:,:] i8[:,:] i8[:] i1[:] i8 i1[:] i1[:] i8[:] i8[:] i4[:]",
    ),
    "certificate_texts": (
        "analyzer.kinds.chess._unwinnable",
        "certificate_texts",
        "i8",
        "i8[:] i1[:] i8[:] i4[:] i8[:,:] i8[:] i4[:] u1[:] u1[:]",
    ),
    "apply_measures": (
        "analyzer.measures",
        "apply_measures",
        "none",
        "i8 i8[:] i8[:] i8[:] i4[:] i1[:] i1[:] i1[:] f4[:] i4[:,:] f4[:] i1[:]",
    ),
    "find_games": ("analyzer.pgn._scan", "find_games", "(i8,i8)", "u1[:]r i8 b1 b1 i8[:]"),
    "parse_tags": (
        "analyzer.pgn._scan",
        "_parse_tags",
        "none",
        "u1[:]r i8[:] i8[:] u1[:] i8[:] i8[:] i8[:] u8[:] u8 i8[:,:] i8[:,:] b1[:,:] i8[:]",
    ),
    "gather_strings": ("analyzer.pgn._scan", "gather_strings", "i8", "u1[:]r i8[a] i8[a] b1[a] i4[:] u1[:]"),
    "parse_int_values": ("analyzer.pgn._scan", "parse_int_values", "none", "u1[:]r i8[a] i8[a] i8[:] b1[:]"),
    "dictionary_codes": ("analyzer.pgn._scan", "dictionary_codes", "i8", "u1[:]r i8[a] i8[a] b1[a] i4[:] i8[:] i8[:]"),
}

_ARRAY, _INT, _BOOL = 0, 1, 2
_DTYPES = {
    "b1": np.dtype(np.bool_),
    "i1": np.dtype(np.int8),
    "i2": np.dtype(np.int16),
    "i4": np.dtype(np.int32),
    "i8": np.dtype(np.int64),
    "u1": np.dtype(np.uint8),
    "u2": np.dtype(np.uint16),
    "u8": np.dtype(np.uint64),
    "f4": np.dtype(np.float32),
    "f8": np.dtype(np.float64),
}


def parse_arg(spec: str) -> tuple[int, np.dtype, int, bool, bool]:
    """(kind, dtype, ndim, must be C-contiguous, must be writable) of one argument type."""
    if "[" not in spec:
        return (_BOOL if spec == "b1" else _INT), _DTYPES[spec], 0, False, False
    dtype, rest = spec.split("[", 1)
    dims, flag = rest.rsplit("]", 1)
    if flag not in ("", "r"):
        raise ValueError(f"bad argument type {spec!r}")
    ndim = 1 if dims == "a" else dims.count(":")
    return _ARRAY, _DTYPES[dtype], ndim, dims != "a", flag != "r"


def mode() -> str:
    """'jit' or 'auto' (the ANALYZER_KERNELS setting)."""
    m = os.environ.get("ANALYZER_KERNELS", "auto").strip().lower() or "auto"
    if m not in ("auto", "jit"):
        raise ValueError(f"ANALYZER_KERNELS={m!r}: expected auto or jit")
    return m


def jit_kernel(name: str):
    """The numba dispatcher of entry `name` (imports numba and its module)."""
    module, function, _, _ = ENTRIES[name]
    return getattr(importlib.import_module(module), function)


class _Checked:
    """A built kernel behind a check of its argument types; other types go to the JIT kernel."""

    __slots__ = ("checks", "fn", "name")

    def __init__(self, name: str, fn=None):
        self.name = name
        self.fn = fn
        self.checks = tuple(parse_arg(a) for a in ENTRIES[name][3].split())

    def accepts(self, args) -> bool:
        """Whether `args` have the types the kernel was built for."""
        if len(args) != len(self.checks):
            return False
        for a, (kind, dtype, ndim, contiguous, writable) in zip(args, self.checks):
            if kind == _ARRAY:
                if (
                    type(a) is not np.ndarray
                    or a.dtype != dtype
                    or a.ndim != ndim
                    or (contiguous and not a.flags.c_contiguous)
                    or (writable and not a.flags.writeable)
                ):
                    return False
            elif kind == _INT:
                if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
                    return False
            elif not isinstance(a, (bool, np.bool_)):
                return False
        return True

    def __call__(self, *args):
        if self.accepts(args):
            return self.fn(*args)
        log.debug("kernel %s: arguments of other types than built for; the JIT kernel runs", self.name)
        return jit_kernel(self.name)(*args)


_LOADING = threading.Lock()
_LOADED: dict[str, dict[str, Any]] = {}  # "kernels": {entry name: built kernel}, once loaded


def source() -> str:
    """'aot' if the kernels come from this machine's built modules, 'aot-<cpu>' from the
    wheel's portable ones (e.g. aot-x86-64-v3), else 'jit'."""
    if not _built_kernels():
        return "jit"
    from analyzer import aot

    portable = aot.loaded_portable()
    return f"aot-{portable}" if portable else "aot"


def _built_kernels() -> dict[str, Any]:
    built = _LOADED.get("kernels")
    if built is None:
        with _LOADING:  # the scan's threads call their first kernels at once: load the modules once
            built = _LOADED.get("kernels")
            if built is None:
                built = {}
                if mode() == "auto":
                    from analyzer import aot

                    functions = aot.load()
                    if functions is not None:
                        built = {name: _Checked(name, functions[name]) for name in ENTRIES}
                _LOADED["kernels"] = built
    return built


def reset() -> None:
    """Forget what was loaded (after a build, or a change of ANALYZER_KERNELS)."""
    _LOADED.clear()


def __getattr__(name: str):
    if name not in ENTRIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    built = _built_kernels().get(name)
    return built if built is not None else jit_kernel(name)
