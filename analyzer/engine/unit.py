"""Running one unit (in-process, in a worker thread or process, or on a Dask worker): its
text -> the games and events tables of its games, and a record of what it did."""

from __future__ import annotations

import json
import time
import traceback

import numpy as np
import pyarrow as pa

from analyzer import arrow_compute as ac, tables
from analyzer.engine.config import READ_CHUNK, Config, UnitSpec, unit_fingerprint, version
from analyzer.engine.dataset import TABLES, TableWriter
from analyzer.engine.region import RegionAnalyzer
from analyzer.io import remote, sources


class HeldPart:
    """In-memory stand-in for a TableWriter: a unit's blocks stay in memory until its global
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


def _feed_frames(spec: UnitSpec, ra: RegionAnalyzer, info: dict, storage_options: dict) -> str | None:
    """Feed a frame unit's text: from its first strong game start (unless it holds frame 0) to
    the first strong game start at or after the end of its last frame. Returns a damage
    message when the text after the unit's frames could not be read to its end."""
    assert spec.frames is not None  # called for frame units only
    frames = [sources.Frame(o, s) for o, s in spec.frames]  # frame spec.frame_base + j (extended by iter_frames)
    if spec.first_frame > 0:
        ra.start_inside()
    local = 0  # text bytes decoded from the unit's own frames
    size = spec.input_size if spec.input_size >= 0 else None
    it = sources.iter_frames(
        spec.path, frames, spec.first_frame, spec.end_frame, spec.frame_base, size, storage_options=storage_options
    )
    for i, text in it:
        if i == spec.end_frame:
            ra.set_end(local)
        if isinstance(text, Exception):
            msg = (
                f"zstd frame {i} at file offset {frames[i - spec.frame_base].offset} is damaged ({text}); "
                f"its games are lost"
            )
            info.setdefault("damaged_frames", []).append(msg)
            if i >= spec.end_frame:
                return msg
            ra.gap(msg)
            continue
        if i < spec.end_frame:
            local += len(text)
        ra.feed(text)
        if ra.done:
            break
    info["frame_text_bytes"] = local
    return None


def provenance(spec: UnitSpec) -> dict:
    """Key-value metadata every Parquet file of the unit carries: which version wrote it, from
    which input, under which editions."""
    eds = {e.id: e.fingerprint() for e in spec.editions}
    return {
        "analyzer.version": version(),
        "analyzer.source": spec.source,
        "analyzer.game_type": spec.game_type,
        "analyzer.input_path": sources.text_name(spec.path),
        "analyzer.input_size": str(spec.input_size),
        "analyzer.editions": json.dumps(eds, sort_keys=True),
    }


