"""A listing of dumps laid out as database.lichess.org lays them out, and reading its files.

A listing is a URL (`https://database.lichess.org`) or a local folder (a copy of the site)
with one folder per kind of dump (`standard`, the eight variants, `broadcast`), each holding
what the database's export scripts write beside the dumps (lichess-org/database:
`web/index.js`, `export-*.sh`):

    list.txt        the URL of every dump, one a line
    sha256sums.txt  `sha256sum` lines: SHA-256, two blanks (or ` *`), file name
    counts.txt      `file games` lines: the games of each dump, counted as `grep --count -F
                    '[Site '` counts them (`[GameURL ` for the broadcasts)

A dump is read from its listing: LISTING/<folder>/<its file name in list.txt> (the site, or a
copy of it on another server or disk). A listing may also be one such folder.

HTTP goes through the standard library (urllib, http.client): no extra is needed. A dump is
read as one stream (`HTTPStream`): one GET, and after a cut connection a GET with
`Range: bytes=N-` and `If-Range` from the byte reached, so that the stream goes on as if
nothing happened (its reader's SHA-256 continues); a server that does not honour the range (or
whose file changed) ends the stream with an error instead.
"""

from __future__ import annotations

import email.utils
import http.client
import io
import logging
import os
import random
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from analyzer.errors import InputError
from analyzer.io import lichess_db

log = logging.getLogger("analyzer")

TIMEOUT = 60.0  # seconds without a byte before a request is given up (then resumed or retried)
RETRIES = 6  # attempts per small file; resumptions per dump, in a row without progress
BACKOFF = 0.5  # seconds before the second attempt, doubled each time (+-50% jitter)
BACKOFF_MAX = 15.0
USER_AGENT = "draw-rule-analyzer (analyzer sync)"


def is_http(path: str) -> bool:
    return path.lower().startswith(("http://", "https://"))


@dataclass(frozen=True)
class Entry:
    """One dump of a listing."""

    folder: str  # standard, atomic, ..., broadcast
    file: str  # its file name
    location: str  # where it is read from: a URL, or a local path
    month: str  # YYYY-MM ("" when its name does not say)
    sha256: str | None  # as sha256sums.txt gives it (None: not listed there)
    games: int | None  # as counts.txt gives it

    @property
    def name(self) -> str:
        """Its source name (io.sources.source_name): the file name without extensions."""
        from analyzer.io.sources import source_name

        return source_name(self.file)


@dataclass
class Listing:
    root: str
    entries: list[Entry] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)  # the folders found
    problems: list[str] = field(default_factory=list)  # lines of a folder's files that do not parse


def _join(base: str, *parts: str) -> str:
    if is_http(base):
        return base.rstrip("/") + "/" + "/".join(urllib.parse.quote(p) for p in parts)
    return os.path.join(base, *parts)


def _request(url: str, headers: dict | None = None) -> urllib.request.Request:
    return urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})


def _sleep_before(attempt: int) -> None:
    delay = min(BACKOFF * (2 ** (attempt - 1)), BACKOFF_MAX)
    time.sleep(delay * (0.5 + random.random()))


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code in (408, 429)
    return isinstance(exc, (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError))


def fetch_text(location: str, timeout: float = TIMEOUT) -> str | None:
    """A small text file of a listing; None if it does not exist (404, no such file). Transient
    HTTP errors are retried; others raise InputError with one line."""
    if not is_http(location):
        try:
            with open(location, encoding="utf-8") as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"{location}: cannot read ({exc.strerror or exc})") from None
    for attempt in range(1, RETRIES + 1):
        try:
            with urllib.request.urlopen(_request(location), timeout=timeout) as resp:
                return resp.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 410):
                return None
            if attempt == RETRIES or not _transient(exc):
                raise InputError(f"{location}: HTTP {exc.code} {exc.reason}") from None
        except Exception as exc:  # noqa: BLE001 - network trouble: retried, then one line for the user
            if attempt == RETRIES or not _transient(exc):
                raise InputError(f"{location}: cannot read ({type(exc).__name__}: {exc})") from None
        log.warning("%s: retry %d of %d", location, attempt, RETRIES - 1)
        _sleep_before(attempt)
    raise AssertionError("unreachable")


_SHA_LINE = re.compile(r"^([0-9a-fA-F]{64})\s+\*?(.+?)\s*$")


def parse_sha256sums(text: str) -> tuple[dict[str, str], list[str]]:
    """file name -> SHA-256 (lower case), and the lines that do not parse."""
    out: dict[str, str] = {}
    bad = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _SHA_LINE.match(line.strip())
        if m:
            out[os.path.basename(m.group(2))] = m.group(1).lower()
        else:
            bad.append(line.strip()[:80])
    return out, bad


