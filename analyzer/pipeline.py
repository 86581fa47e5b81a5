"""The batch job: plan work units per input, run them (in-process, process pool or Dask),
write one Parquet part per unit, and finalize per source.

Layout under OUT:
  games/source=<name>/part-<unit>.parquet     final tables (global game_index, byte_offset)
  events/source=<name>/part-<unit>.parquet
  _staging/<name>/unit-<unit>.{games,events}.parquet   unit output with unit-local numbering
                                                       (process and Dask engines; the in-process
                                                       engines write final parts directly, in
                                                       unit order: OrderedFinalizer)
  _manifest/<name>/unit-<unit>.json                    one record per finished unit
  _manifest/run.json                                   the last run: inputs, units, counts, versions

Every file is written under a temporary name and renamed when complete, so an interrupted run
(SIGINT, SIGTERM, kill -9) leaves no partial table under a final name, and rerunning the same
command skips the finished units and produces the same tables.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer import tables
from analyzer.io import sources
from analyzer.stream import RegionAnalyzer, find_strong_start

# Text per work unit. Sequential inputs (one reader cuts the text): 16 MiB; larger units hold
# more fresh memory at once (lichess_sample x10, one frame, 1 worker: 64 MiB units 111-119k
# page faults, 580 MB peak; 16 MiB units 62k, 373 MB, 6% less CPU).
UNIT_TEXT_BYTES = 16 << 20
# pzstd inputs: a unit is a run of whole frames, and it also decodes the next frame to finish
# its last game, so frame units are larger: ~64 MiB of text. Their text size is unknown before
# decoding, so by default the frames are grouped by compressed size, at this many text bytes
# per compressed byte (Lichess dumps, level 19: ~6.7; pzstd -1: ~5.3): Lichess's 32 MiB frames
# -> 2 per unit, pzstd -1's 2 MiB frames -> ~30 per unit.
FRAME_UNIT_TEXT_BYTES = 64 << 20
TEXT_PER_COMPRESSED_BYTE = 8
READ_CHUNK = 4 << 20


@dataclass
class Config:
    out: str
    editions: list                     # ChessEdition objects (chess) ; draughts edition ids
    draughts_editions: list = field(default_factory=lambda: ["fshr_russian"])
    block_size: int = 8 << 20
    max_game_bytes: int = 16 << 20
    unit_text_bytes: int = UNIT_TEXT_BYTES               # sequential inputs
    frame_unit_text_bytes: int = FRAME_UNIT_TEXT_BYTES   # pzstd inputs (frames grouped by size)
    frames_per_unit: int | None = None  # pzstd frames per unit; None: by compressed size

    def fingerprint(self) -> dict:
        """What a finished unit must match to be reused by a rerun."""
        return {
            "editions": [e.id if hasattr(e, "id") else e for e in self.editions],
            "edition_params": [asdict(e) for e in self.editions if hasattr(e, "id")],
            "draughts_editions": list(self.draughts_editions),
            "max_game_bytes": self.max_game_bytes,
            "unit_text_bytes": self.unit_text_bytes,
            "frame_unit_text_bytes": self.frame_unit_text_bytes,
            "frames_per_unit": self.frames_per_unit,
            "version": _version(),
        }


def _version() -> str:
    from analyzer import __version__

    return __version__


@dataclass
class UnitSpec:
    """One independent piece of work. `payload` (the text) for sequentially read inputs, or a
    frame range of a pzstd file that the worker decodes itself."""
    source: str
    game_type: str
    index: int
    path: str
    text_start: int | None = None          # global offset of the region (sequential inputs)
    payload: list | None = None            # the text as its read pieces, in order (sequential inputs)
    leading_fragment: bool = False         # region starts inside an oversized game: skip to a game start
    frames: list | None = None             # [(offset, size), ...] of the whole file (frame units)
    first_frame: int = 0
    end_frame: int = 0
    damage: str | None = None              # the input was damaged at the end of this region


# ---------------------------------------------------------------------------------------------
# Writing parts atomically


def _parquet_options(schema: pa.Schema) -> dict:
    """zstd; Parquet dictionary encoding for the text columns only and min/max statistics for
    the numeric ones only: ~20% less time per part and smaller files (statistics of names and
    codes, which every part spans, would not prune anything)."""
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    other = [f.name for f in schema if f.name not in text]
    return {"compression": "zstd", "use_dictionary": text, "write_statistics": other}


def _atomic_write_table(table: pa.Table, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        pq.write_table(table, tmp, **_parquet_options(table.schema))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _atomic_write_json(obj, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class _PartWriter:
    """Collects a unit's blocks into one Parquet file per table, written under a temp name."""

    def __init__(self, path: str, schema: pa.Schema):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.tmp = f"{path}.tmp-{os.getpid()}"
        self.writer = pq.ParquetWriter(self.tmp, schema, **_parquet_options(schema))
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
            if os.path.exists(self.tmp):
                os.remove(self.tmp)


