"""Rule editions as each variant applies them: data, not code per edition.

A chess edition (`analyzer.kinds.chess.editions.ChessEdition`) is applied to a variant's games with the
overrides below, which say what the variant itself changes (docs/variants.md):

- Crazyhouse has no 50-move rule on Lichess (scalachess `Crazyhouse.fiftyMoves = false`) and no
  50- or 75-move rule in python-chess (`CrazyhouseBoard._is_halfmoves` is always False): both are
  off in every edition.
- An edition whose insufficient material is automatic (`lichess`) uses the server's definition
  per variant (scalachess `Variant.isInsufficientMaterial`, kernel fact VF_LICHESS_INSUFFICIENT)
  instead of python-chess's material test.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from analyzer.kinds.chess.editions import ChessEdition
from analyzer.kinds.chess.variants._codes import V_CRAZYHOUSE

VARIANT_OVERRIDES: dict[int, dict] = {
    V_CRAZYHOUSE: {"claim_moves": 0, "automatic_moves": 0, "fifty_is_automatic": False},
}


def variant_edition(ed: ChessEdition, v: int) -> ChessEdition:
    """The edition with the variant's overrides applied."""
    over = VARIANT_OVERRIDES.get(v)
    return dataclasses.replace(ed, **over) if over else ed


def variant_params(ed: ChessEdition, v: int) -> tuple[np.ndarray, bool]:
    """(rule-kernel parameter vector, use scalachess's insufficient material) for variant v."""
    ved = variant_edition(ed, v)
    return ved.params(), bool(ed.insufficient_is_automatic)
