"""The chess replay and rule kernels as analyze_block calls them (analyzer.kernels: built ahead
of time where they are, else numba's JIT; _replay and _rules are imported only for the JIT)."""

from __future__ import annotations

from types import ModuleType

from analyzer.kernels import Kernel


def _replay() -> ModuleType:
    from analyzer.kinds.chess import _replay

    return _replay


def _boards() -> ModuleType:
    from analyzer.kinds.chess import _boards

    return _boards


def _rules() -> ModuleType:
    from analyzer.kinds.chess import _rules

    return _rules


replay_batch = Kernel(
    "replay_batch",
    _replay,
    "i8",
    "u1[:]r i8[:] i8[:] i8[:] u8[:,:] i1[:,:] i8[:,:] i8[:,:] i8 b1 "  # text, games, start positions, options
    "i8[:] i1[:] i4[:] i8[:] i8[:] u8[:] i4[:] u2[:] i1[:] i1[:] f4[:] u8[:,:] i8[:,:] i2[:]",  # outputs
)
apply_rules = Kernel(
    "apply_rules",
    _rules,
    "i8",
    "i8[:] i8[:] i8[:] b1[:] b1[:] i8[:] u8[:] i4[:] u2[:] i1[:] i1[:] f4[:] "  # games, facts
    "i4[:,:] i8[:] i4[:] i1[:] i1[:] i1[:] i2[:] i4[:] f4[:] u8[:]",  # verdicts, events, material
)
boards_at = Kernel(
    "boards_at",
    _boards,
    "i8",
    "u1[:]r i8[:] i8[:] i8[:] u8[:,:] i1[:,:] i8[:,:] i8[:,:] i8[:] i8[:] u8[:,:] i8[:,:]",
)
game_facts = Kernel("game_facts", _rules, "none", "i8[:] u8[:] i4[:] u2[:] f4[:] i4[:,:] b1[:]")

ALL = (replay_batch, apply_rules, boards_at, game_facts)