def staging_paths(out: str, source: str, index: int):
    base = os.path.join(out, "_staging", source, f"unit-{index:06d}")
    return f"{base}.games.parquet", f"{base}.events.parquet"


def unit_manifest_path(out: str, source: str, index: int) -> str:
    return os.path.join(out, "_manifest", source, f"unit-{index:06d}.json")


def final_paths(out: str, source: str, index: int):
    return (os.path.join(out, "games", f"source={source}", f"part-{index:06d}.parquet"),
            os.path.join(out, "events", f"source={source}", f"part-{index:06d}.parquet"))


# ---------------------------------------------------------------------------------------------
# Running one unit (in a worker process, a Dask worker, or in-process)


def _feed_frames(spec: UnitSpec, ra: RegionAnalyzer, info: dict) -> str | None:
    """Feed a frame unit's text: from its first strong game start (unless it holds frame 0) to
    the first strong game start at or after the end of its last frame. Returns a damage
    message when the text after the unit's frames could not be read to its end."""
    frames = [sources.Frame(o, s) for o, s in spec.frames]
    if spec.first_frame > 0:
        ra.start_inside()
    local = 0                      # text bytes decoded from the unit's own frames
    for i, text in sources.iter_frames(spec.path, frames, spec.first_frame):
        if i == spec.end_frame:
            ra.set_end(local)
        if isinstance(text, Exception):
            msg = f"zstd frame {i} at file offset {frames[i].offset} is damaged ({text}); its games are lost"
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


class _HeldPart:
    """In-memory stand-in for _PartWriter: the unit's blocks stay in memory until the caller
    knows the unit's global numbering and writes the final part once (OrderedFinalizer)."""

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


def run_unit(spec: UnitSpec, cfg: Config, hold: bool = False) -> dict:
    """Analyze one unit and write its staging parts and manifest record; return the record.

    hold=True (in-process engines): write nothing; the record carries the tables under
    "_held" for an OrderedFinalizer, which writes the final parts directly (no staging
    write, read back and rewrite)."""
    t0 = time.time()
    if hold:
        gw, ew = _HeldPart(tables.GAMES_SCHEMA), _HeldPart(tables.EVENTS_SCHEMA)
    else:
        gpath, epath = staging_paths(cfg.out, spec.source, spec.index)
        gw = _PartWriter(gpath, tables.GAMES_SCHEMA)
        ew = _PartWriter(epath, tables.EVENTS_SCHEMA)
    editions = cfg.editions if spec.game_type == "chess" else cfg.draughts_editions
    counts: dict = {"status": {}, "events": {}, "rules": {}}

    def sink(games: pa.Table, events: pa.Table) -> None:
        _count(counts, games, events)
        gw.write(games)
        ew.write(events)

    info: dict = {}
    try:
        ra = RegionAnalyzer(game_type=spec.game_type, source=spec.source, editions=editions,
                            sink=sink, block_size=cfg.block_size, max_game_bytes=cfg.max_game_bytes)
        reason = None
        if spec.frames is not None:
            reason = _feed_frames(spec, ra, info)
        else:
            if spec.leading_fragment:
                ra.start_inside()
            for piece in spec.payload or []:
                view = memoryview(piece)
                for k in range(0, len(piece), READ_CHUNK):
                    ra.feed(view[k:k + READ_CHUNK])
            reason = spec.damage
        stats = ra.finish(truncated_reason=reason)
        gw.close()
        ew.close()
    except BaseException:
        gw.abort()
        ew.abort()
        raise
    record = {
        "source": spec.source, "unit": spec.index, "game_type": spec.game_type,
        "games": stats.games, "text_bytes": stats.text_bytes, "text_start": spec.text_start,
        "frame_text_bytes": info.get("frame_text_bytes"),
        "first_frame": spec.first_frame if spec.frames is not None else None,
        "end_frame": spec.end_frame if spec.frames is not None else None,
        "damage": sorted(set(stats.damage + info.get("damaged_frames", []))),
        "counts": counts, "seconds": round(time.time() - t0, 3), "fingerprint": cfg.fingerprint(),
    }
    if hold:
        record["_held"] = (gw.table(), ew.table())
        return record
    _atomic_write_json(record, unit_manifest_path(cfg.out, spec.source, spec.index))
    return record


