"""One look per series for the whole report: a series (an edition, or editions that agree on a
measure and are drawn as one) has the same colour, marker, line dash and label in every figure,
and legends list series in one order. Assigned once from every series the report draws: the
series drawn most often first (so the series seen together get the most distinct colours), then
in the order of the editions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

# Okabe & Ito (2008), colour-blind safe (yellow left out: too light on white).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS = ("o", "s", "D", "^", "v", "P", "X")
# Line dashes, so that two series that coincide stay visible (the later one dashed over the other).
DASHES = ("-", (0, (4, 2)), (0, (1, 1.5)), (0, (5, 2, 1, 2)))
SMALL = "#9a9a9a"  # bins with fewer than stats.MIN_GAMES games
SMALL_CI = "#cfcfcf"  # and their intervals


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    dash: object
    label: str
    order: int

    @property
    def face(self) -> str:
        """Marker fill: every second series open, so that a series drawn over an equal one
        leaves it visible."""
        return self.colour if self.order % 2 == 0 else "white"


COUNTERFACTUAL_MARK = " (counterfactual)"


def series_label(editions: tuple[str, ...], all_editions: list[str], counterfactual: frozenset = frozenset()) -> str:
    """'all editions' for a series of every edition of its kind (more than one); FIDE editions
    by year ('FIDE 2018=2014'), others by id, joined by ' = '; a counterfactual edition (a rule
    set never in force: no_fifty, stalemate_win) says so."""
    if len(all_editions) > 1 and set(editions) == set(all_editions):
        return "all editions" + (" (some counterfactual)" if counterfactual & set(editions) else "")
    fide = [e[5:] for e in editions if e.startswith("fide_")]
    other = [e + (COUNTERFACTUAL_MARK if e in counterfactual else "") for e in editions if not e.startswith("fide_")]
    return " = ".join((["FIDE " + "=".join(fide)] if fide else []) + other)


class Styles:
    """Series (tuples of editions, of one game kind) -> Style, fixed for the report."""

    def __init__(
        self,
        editions: dict[str, list[str]],
        series: list[tuple[str, tuple[str, ...]]],
        counterfactual: frozenset = frozenset(),
    ):
        """editions: game kind -> its editions in order; series: (game kind, editions), once per
        panel row that draws it (only these take a place in the palette); counterfactual: the
        editions labelled so."""
        self.editions = editions
        self.counterfactual = counterfactual
        kinds = list(editions)
        uses = Counter(series)

        def key(item):
            gt, eds = item
            order = editions.get(gt, [])
            idx = sorted(order.index(e) if e in order else len(order) for e in eds)
            return (kinds.index(gt) if gt in kinds else len(kinds), -uses[item], idx[0], -len(eds), idx)

        self._style: dict[tuple[str, tuple[str, ...]], Style] = {}
        for gt, eds in sorted(uses, key=key):  # each takes the next place in the palette
            self(gt, eds)

    def __call__(self, game_type: str, editions) -> Style:
        key = (game_type, tuple(editions))
        if key not in self._style:  # the next place (a series not announced: after the others)
            i = len(self._style)
            self._style[key] = Style(
                PALETTE[i % len(PALETTE)],
                MARKERS[i % len(MARKERS)],
                DASHES[i % len(DASHES)],
                series_label(tuple(editions), self.editions.get(game_type, []), self.counterfactual),
                i,
            )
        return self._style[key]
