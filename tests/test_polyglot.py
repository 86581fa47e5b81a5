"""Polyglot known-answer hashes and `analyzer.kinds.chess.fide_key` against `chess.polyglot.zobrist_hash`.

`fide_key` is Polyglot's Zobrist key except that the en-passant file is hashed only when an
en-passant capture is *legal* (FIDE 9.2.2). python-chess's `zobrist_hash` hashes it whenever a pawn
stands beside the e.p. square ("legality of the potential capture is irrelevant"), so the two must
agree everywhere except where an e.p. capture is pseudo-legal but illegal; there `fide_key` must
equal the hash of the same position without the e.p. square.
"""

from __future__ import annotations

import os
import sys

import chess
import chess.pgn
import chess.polyglot
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref
from conftest import need

# The official test vectors of the Polyglot book format specification (H. G. Muller's
# "PolyGlot opening book format" page): position after the moves -> key.
POLYGLOT_VECTORS = [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 0x463B96181691FC9C),
    ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1", 0x823C9B50FD114196),
    ("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2", 0x0756B94461C50FB0),
    ("rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2", 0x662FAFB965DB29D4),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", 0x22A48B5A8E47FF78),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPPKPPP/RNBQ1BNR b kq - 1 3", 0x652A607CA3F242C1),
    ("rnbq1bnr/ppp1pkpp/8/3pPp2/8/8/PPPPKPPP/RNBQ1BNR w - - 2 4", 0x00FDD303C946BDD9),
    ("rnbqkbnr/p1pppppp/8/8/PpP4P/8/1P1PPPP1/RNBQKBNR b KQkq c3 0 3", 0x3C8123EA7B067637),
    ("rnbqkbnr/p1pppppp/8/8/P6P/R1p5/1P1PPPP1/1NBQKBNR b Kkq - 1 4", 0x5C3F9B829B279560),
]
# The same vectors as move sequences from the start position (the spec's form).
POLYGLOT_MOVES = [
    [],
    ["e2e4"],
    ["e2e4", "d7d5"],
    ["e2e4", "d7d5", "e4e5"],
    ["e2e4", "d7d5", "e4e5", "f7f5"],
    ["e2e4", "d7d5", "e4e5", "f7f5", "e1e2"],
    ["e2e4", "d7d5", "e4e5", "f7f5", "e1e2", "e8f7"],
    ["a2a4", "b7b5", "h2h4", "b5b4", "c2c4"],
    ["a2a4", "b7b5", "h2h4", "b5b4", "c2c4", "b4c3", "a1a3"],
]

# Positions with an e.p. square where the capture is pseudo-legal but illegal.
ILLEGAL_EP = [
    "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",  # e4xd3 would expose the black king on a4 to Qh4
    "1b1k4/8/8/1rPpK3/8/8/8/8 w - d6 0 1",  # c5xd6 would expose Ke5 to Rb5 (tricky.perft)
]


def _fide_key():
    from analyzer.kinds.chess import fide_key  # a missing engine must fail, not skip

    return fide_key


def _expected_fide_key(board: chess.Board) -> int:
    """python-chess Zobrist with the e.p. square dropped unless an e.p. capture is legal."""
    if board.ep_square is not None and not board.has_legal_en_passant():
        board = board.copy(stack=False)
        board.ep_square = None
    return chess.polyglot.zobrist_hash(board)


def test_python_chess_reproduces_the_vectors():
    for (fen, key), moves in zip(POLYGLOT_VECTORS, POLYGLOT_MOVES):
        board = chess.Board()
        for uci in moves:
            board.push_uci(uci)
        assert board.board_fen() == chess.Board(fen).board_fen()
        assert chess.polyglot.zobrist_hash(board) == key
        assert chess.polyglot.zobrist_hash(chess.Board(fen)) == key


def test_vendored_table_and_start_position_match_python_chess():
    """The scan does not import python-chess (start-up time): its copy of the Polyglot numbers
    and its standard start arrays must be python-chess's."""
    import numpy as np

    from analyzer.kinds.chess import _polyglot
    from analyzer.kinds.chess.analyze import _standard_start, _start_arrays

    assert tuple(chess.polyglot.POLYGLOT_RANDOM_ARRAY) == _polyglot.POLYGLOT_RANDOM
    ours_all, theirs_all = _standard_start(), _start_arrays(chess.Board())
    assert len(ours_all) == len(theirs_all) > 0  # zip would pass over a missing array, or all of them
    for ours, theirs in zip(ours_all, theirs_all):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


