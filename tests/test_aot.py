"""The kernels built ahead of time (analyzer.aot, used through analyzer.kernels): the types they
are built for are those the scan passes, a scan with them gives the JIT kernels' tables without
importing numba, other argument types go to the JIT kernel, and a failed build leaves the JIT
kernels in use."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from typing import ClassVar

import numpy as np
import pytest

from analyzer import aot, aot_build, kernels, warmup
from conftest import analyze, need, nonempty, out_tables, read_data, same_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_scan_passes_the_types_the_kernels_are_built_for(tmp_path, monkeypatch):
    """Every call the analysis of real games makes to an entry has exactly the argument types
    of ENTRIES: otherwise the built kernel is passed over for the JIT one (slow start) or,
    without the check, would read memory of another type."""
    seen: dict[str, int] = {}
    jit = kernels.Kernel.jit

    def spy(kernel):
        fn = jit(kernel)

        def call(*args):
            assert kernel.accepts(args), (kernel.name, [(type(a).__name__, getattr(a, "dtype", None)) for a in args])
            seen[kernel.name] = seen.get(kernel.name, 0) + 1
            return fn(*args)

        return call

    monkeypatch.setattr(kernels.Kernel, "jit", spy)
    analyze(read_data("lichess_small.pgn.zst") + read_data("edge_cases.pgn.zst"), editions=("fide_2018", "fide_1997"))
    from analyzer.engine import Config, run_scan
    from analyzer.kinds import resolve_editions

    run_scan(
        [need("edge_cases.pgn")],
        Config(
            out=str(tmp_path / "out"),
            editions=resolve_editions(["fide_2018"]),
        ),
        workers=1,
        force=True,
        progress_interval=0,
        progress_mode="none",
    )
    nonempty(seen, "kernel calls through Kernel.jit")  # (no entries and no calls would be equal sets)
    assert set(seen) == set(aot_build.ENTRIES), set(aot_build.ENTRIES) - set(seen)


def test_the_check_refuses_other_types():
    check = aot_build.ENTRIES["find_games"]
    buf = np.frombuffer(b"1. e4 *\n", np.uint8)
    starts = np.empty(8, np.int64)
    assert check.accepts((buf, 8, True, False, starts))
    assert check.accepts((buf.copy(), 8, True, False, starts))  # a writable text where read-only is built
    assert not check.accepts((buf, 8, True, False, starts.astype(np.int32)))  # dtype
    assert not check.accepts((buf, 8, True, False, starts.reshape(2, 4)))  # ndim
    assert not check.accepts((buf, 8, True, False, starts[::2]))  # not contiguous
    ro = starts.copy()
    ro.flags.writeable = False
    assert not check.accepts((buf, 8, True, False, ro))  # written by the kernel
    assert not check.accepts((buf, 8.0, True, False, starts))  # scalar types
    assert not check.accepts((buf, 8, 1, False, starts))
    assert not check.accepts((buf, 8, True, False))  # count
    gather = aot_build.ENTRIES["gather_strings"]
    vs = np.zeros((4, 2), np.int64)
    esc = np.zeros((4, 2), np.bool_)
    assert gather.accepts((buf, vs[:, 0], vs[:, 1], esc[:, 0], np.zeros(5, np.int32), np.zeros(8, np.uint8)))


def test_signatures_are_the_declared_types():
    from numba.core import types

    text = types.Array(types.uint8, 1, "C", readonly=True)
    starts = types.Array(types.int64, 1, "C")
    assert aot_build.signature("find_games") == types.UniTuple(types.int64, 2)(
        text, types.int64, types.boolean, types.boolean, starts
    )
    assert aot_build.signature("gather_strings").args[1] == types.Array(types.int64, 1, "A")


def test_a_failed_build_leaves_the_jit_kernels(tmp_path, monkeypatch):
    """No C compiler: the build says why, once (not retried for these sources), and the
    chess kernels are compiled by numba's JIT as before."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ANALYZER_KERNELS", "auto")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert aot.state() == "absent" and warmup._will_build(["chess"]) is False
    monkeypatch.delenv("CC")
    if aot_build.compiler() is None:
        pytest.skip("no C compiler here")
    assert warmup._will_build(["chess"]) is True
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert aot_build.build() is False
    assert aot.state() == "failed"
    with open(os.path.join(aot.folder(), aot.FAILED)) as fh:
        assert "no C compiler" in fh.read()
    monkeypatch.delenv("CC")
    assert warmup._will_build(["chess"]) is False  # not retried
    assert aot.load() is None


def test_an_unwritable_cache_leaves_the_jit_kernels(tmp_path, monkeypatch):
    """A NUMBA_CACHE_DIR the build cannot write (here: a file where the folder would be) does
    not stop the scan: the build says so and the JIT kernels run."""
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker))
    if aot_build.compiler() is None:
        pytest.skip("no C compiler here")
    assert aot_build.build() is False
    assert aot.load() is None


