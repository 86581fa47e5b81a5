"""Russian draughts (GameType 25): PDN reader, numba replay, section 32 draw rules, tables out.

Entry points:

* ``analyze_draughts_block(block, spans, *, source, first_game_index, base_offset, editions)``
* ``analyze_draughts_bytes(data, *, source="test", editions=("fshr_russian",))``

See docs/draughts.md for square numbering, how a "move" is counted and the rule readings.
"""
from __future__ import annotations

from .analyze import GAME_TYPE, analyze_draughts_block, analyze_draughts_bytes
from .rules import EDITIONS, DraughtsEdition, get_edition

__all__ = ["GAME_TYPE", "EDITIONS", "DraughtsEdition", "analyze_draughts_block", "analyze_draughts_bytes",
           "get_edition"]
