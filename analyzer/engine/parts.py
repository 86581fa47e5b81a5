"""Writing files atomically: a temporary name, then a rename, so an interrupted run (SIGINT,
SIGTERM, kill -9) never leaves a partial file under a final name."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.engine.layout import temp_path


def parquet_options(schema: pa.Schema) -> dict:
    """zstd; Parquet dictionary encoding for the text columns only and min/max statistics for
    the numeric ones only: ~20% less time per part and smaller files (statistics of names and
    codes, which every part spans, would not prune anything)."""
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    other = [f.name for f in schema if f.name not in text]
    return {"compression": "zstd", "use_dictionary": text, "write_statistics": other}


def _discard(tmp: str) -> None:
    try:
        os.remove(tmp)
    except OSError:
        pass


def write_table(table: pa.Table, path: str) -> None:
    """A Parquet file at `path`, complete or not at all."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_path(path)
    try:
        pq.write_table(table, tmp, **parquet_options(table.schema))
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def write_json(obj, path: str) -> None:
    """A JSON file at `path`, complete (and on disk) or not at all."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def read_json(path: str):
    with open(path) as fh:
        return json.load(fh)


class PartWriter:
    """Collects a unit's blocks into one Parquet file, written under a temporary name."""

    def __init__(self, path: str, schema: pa.Schema):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.tmp = temp_path(path)
        self.writer = pq.ParquetWriter(self.tmp, schema, **parquet_options(schema))
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.writer.write_table(table)
            self.rows += table.num_rows

    def close(self) -> None:
        self.writer.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
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
