"""Inputs at their edges (issue 27): a chess game cut inside its movetext where the input ends
is `truncated` (as a draughts game is), its facts kept up to the cut; UTF-16 and UTF-32 text
with a byte-order mark is read as the same games as its UTF-8 form."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import chess.pgn
import pytest
import zstandard

from analyzer.api import analyze_bytes
from conftest import out_tables, same_tables, scan

CUT = 2729760  # the issue's cut of lichess_small: inside game 999's movetext, which ends "... 70. "


def _scan(src, out, editions=("fide_2018",)):
    return scan(src, out, editions=editions)


def test_chess_game_cut_at_the_end_of_the_input_is_truncated(tmp_path, small_text):
    cut = small_text[:CUT]
    assert cut.endswith(b"70. ")
    src = tmp_path / "half.pgn"
    src.write_bytes(cut)
    summary, code = _scan(src, tmp_path / "out")
    assert code == 0
    games, verdicts, _ = out_tables(tmp_path / "out")
    last = games.row(-1, named=True)
    assert last["status"] == "truncated" and "no termination marker" in last["error"], last
    assert last["game_index"] == cut.count(b"[Event ") - 1 > 0  # the games before it are compared below
    # The facts up to the cut are kept: as many plies as python-chess reads in the cut text.
    head = cut[last["byte_offset"] :].decode()
    assert last["plies"] == last["error_ply"] == len(list(chess.pgn.read_game(io.StringIO(head)).mainline_moves()))
    assert verdicts.filter(verdicts["game_index"] == last["game_index"]).height == 1
    # Every game before it is as in the whole file's scan.
    whole = tmp_path / "whole.pgn"
    whole.write_bytes(small_text)
    _scan(whole, tmp_path / "whole_out")
    ref = out_tables(tmp_path / "whole_out")[0].drop("source").head(last["game_index"])
    assert games.drop("source").head(last["game_index"]).equals(ref)
    assert summary["status"].get("truncated") == 1


def test_missing_marker_inside_the_input_is_not_a_cut(tmp_path, small_text):
    """Only where the input ends: a game without a marker followed by another game keeps its
    status (its text is whole)."""
    first_end = small_text.index(b"\n[Event ", 10)
    game = small_text[:first_end].rstrip()
    assert game.endswith((b"1-0", b"0-1", b"1/2-1/2"))
    unmarked = game.rsplit(b" ", 1)[0] + b"\n\n"
    res = analyze_bytes(unmarked + small_text[first_end + 1 :][:200000].rsplit(b"\n[Event ", 1)[0] + b"\n")
    assert res.games.column("status").to_pylist()[0] == "ok"
    res = analyze_bytes(unmarked)  # the same game where the input ends
    assert res.games.column("status").to_pylist() == ["truncated"]


def test_draughts_game_cut_the_same_way_is_truncated():
    from conftest import read_data

    text = read_data("draughts/russian_gametype25.pdn")
    first = text.index(b"[Event", 10)
    cut = text[: first + (text.index(b"[Event", first + 10) - first) // 2]
    res = analyze_bytes(cut, editions=("fshr_russian",))
    assert res.games.column("status").to_pylist()[-1] == "truncated"


ENCODINGS = {
    "utf-16-le": b"\xff\xfe",
    "utf-16-be": b"\xfe\xff",
    "utf-32-le": b"\xff\xfe\x00\x00",
    "utf-32-be": b"\x00\x00\xfe\xff",
}


@pytest.fixture(scope="module")
def utf8_tables(tmp_path_factory, small_text):
    d = tmp_path_factory.mktemp("u8")
    src = d / "g.pgn"
    src.write_bytes(small_text[:400000].rsplit(b"\n[Event ", 1)[0] + b"\n")
    summary, code = _scan(src, d / "out", ("fide_2018", "lichess"))
    assert code == 0 and summary["games"] > 100
    return src.read_bytes(), out_tables(d / "out")


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_utf16_and_utf32_with_a_bom_are_read_as_utf8(tmp_path, utf8_tables, encoding):
    """Issue 27.8: UTF-16 input became one bad_token row and a warning without the encoding."""
    text, ref = utf8_tables
    encoded = ENCODINGS[encoding] + text.decode().encode(encoding)
    src = tmp_path / "g.pgn.zst"  # compressed too: the encoding is of the decompressed text
    src.write_bytes(zstandard.ZstdCompressor().compress(encoded))
    summary, code = _scan(src, tmp_path / "out", ("fide_2018", "lichess"))
    assert code == 0, summary
    same_tables(ref, out_tables(tmp_path / "out"))


def test_utf16_on_standard_input(tmp_path, utf8_tables):
    text, ref = utf8_tables
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", "-", "--source-name", "g", "--out", str(tmp_path / "out")]
        + ["--edition", "fide_2018,lichess", "--progress", "none"],
        input=b"\xff\xfe" + text.decode().encode("utf-16-le"),
        capture_output=True,
        timeout=600,
        env={**os.environ},
    )
    assert r.returncode == 0, r.stderr.decode()
    assert b"UTF-16-LE text" in r.stderr
    same_tables(ref, out_tables(tmp_path / "out"))
