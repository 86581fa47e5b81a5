"""Inputs: detect the compression, stream decompressed bytes, and find pzstd frames.

Supported: plain text, zstd (single frame, several frames, pzstd's skippable-frame layout),
gzip, bzip2, and `-` for standard input. Everything is streamed in bounded blocks.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import logging
import os
import re
import stat
import struct
import sys
import threading
from dataclasses import dataclass

import zstandard

from analyzer.errors import InputError
from analyzer.io import lichess_db, remote

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SKIPPABLE_LO = 0x184D2A50
SKIPPABLE_HI = 0x184D2A5F
GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
READ_SIZE = 4 << 20
PARQUET_MAGIC = b"PAR1"
log = logging.getLogger("analyzer")


@dataclass(frozen=True)
class InputInfo:
    path: str  # as given ("-" = stdin)
    name: str  # source name: file name without compression/PGN extensions, or --source-name
    compression: str  # none | zstd | gzip | bz2 | parquet (games as Parquet rows: io.hf_parquet)
    size: int  # bytes on disk (-1 for streams)
    mtime: float
    game_type: str  # chess | russian_draughts (routing by extension or GameType tag)
    seekable: bool = True  # a regular file (frames can be read by offset); else read once, in order
    digest: str = ""  # hash of the first and last MiB (regular files): a rewritten input is noticed
    url: bool = False  # an object named by URL (read by ranged requests through fsspec)
    variant: str | None = None  # a Lichess variant dump (by its file name): the variant of untagged games
    encoding: str = "utf-8"  # the text's encoding, by its byte-order mark (text_encoding): others are transcoded
    stream: bool = False  # read once, in order, from a stream opened for it (inspect_stream: `analyzer sync`'s
    # dumps), even where it could be read by frames; a rerun reads it again to resume

    def options(self) -> dict:
        """What the analysis reads of the source (analyzer.analysis.analyze_block options): the
        variant of a Lichess variant dump's untagged games, and the known data issues of a
        Lichess dump's month (io.lichess_db), written as the games' `data_issue`."""
        out: dict = {"default_variant": self.variant} if self.variant else {}
        issues = lichess_db.issues_for_path(self.path)
        if issues:
            out["data_issues"] = issues
        return out

    def identity(self) -> dict:
        """What a finished source must match to be skipped by a later run."""
        path = self.path if (self.url or not self.seekable) else os.path.abspath(self.path)
        return {
            "path": path,
            "size": self.size,
            "mtime": self.mtime,
            "digest": self.digest,
            "compression": self.compression,
            "game_type": self.game_type,
            "variant": self.variant,
            # (only when not UTF-8: the identity of every earlier finished source stays as it was)
            **({"encoding": self.encoding} if self.encoding != "utf-8" else {}),
        }


def source_name(path: str) -> str:
    """The default source name of an input: its file name without compression and PGN/PDN
    extensions (bytes that are not UTF-8 percent-encoded, so the name is valid text)."""
    if path == "-":
        return "stdin"
    base = os.path.basename(path.rstrip("/"))
    for ext in (".zst", ".zstd", ".gz", ".bz2"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    for ext in (".pgn", ".pdn"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    return text_name(base) or "input"


def text_name(name: str) -> str:
    """`name` as valid UTF-8 text: bytes Python could not decode (surrogate escapes from a
    non-UTF-8 file name) become %XX, so every name survives Arrow, JSON and the file system."""
    raw = os.fsencode(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        out = []
        for ch in name:
            if 0xDC80 <= ord(ch) <= 0xDCFF:
                out.append(f"%{ord(ch) - 0xDC00:02X}")
            else:
                out.append(ch)
        return "".join(out)


# Text encodings told by a byte-order mark at the start of the (decompressed) text. UTF-32's
# marks first: FF FE 00 00 also starts UTF-16LE's. Without a mark the text is read as UTF-8
# (a UTF-8 mark is skipped by the scanner like any bytes before the first tag).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def text_encoding(sample: bytes) -> str:
    """The encoding of text that starts with `sample`: UTF-16/UTF-32 by their byte-order mark,
    else UTF-8."""
    for bom, name in _BOMS:
        if sample.startswith(bom):
            return name
    return "utf-8"


def _as_utf8(sample: bytes, encoding: str) -> bytes:
    return sample if encoding == "utf-8" else sample.decode(encoding, "replace").lstrip("\ufeff").encode()


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


# Content that no reader here takes, told by its first bytes, and what to do about it.
_UNREADABLE = (
    (PARQUET_MAGIC, "a Parquet file, not PGN/PDN text (an analyzer table? read it with analyzer.scan_games or polars)"),
    (b"\xfd7zXZ\x00", "xz-compressed, which is not read here: decompress it (xz -d) or recompress it with zstd"),
    (b"PK\x03\x04", "a zip archive, which is not read here: unzip it and scan the game files in it"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive, which is not read here: extract it and scan the game files in it"),
)
_NAMED_COMPRESSION = {".zst": "zstd", ".zstd": "zstd", ".gz": "gzip", ".bz2": "bz2"}
_COMPRESSED = {"zstd": "zstd-compressed", "gzip": "gzip-compressed", "bz2": "bzip2-compressed", "none": "plain"}
# Game text: a PGN/PDN tag pair at the start of a line, or a first move number.
_GAME_TEXT = re.compile(rb'^(?:\xef\xbb\xbf)?[ \t]*\[[A-Za-z0-9_]+[ \t]+"|(?:^|\s)1\.\s*[a-hNBRQKO0-9]', re.MULTILINE)


def check_content(path: str, head: bytes, compression: str, sample: bytes) -> None:
    """Refuse (InputError) an input whose content nothing here reads, saying what it is: by its
    magic number (Parquet, xz, zip, 7z), or a file named as compressed whose content is text
    that holds no game. Content wins over the name: a compressed file is decoded whatever its
    name, and game text named .zst is read as the text it is (said once)."""
    for magic, what in _UNREADABLE:
        if head.startswith(magic):
            raise InputError(f"{path}: {what}")
    ext = os.path.splitext(path.rstrip("/"))[1].lower()
    named = _NAMED_COMPRESSION.get(ext)
    if named is None or named == compression:
        return
    if not head:
        return  # an empty file: the scan says it holds no games
    if compression != "none":
        log.warning("%s: named %s but %s: read as such", path, ext, _COMPRESSED[compression])
        return
    if _GAME_TEXT.search(sample[:SNIFF_BYTES]):
        log.warning("%s: named %s but not %s: read as plain text", path, ext, _COMPRESSED[named])
        return
    start = sample[:40].decode("utf-8", "replace").split("\n", 1)[0].strip()
    kind = "text" if sample and b"\x00" not in sample[:4096] else "data"
    raise InputError(
        f"{path}: named {ext} but not {_COMPRESSED[named]}: its content is {kind} with no PGN/PDN game "
        f"in its first {SNIFF_BYTES >> 10} KiB" + (f" (it starts {start!r})" if start and kind == "text" else "")
    )


class _Wrapper(io.RawIOBase):
    """A readable raw stream over another one (`inner`) that it owns: closing it closes the
    inner stream too, and marks this one closed even when that fails."""

    def __init__(self, inner):
        self.inner = inner

    def readable(self):
        return True

    def close(self):
        try:
            self.inner.close()
        finally:
            super().close()


class _Transcoded(_Wrapper):
    """UTF-8 bytes of a UTF-16 or UTF-32 stream (its byte-order mark dropped; undecodable code
    units become U+FFFD): the scanner and the kernels read UTF-8 only. Byte offsets in the
    tables are then offsets in this UTF-8 text."""

    def __init__(self, inner, encoding: str):
        import codecs

        super().__init__(inner)
        self.decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self.pending = b""
        self.first = True
        self.eof = False

    def readinto(self, b):
        while not self.pending and not self.eof:
            raw = self.inner.read(READ_SIZE)
            self.eof = not raw
            text = self.decoder.decode(raw or b"", final=self.eof)
            if self.first and text:
                text = text.lstrip("\ufeff")
                self.first = False
            self.pending = text.encode("utf-8", "surrogatepass")
        n = min(len(b), len(self.pending))
        b[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


class _Prefixed(_Wrapper):
    """A stream that was read from before (to sniff it): the bytes read first, then the rest.
    Pipes, FIFOs and process substitution cannot be reopened or rewound, so the sniffed head
    is kept and given back to the one reader that follows."""

    def __init__(self, head: bytes, raw):
        super().__init__(raw)
        self.head = head

    def readinto(self, b):
        if self.head:
            n = min(len(b), len(self.head))
            b[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        return self.inner.readinto(b)


_STREAMS: dict[str, _Prefixed] = {}  # path of a non-seekable input -> its sniffed, unread stream
SNIFF_BYTES = 1 << 16
DIGEST_BYTES = 1 << 20


def file_sha256(path: str, stop=None) -> str | None:
    """The SHA-256 of a local file read in order (for inputs whose units read it by pieces, such
    as pzstd frame units); None if `stop()` became true before the end."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
            if stop is not None and stop():
                return None
    return h.hexdigest()


