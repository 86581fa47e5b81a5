"""Replay of real Russian-draughts games, checked move by move against pydraughts."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from analyzer.kinds.russian_draughts._board import legal_moves, square_name
from analyzer.kinds.russian_draughts.analyze import replay_positions
from analyzer.kinds.russian_draughts.pdn import parse_fen
from conftest import analyze, need


def _data(name: str) -> Path:
    return Path(need(f"draughts/{name}"))


RUSSIAN = _data("russian_gametype25.pdn")


def _py_square(i: int) -> int:
    """Internal index (0 = b8 ... 31 = g1) -> pydraughts' Russian numbering (1 = a1, 2 = c1 ...)."""
    y, x = divmod(i, 4)
    return (7 - y) * 4 + x + 1


def _to_py_fen(pos) -> str:
    wm, wk, bm, bk, stm = pos

    def sq(bb, king):
        return [("K" if king else "") + square_name(i) for i in range(32) if bb >> i & 1]

    white = ",".join(sq(wm, False) + sq(wk, True))
    black = ",".join(sq(bm, False) + sq(bk, True))
    return f"{'W' if stm == 0 else 'B'}:W{white}:B{black}"


def _apply(pos, mv):
    """The position after `mv` by the side to move, worked out here (not by the kernel's own
    move function), so that the move found between two replayed positions is an independent
    reading."""
    wm, wk, bm, bk, stm = pos
    frm, to, capt, promo, _ = mv
    if stm == 0:
        wm, wk = _move_pieces(wm, wk, frm, to, promo)
        bm, bk = bm & ~capt, bk & ~capt
    else:
        bm, bk = _move_pieces(bm, bk, frm, to, promo)
        wm, wk = wm & ~capt, wk & ~capt
    return wm, wk, bm, bk, 1 - stm


def _move_pieces(men, kings, frm, to, promo):
    """(men, kings) of the side that moves from `frm` to `to`: a king stays a king, a man is
    crowned when `promo` says so."""
    fb, tb = 1 << frm, 1 << to
    if kings & fb:
        return men, kings & ~fb | tb
    men &= ~fb
    return (men, kings | tb) if promo else (men | tb, kings)


@pytest.fixture(scope="module")
def russian():
    data = RUSSIAN.read_bytes()
    return data, replay_positions(data)


def test_all_playable_games_replay(russian):
    data, games = russian
    statuses = [s for s, _ in games]
    assert len(statuses) == 209
    assert statuses.count("ok") == 208
    bad = [i for i, s in enumerate(statuses) if s != "ok"]
    assert len(bad) == 1
    g = analyze(data, editions=("fshr_russian",)).games
    row = g.slice(bad[0], 1).to_pylist()[0]
    assert row["status"] == "null_move"
    assert row["black"] == "Лебедев Ю." and "placeholder" in row["error"] and row["error_ply"] == 0
    plies = [len(p) - 1 for s, p in games if s == "ok"]
    assert sum(plies) > 10000 and min(plies) > 10


def test_positions_match_pydraughts(russian):
    """Every ply of every playable game: the move our replay chose is pushed, jump by jump, into
    pydraughts (which checks each jump against its own legal-move generator, compulsory capture
    included); the positions must then be identical, side to move included. Every 8th position
    also compares the full sets of legal moves (from, to, captured squares)."""
    # pydraughts, the test-only oracle: only this test needs it (the others run without it)
    draughts = pytest.importorskip("draughts")
    _, games = russian
    checked = 0
    compared_sets = 0
    for gi, (status, positions) in enumerate(games):
        if status != "ok":
            continue
        board = draughts.Board(variant="russian", fen=_to_py_fen(positions[0]))
        for k in range(1, len(positions)):
            prev, cur = positions[k - 1], positions[k]
            mine = legal_moves(prev)
            if k % 8 == 1:
                py_moves, py_capts = board._legal_moves_board()
                py_set = {
                    (m[0][0], m[-1][-1], frozenset(c for c in caps if c is not None))
                    for m, caps in zip(py_moves, py_capts)
                }
                my_set = {
                    (_py_square(f), _py_square(t), frozenset(_py_square(i) for i in range(32) if c >> i & 1))
                    for f, t, c, _, _ in mine
                }
                assert my_set == py_set, (gi, k, _to_py_fen(prev))
                compared_sets += 1
            played = [m for m in mine if _apply(prev, m) == cur]
            assert played, (gi, k)
            frm, _to, _capt, _promo, path = played[0]
            steps = [frm] + path
            board_move = [[_py_square(a), _py_square(b)] for a, b in itertools.pairwise(steps)]
            board.push(draughts.Move(board_move=board_move, variant="russian"))
            assert parse_fen(board.fen) == cur, (gi, k, board.fen, _to_py_fen(cur))
            checked += 1
    assert checked > 10000
    assert compared_sets > 1000


def test_per_ply_keys_material_and_counters(russian):
    """Zobrist key = f(position, side to move) with no collision over the file; the material
    signature and the two clocks agree with a plain Python recount."""
    from analyzer.kinds.russian_draughts._board import zobrist_key
    from analyzer.kinds.russian_draughts.analyze import replay_facts

    data, games = russian
    _, _, _active, f = replay_facts(data)
    seen: dict[int, tuple] = {}
    for gi, (status, positions) in enumerate(games):
        if status != "ok":
            continue
        o = int(f.off[gi])
        irrev = mat = 0
        for k, pos in enumerate(positions):
            key = int(f.key[o + k])
            assert key == int(zobrist_key(*(np.uint64(x) for x in pos[:4]), pos[4]))
            assert seen.setdefault(key, pos) == pos
            wm, wk, bm, bk, stm = pos
            assert int(f.material[o + k]) == (
                bin(wm).count("1") | bin(wk).count("1") << 4 | bin(bm).count("1") << 8 | bin(bk).count("1") << 12
            )
            if k:
                prev = positions[k - 1]
                mover_men = prev[0] if prev[4] == 0 else prev[2]
                moved_man = (mover_men & ~(pos[0] if prev[4] == 0 else pos[2])) != 0
                capture = bin(prev[0] | prev[1] | prev[2] | prev[3]).count("1") != bin(wm | wk | bm | bk).count("1")
                promo = bin(prev[1] | prev[3]).count("1") != bin(wk | bk).count("1")
                irrev = 0 if (moved_man or capture) else irrev + 1
                mat = 0 if (capture or promo) else mat + 1
            assert int(f.irrev[o + k]) == irrev and int(f.matclock[o + k]) == mat
            assert int(f.stm[o + k]) == stm
    assert len(seen) > 9000  # distinct positions (games share opening positions)