def _read_text_range(spec: UnitSpec, storage_options: dict):
    """The text of a unit described by its byte range of an uncompressed input (Dask and
    process pools: the text is read where the unit runs, not shipped to it)."""
    assert spec.text_range is not None  # called for units described by a byte range only
    start, end = spec.text_range
    if remote.is_url(spec.path):
        fs = remote.filesystem(spec.path, storage_options)
        for a in range(start, end, remote.STREAM_BLOCK):
            yield remote.read_range(spec.path, a, min(a + remote.STREAM_BLOCK, end), fs)
        return
    with open(spec.path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            piece = fh.read(min(READ_CHUNK, left))
            if not piece:
                raise OSError(
                    f"{spec.path}: ends at byte {end - left}, before the unit's end {end} (changed since planned?)"
                )
            left -= len(piece)
            yield piece


def run_unit(spec: UnitSpec, cfg: Config, hold: bool = False) -> dict:
    """Analyze one unit and write its staging parts and record; return the record.

    hold=True (in-process engines): write nothing; the record carries the tables (one per
    layout.TABLES) under "_held", and the caller writes the final parts once the unit's
    numbering is known."""
    t0 = time.time()
    meta = provenance(spec)
    schemas = [tables.SCHEMAS[t].with_metadata(meta) for t in TABLES]
    held: list[HeldPart] = []  # hold: the tables stay in memory
    staged: list[TableWriter] = []  # else: written to staging parts
    if hold:
        held = [HeldPart(s) for s in schemas]
    else:
        staged = cfg.dataset.unit_writers(spec.source, spec.index, schemas, staging=True)
    writers: list[HeldPart | TableWriter] = [*held, *staged]
    counts: dict = {"status": {}, "events": {}, "rules": {}, "outcomes": {}}

    def sink(*parts: pa.Table) -> None:
        count(counts, *parts)
        for w, t, s in zip(writers, parts, schemas):
            w.write(t.replace_schema_metadata(s.metadata))

    info: dict = {}
    try:
        ra = RegionAnalyzer(
            game_type=spec.game_type,
            source=spec.source,
            editions=spec.editions,
            sink=sink,
            block_size=cfg.block_size,
            max_game_bytes=cfg.max_game_bytes,
            options={**spec.options, **cfg.kind_options(spec.game_type)},
            game_starts=spec.game_starts,
            ends_input=spec.ends_input,
        )
        reason = None
        if spec.frames is not None:
            reason = _feed_frames(spec, ra, info, cfg.storage_options)
        else:
            if spec.leading_fragment:
                ra.start_inside(after_oversized=True)
            if spec.row_groups is not None:  # a Parquet source's unit: its row groups' text
                from analyzer.io import hf_parquet

                pieces = hf_parquet.row_group_texts(spec.row_groups, cfg.storage_options)
            elif spec.text_range is not None:
                pieces = _read_text_range(spec, cfg.storage_options)
            else:
                pieces = spec.payload
            for piece in pieces or []:
                view = memoryview(piece)
                for k in range(0, len(piece), READ_CHUNK):
                    ra.feed(view[k : k + READ_CHUNK])
            reason = spec.damage
        stats = ra.finish(truncated_reason=reason, oversized_tail=spec.trailing_fragment)
        for group, named in stats.notes.items():  # e.g. tablebase probes, by status
            into = counts.setdefault(group, {})
            for name, n in named.items():
                _add(into, name, n)
        for w in writers:
            w.close()
    except BaseException:
        for w in writers:
            w.abort()
        raise
    record = {
        "source": spec.source,
        "unit": spec.index,
        "game_type": spec.game_type,
        "games": stats.games,
        "rows": writers[0].rows,
        "text_bytes": stats.text_bytes,
        "text_start": spec.text_start,
        "input_bytes": spec.input_bytes,
        "frame_text_bytes": info.get("frame_text_bytes"),
        "first_frame": spec.first_frame if spec.frames is not None else None,
        "end_frame": spec.end_frame if spec.frames is not None else None,
        "damage": sorted(set(stats.damage + info.get("damaged_frames", []))),
        "counts": counts,
        "seconds": round(time.time() - t0, 3),
        "fingerprint": unit_fingerprint(cfg, spec.editions),
    }
    if spec.input_prefix is not None:
        record["input_prefix"] = spec.input_prefix
    if hold:
        record["_held"] = tuple(w.table() for w in held)
        return record
    cfg.dataset.name_parts(record, [w.description for w in staged])  # type: ignore[arg-type]
    cfg.dataset.write_unit_record(record)  # type: ignore[arg-type]
    return record


def run_unit_safe(spec: UnitSpec, cfg: Config, hold: bool = False) -> dict:
    """A worker entry point that never raises: failures come back as records."""
    try:
        return run_unit(spec, cfg, hold=hold)
    except KeyboardInterrupt:
        raise  # Ctrl-C, SIGTERM, SIGHUP (cli.Stopped): the run stops, it is not a failed unit
    except BaseException as exc:  # noqa: BLE001 - reported per unit, the run goes on
        return {
            "source": spec.source,
            "unit": spec.index,
            "failed": True,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }


def run_unit_with_payload(spec: UnitSpec, cfg: Config, payload: list) -> dict:
    """run_unit_safe for a unit whose text was sent to the worker apart from its description."""
    import dataclasses

    return run_unit_safe(dataclasses.replace(spec, payload=payload), cfg)


RULE_COLUMNS = (
    "first_threefold_claim_ply",
    "first_fifty_claim_ply",
    "first_fivefold_ply",
    "first_seventyfive_ply",
    "first_missed_claim_ply",
    "first_avoided_claim_ply",
    "first_balance_ply",
    "first_kings_vs_king_ply",
    "first_main_diagonal_ply",
    "first_small_ending_ply",
)


def _codes(arr: pa.DictionaryArray):
    """(codes as numpy, dictionary values as a list) of a dictionary column chunk without nulls."""
    return arr.indices.to_numpy(zero_copy_only=False), arr.dictionary.to_pylist()


def _add(table: dict, key: str, n) -> None:
    if n:
        table[key] = table.get(key, 0) + int(n)


def _count_combined(into: dict, columns: list) -> None:
    """Count rows per combination of dictionary columns (codes, no per-row strings); nulls are
    counted under "-"."""
    codes_, names = [], []
    for col in columns:
        c = ac.fill_null(col.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        codes_.append(c)
        names.append(["-"] + col.dictionary.to_pylist())
    key = np.zeros(len(codes_[0]), np.int64)
    for c, nm in zip(codes_, names):
        key = key * len(nm) + c
    sizes = [len(nm) for nm in names]
    for k, n in enumerate(np.bincount(key, minlength=int(np.prod(sizes)))):
        if n:
            parts = []
            for size, nm in zip(reversed(sizes), reversed(names)):
                k, r = divmod(k, size)
                parts.append(nm[r])
            _add(into, ":".join(reversed(parts)), n)


def count(counts: dict, games: pa.Table, verdicts: pa.Table, events: pa.Table) -> None:
    """Add a block's status, rule, event and outcome counts to the unit's record: counted over
    the dictionary codes with numpy, no per-row strings (this runs under the GIL per block)."""
    for batch in games.to_batches():
        # games with a Site / GameURL tag: what a Lichess dump's counts.txt counts (engine.sync)
        tags = counts.setdefault("tags", {})
        for tag, column in (("Site", "site"), ("GameURL", "game_url")):
            _add(tags, tag, batch.num_rows - batch.column(column).null_count)
        st_codes, st_names = _codes(batch.column("status"))
        for name, n in zip(st_names, np.bincount(st_codes, minlength=len(st_names))):
            _add(counts["status"], name, n)
        if batch.num_rows:  # games per platform: the summary names the edition in force for each
            _count_combined(counts.setdefault("platforms", {}), [batch.column("platform")])
    for batch in verdicts.to_batches():
        ed_codes, ed_names = _codes(batch.column("edition"))
        for colname in RULE_COLUMNS:
            valid = ac.is_valid(batch.column(colname)).to_numpy(zero_copy_only=False)
            for name, n in zip(ed_names, np.bincount(ed_codes[valid], minlength=len(ed_names))):
                _add(counts["rules"], f"{name}:{colname}", n)
        if batch.num_rows:  # games per edition and first automatic draw (end_rule; "-": none)
            _count_combined(counts.setdefault("ends", {}), [batch.column("edition"), batch.column("end_rule")])
    for batch in events.to_batches():
        if batch.num_rows:
            _count_combined(counts["events"], [batch.column("edition"), batch.column("rule"), batch.column("kind")])
            _count_combined(
                counts["outcomes"], [batch.column("edition"), batch.column("rule"), batch.column("outcome")]
            )
