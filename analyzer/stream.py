"""Analyze a stream of decompressed text in bounded blocks cut at game boundaries.

Memory stays bounded whatever the input: a block is at most `block_size` plus one game, and a
game larger than `max_game_bytes` is reported (status game_too_large) and skipped, not buffered.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from analyzer import tables
from analyzer.pgn.split import split_games

# A "strong" game start: a tag line right after a blank line. Work units are cut there, so a
# unit that starts mid-file and the sequential reader agree on where games begin.
_STRONG = re.compile(rb"(?:\r\n|\n|\r)[ \t]*(?:\r\n|\n|\r)([ \t]*\[[A-Za-z0-9_]+[ \t]*\")")
TAG_PREFIX_BYTES = 1 << 16


def find_strong_start(buf, pos: int) -> int:
    """Offset >= pos of the first tag line that follows a blank line, or -1."""
    m = _STRONG.search(buf, max(pos - 8, 0))
    while m is not None and m.start(1) < pos:
        m = _STRONG.search(buf, m.start(1))
    return -1 if m is None else m.start(1)


def _tail_start(buf) -> int:
    """Where a strong game start that has not fully arrived yet could begin: the third-last
    line break (a blank line and a tag line need two), looking back at most 4 KiB."""
    lo = max(len(buf) - 4096, 0)
    j = len(buf)
    for _ in range(3):
        k = max(buf.rfind(b"\n", lo, j), buf.rfind(b"\r", lo, j))
        if k < 0:
            return lo
        j = k
    return j


class DecodeDamage(Exception):
    """Raised by a chunk iterator when the compressed input is damaged at this point."""


@dataclass
class RegionStats:
    games: int = 0
    text_bytes: int = 0
    damage: list = field(default_factory=list)


BlockSink = Callable[[pa.Table, pa.Table], None]


class RegionAnalyzer:
    """Feed decompressed chunks with `feed`, then `finish`; tables go to `sink` per block."""

    def __init__(self, *, game_type: str, source: str, editions: list, sink: BlockSink,
                 block_size: int = 8 << 20, max_game_bytes: int = 16 << 20):
        self.game_type = game_type
        self.source = source
        self.editions = editions
        self.sink = sink
        self.block_size = block_size
        self.max_game_bytes = max_game_bytes
        self.pending = bytearray()
        self.offset = 0          # region offset of pending[0]
        self.skipping = False    # discarding text until the next strong game start
        self.end_offset = None   # the region ends at the first strong start at or after this
        self.done = False
        self.stats = RegionStats()

    def start_inside(self) -> None:
        """The text fed starts inside another unit's game: skip to the first strong start."""
        self.pending += b"\n"
        self.offset = -1
        self.skipping = True

    def set_end(self, offset: int) -> None:
        """The region ends at the first strong game start at or after region offset `offset`."""
        self.end_offset = offset
        self.feed(b"")

    def gap(self, reason: str) -> None:
        """Text is missing here (a damaged frame): the game in progress is truncated, and
        reading resumes at the next strong game start."""
        if not self.skipping and self.pending:
            self._process(final=True, truncated_reason=reason)
        else:
            self.stats.damage.append(reason)
        end = self.offset + len(self.pending)
        self.pending = bytearray(b"\n")
        self.offset = end - 1
        self.skipping = True

    def feed(self, chunk: bytes) -> None:
        if self.done:
            return
        self.pending += chunk
        if self.skipping:
            self._skip_scan(0)
        if self.end_offset is not None and not self.skipping:
            s = find_strong_start(self.pending, max(self.end_offset - self.offset, 0))
            if s >= 0:
                del self.pending[s:]
                self.done = True
        while len(self.pending) >= self.block_size and not self.skipping:
            if not self._process(final=False):
                break

    def finish(self, truncated_reason: str | None = None) -> RegionStats:
        if self.done:
            truncated_reason = None
        if not self.skipping and self.pending.strip():
            self._process(final=True, truncated_reason=truncated_reason)
        elif truncated_reason:
            self.stats.damage.append(truncated_reason)
        self.stats.text_bytes = self.offset + len(self.pending)
        return self.stats

    # -- internals ---------------------------------------------------------------------------

    def _skip_scan(self, start: int) -> None:
        """Inside an oversized game: drop text up to the next strong game start (keep the tail
        from the third-last line break, so a start split across chunks is still found)."""
        s = find_strong_start(self.pending, start)
        if s >= 0:
            del self.pending[:s]
            self.offset += s
            self.skipping = False
            return
        drop = _tail_start(self.pending)
        del self.pending[:drop]
        self.offset += drop

    def _analyze(self, buf: np.ndarray, starts, ends, extra: dict):
        try:
            return self._analyze_block(buf, starts, ends, extra, self.stats.games)
        except Exception:  # noqa: BLE001 - a bug on one game must not lose the block
            pass
        # Game by game; a game that still fails gets status internal_error (not replayed).
        n = len(starts)
        parts = []
        events = []
        for g in range(n):
            s, e = starts[g:g + 1], ends[g:g + 1]
            ex = {0: extra[g]} if g in extra else {}
            try:
                gt, et = self._analyze_block(buf, s, e, ex, self.stats.games + g)
            except Exception as exc:  # noqa: BLE001
                msg = (f"internal error while analyzing this game ({type(exc).__name__}: {exc}); "
                       "not analyzed")
                gt, et = self._analyze_block(buf, s, e, {0: ("internal_error", msg)}, self.stats.games + g)
            parts.append(gt)
            events.append(et)
        games = pa.concat_tables(parts)
        n_ed = games.num_rows // max(n, 1)
        games = games.take(pa.array([g * n_ed + k for k in range(n_ed) for g in range(n)], pa.int64()))
        return games, pa.concat_tables(events)

    def _analyze_block(self, buf: np.ndarray, starts, ends, extra: dict, first_index: int):
        if self.game_type == "chess":
            from analyzer.chess.analyze import analyze_block

            res = analyze_block(buf, starts, ends, source=self.source,
                                first_game_index=first_index, base_offset=self.offset,
                                editions=self.editions, extra_status=extra)
            games, events = res.games, res.events
        else:
            from analyzer.draughts import analyze_draughts_block

            spans = np.stack([starts, ends], axis=1).astype(np.int64)
            games, events = analyze_draughts_block(
                buf.tobytes(), spans, source=self.source, first_game_index=first_index,
                base_offset=self.offset, editions=[e if isinstance(e, str) else e.id for e in self.editions])
            if extra:
                games = _override_status(games, extra, len(starts))
        return games, events

    def _process(self, final: bool, truncated_reason: str | None = None) -> bool:
        # A view, not a copy; it is released before the processed text is cut off below.
        buf = np.frombuffer(self.pending, dtype=np.uint8)
        buf.flags.writeable = False  # the kernels are compiled (and warmed up) for read-only text
        starts, ends, consumed = split_games(buf, final, draughts=self.game_type != "chess")
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
            extra[int(g)] = ("game_too_large", f"game of {int(sizes[g])} bytes is above the "
                             f"maximum game size ({self.max_game_bytes} bytes); not analyzed")
        if final and truncated_reason and n:
            extra[n - 1] = ("truncated", f"the input ends inside this game: {truncated_reason}")
            self.stats.damage.append(truncated_reason)
        elif final and truncated_reason:
            self.stats.damage.append(truncated_reason)
        if n:
            games, events = self._analyze(buf, starts, ends, extra)
            self.sink(games, events)
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

    def _oversized(self, buf: np.ndarray) -> None:
        """The pending text is one game larger than the limit: report it (from `buf`, a copy of
        its start) and skip to the next game."""
        head = buf
        starts = np.array([0], np.int64)
        ends = np.array([len(head)], np.int64)
        msg = (f"game larger than the maximum game size ({self.max_game_bytes} bytes); "
               "not analyzed, skipped to the next game")
        games, events = self._analyze(head, starts, ends, {0: ("game_too_large", msg)})
        self.sink(games, events.slice(0, 0))
        self.stats.games += 1
        self.skipping = True
        self._skip_scan(1)


def _override_status(games: pa.Table, extra: dict, n_games: int) -> pa.Table:
    """Set status/error of reader-decided games (rows are per game and edition, in game order)."""
    n_ed = games.num_rows // max(n_games, 1)
    status = games.column("status").cast(pa.string()).to_pylist()
    error = games.column("error").to_pylist()
    for g, (code, msg) in extra.items():
        for e in range(n_ed):
            status[e * n_games + g] = code
            error[e * n_games + g] = msg
    games = games.set_column(games.schema.get_field_index("status"), "status",
                             pa.array(status).dictionary_encode().cast(tables.GAMES_SCHEMA.field("status").type))
    return games.set_column(games.schema.get_field_index("error"), "error", pa.array(error, pa.string()))


def analyze_chunks(chunks: Iterable[bytes], **kwargs) -> RegionStats:
    """Run a RegionAnalyzer over an iterator of chunks; DecodeDamage marks the end as damaged."""
    ra = RegionAnalyzer(**kwargs)
    reason = None
    try:
        for chunk in chunks:
            ra.feed(chunk)
    except DecodeDamage as exc:
        reason = str(exc)
    return ra.finish(truncated_reason=reason)