def input_sha256(info: InputInfo, storage_options: dict | None = None) -> str | None:
    """The SHA-256 of an input's bytes as they are now (a local file, or an object read
    through once); None for a stream, which cannot be read again, and for Parquet rows (what
    is hashed is their text's source, not a file of it)."""
    if not info.seekable or info.compression == "parquet":
        return None
    if info.url:
        with open_stream(info.path, "none", info.size, storage_options=storage_options) as fh:
            while fh.read(8 << 20):
                pass
            return fh.input_sha256()
    return file_sha256(info.path)


def _read_head(fh, n: int) -> bytes:
    parts = []
    got = 0
    while got < n:
        b = fh.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _variant_of(path: str) -> str | None:
    """The variant of a Lichess variant dump by its file name (lichess_db_atomic_rated_...)."""
    from analyzer.kinds.chess.variants import VARIANT_NAMES, variant_from_filename

    code = variant_from_filename(path)
    return None if code is None else VARIANT_NAMES[code]


# A GameType tag pair where tags are: at the start of a line (after a UTF-8 byte-order mark or
# blanks). A text that only mentions one (a README: "a `[GameType "25"]` tag") is not draughts.
_GAME_TYPE_TAG = re.compile(rb'^(?:\xef\xbb\xbf)?[ \t]*\[GameType[ \t]*"(.?)', re.MULTILINE)