class _FakeBuilder:
    """A build process that ends with `returncode` at once (monkeypatched subprocess.Popen)."""

    returncode = 0
    events: ClassVar[list] = []  # set per test (monkeypatch)

    def __init__(self, *args, **kwargs):
        self.events.append("start")

    def communicate(self, timeout=None):
        self.events.append("wait")
        return b"", b"compile error: the message"

    def kill(self):
        self.events.append("kill")

    def wait(self):
        pass


def test_the_other_kinds_compile_while_the_builders_run(tmp_path, monkeypatch):
    """A first run with chess and draughts: the draughts JIT compile (`meanwhile`) runs after
    both build processes started and before they are waited for; if it fails, they are
    killed, not left running."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    if aot_build.compiler() is None:
        pytest.skip("no C compiler here")
    events: list = []
    monkeypatch.setattr(_FakeBuilder, "events", events)
    monkeypatch.setattr(_FakeBuilder, "returncode", -9)
    monkeypatch.setattr(subprocess, "Popen", _FakeBuilder)
    aot_build.build(meanwhile=lambda: events.append("meanwhile"))
    assert events == ["start", "start", "meanwhile", "wait", "wait"]
    events.clear()

    def fails():
        raise RuntimeError("the draughts compile failed")

    with pytest.raises(RuntimeError):
        aot_build.build(meanwhile=fails)
    assert events == ["start", "start", "kill", "kill"]


@pytest.mark.parametrize(("returncode", "retried"), [(1, False), (-9, True)])
def test_only_a_compile_error_stops_later_builds(tmp_path, monkeypatch, returncode, retried):
    """A builder that exits with an error is written down (later runs do not try again for
    these sources); one killed by a signal (an interrupted first run) is tried again."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ANALYZER_KERNELS", "auto")
    if aot_build.compiler() is None:
        pytest.skip("no C compiler here")
    monkeypatch.setattr(_FakeBuilder, "returncode", returncode)
    monkeypatch.setattr(subprocess, "Popen", _FakeBuilder)
    assert aot_build.build() is False
    assert aot.state() == ("absent" if retried else "failed")
    assert warmup._will_build(["chess"]) is retried


