"""The Lichess variants other than Chess960, replayed natively (numba) into the chess facts layout.

Crazyhouse, Antichess, Atomic, Horde, King of the Hill, Racing Kings and Three-check follow
python-chess's `chess.variant` boards move for move (the oracle of the tests); the Lichess server's
own rules per variant are in docs/variants.md. Entry points:

- `variant_code(name)`: the V_* code of a [Variant] tag value (Lichess spellings and python-chess's
  aliases), or None for standard chess / Chess960 / unknown names;
- `variant_from_filename(path)`: the variant of a Lichess dump file name
  (`lichess_db_<variant>_rated_YYYY-MM.pgn.zst`), or None;
- `analyzer.kinds.chess.variants.analyze`: replay + rules for a batch of variant games.
"""

from __future__ import annotations

import os
import re

from analyzer.kinds.chess.variants._codes import (  # noqa: F401
    V_ANTICHESS,
    V_ATOMIC,
    V_CRAZYHOUSE,
    V_HORDE,
    V_KOTH,
    V_RACINGKINGS,
    V_STANDARD,
    V_THREECHECK,
    VARIANT_NAMES,
)

# [Variant] tag values (lower-cased, stripped) -> code. Lichess writes `Variant.name`
# (scalachess variant/*.scala): "Crazyhouse", "Antichess", "Atomic", "Horde", "King of the Hill",
# "Racing Kings", "Three-check"; the rest are python-chess's `aliases` and Lichess keys.
_ALIASES = {
    V_CRAZYHOUSE: ("crazyhouse", "crazy house", "house", "zh"),
    # (not python-chess's Giveaway/Suicide: other start castling rights, other stalemate rules)
    V_ANTICHESS: ("antichess", "anti chess", "anti"),
    V_ATOMIC: ("atomic", "atom", "atomic chess"),
    V_HORDE: ("horde", "horde chess"),
    V_KOTH: ("king of the hill", "koth", "kingofthehill"),
    V_RACINGKINGS: ("racing kings", "racing", "race", "racingkings"),
    V_THREECHECK: ("three-check", "three check", "threecheck", "three check chess", "3-check", "3 check", "3check"),
}
VARIANT_BY_NAME = {name: code for code, names in _ALIASES.items() for name in names}

# The python-chess board class name of each code (chess.variant), for the oracle and start positions.
PYCHESS_CLASS = {
    V_CRAZYHOUSE: "CrazyhouseBoard",
    V_ANTICHESS: "AntichessBoard",
    V_ATOMIC: "AtomicBoard",
    V_HORDE: "HordeBoard",
    V_KOTH: "KingOfTheHillBoard",
    V_RACINGKINGS: "RacingKingsBoard",
    V_THREECHECK: "ThreeCheckBoard",
}

# Lichess dump file names: lichess_db_<key>_rated_YYYY-MM.pgn(.zst|.bz2) with the lila keys.
_FILE_KEYS = {
    "antichess": V_ANTICHESS,
    "atomic": V_ATOMIC,
    "crazyhouse": V_CRAZYHOUSE,
    "horde": V_HORDE,
    "kingofthehill": V_KOTH,
    "racingkings": V_RACINGKINGS,
    "threecheck": V_THREECHECK,
}
_FILE_RE = re.compile(r"lichess_db_([A-Za-z0-9]+)_rated_\d{4}-\d{2}\.pgn", re.IGNORECASE)


def variant_code(name: str | None) -> int | None:
    """V_* code of a [Variant] tag value, None if it is not one of the seven variants."""
    if name is None:
        return None
    return VARIANT_BY_NAME.get(name.strip().lower())


def variant_from_filename(path: str) -> int | None:
    """The variant of a Lichess dump by its file name (`lichess_db_kingOfTheHill_rated_2024-01.pgn.zst`
    -> V_KOTH); None for standard, chess960 or any other name. Used when games lack a [Variant] tag."""
    m = _FILE_RE.search(os.path.basename(str(path)))
    if not m:
        return None
    return _FILE_KEYS.get(m.group(1).lower())
