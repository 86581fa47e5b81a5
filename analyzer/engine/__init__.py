"""The batch engine: plan units -> execute (inline, threads, forked, processes, Dask) -> write
parts -> finalize (global numbering) -> summary. `run_scan` is the entry point."""

from analyzer.engine.config import Config, ScanOptions, UnitSpec
from analyzer.engine.scan import run_scan
from analyzer.errors import LockHeld, RunError

__all__ = ["Config", "LockHeld", "RunError", "ScanOptions", "UnitSpec", "run_scan"]
