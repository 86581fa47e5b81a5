"""Lichess games in Parquet, as the Hugging Face mirror of the database holds them
(`Lichess/standard-chess-games`), read as the PGN text they were made from.

The mirror's layout: hive folders `data/year=YYYY/month=MM/train-NNNNN-of-NNNNN.parquet`, one
row per game, a column per tag (`Event, Site, White, Black, Result, WhiteTitle, BlackTitle,
ECO, Opening, Termination, TimeControl` strings, `WhiteElo, BlackElo, WhiteRatingDiff,
BlackRatingDiff` int16, `UTCDate` date32, `UTCTime` time32[s]) and `movetext`, the game's PGN
movetext without its tags. A month is one source (named `<dataset>_YYYY-MM`, the dataset being
the folder above `data/`); a folder of such files, or one file, is one source too; the files
are read in the order of their names, their rows in order.

Each record batch becomes PGN text by Arrow's string kernels (no Python per game): a tag line
per non-null column, in the order the dumps write them (`[Event "..."]`, `[Site "..."]`, ...,
as PgnDump.scala: dates `YYYY.MM.DD`, times `HH:MM:SS`, rating changes signed), a blank line,
the movetext, a blank line. That text goes through the same reader, units and kernels as a
PGN dump, so the same games give the same tables (tests/test_hf_parquet.py compares them).
Byte offsets (`games.byte_offset`) are offsets in this text; every row is one game (a newline
inside a value is written as a blank, and a movetext that does not end with its result gets
the Result column after it, as the dump writes it), so `analyzer show` reads a game back by
its row (`game_text`).

Local files are read with pyarrow; URLs (s3://, hf://datasets/..., https://...) through the
fsspec filesystem of their protocol (the extra draw-rule-analyzer[cloud]; hf:// needs the
`huggingface_hub` package, whose filesystem fsspec uses).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.arrow_compute import (  # (pyarrow's compiled functions, by name: see arrow_compute)
    CastOptions,
    JoinOptions,
    call_function,
)
from analyzer.io import remote

MOVETEXT = "movetext"
# The dumps' tag order (lila's PgnDump.scala, as the database writes it); columns with other
# names follow in the file's order.
TAG_ORDER = (
    "Event",
    "Site",
    "Date",
    "Round",
    "White",
    "Black",
    "Result",
    "UTCDate",
    "UTCTime",
    "WhiteElo",
    "BlackElo",
    "WhiteRatingDiff",
    "BlackRatingDiff",
    "WhiteTitle",
    "BlackTitle",
    "ECO",
    "Opening",
    "TimeControl",
    "Termination",
    "Variant",
    "FEN",
    "SetUp",
)
BATCH_ROWS = 16_384  # rows per record batch: ~45 MB of text, the size of a few read chunks
_HIVE_MONTH = re.compile(r"(?:^|/)year=(\d{4})/month=(\d{1,2})/?$")


@functools.lru_cache(maxsize=1)
def _hms() -> pa.Array:
    """ "HH:MM:SS" of every second of a day (built once, on first use)."""
    return pa.array([f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(86400)], pa.string())


def is_parquet_file(head: bytes) -> bool:
    return head[:4] == b"PAR1"


def _fs(path: str, storage_options: dict | None):
    return remote.filesystem(path, storage_options) if remote.is_url(path) else None


def _strip(path: str) -> str:
    return path.split("://", 1)[1] if remote.is_url(path) else path


def _url_of(path: str, like: str) -> str:
    return f"{remote.protocol(like)}://{path.lstrip('/')}" if remote.is_url(like) else path


def _listdir_parquet(path: str, storage_options: dict | None) -> list[str]:
    """Every .parquet file under a folder or URL prefix (recursively), sorted."""
    fs = _fs(path, storage_options)
    if fs is None:
        found = []
        for dirpath, dirnames, files in os.walk(path):
            dirnames.sort()
            found += [os.path.join(dirpath, f) for f in files if f.endswith(".parquet")]
        return sorted(found)
    names = remote.with_retries(f"list of {path}", fs.find, _strip(path).rstrip("/") + "/")
    return sorted(_url_of(n, path) for n in names if n.endswith(".parquet"))


def has_movetext(path: str, storage_options: dict | None = None) -> bool:
    """A Parquet file of games (a `movetext` column), by its footer."""
    try:
        return MOVETEXT in _open(path, storage_options).schema_arrow.names
    except Exception:  # noqa: BLE001 - not Parquet, unreadable: not ours
        return False


def expand(path: str, storage_options: dict | None = None) -> list[str] | None:
    """The sources of a folder (or URL prefix) of Parquet games: its month folders
    (`year=YYYY/month=MM`), or itself when its files are not in month folders; None when it
    holds no Parquet file with a movetext column."""
    files = _listdir_parquet(path, storage_options)
    if not files or not has_movetext(files[0], storage_options):
        return None
    months = set()
    for f in files:
        d = os.path.dirname(_strip(f))
        if _HIVE_MONTH.search(d):
            months.add(_url_of(d, path) if remote.is_url(path) else d)
    if all(_HIVE_MONTH.search(os.path.dirname(_strip(f))) for f in files):
        # (a URL folder ends with / : sources.inspect tells it from an object by that)
        return sorted(m + "/" if remote.is_url(path) else m for m in months)
    return [path if not remote.is_url(path) else path.rstrip("/") + "/"]


def source_name(path: str) -> str:
    """`<dataset>_YYYY-MM` for a month folder (the dataset: the folder above `data/`, else the
    one above `year=`), else the folder's or the file's name without `.parquet`."""
    p = _strip(path).rstrip("/")
    m = _HIVE_MONTH.search(p)
    if m:
        above = p[: m.start()].rstrip("/")
        parts = [x for x in above.split("/") if x]
        if parts and parts[-1] == "data":
            parts = parts[:-1]
        base = parts[-1] if parts else "parquet"
        return f"{base}_{m.group(1)}-{int(m.group(2)):02d}"
    base = os.path.basename(p)
    return base[: -len(".parquet")] if base.endswith(".parquet") else base


@dataclass(frozen=True)
class Files:
    """The Parquet files of one source, in order, with their sizes and dates."""

    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    mtimes: tuple[float, ...]

    @property
    def size(self) -> int:
        return sum(self.sizes)

    @property
    def mtime(self) -> float:
        return max(self.mtimes, default=0.0)

    def digest(self) -> str:
        """Names, sizes and dates of the files: a changed source is noticed (io.sources)."""
        h = hashlib.sha1()
        for p, s, t in zip(self.paths, self.sizes, self.mtimes):
            h.update(f"{os.path.basename(p)}\0{s}\0{t}\n".encode())
        return h.hexdigest()[:20]


def files_of(path: str, storage_options: dict | None = None) -> Files:
    """The files of a source (a folder, a URL prefix, or one file)."""
    fs = _fs(path, storage_options)
    single = path.endswith(".parquet") and (
        os.path.isfile(path) if fs is None else remote.with_retries(f"info of {path}", fs.isfile, _strip(path))
    )
    paths = [path] if single else _listdir_parquet(path, storage_options)
    sizes, mtimes = [], []
    for p in paths:
        if fs is None:
            st = os.stat(p)
            sizes.append(st.st_size)
            mtimes.append(st.st_mtime)
        else:
            meta = remote.info(p, storage_options)
            sizes.append(int(meta["size"] or 0))
            mtimes.append(float(meta["mtime"] or 0.0))
    return Files(tuple(paths), tuple(sizes), tuple(mtimes))


def _open(path: str, storage_options: dict | None) -> pq.ParquetFile:
    fs = _fs(path, storage_options)
    if fs is None:
        return pq.ParquetFile(path)
    return pq.ParquetFile(fs.open(_strip(path), "rb"))


# ---------------------------------------------------------------------------------------------
# Rows -> PGN text


def _lit(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.string())


def _to_text(name: str, col: pa.Array) -> pa.Array:
    """A column's values as the dump writes them (strings; null stays null)."""
    t = col.type
    if pa.types.is_dictionary(t):
        col = call_function("cast", [col], CastOptions.safe(t.value_type))
        t = col.type
    if pa.types.is_date(t):
        # a month's few distinct dates, formatted once each
        enc = call_function("dictionary_encode", [col])
        days = [None if d is None else d.strftime("%Y.%m.%d") for d in enc.dictionary.to_pylist()]
        return call_function("take", [pa.array(days, pa.string()), enc.indices])
    if pa.types.is_time(t):
        # (Parquet has no time of seconds: time32[s] comes back as time32[ms])
        secs = call_function("cast", [col], CastOptions.safe(pa.int32() if t.bit_width == 32 else pa.int64()))
        unit = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        if unit != 1:
            secs = call_function("divide", [secs, pa.scalar(unit, secs.type)])
        return call_function("take", [_hms(), secs])
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        if pa.types.is_floating(t):
            col = call_function("cast", [col], CastOptions.unsafe(pa.int64()))
        text = call_function("cast", [col], CastOptions.safe(pa.string()))
        if name.endswith("RatingDiff"):  # "+6", "-6", "+0" (as the dumps write them)
            gain = call_function("greater_equal", [col, pa.scalar(0, col.type)])
            signed = call_function("binary_join_element_wise", [_lit("+"), text, _lit("")])
            text = call_function("if_else", [gain, signed, text])
        return text
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        col = call_function("cast", [col], CastOptions.safe(pa.string()))
    return col


