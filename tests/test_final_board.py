"""Each game's final board, as the replay leaves it (final_bb, final_st: read by the rules that
look at a whole position, dead positions and tablebase probes), against python-chess replaying
the same moves: pieces, side to move, castling rights, e.p. square and halfmove clock, on every
game of lichess_small.pgn and edge_cases.pgn (Chess960 and games from a FEN among them)."""

from __future__ import annotations

import io
import os
import sys

import chess
import chess.pgn
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import need


@pytest.mark.parametrize("name", ["lichess_small.pgn", "edge_cases.pgn"])
def test_final_board_is_python_chess_board_after_the_last_legal_move(name):
    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess.position import to_board

    with open(need(name), "rb") as fh:
        data = fh.read()
    res = analyze_bytes(data, source=name, editions=("fide_2018",), keep_facts=True)
    games = sorted(res.games.to_pylist(), key=lambda g: g["game_index"])
    facts = res.facts
    text = data.decode("utf-8", "replace")
    stream = io.StringIO(text)
    checked = skipped = 0
    for g in games:
        game = chess.pgn.read_game(stream)
        assert game is not None
        if g["plies"] is None or g["plies"] < 0 or g["variant"] not in (None, "Standard", "Chess960", "From Position"):
            assert facts["final_st"][g["game_index"], 0] == -1 or g["plies"] >= 0
            skipped += 1
            continue
        board = game.board()
        for move in list(game.mainline_moves())[: g["plies"]]:
            board.push(move)
        i = g["game_index"]
        ours = to_board(facts["final_bb"][i], facts["final_st"][i], facts["final_ct"][i])
        assert ours.board_fen() == board.board_fen(), (i, g["site"])
        assert ours.turn == board.turn, i
        assert ours.clean_castling_rights() == board.clean_castling_rights(), i
        assert ours.ep_square == board.ep_square, i
        assert ours.halfmove_clock == board.halfmove_clock, i
        checked += 1
    assert checked > 0.95 * len(games), (checked, skipped)


def test_a_game_not_replayed_has_no_final_board():
    from analyzer.api import analyze_bytes

    text = b'[Event "x"]\n[Variant "Atomic"]\n\n1. e4 e5 *\n\n[Event "y"]\n\n1. e4 e5 2. Nf3 *\n'
    res = analyze_bytes(text, source="t", editions=("fide_2018",), keep_facts=True)
    assert res.games.num_rows == 2
    assert res.facts["final_st"][0, 0] == -1  # the atomic game: replayed by the variants' kernels
    assert res.facts["final_st"][1, 0] == 1  # black to move after 2. Nf3