def test_a_second_first_run_waits_for_the_build_and_uses_it(tmp_path, monkeypatch):
    """Two first runs on one machine build once: the second waits on the build lock, then
    finds the modules and starts no build of its own."""
    import fcntl
    import threading

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    if aot_build.compiler() is None:
        pytest.skip("no C compiler here")
    events: list = []
    monkeypatch.setattr(_FakeBuilder, "events", events)
    monkeypatch.setattr(subprocess, "Popen", _FakeBuilder)
    d = aot.folder()
    os.makedirs(d)
    fd = os.open(os.path.join(d, ".build.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the first run, building
    result: list = []
    waiter = threading.Thread(
        target=lambda: result.append(aot_build.build(meanwhile=lambda: events.append("meanwhile")))
    )
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and events == []
    for group in aot.GROUPS:  # the first run's modules land, then it ends
        (tmp_path / d / aot._module_file(group)).write_bytes(b"")
    os.close(fd)
    waiter.join(10)
    assert result == [True]
    assert events == ["meanwhile"]  # the other kinds still compile; no build process started


def _scan(tmp_path, name: str, mode: str, *inputs: str) -> tuple[subprocess.CompletedProcess, str]:
    out = str(tmp_path / name)
    probe = (
        "import sys; from analyzer.cli import main; c = main(sys.argv[1:]); print('numba' in sys.modules); sys.exit(c)"
    )
    env = dict(os.environ, ANALYZER_KERNELS=mode, PYTHONPATH=ROOT)
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            "scan",
            *inputs,
            "--out",
            out,
            "--progress",
            "none",
            "--edition",
            "fide_2018,fide_1997,lichess",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r, out


@pytest.fixture(scope="module")
def built():
    """The kernels built ahead of time in this checkout's cache (once per source version, as a
    scan's first run builds them: ~25 s cold)."""
    if aot_build.compiler() is None:
        pytest.skip("no C compiler: numba.pycc cannot build the kernels")
    if aot.state() != "built":
        if aot.state() == "failed":
            os.remove(os.path.join(aot.folder(), aot.FAILED))
        if not aot_build.build():
            failed = os.path.join(aot.folder(), aot.FAILED)
            with open(failed) if os.path.exists(failed) else contextlib.nullcontext(None) as fh:
                pytest.fail(fh.read()[-3000:] if fh else "the build stopped (a timeout or a signal)")
    return aot.folder()


def test_built_kernels_give_the_jit_tables_without_numba(tmp_path, built):
    inputs = [need("lichess_small.pgn"), need("edge_cases.pgn")]
    r_aot, out_aot = _scan(tmp_path, "aot", "auto", *inputs)
    r_jit, out_jit = _scan(tmp_path, "jit", "jit", *inputs)
    assert r_aot.stdout.strip().splitlines()[-1] == "False", "a scan with the built kernels imported numba"
    assert r_jit.stdout.strip().splitlines()[-1] == "True"
    for out, source in ((out_aot, "aot"), (out_jit, "jit")):
        with open(os.path.join(out, "_manifest", "run.json")) as fh:
            assert json.load(fh)["versions"]["kernels"] == source
    same_tables(out_tables(out_aot), out_tables(out_jit))


# ---------------------------------------------------------------------------------------------
# The wheel's portable build (analyzer/_aot/, built by build_backend/analyzer_build.py)


def _fake_portable(base, cpus=aot.PORTABLE_TARGETS, **manifest) -> None:
    """A portable folder as the wheel lays it out, with empty module files."""
    import platform

    from analyzer._numba_env import source_stamp

    for cpu in cpus:
        os.makedirs(base / cpu, exist_ok=True)
        for group in aot.GROUPS:
            (base / cpu / aot._module_file(group)).write_bytes(b"")
    m = {
        "source_stamp": source_stamp(),
        "python": sys.implementation.cache_tag,
        "machine": platform.machine(),
        "cpus": list(cpus),
    }
    m.update(manifest)
    (base / aot.MANIFEST).write_text(json.dumps(m))


V2 = frozenset(aot.X86_64_LEVELS["x86-64-v2"])
V3 = V2 | frozenset(aot.X86_64_LEVELS["x86-64-v3"])


@pytest.mark.parametrize(
    ("cpus", "flags", "chosen"),
    [
        (aot.PORTABLE_TARGETS, V3, aot.PORTABLE_TARGETS[0]),
        (("x86-64-v2", "x86-64"), V2, "x86-64-v2"),
        (("x86-64-v2", "x86-64"), V2 - {"popcnt"}, "x86-64"),  # e.g. QEMU's qemu64 CPU
        (("x86-64-v3", "x86-64-v2"), V3 - {"avx2"}, "x86-64-v2"),
        (("x86-64-v3", "x86-64-v2"), V2 - {"sse4_2"}, None),
    ],
)
def test_the_wheels_build_for_the_best_level_this_cpu_runs(tmp_path, monkeypatch, cpus, flags, chosen):
    """A wheel carries the kernels for portable x86-64 levels: the best one whose instructions
    this CPU has is loaded (code for a level above would die of SIGILL), none if none runs."""
    if aot.portable_cpus() != aot.PORTABLE_TARGETS:
        pytest.skip("not an x86-64 machine")
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.setattr(aot, "_cpu_flags", lambda: flags)
    _fake_portable(tmp_path, cpus)
    found = aot.portable_folder(str(tmp_path))
    assert (os.path.basename(found) if found else None) == chosen


@pytest.mark.parametrize(
    "manifest", [{"source_stamp": "0" * 16}, {"python": "cpython-39"}, {"machine": "riscv64"}, {"cpus": []}]
)
def test_a_wheels_build_of_other_sources_or_python_is_not_used(tmp_path, monkeypatch, manifest):
    if aot.portable_cpus() != aot.PORTABLE_TARGETS:
        pytest.skip("not an x86-64 machine")
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.setattr(aot, "_cpu_flags", lambda: V3)
    _fake_portable(tmp_path / "good")
    assert aot.portable_folder(str(tmp_path / "good")) is not None  # the same build, whole: found
    _fake_portable(tmp_path, **manifest)
    assert aot.portable_folder(str(tmp_path)) is None
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")  # a CPU chosen by the user: not the wheel's build
    _fake_portable(tmp_path)
    assert aot.portable_folder(str(tmp_path)) is None


def test_with_the_wheels_build_a_first_run_builds_nothing(tmp_path, monkeypatch):
    """Where the wheel's modules serve, a first chess scan neither builds nor compiles the chess
    kernels (no compiler needed); `analyzer warmup` still builds them for this CPU. Modules that
    do not load leave the JIT kernels, with a warning."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANALYZER_KERNELS", "auto")
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.setattr(aot, "_cpu_flags", lambda: V3)
    _fake_portable(tmp_path / "wheel")
    monkeypatch.setattr(aot, "PORTABLE", str(tmp_path / "wheel"))
    assert aot.portable_folder() is not None
    assert warmup.is_warm(["chess"]) and not warmup._will_build(["chess"])
    if aot_build.compiler() is not None:
        assert warmup._will_build(["chess"], even_if_portable=True)
    assert aot.load() is None  # empty files: not loadable
