"""Where everything lives under OUT, and names that are safe in every layer.

    OUT/.lock                                   one writer at a time (engine.lock)
    OUT/games/source=<dir>/part-<unit>.parquet  final tables, hive-partitioned by source
    OUT/verdicts/source=<dir>/part-<unit>.parquet
    OUT/events/source=<dir>/part-<unit>.parquet
    OUT/_staging/<dir>/unit-<unit>.{games,verdicts,events}.parquet   unit output, unit-local numbering
    OUT/_manifest/<dir>/unit-<unit>.json        one record per finished unit
    OUT/_manifest/<dir>/group-<first>-<end>.json  a compacted file group's entry (as in source.json)
    OUT/_manifest/<dir>/started.json            how a run started the source: input, command, units planned
    OUT/_manifest/<dir>/source.json             a finished source: input identity, editions, units,
                                                the files of its tables (engine.manifest)
    OUT/_manifest/run.json                      the last run's summary

A finished source's tables are compacted (engine.compact): `part-<first unit>-<end unit>.parquet`
holds the games of units [first, end), and replaces their `part-<unit>.parquet` once the source
record lists it.

On an object store (OUT is a URL) the same names, except that parts are written as
`part-<unit>.<token>.parquet` and `unit-<unit>.<token>.{games,verdicts,events}.parquet` (there is no
rename: see engine.store) and a record's "parts" names them; nothing is temporary there.

`<dir>` is the source name escaped for a hive partition value (percent-encoding, as Hive and
polars read it) and cut to a safe length with a hash suffix; `source` is the hive partition key
only, not a column of the files (hive readers take it from the folder; a shortened name's full
name is in its files' metadata, `analyzer.source`, which analyzer.scan_* use). Temporary files
are named `.analyzer-tmp-<pid>-<id>-<name>` and only ever created, and cleaned, in the folders
above.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid

from analyzer.engine.store import is_remote, open_store

TABLES = ("games", "verdicts", "events")  # the order of a unit's parts everywhere
TEMP_PREFIX = ".analyzer-tmp-"
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")
_MAX_DIR_BYTES = 160


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


_PART_NAME = re.compile(r"^part-\d{6}(-\d{6})?\.parquet$")


def is_part_name(name: str) -> bool:
    """A final part's name as the tool writes it (a unit's, or a compacted group's)."""
    return bool(_PART_NAME.match(name))


def compacted_paths(out: str, source: str, first: int, end: int) -> tuple[str, ...]:
    """The files of units [first, end) compacted into one per table."""
    d = source_dir(source)
    return tuple(os.path.join(out, t, f"source={d}", f"part-{first:06d}-{end:06d}.parquet") for t in TABLES)


def final_paths(out: str, source: str, unit: int) -> tuple[str, ...]:
    d = source_dir(source)
    return tuple(os.path.join(out, t, f"source={d}", f"part-{unit:06d}.parquet") for t in TABLES)


def staging_paths(out: str, source: str, unit: int) -> tuple[str, ...]:
    base = os.path.join(out, "_staging", source_dir(source), f"unit-{unit:06d}")
    return tuple(f"{base}.{t}.parquet" for t in TABLES)


def unit_record_path(out: str, source: str, unit: int) -> str:
    return os.path.join(out, "_manifest", source_dir(source), f"unit-{unit:06d}.json")


def source_record_path(out: str, source: str) -> str:
    return os.path.join(out, "_manifest", source_dir(source), "source.json")


def group_record_path(out: str, source: str, first: int, end: int) -> str:
    """The record of a compacted group of units [first, end) (its file entry: engine.manifest)."""
    return os.path.join(out, "_manifest", source_dir(source), f"group-{first:06d}-{end:06d}.json")


def started_record_path(out: str, source: str) -> str:
    return os.path.join(out, "_manifest", source_dir(source), "started.json")


def run_record_path(out: str) -> str:
    return os.path.join(out, "_manifest", "run.json")


def dataset_path(out: str) -> str:
    return os.path.join(out, "_dataset.json")


def source_folders(out: str, source: str) -> list[str]:
    d = source_dir(source)
    return [
        os.path.join(out, "_manifest", d),
        os.path.join(out, "_staging", d),
        *(os.path.join(out, t, f"source={d}") for t in TABLES),
    ]


