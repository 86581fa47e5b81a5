"""The dataset at rest: which files make up each table, and whether they are still what was
written.

Every Parquet file the tool commits is described where it is committed, by its rows, its bytes
and a SHA-256 of its content, measured as it is written (`describe`): a unit record names its
unit's parts (`rec["parts"]`, `rec["checks"]`), and a finished source's record
(`_manifest/<dir>/source.json`) lists the files of its tables under "files", one entry per group
of consecutive units (a unit's own parts, or a compacted file of many units):

    {"units": [first, end), "games": [first game_index, end), "tables": {
        "games": {"path": "games/source=x/part-000000.parquet", "rows": 6100, "bytes": 812345,
                  "sha256": "..."}, "verdicts": {...}, "events": {...}}}

Readers serve only files that a source record lists (`committed`); a rerun and `analyzer verify`
check them against their description (`check_file`): cheaply (the file exists, has its size and
the row count in its footer) or deeply (its SHA-256 and every page read with its checksum).
Damage is reported by unit range, which is what a rerun recomputes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os

import pyarrow.parquet as pq

from analyzer.engine import layout
from analyzer.engine.store import is_remote, open_store

log = logging.getLogger("analyzer")

FORMAT = 2  # source records with "files"; records without it (format 1) name unit parts only
HASH_CHUNK = 8 << 20


def sha256_of_bytes(data) -> str:
    return hashlib.sha256(data).hexdigest()


# -- records: JSON that carries its own checksum -------------------------------------------------
#
# A record decides what is reused and how games are numbered: a flipped digit in a unit's game
# count would shift every later game_index. Each record carries the SHA-256 of its canonical
# form, and one that does not match is treated as absent (its work is redone).

RECORD_SUM = "_sha256"


def _canonical(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def encode_record(obj) -> bytes:
    if isinstance(obj, dict):
        body = {k: v for k, v in obj.items() if k != RECORD_SUM}
        obj = {**body, RECORD_SUM: sha256_of_bytes(_canonical(body))}
    return json.dumps(obj, indent=1, sort_keys=True).encode()


def decode_record(data: bytes):
    """The record in `data`; ValueError if it does not parse or its checksum does not match."""
    obj = json.loads(data)
    if isinstance(obj, dict) and RECORD_SUM in obj:
        want = obj.pop(RECORD_SUM)
        if sha256_of_bytes(_canonical(obj)) != want:
            raise ValueError("the record's checksum does not match its content (damaged)")
    return obj


def describe(path: str, rows: int, data: bytes | None = None) -> dict:
    """The description of a file just written at `path` (local) or from `data` (the bytes put
    on an object store): rows, bytes, SHA-256."""
    if data is not None:
        return {"rows": rows, "bytes": len(data), "sha256": sha256_of_bytes(data)}
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return {"rows": rows, "bytes": size, "sha256": h.hexdigest()}


# -- source records ------------------------------------------------------------------------------


def read_source_record(out: str, source_dir: str) -> dict | None:
    """The record of a finished source (by its folder name), or None if it has none."""
    st = open_store(out)
    path = _join(out, "_manifest", source_dir, "source.json")
    try:
        return decode_record(st.get(path))
    except FileNotFoundError:
        return None


def _join(out: str, *parts: str) -> str:
    return "/".join((out.rstrip("/"), *parts)) if is_remote(out) else os.path.join(out, *parts)


def manifest_dirs(out: str) -> list[str]:
    """The source folders under OUT/_manifest (every source a run started)."""
    st = open_store(out)
    folder = _join(out, "_manifest")
    if is_remote(out):
        return list(st.folders(folder))
    if not os.path.isdir(folder):
        return []
    with os.scandir(folder) as it:
        return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))


def unit_files(out: str, rec: dict) -> dict:
    """The file entry of one unit's own final parts (paths relative to OUT)."""
    names = rec.get("parts") or {
        t: layout.rel(out, p) for t, p in zip(layout.TABLES, layout.final_paths(out, rec["source"], rec["unit"]))
    }
    checks = rec.get("checks") or {}
    tables = {t: {"path": names[t], **checks.get(t, {})} for t in layout.TABLES}
    return {"units": [rec["unit"], rec["unit"] + 1], "tables": tables}