def _game_type(path: str, sample: bytes) -> str:
    """russian_draughts by the extension (.pdn), or by the first GameType tag of the sample
    when it is not 0 (chess); else chess."""
    if ".pdn" in os.path.basename(path.lower()):
        return "russian_draughts"
    m = _GAME_TYPE_TAG.search(sample)
    if m is not None and m.group(1) != b"0":
        return "russian_draughts"
    return "chess"


def _digest(path: str, size: int) -> str:
    """sha1 of the first and the last MiB (and the size): cheap on a 30 GB dump, and a rewritten
    file with the same size and mtime is still noticed unless both ends are unchanged."""
    h = hashlib.sha1(str(size).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(DIGEST_BYTES))
        if size > DIGEST_BYTES:
            fh.seek(max(size - DIGEST_BYTES, DIGEST_BYTES))
            h.update(fh.read(DIGEST_BYTES))
    return h.hexdigest()[:20]


def inspect(path: str, name: str | None = None, storage_options: dict | None = None) -> InputInfo:
    """Stat and sniff an input; InputError with a clear message when it cannot be read.

    A regular file is sniffed by reading its head (it is reopened later). Anything else
    (standard input, a FIFO, `<(...)`, a character device) is opened once here and the sniffed
    bytes are kept for the reader (`open_stream`), so nothing is lost."""
    if remote.is_url(path):
        if path.endswith(("/", ".parquet")):
            return _inspect_parquet(path, name, storage_options)
        return _inspect_url(path, name or source_name(path), storage_options)
    try:
        if path == "-":
            st = None
        else:
            st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):
                from analyzer.io import hf_parquet

                found = hf_parquet.expand(path) or []
                if [os.path.normpath(f) for f in found] == [os.path.normpath(path)]:  # Parquet games (a month)
                    return _inspect_parquet(path, name, storage_options)
                raise InputError(f"{path}: is a directory, not a game file; {_glob_hint(path)}")
        if st is not None and stat.S_ISREG(st.st_mode):
            with open(path, "rb") as fh:
                head = fh.read(8)
            if head.startswith(PARQUET_MAGIC):
                from analyzer.io import hf_parquet

                if hf_parquet.has_movetext(path):  # games in Parquet (the mirror's layout); else refused below
                    return _inspect_parquet(path, name, storage_options)
        name = text_name(name) if name else source_name(path)
        if st is not None and stat.S_ISREG(st.st_mode):
            comp = _sniff(head)
            try:
                with open_stream(path, comp) as fh:
                    sample = fh.read(SNIFF_BYTES)
            except Exception:  # noqa: BLE001 - damaged: routing falls back to chess; the reader reports the damage
                sample = b""
            encoding = text_encoding(sample)
            check_content(path, head, comp, _as_utf8(sample, encoding))
            return InputInfo(
                path,
                name,
                comp,
                st.st_size,
                st.st_mtime,
                _game_type(path, _as_utf8(sample, encoding)),
                True,
                _digest(path, st.st_size),
                variant=_variant_of(path),
                encoding=encoding,
            )
        # a pipe or FIFO: kept open in _STREAMS for the reader, which reads on from the sniffed head
        raw = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        head = _read_head(raw, SNIFF_BYTES)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    name = text_name(name) if name else source_name(path)
    comp = _sniff(head)
    _STREAMS[path] = _Prefixed(head, raw)
    sample = head
    if comp != "none":
        try:
            sample = _decoder(io.BufferedReader(_Prefixed(head, io.BytesIO())), comp).read(SNIFF_BYTES)
        except Exception:  # noqa: BLE001 - the head alone may not decode; routing falls back to chess
            sample = b""
    encoding = text_encoding(sample)
    check_content(path, head, comp, _as_utf8(sample, encoding))
    return InputInfo(
        path, name, comp, -1, 0.0, _game_type(path, _as_utf8(sample, encoding)), False, "", encoding=encoding
    )


