"""Perft of the bitboard move generator (`analyzer.kinds.chess.perft`) against published node counts.

Default run: for each position the deepest depth whose published count is <= 200,000 nodes.
`pytest -m slow`: every published depth.
"""

from __future__ import annotations

import pytest

from conftest import load_perft_blocks, need

DEFAULT_MAX_NODES = 200_000
RANDOM_EVERY = 20  # default run: every 20th position of random.perft ...
RANDOM_MAX_NODES = 20_000  # ... at depths up to 20,000 nodes


def load_epd_suite(path: str) -> list:
    """perftsuite.epd: `FEN ;D1 n ;D2 n ...` -> [(id, fen, {depth: nodes})]."""
    out = []
    with open(path) as fh:
        for i, line in enumerate(fh):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(";")
            fen = parts[0].strip()
            counts = {}
            for p in parts[1:]:
                tok = p.split()
                if tok and tok[0].startswith("D"):
                    counts[int(tok[0][1:])] = int(tok[1])
            out.append((f"suite-{i + 1}", fen, counts))
    return out


SUITE = load_epd_suite(need("perft/perftsuite.epd"))
TRICKY = load_perft_blocks(need("perft/tricky.perft"))
RANDOM = load_perft_blocks(need("perft/random.perft"))


def test_files_parsed():
    assert len(SUITE) == 127 and all(len(c) >= 4 for _, _, c in SUITE)
    assert len(TRICKY) == 19 and all(c for _, _, c in TRICKY)
    assert len(RANDOM) == 6838
    assert SUITE[0][2][6] == 119060324 and TRICKY[0][2][1] == 48


def _perft():
    from analyzer.kinds.chess import perft  # a missing engine must fail, not skip

    return perft


def _is_chess960_xfen(pid: str, fen: str = "") -> bool:
    """tricky.perft's xfen-* positions (and e.g. "asymmetrical-and-king-on-h": king on h8 with
    a queenside right) have castling rights that only mean something under Chess960 rules: their
    published counts are Chess960 counts. Detected by python-chess: the castling rights that
    survive cleaning differ between the standard and the Chess960 reading of the FEN."""
    if pid.startswith("xfen-"):
        return True
    if not fen:
        return False
    import chess

    std = chess.Board(fen).clean_castling_rights()
    c960 = chess.Board(fen, chess960=True).clean_castling_rights()
    return std != c960


def _run(pid, fen, depth, expected):
    perft = _perft()
    if _is_chess960_xfen(pid, fen):
        got = perft(fen, depth, chess960=True)
    else:
        got = perft(fen, depth)
    assert got == expected, f"{pid} {fen} depth {depth}: expected {expected}, got {got}"


def _default_depth(counts: dict, max_nodes: int) -> int:
    ok = [d for d, n in counts.items() if n <= max_nodes]
    return max(ok) if ok else min(counts)


def _default_cases():
    for pid, fen, counts in SUITE + TRICKY:
        d = _default_depth(counts, DEFAULT_MAX_NODES)
        yield pytest.param(pid, fen, d, counts[d], id=f"{pid}-d{d}")
    for pid, fen, counts in RANDOM[::RANDOM_EVERY]:
        d = _default_depth(counts, RANDOM_MAX_NODES)
        yield pytest.param(pid, fen, d, counts[d], id=f"{pid}-d{d}")


def _full_cases():
    for pid, fen, counts in SUITE + TRICKY:
        for d, n in sorted(counts.items()):
            yield pytest.param(pid, fen, d, n, id=f"{pid}-d{d}")


def _random_full_cases():
    for pid, fen, counts in RANDOM:
        d = max(x for x in counts if x <= 4)
        yield pytest.param(pid, fen, d, counts[d], id=f"{pid}-d{d}")


@pytest.mark.parametrize("pid,fen,depth,expected", list(_default_cases()))
def test_perft(pid, fen, depth, expected):
    _run(pid, fen, depth, expected)


@pytest.mark.slow
@pytest.mark.parametrize("pid,fen,depth,expected", list(_full_cases()))
def test_perft_full_depth(pid, fen, depth, expected):
    _run(pid, fen, depth, expected)


@pytest.mark.slow
@pytest.mark.parametrize("pid,fen,depth,expected", list(_random_full_cases()))
def test_perft_random_depth4(pid, fen, depth, expected):
    _run(pid, fen, depth, expected)


def test_expected_counts_agree_with_python_chess():
    """Guards the file parsing: python-chess reproduces the depth-1/2 counts we read."""
    import chess

    import reference as ref

    bad, checked = [], 0
    for pid, fen, counts in SUITE + TRICKY + RANDOM[::200]:
        board = chess.Board(fen, chess960=_is_chess960_xfen(pid, fen))
        for d in (1, 2):
            if d in counts:
                checked += 1
                if ref.perft(board, d) != counts[d]:
                    bad.append((pid, fen, d, counts[d]))
    assert checked >= 2 * (len(SUITE) + len(TRICKY)), checked  # depths 1 and 2 were read, and compared
    assert not bad, bad[:5]
