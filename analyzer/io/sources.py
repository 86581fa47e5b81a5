"""Inputs: detect the compression, stream decompressed bytes, and find pzstd frames.

Supported: plain text, zstd (single frame, several frames, pzstd's skippable-frame layout),
gzip, bzip2, and `-` for standard input. Everything is streamed in bounded blocks.
"""
from __future__ import annotations

import bz2
import gzip
import io
import os
import struct
import sys
import threading
from dataclasses import dataclass

import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SKIPPABLE_LO = 0x184D2A50
SKIPPABLE_HI = 0x184D2A5F
GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
READ_SIZE = 4 << 20


class InputError(Exception):
    """An input that cannot be read (missing, unreadable, damaged): a message for the user."""


@dataclass(frozen=True)
class InputInfo:
    path: str            # as given ("-" = stdin)
    name: str            # source name: file name without compression/PGN extensions
    compression: str     # none | zstd | gzip | bz2
    size: int            # bytes on disk (-1 for stdin)
    mtime: float
    game_type: str       # chess | russian_draughts (routing by extension or GameType tag)


def source_name(path: str) -> str:
    if path == "-":
        return "stdin"
    base = os.path.basename(path)
    for ext in (".zst", ".zstd", ".gz", ".bz2"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    for ext in (".pgn", ".pdn"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    return base or "input"


def _sniff(head: bytes) -> str:
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if len(head) >= 4:
        (magic,) = struct.unpack("<I", head[:4])
        if SKIPPABLE_LO <= magic <= SKIPPABLE_HI:
            return "zstd"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZ2_MAGIC) and len(head) >= 4 and head[3:4].isdigit():
        return "bz2"
    return "none"


def inspect(path: str) -> InputInfo:
    """Stat and sniff an input; InputError with a clear message when it cannot be read."""
    if path == "-":
        return InputInfo("-", "stdin", "stream", -1, 0.0, "chess")
    try:
        st = os.stat(path)
        if os.path.isdir(path):
            raise InputError(f"{path}: is a directory, not a game file")
        with open(path, "rb") as fh:
            head = fh.read(4)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    comp = _sniff(head)
    game_type = "chess"
    lower = path.lower()
    if ".pdn" in os.path.basename(lower):
        game_type = "russian_draughts"
    else:
        try:
            with open_stream(path, comp) as fh:
                sample = fh.read(1 << 16)
        except Exception:  # damaged: routing falls back to chess; the reader reports the damage
            sample = b""
        if b'[GameType "' in sample and b'[GameType "0' not in sample:
            game_type = "russian_draughts"
    return InputInfo(path, source_name(path), comp, st.st_size, st.st_mtime, game_type)


def open_stream(path: str, compression: str):
    """A binary file object of decompressed bytes (reads across zstd frames)."""
    if path == "-":
        raw = sys.stdin.buffer
        head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
        compression = _sniff(head) if head else "none"
    else:
        raw = open(path, "rb")
    if compression == "zstd":
        dctx = zstandard.ZstdDecompressor(max_window_size=1 << 31)
        tracker = _ZstdFrameTracker(raw)
        return _ZstdStream(dctx.stream_reader(tracker, read_size=READ_SIZE, read_across_frames=True,
                                              closefd=True), tracker)
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "bz2":
        return bz2.BZ2File(raw, mode="rb")
    return raw if path != "-" else io.BufferedReader(raw)


class _ZstdFrameTracker:
    """Pass-through reader of raw zstd bytes that follows the frame layout (frame and block
    headers, skippable frames; nothing is decoded), so that the end of the input can be told to
    fall on a frame boundary or inside a frame. zstandard's stream_reader returns the blocks
    decoded so far and then a clean EOF when the input is cut inside a frame."""

    ZSTD = 0xFD2FB528

    def __init__(self, raw):
        self.raw = raw
        self.state = "magic"
        self.want = 4
        self.hdr = bytearray()
        self.skip = 0
        self.checksum = False
        self.consumed = 0
        self.lost = False        # not a zstd layout we follow: the decoder reports errors itself

    def read(self, n=-1):
        data = self.raw.read(n)
        if data and not self.lost:
            self._feed(data)
        self.consumed += len(data)
        return data

    def close(self):
        self.raw.close()

    @property
    def at_boundary(self) -> bool:
        return self.lost or (self.state == "magic" and not self.hdr and self.skip == 0)

    def _feed(self, data) -> None:
        i = 0
        n = len(data)
        while i < n and not self.lost:
            if self.skip:
                t = min(self.skip, n - i)
                self.skip -= t
                i += t
                continue
            take = min(self.want - len(self.hdr), n - i)
            self.hdr += data[i:i + take]
            i += take
            if len(self.hdr) == self.want:
                self._step(bytes(self.hdr))
                self.hdr.clear()

    def _step(self, h: bytes) -> None:
        st = self.state
        if st == "magic":
            m = int.from_bytes(h, "little")
            if m == self.ZSTD:
                self.state, self.want = "fhd", 1
            elif SKIPPABLE_LO <= m <= SKIPPABLE_HI:
                self.state, self.want = "skipsize", 4
            else:
                self.lost = True
        elif st == "skipsize":
            self.skip = int.from_bytes(h, "little")
            self.state, self.want = "magic", 4
        elif st == "fhd":
            fhd = h[0]
            single = (fhd >> 5) & 1
            fcs = (fhd >> 6) & 3
            extra = (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fcs]
            self.checksum = bool((fhd >> 2) & 1)
            if extra:
                self.state, self.want = "fhdrest", extra
            else:
                self.state, self.want = "block", 3
        elif st == "fhdrest":
            self.state, self.want = "block", 3
        else:  # block header
            v = int.from_bytes(h, "little")
            last = v & 1
            btype = (v >> 1) & 3
            size = v >> 3
            self.skip = 1 if btype == 1 else size
            if last:
                self.skip += 4 if self.checksum else 0
                self.state, self.want = "magic", 4


class _ZstdStream(io.RawIOBase):
    """Decoded bytes of a zstd input; raises ZstdError at the end when the input was cut
    inside a frame (a truncated download) instead of ending quietly."""

    def __init__(self, reader, tracker: _ZstdFrameTracker):
        self.reader = reader
        self.tracker = tracker

    def readable(self):
        return True

    def read(self, n=-1):
        data = self.reader.read(n)
        if not data and n != 0:
            self._check_end()
        return data

    def read1(self, n=-1):
        data = self.reader.read1(n)
        if not data and n != 0:
            self._check_end()
        return data

    def _check_end(self):
        if not self.tracker.at_boundary:
            raise zstandard.ZstdError(
                f"the zstd input ends inside a frame after {self.tracker.consumed} compressed bytes (truncated)")

    def close(self):
        try:
            self.reader.close()
        finally:
            super().close()


@dataclass(frozen=True)
class Frame:
    offset: int          # byte offset of the zstd frame (after its skippable header) in the file
    size: int            # compressed size


def pzstd_frames(path: str) -> list[Frame] | None:
    """Frames of a pzstd file, found by walking the 12-byte skippable headers without decoding.

    Returns None when the file does not start with pzstd's skippable frame (then it must be read
    sequentially) or when the walk does not end exactly at the end of the file.
    """
    frames = []
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        pos = 0
        while pos < size:
            fh.seek(pos)
            head = fh.read(12)
            if len(head) < 12:
                return None
            magic, length, csize = struct.unpack("<III", head)
            if not (SKIPPABLE_LO <= magic <= SKIPPABLE_HI) or length != 4:
                return None if not frames else None
            frames.append(Frame(pos + 12, csize))
            pos += 12 + csize
        if pos != size:
            return None
    return frames if len(frames) > 1 else None


_frame_buffers = threading.local()
FRAME_BUFFER_BYTES = 32 << 20   # pzstd at Lichess's settings: 32 MiB of text per frame


def _frame_complete(data) -> bool:
    """Whether `data` is exactly one zstd frame to its last block (and checksum), by walking the
    block headers. The decoder alone cannot tell: given a frame cut short it returns the text
    of the blocks it has and no error."""
    tracker = _ZstdFrameTracker(None)
    tracker._feed(data)
    return not tracker.lost and tracker.at_boundary


def _decode_frame(dctx, data) -> memoryview:
    """The text of one zstd frame, decoded into this thread's reusable buffer: a view that the
    thread's next call overwrites.

    One decoder call for the whole frame: the decoder releases the GIL per call, and with
    another worker thread running Python each reacquisition can wait up to the 5 ms switch
    interval (decompressobj's 128 KiB outputs made a 2 MiB frame take 81 ms instead of 2.6 ms).
    A reused buffer also spares the fresh pages of a new output buffer and bytes object per
    frame (2.2 vs 3.4 ms per 2 MiB frame alone)."""
    buf = getattr(_frame_buffers, "buf", None)
    if buf is None:
        buf = _frame_buffers.buf = bytearray(FRAME_BUFFER_BYTES)
    reader = dctx.stream_reader(data)
    n = 0
    while True:
        if n == len(buf):                       # a frame larger than the buffer: double it
            buf = _frame_buffers.buf = buf + bytearray(len(buf))
        with memoryview(buf) as view:
            got = reader.readinto(view[n:])
        if not got:
            return memoryview(buf)[:n]
        n += got


def iter_frames(path: str, frames: list[Frame], first: int):
    """Decode frames first, first+1, ... one at a time: yields (index, text or ZstdError); the
    text is a view that is valid until the next frame is decoded.

    Decoding frame by frame tells the decompressed size of each frame (for byte offsets) and lets
    a damaged frame be reported while the frames after it are still read.
    """
    dctx = zstandard.ZstdDecompressor(max_window_size=1 << 31)
    with open(path, "rb") as fh:
        for i in range(first, len(frames)):
            fr = frames[i]
            fh.seek(fr.offset)
            data = fh.read(fr.size)
            try:
                if len(data) != fr.size:
                    raise zstandard.ZstdError(f"frame {i} truncated: {len(data)} of {fr.size} bytes")
                if not _frame_complete(data):
                    raise zstandard.ZstdError(f"frame {i} is incomplete: its blocks end before or after "
                                              f"its {fr.size} bytes")
                text = _decode_frame(dctx, data)
            except zstandard.ZstdError as exc:
                yield i, exc
                continue
            yield i, text