def _inspect_parquet(path: str, name: str | None, storage_options: dict | None) -> InputInfo:
    """A source of games in Parquet (io.hf_parquet: a month of the Hugging Face mirror, a folder
    of its files, or one file), read as the PGN text its rows make."""
    from analyzer.io import hf_parquet

    try:
        files = hf_parquet.files_of(path, storage_options)
    except remote.MissingExtra as exc:
        raise InputError(str(exc)) from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or folder") from None
    except Exception as exc:  # noqa: BLE001 - network, credentials, ...: one line for the user
        raise InputError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    if not files.paths or not hf_parquet.has_movetext(files.paths[0], storage_options):
        raise InputError(f"{path}: no Parquet file of games (with a movetext column) in it")
    return InputInfo(
        path,
        text_name(name) if name else hf_parquet.source_name(path),
        "parquet",
        files.size,
        files.mtime,
        "chess",
        True,
        files.digest(),
        url=remote.is_url(path),
    )


def inspect_stream(path: str, raw, name: str, size: int, mtime: float, digest: str, url: bool = False) -> InputInfo:
    """An input read once, in order, from `raw` (an open raw stream of its bytes: a dump that
    `analyzer sync` reads by HTTP or from a folder), sniffed from its head, which is kept for
    its reader (open_stream), as a pipe's is. `size`, `mtime`, `digest`: its identity as the
    caller knows it (the listing's SHA-256 for a dump). Unlike a pipe it can be read again by a
    later run, so its finished units are reused (InputInfo.seekable), but never by frames."""
    head = _read_head(raw, SNIFF_BYTES)
    comp = _sniff(head)
    _STREAMS[path] = _Prefixed(head, raw)
    sample = head
    if comp != "none":
        try:
            sample = _decoder(io.BufferedReader(_Prefixed(head, io.BytesIO())), comp).read(SNIFF_BYTES)
        except Exception:  # noqa: BLE001 - the head alone may not decode; routing falls back to chess
            sample = b""
    encoding = text_encoding(sample)
    try:
        check_content(path, head, comp, _as_utf8(sample, encoding))
    except InputError:
        forget_stream(path)
        raise
    return InputInfo(
        path,
        name,
        comp,
        size,
        mtime,
        _game_type(path, _as_utf8(sample, encoding)),
        True,
        digest,
        url=url,
        variant=_variant_of(path),
        encoding=encoding,
        stream=True,
    )