_RULE_COLUMNS = ("first_threefold_claim_ply", "first_fifty_claim_ply", "first_fivefold_ply",
                 "first_seventyfive_ply", "first_missed_claim_ply")


def _codes(arr: pa.DictionaryArray):
    """(codes as numpy, dictionary values as a list) of a dictionary column chunk without nulls."""
    return arr.indices.to_numpy(zero_copy_only=False), arr.dictionary.to_pylist()


def _add(table: dict, key: str, n) -> None:
    if n:
        table[key] = table.get(key, 0) + int(n)


def _count(counts: dict, games: pa.Table, events: pa.Table) -> None:
    """Add a block's status, event and rule counts to the unit's record: counted over the
    dictionary codes with numpy, no per-row strings (this runs under the GIL per block)."""
    import pyarrow.compute as pc

    first = games.column("edition")[0].as_py() if games.num_rows else None
    for batch in games.to_batches():
        ed_codes, ed_names = _codes(batch.column("edition"))
        st_codes, st_names = _codes(batch.column("status"))
        # Games have one row per edition: count each game once (the rows of the first edition).
        if first in ed_names:
            n_status = np.bincount(st_codes[ed_codes == ed_names.index(first)], minlength=len(st_names))
            for name, n in zip(st_names, n_status):
                _add(counts["status"], name, n)
        for colname in _RULE_COLUMNS:
            valid = pc.is_valid(batch.column(colname)).to_numpy(zero_copy_only=False)
            for name, n in zip(ed_names, np.bincount(ed_codes[valid], minlength=len(ed_names))):
                _add(counts["rules"], f"{name}:{colname}", n)
    for batch in events.to_batches():
        ed_codes, ed_names = _codes(batch.column("edition"))
        rule_codes, rule_names = _codes(batch.column("rule"))
        kind_codes, kind_names = _codes(batch.column("kind"))
        nr, nk = len(rule_names), len(kind_names)
        combined = (ed_codes.astype(np.int64) * nr + rule_codes) * nk + kind_codes
        for key, n in enumerate(np.bincount(combined, minlength=len(ed_names) * nr * nk)):
            if n:
                e, rest = divmod(key, nr * nk)
                r, k = divmod(rest, nk)
                _add(counts["events"], f"{ed_names[e]}:{rule_names[r]}:{kind_names[k]}", n)


# ---------------------------------------------------------------------------------------------
# Planning: frame units are known up front; sequential inputs are cut while reading.


