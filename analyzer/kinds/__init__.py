"""The registry of game kinds. A kind is a package that provides one `KIND` (a GameKind): how
its games end (for the splitter), its editions, and `analyze_block` (tags, replay and rule
kernels -> analyzer.tables.BlockOutput). Everything else (reading, units, tables, measures,
the report) is shared. Adding a kind: its package and one line below (docs/architecture.md).

Kinds are imported on first use, so a run compiles and loads only the kernels it needs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from analyzer.kinds.base import Edition, GameKind

__all__ = [
    "REGISTRY",
    "Edition",
    "GameKind",
    "all_builtin_editions",
    "block_options",
    "get",
    "names",
    "resolve_editions",
]


def _chess() -> GameKind:
    from analyzer.kinds.chess import KIND

    return KIND


def _russian_draughts() -> GameKind:
    from analyzer.kinds.russian_draughts import KIND

    return KIND


# name -> the function that imports the kind's package (on first use) and gives its KIND.
REGISTRY: dict[str, Callable[[], GameKind]] = {
    "chess": _chess,
    "russian_draughts": _russian_draughts,
}


def block_options(kind: str, *, syzygy: tuple = (), unwinnable_budget: int | None = None) -> dict:
    """The options a kind's analyze_block takes beyond its editions, from a run's settings
    (chess: the tablebase folders, the unwinnability search's budget; the defaults left out)."""
    out: dict = {}
    if kind == "chess":
        if syzygy:
            out["syzygy"] = tuple(syzygy)
        if unwinnable_budget is not None:
            out["unwinnable_budget"] = unwinnable_budget
    return out


def get(name: str) -> GameKind:
    try:
        load = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown game kind {name!r}; known: {', '.join(REGISTRY)}") from None
    return load()


def names() -> list[str]:
    return list(REGISTRY)


def all_builtin_editions() -> dict:
    """Edition id -> edition, over every kind."""
    out = {}
    for name in REGISTRY:
        out.update(get(name).editions())
    return out


def custom_edition(**options):
    """A custom edition of the kind its `base` (a built-in id, default fide_2018) belongs to."""
    base = options.get("base", "fide_2018")
    builtins = all_builtin_editions()
    if base not in builtins:
        raise ValueError(f"unknown base edition {base!r}{_hint(base, builtins)}; known: {', '.join(builtins)}")
    return get(builtins[base].kind).custom_edition(**options)


def load_toml(path: str) -> list:
    """Custom editions from a TOML file: one table per edition, e.g. [forty] base="fide_2018"
    claim_moves=40 (or base="fshr_russian" balance_moves=25 for draughts)."""
    import tomllib

    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    out = []
    for name, table in doc.items():
        if not isinstance(table, dict):
            raise ValueError(f"{path}: {name} must be a table of edition options")
        out.append(custom_edition(id=name, **table))
    return out


def _hint(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def resolve_editions(names: list[str], custom: list | None = None) -> list:
    """Editions by id, over every kind, from the built-ins and the given custom editions; a clear
    error naming every known edition otherwise."""
    known = all_builtin_editions()
    for ed in custom or ():
        known[ed.id] = ed
    out = []
    for n in names:
        if n not in known:
            per_kind = "; ".join(f"{k}: {', '.join(get(k).editions())}" for k in REGISTRY)
            extra = f"; custom: {', '.join(e.id for e in custom)}" if custom else ""
            raise ValueError(f"unknown edition {n!r}{_hint(n, known) or '.'} Known editions: {per_kind}{extra}")
        out.append(known[n])
    return out