def forget_stream(path: str) -> None:
    """Close and drop a stream kept for a reader that will not come (inspect_stream)."""
    kept = _STREAMS.pop(path, None)
    if kept is not None:
        try:
            kept.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass


def _glob_hint(path: str) -> str:
    """How to scan the game files in a directory: a quoted glob of the kind of file it holds."""
    try:
        names = os.listdir(path)
    except OSError:
        names = []
    pdn = any(".pdn" in n.lower() for n in names) and not any(".pgn" in n.lower() for n in names)
    return f"to scan the game files in it, give a glob: '{path.rstrip('/')}/*.{'pdn' if pdn else 'pgn'}*'"


def _inspect_url(url: str, name: str, storage_options: dict | None) -> InputInfo:
    """Stat and sniff an object by URL: its info, then its first and last MiB (two ranged
    reads, which also give the digest). An object of unknown size is read as a stream."""
    try:
        fs = remote.filesystem(url, storage_options)
        meta = remote.info(url, storage_options)
        size = meta["size"]
        if size is None:
            raise InputError(f"{url}: the server gives no size (Content-Length); download it first")
        head = remote.read_range(url, 0, min(size, DIGEST_BYTES), fs)
        tail = remote.read_range(url, max(size - DIGEST_BYTES, DIGEST_BYTES), size, fs) if size > DIGEST_BYTES else b""
    except FileNotFoundError:
        raise InputError(f"{url}: no such object") from None
    except PermissionError as exc:
        raise InputError(f"{url}: permission denied ({exc})") from None
    except IsADirectoryError:
        raise InputError(
            f"{url}: is a prefix (folder), not a game file; end it with / to scan the game files under it"
        ) from None
    except remote.MissingExtra as exc:
        raise InputError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - network, credentials, ...: one line for the user
        raise InputError(f"{url}: cannot read ({type(exc).__name__}: {exc})") from None
    comp = _sniff(head[:4])
    sample = head[:SNIFF_BYTES]
    if comp != "none":
        try:
            sample = _decoder(io.BufferedReader(_Prefixed(head, io.BytesIO())), comp).read(SNIFF_BYTES)
        except Exception:  # noqa: BLE001 - the head alone may not decode; routing falls back to chess
            sample = b""
    h = hashlib.sha1(str(size).encode())
    h.update(head)
    h.update(tail)
    encoding = text_encoding(sample)
    check_content(url, head, comp, _as_utf8(sample, encoding))
    return InputInfo(
        url,
        name,
        comp,
        size,
        meta["mtime"],
        _game_type(url, _as_utf8(sample, encoding)),
        True,
        h.hexdigest()[:20],
        url=True,
        variant=_variant_of(url),
        encoding=encoding,
    )


