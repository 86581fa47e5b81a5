"""The records of OUT's manifest: what they hold (typed), and their encoding as JSON that
carries its own checksum.

A record decides what is reused and how games are numbered (a flipped digit in a unit's game
count would shift every later game_index), so each one carries the SHA-256 of its canonical
form; one that does not parse or does not match raises DamagedRecord and is treated as absent
by the engine (its work is redone, or restored from the source record's copy).

A finished source's record (`source.json`) lists the files of its tables under "files", one
entry per group of consecutive units (a unit's own parts, or a compacted file of many):

    {"units": [first, end), "games": [first game_index, end), "tables": {
        "games": {"path": "games/source=x/part-000000.<token>.parquet", "rows": 6100,
                  "bytes": 812345, "sha256": "..."}, "verdicts": {...}, "events": {...}}}
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypedDict

from analyzer.errors import DamagedRecord

FORMAT = 3  # 3: table files under tokens, intents, input SHA-256; 2: "files" listed; 1: unit parts only
RECORD_SUM = "_sha256"


class FileCheck(TypedDict, total=False):
    """A table file as it was written: its rows, bytes and SHA-256."""

    rows: int
    bytes: int
    sha256: str


class FileDesc(FileCheck, total=False):
    path: str  # relative to OUT


class FileEntry(TypedDict):
    """The files of one group of consecutive units, one per table."""

    units: list[int]  # [first, end)
    games: list[int]  # [first, end) game_index
    tables: dict[str, FileDesc]


class UnitRecord(TypedDict, total=False):
    """One finished work unit: what it read, what it wrote, what it counted."""

    source: str
    unit: int
    game_type: str
    games: int
    rows: int
    text_bytes: int
    text_start: int | None
    input_bytes: int
    frame_text_bytes: int | None
    first_frame: int | None
    end_frame: int | None
    damage: list[str]
    counts: dict[str, dict[str, int]]
    seconds: float
    fingerprint: dict[str, Any]
    input: dict[str, Any]  # the input's identity (io.sources.InputInfo.identity)
    parts: dict[str, str]  # table -> name of its part (relative to OUT)
    checks: dict[str, FileCheck]  # table -> its part as written
    finalized: list[int]  # [game_base, text_start] once its parts carry the source's numbering
    group: list[int]  # [first, end) units whose compacted files hold its rows (written there directly)
    input_prefix: str  # a stream input's bytes read up to the unit's cut, their SHA-256 (UnitSpec.input_prefix)
    _held: tuple  # (in memory only, never written) a held unit's tables, one per TABLES


class StartedRecord(TypedDict, total=False):
    """What a run says of a source it started (readers estimate an unfinished source's size)."""

    source: str
    input: dict[str, Any]
    units: int | None
    editions: list[str]
    command: list[str] | None
    rerun_args: list[str] | None  # the options a rerun must repeat (engine.verify's repair line)
    cwd: str
    started: str


class SourceRecord(TypedDict, total=False):
    """A finished source: the commit of its tables."""

    format: int
    source: str
    input: dict[str, Any]
    input_sha256: str | None  # of the input's bytes as read (None: not hashed, e.g. a URL read by frames)
    settings: dict[str, Any]
    editions: list[str]
    edition_params: dict[str, Any]
    units: list[UnitRecord]
    files: list[FileEntry]
    games: int
    rows: int
    command: list[str] | None
    rerun_args: list[str] | None
    cwd: str


class IntentRecord(TypedDict):
    """The files a writer is about to create (written before them): a file that a killed run
    created and no later record names is still known to be the analyzer's."""

    run: str
    files: list[str]


def sha256_of_bytes(data) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def encode(obj) -> bytes:
    """A record as JSON with its checksum."""
    if isinstance(obj, dict):
        body = {k: v for k, v in obj.items() if k != RECORD_SUM and not k.startswith("_held")}
        obj = {**body, RECORD_SUM: sha256_of_bytes(_canonical(body))}
    return json.dumps(obj, indent=1, sort_keys=True).encode()


def decode(data: bytes, name: str = "record"):
    """The record in `data`; DamagedRecord if it does not parse or its checksum does not match."""
    try:
        obj = json.loads(data)
    except ValueError as exc:  # (UnicodeDecodeError included)
        raise DamagedRecord(f"{name}: does not parse as JSON ({exc}): damaged", name) from None
    if isinstance(obj, dict) and RECORD_SUM in obj:
        want = obj.pop(RECORD_SUM)
        if sha256_of_bytes(_canonical(obj)) != want:
            raise DamagedRecord(f"{name}: its checksum does not match its content (damaged)", name)
    if not isinstance(obj, dict):
        raise DamagedRecord(f"{name}: not a record (a JSON {type(obj).__name__})", name)
    return obj
