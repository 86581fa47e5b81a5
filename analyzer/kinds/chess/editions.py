"""Chess rule editions as data: the thresholds and switches the chess rule kernel reads.

An edition never needs new code: the built-ins below and custom ones (TOML file or CLI options)
are all `ChessEdition` values (analyzer.kinds.Edition protocol).
"""

from __future__ import annotations

import dataclasses
import functools
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


# The fields added after an edition's fingerprint was first recorded in datasets: left out of the
# fingerprint while they hold their default, so that an output written before them still matches.
_LATER_FIELDS = {
    "limits": (),
    "automatic_limits": (),
    "stalemate_wins": False,
    "counterfactual": False,
}


def _limit_pairs(value) -> tuple:
    """A limits option as a sorted tuple of (material pattern, moves): from a dict (TOML, the
    fingerprint), a sequence of pairs, or text "KBBvKN:75;KRBvKR:75" (the command line)."""
    from analyzer.kinds.chess import material

    if value is None or value == "" or value == ():
        return ()
    if isinstance(value, str):
        items = []
        for part in filter(None, (x.strip() for x in value.replace(",", ";").split(";"))):
            pat, sep, moves = part.partition(":")
            if not sep:
                pat, sep, moves = part.partition("=")
            if not sep:
                raise ValueError(f"limits {value!r}: expected PATTERN:MOVES[;PATTERN:MOVES...], e.g. KBBvKN:75")
            items.append((pat.strip(), moves.strip()))
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        items = [tuple(x) for x in value]
    out = {}
    for pat, moves in items:
        material.parse_pattern(str(pat))  # (a clear ValueError for a pattern it cannot read)
        if isinstance(moves, bool):
            raise ValueError(f"limit {pat}={moves!r}: expected a whole number of moves")
        try:
            m = int(moves)
        except (TypeError, ValueError):
            raise ValueError(f"limit {pat}={moves!r}: expected a whole number of moves") from None
        if m < 0:
            raise ValueError(f"limit {pat}={m}: must be at least 0 (0 = no such rule for that material)")
        out[str(pat)] = m
    return tuple(sorted(out.items()))


@functools.lru_cache(maxsize=256)
def _limit_rows(limits: tuple, automatic_limits: tuple) -> tuple[tuple[int, int, int], ...]:
    """(signature, claim plies, automatic plies; -1: the edition's own) of limits tables."""
    from analyzer.kinds.chess import material

    rows: dict[int, list[int]] = {}
    for column, table in ((0, limits), (1, automatic_limits)):
        for sig, moves in material.expand_limits(table).items():
            rows.setdefault(sig, [-1, -1])[column] = 2 * moves
    return tuple((sig, c, a) for sig, (c, a) in sorted(rows.items()))