def files_of(out: str, record: dict) -> list[dict]:
    """A source record's file entries ("files"; for a format-1 record, one per unit from its
    unit records), each with "games" [first, end) game_index."""
    if "files" in record:
        return record["files"]
    out_files = []
    base = 0
    for rec in record.get("units", []):
        entry = unit_files(out, rec)
        entry["games"] = [base, base + rec["games"]]
        base += rec["games"]
        out_files.append(entry)
    return out_files


# -- what readers may read --------------------------------------------------------------------


class DatasetError(Exception):
    """OUT's tables cannot be served as they are (damaged, missing or partial): a message for
    the user that says how to repair it."""


@dataclasses.dataclass
class SourceState:
    """What OUT holds of one source: finished (a source record) or not; its committed files."""

    dir: str
    name: str
    complete: bool
    record: dict | None
    files: list[dict]  # file entries (committed: a finished source's; else its finalized units')
    games: int  # games in those files
    expected_games: int | None  # a finished source's games; an unfinished one's estimate (None: unknown)
    note: str = ""


def _unfinished(out: str, d: str) -> SourceState:
    """A source a run started and did not finish (or whose record is lost): its partial content
    is its first units, as far as each one's games are in files that exist: a compacted group
    (its group record) or the unit's own final parts (numbered in the whole source)."""
    st = open_store(out)
    folder = _join(out, "_manifest", d)
    recs = {}
    groups = {}
    for name in st.list(folder):
        if not name.endswith(".json") or not name.startswith(("unit-", "group-")):
            continue
        try:
            rec = decode_record(st.get(_join(folder, name)))
        except (ValueError, FileNotFoundError):
            continue
        if name.startswith("group-"):
            groups[rec["units"][0]] = rec
        else:
            recs[rec["unit"]] = rec
    started = None
    try:
        started = decode_record(st.get(_join(folder, "started.json")))
    except (FileNotFoundError, ValueError):
        pass
    files = []
    base = 0
    read_bytes = 0
    k = 0
    while True:
        group = groups.get(k)
        if group is not None and group["games"][0] == base and _exists(out, group):
            files.append(group)
            for u in range(*group["units"]):
                read_bytes += (recs.get(u) or {}).get("input_bytes") or 0
            base, k = group["games"][1], group["units"][1]
            continue
        rec = recs.get(k)
        if rec is None or not rec.get("finalized") or rec["finalized"][0] != base:
            break
        entry = unit_files(out, rec)
        if not _exists(out, entry):
            break
        entry["games"] = [base, base + rec["games"]]
        files.append(entry)
        base += rec["games"]
        read_bytes += rec.get("input_bytes") or 0
        k += 1
    name = (started or {}).get("source") or next((r["source"] for r in recs.values()), d)
    size = ((started or {}).get("input") or {}).get("size")
    expected = None
    if isinstance(size, int) and size > 0 and read_bytes > 0:
        expected = round(base * size / read_bytes)
    note = f"{k} of {(started or {}).get('units') or '?'} unit(s) in its files so far"
    return SourceState(d, name, False, None, files, base, expected, note)


def _exists(out: str, entry: dict) -> bool:
    """Every file of a file entry is there with its recorded size (a cheap look)."""
    if is_remote(out):
        st = open_store(out)
        return all(st.exists(_join(out, desc["path"])) for desc in entry["tables"].values())
    return all(_stat_problem(_join(out, desc["path"]), desc) is None for desc in entry["tables"].values())


def stale_records(out: str, name: str, record: dict) -> list[tuple[str, dict]]:
    """(path, content) of the unit and group records of a finished source that are missing,
    damaged or differ from the copies its record holds: what verify reports and a rerun
    writes again."""
    st = open_store(out)
    wanted = [(layout.unit_record_path(out, name, r["unit"]), r) for r in record.get("units", [])]
    wanted += [(layout.group_record_path(out, name, *e["units"]), e) for e in record.get("files", [])]
    stale = []
    for path, want in wanted:
        try:
            if decode_record(st.get(path)) == want:
                continue
        except (OSError, ValueError):
            pass
        stale.append((path, want))
    return stale


