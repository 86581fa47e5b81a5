"""The numba cache works from a read-only install: NUMBA_CACHE_DIR falls back to a writable place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _run(code, env, cwd=None):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600, cwd=cwd)


def test_cache_dir_defaults_to_user_cache(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    r = _run("import analyzer._numba_env, os; print(os.environ['NUMBA_CACHE_DIR'])", env)
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    assert os.path.dirname(path) == str(tmp_path / "cache" / "analyzer" / "numba")
    assert len(os.path.basename(path)) == 16


def test_cache_dir_changes_with_any_source_file(tmp_path):
    """numba keys a cached kernel on its own file only: a kernel that inlines a helper from
    _board.py would keep stale code after an edit of _board.py. The default cache directory is
    named by a hash of all sources, so such an edit gets a fresh cache."""
    import shutil

    import analyzer

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    code = "import analyzer._numba_env, os; print(os.environ['NUMBA_CACHE_DIR'])"
    dirs = []
    for edit in (False, True):
        copy = tmp_path / f"src{int(edit)}"
        shutil.copytree(
            os.path.dirname(analyzer.__file__), copy / "analyzer", ignore=shutil.ignore_patterns("__pycache__")
        )
        if edit:
            with open(copy / "analyzer" / "kinds" / "chess" / "_board.py", "a") as fh:
                fh.write("\n# an edit\n")
        r = _run(code + "; print(analyzer.__file__)", dict(env, PYTHONPATH=str(copy)), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        cache_dir, imported = r.stdout.split()
        assert imported.startswith(str(copy))
        dirs.append(cache_dir)
    assert dirs[0] != dirs[1]
    r = _run(code, dict(env, PYTHONPATH=str(tmp_path / "src0")), cwd=tmp_path)
    assert r.stdout.strip() == dirs[0]  # same sources, same cache


def test_new_cache_dir_prunes_only_stale_stamp_dirs(tmp_path):
    """Every source edit or upgrade makes a new 15-30 MB folder; when one is made, stamp folders
    not used for 30 days go. Recent ones, other names, files and symlinks stay (nothing that
    is not a cache folder of ours is touched)."""
    base = tmp_path / "cache" / "analyzer" / "numba"
    old = time.time() - 40 * 86400
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.docx").write_text("x")
    made = {}
    for name, kind, age in [
        ("0123456789abcdef", "dir", old),  # stale stamp folder: removed
        ("fedcba9876543210", "dir", time.time() - 86400),  # used yesterday: kept
        ("notes-0123456789", "dir", old),  # not a stamp name: kept
        ("00000000000000aa", "file", old),  # a file: kept
        ("11111111111111bb", "link", old),  # a symlink to elsewhere: kept, target untouched
    ]:
        path = base / name
        base.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            path.mkdir()
            (path / "k.nbi").write_text("x")
        elif kind == "file":
            path.write_text("x")
        else:
            path.symlink_to(victim)
        os.utime(path, (age, age), follow_symlinks=False)
        made[name] = path
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    r = _run("import analyzer._numba_env, os; print(os.environ['NUMBA_CACHE_DIR'])", env)
    assert r.returncode == 0, r.stderr
    assert os.path.isdir(r.stdout.strip())
    assert not made["0123456789abcdef"].exists()
    for name in ("fedcba9876543210", "notes-0123456789", "00000000000000aa", "11111111111111bb"):
        assert os.path.lexists(made[name]), name
    assert (victim / "thesis.docx").exists()


def test_unwritable_user_cache_falls_back_and_kernels_run(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = dict(os.environ, XDG_CACHE_HOME=str(blocker / "cache"), HOME=str(blocker))
    env.pop("NUMBA_CACHE_DIR", None)
    code = (
        "import os, json; from analyzer.kinds.chess import perft; "
        "print(json.dumps([os.environ['NUMBA_CACHE_DIR'], perft('4k3/8/8/8/8/8/4P3/4K3 w - - 0 1', 2)]))"
    )
    r = _run(code, env)
    assert r.returncode == 0, r.stderr
    cache_dir, nodes = json.loads(r.stdout.strip().splitlines()[-1])
    assert not cache_dir.startswith(str(blocker))
    import chess

    board = chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")
    expected = 0
    for move in list(board.legal_moves):
        board.push(move)
        expected += board.legal_moves.count()
        board.pop()
    assert nodes == expected


_SIGNATURES = """
import sys
from numba.core.registry import CPUDispatcher

def signatures():
    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("analyzer"):
            for attr, obj in vars(mod).items():
                if isinstance(obj, CPUDispatcher):
                    out[f"{name}.{attr}"] = sorted(map(str, obj.signatures))
    return out