@functools.lru_cache(maxsize=256)
def _limit_map(limits: tuple, automatic_limits: tuple) -> dict[int, tuple[int, int]]:
    return {sig: (c, a) for sig, c, a in _limit_rows(limits, automatic_limits)}


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
    # Move limits by material (moves by each player), e.g. (("KBBvKN", 75),): in a window without
    # capture or pawn move whose material matches a pattern (either colour; material.py), the
    # 50-move claim (or Lichess's automatic 50) counts to this many moves instead of claim_moves,
    # the automatic 75-move rule to automatic_limits' number instead of automatic_moves.
    limits: tuple = ()
    automatic_limits: tuple = ()
    stalemate_wins: bool = False  # counterfactual: stalemate is a win for the side that gave it
    counterfactual: bool = False  # a rule set never in force (the tables and the report say so)

    # A dead position (no series of legal moves leads to mate) ends the game, drawn: FIDE 5.2.2
    # (2014+), 5.2b and 9.6 (1997-2009). Checkmate and stalemate take precedence (they end it first).
    dead_position_is_automatic: bool = True
    timeout_rule: int = TIMEOUT_UNWINNABLE

    def __post_init__(self) -> None:
        for name in ("limits", "automatic_limits"):  # (from a dict, text or pairs: checked, sorted)
            object.__setattr__(self, name, _limit_pairs(getattr(self, name)))

    def fingerprint(self) -> dict:
        out = dataclasses.asdict(self)
        for name, default in _LATER_FIELDS.items():
            if out[name] == default:
                del out[name]
            elif name.endswith("limits"):
                out[name] = dict(getattr(self, name))  # (JSON: what a record holds reads back equal)
        return out

    def limit_rows(self) -> list[tuple[int, int, int]]:
        """(material signature, claim plies, automatic plies) per signature the limits name
        (-1: the edition's own count), as the rule kernel reads them."""
        return list(_limit_rows(self.limits, self.automatic_limits))

    def params(self) -> np.ndarray:
        """The numeric parameter vector the rule kernel reads (see _rules.P_*)."""
        rows = self.limit_rows()
        head = [
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
            int(self.stalemate_wins),
            int(self.dead_position_is_automatic),
            self.timeout_rule,
            len(rows),
            self.material_clock if rows else 1 << 30,
        ]
        return np.array(head + [v for row in rows for v in row], dtype=np.int64)

    def _claim_plies(self) -> list[int]:
        """Every claim count of the 50-move rule this edition can apply, in plies (0: none)."""
        return [p for p in [2 * self.claim_moves] + [2 * m for _, m in self.limits] if p > 0]

    @property
    def min_claim_clock(self) -> int:
        """Smallest halfmove clock at which this edition needs the 50-move intended-move fact."""
        plies = self._claim_plies()
        if not plies:
            return 1 << 30
        return min(plies) - (1 if self.claim_intended_move else 0)

    @property
    def material_clock(self) -> int:
        """Smallest halfmove clock at which a 50- or 75-move rule of this edition can apply (the
        positions whose material the rule kernel and the tablebase probes may read)."""
        autos = [p for p in [2 * self.automatic_moves] + [2 * m for _, m in self.automatic_limits] if p > 0]
        return min([self.min_claim_clock] + autos)

    def move_limits(self, signature: int) -> tuple[int, int]:
        """(claim plies, automatic plies) of a window whose material has this signature (0: no
        such rule), the limits applied."""
        claim, auto = 2 * self.claim_moves, 2 * self.automatic_moves
        row = _limit_map(self.limits, self.automatic_limits).get(signature)
        if row is not None:
            claim = row[0] if row[0] >= 0 else claim
            auto = row[1] if row[1] >= 0 else auto
        return claim, auto


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
    "fide_1988": ChessEdition(
        "fide_1988",
        "FIDE Laws 1988-1992 (Art. 10.10, 10.12): threefold and 50-move claims by the player to move, "
        "incl. a written move; no automatic draws; positions differ when castling was temporarily "
        "impossible (as fide_1997); 75 moves for KBB v KN, KBB v KQ, KNN v KP, KNN v KQ, KQP (pawn "
        "on its 7th rank) v KQ, KRB v KR (the 1988 clause, docs/rules.md 1.3)",
        automatic_repetitions=0,
        automatic_moves=0,
        identity=IDENTITY_FIDE_1997,
        limits=(("KBBvKN", 75), ("KBBvKQ", 75), ("KNNvKP", 75), ("KNNvKQ", 75), ("KQP7vKQ", 75), ("KRBvKR", 75)),
    ),
    "no_fifty": ChessEdition(
        "no_fifty",
        "Counterfactual: FIDE 2018 without any move-count rule (no 50-move claim, no 75-move "
        "automatic draw); threefold claims and fivefold as 2018",
        claim_moves=0,
        automatic_moves=0,
        counterfactual=True,
    ),
    "stalemate_win": ChessEdition(
        "stalemate_win",
        "Counterfactual: FIDE 2018, but stalemate is a win for the side that gave it (a rule change "
        "studied with self-play engines by Tomasev et al. 2020, arXiv:2009.04374)",
        stalemate_wins=True,
        counterfactual=True,
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
    "limits": (tuple, None, None),
    "automatic_limits": (tuple, None, None),
    "stalemate_wins": (bool, None, None),
    "counterfactual": (bool, None, None),
    "description": (str, None, None),
    "id": (str, None, None),
}


def _typed(key: str, value):
    """An option value of the right type and range (text from the command line is converted);
    ValueError with a clear message otherwise."""
    kind, lo, hi = _RANGES[key]
    if kind is tuple:
        return _limit_pairs(value)
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
