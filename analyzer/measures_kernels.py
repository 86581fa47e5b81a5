"""analyzer.measures' kernel as the table builder calls it (analyzer.kernels: built ahead of time
where it is, else numba's JIT; measures is imported only for the JIT)."""

from __future__ import annotations

from types import ModuleType

from analyzer.kernels import Kernel


def _measures() -> ModuleType:
    from analyzer import measures

    return measures


apply_measures = Kernel(
    "apply_measures", _measures, "none", "i8 i8[:] i8[:] i8[:] i4[:] i1[:] i1[:] i1[:] f4[:] i4[:,:] f4[:] i1[:]"
)

ALL = (apply_measures,)