def parse_counts(text: str) -> tuple[dict[str, int], list[str]]:
    """file name -> games (web/index.js reads `name count` lines the same way)."""
    out: dict[str, int] = {}
    bad = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) == 2 and words[1].isdigit():
            out[os.path.basename(words[0])] = int(words[1])
        else:
            bad.append(line.strip()[:80])
    return out, bad


def _folder_entries(listing: Listing, folder: str, base: str, timeout: float) -> bool:
    """Read one folder of the listing; False if it has no list.txt."""
    text = fetch_text(_join(base, "list.txt"), timeout)
    if text is None:
        return False
    sums_text = fetch_text(_join(base, "sha256sums.txt"), timeout) or ""
    counts_text = fetch_text(_join(base, "counts.txt"), timeout) or ""
    sums, bad_sums = parse_sha256sums(sums_text)
    counts, bad_counts = parse_counts(counts_text)
    listing.problems += [f"{folder}/sha256sums.txt: {b!r} does not parse" for b in bad_sums]
    listing.problems += [f"{folder}/counts.txt: {b!r} does not parse" for b in bad_counts]
    listing.folders.append(folder)
    seen = set()
    for line in text.splitlines():
        url = line.strip()
        if not url or url.startswith("#"):
            continue
        file = os.path.basename(urllib.parse.urlparse(url).path if is_http(url) else url)
        file = urllib.parse.unquote(file)
        if not file or file in seen:
            continue
        seen.add(file)
        dump = lichess_db.dump_of(file)
        listing.entries.append(
            Entry(
                folder=folder,
                file=file,
                location=_join(base, file),
                month=dump[1] if dump else "",
                sha256=sums.get(file),
                games=counts.get(file),
            )
        )
    return True


def read_listing(root: str, folders: list[str] | None = None, timeout: float = TIMEOUT) -> Listing:
    """The dumps of a listing (a URL or a local folder laid out as the database site, or one of
    its folders), in month order then folder order. `folders`: only these (default: every
    folder found). InputError if nothing there is a listing."""
    if root.lower().startswith("file://"):
        root = root[7:] or "/"
    if not is_http(root) and not os.path.isdir(root):
        raise InputError(f"{root}: no such folder (a listing is a URL or a folder laid out as database.lichess.org)")
    listing = Listing(root.rstrip("/") if is_http(root) else os.path.abspath(root))
    wanted = list(folders or lichess_db.FOLDERS)
    unknown = [f for f in wanted if f not in lichess_db.FOLDERS]
    if unknown:
        raise InputError(f"unknown folder(s) {unknown}: the database's folders are {', '.join(lichess_db.FOLDERS)}")
    for folder in wanted:
        _folder_entries(listing, folder, _join(listing.root, folder), timeout)
    if not listing.folders:
        # the listing is one folder itself (…/standard/ or a copy of one)
        name = os.path.basename(urllib.parse.urlparse(listing.root).path.rstrip("/") or listing.root.rstrip("/"))
        folder = name if name in lichess_db.FOLDERS else lichess_db.STANDARD
        if not folders or folder in wanted:
            _folder_entries(listing, folder, listing.root, timeout)
    if not listing.folders:
        raise InputError(
            f"{root}: no list.txt in it nor in any of its folders ({', '.join(wanted)}): not a listing laid out as "
            f"database.lichess.org"
        )
    order = {f: i for i, f in enumerate(lichess_db.FOLDERS)}
    listing.entries.sort(key=lambda e: (e.month, order.get(e.folder, 99), e.file))
    return listing


# ---------------------------------------------------------------------------------------------
# Reading a dump by HTTP as one stream


class ResumeRefused(OSError):
    """A cut connection could not be resumed (the server ignores ranges, or its file changed)."""


