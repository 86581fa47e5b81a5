"""The numba cache works from a read-only install: NUMBA_CACHE_DIR falls back to a writable place."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def _run(code, env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)


def test_cache_dir_defaults_to_user_cache(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    r = _run("import analyzer._numba_env, os; print(os.environ['NUMBA_CACHE_DIR'])", env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "cache" / "analyzer" / "numba")


def test_unwritable_user_cache_falls_back_and_kernels_run(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = dict(os.environ, XDG_CACHE_HOME=str(blocker / "cache"), HOME=str(blocker))
    env.pop("NUMBA_CACHE_DIR", None)
    code = ("import os, json; from analyzer.chess import perft; "
            "print(json.dumps([os.environ['NUMBA_CACHE_DIR'], perft('4k3/8/8/8/8/8/4P3/4K3 w - - 0 1', 2)]))")
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
