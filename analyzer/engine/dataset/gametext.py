"""The text of games, from the input a source's scan read: what `analyzer show` and the
report's example pages replay. A pzstd input is decoded from the frame unit that holds each
game (a game far into a month's dump costs one unit's frames, not the whole input before it);
any other input in one pass. Text in UTF-16/32 is transcoded as the scan transcoded it, so the
offsets the tables hold (in the UTF-8 text) find the game."""

from __future__ import annotations

import bisect
import os

from analyzer.io import sources

WINDOW = 1 << 18  # bytes of text read from a game's start (grown for a longer game)


def _frame_units(record: dict) -> list[tuple[int, int, int]]:
    """(text offset, first frame, text bytes) of each frame unit of a pzstd input, in order:
    where to start decoding for a game at a given offset, so that a game far into a month's
    dump costs one unit's frames, not the whole input before it."""
    starts = []
    for u in record.get("units") or []:
        if u.get("first_frame") is not None and u.get("finalized"):
            starts.append((int(u["finalized"][1]), int(u["first_frame"]), int(u.get("frame_text_bytes") or 0)))
    return sorted(starts)


class _FrameText:
    """read(n) and skip(n) over the text of a pzstd input from frame `first` on
    (sources.iter_frames: one frame decoded at a time, its text a view until the next)."""

    def __init__(self, path: str, frames: list, first: int) -> None:
        self._it = sources.iter_frames(path, frames, first)
        self._text = memoryview(b"")
        self._at = 0

    def _fill(self) -> bool:
        while self._at >= len(self._text):
            got = next(self._it, None)
            if got is None:
                return False
            if isinstance(got[1], Exception):
                raise got[1]
            self._text, self._at = got[1], 0
        return True

    def read(self, n: int) -> bytes:
        if not self._fill():
            return b""
        out = bytes(self._text[self._at : self._at + n])
        self._at += len(out)
        return out

    def skip(self, n: int) -> int:
        done = 0
        while done < n and self._fill():
            k = min(n - done, len(self._text) - self._at)
            self._at += k
            done += k
        return done

    def close(self) -> None:
        self._it.close()


def _take(fh, pos: int, want: list[int], window: int, out: dict[int, str]) -> None:
    """The `window` bytes of text at each offset of `want` (sorted, all >= pos), from fh whose
    next byte is text offset `pos`."""
    buf = bytearray()
    for off in want:
        if not buf and pos < off and hasattr(fh, "skip"):
            pos += fh.skip(off - pos)
        while pos + len(buf) < off:  # skip ahead, keeping nothing before the offset
            chunk = fh.read(8 << 20)
            if not chunk:
                break
            if pos + len(buf) + len(chunk) <= off:
                pos += len(buf) + len(chunk)
                buf = bytearray()
            else:
                buf += chunk
        del buf[: max(0, off - pos)]
        pos = max(pos, off)
        while len(buf) < window:
            chunk = fh.read(min(8 << 20, window))
            if not chunk:
                break
            buf += chunk
        if pos == off and buf:
            out[off] = bytes(buf[:window]).decode("utf-8", "replace")


def _parquet_texts(info: dict, offsets: list[int], games: list[int]) -> tuple[dict[int, str], str | None]:
    """A Parquet source's games by their rows (io.hf_parquet.game_text: every row is one game,
    so a game's index is its row), keyed by their offsets."""
    from analyzer.io import hf_parquet

    path = info["path"]
    try:
        files = hf_parquet.files_of(path)
    except OSError:
        return {}, f"the input {path} is not here any more"
    if files.digest() != info.get("digest"):
        return {}, f"the input {path} changed since the scan"
    out: dict[int, str] = {}
    try:
        for off, g in zip(offsets, games):
            text = hf_parquet.game_text(path, int(g))
            if text is not None:
                out[off] = text
    except Exception as exc:  # noqa: BLE001 - a damaged or unreadable input: shown as such, never a crash
        return out, f"the input {path} could not be read ({type(exc).__name__})"
    missing = len(set(offsets)) - len(out)
    return out, (f"{missing} game(s) not found in the input" if missing else None)


def read_texts(
    record: dict,
    offsets: list[int],
    budget: int | None = None,
    window: int | None = None,
    games: list[int] | None = None,
) -> tuple[dict[int, str], str | None]:
    """The text from each offset (`window` bytes) in the source's decompressed input, and why
    some could not be read. A pzstd input is decoded from the frame unit holding each offset;
    a Parquet source (games by rows: io.hf_parquet) reads each game by its index (`games`,
    the game_index of each offset); any other input in one pass up to the last offset (offsets
    at or beyond `budget` are left out)."""
    window = window or WINDOW
    info = record.get("input")
    if not info or not info.get("path"):
        return {}, "the scan's record of its input is missing"
    if info.get("compression") == "parquet" and games is not None and not info.get("url"):
        return _parquet_texts(info, offsets, games)
    path = info["path"]
    if "://" in path:
        return {}, f"the input {path} was read by URL: its games' text is not downloaded again here"
    if path == "-" or not os.path.isfile(path):
        return {}, f"the input {path} is not here any more"
    st = os.stat(path)
    if info.get("size") not in (None, st.st_size) or abs((info.get("mtime") or st.st_mtime) - st.st_mtime) > 1e-3:
        return {}, f"the input {path} changed since the scan"
    out: dict[int, str] = {}
    want = sorted(set(offsets))
    units = _frame_units(record) if info.get("compression") == "zstd" and want else []
    by_unit: dict[tuple[int, int, int], list[int]] = {}
    for off in want:
        k = bisect.bisect_right(units, (off, 1 << 62, 0)) - 1
        if k >= 0:
            by_unit.setdefault(units[k], []).append(off)
    # From each game's unit: the text of those units; in one pass: the text up to the last
    # offset. The cheaper of the two.
    seek = bool(by_unit) and sum(u[2] or (64 << 20) for u in by_unit) < want[-1]
    frames = sources.pzstd_frames(path, st.st_size) if seek else None
    try:
        if frames:
            for (start, first, _), offs in by_unit.items():
                reader = _FrameText(path, frames, first)
                try:
                    _take(reader, start, offs, window, out)
                finally:
                    reader.close()
        else:
            want = [o for o in want if budget is None or o < budget]
            with sources.open_stream(
                path, info.get("compression") or "none", encoding=info.get("encoding") or "utf-8"
            ) as fh:
                _take(fh, 0, want, window, out)
    except Exception as exc:  # noqa: BLE001 - a damaged or unreadable input: shown as such, never a crash
        return out, f"the input {path} could not be read ({type(exc).__name__})"
    missing = len(set(offsets)) - len(out)
    return out, (f"{missing} game(s) lie beyond the part of the input read for this page" if missing else None)