def _decoder(raw, compression: str):
    if compression == "zstd":
        dctx = zstandard.ZstdDecompressor(max_window_size=1 << 31)
        tracker = _ZstdFrameTracker(raw)
        return _ZstdStream(
            dctx.stream_reader(
                tracker,  # type: ignore[arg-type]  # zstandard only calls read(); its stub wants IO[bytes]
                read_size=READ_SIZE,
                read_across_frames=True,
                closefd=True,
            ),
            tracker,
        )
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "bz2":
        return bz2.BZ2File(raw, mode="rb")
    return raw


class _Counting(_Wrapper):
    """Counts the (compressed) bytes read from the input, for progress, and hashes them: the
    SHA-256 of the input's bytes as read, comparable with a published checksum (Lichess's
    sha256sums.txt), known once the input has been read to its end."""

    def __init__(self, raw):
        super().__init__(raw)
        self.count = 0
        self.hash = hashlib.sha256()
        self.at_end = False

    def readinto(self, b):
        n = self.inner.readinto(b)
        if n:
            self.count += n
            self.hash.update(memoryview(b)[:n])
        elif n == 0:
            self.at_end = True
        return n

    def sha256(self) -> str | None:
        return self.hash.hexdigest() if self.at_end else None

    def prefix_sha256(self) -> str:
        """The SHA-256 of the bytes read so far (a copy of the running hash)."""
        return self.hash.copy().hexdigest()


def open_stream(
    path: str, compression: str, size: int | None = None, encoding: str = "utf-8", storage_options: dict | None = None
):
    """A binary file object of decompressed bytes (reads across zstd frames), UTF-8 (text in
    another `encoding` is transcoded); its `input_count()` tells how many input bytes have been
    read, and `input_sha256()` their SHA-256 once the input has been read to its end (else
    None), and `input_prefix_sha256()` the SHA-256 of the input bytes read so far. A
    non-seekable input inspected before, or one opened by inspect_stream, is read from its kept
    stream, once (the bytes sniffed then are part of the hash)."""
    if compression == "parquet":
        from analyzer.io import hf_parquet

        text = hf_parquet.TextStream(path, storage_options)
        return _TextOf(io.BufferedReader(text, buffer_size=READ_SIZE), text)
    kept = _STREAMS.pop(path, None)
    raw: io.RawIOBase
    if kept is not None:
        raw = kept
    elif remote.is_url(path):
        known = size if size is not None and size >= 0 else remote.info(path, storage_options)["size"]
        raw = remote.RangedReader(path, known, storage_options=storage_options)
    elif path == "-":
        raw = _Prefixed(b"", sys.stdin.buffer)
    else:
        raw = open(path, "rb", buffering=0)  # noqa: SIM115 - returned inside the stream; the caller closes it
    counting = _Counting(raw)
    stream = _decoder(io.BufferedReader(counting, buffer_size=READ_SIZE), compression)
    if encoding != "utf-8":
        stream = io.BufferedReader(_Transcoded(stream, encoding), buffer_size=READ_SIZE)
    try:
        stream.input_count = lambda: counting.count
        stream.input_sha256 = counting.sha256
        stream.input_prefix_sha256 = counting.prefix_sha256
    except AttributeError:  # (a C type without a __dict__: wrap it)
        stream = _WithCount(stream, counting)
    return stream


class _WithCount(_Wrapper):
    def __init__(self, stream, counting):
        super().__init__(stream)
        self.counting = counting

    def input_count(self) -> int:
        return self.counting.count

    def input_sha256(self) -> str | None:
        return self.counting.sha256()

    def input_prefix_sha256(self) -> str:
        return self.counting.prefix_sha256()

    def read(self, n=-1):
        return self.inner.read(n)

    def read1(self, n=-1):
        return self.inner.read1(n)

    def readinto(self, b):
        return self.inner.readinto(b)


