"""What a scan is asked to do (Config) and one piece of its work (UnitSpec)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from analyzer.engine.dataset import Dataset

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


def version() -> str:
    from analyzer import __version__

    return __version__


def edition_ids(editions) -> list[str]:
    return [e.id for e in editions]


def edition_params(editions) -> dict:
    """Edition id -> its parameters (what makes two editions of one id differ)."""
    return {e.id: e.fingerprint() for e in editions}


@dataclass
class Config:
    out: str
    editions: list = field(default_factory=list)  # edition objects of any kinds (analyzer.kinds)
    block_size: int = 8 << 20
    max_game_bytes: int = 16 << 20
    unit_text_bytes: int = UNIT_TEXT_BYTES  # sequential inputs
    frame_unit_text_bytes: int = FRAME_UNIT_TEXT_BYTES  # pzstd inputs (frames grouped by size)
    frames_per_unit: int | None = None  # pzstd frames per unit; None: by compressed size
    storage_options: dict = field(default_factory=dict)  # fsspec options of URLs: {protocol or "*": {key: value}}
    # games per compacted file of a finished source (engine.compact); the layout, not the results
    compact_games: int = 1_000_000
    run_id: str | None = None  # the run writing OUT (names its temporary files and intents)
    # folders of Syzygy tables (--syzygy): chess units probe the positions of the 50/75-move events
    # and the final positions (kinds.chess.tablebase); part of settings(), so that results got
    # with other tables (or none) are not reused
    syzygy: tuple = ()
    # nodes of the unwinnability search per final position of a chess game lost on time
    # (--unwinnable-budget; None: the kind's default, kinds.chess.analyze.UNWINNABLE_BUDGET): part
    # of settings() when set, as answers left `unknown` depend on it
    unwinnable_budget: int | None = None

    def __post_init__(self) -> None:
        if self.syzygy:
            from analyzer.kinds.chess.tablebase import normalize_dirs

            self.syzygy = normalize_dirs(self.syzygy)
        for name in ("block_size", "max_game_bytes", "unit_text_bytes", "frame_unit_text_bytes", "compact_games"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 byte (got {getattr(self, name)})")
        if self.unwinnable_budget is not None and self.unwinnable_budget < 0:
            raise ValueError(f"unwinnable_budget must be at least 0 (got {self.unwinnable_budget})")
        if self.frames_per_unit is not None and self.frames_per_unit < 1:
            raise ValueError(f"frames_per_unit must be at least 1 (got {self.frames_per_unit})")

    @property
    def dataset(self) -> Dataset:
        """The Dataset of OUT that this run writes (one per process: workers get theirs from
        the pickled Config, with the same storage options and run id)."""
        ds = self.__dict__.get("_dataset")
        if ds is None or ds.root != self.out:
            from analyzer.engine.dataset import Dataset

            ds = Dataset(self.out, self.storage_options, self.run_id)
            self.__dict__["_dataset"] = ds
        return ds

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_dataset"}

    def editions_for(self, kind: str) -> list:
        """The editions asked for of one game kind; the kind's defaults if none was."""
        from analyzer import kinds

        mine = [e for e in self.editions if e.kind == kind]
        return mine or kinds.resolve_editions(list(kinds.get(kind).default_editions))

    def settings(self) -> dict:
        """The settings (other than editions) that a finished unit must match to be reused."""
        out: dict = {
            "max_game_bytes": self.max_game_bytes,
            "unit_text_bytes": self.unit_text_bytes,
            "frame_unit_text_bytes": self.frame_unit_text_bytes,
            "frames_per_unit": self.frames_per_unit,
            "version": version(),
        }
        if self.syzygy:  # (only then: the settings of a scan without tables are as they were)
            out["syzygy"] = _syzygy_fingerprint(tuple(self.syzygy))
        if self.unwinnable_budget is not None:
            out["unwinnable_budget"] = self.unwinnable_budget
        return out

    def kind_options(self, game_type: str) -> dict:
        """What this run adds to the options a game kind's analyze_block takes (chess: the
        tablebase folders, the unwinnability search's budget)."""
        from analyzer import kinds

        return kinds.block_options(game_type, syzygy=tuple(self.syzygy), unwinnable_budget=self.unwinnable_budget)