def sources(out: str) -> list[SourceState]:
    """Every source OUT holds, finished or not, in folder order."""
    found = []
    for d in manifest_dirs(out):
        try:
            rec = read_source_record(out, d)
        except ValueError as exc:  # damaged: its units are what a rerun can check and resume
            state = _unfinished(out, d)
            state.note = f"its source record is damaged ({exc}); " + state.note
            found.append(state)
            continue
        if rec is None:  # a run started it (a folder of its records) and did not finish
            found.append(_unfinished(out, d))
            continue
        name = rec.get("source") or (rec.get("units") or [{}])[0].get("source", d)
        found.append(SourceState(d, name, True, rec, files_of(out, rec), rec.get("games", 0), rec.get("games")))
    return found


def committed(
    out: str, table: str, partial: bool = False, check: bool = True, states: list[SourceState] | None = None
) -> dict[str, list[str]]:
    """Source name -> the files of `table` that OUT commits for it, in game order: the finished
    sources' (and with partial=True also the finalized units of unfinished ones). With check,
    each file is stat'ed first (local OUT): a missing or resized file raises DatasetError, so
    that no damaged table is served. `states`: sources(out), when the caller has read them."""
    out_files: dict[str, list[str]] = {}
    damaged = []
    for state in sources(out) if states is None else states:
        if not state.complete and not partial:
            continue
        paths = []
        for entry in state.files:
            desc = entry["tables"][table]
            path = _join(out, desc["path"])
            if check and not is_remote(out):
                problem = _stat_problem(path, desc)
                if problem:
                    damaged.append(f"{state.name}: {desc['path']}: {problem}")
                    continue
            paths.append(path)
        out_files[state.name] = paths
    if damaged:
        raise DatasetError(
            f"{out}: {len(damaged)} damaged or missing file(s) ({'; '.join(damaged[:5])}"
            f"{'; ...' if len(damaged) > 5 else ''}); `analyzer verify {out}` lists them and the command that "
            f"repairs them"
        )
    return out_files


def incomplete(out: str, states: list[SourceState] | None = None) -> list[SourceState]:
    return [s for s in (sources(out) if states is None else states) if not s.complete]


# -- checking files against their description ------------------------------------------------


def _stat_problem(path: str, desc: dict) -> str | None:
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if "bytes" in desc and size != desc["bytes"]:
        return f"{size:,} bytes instead of {desc['bytes']:,} (truncated or changed)"
    return None


def check_file(out: str, desc: dict, deep: bool = False) -> str | None:
    """None if the file is what its description says; else what is wrong with it. Cheap: it
    exists, has its size and its footer's row count; deep: also its SHA-256, and every page
    decodes with its checksum verified."""
    path = _join(out, desc["path"])
    st = open_store(out)
    if is_remote(out):
        try:
            size = st.size(path)
        except FileNotFoundError:
            return "missing"
        if "bytes" in desc and size != desc["bytes"]:
            return f"{size:,} bytes instead of {desc['bytes']:,} (truncated or changed)"
    else:
        problem = _stat_problem(path, desc)
        if problem:
            return problem
    try:
        rows = st.num_rows(path)
    except Exception as exc:  # noqa: BLE001 - any footer that does not parse is damage
        return f"unreadable footer ({type(exc).__name__}: {exc})"
    if "rows" in desc and rows != desc["rows"]:
        return f"{rows:,} rows in its footer instead of {desc['rows']:,}"
    if not deep:
        return None
    data = st.get(path)
    if "sha256" in desc and sha256_of_bytes(data) != desc["sha256"]:
        return "content changed (SHA-256 differs from the one recorded when it was written)"
    try:
        import pyarrow as pa

        pf = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
        for i in range(pf.num_row_groups):  # a row group at a time: a compacted file is 1 M games
            pf.read_row_group(i)
    except Exception as exc:  # noqa: BLE001 - a page that does not decode is damage
        return f"a page does not decode ({type(exc).__name__}: {exc})"
    return None


