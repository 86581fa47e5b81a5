"""PDN input handling: other GameTypes, notations, comments, bad input -> status, never an exception."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analyzer import codes, tables
from analyzer.analysis import analyze_block
from analyzer.kinds import resolve_editions
from analyzer.kinds.russian_draughts.pdn import parse_fen
from conftest import analyze, game_spans, need, verdict_rows


def _data(name: str) -> Path:
    return Path(need(f"draughts/{name}"))


def _analyze(data: bytes, editions=("fshr_russian",), source="test"):
    res = analyze(data, editions=editions, source=source)
    assert res.games.schema.equals(tables.GAMES_SCHEMA)
    assert res.verdicts.schema.equals(tables.VERDICTS_SCHEMA)
    assert res.events.schema.equals(tables.EVENTS_SCHEMA)
    return res


def _rows(data: bytes, editions=("fshr_russian",)):
    return verdict_rows(_analyze(data, editions))


@pytest.mark.parametrize(
    "name,count",
    [
        ("international_gametype20.pdn", 207),
        ("english_gametype21.pdn", 111),
        ("italian_gametype22.pdn", 53),
        ("czech_gametype29.pdn", 298),
    ],
)
def test_other_gametypes_unsupported(name, count):
    rows = _rows(_data(name).read_bytes())
    assert len(rows) == count
    assert {r["status"] for r in rows} == {"unsupported_variant"}
    assert all("GameType" in r["error"] for r in rows)
    assert all(r["game_type"] == "russian_draughts" for r in rows)


def test_one_games_row_per_game_one_verdict_row_per_game_and_edition():
    data = _data("russian_gametype25.pdn").read_bytes()
    res = _analyze(data, source="ussr", editions=("fshr_russian", "fmjd_64"))
    assert res.games.num_rows == 209 and res.verdicts.num_rows == 2 * 209
    g = res.games.to_pylist()
    assert [r["game_index"] for r in g] == list(range(209))
    assert {r["edition"] for r in res.verdicts.to_pylist()} == {"fshr_russian", "fmjd_64"}
    assert "source" not in res.games.column_names  # the partition key: the folder, on disk
    assert {r["result"] for r in g} <= {"1-0", "0-1", "1/2-1/2"}
    starts, _ = game_spans(data, draughts=True)
    assert [r["byte_offset"] for r in g] == [int(s) for s in starts]
    assert data[g[0]["byte_offset"] :].startswith(b"[White")


def test_block_offsets_and_indices():
    data = _data("russian_gametype25.pdn").read_bytes()
    starts, ends = game_spans(data, draughts=True)
    starts, ends = starts[10:13], ends[10:13]
    buf = np.frombuffer(data, np.uint8)
    res = analyze_block(
        "russian_draughts",
        buf,
        starts,
        ends,
        source="s",
        first_game_index=1000,
        base_offset=5_000_000,
        editions=resolve_editions(["fshr_russian"]),
    )
    g = res.games.to_pylist()
    assert [r["game_index"] for r in g] == [1000, 1001, 1002]
    assert [r["byte_offset"] for r in g] == [5_000_000 + int(s) for s in starts]


def test_chess_edition_for_draughts_games_is_refused():
    with pytest.raises(ValueError, match="editions of \\['chess'\\] given for russian_draughts"):
        analyze(b'[GameType "25"]\n1. c3-d4 *\n', editions=("fide_2018",), kind="russian_draughts")
    with pytest.raises(ValueError, match="unknown edition 'fshr_rusian'; did you mean 'fshr_russian'"):
        analyze(b'[GameType "25"]\n1. c3-d4 *\n', editions=("fshr_rusian",))


GAME = '[Event "x"]\n[GameType "{gt}"]\n[Result "{res}"]\n{fen}\n{moves}\n\n'


def _one(moves: str, res: str = "*", gt: str = "25", fen: str = "") -> dict:
    data = GAME.format(gt=gt, res=res, fen=f'[FEN "{fen}"]' if fen else "", moves=moves).encode()
    (row,) = _rows(data)
    return row


def test_notations_and_pdn_syntax():
    alg = _one("1. c3-d4 b6-a5 {a comment 2. a1-b2} 2. d4-c5 (2. b2-c3 a5-b4) d6:b4 $1 3. a3:c5 ;x\n 1-0", "1-0")
    num = _one("1. 22-18 9-13 2. 18-14 10x17 3. 21x14 1-0", "1-0")
    glued = _one("1.22-18 9-13 2.18-14 2...10x17 3.21x14! 2-0", "2-0")
    for r in (alg, num, glued):
        assert r["status"] == "ok" and r["plies"] == 5 and r["result"] == "1-0", r
    assert _one("1. 22-18 11-16 0-2", "0-2")["result"] == "0-1"
    # long-form GameType strings are Russian too
    for gt in ("25,W,8,8,A0,0", "25,W,8,8,A1,0"):
        assert _one("1. c3-d4 *", gt=gt)["status"] == "ok"
    assert _one("1. c3-d4 *", gt="26,W,8,8,A0,0")["status"] == "unsupported_variant"


def test_fen_variants():
    assert parse_fen("W:W21-32:B1-12") == parse_fen(
        "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"
    )
    assert parse_fen("W:Wa1,Kc3:Bb8.") == (1 << 28, 1 << 21, 1, 0, 0)
    assert parse_fen("B:W18:B14:H0:F1")[4] == 1
    for bad in ("X:W1:B2", "W:W1,1:B3", "W:W33:B1", "W:Wb1x:B2", "W:W2:B30"):  # last: man on its crowning row
        assert _one("*", fen=bad)["status"] == "bad_fen"
    row = _one("1. c3-d4 *", fen="W:W99:B1")
    assert row["status"] == "bad_fen" and "W:W99:B1" in row["error"]


def test_bad_input_gives_status():
    r = _one("1. c3-d4 f6-g5 2. e3-e5 1-0", "1-0")  # e3-e5 is not a diagonal step
    assert r["status"] == "illegal_move" and r["error_ply"] == 2 and "'e3-e5'" in r["error"]
    assert "ply 2" in r["error"] and r["plies"] == 2
    r = _one("1. c3-d4 f6-g5 2. g3-f4 1-0", "1-0")  # nothing attacked: legal
    assert r["status"] == "ok"
    r = _one("1. c3-d4 d6-c5 2. a1-b2 1-0", "1-0")  # d4:b6 is compulsory
    assert r["status"] == "illegal_move" and r["error_ply"] == 2
    r = _one("1. c3-d4 hello 1-0", "1-0")
    assert r["status"] == "bad_token" and "'hello'" in r["error"] and r["error_ply"] == 1
    r = _one("1. c3-d4 d6-e5 2. b2-c3", "1-0")  # input ends without a result
    assert r["status"] == "truncated" and r["plies"] == 3
    r = _one("1. c3-d4 d6-e5 2. b2-c", "1-0")  # cut inside a token
    assert r["status"] == "truncated" and r["plies"] == 2 and "'b2-c'" in r["error"]
    r = _one("1. c3-d4 {unterminated comment", "1-0")
    assert r["status"] == "truncated" and r["plies"] == 1
    r = _one("1. - - 2. - - 1/2-1/2", "1/2-1/2")
    assert r["status"] == "null_move" and r["error_ply"] == 0
    r = _one("1-0", "1-0")
    assert r["status"] == "no_moves" and r["plies"] == 0


def test_ambiguous_capture_resolved_by_path():
    # White man d4 (18); black men c5 (14), c7 (6), d2 (26), e5 (15), g5 (16), g7 (8).
    # d4:h4 can be d4xe5-f6xg5-h4 (takes e5, g5) or d4xc5-b6xc7-d8 (crowned) then the new king
    # d8xg5-h4 (takes c5, c7, g5): two different moves with the same start and end square.
    fen = "W:W18:B14,6,26,15,16,8"
    assert _one("1. d4:h4 *", fen=fen)["status"] == "ambiguous_move"
    assert _one("1. 18x20 *", fen=fen)["status"] == "ambiguous_move"
    short = _one("1. d4:f6:h4 *", fen=fen)
    long_ = _one("1. d4:b6:d8:h4 *", fen=fen)
    assert short["status"] == long_["status"] == "ok"
    assert _one("1. d4:f6:h4 g7:e5 *", fen=fen)["status"] == "illegal_move"  # f6 is empty after the capture
    draughts = pytest.importorskip("draughts")
    b = draughts.Board(variant="russian", fen="W:Wd4:Bc5,c7,d2,e5,g5,g7")
    # the independent generator agrees: two moves d4 -> h4 (pydraughts numbering 14 -> 16)
    # with different captured sets
    caps = {frozenset(m.captures) for m in b.legal_moves() if m.steps_move[0] == 14 and m.steps_move[-1] == 16}
    assert len(caps) == 2 and {len(c) for c in caps} == {2, 3}


def test_promotion_during_capture_continues_as_king():
    # the long path above: the man crowned on d8 goes on capturing as a king
    row = _one("1. d4:b6:d8:h4 *", fen="W:W18:B14,6,26,15,16,8")
    assert row["status"] == "ok"
    from analyzer.kinds.russian_draughts.analyze import replay_positions

    data = GAME.format(gt="25", res="*", fen='[FEN "W:W18:B14,6,26,15,16,8"]', moves="1. d4:b6:d8:h4 *").encode()
    ((_status, positions),) = replay_positions(data)
    wm, wk, bm, _bk, _stm = positions[-1]
    assert wm == 0 and wk == 1 << 19  # a king on h4 (20)
    assert bm == (1 << 25) | (1 << 14) | (1 << 7)  # d2, e5, g7 left


def test_kernel_does_not_raise_on_garbage():
    for junk in (b"", b"\x00\xff" * 50, b'[GameType "25"]\n(((((', b"1. c3-d4 " * 3 + b"}{)(", b'[FEN "W"]\n1-0'):
        res = _analyze(junk)
        assert res.games.num_rows == len(game_spans(junk, draughts=True)[0])
    empty = _analyze(b"")
    assert empty.games.num_rows == 0 and empty.verdicts.num_rows == 0 and empty.events.num_rows == 0


def test_mutated_file_never_raises():
    """Random damage (changed bytes, cut anywhere): every game still gets its row, and one
    verdict row per edition."""
    import random

    data = _data("russian_gametype25.pdn").read_bytes()
    rnd = random.Random(5)
    statuses = set()
    for _ in range(8):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 100)):
            b[rnd.randrange(len(b))] = rnd.choice(b'abcdefgh12345678-:x{}()[] \n"*/.K,W:B')
        cut = bytes(b[: rnd.randrange(len(b))])
        res = _analyze(cut, editions=("fshr_russian", "fmjd_64"))
        n = len(game_spans(cut, draughts=True)[0])
        assert res.games.num_rows == n and res.verdicts.num_rows == 2 * n
        statuses.update(res.games.column("status").to_pylist())
    assert "ok" in statuses and statuses <= set(codes.STATUSES)


def test_a_text_that_mentions_gametype_is_not_draughts(tmp_path):
    """Draughts without the .pdn extension are recognised by a GameType tag, where tags are (at
    the start of a line); a text that only mentions one (a README) is not read as draughts."""
    from analyzer.io import sources

    cases = {
        "README.md": (b'# Games\n\nDraughts files carry a `[GameType "25"]` tag, e.g. [GameType "25"].\n', "chess"),
        "games.txt": (b'[Event "x"]\n[GameType "25"]\n[Result "1-0"]\n\n1. c3-d4 1-0\n', "russian_draughts"),
        "bom.txt": (b'\xef\xbb\xbf[GameType "25,W,8,8,A0,0"]\n\n1. c3-d4 *\n', "russian_draughts"),
        "chess.pgn": (b'[Event "x"]\n  [GameType "0"]\n\n1. e4 *\n', "chess"),
    }
    for name, (text, kind) in cases.items():
        (tmp_path / name).write_bytes(text)
        assert sources.inspect(str(tmp_path / name)).game_type == kind, name
