"""Inputs and outputs named by URL (s3://, gs://, az://, abfs://, http(s)://, ...), through fsspec.

fsspec and the package of each protocol (s3fs, gcsfs, adlfs, aiohttp) are optional:
`pip install 'draw-rule-analyzer[cloud]'`. Local paths never come here (a `file://` URL is turned into
its local path first), so the local code paths do not import fsspec.

Options: the protocol's standard environment (for S3: AWS_ENDPOINT_URL, AWS_PROFILE, the
credential chain of botocore) and `--storage-option [PROTOCOL.]KEY=VALUE`: a mapping
{protocol or "*": {key: value}} that every call takes as an argument (`storage_options`), and
that a scan carries to its workers in `Config.storage_options`. There is no process-wide
setting: two readers of two stores in one process each keep their own options.

Every ranged read goes through `read_range`: retried with exponential backoff (and jitter) on
transient errors (connection reset, timeout, 5xx, 429, a short body), never on a missing or
forbidden object; a server that ignores `Range` is an error, not a silent whole-file read.
"""

from __future__ import annotations

import io
import json
import logging
import random
import threading
import time

from analyzer.errors import MissingExtra

log = logging.getLogger("analyzer")

RETRIES = 6  # attempts per ranged read (the first included)
BACKOFF = 0.25  # seconds before the second attempt; doubled each time (+-50% jitter)
BACKOFF_MAX = 8.0
STREAM_BLOCK = 8 << 20  # ranged reads of a sequentially read (single-frame) input

_LOCK = threading.Lock()
STATS = {"ranged_reads": 0, "retries": 0, "bytes": 0}  # this process, for measurements and tests


def is_url(path) -> bool:
    """`scheme://...` with a scheme of two or more characters (a Windows drive `C:` is not one)."""
    if not isinstance(path, str):
        return False
    i = path.find("://")
    return i >= 2 and all(c.isalnum() or c in "+-." for c in path[:i])


def protocol(url: str) -> str:
    return url.split("://", 1)[0].lower()


def localize(path: str) -> str:
    """`file:///x/y` -> `/x/y`; anything else unchanged."""
    if isinstance(path, str) and path.lower().startswith("file://"):
        return path[7:] or "/"
    return path


def parse_option(text: str) -> tuple[str, str, object]:
    """`[PROTOCOL.]KEY=VALUE` -> (protocol or "*", key, value); VALUE is read as JSON when it is
    JSON (true, 3, {"region_name": "x"}), else kept as a string."""
    if "=" not in text:
        raise ValueError(f"--storage-option {text!r}: expected [PROTOCOL.]KEY=VALUE")
    key, value = text.split("=", 1)
    key = key.strip()
    proto = "*"
    if "." in key:
        proto, key = key.split(".", 1)
    if not key:
        raise ValueError(f"--storage-option {text!r}: empty key")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return proto.lower(), key, parsed


def options_from_args(items: list[str]) -> dict:
    out: dict[str, dict] = {}
    for text in items or []:
        proto, key, value = parse_option(text)
        out.setdefault(proto, {})[key] = value
    return out


def options_for(proto: str, storage_options: dict | None) -> dict:
    """The fsspec options of one protocol in a {protocol or "*": {key: value}} mapping."""
    storage_options = storage_options or {}
    return {**storage_options.get("*", {}), **storage_options.get(proto, {})}


def filesystem(url: str, storage_options: dict | None = None):
    """The fsspec filesystem of a URL, with the options the caller gives ({protocol or "*":
    {key: value}}; fsspec caches instances by their options)."""
    try:
        import fsspec
    except ImportError:
        raise MissingExtra(
            f"{url}: URLs need the optional dependencies: pip install 'draw-rule-analyzer[cloud]'"
        ) from None
    proto = protocol(url)
    opts = options_for(proto, storage_options)
    # Listings are never cached: other processes (workers, other runs) write under OUT, and a
    # cached listing would hide their objects (s3fs answers `exists` from it).
    opts.setdefault("use_listings_cache", False)
    try:
        return fsspec.filesystem(proto, **opts)
    except ImportError as exc:
        raise MissingExtra(
            f"{url}: the {proto}:// protocol needs a package that is not installed "
            f"({exc}); pip install 'draw-rule-analyzer[cloud]'"
        ) from None
    except ValueError as exc:  # unknown protocol
        raise MissingExtra(f"{url}: {exc}") from None


def _status(exc) -> int | None:
    """The HTTP status behind an exception (also one translated by s3fs: see __cause__)."""
    for e in (exc, getattr(exc, "__cause__", None)):
        if e is None:
            continue
        for attr in ("status", "status_code"):  # (not "code": aiohttp uses it for payload errors)
            v = getattr(e, attr, None)
            if isinstance(v, int) and 100 <= v < 600:
                return v
        resp = getattr(e, "response", None)
        if isinstance(resp, dict):
            v = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if v:
                return v
    return None


