"""Hostile and broken input (issue 6): every game accounted for, no crash, nothing lost.

One test per case of the issue, each with the expected status of every game. Inputs are made by
the tests (small PGN texts, compressed and damaged files) or read from tests/fixtures/hostile/.
Every run goes through the batch job (`analyzer.engine.run_scan`, or the CLI where the exit code
or memory matters) and `_scan_text` checks the accounting invariant on each: one row per game
and edition, statuses counted in the summary, an error message for every non-ok status.
"""

from __future__ import annotations

import bz2
import errno
import glob
import gzip
import json
import os
import resource  # noqa: F401  (used in the _cli_rss child)
import subprocess
import sys

import polars as pl
import pytest
import zstandard

import analyzer
from analyzer import IncompleteDatasetWarning, engine
from conftest import out_rows, pzstd_file, scan, scan_text

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "hostile")
MOVE_ERRORS = ("illegal_move", "ambiguous_move", "bad_token", "unterminated")


# ---------------------------------------------------------------------------------------------
# Helpers


_rows = out_rows


def _check_accounting(summary, out, editions=("fide_2018",)):
    """The invariant of the issue on one finished run."""
    has = bool(glob.glob(os.path.join(str(out), "games", "*", "*.parquet")))
    g = analyzer.scan_games(str(out)).collect() if has else None
    v = analyzer.scan_verdicts(str(out)).collect() if has else None
    n_rows = 0 if g is None else g.height
    assert n_rows == summary["games"], (n_rows, summary["games"])  # one games row per game
    assert sum(summary["status"].values()) == summary["games"]
    if g is None:
        return
    assert v.height == g.height * len(editions)  # one verdict row per game and edition
    counts = dict(zip(*g.group_by("status").len().sort("status").to_dict(as_series=False).values()))
    assert counts == summary["status"]
    for _src, part in g.group_by("source"):
        assert sorted(part["game_index"].to_list()) == list(range(part.height))
    for ed in editions:
        for _src, part in v.filter(pl.col("edition") == ed).group_by("source"):
            assert sorted(part["game_index"].to_list()) == list(range(part.height))
    for r in g.to_dicts():
        if r["status"] not in ("ok", "no_moves"):
            assert r["error"], r
        if r["status"] in MOVE_ERRORS:
            assert f"at ply {r['error_ply']}" in r["error"], r["error"]
            assert r["plies"] == r["error_ply"], r


def _scan_text(tmp_path, text: bytes, name="games.pgn", editions=("fide_2018",), **kw):
    """Write `text`, run the batch job in-process, check the accounting; (summary, code, rows)."""
    d = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    out, summary, code = scan_text(d, text, name=name, editions=editions, **kw)
    _check_accounting(summary, out, editions)
    return summary, code, _rows(out, editions[0])


def _statuses(rows):
    return [r["status"] for r in rows]


def _content(row):
    return {k: v for k, v in row.items() if k not in ("game_index", "byte_offset", "source")}


def _cli(*args, **kw):
    if args and args[0] == "scan":
        args = (*args, "--json")
    return subprocess.run([sys.executable, "-m", "analyzer.cli", *args], capture_output=True, text=True, **kw)


