"""The names of everything under OUT, relative to OUT with `/` separators (as records store
them); only the Dataset (engine.dataset) turns a name into a path of its store.

    .lock                                        one writer at a time (dataset.lock)
    _dataset.json                                the data dictionary
    games/source=<dir>/part-<unit>.<token>.parquet           a unit's final part
    games/source=<dir>/part-<first>-<end>.<token>.parquet    units [first, end) compacted
    verdicts/..., events/...                     the same for the other tables
    _staging/<dir>/unit-<unit>.<table>.<token>.parquet       unit output, unit-local numbering
    _manifest/<dir>/unit-<unit>.json             one record per finished unit
    _manifest/<dir>/group-<first>-<end>.json     a compacted group's file entry
    _manifest/<dir>/intent-<token>.json          the files a writer is about to create
    _manifest/<dir>/started.json                 how a run started the source
    _manifest/<dir>/source.json                  a finished source: the files of its tables
    _manifest/run.json                           the last run's summary
    _manifest/sync.json                          the last `analyzer sync`'s summary (engine.sync)

Every table file carries a token of its own (12 hex digits, new for every write), so a file the
analyzer writes never takes the name of a file that is already there, and a file is the
analyzer's only if a record or an intent of this OUT names it. `<dir>` is the source name
escaped for a hive partition value (percent-encoding, as Hive and polars read it) and cut to a
safe length with a hash suffix; `source` is the hive partition key only, not a column of the
files. Temporary files are `.analyzer-tmp-<run>-<pid>-<random>-<name>.partial`, beside the
file they become.
"""

from __future__ import annotations

import hashlib
import re
import uuid

TABLES = ("games", "verdicts", "events")  # the order of a unit's parts everywhere
MANIFEST = "_manifest"
STAGING = "_staging"
LOCK = ".lock"
DATASET = "_dataset.json"
RUN_RECORD = f"{MANIFEST}/run.json"
SYNC_RECORD = f"{MANIFEST}/sync.json"
TEMP_PREFIX = ".analyzer-tmp-"
TOP_FOLDERS = (MANIFEST, STAGING, *TABLES)

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")
_MAX_DIR_BYTES = 160


def token() -> str:
    """A name part no other write used."""
    return uuid.uuid4().hex[:12]


def source_dir(name: str) -> str:
    """The folder name of a source: ASCII letters, digits and . _ - + as they are, every other
    UTF-8 byte as %XX (so `a=b` and `a/b` cannot break the hive layout or the path), at most
    _MAX_DIR_BYTES bytes (longer names end in `~` and a hash of the whole name)."""
    out = []
    for ch in name:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    text = "".join(out)
    if text in ("", ".", ".."):
        text = text.replace(".", "%2E") or "%00"
    if len(text) > _MAX_DIR_BYTES:
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        cut = text[: _MAX_DIR_BYTES - 13]
        pct = cut.rfind("%", len(cut) - 2)  # do not end inside a %XX escape
        if pct >= 0:
            cut = cut[:pct]
        text = f"{cut}~{digest}"
    return text


def table_folder(table: str, sdir: str) -> str:
    return f"{table}/source={sdir}"


def part(table: str, sdir: str, unit: int) -> str:
    """A unit's final part, under a new token."""
    return f"{table_folder(table, sdir)}/part-{unit:06d}.{token()}.parquet"


def group_part(table: str, sdir: str, first: int, end: int) -> str:
    """The file of units [first, end) compacted, under a new token."""
    return f"{table_folder(table, sdir)}/part-{first:06d}-{end:06d}.{token()}.parquet"


def staging_folder(sdir: str) -> str:
    return f"{STAGING}/{sdir}"


def staging_part(table: str, sdir: str, unit: int) -> str:
    return f"{staging_folder(sdir)}/unit-{unit:06d}.{table}.{token()}.parquet"


def manifest_folder(sdir: str) -> str:
    return f"{MANIFEST}/{sdir}"


def unit_record(sdir: str, unit: int) -> str:
    return f"{manifest_folder(sdir)}/unit-{unit:06d}.json"


def group_record(sdir: str, first: int, end: int) -> str:
    return f"{manifest_folder(sdir)}/group-{first:06d}-{end:06d}.json"


def intent_record(sdir: str) -> str:
    return f"{manifest_folder(sdir)}/intent-{token()}.json"


def source_record(sdir: str) -> str:
    return f"{manifest_folder(sdir)}/source.json"


def started_record(sdir: str) -> str:
    return f"{manifest_folder(sdir)}/started.json"


def source_folders(sdir: str) -> list[str]:
    """Every folder that holds files of one source."""
    return [manifest_folder(sdir), staging_folder(sdir), *(table_folder(t, sdir) for t in TABLES)]


# Final parts as this version and the versions before it named them (without a token, or with
# an object store's): what a reader of the folders would count.
_PART = re.compile(r"^part-\d{6}(-\d{6})?(\.[0-9a-f]{12})?\.parquet$")
_UNIT_RECORD = re.compile(r"^unit-(\d{6})\.json$")
_GROUP_RECORD = re.compile(r"^group-(\d{6})-(\d{6})\.json$")
_INTENT = re.compile(r"^intent-[0-9a-f]{12}\.json$")
_TEMP = re.compile(r"^\.analyzer-tmp-[0-9a-f]{12}-\d+-[0-9a-f]{8}-.+\.partial$")
_OLD_TEMP = re.compile(r"^\.analyzer-tmp-\d+-[0-9a-f]{8}-.+\.partial$")  # versions up to 0.3.0


def is_part_name(name: str) -> bool:
    """A final part's file name (a unit's, or a compacted group's)."""
    return bool(_PART.match(name))


def unit_of_record(name: str) -> int | None:
    m = _UNIT_RECORD.match(name)
    return int(m.group(1)) if m else None


def is_group_record(name: str) -> bool:
    return bool(_GROUP_RECORD.match(name))


def is_intent(name: str) -> bool:
    return bool(_INTENT.match(name))


def is_temp(name: str) -> bool:
    """A temporary file of this tool (its name, a run id, a pid): only these are cleaned up
    without a record naming them."""
    return bool(_TEMP.match(name) or _OLD_TEMP.match(name))


def temp_name(name: str, run_id: str, pid: int) -> str:
    """A temporary name beside `name` (a name relative to OUT): hidden and not ending in
    .parquet/.json, so no reader's glob picks up a partial file; it names its writer."""
    head, _, tail = name.rpartition("/")
    tmp = f"{TEMP_PREFIX}{run_id}-{pid}-{uuid.uuid4().hex[:8]}-{tail}.partial"
    return f"{head}/{tmp}" if head else tmp


def folder_of(name: str) -> str:
    return name.rpartition("/")[0]


def base_of(name: str) -> str:
    return name.rpartition("/")[2]