class HTTPStream(io.RawIOBase):
    """The bytes of one URL, in order, as a raw stream: one GET; after a cut connection (an
    error, a timeout, or fewer bytes than Content-Length) a GET from the byte reached with
    `Range` and `If-Range` (the ETag, else Last-Modified), up to RETRIES times in a row without
    progress. A reply that is not the asked range raises ResumeRefused.

    readinto fills the buffer it is given (short only at the end), as a file does: the bytes
    consumed by a reader above it at any point do not depend on how the network cut them.
    `size`, `mtime` (Last-Modified), `etag` are known after open(); `resumes` counts the
    resumptions."""

    def __init__(self, url: str, timeout: float = TIMEOUT, retries: int = RETRIES):
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.pos = 0
        self.size: int | None = None
        self.mtime = 0.0
        self.etag = ""
        self.last_modified = ""
        self.resumes = 0
        self.resp: http.client.HTTPResponse | None = None

    def readable(self) -> bool:
        return True

    def open(self) -> HTTPStream:
        """The first GET (InputError with one line if it fails: 404, refused, ...)."""
        for attempt in range(1, self.retries + 1):
            try:
                resp = urllib.request.urlopen(_request(self.url), timeout=self.timeout)
                break
            except urllib.error.HTTPError as exc:
                if attempt == self.retries or not _transient(exc):
                    raise InputError(f"{self.url}: HTTP {exc.code} {exc.reason}") from None
            except Exception as exc:  # noqa: BLE001 - network trouble: retried, then one line for the user
                if attempt == self.retries or not _transient(exc):
                    raise InputError(f"{self.url}: cannot read ({type(exc).__name__}: {exc})") from None
            log.warning("%s: retry %d of %d", self.url, attempt, self.retries - 1)
            _sleep_before(attempt)
        length = resp.headers.get("Content-Length")
        self.size = int(length) if length and length.isdigit() else None
        self.etag = resp.headers.get("ETag") or ""
        self.last_modified = resp.headers.get("Last-Modified") or ""
        if self.last_modified:
            try:
                self.mtime = email.utils.parsedate_to_datetime(self.last_modified).timestamp()
            except (TypeError, ValueError):
                self.mtime = 0.0
        self.resp = resp
        return self

    def _resume(self, why: BaseException | str) -> None:
        """Reopen from self.pos (the cut connection is dropped first)."""
        if self.resp is not None:
            try:
                self.resp.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close: it is dropped anyway
                pass
            self.resp = None
        attempt = 0
        while True:
            attempt += 1
            if attempt > self.retries:
                raise ResumeRefused(
                    f"{self.url}: the connection was cut at byte {self.pos} ({why}); "
                    f"gave up after {self.retries} attempts to resume it"
                )
            self.resumes += 1
            log.warning(
                "%s: connection cut at byte %d of %s (%s); resuming from there (attempt %d of %d)",
                self.url,
                self.pos,
                self.size if self.size is not None else "?",
                why if isinstance(why, str) else f"{type(why).__name__}: {why}",
                attempt,
                self.retries,
            )
            if attempt > 1:
                _sleep_before(attempt - 1)
            headers = {"Range": f"bytes={self.pos}-"}
            validator = self.etag if self.etag and not self.etag.startswith("W/") else self.last_modified
            if validator:
                headers["If-Range"] = validator
            try:
                resp = urllib.request.urlopen(_request(self.url, headers), timeout=self.timeout)
            except urllib.error.HTTPError as exc:
                if exc.code == 416 or not _transient(exc):
                    raise ResumeRefused(
                        f"{self.url}: cannot resume at byte {self.pos}: HTTP {exc.code} {exc.reason}"
                    ) from None
                why = exc
                continue
            except Exception as exc:  # noqa: BLE001 - network trouble: tried again
                why = exc
                continue
            got = resp.headers.get("Content-Range") or ""
            m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", got)
            if resp.status != 206 or not m or int(m.group(1)) != self.pos:
                resp.close()
                raise ResumeRefused(
                    f"{self.url}: cannot resume at byte {self.pos}: the server answered {resp.status} "
                    f"{got or '(no Content-Range)'} (it does not honour byte ranges, or the file changed)"
                )
            self.resp = resp
            return

    def _read_some(self, view: memoryview) -> int:
        """Bytes into view (at least one unless at the end), resuming after a cut."""
        while True:
            if self.resp is None:
                if self.size is not None and self.pos >= self.size:
                    return 0
                self._resume("no connection")
            assert self.resp is not None
            try:
                n = self.resp.readinto(view)
            except (http.client.HTTPException, OSError) as exc:  # (TimeoutError is an OSError)
                self._resume(exc)
                continue
            if n:
                self.pos += n
                return n
            if self.size is None or self.pos >= self.size:
                return 0
            self._resume(f"the body ended {self.size - self.pos} bytes early")

    def readinto(self, b) -> int:
        view = memoryview(b).cast("B")
        got = 0
        while got < len(view):
            n = self._read_some(view[got:])
            if not n:
                break
            got += n
        return got

    def close(self) -> None:
        if self.resp is not None:
            try:
                self.resp.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
            self.resp = None
        super().close()