def _data(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets as int64, the value bytes) of a string array (its own slice of the buffers)."""
    width = np.int32 if col.type == pa.string() else np.int64
    offsets = np.frombuffer(col.buffers()[1], width, len(col) + 1, col.offset * np.dtype(width).itemsize)
    data = col.buffers()[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    return offsets.astype(np.int64), data[int(offsets[0]) : int(offsets[-1])]


def _replace(col: pa.Array, old: str, new: str) -> pa.Array:
    from pyarrow._compute import ReplaceSubstringOptions  # type: ignore[import-not-found,unused-ignore]

    return call_function("replace_substring", [col], ReplaceSubstringOptions(old, new))


_SPECIAL = np.zeros(256, np.bool_)
_SPECIAL[[ord("\\"), ord('"'), ord("\r"), ord("\n")]] = True


def _clean_value(col: pa.Array) -> pa.Array:
    """A tag value as PGN writes it: `\\` and `"` escaped, line breaks as blanks (one look at
    the column's bytes first: a Lichess column has none of them)."""
    _, data = _data(col)
    if not len(data) or not _SPECIAL[data].any():
        return col
    for old, new in (("\\", "\\\\"), ('"', '\\"'), ("\r", " "), ("\n", " ")):
        col = _replace(col, old, new)
    return col


def _ends_with_result(col: pa.Array) -> np.ndarray:
    """Per movetext: does it end (trailing blanks aside) with a result, 1-0, 0-1, 1/2-1/2 or *?
    By the last bytes of each value, gathered with numpy (no pass over the whole text)."""
    offsets, data = _data(col)
    start = offsets[:-1] - offsets[0]
    end = offsets[1:] - offsets[0]
    for _ in range(4):  # trailing blanks
        blank = (end > start) & np.isin(data[np.maximum(end - 1, 0)] if len(data) else end * 0, (32, 9))
        if not blank.any():
            break
        end = np.where(blank, end - 1, end)
    out = np.zeros(len(start), np.bool_)
    if not len(data):
        return out
    for token in (b"1-0", b"0-1", b"1/2-1/2", b"*"):
        k = len(token)
        ok = end - start >= k
        idx = np.clip(end[:, None] - k + np.arange(k), 0, len(data) - 1)
        hit = (data[idx] == np.frombuffer(token, np.uint8)).all(axis=1) & ok
        out |= hit
    return out


def tag_columns(schema: pa.Schema) -> list[str]:
    """The columns written as tags, in the dumps' order."""
    names = [n for n in schema.names if n != MOVETEXT]
    known = [n for n in TAG_ORDER if n in names]
    return known + [n for n in names if n not in TAG_ORDER]


def batch_text(batch: pa.RecordBatch) -> tuple[pa.Buffer, int]:
    """The PGN text of a batch's games (a buffer: the games back to back) and its length."""
    pieces: list = []
    for name in tag_columns(batch.schema):
        col = batch.column(name)
        if col.null_count == len(col):
            continue
        value = _clean_value(_to_text(name, col))
        pieces.append(call_function("binary_join_element_wise", [_lit(f'[{name} "'), value, _lit('"]\n'), _lit("")]))
    pieces.append(_lit("\n"))
    movetext = batch.column(MOVETEXT) if MOVETEXT in batch.schema.names else pa.nulls(len(batch), pa.string())
    movetext = _to_text(MOVETEXT, movetext)
    if movetext.null_count:
        movetext = call_function("coalesce", [movetext, _lit("")])
    _, data = _data(movetext)
    if len(data) and (data < 14).any():  # (a line break inside a movetext would not be one game)
        movetext = _replace(_replace(movetext, "\r", " "), "\n", " ")
    pieces.append(movetext)
    if "Result" in batch.schema.names:
        # a movetext that does not end with its result (as the dump writes it) gets the Result
        ends = _ends_with_result(movetext)
        if not ends.all():
            result = _to_text("Result", batch.column("Result"))
            empty = call_function("equal", [movetext, _lit("")])
            tail = call_function(
                "binary_join_element_wise", [call_function("if_else", [empty, _lit(""), _lit(" ")]), result, _lit("")]
            )
            pieces.append(call_function("if_else", [pa.array(ends), _lit(""), tail]))
    pieces += [_lit("\n\n"), _lit("")]
    text = call_function("binary_join_element_wise", pieces, JoinOptions("skip"))
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    offsets, _ = _data(text)
    start, end = int(offsets[0]), int(offsets[-1])
    return text.buffers()[2].slice(start, end - start), end - start


class TextStream(io.RawIOBase):
    """The PGN text of a source's Parquet files, in order, as a raw stream (record batches of
    BATCH_ROWS rows turned into text one at a time). `input_count()`: the compressed bytes of
    the row groups read so far (for progress); `rows`: rows read."""

    def __init__(self, path: str, storage_options: dict | None = None, files: Files | None = None):
        self.files = files or files_of(path, storage_options)
        self.storage_options = storage_options
        self.count = 0
        self.rows = 0
        self._batches = self._iter()
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def _iter(self):
        for p in self.files.paths:
            pf = _open(p, self.storage_options)
            meta = pf.metadata
            for g in range(meta.num_row_groups):
                rg = meta.row_group(g)
                for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[g], use_threads=False):
                    self.rows += batch.num_rows
                    yield batch_text(batch)[0]
                self.count += sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))

    def readinto(self, b) -> int:
        while not len(self._buf):
            nxt = next(self._batches, None)
            if nxt is None:
                return 0
            self._buf = memoryview(nxt).cast("B")
        n = min(len(b), len(self._buf))
        memoryview(b).cast("B")[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


@dataclass(frozen=True)
class RowGroup:
    path: str  # its file
    index: int  # its index in the file
    rows: int
    compressed: int  # bytes in the file
    size: int  # bytes decoded (about the size of its PGN text)


def row_groups(path: str, storage_options: dict | None = None, files: Files | None = None) -> list[RowGroup]:
    """Every row group of a source's files, in order, from the files' footers (one read each)."""
    out = []
    for p in (files or files_of(path, storage_options)).paths:
        meta = _open(p, storage_options).metadata
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            compressed = sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
            out.append(RowGroup(p, g, rg.num_rows, compressed, rg.total_byte_size))
    return out


def row_group_texts(groups: list[tuple[str, int]], storage_options: dict | None = None):
    """The PGN text of some row groups ((file, index) pairs, in order), record batch by record
    batch: what a work unit of a Parquet source reads itself (engine.unit)."""
    pf = None
    opened = None
    for path, g in groups:
        if path != opened:
            pf, opened = _open(path, storage_options), path
        assert pf is not None
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[g], use_threads=False):
            buf, size = batch_text(batch)
            yield memoryview(buf).cast("B")[:size]


def game_text(path: str, game_index: int, storage_options: dict | None = None) -> str | None:
    """The PGN text of the game in row `game_index` of a source (every row is one game: see
    the module's doc), read from the one row group that holds it; None beyond the last row."""
    files = files_of(path, storage_options)
    k = game_index
    for p in files.paths:
        pf = _open(p, storage_options)
        meta = pf.metadata
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if k < n:
                table = pf.read_row_group(g)
                batch = table.slice(k, 1).combine_chunks().to_batches()[0]
                buf, size = batch_text(batch)
                return bytes(buf[:size]).decode("utf-8", "replace")
            k -= n
    return None