@pytest.mark.parametrize("fen,key", POLYGLOT_VECTORS, ids=[f"{k:016x}" for _, k in POLYGLOT_VECTORS])
def test_polyglot_vectors(fen, key):
    assert _fide_key()(fen) == key, f"{fen}: expected {key:016x}, got {_fide_key()(fen):016x}"


@pytest.mark.parametrize("fen", ILLEGAL_EP)
def test_pseudo_legal_but_illegal_ep_not_hashed(fen):
    board = chess.Board(fen)
    assert board.has_pseudo_legal_en_passant() and not board.has_legal_en_passant()
    without = chess.Board(fen.replace(fen.split()[3], "-"))
    assert chess.polyglot.zobrist_hash(board) != chess.polyglot.zobrist_hash(without)
    got = _fide_key()(fen)
    assert got == chess.polyglot.zobrist_hash(without), f"{fen}: got {got:016x}"
    assert got == _fide_key()(without.fen())


def test_legal_ep_hashed():
    fen = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
    assert chess.Board(fen).has_legal_en_passant()
    assert _fide_key()(fen) != _fide_key()(fen.replace(" f6 ", " - "))


def _positions(path: str):
    """(game index, ply, FEN with the e.p. square after every double push, board) for every
    position of every standard-chess game of the file."""
    for gi, game in enumerate(ref.read_games(ref.read_text(path))):
        board = game.board()
        if board.chess960:
            continue
        yield gi, 0, board.fen(en_passant="fen"), board
        for ply, move in enumerate(game.mainline_moves(), 1):
            board.push(move)
            yield gi, ply, board.fen(en_passant="fen"), board


@pytest.mark.parametrize(
    "name",
    [
        # every position of 2,000 games through python-chess: 31 s idle; the edge cases take the same path
        pytest.param("lichess_small.pgn", marks=pytest.mark.slow),
        "edge_cases.pgn",
    ],
)
def test_fide_key_on_every_position(name):
    """fide_key == zobrist_hash wherever no e.p. capture is pseudo-legal but illegal, and ==
    zobrist_hash without the e.p. square where it is."""
    fide_key = _fide_key()
    n = n_illegal = 0
    bad = []
    for gi, ply, fen, board in _positions(need(name)):
        illegal = (
            board.ep_square is not None and board.has_pseudo_legal_en_passant() and not board.has_legal_en_passant()
        )
        exp = _expected_fide_key(board)
        if not illegal:
            assert exp == chess.polyglot.zobrist_hash(board)
        n += 1
        n_illegal += illegal
        got = fide_key(fen)
        if got != exp:
            bad.append(
                f"game {gi} ply {ply} {fen}: expected {exp:016x} got {got:016x}"
                + (" (pseudo-legal, illegal e.p.)" if illegal else "")
            )
    print(f"{name}: {n} positions, {n_illegal} with a pseudo-legal but illegal e.p. capture")
    assert n > 1000
    if name == "edge_cases.pgn":
        assert n_illegal >= 24
    assert not bad, f"{len(bad)} of {n} positions differ:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("name", ["lichess_small.pgn", "edge_cases.pgn"])
def test_replay_keys_are_polyglot(name):
    """The per-ply keys of the replay (`facts["key"]`) are the same FIDE keys, as values:
    zobrist_hash wherever no e.p. capture is pseudo-legal but illegal, else zobrist_hash without
    the e.p. square (standard-chess games; Chess960 games are skipped)."""
    import numpy as np

    from analyzer.api import analyze_bytes  # a missing engine must fail, not skip

    path = need(name)
    with open(path, "rb") as fh:
        res = analyze_bytes(fh.read(), source=name, editions=(ref.EDITION,), keep_facts=True)
    off = np.asarray(res.facts["game_offsets"])
    keys = np.asarray(res.facts["key"]).astype(np.uint64)
    games = list(ref.read_games(ref.read_text(path)))
    assert len(off) == len(games) + 1
    bad, n = [], 0
    for gi, game in enumerate(games):
        board = game.board()
        if board.chess960:
            continue
        got = [int(k) for k in keys[off[gi] : off[gi + 1]]]
        moves = list(game.mainline_moves())
        assert len(got) == len(moves) + 1, (gi, len(got), len(moves) + 1)
        for ply in range(len(moves) + 1):
            if ply:
                board.push(moves[ply - 1])
            exp = _expected_fide_key(board)
            n += 1
            if got[ply] != exp:
                bad.append(
                    f"game {gi} ply {ply} {board.fen(en_passant='fen')}: expected {exp:016x} got {got[ply]:016x}"
                )
                break
    assert n > 1000
    assert not bad, f"{len(bad)} games differ:\n" + "\n".join(bad[:10])