class _TextOf(_Wrapper):
    """The text made from an input that is not text (Parquet rows: io.hf_parquet.TextStream):
    `input_count()` is the input's bytes read so far; it has no SHA-256 of its own."""

    def __init__(self, stream, source):
        super().__init__(stream)
        self.source = source

    def input_count(self) -> int:
        return self.source.count

    def input_sha256(self) -> str | None:
        return None

    def input_prefix_sha256(self) -> str:
        return ""

    def read(self, n=-1):
        return self.inner.read(n)

    def read1(self, n=-1):
        return self.inner.read1(n)

    def readinto(self, b):
        return self.inner.readinto(b)


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
        self.lost = False  # not a zstd layout we follow: the decoder reports errors itself

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
            self.hdr += data[i : i + take]
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


class _ZstdStream(_Wrapper):
    """Decoded bytes of a zstd input; raises ZstdError at the end when the input was cut
    inside a frame (a truncated download) instead of ending quietly."""

    def __init__(self, reader, tracker: _ZstdFrameTracker):
        super().__init__(reader)
        self.tracker = tracker

    def read(self, n=-1):
        data = self.inner.read(n)
        if not data and n != 0:
            self._check_end()
        return data

    def read1(self, n=-1):
        data = self.inner.read1(n)
        if not data and n != 0:
            self._check_end()
        return data

    def _check_end(self):
        if not self.tracker.at_boundary:
            raise zstandard.ZstdError(
                f"the zstd input ends inside a frame after {self.tracker.consumed} compressed bytes (truncated)"
            )


@dataclass(frozen=True)
class Frame:
    offset: int  # byte offset of the zstd frame (after its skippable header) in the file
    size: int  # compressed size


def _frame_after_header(head: bytes, offset: int) -> Frame | None:
    """The zstd frame that the 12 bytes `head`, read at `offset`, announce as pzstd's skippable
    header (magic, length 4, compressed size), or None if they are short or not such a header:
    the one reading of a header for the local and the ranged walks and for next_frame."""
    if len(head) < 12:
        return None
    magic, length, csize = struct.unpack("<III", head)
    if not (SKIPPABLE_LO <= magic <= SKIPPABLE_HI) or length != 4:
        return None
    return Frame(offset + 12, csize)


def pzstd_frames(
    path: str, size: int | None = None, stats: dict | None = None, storage_options: dict | None = None
) -> list[Frame] | None:
    """Frames of a pzstd file, found by walking the 12-byte skippable headers without decoding.

    Returns None when the file does not start with pzstd's skippable frame (then it must be read
    sequentially) or when the walk does not end exactly at the end of the file. A URL is walked
    with ranged reads (`stats["reads"]` counts them): see _walk_url.
    """
    if remote.is_url(path):
        known = size if size is not None else remote.info(path, storage_options)["size"]
        return _walk_url(path, known, stats, storage_options)
    frames = []
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        pos = 0
        while pos < size:
            fh.seek(pos)
            frame = _frame_after_header(fh.read(12), pos)
            if frame is None:
                return None
            frames.append(frame)
            pos = frame.offset + frame.size
        if pos != size:
            return None
    return frames if len(frames) > 1 else None


WALK_AHEAD = 64 << 10  # bytes read after a header when the frames are small enough to share a read


def _walk_url(url: str, size: int, stats: dict | None, storage_options: dict | None) -> list[Frame] | None:
    """The header walk by ranged reads. Each header's position is known only from the one
    before, so the reads are sequential: one per header when frames are large (Lichess: ~5 MB
    compressed, so 12-byte reads; reading ahead would fetch a frame's worth of bytes per
    header for nothing), and one per WALK_AHEAD bytes when they are small enough for several
    headers to share a read."""
    fs = remote.filesystem(url, storage_options)
    frames: list[Frame] = []
    block = b""
    block_start = 0
    ahead = WALK_AHEAD
    reads = 0
    pos = 0
    while pos < size:
        if not (block_start <= pos and pos + 12 <= block_start + len(block)):
            block = remote.read_range(url, pos, min(size, pos + 12 + ahead), fs)
            block_start = pos
            reads += 1
            if len(block) < 12:
                return None
        frame = _frame_after_header(block[pos - block_start : pos - block_start + 12], pos)
        if frame is None:
            return None
        frames.append(frame)
        ahead = WALK_AHEAD if frame.size + 24 <= WALK_AHEAD else 0
        pos = frame.offset + frame.size
    if stats is not None:
        stats["reads"] = stats.get("reads", 0) + reads
    if pos != size:
        return None
    return frames if len(frames) > 1 else None


