"""Russian draughts rule editions as data (analyzer.kinds.Edition protocol).

Two built-ins (see docs/draughts.md for the readings and the derivations):

* ``fshr_russian`` - section 32.1-32.4 of the Russian federation rules (seed 003):
  threefold repetition (claim, also on the intended move, 32.2), 32 moves without a change in the
  balance of forces (claim before moving), 3+ kings vs a lone king: 15th move of the stronger
  side, 3 kings vs a lone king on the main diagonal: 5th move, 2 kings or king + man vs a man or
  a king: 10th move (automatic: "the game is considered drawn").
* ``fmjd_64`` - the FMJD-64 rules 7.2.3-7.2.8 as lidraughts implements them (docs/rules.md 4.1 B and
  4.2): everything automatic except threefold, counted as moves by each player (plies).

"A move" is an edition parameter (`move_count`):

* ``"own"``: "its N-th move" counts only the stronger side's moves, from the position where the
  configuration arose. If the stronger side is to move there, its N-th move is ply p0 + 2N - 1,
  otherwise p0 + 2N.
* ``"each"``: N moves by each player = 2N plies after p0 (lidraughts).

The balance rule has no stronger side: it always counts moves by each player (2N plies).
Custom editions: any option below, from a built-in `base` (TOML or --custom), e.g.
``[fshr_25] base = "fshr_russian" balance_moves = 25``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

MOVE_COUNT_MODES = ("own", "each")


@dataclass(frozen=True)
class DraughtsEdition:
    """Parameters of one reading of the draw rules. Limits are in moves (see `move_count`)."""

    id: str
    description: str = field(default="", compare=False)
    kind = "russian_draughts"
    move_count: str = "own"  # "own" (stronger side's moves) | "each" (each player's)
    threefold_intended: bool = True  # claim on the intended move (32.2, second paragraph)
    # balance of forces unchanged
    balance_automatic: bool = False  # fshr: claim; fmjd: automatic
    balance_moves: int = 32  # fshr: any material
    balance_needs_kings: bool = False  # fmjd 7.2.6: both sides have kings, 4..7 pieces
    balance_moves_small: int = 30  # fmjd 7.2.6: 4-5 pieces
    balance_moves_large: int = 60  # fmjd 7.2.6: 6-7 pieces
    kvk_moves: int = 15  # 3+ kings vs lone king
    diag_moves: int = 5  # 3 kings vs lone king on the main diagonal
    diag_fmjd: bool = False  # fmjd 7.2.7 / lidraughts: 3K, 2K+M, K+2M vs lone king alone on the diagonal
    small_moves: int = 10  # 2 kings, king + man vs man or king
    small_fmjd: bool = False  # fmjd 7.2.8: 2K, K+M, K vs a lone king
    king_moves: int = 0  # fmjd 7.2.5: N moves by kings only (0 = no such rule)

    def fingerprint(self) -> dict:
        return dataclasses.asdict(self)

    def params(self) -> np.ndarray:
        if self.move_count not in MOVE_COUNT_MODES:
            raise ValueError(f"move_count must be one of {MOVE_COUNT_MODES}, not {self.move_count!r}")
        return np.array(
            [
                MOVE_COUNT_MODES.index(self.move_count),
                int(self.threefold_intended),
                int(self.balance_automatic),
                self.balance_moves,
                int(self.balance_needs_kings),
                self.balance_moves_small,
                self.balance_moves_large,
                self.kvk_moves,
                self.diag_moves,
                int(self.diag_fmjd),
                self.small_moves,
                int(self.small_fmjd),
                self.king_moves,
            ],
            dtype=np.int64,
        )


BUILTIN: dict[str, DraughtsEdition] = {
    "fshr_russian": DraughtsEdition(
        "fshr_russian",
        "Russian federation rules, section 32 (seed 003)",
        move_count="own",
        threefold_intended=True,
        balance_automatic=False,
        balance_moves=32,
        kvk_moves=15,
        diag_moves=5,
        small_moves=10,
    ),
    "fmjd_64": DraughtsEdition(
        "fmjd_64",
        "FMJD-64 7.2.3-7.2.8 as implemented by lidraughts (since 2020-10-16)",
        move_count="each",
        threefold_intended=False,
        balance_automatic=True,
        balance_needs_kings=True,
        balance_moves_small=30,
        balance_moves_large=60,
        kvk_moves=15,
        diag_moves=5,
        diag_fmjd=True,
        small_moves=5,
        small_fmjd=True,
        king_moves=15,
    ),
}
_FIELDS = {f.name: f.type for f in dataclasses.fields(DraughtsEdition)}


def custom_edition(**options) -> DraughtsEdition:
    """A custom edition from options (base = a built-in id, default fshr_russian); values typed."""
    base = options.pop("base", "fshr_russian")
    if base not in BUILTIN:
        raise ValueError(f"unknown base edition {base!r}; known draughts editions: {', '.join(BUILTIN)}")
    unknown = set(options) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown draughts edition option(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    if not options.get("id"):
        raise ValueError("a custom edition needs an id")
    typed = {}
    for k, v in options.items():
        ref = getattr(BUILTIN[base], k)
        if isinstance(ref, bool):
            if isinstance(v, str) and v.lower() in ("true", "false", "1", "0"):
                v = v.lower() in ("true", "1")
            if not isinstance(v, bool):
                raise ValueError(f"edition option {k}={v!r}: expected true or false")
        elif isinstance(ref, int):
            try:
                v = int(v)
            except (TypeError, ValueError):
                raise ValueError(f"edition option {k}={v!r}: expected a whole number") from None
            if v < 0:
                raise ValueError(f"edition option {k}={v}: must be at least 0")
        elif k == "move_count" and v not in MOVE_COUNT_MODES:
            raise ValueError(f"edition option move_count={v!r}: one of {MOVE_COUNT_MODES}")
        typed[k] = v
    return dataclasses.replace(BUILTIN[base], **typed)