@dataclass
class ScanOptions:
    """How a scan runs, as one object (what its units compute is the Config): the executor,
    what to do with finished sources, progress, names, and what is recorded of the run."""

    workers: int = 1
    engine: str = "local"  # local (forked for pzstd on Linux, else threads or inline) | threads | processes | dask
    scheduler: str | None = None  # a Dask scheduler's address
    force: bool = False  # recompute finished sources with exactly the editions asked for
    deep_verify: bool = False  # check finished sources' files page by page, and re-hash their inputs
    progress_interval: float = 10.0
    progress_mode: str = "log"  # bar | log | none
    source_names: list[str] | None = None  # one per input (--source-name)
    command: list[str] | None = None  # the command line, recorded with each source
    rerun_args: list[str] | None = None  # its options that a rerun must repeat (verify's repair line)
    log_stream: Any = None  # where progress goes (default stderr)
    # called with the set of game kinds the run analyzes, before any unit runs (the command line
    # compiles their kernels there on a machine's first run); True if it compiled
    prepare: Callable[[set[str]], bool] | None = None
    # called when a source's units are all analyzed, before its record commits it, with its
    # InputInfo and what the run found (finalize_source's dict: games, records, files, ...;
    # "input_sha256"; "digest": the reader's hashes): a reason not to commit it (the source is
    # then removed from OUT and listed in the summary's "rejected"), or None (engine.sync)
    accept: Callable[[Any, dict], str | None] | None = None
    record: dict = field(default_factory=dict)  # what the caller adds to each source record it commits


@functools.lru_cache(maxsize=16)
def _syzygy_fingerprint(dirs: tuple) -> dict:
    from analyzer.kinds.chess.tablebase import fingerprint

    return fingerprint(dirs)


def unit_fingerprint(cfg: Config, editions) -> dict:
    """What a finished unit must match to be reused by a rerun."""
    return {**cfg.settings(), "editions": edition_ids(editions), "edition_params": edition_params(editions)}


@dataclass
class UnitSpec:
    """One independent piece of work. `payload` (the text) for sequentially read inputs, or a
    frame range of a pzstd file that the worker decodes itself."""

    source: str
    game_type: str
    index: int
    path: str
    editions: list = field(default_factory=list)  # the editions this unit is analyzed under
    text_start: int | None = None  # global offset of the region (sequential inputs)
    payload: list | None = None  # the text as its read pieces, in order (sequential inputs)
    leading_fragment: bool = False  # starts inside a game larger than the limit (reported by the unit before)
    trailing_fragment: bool = False  # ends inside a game larger than the limit: report it, do not analyze
    frames: list | None = None  # [(offset, size), ...] of frames frame_base, frame_base+1, ...: the
    # unit's own and a few after them (frame units; later ones are
    # found by reading their headers)
    first_frame: int = 0
    end_frame: int = 0
    frame_base: int = 0
    input_size: int = -1  # bytes of the whole input (-1: a stream): frame units, provenance
    text_range: tuple | None = None  # (start, end) bytes of an uncompressed input: the worker reads
    # its text itself (Dask, process pools) instead of a payload
    damage: str | None = None  # the input was damaged at the end of this region
    ends_input: bool = False  # the input ends where this unit ends (its last game may be cut off)
    input_bytes: int = 0  # input (compressed) bytes this unit stands for, for progress
    options: dict = field(default_factory=dict)  # what the game kind reads of the source (InputInfo.options)
    # every game start in the text (offsets from text_start), as the planner's scanner found them
    # (plan.GameStarts): the region uses them instead of scanning the text again (sequential inputs)
    game_starts: np.ndarray | None = None
    # inputs read as one stream (InputInfo.stream, `analyzer sync`): the SHA-256 of the input's
    # bytes read when the unit was cut, recorded with it, so that a rerun that reuses the unit can
    # tell it was read from the same bytes as this run's (engine.sync)
    input_prefix: str | None = None
    # a Parquet source's unit (io.hf_parquet): the row groups it reads itself, as (file, index)
    # pairs, in order; its text starts and ends with whole games (every row is one game)
    row_groups: list | None = None