"""


def test_scan_after_warmup_compiles_nothing_new(tmp_path):
    """`analyzer warmup` must compile every kernel for the argument types a scan uses: a kernel
    first called with other types (say writable instead of read-only text) compiles again in the
    middle of the scan, a minute of CPU on a cold cache. Checked on the signatures each dispatcher
    holds in the process after warmup and after scans of chess (.pgn, .pgn.zst, an oversized
    game) and draughts inputs."""
    import zstandard

    from conftest import need

    small = need("lichess_small.pgn")
    with open(small, "rb") as fh:
        text = fh.read()[:400_000]
    (tmp_path / "g.pgn").write_bytes(text)
    (tmp_path / "g.pgn.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    big = b'[Event "big"]\n\n1. e4 {' + b"x" * 300_000 + b"} e5 1-0\n\n" + text[:20_000]
    (tmp_path / "big.pgn").write_bytes(big)
    inputs = [
        str(tmp_path / "g.pgn"),
        str(tmp_path / "g.pgn.zst"),
        str(tmp_path / "big.pgn"),
        need("draughts/czech_gametype29.pdn"),
    ]
    code = (
        _SIGNATURES
        + f"""
import json, os
from analyzer.warmup import warmup
from analyzer import engine
from analyzer.kinds import resolve_editions as resolve
warmup()
before = signatures()
for k, inp in enumerate({inputs!r}):
    for eds in (["fide_2018"], ["fide_2018", "fide_1997", "lichess"]):
        cfg = engine.Config(out={str(tmp_path)!r} + f"/out{{k}}", editions=resolve(eds), max_game_bytes=100_000)
        with open(os.devnull, "w") as devnull:
            engine.run_scan([inp], cfg, workers=2, force=True, progress_interval=0, progress_mode="none")
after = signatures()
new = {{k: v for k, v in after.items() if v != before.get(k)}}
# The same kernel compiled for read-only and for writable text is compile time paid twice.
import re
def _no_ro(sig):  # Array(uint8, 1, 'C', True, ...): the 4th field is the read-only flag
    return re.sub(r"(Array\\(\\w+, \\d+, '\\w+'), (True|False)", r"\\1", sig)
twice = {{k: v for k, v in after.items() if len({{_no_ro(s) for s in v}}) < len(v)}}
print(json.dumps([new, twice, sorted(k for k, v in after.items() if v)]))
"""
    )
    r = _run(code, dict(os.environ))
    assert r.returncode == 0, r.stderr[-3000:]
    new, twice, compiled = json.loads(r.stdout.strip().splitlines()[-1])
    # the scans' kernels were seen (an empty `signatures()` would make both checks below pass)
    replays = {f"analyzer.kinds.{k}._replay.replay_batch" for k in ("chess", "russian_draughts")}
    assert replays | {"analyzer.pgn._scan.find_games"} <= set(compiled), compiled
    assert new == {}, f"compiled after warmup: {new}"
    assert twice == {}, f"compiled for both read-only and writable arrays: {twice}"


def test_cli_loads_cached_kernels_without_the_registry_refresh(tmp_path):
    """The command line loads cached kernels without numba's registry refresh (start-up time,
    _numba_env.skip_registry_refresh_on_cache_hits): after a first scan has filled the cache,
    a second one must refresh nothing, and its tables must equal those of numba's own path."""
    import pyarrow.parquet as pq

    from conftest import need

    small = need("lichess_small.pgn")
    with open(small, "rb") as fh:
        (tmp_path / "g.pgn").write_bytes(fh.read()[:600_000])
    cli_scan = f"""
import json, sys
from analyzer import cli
from numba.core import base
calls = []
refresh = base.BaseContext.refresh
base.BaseContext.refresh = lambda self: (calls.append(1), refresh(self))[1]
code = cli.main(["scan", {str(tmp_path / "g.pgn")!r}, "--out", sys.argv[1], "--workers", "2",
                 "--progress-interval", "0"])
from numba.core import caching
print(json.dumps([code, len(calls), getattr(caching.Cache.load_overload, "_analyzer_fast", False)]))
"""
    plain_scan = f"""
import sys
from analyzer import engine
from analyzer.kinds import resolve_editions as resolve
engine.run_scan([{str(tmp_path / "g.pgn")!r}], engine.Config(out=sys.argv[1], editions=resolve(["fide_2018"])),
             workers=2, progress_interval=0)
"""
    results = []
    for k, code in enumerate((cli_scan, cli_scan, plain_scan)):
        out = str(tmp_path / f"out{k}")
        r = subprocess.run([sys.executable, "-c", code, out], capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        results.append(r.stdout.strip().splitlines()[-1] if k < 2 else None)
    code, refreshes, patched = json.loads(results[1])
    assert code == 0 and patched, "the numba internals this relies on have changed"
    assert refreshes == 0, "a scan after a warm cache still refreshed numba's registries"
    for table in ("games", "events"):
        fast = pq.read_table(str(tmp_path / "out1" / table))
        plain = pq.read_table(str(tmp_path / "out2" / table))
        assert fast.num_rows > 0 or table == "events"
        assert fast.equals(plain)
