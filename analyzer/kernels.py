"""A compiled kernel called from Python (`Kernel`): the ahead-of-time built function where this
machine has one (`analyzer.aot`), else its numba JIT dispatcher.

The kernels themselves are declared beside the packages that own them (analyzer.pgn.kernels,
analyzer.kinds.chess.kernels, analyzer.measures_kernels), each with a function that imports its
numba module when the JIT one is first needed; this module knows none of them. Why built
modules: importing numba and loading its cached kernels is most of a scan's start-up (~0.3 of
0.45 s); the built modules import in milliseconds without numba.

ANALYZER_KERNELS=jit uses the JIT dispatchers only (the tests do, to test the source); the
default, auto, uses the built modules when they are there.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from analyzer import aot

log = logging.getLogger("analyzer")

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


class Kernel:
    """One kernel: `name` (the built modules export it under it), `module()` imports the numba
    module that defines it as `function`; `returns` and `arguments` are the types it is built for
    and that a call must have to run the built one (numba's short names: an array is `dtype[:]`
    (1-d, C-contiguous), `dtype[:,:]` (2-d, C), `dtype[a]` (1-d, any layout), with `r` after it
    if the kernel only reads it; tests/test_aot.py checks every call of a real analysis against
    them). A call with other types goes to the JIT dispatcher, which compiles for them: a built
    kernel trusts its argument types, so they are checked here, per call (per block, not per game)."""

    __slots__ = ("arguments", "checks", "function", "module", "name", "returns")

    def __init__(
        self, name: str, module: Callable[[], ModuleType], returns: str, arguments: str, function: str | None = None
    ):
        self.name = name
        self.module = module
        self.function = function or name
        self.returns = returns
        self.arguments = arguments
        self.checks = tuple(parse_arg(a) for a in arguments.split())

    def __repr__(self) -> str:
        return f"Kernel({self.name!r})"

    def jit(self):
        """The numba dispatcher (imports numba and the kernel's module)."""
        return getattr(self.module(), self.function)

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
        built = _built_functions().get(self.name)
        if built is not None:
            if self.accepts(args):
                return built(*args)
            log.debug("kernel %s: arguments of other types than built for; the JIT kernel runs", self.name)
        return self.jit()(*args)


_LOADING = threading.Lock()
_LOADED: dict[str, dict[str, Any]] = {}  # "functions": {kernel name: built function}, once loaded


def source() -> str:
    """'aot' if the kernels come from this machine's built modules, 'aot-<cpu>' from the
    wheel's portable ones (e.g. aot-x86-64-v3), else 'jit'."""
    if not _built_functions():
        return "jit"
    portable = aot.loaded_portable()
    return f"aot-{portable}" if portable else "aot"


def _built_functions() -> dict[str, Any]:
    built = _LOADED.get("functions")
    if built is None:
        with _LOADING:  # the scan's threads call their first kernels at once: load the modules once
            built = _LOADED.get("functions")
            if built is None:
                built = (aot.load() if mode() == "auto" else None) or {}
                _LOADED["functions"] = built
    return built


def reset() -> None:
    """Forget what was loaded (after a build, or a change of ANALYZER_KERNELS)."""
    _LOADED.clear()
