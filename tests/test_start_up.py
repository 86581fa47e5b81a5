"""What a scan imports: start-up is a large part of a typical run (0.6 s of a 1.4 s scan of 50,000
games), and importing a module the run does not need costs every run."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from conftest import FIXTURES, need

_PROBE = """
import sys
from analyzer.cli import main
code = main(sys.argv[1:])
print(sorted(m for m in sys.modules if m in ("pyarrow.compute", "polars", "dask", "distributed", "pandas")))
sys.exit(code)
"""


def _modules_after_scan(tmp_path, *inputs: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run(
        [sys.executable, "-c", _PROBE, "scan", *inputs, "--out", str(tmp_path / "out"), "--progress", "none"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


def test_scan_does_not_import_pyarrow_compute_polars_or_dask(tmp_path):
    """pyarrow.compute builds ~600 Python wrappers with docstrings on import (25-60 ms, ~0.2 G
    instructions); the scan calls the few Arrow functions it needs by name (analyzer.arrow_compute).
    polars and Dask serve the API and clusters only. Chess, Chess960 and variant, and draughts
    inputs, with several editions, so that every table builder runs."""
    inputs = [
        need("edge_cases.pgn"),
        need("draughts/russian_gametype25.pdn"),
        os.path.join(FIXTURES, "variants", "chess960.pgn"),
        os.path.join(FIXTURES, "variants", "atomic.pgn"),
        os.path.join(FIXTURES, "hostile", "mixed.pgn"),
    ]
    assert _modules_after_scan(tmp_path, *inputs) == "[]"


_GC_PROBE = """
import gc, sys
passes = [0, 0, 0]
def count(phase, info):
    if phase == "start":
        passes[info["generation"]] += 1
gc.callbacks.append(count)
from analyzer.cli import main
code = main(sys.argv[1:])
print(passes)
sys.exit(code)
"""


def test_scan_runs_no_full_garbage_collection(tmp_path):
    """The cyclic GC only ever traversed the imported modules' objects (numba and pyarrow make
    ~10^6, and no garbage): a scan of lichess_sample ran 1 full and 13 middle-generation passes
    (13-20 ms and ~1 ms each) and 157 young ones, 36-43 ms in all. Imports now run with the GC
    off and are frozen before the scan, which collects at a tenth of CPython's default rate (9
    young passes, 3 ms). Counts of passes, not times: the same on every machine. The first scan
    warms the kernel cache (a first run compiles, with the GC at its default rate); a module
    that the scan imports late, compiled from source in a fresh checkout, may add a young or
    middle pass, which does not traverse the frozen imports."""
    data = os.path.join(os.path.dirname(FIXTURES), "..", "data", "lichess_3000.pgn.zst")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs = []
    for k in range(2):
        r = subprocess.run(
            [sys.executable, "-c", _GC_PROBE, "scan", data, "--out", str(tmp_path / f"out{k}"), "--progress", "none"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        runs.append(ast.literal_eval(r.stdout.strip().splitlines()[-1]))
    young, middle, full = runs[1]
    assert full == 0, runs
    assert young + middle < 50, runs
