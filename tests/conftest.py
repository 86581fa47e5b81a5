"""Where the tests find their data: one rule for every test file.

The default run uses the copies under tests/fixtures/data/ (shipped with the repository).
The large shared samples (lichess_sample, otb_sample, the full perft suites) are read from
$ANALYZER_SHARED_DATA or ../shared/data beside the repository; a test that needs one and does
not find it is skipped with the reason `SHARED_MISSING`.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
REPO_DATA = os.path.join(FIXTURES, "data")
SHARED = os.path.abspath(os.environ.get("ANALYZER_SHARED_DATA") or os.path.join(HERE, "..", "..", "shared", "data"))
SHARED_MISSING = (
    f"needs the shared data samples (not in the repository): set ANALYZER_SHARED_DATA or put them at {SHARED}"
)
_CACHE = os.path.join(FIXTURES, ".cache")

# The tests test the kernels' source, through numba's JIT (and the scans they start inherit
# this); tests/test_aot.py builds the ahead-of-time kernels and compares them with these.
os.environ.setdefault("ANALYZER_KERNELS", "jit")


def shared_path(name: str) -> str | None:
    """Path of a file of the large shared samples, or None when they are not here."""
    p = os.path.join(SHARED, name)
    return p if os.path.exists(p) else None


def data_path(name: str) -> str | None:
    """Path of a plain (decompressed) data file: the repository's copy first, then the shared
    samples; None if neither has it. `name` as in ../shared/data, e.g. "perft/tricky.perft"."""
    plain = os.path.join(REPO_DATA, name)
    if os.path.exists(plain):
        return plain
    packed = plain + ".zst"
    if os.path.exists(packed):
        out = os.path.join(_CACHE, name)
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(packed):
            os.makedirs(os.path.dirname(out), exist_ok=True)
            tmp = f"{out}.tmp-{os.getpid()}"
            with open(packed, "rb") as src, open(tmp, "wb") as dst:
                zstandard.ZstdDecompressor().copy_stream(src, dst)
            os.replace(tmp, out)
        return out
    return shared_path(name)


def need(name: str) -> str:
    """data_path(name), or skip the calling test with one clear reason."""
    p = data_path(name)
    if p is None:
        pytest.skip(f"{name}: {SHARED_MISSING}", allow_module_level=True)
    return p


def read_data(name: str) -> bytes:
    with open(need(name), "rb") as fh:
        return fh.read()


@pytest.fixture(scope="session")
def small_text() -> bytes:
    """lichess_small.pgn: 2,000 real Lichess games (shipped in the repository)."""
    return read_data("lichess_small.pgn")


@pytest.fixture(scope="session")
def edge_text() -> bytes:
    """edge_cases.pgn: 243 curated games with an [EdgeCase] tag (shipped in the repository)."""
    return read_data("edge_cases.pgn")


@pytest.fixture(scope="session")
def small_path() -> str:
    return need("lichess_small.pgn")


@pytest.fixture(scope="session")
def edge_path() -> str:
    return need("edge_cases.pgn")


def load_perft_blocks(path: str) -> list:
    """tricky.perft / random.perft / chess960.perft: blocks of `id NAME`, `epd FEN4`, `perft D N`
    lines -> [(id, fen, {depth: nodes})]. One reader for every perft file, so that they are all
    read alike."""
    out = []
    cur = None
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            if key == "id":
                cur = [rest.strip(), None, {}]
                out.append(cur)
            elif key == "epd":
                if cur is None or cur[1] is not None:  # an epd without its own id line
                    cur = [f"{os.path.basename(path)}-{len(out) + 1}", None, {}]
                    out.append(cur)
                fields = rest.split()
                fen = " ".join(fields[:4])
                cur[1] = fen + " 0 1" if len(fields) == 4 else " ".join(fields)
            elif key == "perft":
                d, n = rest.split()
                cur[2][int(d)] = int(n)
    return [tuple(x) for x in out]


def pzstd_file(tmp_path, text: bytes, name: str = "games") -> pathlib.Path:
    """`text` as a multi-frame file tmp_path/NAME.pgn.zst: pzstd at level 1 cuts ~2 MiB frames,
    which is what the frame planner and the frame-unit tests need (the plain copy is removed)."""
    if shutil.which("pzstd") is None:
        pytest.fail("pzstd (Debian package zstd) is required; .ci/run installs it")
    plain = tmp_path / f"{name}.pgn"
    plain.write_bytes(text)
    packed = tmp_path / f"{name}.pgn.zst"
    subprocess.run(["pzstd", "-q", "-1", "-p", "2", "-f", "-o", str(packed), str(plain)], check=True)
    plain.unlink()
    return packed


# ---------------------------------------------------------------------------------------------
# The kernels, compiled once per test run

VARIANTS = os.path.join(FIXTURES, "variants")
_VARIANTS_WARM = ".analyzer-warm-tests-variants"  # in NUMBA_CACHE_DIR, beside analyzer.warmup's markers
WARM_UP_FROM = 100  # selected tests: a run of fewer compiles only what its tests call


def compile_variants() -> None:
    """(In a second process.) The Lichess variants' kernels (Chess960 included), which a scan
    compiles at its first variant game: two games of every variant fixture, in memory
    (analyze_bytes) and through a scan of a file (read-only text: other argument types), with
    the default and then every chess edition, as analyzer.warmup does for standard chess."""
    import tempfile

    from analyzer.api import analyze_bytes
    from analyzer.engine import Config, run_scan
    from analyzer.kinds import resolve_editions

    sample = b""
    for name in sorted(os.listdir(VARIANTS)):
        if name.endswith(".pgn"):
            with open(os.path.join(VARIANTS, name), "rb") as fh:
                games = fh.read().split(b"\n\n[Event ")
            sample += b"\n\n[Event ".join(games[:2]).rstrip() + b"\n\n"
    every = ("fide_2018", "fide_2014", "fide_2009", "fide_1997", "lichess")
    analyze_bytes(sample, editions=every)
    with tempfile.TemporaryDirectory(prefix="analyzer-warm-variants-") as tmp:
        path = os.path.join(tmp, "variants.pgn")
        with open(path, "wb") as fh:
            fh.write(sample)
        for eds in (["fide_2018"], list(every)):
            cfg = Config(out=os.path.join(tmp, "out"), editions=resolve_editions(eds))
            run_scan([path], cfg, workers=1, force=True, progress_interval=0, progress_mode="none")
    with open(os.path.join(os.environ["NUMBA_CACHE_DIR"], _VARIANTS_WARM), "w"):
        pass


@pytest.fixture(scope="session", autouse=True)
def _kernels_compiled_once(request):
    """On a cold kernel cache (a fresh clone, CI), compile the kernels the tests use before the
    first test, on every core: the chess replay here, the other chess kernels then the draughts
    ones in a second process (analyzer.warmup, as `analyzer warmup` does) and the variants' in a
    third. Otherwise each compiled inside the first test that calls it, in the test process,
    while the other core idled. The scans the tests start in subprocesses load them from the
    same cache (NUMBA_CACHE_DIR, inherited). A run of a few tests (-k) skips this."""
    if len(request.session.items) < WARM_UP_FROM:
        yield
        return
    from analyzer import warmup

    side = None
    if not os.path.exists(os.path.join(os.environ["NUMBA_CACHE_DIR"], _VARIANTS_WARM)):
        side = subprocess.Popen(  # the working directory of the tests: analyzer found as the tests find it
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {HERE!r}); import conftest; conftest.compile_variants()",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    try:
        if not warmup.is_warm():
            warmup.warmup(None, processes=warmup.compile_workers())
    finally:
        if side is not None:
            _, err = side.communicate()
            assert side.returncode == 0, err.decode("utf-8", "replace")[-3000:]
    yield


# ---------------------------------------------------------------------------------------------
# Analyzing text in tests


def analyze(data: bytes, editions=("fide_2018",), source: str = "test", **kw):
    """The tables of the games in `data` (analyzer.api.analyze_bytes)."""
    from analyzer.api import analyze_bytes

    return analyze_bytes(data, source=source, editions=editions, **kw)


def verdict_rows(res) -> list[dict]:
    """One dict per (game, edition): the game's columns and that edition's verdicts, editions in
    the order analyzed, games in order within each."""
    games = {r["game_index"]: r for r in res.games.to_pylist()}
    out = []
    for v in res.verdicts.to_pylist():
        row = dict(games[v["game_index"]])
        row.update(v)
        out.append(row)
    return out


def game_spans(data: bytes, draughts: bool = False):
    """(starts, ends) of the games in `data`, as the reader splits them."""
    import numpy as np

    from analyzer.pgn.split import split_games

    buf = np.frombuffer(data, dtype=np.uint8)
    starts, ends, _ = split_games(buf, True, draughts=draughts)
    return starts, ends


# ---------------------------------------------------------------------------------------------
# Scanning into an OUT directory in tests (the one helper; in this process, as `analyzer scan`)


def scan(inputs, out, *, editions=("fide_2018",), **options) -> tuple[dict, int]:
    """Scan `inputs` (a path or a list of paths) into `out`: (summary, exit code). `options` are
    engine.Config fields (frames_per_unit=1, compact_games=..., unit_text_bytes=...) or
    engine.ScanOptions fields (workers=2, engine="dask", force=True, ...)."""
    import dataclasses

    from analyzer import engine
    from analyzer.kinds import resolve_editions

    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    fields = {f.name for f in dataclasses.fields(engine.Config)}
    cfg_kw = {k: v for k, v in options.items() if k in fields}
    run_kw = {k: v for k, v in options.items() if k not in fields}
    run_kw.setdefault("progress_interval", 0)
    cfg = engine.Config(out=str(out), editions=resolve_editions(list(editions)), **cfg_kw)
    return engine.run_scan([str(p) for p in inputs], cfg, **run_kw)


def scan_text(tmp_path, text: bytes, *, name: str = "games.pgn", **kw) -> tuple[str, dict, int]:
    """Write `text` to tmp_path/name and scan it into tmp_path/out-<name>: (OUT, summary, exit
    code); keyword arguments as scan()."""
    src = pathlib.Path(tmp_path) / name
    src.write_bytes(text)
    out = str(pathlib.Path(tmp_path) / f"out-{name}")
    summary, code = scan(src, out, **kw)
    return out, summary, code


# ---------------------------------------------------------------------------------------------
# Reading an OUT directory in tests


def out_tables(out) -> tuple:
    """(games, verdicts, events) of an OUT directory, sorted by their keys."""
    import analyzer

    g = analyzer.scan_games(str(out)).collect().sort(["source", "game_index"])
    v = analyzer.scan_verdicts(str(out)).collect().sort(["source", "edition", "game_index"])
    e = analyzer.scan_events(str(out)).collect().sort(["source", "edition", "game_index", "ply", "rule", "kind"])
    return g, v, e


def nonempty(rows, what: str = "rows"):
    """`rows` (a list, dict, set, polars DataFrame or Arrow table), once asserted to hold at
    least one row: a check over each of its rows (a loop, all(...), a comparison of two
    tables) proves nothing on an empty one, so it must not pass on one."""
    n = rows.height if hasattr(rows, "height") else rows.num_rows if hasattr(rows, "num_rows") else len(rows)
    assert n > 0, f"no {what}: the check over them would pass on nothing"
    return rows


def same_tables(a: tuple, b: tuple, ignore_source: bool = False) -> None:
    """Equal (games, verdicts, events); two empty tables are no evidence, so games must have rows."""
    assert a[0].height > 0 and a[1].height > 0, "no rows to compare"
    for name, x, y in zip(("games", "verdicts", "events"), a, b):
        if ignore_source:
            x, y = x.drop("source"), y.drop("source")
        assert x.shape == y.shape, (name, x.shape, y.shape)
        assert x.equals(y), f"{name} tables differ"


def out_rows(out, edition: str = "fide_2018") -> list[dict]:
    """One dict per game of an OUT directory: its games row and its verdicts of `edition`."""
    import glob

    import polars as pl

    import analyzer

    if not glob.glob(os.path.join(str(out), "games", "*", "part-*.parquet")):
        return []
    g = analyzer.scan_games(str(out)).collect()
    v = analyzer.scan_verdicts(str(out)).filter(pl.col("edition") == edition).drop("game_type").collect()
    return g.join(v, on=["source", "game_index"], how="left").sort(["source", "game_index"]).to_dicts()


# ---------------------------------------------------------------------------------------------
# Processes in tests (Linux /proc)


def alive(pid) -> bool:
    """Running (not gone, not a zombie waiting for a reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def live_children(ppid: int) -> list[int]:
    """The running children of process ppid."""
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == ppid and fields[0] != "Z":
                kids.append(int(d))
    return kids


def pty_run(cmd: list[str], seconds: float = 120) -> tuple[int, str]:
    """Run cmd with stdout and stderr on a pseudo-terminal; (exit code, what it printed)."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.time() + seconds
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    return proc.returncode, out.decode(errors="replace")


def run_json_script(script: str, *args: str, timeout: float = 3000) -> dict:
    """Run a benchmarks/ script that prints one JSON line last (the kill and damage loops)."""
    import json
    import sys

    r = subprocess.run([sys.executable, script, *args, "--json"], capture_output=True, text=True, timeout=timeout)
    assert r.stdout.strip(), r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
