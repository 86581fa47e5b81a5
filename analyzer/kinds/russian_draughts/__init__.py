"""Russian draughts (PDN GameType 25): numba move generator and replay, the section 32 (and
FMJD-64) draw rules. See docs/draughts.md for square numbering, what a "move" counts and the
rule readings."""

from __future__ import annotations

from analyzer.kinds.base import GameKind


def _builtin_editions() -> dict:
    from analyzer.kinds.russian_draughts.editions import BUILTIN

    return dict(BUILTIN)


def _custom_edition(**options):
    from analyzer.kinds.russian_draughts.editions import custom_edition

    return custom_edition(**options)


def _analyze_block(buf, starts, ends, *, editions, extra_status=None, keep_facts=False, input_ends=False, **_options):
    from analyzer.kinds.russian_draughts.analyze import analyze_block

    return analyze_block(
        buf, starts, ends, editions=editions, extra_status=extra_status, keep_facts=keep_facts, input_ends=input_ends
    )


KIND = GameKind(
    name="russian_draughts",
    draughts_markers=True,
    default_editions=("fshr_russian",),
    builtin_editions=_builtin_editions,
    custom_edition=_custom_edition,
    analyze_block=_analyze_block,
)
