"""The batch engine: plan units -> execute (inline, threads, forked, processes, Dask) -> write
parts -> finalize (global numbering) -> summary. `run_scan` is the entry point."""

from analyzer.engine.config import Config, UnitSpec
from analyzer.engine.executors import RunError
from analyzer.engine.lock import LockHeld
from analyzer.engine.scan import run_scan

__all__ = ["Config", "LockHeld", "RunError", "UnitSpec", "run_scan"]