def rel(out: str, path: str) -> str:
    """`path` relative to OUT, with / separators (as records store part names)."""
    return os.path.relpath(path, out).replace(os.sep, "/") if not is_remote(out) else path[len(out.rstrip("/")) + 1 :]


def committed_parts(out: str, source: str, rec: dict) -> tuple[str, ...]:
    """The parts (one per TABLES) a unit record commits: those it names, or (records written
    before parts were named) the final or staging names by its "finalized" mark."""
    parts = rec.get("parts")
    if parts:
        return tuple(os.path.join(out, parts[t]) for t in TABLES)
    if rec.get("finalized"):
        return final_paths(out, source, rec["unit"])
    return staging_paths(out, source, rec["unit"])


def name_parts(out: str, rec: dict, written) -> None:
    """Record a unit's parts in its record: `written` is (name, description) per TABLES, as
    parts.write_table returns them (engine.manifest describes the description)."""
    rec["parts"] = {t: rel(out, name) for t, (name, _) in zip(TABLES, written)}
    rec["checks"] = {t: desc for t, (_, desc) in zip(TABLES, written)}


def temp_path(path: str) -> str:
    """A temporary name next to `path` that no user file has and that names its writer."""
    head, tail = os.path.split(path)
    # Hidden, and not ending in .parquet/.json: no reader's glob picks up a partial file.
    return os.path.join(head, f"{TEMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}-{tail}.partial")


def _our_folders(out: str):
    """OUT and the folders the tool creates in it (never through a symbolic link)."""
    yield out
    for top in ("_manifest", "_staging", *TABLES):
        path = os.path.join(out, top)
        if not _real_dir(path):
            continue
        yield path
        with os.scandir(path) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    yield entry.path


def _real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def clean_temp(out: str) -> int:
    """Remove the temporary files an interrupted run left in our folders (the caller holds the
    lock, so no live run owns any). Returns how many were removed. An object store has no
    temporary files: parts no record names are swept per source (sweep_source)."""
    if is_remote(out):
        return 0
    n = 0
    for folder in _our_folders(out):
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                    try:
                        os.remove(entry.path)
                        n += 1
                    except OSError:
                        pass
    return n


_OUR_FILES = ("part-", "unit-", "group-", "source.json", "started.json")


# Our objects in a source's folders on an object store: parts and staging parts (any token).
_OUR_PART = re.compile(r"^(part-\d{6}(-\d{6})?|unit-\d{6}\.(" + "|".join(TABLES) + r"))(\.[0-9a-f]{12})?\.parquet$")
_OUR_RECORD = re.compile(r"^(unit-\d{6}\.json|group-\d{6}-\d{6}\.json|source\.json|started\.json)$")


def sweep_source(out: str, source: str, keep: set[str] | None = None, records: bool = False) -> int:
    """Object stores: remove the source's parts (and with records=True its records) that are not
    in `keep` (full names); only names of the tool's own patterns are touched. Returns how many."""
    st = open_store(out)
    n = 0
    keep = keep or set()
    for folder in source_folders(out, source):
        for name in st.list(folder):
            full = f"{folder}/{name}"
            if full in keep:
                continue
            if _OUR_PART.match(name) or (records and _OUR_RECORD.match(name)):
                st.delete(full)
                n += 1
    return n


def remove_source(out: str, source: str) -> None:
    """Forget a source: remove the files the tool wrote for it (parts, staging parts, records)
    and then its folders if they are empty. Nothing else is touched, links are not followed."""
    if is_remote(out):
        st = open_store(out)
        st.delete(source_record_path(out, source))  # first: readers stop trusting its parts
        sweep_source(out, source, records=True)
        return
    for folder in source_folders(out, source):
        if not _real_dir(folder):
            continue
        with os.scandir(folder) as it:
            for entry in it:
                if entry.is_file(follow_symlinks=False) and entry.name.startswith(_OUR_FILES + (TEMP_PREFIX,)):
                    os.remove(entry.path)
        try:
            os.rmdir(folder)
        except OSError:
            pass
