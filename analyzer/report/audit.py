"""The audit of recorded results: each chess game under the edition in force for it, and what
the check can say about it. Two categories, kept apart on the page and in the tables:

  contradiction  the recorded game breaks the edition in force: play went on past an automatic
                 draw, or a decisive result stands after one (the headline counts these only)
  lead           breaks no rule but is worth a look (an agreed draw after a claimable one)
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

import polars as pl

# The edition in force for an over-the-board game, by its date (FIDE Laws; docs/report.md).
FIDE_IN_FORCE = (
    (_dt.date(2018, 1, 1), "fide_2018"),
    (_dt.date(2014, 7, 1), "fide_2014"),
    (_dt.date(2009, 7, 1), "fide_2009"),
    (_dt.date(1997, 7, 1), "fide_1997"),
)

CONTRADICTION = "contradiction"
LEAD = "lead"


@dataclass(frozen=True)
class AuditKind:
    name: str
    category: str  # CONTRADICTION or LEAD
    label: str  # short, for table headers
    explanation: str  # what it means and why it is (or is not) a breach, for the page


KINDS = (
    AuditKind(
        "continued_past_automatic_draw",
        CONTRADICTION,
        "play went on past an automatic draw",
        "The edition's first automatic draw (fivefold repetition, 75 moves; on Lichess also 50 moves and "
        "insufficient material) came before the last recorded move: under that edition the game was over "
        "there, and the moves after it should not exist.",
    ),
    AuditKind(
        "decisive_after_automatic_draw",
        CONTRADICTION,
        "a decisive result after an automatic draw",
        "The game is recorded 1-0 or 0-1 although an automatic draw of the edition happened in it: the "
        "result should have been a draw.",
    ),
    AuditKind(
        "lichess_agreement_after_claimable_draw",
        LEAD,
        "a Lichess “Normal” draw by agreement after an earlier claimable draw",
        "A Lichess game recorded drawn (Termination “Normal”, no rule that ended it on its last move) after a "
        "threefold repetition could have been claimed earlier, or an automatic draw was passed: players may "
        "agree a draw at any time, so this breaks no rule; it points at games where Lichess's own detection, "
        "or the record, may differ from the model.",
    ),
)
KIND = {k.name: k for k in KINDS}
NAMES = tuple(k.name for k in KINDS)
CONTRADICTIONS = tuple(k.name for k in KINDS if k.category == CONTRADICTION)
LEADS = tuple(k.name for k in KINDS if k.category == LEAD)


def in_force() -> pl.Expr:
    """The edition in force for a chess game (None: not audited): Lichess games under `lichess`,
    over-the-board games under the FIDE Laws of their date."""
    e = (
        pl.when(pl.col("game_type") != "chess")
        .then(pl.lit(None, pl.String))
        .when(pl.col("platform") == "lichess")
        .then(pl.lit("lichess"))
        .when(pl.col("platform") != "otb")
        .then(pl.lit(None, pl.String))
    )
    for bound, ed in FIDE_IN_FORCE:
        e = e.when(pl.col("date") >= bound).then(pl.lit(ed))
    return e.otherwise(pl.lit(None, pl.String))


def flags() -> dict[str, pl.Expr]:
    """Per kind, whether a (game, edition in force) row has it: over the columns of games joined
    to verdicts (plies, result, termination, end_ply, first_threefold_claim_ply, draw_reason)."""
    auto = pl.col("end_ply").is_not_null()
    earlier = (
        pl.col("first_threefold_claim_ply").is_not_null() & (pl.col("first_threefold_claim_ply") < pl.col("plies"))
    ) | (auto & (pl.col("end_ply") < pl.col("plies")))
    return {
        "continued_past_automatic_draw": auto & (pl.col("plies") > pl.col("end_ply")),
        "decisive_after_automatic_draw": auto & pl.col("result").is_in(["1-0", "0-1"]),
        "lichess_agreement_after_claimable_draw": (
            (pl.col("platform") == "lichess")
            & (pl.col("result") == "1/2-1/2")
            & (pl.col("termination") == "Normal")
            & (pl.col("draw_reason") == "agreement")
            & earlier
        ),
    }
