"""The wheel (build_backend/analyzer_build.py): it carries the chess kernels built ahead of time
for portable targets (analyzer.aot.PORTABLE_TARGETS on x86-64), and an install of it scans
standard chess without compiling anything and without a C compiler, with the JIT kernels' tables.

Slow (builds the wheel, both targets: 1-3 min): `python -m pytest -m slow tests/test_wheel.py`.
The wheel is built from this checkout as `python -m build --wheel` builds it (pip's isolated build
environment: setuptools, wheel, numba and numpy from the index or pip's cache), and its files are
put on PYTHONPATH rather than installed.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import zipfile

import pytest

from analyzer import aot, aot_build
from conftest import need, out_tables, same_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> str:
    if aot_build.compiler() is None:
        pytest.skip("building the wheel's kernels needs a C compiler")
    dist = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), ROOT],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (path,) = glob.glob(str(dist / "*.whl"))
    return path


def test_the_wheel_carries_the_portable_kernels(wheel):
    from analyzer._numba_env import source_stamp

    name = os.path.basename(wheel)
    assert name.startswith("draw_rule_analyzer-") and "-none-any" not in name  # tagged for this platform
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("analyzer/_aot/manifest.json"))
    assert manifest["cpus"] == list(aot.portable_cpus()) and manifest["cpus"] and aot.GROUPS  # (loops below)
    assert manifest["source_stamp"] == source_stamp()  # built from these sources: they load
    for cpu in manifest["cpus"]:
        for group in aot.GROUPS:
            assert f"analyzer/_aot/{cpu}/{aot._module_file(group)}" in names


def test_the_wheel_scans_chess_without_a_compiler(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    (tmp_path / "bin").mkdir()  # a PATH without cc or gcc
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(
        PATH=str(tmp_path / "bin"),
        PYTHONPATH=str(site),
        NUMBA_CACHE_DIR=str(tmp_path / "cache"),  # empty: nothing compiled on this "machine" yet
        ANALYZER_KERNELS="auto",
    )
    probe = (
        "import sys, analyzer; from analyzer.cli import main; c = main(sys.argv[1:]); "
        "print(analyzer.__file__, 'numba' in sys.modules); sys.exit(c)"
    )
    out = tmp_path / "out"
    args = ["scan", need("edge_cases.pgn"), need("lichess_small.pgn"), "--out", str(out), "--progress", "none"]
    r = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    imported_from, numba_imported = r.stdout.strip().splitlines()[-1].split()
    assert imported_from.startswith(str(site))
    assert numba_imported == "False" and "compil" not in r.stderr, r.stderr
    with open(out / "_manifest" / "run.json") as fh:
        run = json.load(fh)
    assert run["versions"]["kernels"] == f"aot-{aot.portable_cpus()[0]}" and run["compile_seconds"] == 0
    jit = tmp_path / "jit"  # the same inputs through the checkout's JIT kernels (compiled in this session's cache)
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *args[:-4], "--out", str(jit), "--progress", "none"],
        capture_output=True,
        text=True,
        env=dict(os.environ, ANALYZER_KERNELS="jit", PYTHONPATH=ROOT),
        cwd=ROOT,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    same_tables(out_tables(out), out_tables(jit))