def frame_groups(sizes: list[int], cfg: Config) -> list[tuple[int, int]]:
    """[first, end) frame ranges of the units: `cfg.frames_per_unit` frames each, or (None)
    consecutive frames up to ~frame_unit_text_bytes of text, estimated from compressed sizes."""
    if cfg.frames_per_unit:
        step = cfg.frames_per_unit
        return [(a, min(a + step, len(sizes))) for a in range(0, len(sizes), step)]
    budget = max(1, cfg.frame_unit_text_bytes // TEXT_PER_COMPRESSED_BYTE)
    groups = []
    first = 0
    acc = 0
    for i, size in enumerate(sizes):
        acc += size
        if acc >= budget:
            groups.append((first, i + 1))
            first = i + 1
            acc = 0
    if first < len(sizes):
        groups.append((first, len(sizes)))
    return groups


def plan_frame_units(info: sources.InputInfo, frames: list, cfg: Config) -> list[UnitSpec]:
    pairs = [(f.offset, f.size) for f in frames]
    return [UnitSpec(info.name, info.game_type, k, info.path, frames=pairs, first_frame=first, end_frame=end)
            for k, (first, end) in enumerate(frame_groups([f.size for f in frames], cfg))]


def _read_some(stream, n: int):
    """(up to n bytes, exception or None). Reads with read1 where available, so that the text
    decoded before a damaged or truncated spot is kept (gzip/bz2 `read(n)` raise and drop it)."""
    parts = []
    got = 0
    read1 = getattr(stream, "read1", None) or stream.read
    try:
        while got < n:
            c = read1(n - got)
            if not c:
                break
            parts.append(c)
            got += len(c)
    except Exception as exc:  # noqa: BLE001 - zstd/gzip/bz2 damage or truncation
        return b"".join(parts), exc
    return b"".join(parts), None


def _find_cut(pieces: list, pos: int) -> int:
    """find_strong_start over the concatenated pieces, joining only those from pos - 8 on."""
    base = 0
    for i, piece in enumerate(pieces):
        if base + len(piece) > pos - 8:
            s = find_strong_start(b"".join(pieces[i:]), pos - base)
            return -1 if s < 0 else base + s
        base += len(piece)
    return -1


def _split_pieces(pieces: list, s: int) -> tuple[list, list]:
    """The pieces holding text [0, s) and those holding the rest (one piece is sliced)."""
    base = 0
    for i, piece in enumerate(pieces):
        if base + len(piece) >= s:
            cut = s - base
            head = pieces[:i] + ([piece[:cut]] if cut else [])
            tail = ([piece[cut:]] if cut < len(piece) else []) + pieces[i + 1:]
            return head, tail
        base += len(piece)
    return pieces, []


def iter_sequential_units(info: sources.InputInfo, cfg: Config):
    """Read an input once and cut it into units at strong game starts near every
    `unit_text_bytes` of text. Yields UnitSpec with the text as payload: the list of read
    pieces (a unit is never one big buffer: fresh memory above glibc's mmap threshold costs
    a page fault per 4 KiB, measured as ~3 us per game of system time)."""
    k = 0
    base = 0
    pieces: list = []
    size = 0
    damage = None
    leading_fragment = False
    stream = sources.open_stream(info.path, info.compression)
    try:
        while True:
            chunk, exc = _read_some(stream, min(READ_CHUNK, cfg.unit_text_bytes))
            if exc is not None:
                damage = (f"the compressed input is damaged or truncated after {base + size + len(chunk)} "
                          f"bytes of text ({type(exc).__name__}: {exc})")
            if not chunk:
                break
            pieces.append(chunk)
            size += len(chunk)
            while size > cfg.unit_text_bytes:
                s = _find_cut(pieces, cfg.unit_text_bytes)
                forced = False
                if s < 0:
                    if size < cfg.unit_text_bytes + cfg.max_game_bytes:
                        break
                    s = cfg.unit_text_bytes      # a game larger than the limit spans the cut
                    forced = True
                payload, pieces = _split_pieces(pieces, s)
                size -= s
                yield UnitSpec(info.name, info.game_type, k, info.path, text_start=base,
                               payload=payload, leading_fragment=leading_fragment)
                leading_fragment = forced
                base += s
                k += 1
            if exc is not None:
                break
    finally:
        try:
            stream.close()
        except Exception:
            pass
    yield UnitSpec(info.name, info.game_type, k, info.path, text_start=base, payload=pieces,
                   leading_fragment=leading_fragment, damage=damage)


# ---------------------------------------------------------------------------------------------
# Finalize: global game_index and byte_offset, final parts


def _unit_start(rec: dict, text_base: int) -> int:
    """Text offset of the unit's first byte (frame units learn it from the units before)."""
    return rec["text_start"] if rec["text_start"] is not None else text_base


def _unit_text_end(rec: dict, start: int) -> int:
    return start + (rec["frame_text_bytes"] if rec["frame_text_bytes"] is not None else rec["text_bytes"])


def _is_final(out: str, source: str, rec: dict, game_base: int, start: int) -> bool:
    fg, fe = final_paths(out, source, rec["unit"])
    return os.path.exists(fg) and os.path.exists(fe) and rec.get("finalized") == [game_base, start]


def _write_final(out: str, source: str, rec: dict, games: pa.Table, events: pa.Table,
                 game_base: int, start: int) -> None:
    """Final parts with global numbering, then the record saying so (in that order: a record
    marked finalized always has its parts)."""
    fg, fe = final_paths(out, source, rec["unit"])
    _atomic_write_table(_shift(games, game_base, start), fg)
    _atomic_write_table(_shift(events, game_base, None), fe)
    rec["finalized"] = [game_base, start]
    _atomic_write_json(rec, unit_manifest_path(out, source, rec["unit"]))


class OrderedFinalizer:
    """Writes held units (run_unit(hold=True)) as final parts as soon as every unit before
    them is known, in unit order; units finished by an earlier run only advance the numbering
    (finalize_source turns any of them still in staging into final parts)."""

    def __init__(self, out: str, source: str):
        self.out = out
        self.source = source
        self.next_unit = 0
        self.game_base = 0
        self.text_base = 0
        self.waiting: dict[int, dict] = {}
        self.failures: list[dict] = []   # units whose parts could not be written (drained by the caller)
        self.broken = False              # after a failed write, later units are only spilled

    def fail(self) -> None:
        """A unit failed: the numbering after it is unknown for this run, so units from now on
        go to staging at once (memory stays bounded) and a rerun finishes the source."""
        self.broken = True
        self.spill()

    def add(self, rec: dict) -> None:
        self.waiting[rec["unit"]] = rec
        if self.broken:
            self.spill()
            return
        while self.next_unit in self.waiting and not self.broken:
            r = self.waiting[self.next_unit]
            start = _unit_start(r, self.text_base)
            held = r.pop("_held", None)
            if held is not None:
                try:
                    _write_final(self.out, self.source, r, held[0], held[1], self.game_base, start)
                except Exception as exc:  # noqa: BLE001 - e.g. disk full: a failed unit, the run goes on
                    self.failures.append({"source": self.source, "unit": r["unit"],
                                          "error": f"{type(exc).__name__}: {exc}"})
                    del self.waiting[self.next_unit]
                    self.fail()
                    return
            del self.waiting[self.next_unit]
            self.game_base += r["games"]
            self.text_base = _unit_text_end(r, start)
            self.next_unit += 1

    def spill(self) -> None:
        """Units still waiting (a unit before them failed): write them to staging, as
        run_unit(hold=False) would have, so a rerun does not recompute them."""
        for r in self.waiting.values():
            held = r.pop("_held", None)
            if held is None:
                continue
            try:
                stage_unit(self.out, self.source, r, held[0], held[1])
            except Exception:  # noqa: BLE001 - only saves work for a rerun; it recomputes the unit
                pass
        self.waiting = {}


def stage_unit(out: str, source: str, rec: dict, games: pa.Table, events: pa.Table) -> None:
    """A unit's parts in staging (local numbering), then its record: a rerun reuses them."""
    g, e = staging_paths(out, source, rec["unit"])
    _atomic_write_table(games, g)
    _atomic_write_table(events, e)
    _atomic_write_json(rec, unit_manifest_path(out, source, rec["unit"]))


def finalize_source(out: str, source: str, n_units: int) -> dict:
    """Turn staging parts into final parts with global numbering (idempotent, resumable)."""
    records = []
    for k in range(n_units):
        with open(unit_manifest_path(out, source, k)) as fh:
            records.append(json.load(fh))
    game_base = 0
    text_base = 0
    for rec in records:
        k = rec["unit"]
        start = _unit_start(rec, text_base)
        if not _is_final(out, source, rec, game_base, start):
            gpath, epath = staging_paths(out, source, k)
            _write_final(out, source, rec, pq.read_table(gpath), pq.read_table(epath), game_base, start)
        game_base += rec["games"]
        text_base = _unit_text_end(rec, start)
    for k in range(n_units):
        for p in staging_paths(out, source, k):
            if os.path.exists(p):
                os.remove(p)
    for d in (os.path.join(out, "_staging", source), os.path.join(out, "_staging")):
        try:
            os.rmdir(d)  # only when empty
        except OSError:
            pass
    return {"games": game_base, "units": n_units}


def _shift(table: pa.Table, game_base: int, text_start: int | None) -> pa.Table:
    import pyarrow.compute as pc

    i = table.schema.get_field_index("game_index")
    table = table.set_column(i, "game_index", pc.add(table.column(i), game_base))
    if text_start is not None:
        j = table.schema.get_field_index("byte_offset")
        table = table.set_column(j, "byte_offset", pc.add(table.column(j), text_start))
    return table