def _summary_of(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _no_partial_parts(out):
    """No temp file left, and every part under a final name is a complete Parquet file."""
    assert not glob.glob(os.path.join(str(out), "**", "*.tmp-*"), recursive=True)
    for p in glob.glob(os.path.join(str(out), "*", "source=*", "part-*.parquet")):
        pl.read_parquet(p)


G1 = b'[Event "one"]\n[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n'
G2 = b'[Event "two"]\n[Result "1/2-1/2"]\n\n1. d4 d5 2. c4 e6 1/2-1/2\n\n'
G3 = b'[Event "three"]\n[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n'


# ---------------------------------------------------------------------------------------------
# Damaged compressed inputs


def _first_games(text: bytes, n_bytes: int) -> bytes:
    return text[: text.index(b"[Event ", n_bytes)]


@pytest.mark.parametrize("fmt", ["zst", "gz", "bz2"])
def test_truncated_compressed_input(tmp_path, small_text, fmt):
    """Games before the damage are analyzed, the damage reported, the last game `truncated`,
    exit code 1 (CLI)."""
    # bz2 decodes in 900 kB blocks: take enough text that blocks before the cut survive.
    text = _first_games(small_text, 3_000_000 if fmt == "bz2" else 600_000)
    comp = {"zst": lambda b: zstandard.ZstdCompressor(level=3).compress(b), "gz": gzip.compress, "bz2": bz2.compress}[
        fmt
    ](text)
    src = tmp_path / f"cut.pgn.{fmt}"
    src.write_bytes(comp[: int(len(comp) * 0.7)])
    full = tmp_path / "full.pgn"
    full.write_bytes(text)
    ref = _cli("scan", str(full), "--out", str(tmp_path / "ref"), "--workers", "1", "--progress-interval", "0")
    assert ref.returncode == 0, ref.stderr
    r = _cli("scan", str(src), "--out", str(tmp_path / "out"), "--workers", "1", "--progress-interval", "0")
    assert r.returncode == 1, r.stderr
    assert "damaged input" in r.stderr and "truncated" in r.stderr and "Traceback" not in r.stderr
    summary = _summary_of(r)
    _check_accounting(summary, tmp_path / "out")
    rows = _rows(tmp_path / "out")
    base = _rows(tmp_path / "ref")
    assert len(base) == text.count(b"[Event ")  # the reference the games are compared with below
    assert summary["damage"] and summary["status"].get("truncated") == 1
    assert rows[-1]["status"] == "truncated" and "ends inside this game" in rows[-1]["error"]
    # Every game before the truncated one is the same as in the undamaged input.
    assert len(rows) >= 0.5 * len(base) if fmt != "bz2" else len(rows) >= 0.25 * len(base)
    for a, b in zip(rows[:-1], base):
        assert _content(a) == _content(b)
        assert a["byte_offset"] == b["byte_offset"]


@pytest.mark.parametrize("damage", ["flipped", "cut"])
def test_corrupt_frame_in_pzstd_file(tmp_path, small_text, damage):
    """Bytes flipped inside frame 2 of a pzstd file, or frame 2 cut short with its skippable
    header saying so (the decoder then returns the blocks it has and no error): that frame's
    games are lost (reported), the other frames are analyzed as if nothing happened."""
    text = small_text * 2  # ~11 MB: pzstd -1 cuts ~2 MiB frames
    mf = pzstd_file(tmp_path, text, "big")
    from analyzer.io.sources import pzstd_frames

    frames = pzstd_frames(str(mf))
    assert frames is not None and len(frames) >= 4
    raw = bytearray(mf.read_bytes())
    # Text range of each frame (decoded one by one).
    dctx = zstandard.ZstdDecompressor()
    bounds = [0]
    for fr in frames:
        bounds.append(bounds[-1] + len(dctx.decompressobj().decompress(bytes(raw[fr.offset : fr.offset + fr.size]))))
    f2 = frames[2]
    if damage == "flipped":
        for k in range(100, 140):
            raw[f2.offset + f2.size // 2 + k] ^= 0xFF
    else:
        cut = 100
        raw[f2.offset - 4 : f2.offset] = (f2.size - cut).to_bytes(4, "little")
        del raw[f2.offset + f2.size - cut : f2.offset + f2.size]
    bad = tmp_path / "bad.pgn.zst"
    bad.write_bytes(bytes(raw))
    ref_out, out = tmp_path / "ref", tmp_path / "out"
    _s0, c0 = scan(mf, ref_out, frames_per_unit=1, workers=2)
    assert c0 == 0
    summary, code = scan(bad, out, frames_per_unit=1, workers=2)
    _check_accounting(summary, out)
    assert code == 1 and any("zstd frame 2" in d for d in summary["damage"])
    base = _rows(ref_out)
    rows = _rows(out)
    lo, hi = bounds[2], bounds[3]
    before = [r for r in base if r["byte_offset"] < lo]
    after = [r for r in base if r["byte_offset"] > hi]
    assert len(base) == text.count(b"[Event ") and before and after  # games on both sides of frame 2
    # Games wholly before frame 2: identical (the one running into frame 2 is truncated).
    assert [_content(r) for r in rows[: len(before) - 1]] == [_content(r) for r in before[:-1]]
    assert rows[len(before) - 1]["status"] == "truncated"
    assert "zstd frame 2" in rows[len(before) - 1]["error"]
    # Games after frame 2 (from the first game start after it): all there, same results.
    tail = [_content(r) for r in rows[len(before) :]]
    want = [_content(r) for r in after]
    assert tail[-len(want) :] == want
    assert len(rows) - len(before) <= len(want) + 1
    assert summary["status"].get("truncated") == 1


# ---------------------------------------------------------------------------------------------
# Text-level oddities: one test each, with the expected status of every game


def test_non_utf8_bytes_and_bom(tmp_path):
    text = (
        b"\xef\xbb\xbf" + G1 + b'[Event "Latin-1 M\xfcller"]\n[White "J\xf6rg"]\n\n'
        b"1. e4 {caf\xe9 \xff\xfe} e5 \xe9 2. Nf3 1-0\n\n" + G2
    )
    _summary, code, rows = _scan_text(tmp_path, text)
    assert code == 0
    assert _statuses(rows) == ["ok", "ok", "ok"]
    assert rows[0]["event"] == "one" and rows[0]["byte_offset"] == 0
    assert rows[1]["white"] == "J\ufffdrg" and rows[1]["plies"] == 3
    # A token with stray high bytes glued to a move is not a move.
    _summary, code, rows = _scan_text(tmp_path, b"1. e4\xff e5 *\n")
    assert _statuses(rows) == ["bad_token"] and rows[0]["error_ply"] == 0


@pytest.mark.parametrize("eol", [b"\r\n", b"\r"])
def test_crlf_and_lone_cr_line_ends(tmp_path, eol):
    lf = G1 + G2 + b"%escape\n" + G3
    _, _, ref = _scan_text(tmp_path, lf)
    _summary, code, rows = _scan_text(tmp_path, lf.replace(b"\n", eol))
    assert code == 0 and _statuses(rows) == ["ok", "ok", "ok"]
    assert [_content(r) for r in rows] == [_content(r) for r in ref]


def test_escaped_quotes_in_tags(tmp_path):
    text = b'[Event "The \\"Immortal\\" game"]\n[Site "C:\\\\games"]\n[White "A"]\n\n1. e4 *\n'
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"]
    assert rows[0]["event"] == 'The "Immortal" game' and rows[0]["site"] == "C:\\games"
    assert rows[0]["white"] == "A"


def test_missing_and_duplicated_tags(tmp_path):
    text = (
        b'[White "first"]\n[White "second"]\n[Result "1-0"]\n[Result "0-1"]\n\n1. e4 e5 0-1\n\n'
        b'[Site "nowhere"]\n\n1. d4 *\n\n'
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok", "ok"]
    assert rows[0]["white"] == "second" and rows[0]["result"] == "0-1"  # last one wins
    assert rows[1]["event"] is None and rows[1]["result"] is None and rows[1]["white"] is None


def test_games_without_tags(tmp_path):
    text = b"1. e4 e5 1-0\n\n1. d4 d5 2. c4 0-1\n1. Nf3 *\n" + G1 + b"1. c4 1/2-1/2\n"
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"] * 5
    assert [r["plies"] for r in rows] == [2, 3, 1, 7, 1]
    assert rows[3]["event"] == "one" and rows[4]["event"] is None


def test_games_without_moves(tmp_path):
    """A result only, tags only, and tags only followed by another game after a blank line
    (that game used to be merged into the tag-only one and lost). Tags only where the input
    ends: the input was cut before that game's movetext (truncated, issue 27)."""
    text = b'[Event "result only"]\n\n*\n\n[Event "tags only"]\n[Result "*"]\n\n' + G1 + b'[Event "at the end"]\n'
    _, _code, rows = _scan_text(tmp_path, text)
    assert [(r["event"], r["status"]) for r in rows] == [
        ("result only", "no_moves"),
        ("tags only", "no_moves"),
        ("one", "ok"),
        ("at the end", "truncated"),
    ]
    assert all(r["plies"] == 0 for r in rows if r["status"] in ("no_moves", "truncated"))


def test_percent_escape_lines(tmp_path):
    text = (
        b"% exported by some tool\n" + G1 + b"%% between games\n"
        b'[Event "x"]\n%inside the tags\n[White "W"]\n\n1. e4\n% inside the moves 1-0 Qxf7\ne5 *\n'
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok", "ok"]
    assert rows[1]["white"] == "W" and rows[1]["plies"] == 2


def test_semicolon_comments(tmp_path):
    text = b'; a file comment\n[Event "x"]\n\n1. e4 ; rest of line ignored Qxf7 {\ne5 2. Nf3 ; 1-0\nNc6 *\n'
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"] and rows[0]["plies"] == 4


def test_unterminated_comment_and_variation(tmp_path):
    text = (
        b'[Event "open comment"]\n\n1. e4 e5 2. Nf3 { never closed\n\n'
        + G2
        + b'[Event "open variation"]\n\n1. e4 (1. d4 d5 2. c4\n\n'
        + G3
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["unterminated", "ok", "unterminated", "ok"]
    assert rows[0]["error_ply"] == 3 and rows[0]["plies"] == 3
    assert rows[2]["error_ply"] == 1 and rows[2]["plies"] == 1
    assert "not closed" in rows[0]["error"] and "'{" in rows[0]["error"]


def test_nested_variations(tmp_path):
    text = b'[Event "x"]\n\n1. e4 (1. d4 (1. c4 c5 (1... e5)) d5 {a (comment)}) e5 2. Nf3 (2. Bc4) Nc6 *\n'
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"] and rows[0]["plies"] == 4


def test_null_moves(tmp_path):
    text = b'[Event "x"]\n\n1. e4 -- 2. d4 Z0 3. Nf3 *\n'
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"] and rows[0]["plies"] == 5
    assert "null move '--' at ply 1" in rows[0]["error"]


def test_nags_and_glyphs(tmp_path):
    text = b'[Event "x"]\n\n1. e4! $1 e5?? $4 2. Nf3!? Nc6 ?! 3. Bb5 !! a6 $14 +- 4. Ba4 *\n'
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"] and rows[0]["plies"] == 7


def test_odd_move_numbers(tmp_path):
    forms = [
        b"1. e4 e5 2. Nf3 Nc6 *",
        b"1.e4 e5 2.Nf3 Nc6 *",
        b"1. e4 1...e5 2. Nf3 2... Nc6 *",
        b"1.e4 1...e5 2.Nf3 2...Nc6 *",
        b"e4 e5 Nf3 Nc6 *",
        b"1 e4 e5 2 Nf3 Nc6 *",
    ]
    text = b"".join(b'[Event "%d"]\n\n' % i + f + b"\n\n" for i, f in enumerate(forms))
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok"] * len(forms)
    assert len({tuple(sorted(_content(r | {"event": None}).items(), key=str)) for r in rows}) == 1


def test_move_number_with_separate_dots(tmp_path):
    """'1. ... e5': a lone '...' token (was read as SAN: bad_token; fixed in adcbbcb)."""
    _, _code, rows = _scan_text(tmp_path, b'[Event "x"]\n\n1. e4 1. ... e5 2. Nf3 2 ... Nc6 *\n')
    assert _statuses(rows) == ["ok"] and rows[0]["plies"] == 4


def test_castling_with_zeros(tmp_path):
    text = (
        b'[Event "O"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O d6 5. d3 Be6 6. Nc3 Qd7 7. a3 O-O-O *\n\n'
        b'[Event "0"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. 0-0 d6 5. d3 Be6 6. Nc3 Qd7 7. a3 0-0-0 *\n\n'
        b'[Event "too early"]\n\n1. e4 e5 2. 0-0 *\n\n'
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok", "ok", "illegal_move"]
    assert _content(rows[0] | {"event": None}) == _content(rows[1] | {"event": None})
    assert rows[2]["error_ply"] == 2 and "'0-0'" in rows[2]["error"]


def test_promotions_with_and_without_equals(tmp_path):
    fen = b'[SetUp "1"]\n[FEN "8/P6k/8/8/8/8/6Kp/8 w - - 0 1"]\n'
    text = (
        b'[Event "="]\n' + fen + b"\n1. a8=Q h1=N+ 2. Kxh1 *\n\n"
        b'[Event "no ="]\n' + fen + b"\n1. a8Q h1N+ 2. Kxh1 *\n\n"
        b'[Event "no piece"]\n' + fen + b"\n1. a8 *\n\n"
        b'[Event "lower case"]\n' + fen + b"\n1. a8=q *\n\n"
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok", "ok", "illegal_move", "ok"]
    assert rows[0]["plies"] == rows[1]["plies"] == 3
    assert _content(rows[0] | {"event": None}) == _content(rows[1] | {"event": None})
    assert rows[2]["error_ply"] == 0


def test_results_missing_or_contradicting_termination(tmp_path):
    text = (
        b'[Event "no result"]\n\n1. e4 e5\n\n'
        b'[Event "contradiction"]\n[Result "1-0"]\n[Termination "Time forfeit"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n'
        b'[Event "draw tag, mate on board"]\n[Result "1/2-1/2"]\n[Termination "Normal"]\n\n'
        b"1. f3 e5 2. g4 Qh4# 1/2-1/2\n\n"
    )  # (the first game has no result token and another game follows it: whole, not cut off)
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok", "ok", "ok"]
    assert rows[0]["result"] is None and rows[0]["plies"] == 2
    assert rows[1]["result"] == "1-0" and rows[1]["final_is_checkmate"] is True
    assert rows[2]["draw_reason"] is not None and rows[2]["final_is_checkmate"] is True


def test_fen_without_setup_and_invalid_fens(tmp_path):
    text = (
        b'[Event "fen without setup"]\n[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]\n\n1. e4 Kd7 *\n\n'
        b'[Event "garbage"]\n[SetUp "1"]\n[FEN "not a fen"]\n\n1. e4 *\n\n'
        b'[Event "no kings"]\n[SetUp "1"]\n[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]\n\n*\n\n'
        b'[Event "side not to move in check"]\n[FEN "4k3/8/8/8/8/8/4R3/4K3 b - - 0 1"]\n\n1... Kd7 *\n\n'
        b'[Event "empty"]\n[FEN ""]\n\n1. e4 *\n\n' + G2
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["ok", "bad_fen", "bad_fen", "ok", "bad_fen", "ok"]
    assert rows[0]["plies"] == 2 and rows[0]["start_fen"].startswith("4k3/")
    assert "not a fen" in rows[1]["error"] and rows[1]["plies"] is None  # not replayed: no plies


def test_chess960_and_unknown_variants(tmp_path):
    text = (
        b'[Event "960"]\n[Variant "Chess960"]\n[SetUp "1"]\n'
        b'[FEN "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1"]\n\n'
        b"1. g3 g6 2. Ne3 Ne6 3. Nd3 Nd6 *\n\n"
        b'[Event "atomic"]\n[Variant "Atomic"]\n\n1. e4 *\n\n'
        b'[Event "duck"]\n[Variant "Duck"]\n\n1. e4 *\n\n'
        b'[Event "from position"]\n[Variant "From Position"]\n[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]\n\n1. e4 *\n\n'
        b'[Event "standard"]\n[Variant "Standard"]\n\n1. e4 *\n\n'
    )
    _, _code, rows = _scan_text(tmp_path, text)
    # Atomic (and the other Lichess variants) are replayed by analyzer.variants; others are not.
    assert _statuses(rows) == ["ok", "ok", "unsupported_variant", "ok", "ok"]
    assert rows[0]["plies"] == 6 and rows[1]["plies"] == 1
    assert "duck" in rows[2]["error"].lower()


CHESS960_BAD_FEN = (
    G1 + b'[Event "960 bad fen"]\n[Variant "Chess960"]\n[SetUp "1"]\n[FEN "rnnbbqkr/pppppppp/8/8/8/8/'
    b'PPPPPPPP/RNNBBQKR w [Qkq - 0 1"]\n\n1. e4 *\n\n' + G2
)


def test_chess960_invalid_fen_does_not_lose_the_block(tmp_path):
    """analyze_block raised on this game (python-chess ValueError from the Chess960 path) and
    the whole unit failed, losing every game in it; now the block is redone game by game and
    only that game is marked internal_error (stream.RegionAnalyzer._analyze)."""
    summary, code, rows = _scan_text(tmp_path, CHESS960_BAD_FEN, editions=("fide_2018", "lichess"))
    assert code == 0 and not summary["units_failed"]
    assert [(r["event"], r["status"]) for r in rows][0::2] == [("one", "ok"), ("two", "ok")]
    assert rows[1]["status"] in ("internal_error", "bad_fen") and "fen" in rows[1]["error"].lower()


def test_chess960_invalid_fen_is_bad_fen(tmp_path):
    """The python-chess Chess960 path raised ValueError on an invalid Chess960 FEN (fixed in
    adcbbcb); Chess960 start positions are now read by analyze._parse_start."""
    _, _code, rows = _scan_text(tmp_path, CHESS960_BAD_FEN)
    assert _statuses(rows) == ["ok", "bad_fen", "ok"]


_960 = b'[Variant "Chess960"]\n[SetUp "1"]\n[FEN "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1"]\n\n'


def test_chess960_errors_name_the_ply(tmp_path):
    """Chess960 errors are worded like standard ones (one replay kernel for both)."""
    _, _code, rows = _scan_text(tmp_path, b'[Event "960 illegal"]\n' + _960 + b"1. g3 g6 2. Qxh8 *\n\n")
    assert _statuses(rows) == ["illegal_move"]
    assert rows[0]["error_ply"] == 2 and "'Qxh8' at ply 2" in rows[0]["error"] and rows[0]["plies"] == 2


def test_chess960_unreadable_token_is_bad_token(tmp_path):
    """(python-chess, the former Chess960 path, skips unreadable tokens silently: it said ok)."""
    _, _code, rows = _scan_text(tmp_path, b'[Event "960 bad token"]\n' + _960 + b"1. g3 g6 2. xyzzy *\n\n")
    assert _statuses(rows) == ["bad_token"] and rows[0]["plies"] == 2


def test_illegal_and_ambiguous_moves_keep_facts(tmp_path):
    """Facts up to the last legal ply: a threefold repetition before the illegal move is kept."""
    rep = b"1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 "
    text = (
        b'[Event "illegal"]\n\n' + rep + b"5. e4 Kxe2 *\n\n"
        b'[Event "ambiguous"]\n[SetUp "1"]\n[FEN "3k4/8/8/8/8/8/4K3/R6R w - - 0 1"]\n\n1. Rd1 *\n\n'
        b'[Event "bad token"]\n\n1. e4 e5 2. Xy9 *\n\n'
    )
    _, _code, rows = _scan_text(tmp_path, text)
    assert _statuses(rows) == ["illegal_move", "ambiguous_move", "bad_token"]
    assert rows[0]["plies"] == rows[0]["error_ply"] == 9
    assert rows[0]["first_threefold_ply"] == 8 and rows[0]["first_threefold_claim_ply"] is not None
    assert "'Kxe2' at ply 9 (move 5, black to move)" in rows[0]["error"]
    assert rows[1]["plies"] == 0 and "ambiguous move 'Rd1' at ply 0" in rows[1]["error"]
    assert rows[2]["plies"] == 2 and "'Xy9' at ply 2" in rows[2]["error"]


def test_fixture_corpus(tmp_path):
    """tests/fixtures/hostile/*.pgn: each file lists the expected status per game in its first
    line: `; expect: ok,illegal_move,...`."""
    files = sorted(glob.glob(os.path.join(FIXTURES, "*.pgn")))
    assert files
    for path in files:
        with open(path, "rb") as fh:
            data = fh.read()
        first = data.split(b"\n", 1)[0].decode()
        assert first.startswith("; expect:"), path
        want = first.split(":", 1)[1].strip().split(",")
        _, _code, rows = _scan_text(tmp_path, data, name=os.path.basename(path))
        assert _statuses(rows) == want, (path, [(r["status"], r["error"]) for r in rows])


# ---------------------------------------------------------------------------------------------
# Size limits, enormous games and decompression bombs


def test_game_above_max_size_between_normal_games(tmp_path):
    huge_comment = b"{" + b"very long comment " * 200_000 + b"}"  # 3.6 MB
    text = G1 + b'[Event "huge"]\n\n1. e4 ' + huge_comment + b" e5 *\n\n" + G2 + b"1. e4 *\n\n" + G3
    for block in (8 << 20, 1 << 16):
        _summary, _code, rows = _scan_text(tmp_path, text, max_game_bytes=1 << 20, block_size=block)
        assert [(r["event"], r["status"]) for r in rows] == [
            ("one", "ok"),
            ("huge", "game_too_large"),
            ("two", "ok"),
            (None, "ok"),
            ("three", "ok"),
        ], block
        assert "maximum game size" in rows[1]["error"]


def _cli_rss(*args):
    """Run the CLI under a small Python parent; (CompletedProcess, peak RSS in MB of the CLI and
    its workers, from that parent's getrusage(RUSAGE_CHILDREN), so earlier tests do not count)."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'analyzer.cli'] + sys.argv[1:])\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, file=sys.stderr)\n"
        "sys.exit(p.returncode)\n"
    )
    if args and args[0] == "scan":
        args = (*args, "--json")
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    rss = float(r.stderr.strip().splitlines()[-1].split()[1])
    return r, rss


def test_enormous_single_game_memory_bounded(tmp_path):
    """A 50 MB one-game file with --max-game-mb 1: one game_too_large row, RSS bounded."""
    src = tmp_path / "one.pgn"
    with open(src, "wb") as fh:
        fh.write(b'[Event "enormous"]\n[White "W"]\n\n1. e4 e5 ')
        block = b"{ " + b"x" * 1000 + b" } Nf3 Nf6 Ng1 Ng8 " * 1
        for _ in range(50 * 1024):
            fh.write(block)
        fh.write(b"*\n")
    r, rss = _cli_rss(
        "scan",
        str(src),
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "1",
        "--max-game-mb",
        "1",
        "--progress-interval",
        "0",
    )
    assert r.returncode == 1, r.stderr  # no game of the input could be analyzed: a warning, exit 1
    summary = _summary_of(r)
    assert summary["games"] == 1 and summary["status"] == {"game_too_large": 1}
    assert summary["warnings"] and "none of its 1 games" in summary["warnings"][0]
    rows = _rows(tmp_path / "out")
    assert rows[0]["event"] == "enormous" and rows[0]["white"] == "W"
    assert rss < 600, rss


@pytest.mark.slow  # 1 GiB decompressed: 68 s on an idle 2-core VM, 221 s on a busy one
def test_decompression_bomb(tmp_path):
    """1 GiB of NUL bytes (one endless line) zstd-compressed to ~40 kB: memory stays bounded,
    the run reports one game_too_large and goes on to the real game after it."""
    src = tmp_path / "bomb.pgn.zst"
    cctx = zstandard.ZstdCompressor(level=1)
    zeros = bytes(8 << 20)
    with open(src, "wb") as fh, cctx.stream_writer(fh) as w:
        w.write(G1)
        for _ in range(128):
            w.write(zeros)
        w.write(b"\n\n" + G2)
    assert src.stat().st_size < 1 << 20
    r, rss = _cli_rss(
        "scan",
        str(src),
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "2",
        "--max-game-mb",
        "1",
        "--progress-interval",
        "0",
    )
    assert r.returncode == 0, r.stderr
    summary = _summary_of(r)
    rows = _rows(tmp_path / "out")
    assert [(r["event"], r["status"]) for r in rows] == [("one", "ok"), (None, "game_too_large"), ("two", "ok")]
    assert summary["status"] == {"game_too_large": 1, "ok": 2}
    # Peak RSS of the largest process: bounded by the work units in flight (the reader keeps up
    # to 2 x workers 64 MiB units queued: ~650 MB measured with 2 workers), not by the 1 GiB.
    assert rss < 800, rss


# ---------------------------------------------------------------------------------------------
# Faults: unwritable output, disk full, an input that disappears


def test_output_not_writable(tmp_path):
    src = tmp_path / "g.pgn"
    src.write_bytes(G1)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _cli("scan", str(src), "--out", str(blocker / "out"))
    assert r.returncode == 2 and "not writable" in r.stderr and "Traceback" not in r.stderr
    # A table directory that cannot be created (a file in its place).
    out = tmp_path / "out"
    out.mkdir()
    (out / "games").write_text("in the way")
    r = _cli("scan", str(src), "--out", str(out), "--workers", "1", "--progress-interval", "0")
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr and r.stderr.strip()
    _no_partial_parts(out)


def test_disk_full_in_process(tmp_path, monkeypatch, small_text):
    import pyarrow.parquet as pq

    src = tmp_path / "g.pgn"
    src.write_bytes(small_text[:500_000])

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    out = tmp_path / "out"
    summary, code = scan(src, out)
    assert code == 1
    assert summary["units_failed"] and "No space left on device" in summary["units_failed"][0]
    assert not glob.glob(os.path.join(str(out), "games", "source=*", "part-*.parquet"))
    _no_partial_parts(out)
    # Space again: the rerun finishes and gives every game.
    monkeypatch.undo()
    summary, code = scan(src, out)
    assert code == 0 and summary["games"] == small_text[:500_000].count(b"[Event ")


def test_disk_full_cli_ulimit(tmp_path, small_text):
    """`ulimit -f` (file size limit): writes fail with EFBIG; a clear message, non-zero exit,
    no partial Parquet file under a final name."""
    src = tmp_path / "g.pgn"
    src.write_bytes(small_text * 2)
    out = tmp_path / "out"
    cmd = (
        f"ulimit -f 60; exec {sys.executable} -m analyzer.cli scan {src} --out {out} --workers 1 --progress-interval 0"
    )
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert r.returncode in (1, 2), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and ("too large" in r.stderr or "unit failed" in r.stderr), r.stderr
    _no_partial_parts(out)


def test_input_disappears_mid_run(tmp_path, monkeypatch, capsys):
    """The second input is deleted after the first one is finished: a clear message, exit 2,
    the first input's tables complete, nothing partial."""
    from analyzer import cli

    a = tmp_path / "a.pgn"
    b = tmp_path / "b.pgn"
    a.write_bytes(G1 + G2)
    b.write_bytes(G3)
    real = engine.scan.finalize_source

    def finalize_then_delete(out, source, n, **kw):
        res = real(out, source, n, **kw)
        if b.exists():
            b.unlink()
        return res

    monkeypatch.setattr(engine.scan, "finalize_source", finalize_then_delete)
    out = tmp_path / "out"
    code = cli.main(["scan", str(a), str(b), "--out", str(out), "--workers", "1", "--progress-interval", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "b.pgn" in err and "No such file" in err and "Traceback" not in err
    _no_partial_parts(out)
    with pytest.warns(IncompleteDatasetWarning, match="'b'"):  # b did not finish: readers say it is left out
        assert [r["event"] for r in _rows(out)] == ["one", "two"]


def test_pzstd_input_disappears_after_planning(tmp_path, monkeypatch, small_text):
    mf = pzstd_file(tmp_path, small_text, "g")
    real = engine.scan.plan_frame_units

    def plan_then_delete(info, frames, cfg, editions):
        units = real(info, frames, cfg, editions)
        mf.unlink()
        return units

    monkeypatch.setattr(engine.scan, "plan_frame_units", plan_then_delete)
    out = tmp_path / "out"
    summary, code = scan(mf, out, frames_per_unit=1)
    assert code == 1 and summary["units_failed"]
    assert all("No such file" in u for u in summary["units_failed"])
    assert not glob.glob(os.path.join(str(out), "games", "source=*", "part-*.parquet"))
    _no_partial_parts(out)
