"""Writing files atomically: a temporary name, then a rename, so an interrupted run (SIGINT,
SIGTERM, kill -9) never leaves a partial file under a final name.

On an object store (OUT is a URL: engine.store.ObjectStore) there is no rename: a part is
written once, whole, under a name of its own (`write_table` returns it) and is committed by the
record that names it; a JSON record is one PUT, which object stores apply whole or not at all."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.engine.layout import temp_path
from analyzer.engine.manifest import decode_record, describe, encode_record
from analyzer.engine.store import ObjectStore, is_remote, parquet_options, table_bytes

__all__ = ["HeldPart", "PartWriter", "parquet_options", "read_json", "write_json", "write_table"]


def _object_store(path: str) -> ObjectStore:
    return ObjectStore(path)


def _discard(tmp: str) -> None:
    try:
        os.remove(tmp)
    except OSError:
        pass


def write_table(table: pa.Table, path: str) -> tuple[str, dict]:
    """A Parquet file at `path`, complete or not at all; returns the name written (`path`, or
    on an object store a name of its own next to it, committed by the record that names it)
    and its description (rows, bytes, SHA-256: engine.manifest)."""
    if is_remote(path):
        st = _object_store(path)
        name = st.committed_name(path)
        data = table_bytes(table)
        st.put(name, data)
        return name, describe(name, table.num_rows, data)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_path(path)
    try:
        pq.write_table(table, tmp, **parquet_options(table.schema))
        desc = describe(tmp, table.num_rows)
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    return path, desc


def write_json(obj, path: str) -> None:
    """A JSON record at `path`, complete (and on disk) or not at all, with its checksum
    (engine.manifest.encode_record)."""
    data = encode_record(obj)
    if is_remote(path):
        _object_store(path).put(path, data)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def read_json(path: str):
    """A record written by write_json; ValueError if it is damaged (OSError if absent)."""
    if is_remote(path):
        return decode_record(_object_store(path).get(path))
    with open(path, "rb") as fh:
        return decode_record(fh.read())


class PartWriter:
    """Collects a unit's blocks into one Parquet file, written under a temporary name (on an
    object store: in memory, then one PUT under a name of its own, `self.name`)."""

    def __init__(self, path: str, schema: pa.Schema):
        self.path = path
        self.name = path
        self.rows = 0
        self.description: dict = {}  # rows, bytes, SHA-256 once closed (engine.manifest)
        self.store: ObjectStore | None = None  # set on an object store
        self.tmp: str | None = None  # set on a local file system
        if is_remote(path):
            self.store = _object_store(path)
            self.name = self.store.committed_name(path)
            self.buf = pa.BufferOutputStream()
            self.writer = pq.ParquetWriter(self.buf, schema, **parquet_options(schema))
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.tmp = temp_path(path)
        self.writer = pq.ParquetWriter(self.tmp, schema, **parquet_options(schema))

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.writer.write_table(table)
            self.rows += table.num_rows

    def close(self) -> None:
        self.writer.close()
        if self.store is not None:
            data = self.buf.getvalue().to_pybytes()
            self.store.put(self.name, data)
            self.description = describe(self.name, self.rows, data)
            return
        assert self.tmp is not None  # local file system: __init__ named the temporary file
        self.description = describe(self.tmp, self.rows)
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
            if self.tmp is not None:
                _discard(self.tmp)


class HeldPart:
    """In-memory stand-in for PartWriter: a unit's blocks stay in memory until its global
    numbering is known and the final part is written once (engine.numbering)."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.tables: list[pa.Table] = []
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.tables.append(table)
            self.rows += table.num_rows

    def table(self) -> pa.Table:
        return pa.concat_tables(self.tables) if self.tables else self.schema.empty_table()

    def close(self) -> None:
        pass

    def abort(self) -> None:
        self.tables = []
