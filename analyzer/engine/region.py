"""Analyze a stream of decompressed text in bounded blocks cut at game boundaries.

Memory stays bounded whatever the input: a block is at most `block_size` plus one game, and a
game larger than `max_game_bytes` is reported (status game_too_large) and skipped, not buffered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from analyzer import kinds
from analyzer.analysis import analyze_block
from analyzer.pgn.split import split_games

# A "strong" game start: where a unit that starts mid-file (a pzstd frame unit) and the unit
# before it agree that a game begins, seeing only the bytes from the frame boundary on:
#   - a tag line right after a blank line;
#   - a tag line, or a movetext line starting with "1.", after a line that ends with a
#     termination marker (files without blank lines between games, games without tags).
# A strong start is always a game start of the sequential reader (pgn._scan.find_games).
_EOL = rb"(?:\r\n|\n|\r)"
_TAG = rb"[ \t]*\[[A-Za-z0-9_]+[ \t]*\""
_MARKER = rb"(?<=[ \t\r\n])(?:1-0|0-1|1/2-1/2|2-0|0-2|1-1|\*)[ \t]*"
_STRONG = re.compile(
    rb"(?:" + _EOL + rb"[ \t]*" + _EOL + rb"(" + _TAG + rb")"
    rb"|" + _MARKER + _EOL + rb"(?:[ \t]*" + _EOL + rb")*(" + _TAG + rb"|[ \t]*1\.))"
)
# After a game larger than the limit, the sequential reader's own rule ends it: any tag line.
_NEXT_AFTER_OVERSIZED = re.compile(
    _EOL + rb"(" + _TAG + rb")|" + _MARKER + _EOL + rb"(?:[ \t]*" + _EOL + rb")*([ \t]*1\.)"
)
# The tag section of a game (and blank, % and ; lines): an oversized game's own tag lines do
# not end it.
_TAG_SECTION = re.compile(rb"(?:[ \t]*(?:[\[%;][^\r\n]*)?" + _EOL + rb")*")
TAG_PREFIX_BYTES = 1 << 16
# While skipping to a strong start, text more than this far behind the end is dropped: a match
# that began there and is still incomplete would need that much whitespace.
_SKIP_LOOKBACK = 1 << 16


def find_strong_start(buf, pos: int = 0, after_oversized: bool = False) -> int:
    """Offset of the first strong game start in buf whose match begins at or after pos (the
    byte before pos is seen only as what precedes a marker), or -1. `after_oversized`: any tag
    line counts (the end of an oversized game, as the sequential reader would see it)."""
    m = (_NEXT_AFTER_OVERSIZED if after_oversized else _STRONG).search(buf, pos)
    if m is None:
        return -1
    return m.start(1) if m.start(1) >= 0 else m.start(2)


def strong_start_from(buf, pos: int) -> int:
    """find_strong_start over buf[pos:] alone, as an offset into buf: what a unit that begins
    at pos (and cannot see the bytes before it) finds."""
    with memoryview(buf) as whole, whole[pos:] as view:
        s = find_strong_start(view, 0)
    return -1 if s < 0 else pos + s


class Skipper:
    """Finds the next game start in text fed piece by piece, from a point inside a game, with
    bounded memory: the reader (engine.plan) and the unit that starts at the same point use
    it on the same bytes, so they agree where the next game starts. `after_oversized`: the
    point is inside a game larger than the limit (any tag line ends it); else it is a pzstd
    frame boundary (a strong start)."""

    def __init__(self, after_oversized: bool, search_from: int = 0):
        self.after_oversized = after_oversized
        self.text = bytearray()
        self.base = 0  # offset of text[0] from the point the skip began
        self.search_from = search_from

    def feed(self, piece) -> int:
        """Offset (from the point the skip began) of the next game start, or -1 for now."""
        self.text += piece
        s = find_strong_start(self.text, self.search_from, self.after_oversized)
        if s >= 0:
            return self.base + s
        drop = max(0, len(self.text) - _SKIP_LOOKBACK)
        if drop:
            drop -= 1  # keep one byte: it precedes what the search may meet
            del self.text[:drop]
            self.base += drop
            self.search_from = 1
        return -1


@dataclass
class RegionStats:
    games: int = 0
    text_bytes: int = 0
    damage: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)  # the kind's counts for the summary: {group: {name: n}}


BlockSink = Callable[..., None]  # (games, verdicts, events) of a block


class RegionAnalyzer:
    """Feed decompressed chunks with `feed`, then `finish`; tables go to `sink` per block."""

    def __init__(
        self,
        *,
        game_type: str,
        source: str,
        editions: list,
        sink: BlockSink,
        block_size: int = 8 << 20,
        max_game_bytes: int = 16 << 20,
        options: dict | None = None,
        game_starts: np.ndarray | None = None,
        ends_input: bool = False,
    ):
        self.ends_input = ends_input  # the region's text ends where the input ends
        self.game_type = game_type
        self.draughts_markers = kinds.get(game_type).draughts_markers
        self.source = source
        self.options = options or {}
        self.editions = editions
        self.sink = sink
        self.block_size = block_size
        self.max_game_bytes = max_game_bytes
        self.pending = bytearray()
        self.offset = 0  # region offset of pending[0]
        self.skipper: Skipper | None = None  # set while skipping to the next game start
        self.skip_origin = 0  # region offset where the skip began
        self.end_offset: int | None = None  # the region ends at the first strong start at or after this
        self.done = False
        self.stats = RegionStats()
        # Every game start of the region's text (region offsets, ascending), when the planner
        # found them already (UnitSpec.game_starts): used instead of scanning the text again,
        # as long as the text being processed begins at one of them (see _split).
        self.game_starts = game_starts

    @property
    def skipping(self) -> bool:
        return self.skipper is not None

    def start_inside(self, after_oversized: bool = False) -> None:
        """The text fed from here starts inside the previous unit's last game: skip to the next
        game start, the one the previous unit (or the reader) stops at. `after_oversized`: the
        reader cut a game larger than the limit here; else this is a pzstd frame boundary."""
        self._skip(Skipper(after_oversized))

    def set_end(self, offset: int) -> None:
        """The region ends at the first strong game start at or after region offset `offset`
        (the next unit's first byte); until it is found, no text from there on is processed."""
        self.end_offset = offset
        self.feed(b"")

    def gap(self, reason: str) -> None:
        """Text is missing here (a damaged frame): the game in progress is truncated, and
        reading resumes at the next strong game start."""
        if not self.skipping and self._has_text():
            self._process(final=True, truncated_reason=reason)
        else:
            self.stats.damage.append(reason)
        self.offset += len(self.pending)
        self.pending = bytearray()
        self._skip(Skipper(False))

    def feed(self, chunk) -> None:
        if self.done:
            return
        if self.skipper is not None:
            s = self.skipper.feed(chunk)
            if s < 0:
                return
            rest = self.skipper.text[s - self.skipper.base :]
            self.offset = self.skip_origin + s
            self.skipper = None
            self.pending = bytearray(rest)
        else:
            self.pending += chunk
        if self.end_offset is not None:
            b = max(self.end_offset - self.offset, 0)
            s = strong_start_from(self.pending, b)
            if s >= 0:
                del self.pending[s:]
                self.done = True
            elif len(self.pending) - b > self.max_game_bytes:
                # No game start in that much text after the boundary: the next unit finds none
                # either. End here and say so; the text after the boundary is skipped.
                self.stats.damage.append(
                    f"no game start found within {self.max_game_bytes} bytes after the end of this unit "
                    f"(text offset {self.end_offset}); games there may be lost"
                )
                del self.pending[b:]
                self.done = True
            else:
                return  # hold the text from the boundary on until the strong start is found
        while len(self.pending) >= self.block_size and not self.skipping:
            if not self._process(final=False):
                break

    def finish(self, truncated_reason: str | None = None, oversized_tail: bool = False) -> RegionStats:
        """Analyze what is left. `oversized_tail`: the text ends inside a game larger than the
        maximum that goes on in the next unit (the reader cut it there): reported, not analyzed."""
        if self.done:
            truncated_reason = None
        if self.skipper is not None:  # skipping
            self.offset = self.skip_origin + self.skipper.base + len(self.skipper.text)
            self.pending = bytearray()
            if truncated_reason:
                self.stats.damage.append(truncated_reason)
        elif oversized_tail and self._has_text():
            self._process(final=False)
            if self._has_text():
                head = np.frombuffer(bytes(self.pending[:TAG_PREFIX_BYTES]), dtype=np.uint8)
                self._report_oversized(head)
                self.offset += len(self.pending)
                self.pending = bytearray()
        elif self._has_text():
            self._process(final=True, truncated_reason=truncated_reason)
        elif truncated_reason:
            self.stats.damage.append(truncated_reason)
        self.stats.text_bytes = self.offset + len(self.pending)
        return self.stats

    # -- internals ---------------------------------------------------------------------------

    def _has_text(self) -> bool:
        """Is anything but whitespace pending? (isspace tests in place; strip() would copy the
        pending text, up to a block, to answer.)"""
        return len(self.pending) > 0 and not self.pending.isspace()

    def _skip(self, skipper: Skipper) -> None:
        """Skip from pending[0] on (what is pending is fed to the skipper first)."""
        self.skipper = skipper
        self.skip_origin = self.offset
        text = self.pending
        self.pending = bytearray()
        self.feed(text)

    def _analyze(self, buf: np.ndarray, starts, ends, extra: dict, input_ends: bool = False) -> tuple:
        """The (games, verdicts, events) tables of a block; if the kernels fail on it, game by
        game, and a game that still fails gets status internal_error (not replayed).
        `input_ends`: the block's last game is where the input ends (it may be cut off)."""
        try:
            return self._analyze_block(buf, starts, ends, extra, self.stats.games, input_ends)
        except Exception:  # noqa: BLE001 - a bug on one game must not lose the block
            pass
        parts = []
        for g in range(len(starts)):
            s, e = starts[g : g + 1], ends[g : g + 1]
            ex = {0: extra[g]} if g in extra else {}
            last = input_ends and g == len(starts) - 1
            try:
                parts.append(self._analyze_block(buf, s, e, ex, self.stats.games + g, last))
            except Exception as exc:  # noqa: BLE001
                msg = f"internal error while analyzing this game ({type(exc).__name__}: {exc}); not analyzed"
                parts.append(self._analyze_block(buf, s, e, {0: ("internal_error", msg)}, self.stats.games + g))
        return tuple(pa.concat_tables([p[t] for p in parts]) for t in range(3))

    def _analyze_block(
        self, buf: np.ndarray, starts, ends, extra: dict, first_index: int, input_ends: bool = False
    ) -> tuple:
        res = analyze_block(
            self.game_type,
            buf,
            starts,
            ends,
            source=self.source,
            first_game_index=first_index,
            base_offset=self.offset,
            editions=self.editions,
            extra_status=extra,
            options=self.options,
            input_ends=input_ends,
        )
        for group, named in res.notes.items():
            into = self.stats.notes.setdefault(group, {})
            for name, k in named.items():
                into[name] = into.get(name, 0) + k
        return res.games, res.verdicts, res.events

    def _process(self, final: bool, truncated_reason: str | None = None) -> bool:
        # A view, not a copy; it is released before the processed text is cut off below.
        buf = np.frombuffer(self.pending, dtype=np.uint8)
        buf.flags.writeable = False  # the kernels are compiled (and warmed up) for read-only text
        starts, ends, consumed = self._split(buf, final)
        n = len(starts)
        if n == 0 and not final:
            if len(self.pending) > self.max_game_bytes:
                head = buf[: min(len(buf), TAG_PREFIX_BYTES)].copy()
                head.flags.writeable = False
                del buf  # release the view: _oversized resizes the pending text
                self._oversized(head)
            return False
        extra = {}
        sizes = ends - starts
        for g in np.nonzero(sizes > self.max_game_bytes)[0]:
            extra[int(g)] = (
                "game_too_large",
                f"game of {int(sizes[g])} bytes is above the "
                f"maximum game size ({self.max_game_bytes} bytes); not analyzed",
            )
        if final and truncated_reason and n:
            extra[n - 1] = ("truncated", f"the input ends inside this game: {truncated_reason}")
            self.stats.damage.append(truncated_reason)
        elif final and truncated_reason:
            self.stats.damage.append(truncated_reason)
        if n:
            self.sink(*self._analyze(buf, starts, ends, extra, final and self.ends_input and (n - 1) not in extra))
            self.stats.games += n
        del buf
        try:
            # In place: CPython mostly just moves a bytearray's start, where a slice would copy
            # the unprocessed rest into a new buffer.
            del self.pending[:consumed]
        except BufferError:  # a view of the text is still alive somewhere: copy the rest
            self.pending = self.pending[consumed:]
        self.offset += consumed
        return consumed > 0

    def _split(self, buf: np.ndarray, final: bool) -> tuple[np.ndarray, np.ndarray, int]:
        """(starts, ends, consumed) of the complete games in the pending text, as split_games
        gives them: from the planner's game starts when the pending text begins at one (or at
        the region's start), else (after a skip that landed elsewhere) by scanning, from then on."""
        known = self.game_starts
        if known is not None:
            lo = int(np.searchsorted(known, self.offset))
            if self.offset == 0 or (lo < len(known) and known[lo] == self.offset):
                hi = int(np.searchsorted(known, self.offset + len(buf)))
                inside = known[lo:hi] - self.offset
                if len(inside) == 0:
                    return inside, inside, len(buf) if final else 0
                if final:
                    return inside, np.append(inside[1:], len(buf)), len(buf)
                return inside[:-1], inside[1:], int(inside[-1])
            self.game_starts = None
        return split_games(buf, final, draughts=self.draughts_markers)

    def _oversized(self, buf: np.ndarray) -> None:
        """The pending text is one game larger than the limit: report it (from `buf`, a copy of
        its start) and skip to the next game."""
        self._report_oversized(buf)
        tags = _TAG_SECTION.match(self.pending)
        assert tags is not None  # the pattern matches the empty string: match() cannot fail
        self._skip(Skipper(True, search_from=max(1, tags.end())))

    def _report_oversized(self, head: np.ndarray) -> None:
        starts = np.array([0], np.int64)
        ends = np.array([len(head)], np.int64)
        msg = (
            f"game larger than the maximum game size ({self.max_game_bytes} bytes); "
            "not analyzed, skipped to the next game"
        )
        games, verdicts, events = self._analyze(head, starts, ends, {0: ("game_too_large", msg)})
        self.sink(games, verdicts, events.slice(0, 0))
        self.stats.games += 1


def analyze_chunks(chunks: Iterable[bytes], **kwargs) -> RegionStats:
    """Run a RegionAnalyzer over an iterator of chunks of one region (a convenience for tests
    and the fuzzer)."""
    ra = RegionAnalyzer(**kwargs)
    for chunk in chunks:
        ra.feed(chunk)
    return ra.finish()
