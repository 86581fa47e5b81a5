"""Chess rule editions as data: the thresholds and switches the chess rule kernel reads.

An edition never needs new code: the built-ins below and custom ones (TOML file or CLI options)
are all `ChessEdition` values (analyzer.kinds.Edition protocol).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

IDENTITY_FIDE_2009 = 0  # castling *rights* (FIDE 2009+, python-chess, FEN)
IDENTITY_FIDE_1997 = 1  # castling rights and whether castling is legal right now (1997-2005 texts)

# How a loss on time is scored when the winner may not be able to checkmate (`timeout_rule`).
TIMEOUT_NO_RULE = 0  # a loss on time is a loss
TIMEOUT_INSUFFICIENT = 1  # a draw if the winner has insufficient material (scalachess, python-chess's per-side test)
TIMEOUT_UNWINNABLE = 2  # a draw if no series of legal moves lets the winner mate (FIDE 6.9; 6.10 in 1997-2005)

REPETITION_ANY = 0  # N occurrences anywhere since the last irreversible move (2018 text)
REPETITION_CONSECUTIVE = 1  # 2014 text: same position at p, p-4, ..., p-4(N-1) (python-chess <= 0.23.8)


@dataclass(frozen=True)
class ChessEdition:
    id: str
    description: str = ""
    kind = "chess"
    claim_repetitions: int = 3  # threefold claim (9.2); 0 = no repetition claim
    claim_intended_move: bool = True  # claims may be made on an intended move (9.2.1.1, 9.3.1)
    claim_moves: int = 50  # 50-move claim (9.3), in moves by each player; 0 = none
    automatic_repetitions: int = 5  # fivefold (9.6.1); 0 = none
    repetition_mode: int = REPETITION_ANY
    automatic_moves: int = 75  # 75-move rule (9.6.2); 0 = none
    checkmate_precedence: bool = True  # a mate on the move that completes the count wins (9.6.2)
    fifty_is_automatic: bool = False  # Lichess: the game ends at halfmove clock 2 * claim_moves
    insufficient_is_automatic: bool = False  # Lichess: insufficient material ends the game
    automatic_repetitions_from: str | None = (
        None  # UTCDate ("YYYY.MM.DD") from which the automatic repetition rule applies
    )
    identity: int = IDENTITY_FIDE_2009
    # A dead position (no series of legal moves leads to mate) ends the game, drawn: FIDE 5.2.2
    # (2014+), 5.2b and 9.6 (1997-2009). Checkmate and stalemate take precedence (they end it first).
    dead_position_is_automatic: bool = True
    timeout_rule: int = TIMEOUT_UNWINNABLE

    def fingerprint(self) -> dict:
        return dataclasses.asdict(self)

    def params(self) -> np.ndarray:
        """The numeric parameter vector the rule kernel reads (see _rules.P_*)."""
        return np.array(
            [
                self.claim_repetitions,
                int(self.claim_intended_move),
                2 * self.claim_moves,
                self.automatic_repetitions,
                self.repetition_mode,
                2 * self.automatic_moves,
                int(self.checkmate_precedence),
                int(self.fifty_is_automatic),
                int(self.insufficient_is_automatic),
                self.identity,
                int(self.dead_position_is_automatic),
                self.timeout_rule,
            ],
            dtype=np.int64,
        )

    @property
    def min_claim_clock(self) -> int:
        """Smallest halfmove clock at which this edition needs the 50-move intended-move fact."""
        if self.claim_moves <= 0:
            return 1 << 30
        return 2 * self.claim_moves - (1 if self.claim_intended_move else 0)


BUILTIN: dict[str, ChessEdition] = {
    "fide_2018": ChessEdition(
        "fide_2018",
        "FIDE Laws 1 Jan 2018 and 2023: threefold/50-move claims incl. intended move; "
        "fivefold (any 5 occurrences) and 75-move automatic, checkmate precedence; a dead position "
        "ends the game (5.2.2); a loss on time is a draw if the winner cannot mate (6.9)",
    ),
    "fide_2014": ChessEdition(
        "fide_2014",
        "FIDE Laws 1 Jul 2014: as 2018 but fivefold = the same position at plies "
        "p, p-4, p-8, p-12, p-16 ('five consecutive alternate moves by each player')",
        repetition_mode=REPETITION_CONSECUTIVE,
    ),
    "fide_2009": ChessEdition(
        "fide_2009",
        "FIDE Laws 1 Jul 2009: claims only (threefold, 50-move, intended moves), no automatic "
        "repetition or move-count draws; a dead position ends the game (5.2b, 9.6), a loss on time is "
        "a draw if the winner cannot mate (6.9)",
        automatic_repetitions=0,
        automatic_moves=0,
    ),
    "fide_1997": ChessEdition(
        "fide_1997",
        "FIDE Laws 1997-2005: as 2009, but positions also differ when castling was temporarily impossible",
        automatic_repetitions=0,
        automatic_moves=0,
        identity=IDENTITY_FIDE_1997,
    ),
    "lichess": ChessEdition(
        "lichess",
        "Lichess (scalachess): 50-move draw automatic at halfmove clock 100, fivefold "
        "automatic from 2020-01-14, threefold a claim of the current position, insufficient "
        "material automatic; a loss on time is a draw only if the winner has insufficient material; "
        "a dead position does not end the game",
        claim_intended_move=False,
        automatic_moves=0,
        fifty_is_automatic=True,
        insufficient_is_automatic=True,
        automatic_repetitions_from="2020.01.14",
        dead_position_is_automatic=False,
        timeout_rule=TIMEOUT_INSUFFICIENT,
    ),
}

_FIELDS = {f.name for f in dataclasses.fields(ChessEdition)}


_RANGES = {  # option -> (type, smallest value, largest value or None)
    "claim_repetitions": (int, 0, None),
    "claim_moves": (int, 0, None),
    "automatic_repetitions": (int, 0, None),
    "automatic_moves": (int, 0, None),
    "repetition_mode": (int, 0, 1),
    "identity": (int, 0, 1),
    "timeout_rule": (int, 0, 2),
    "dead_position_is_automatic": (bool, None, None),
    "claim_intended_move": (bool, None, None),
    "checkmate_precedence": (bool, None, None),
    "fifty_is_automatic": (bool, None, None),
    "insufficient_is_automatic": (bool, None, None),
    "automatic_repetitions_from": (str, None, None),
    "description": (str, None, None),
    "id": (str, None, None),
}


def _typed(key: str, value):
    """An option value of the right type and range (text from the command line is converted);
    ValueError with a clear message otherwise."""
    kind, lo, hi = _RANGES[key]
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ValueError(f"edition option {key}={value!r}: expected true or false")
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"edition option {key}={value!r}: expected a whole number")
        try:
            v = int(value)
        except ValueError:
            raise ValueError(f"edition option {key}={value!r}: expected a whole number") from None
        assert lo is not None  # every whole-number option has a smallest value
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"edition option {key}={v}: must be {rng}")
        return v
    if value is None and key == "automatic_repetitions_from":
        return None
    if not isinstance(value, str):
        raise ValueError(f"edition option {key}={value!r}: expected text")
    if key == "automatic_repetitions_from" and not (
        len(value) == 10 and value[4] == value[7] == "." and value.replace(".", "").isdigit()
    ):
        raise ValueError(f"edition option {key}={value!r}: expected a date YYYY.MM.DD")
    return value


def custom_edition(**options) -> ChessEdition:
    """A custom edition from keyword options (e.g. id="forty", claim_moves=40); based on
    fide_2018 unless base= names another built-in. Values are checked and typed."""
    base = options.pop("base", "fide_2018")
    if base not in BUILTIN:
        raise ValueError(f"unknown base edition {base!r}; known: {', '.join(BUILTIN)}")
    unknown = set(options) - _FIELDS
    if unknown:
        raise ValueError(f"unknown edition option(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    if not options.get("id"):
        raise ValueError("a custom edition needs an id")
    typed = {k: _typed(k, v) for k, v in options.items()}
    if typed.get("claim_repetitions") == 1:
        raise ValueError("edition option claim_repetitions=1: a repetition needs at least 2 occurrences (or 0 = none)")
    return dataclasses.replace(BUILTIN[base], **typed)
