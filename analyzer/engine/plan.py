"""Planning work units: pzstd frame ranges are known up front; other inputs are read once, in
order, and cut into units at game starts while reading."""

from __future__ import annotations

import numpy as np

from analyzer import kinds
from analyzer.engine.config import READ_CHUNK, TEXT_PER_COMPRESSED_BYTE, Config, UnitSpec
from analyzer.engine.region import Skipper
from analyzer.io import sources
from analyzer.pgn import kernels


def frame_groups(sizes: list[int], cfg: Config) -> list[tuple[int, int]]:
    """[first, end) frame ranges of the units: `cfg.frames_per_unit` frames each, or (None)
    consecutive frames up to ~frame_unit_text_bytes of text, estimated from compressed sizes."""
    if cfg.frames_per_unit:
        step = cfg.frames_per_unit
        return [(a, min(a + step, len(sizes))) for a in range(0, len(sizes), step)]
    budget = max(1, cfg.frame_unit_text_bytes // TEXT_PER_COMPRESSED_BYTE)
    groups = []
    first = 0
    acc = 0
    for i, size in enumerate(sizes):
        acc += size
        if acc >= budget:
            groups.append((first, i + 1))
            first = i + 1
            acc = 0
    if first < len(sizes):
        groups.append((first, len(sizes)))
    return groups


# Frames a unit is given beyond its own (to finish its last game); more are found by reading
# their headers. A unit description stays small: a Lichess month has ~6,500 frames.
FRAMES_AFTER = 2


def plan_frame_units(info: sources.InputInfo, frames: list, cfg: Config, editions: list) -> list[UnitSpec]:
    pairs = [(f.offset, f.size) for f in frames]
    groups = frame_groups([f.size for f in frames], cfg)
    return [
        UnitSpec(
            info.name,
            info.game_type,
            k,
            info.path,
            editions=list(editions),
            frames=pairs[first : end + FRAMES_AFTER],
            frame_base=first,
            input_size=info.size,
            first_frame=first,
            end_frame=end,
            input_bytes=sum(12 + s for _, s in pairs[first:end]),
            options=info.options(),
            ends_input=k == len(groups) - 1,
        )
        for k, (first, end) in enumerate(groups)
    ]


def plan_row_group_units(info: sources.InputInfo, cfg: Config, editions: list) -> list[UnitSpec]:
    """Units of a Parquet source (io.hf_parquet): runs of whole row groups of about
    frame_unit_text_bytes of text (by their decoded size, which is about their text's), each
    read by its worker, as a pzstd dump's frame units are. A row group larger than that is a
    unit of its own."""
    from analyzer.io import hf_parquet

    groups = hf_parquet.row_groups(info.path, cfg.storage_options)
    units: list[list] = []
    acc = 0
    for rg in groups:
        if not units or acc >= cfg.frame_unit_text_bytes:
            units.append([])
            acc = 0
        units[-1].append(rg)
        acc += rg.size
    return [
        UnitSpec(
            info.name,
            info.game_type,
            k,
            info.path,
            editions=list(editions),
            row_groups=[(rg.path, rg.index) for rg in unit],
            input_size=info.size,
            input_bytes=sum(rg.compressed for rg in unit),
            options=info.options(),
            ends_input=k == len(units) - 1,
        )
        for k, unit in enumerate(units)
    ]


def _read_some(stream, n: int):
    """(up to n bytes, exception or None). Reads with read1 where available, so that the text
    decoded before a damaged or truncated spot is kept (gzip/bz2 `read(n)` raise and drop it)."""
    parts = []
    got = 0
    read1 = getattr(stream, "read1", None) or stream.read
    try:
        while got < n:
            c = read1(n - got)
            if not c:
                break
            parts.append(c)
            got += len(c)
    except Exception as exc:  # noqa: BLE001 - zstd/gzip/bz2 damage or truncation
        return b"".join(parts), exc
    return b"".join(parts), None


def split_pieces(pieces: list, s: int) -> tuple[list, list]:
    """The pieces holding text [0, s) and those holding the rest (one piece is sliced)."""
    base = 0
    for i, piece in enumerate(pieces):
        if base + len(piece) >= s:
            cut = s - base
            head = pieces[:i] + ([piece[:cut]] if cut else [])
            tail = ([piece[cut:]] if cut < len(piece) else []) + pieces[i + 1 :]
            return head, tail
        base += len(piece)
    return pieces, []


class GameStarts:
    """Game starts of a text read piece by piece, found by the same scanner that splits games
    (pgn._scan.find_games), so a unit boundary is always where a whole-file read would start a
    game: with or without tags, with or without blank lines between games. The units carry
    them (UnitSpec.game_starts), so the region does not scan their text again.

    Only the text from the last known game start on is held for scanning (the game in
    progress). Inside a game larger than the limit, cut by the reader, the next start is found
    as the unit that begins at the cut finds it (region.Skipper)."""

    def __init__(self, draughts: bool):
        self.draughts = draughts
        self.tail = bytearray()  # text from `base` on
        self.base = 0  # offset of tail[0]: a game start (or the start of the text)
        self.last = -1  # the last start reported
        self.skipper: Skipper | None = None
        self._starts = np.empty(0, np.int64)  # find_games output buffer, grown as needed

    def skip_from(self, at: int) -> None:
        """The reader cut an oversized game at `at`: find the next start as the unit after
        the cut will (the text from `at` on is fed again)."""
        self.tail = bytearray()
        self.base = at
        self.last = at - 1
        self.skipper = Skipper(after_oversized=True)

    def feed(self, piece) -> np.ndarray:
        """Add the next piece; returns the game starts found in it that were not reported
        before (offsets in the whole text, ascending, int64): every start find_games finds in
        the whole text, the first one included.

        The piece is scanned where it lies: only the game in progress (`tail`) and the piece's
        first _HEAD bytes are copied to be scanned together; from the first game start found in
        the piece on, the scan runs over the piece itself (copying 4 MiB pieces cost ~2 % of a
        scan). Scanning from any game start gives the same starts after it, as the region's own
        scans rely on too."""
        if self.skipper is not None:
            s = self.skipper.feed(piece)
            if s < 0:
                return _NO_STARTS
            piece = self.skipper.text[s - self.skipper.base :]
            self.base += s
            self.skipper = None
        if not self.tail:
            return self._scan_piece(piece, 0)
        old = len(self.tail)
        self.tail += piece[:_HEAD]
        new, consumed = self._scan(self.tail, self.base, False)
        if len(piece) <= _HEAD or consumed < old:
            if len(piece) > _HEAD:  # no start in the head (a game longer than it): the slow way
                self.tail += piece[_HEAD:]
                rest, consumed = self._scan(self.tail, self.base, False)
                new = np.concatenate((new, rest))
            if consumed > 0:
                del self.tail[:consumed]
                self.base += consumed
            return new
        self.base += consumed
        self.tail = bytearray()
        return np.concatenate((new, self._scan_piece(piece, consumed - old)))

    def _scan_piece(self, piece, off: int) -> np.ndarray:
        """Scan piece[off:] (off: a game start, at `base`) in place; keep its unfinished game."""
        view = memoryview(piece)[off:]
        new, consumed = self._scan(view, self.base, False)
        self.tail = bytearray(view[consumed:])
        self.base += consumed
        return new

    def _scan(self, text, base: int, final: bool) -> tuple[np.ndarray, int]:
        """find_games over `text` (starting at offset `base` of the whole text): the starts not
        reported before, and where the unfinished game starts (0: none found after text[0])."""
        buf = np.frombuffer(text, dtype=np.uint8)
        buf.flags.writeable = False  # the kernel is compiled for read-only text (one signature)
        try:
            need = len(buf) // 2 + 2
            if len(self._starts) < need:  # reused: fresh memory costs a page fault per 4 KiB
                self._starts = np.empty(max(need, 2 * len(self._starts)), np.int64)
            self._starts[0] = -1
            ng, consumed = kernels.find_games(buf, len(buf), final, self.draughts, self._starts)
        finally:
            del buf
        if final:
            found = ng
            consumed = 0
        else:
            # find_games (not final) returns (found - 1, start of the last one found), or (0, 0)
            # when it found none; starts[0] tells "one, at 0" from "none".
            found = ng + 1 if (ng > 0 or consumed > 0 or self._starts[0] == 0) else 0
        new = self._starts[:found] + base
        new = new[new > self.last]
        if len(new):
            self.last = int(new[-1])
        return new, int(consumed)

    def finish(self) -> np.ndarray:
        """The end of the text: the starts only a final scan finds (as the region's last call)."""
        if self.skipper is not None or not self.tail:
            return _NO_STARTS
        return self._scan(self.tail, self.base, True)[0]


# The first bytes of a piece scanned together with the game in progress (a copy); the rest of
# the piece is scanned in place from the first game start found in them.
_HEAD = 64 << 10

_NO_STARTS = np.empty(0, np.int64)


def iter_sequential_units(
    info: sources.InputInfo, cfg: Config, editions: list, describe: bool = False, digest_into: dict | None = None
):
    """Read an input once and cut it into units at the first game start at or after every
    `unit_text_bytes` of text. Yields UnitSpec with the text as payload: the list of read
    pieces (a unit is never one big buffer: fresh memory above glibc's mmap threshold costs
    a page fault per 4 KiB, measured as ~3 us per game of system time).

    A game larger than unit_text_bytes + max_game_bytes is cut where the unit would end: that
    unit reports it (game_too_large) and the next one starts inside it and skips to the next
    game start.

    describe=True (executors that ship units to other processes: Dask, process pools): units of
    an uncompressed regular file or object carry their byte range (`text_range`) instead of
    their text, and the worker reads it; compressed inputs must still be decoded here.

    digest_into: a dict that gets "sha256", the SHA-256 of the input's bytes, once the input has
    been read to its end (the reader hashes what it reads: no second pass); for an input read as
    one stream (InputInfo.stream), also "prefixes": unit -> the SHA-256 of the input's bytes read
    when the unit was cut (UnitSpec.input_prefix)."""
    ranged = describe and info.compression == "none" and info.seekable and info.encoding == "utf-8"

    def unit(k: int, start: int, end: int, pieces: list, starts: np.ndarray | None, **kw) -> UnitSpec:
        """Unit k: the text [start, end) (its read pieces, or its byte range when `ranged`) and
        its game starts (whole-text offsets; the unit holds them from `start`)."""
        return UnitSpec(
            info.name,
            info.game_type,
            k,
            info.path,
            editions=list(editions),
            text_start=start,
            payload=None if ranged else pieces,
            text_range=(start, end) if ranged else None,
            input_size=info.size,
            options=info.options(),
            # not for ranged units: their description stays small (a Dask graph holds them), and
            # their worker reads the text anyway; the region scans it there
            game_starts=None if starts is None or ranged else starts - start,
            **kw,
        )

    k = 0
    base = 0  # offset of pieces[0] in the whole text
    pieces: list = []
    size = 0
    damage = None
    leading_fragment = False
    scanner = GameStarts(draughts=kinds.get(info.game_type).draughts_markers)
    known = _NO_STARTS  # game starts from base on, ascending
    stream = sources.open_stream(info.path, info.compression, info.size, info.encoding, cfg.storage_options)
    counted = 0  # input bytes accounted to units so far
    prefixes: dict[int, str] = {}
    if digest_into is not None and info.stream:
        digest_into["prefixes"] = prefixes

    def prefix(k: int) -> str | None:
        if not info.stream:
            return None
        prefixes[k] = stream.input_prefix_sha256()
        return prefixes[k]

    try:
        while True:
            chunk, exc = _read_some(stream, min(READ_CHUNK, cfg.unit_text_bytes))
            if exc is not None:
                damage = (
                    f"the compressed input is damaged or truncated after {base + size + len(chunk)} "
                    f"bytes of text ({type(exc).__name__}: {exc})"
                )
            if not chunk:
                break
            pieces.append(chunk)
            size += len(chunk)
            new = scanner.feed(chunk)
            known = np.concatenate((known, new[new >= base])) if len(new) else known
            while True:
                i = int(np.searchsorted(known, base + cfg.unit_text_bytes))
                cut = int(known[i]) if i < len(known) else -1
                forced = cut < 0
                if forced:
                    if size < cfg.unit_text_bytes + cfg.max_game_bytes:
                        break
                    cut = base + cfg.unit_text_bytes  # inside a game larger than the limit
                payload, pieces = split_pieces(pieces, cut - base)
                size -= cut - base
                now = stream.input_count()
                yield unit(
                    k,
                    base,
                    cut,
                    payload,
                    known[: int(np.searchsorted(known, cut))],
                    leading_fragment=leading_fragment,
                    trailing_fragment=forced,
                    input_bytes=now - counted,
                    input_prefix=prefix(k),
                )
                counted = now
                leading_fragment = forced
                base = cut
                k += 1
                known = known[np.searchsorted(known, base) :]
                if forced:
                    scanner.skip_from(cut)
                    new = scanner.feed(b"".join(pieces))
                    known = new[new >= base]
            if exc is not None:
                break
        new = scanner.finish()
        known = np.concatenate((known, new[new >= base])) if len(new) else known
        counted = stream.input_count() - counted
        last_prefix = prefix(k)
        if digest_into is not None and damage is None:
            digest_into["sha256"] = stream.input_sha256()
    finally:
        try:
            stream.close()
        except Exception:  # noqa: BLE001
            pass
    end = base + sum(len(p) for p in pieces)
    yield unit(
        k,
        base,
        end,
        pieces,
        None if damage else known,
        leading_fragment=leading_fragment,
        damage=damage,
        input_bytes=counted,
        ends_input=True,
        input_prefix=last_prefix,
    )
