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


def _unwinnable() -> ModuleType:
    from analyzer.kinds.chess import _unwinnable

    return _unwinnable


def _rules() -> ModuleType:
    from analyzer.kinds.chess import _rules

    return _rules


replay_batch = Kernel(
    "replay_batch",
    _replay,
    "i8",
    "u1[:]r i8[:] i8[:] i8[:] u8[:,:] i1[:,:] i8[:,:] i8[:,:] i8 b1 "  # text, games, start positions, options
    "i8[:] i1[:] i4[:] i8[:] i8[:] u8[:] i4[:] u2[:] i1[:] i1[:] f4[:] u8[:,:] i8[:,:] i2[:] "  # outputs
    "i8[:] i4[:] u8[:,:] i8[:,:] i8[:]",  # dead-position candidates
)
apply_rules = Kernel(
    "apply_rules",
    _rules,
    "i8",
    "i8[:] i8[:] i8[:] b1[:] b1[:] i4[:] i1[:] i1[:] i8[:] u8[:] i4[:] u2[:] i1[:] i1[:] f4[:] "  # games, facts
    "i4[:,:] i8[:] i4[:] i1[:] i1[:] i1[:] i2[:] i4[:] f4[:] u8[:]",  # verdicts, events, material
)
boards_at = Kernel(
    "boards_at",
    _boards,
    "i8",
    "u1[:]r i8[:] i8[:] i8[:] u8[:,:] i1[:,:] i8[:,:] i8[:,:] i8[:] i8[:] u8[:,:] i8[:,:]",
)
game_facts = Kernel("game_facts", _rules, "none", "i8[:] u8[:] i4[:] u2[:] f4[:] i4[:,:] b1[:]")
first_insufficient = Kernel("first_insufficient", _unwinnable, "none", "i8[:] u2[:] b1[:] i4[:]")
dead_candidates = Kernel("dead_candidates", _unwinnable, "none", "u8[:,:] i8[:,:] i8[:,:] i8[:] i8 i1[:,:]")
classify_batch = Kernel(
    "classify_batch", _unwinnable, "i8", "u8[:,:] i8[:,:] i8[:,:] i8[:] i1[:] i8 i1[:] i1[:] i8[:] i8[:] i4[:]"
)
certificate_texts = Kernel(
    "certificate_texts", _unwinnable, "i8", "i8[:] i1[:] i8[:] i4[:] i8[:,:] i8[:] i4[:] u1[:] u1[:]"
)

ALL = (
    replay_batch,
    apply_rules,
    boards_at,
    game_facts,
    first_insufficient,
    dead_candidates,
    classify_batch,
    certificate_texts,
)
