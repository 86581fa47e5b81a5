"""Property tests (hypothesis): random mutations of real games never crash the analysis, give
exactly one row per game the run counts, and leave every game whose bytes they did not touch
unchanged.

Bases are 1-4 consecutive games of ``../shared/data/lichess_small.pgn`` and ``edge_cases.pgn``;
mutations are truncations, byte flips, insertions (random bytes and PGN syntax) and deletions,
one to three at a time; the text is read in random block sizes and chunks. The analysis runs in
a subprocess with numba bounds checking on (``NUMBA_BOUNDSCHECK=1``, decided when numba compiles,
so the subprocess uses its own ``NUMBA_CACHE_DIR``: ``$ANALYZER_BOUNDSCHECK_CACHE`` or
``<tmp>/analyzer-fuzz-numba-<uid>``, kept between runs; the first run compiles the kernels, which
takes several minutes). The invariants and mutation helpers are those of ``benchmarks/fuzz.py``
(the long run, >= 100,000 inputs).
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import struct
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("analyzer_fuzz", os.path.join(ROOT, "benchmarks", "fuzz.py"))
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

CACHE = os.environ.get("ANALYZER_BOUNDSCHECK_CACHE") or os.path.join(
    tempfile.gettempdir(), f"analyzer-fuzz-numba-{os.getuid()}"
)


class _Server:
    """benchmarks/fuzz.py --serve in a bounds-checked subprocess."""

    def __init__(self):
        env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=CACHE)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "benchmarks", "fuzz.py"), "--serve", "--cache-dir", CACHE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.base_cache: dict = {}

    def analyze(self, text: bytes, block: int = 8 << 20, chunk: int = 1 << 22, max_game: int = 16 << 20):
        data = pickle.dumps((text, block, chunk, max_game), protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(8)
        assert len(head) == 8, "the analysis subprocess died (a crash outside Python, e.g. a bounds-check abort)"
        (size,) = struct.unpack("<Q", head)
        reply = pickle.loads(self.proc.stdout.read(size))
        assert reply[0] == "ok", f"the analysis raised:\n{reply[1]}"
        return reply[1], reply[2]

    def baseline(self, text: bytes):
        if text not in self.base_cache:
            self.base_cache[text] = self.analyze(text)
        return self.base_cache[text]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def server():
    s = _Server()
    yield s
    s.close()


CORPUS = fuzz.corpus()
NAMES = sorted(CORPUS)


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(NAMES))
    games = CORPUS[name]
    a = draw(st.integers(0, len(games) - 1))
    base = b"".join(games[a : a + draw(st.integers(1, 4))])
    n = len(base)
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "insert_syntax", "delete"]))
        x = draw(st.integers(0, n - 1))
        if kind == "truncate":
            edits.append((x, n, b""))
        elif kind == "flip":
            edits.append((x, x + 1, bytes([base[x] ^ draw(st.integers(1, 255))])))
        elif kind == "insert":
            edits.append((x, x, draw(st.binary(min_size=1, max_size=6))))
        elif kind == "insert_syntax":
            edits.append((x, x, draw(st.sampled_from(fuzz.INSERTS))))
        else:
            edits.append((x, min(n, x + draw(st.integers(1, 64))), b""))
    kept = fuzz.disjoint(edits)
    block = draw(st.sampled_from([64, 1000, 1 << 16, 8 << 20]))
    chunk = draw(st.sampled_from([7, 100, 4096, 1 << 22]))
    return base, kept, block, chunk


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=mutated())
@pytest.mark.slow  # its bounds-checked kernels compile in its own cache: ~3 min on a fresh machine
def test_mutations_never_crash_nor_lose_games(server, case):
    base, edits, block, chunk = case
    text, ranges = fuzz.apply_mutations(base, edits)
    n, rows = server.analyze(text, block, chunk)
    problems = [p for p in fuzz.check_rows(text, n, rows) if not p.startswith("KNOWN")]
    assert not problems, problems
    _, base_rows = server.baseline(base)
    problems, _lost, _changed = fuzz.check_untouched(base, base_rows, ranges, rows)
    assert not problems, problems


class _InProcess:
    """fuzz.analyze in the test process (the JIT kernels of the run's cache, no bounds checks):
    the bounds-checked server's answers, for checks of the checker itself, without compiling
    every kernel again with bounds checks (24 s in a fresh clone)."""

    def analyze(self, text: bytes, block: int = 8 << 20, chunk: int = 1 << 22, max_game: int = 16 << 20):
        return fuzz.analyze(text, block, chunk, max_game)

    def baseline(self, text: bytes):
        return self.analyze(text)


def test_untouched_rule_is_not_vacuous():
    """The comparison really sees the games: a flip in the middle game of three leaves the
    other two compared (and equal), and the truncated last game of a cut text is accounted for."""
    server = _InProcess()
    games = CORPUS["lichess_small.pgn"][:3]
    base = b"".join(games)
    _, base_rows = server.baseline(base)
    mid = len(games[0]) + len(games[1]) // 2
    text, ranges = fuzz.apply_mutations(base, [(mid, mid + 1, b"{")])
    assert [k for _, _, k in fuzz.untouched_games(base, base_rows, ranges)] == [0, 2]
    n, rows = server.analyze(text)
    assert fuzz.check_untouched(base, base_rows, ranges, rows)[0] == []
    cut = base[: len(games[0]) + 300]
    n, rows = server.analyze(cut)
    assert n == 2 and fuzz.check_rows(cut, n, rows) == []