def next_frame(path: str, offset: int, size: int | None, storage_options: dict | None = None) -> Frame | None:
    """The frame whose skippable header starts at `offset` (after the last known one), or None
    at the end of the file or where no pzstd header is."""
    if size is not None and offset + 12 > size:
        return None
    if remote.is_url(path):
        head = remote.read_range(path, offset, offset + 12, storage_options=storage_options)
    else:
        with open(path, "rb") as fh:
            fh.seek(offset)
            head = fh.read(12)
    return _frame_after_header(head, offset)


_frame_buffers = threading.local()
FRAME_BUFFER_BYTES = 32 << 20  # pzstd at Lichess's settings: 32 MiB of text per frame


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
        if n == len(buf):  # a frame larger than the buffer: double it
            buf = _frame_buffers.buf = buf + bytearray(len(buf))
        with memoryview(buf) as view:
            got = reader.readinto(view[n:])
        if not got:
            return memoryview(buf)[:n]
        n += got


def iter_frames(
    path: str,
    frames: list[Frame],
    first: int,
    end: int | None = None,
    base: int = 0,
    size: int | None = None,
    storage_options: dict | None = None,
):
    """Decode frames first, first+1, ... one at a time: yields (index, text or ZstdError); the
    text is a view that is valid until the next frame is decoded.

    `frames[j]` is frame `base + j` (a unit carries the frames from its first on, a few past its
    end); frames after the list are found by reading their headers (rare: a game longer than
    the frames given). A URL reads frames [first, end) in one ranged request, then one per
    later frame. Decoding frame by frame tells the decompressed size of each frame (for byte
    offsets) and lets a damaged frame be reported while the frames after it are still read.
    """
    dctx = zstandard.ZstdDecompressor(max_window_size=1 << 31)
    url = remote.is_url(path)
    fs = remote.filesystem(path, storage_options) if url else None
    frames = list(frames)
    fh = None if url else open(path, "rb")  # noqa: SIM115 - a generator: closed in its finally
    own = b""
    own_start = 0
    try:
        if url and end is not None and end > first and end - base <= len(frames):
            a, b = frames[first - base], frames[end - 1 - base]
            own_start = a.offset
            own = remote.read_range(path, a.offset, b.offset + b.size, fs)
        i = first
        while True:
            j = i - base
            if j >= len(frames):
                last = frames[-1] if frames else None
                fr = next_frame(path, last.offset + last.size, size, storage_options) if last else None
                if fr is None:
                    return
                frames.append(fr)
            fr = frames[j]
            if url:
                if own and fr.offset + fr.size <= own_start + len(own):
                    data = own[fr.offset - own_start : fr.offset - own_start + fr.size]
                else:
                    own = b""
                    data = remote.read_range(path, fr.offset, fr.offset + fr.size, fs)
            else:
                assert fh is not None  # a local file: opened above
                fh.seek(fr.offset)
                data = fh.read(fr.size)
            try:
                if len(data) != fr.size:
                    raise zstandard.ZstdError(f"frame {i} truncated: {len(data)} of {fr.size} bytes")
                if not _frame_complete(data):
                    raise zstandard.ZstdError(
                        f"frame {i} is incomplete: its blocks end before or after its {fr.size} bytes"
                    )
                text = _decode_frame(dctx, data)
            except zstandard.ZstdError as exc:
                yield i, exc
                i += 1
                continue
            yield i, text
            i += 1
    finally:
        if fh is not None:
            fh.close()
