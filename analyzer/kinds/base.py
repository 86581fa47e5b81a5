"""What every game kind provides: its KIND (a GameKind) and editions (the Edition protocol). Apart
from the registry (analyzer.kinds) so that a kind's package can import it without importing the
registry's loaders of every kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Edition(Protocol):
    """What every kind's edition type provides (frozen dataclasses: read-only fields)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def description(self) -> str: ...

    def params(self): ...  # the numeric vector its rule kernel reads

    def fingerprint(self) -> dict: ...  # everything that can change its results


@dataclass(frozen=True)
class GameKind:
    name: str
    draughts_markers: bool  # games also end with 2-0 / 0-2 / 1-1 (pgn._scan.find_games)
    default_editions: tuple[str, ...]
    builtin_editions: Callable[[], dict]  # id -> edition
    custom_edition: Callable[..., Any]  # options (base=..., id=..., ...) -> edition
    # (buf, starts, ends, *, editions, extra_status, keep_facts, input_ends) -> BlockOutput
    analyze_block: Callable[..., Any]

    def editions(self) -> dict:
        return self.builtin_editions()