def is_transient(exc: BaseException) -> bool:
    """Worth another try: connection trouble, timeouts, 5xx, 408/429, short bodies. Not: a
    missing or forbidden object, bad arguments, a missing package."""
    if isinstance(
        exc,
        (
            FileNotFoundError,
            FileExistsError,
            PermissionError,
            IsADirectoryError,
            NotADirectoryError,
            MissingExtra,
            NotImplementedError,
            TypeError,
            KeyboardInterrupt,
            RangeNotHonoured,
        ),
    ):
        return False
    status = _status(exc)
    if status is not None:
        return status >= 500 or status in (408, 429)
    return isinstance(exc, Exception)


class RangeNotHonoured(Exception):
    """The server sent more bytes than asked for: it ignores `Range` (not retried)."""


class ShortRead(OSError):
    """Fewer bytes than asked for, before the end of the object (retried)."""


def _sleep_before(attempt: int) -> None:
    delay = min(BACKOFF * (2 ** (attempt - 1)), BACKOFF_MAX)
    time.sleep(delay * (0.5 + random.random()))


def with_retries(what: str, fn, *args, **kwargs):
    """fn(*args, **kwargs), tried up to RETRIES times while it fails with a transient error."""
    for attempt in range(1, RETRIES + 1):
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:  # re-raised unless transient (is_transient sorts them)
            if attempt == RETRIES or not is_transient(exc):
                raise
            with _LOCK:
                STATS["retries"] += 1
            log.warning("%s failed (%s: %s); retry %d of %d", what, type(exc).__name__, exc, attempt, RETRIES - 1)
            _sleep_before(attempt)
    raise AssertionError("unreachable")


def read_range(url: str, start: int, end: int, fs=None, storage_options: dict | None = None) -> bytes:
    """Bytes [start, end) of an object: one ranged request (more only on transient errors)."""
    if end <= start:
        return b""
    fs = fs or filesystem(url, storage_options)

    def once() -> bytes:
        data = fs.cat_file(url, start=start, end=end)
        with _LOCK:
            STATS["ranged_reads"] += 1
            STATS["bytes"] += len(data)
        if len(data) > end - start:
            raise RangeNotHonoured(
                f"{url}: asked for bytes {start}-{end - 1}, got {len(data)} bytes: "
                f"the server does not honour byte ranges"
            )
        if len(data) < end - start:
            raise ShortRead(f"{url}: asked for bytes {start}-{end - 1}, got {len(data)}")
        return data

    return with_retries(f"read of {url} bytes {start}-{end - 1}", once)


def info(url: str, storage_options: dict | None = None) -> dict:
    """{"size": int or None, "mtime": float, "etag": str} of an object; FileNotFoundError."""
    fs = filesystem(url, storage_options)
    d = with_retries(f"info of {url}", fs.info, url)
    if d.get("type") == "directory":
        raise IsADirectoryError(url)
    mtime = d.get("LastModified") or d.get("mtime") or d.get("last_modified") or d.get("updated") or 0
    if hasattr(mtime, "timestamp"):
        mtime = mtime.timestamp()
    elif isinstance(mtime, str):
        mtime = 0.0
    etag = d.get("ETag") or d.get("etag") or ""
    size = d.get("size")
    return {"size": int(size) if size is not None else None, "mtime": float(mtime or 0.0), "etag": str(etag).strip('"')}


class RangedReader(io.RawIOBase):
    """A sequential reader of a whole object in ranged reads of `block` bytes (each retried by
    read_range): a dropped connection costs one block, not the input."""

    def __init__(
        self, url: str, size: int, block: int = STREAM_BLOCK, start: int = 0, storage_options: dict | None = None
    ):
        self.url = url
        self.size = size
        self.block = block
        self.pos = start
        self.buf = b""
        self.fs = filesystem(url, storage_options)

    def readable(self):
        return True

    def readinto(self, b):
        if not self.buf:
            if self.pos >= self.size:
                return 0
            end = min(self.pos + max(self.block, len(b)), self.size)
            self.buf = read_range(self.url, self.pos, end, self.fs)
            self.pos = end
        n = min(len(b), len(self.buf))
        b[:n] = self.buf[:n]
        self.buf = self.buf[n:]
        return n


GLOB_CHARS = "*?["
GAME_EXTENSIONS = (
    ".pgn",
    ".pdn",
    ".pgn.zst",
    ".pdn.zst",
    ".pgn.gz",
    ".pdn.gz",
    ".pgn.bz2",
    ".pdn.bz2",
    ".zst",
    ".zstd",
    ".gz",
    ".bz2",
)


def expand(url: str, storage_options: dict | None = None) -> list[str]:
    """A URL with glob characters -> the matching objects (sorted); a URL ending in `/` -> the
    game files under that prefix (by extension); anything else -> [url]."""
    proto = protocol(url)
    if url.endswith("/"):
        fs = filesystem(url, storage_options)
        found = with_retries(f"list of {url}", fs.find, url)
        names = [n for n in found if n.lower().endswith(GAME_EXTENSIONS)]
    elif any(c in url.split("://", 1)[1] for c in GLOB_CHARS):
        fs = filesystem(url, storage_options)
        names = with_retries(f"glob of {url}", fs.glob, url)
    else:
        return [url]
    out = []
    for n in sorted(names):
        out.append(n if is_url(n) else f"{proto}://{n.lstrip('/') if proto != 'file' else n}")
    return out