def unit_parts_problem(out: str, rec: dict, deep: bool = False) -> str | None:
    """None if the parts a unit record names (staging or final) are what it recorded; else
    what is wrong (records of older versions, without descriptions: the parts exist)."""
    checks = rec.get("checks") or {}
    for t, path in zip(layout.TABLES, layout.committed_parts(out, rec["source"], rec)):
        desc = {"path": layout.rel(out, path), **checks.get(t, {})}
        problem = check_file(out, desc, deep) if checks else (None if open_store(out).exists(path) else "missing")
        if problem:
            return f"{desc['path']}: {problem}"
    return None


@dataclasses.dataclass
class Damage:
    source: str
    units: tuple[int, int]  # [first, end) units of the damaged file's group
    path: str
    problem: str


def check_source(out: str, state: SourceState, deep: bool = False) -> list[Damage]:
    """Every committed file of a source against its description."""
    found = []
    for entry in state.files:
        for t in layout.TABLES:
            desc = entry["tables"][t]
            problem = check_file(out, desc, deep)
            if problem:
                found.append(Damage(state.name, (entry["units"][0], entry["units"][1]), desc["path"], problem))
    return found


def damaged_units(damage: list[Damage]) -> set[int]:
    units: set[int] = set()
    for d in damage:
        units.update(range(d.units[0], d.units[1]))
    return units


def unlisted_files(out: str, state: SourceState) -> list[str]:
    """Part files of the tool's naming in the source's table folders that its record does not
    list (left by an interrupted compaction or repair): readers of the folder would count them."""
    if is_remote(out) or not state.complete:
        return []
    listed = {os.path.normpath(_join(out, e["tables"][t]["path"])) for e in state.files for t in layout.TABLES}
    found = []
    for t in layout.TABLES:
        folder = os.path.join(out, t, f"source={state.dir}")
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        with os.scandir(folder) as it:
            for e in it:
                if layout.is_part_name(e.name) and os.path.normpath(e.path) not in listed:
                    found.append(layout.rel(out, e.path))
    return sorted(found)


# -- reading in bounded pieces ---------------------------------------------------------------


@dataclasses.dataclass
class Chunk:
    """A piece of one source's tables for a reader that must not hold the whole source: the
    files of each table that hold games [first, end), and whether rows outside that range are
    in them too (then the reader filters on game_index: the files are sorted by it and their
    row groups carry its statistics, so the other row groups are not read)."""

    source: str
    files: dict[str, list[str]]
    games: tuple[int, int]
    filtered: bool


def chunks(out: str, max_games: int, partial: bool = False) -> list[Chunk]:
    """OUT's committed files in pieces of at most about max_games games: small files (one per
    unit) grouped, large ones (compacted) cut by game_index ranges."""
    found: list[Chunk] = []
    states = sources(out)
    by_source = committed(out, "games", partial=partial, states=states)  # raises DatasetError on damage
    for state in states:
        if state.name not in by_source or (not state.complete and not partial):
            continue
        group: list[dict] = []
        for entry in [*state.files, None]:
            size = (entry["games"][1] - entry["games"][0]) if entry else 0
            held = sum(e["games"][1] - e["games"][0] for e in group)
            if group and (entry is None or held + size > max_games):
                found.append(_chunk(out, state.name, group, (group[0]["games"][0], group[-1]["games"][1]), False))
                group = []
            if entry is None:
                break
            if size > max_games:
                a, b = entry["games"]
                for lo in range(a, b, max_games):
                    found.append(_chunk(out, state.name, [entry], (lo, min(lo + max_games, b)), True))
                continue
            group.append(entry)
    return found


def _chunk(out: str, source: str, entries: list[dict], games: tuple[int, int], filtered: bool) -> Chunk:
    files = {t: [_join(out, e["tables"][t]["path"]) for e in entries] for t in layout.TABLES}
    return Chunk(source, files, games, filtered)
