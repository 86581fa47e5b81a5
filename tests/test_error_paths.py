"""The error paths of issue 39, as a new user meets them: each gives one line on stderr, no
traceback, and a clear exit code (2: the user can fix it), and touches nothing it did not create.
Inputs are told by their content (Parquet's magic number, a zstd frame, gzip's, bzip2's), not by
their names."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys

import pytest

from conftest import need
from report_checks import cli

EDGE = need("edge_cases.pgn")
GAME = '[Event "e"]\n[Site "?"]\n[Result "1/2-1/2"]\n\n1. e4 e5 2. Nf3 Nc6 1/2-1/2\n\n'


def _one_line(proc, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("analyzer: error: "), proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("errors")
    shutil.copy(EDGE, d / "edge.pgn")
    out = d / "out"
    proc, _ = cli("scan", str(d / "edge.pgn"), "--out", str(out), "--edition", "lichess")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def test_report_dir_that_is_a_file(out, tmp_path):
    # was: NotADirectoryError traceback from os.makedirs
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    line = _one_line(cli("report", str(out), "--report-dir", str(notes))[0])
    assert str(notes) in line and "not a directory" in line
    assert notes.read_text() == "mine"


def test_report_dir_under_a_file(out, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    line = _one_line(cli("report", str(out), "--report-dir", str(notes / "report"))[0])
    assert "not a directory" in line and notes.read_text() == "mine"


def test_a_parquet_file_is_refused_as_what_it_is(out, tmp_path):
    # was: scanned as PGN, one game with status bad_token, exit 1
    table = next((out / "games").glob("*/*.parquet"))
    dest = tmp_path / "o"
    line = _one_line(cli("scan", str(table), "--out", str(dest))[0])
    assert "Parquet" in line and str(table) in line
    assert not dest.exists()  # refused before anything was written


@pytest.mark.parametrize("name,what", [("readme.pgn.zst", "zstd"), ("notes.pgn.gz", "gzip"), ("x.pgn.bz2", "bzip2")])
def test_text_named_compressed_is_refused(tmp_path, name, what):
    # was: a text file named .zst scanned as PGN (bad_token)
    src = tmp_path / name
    src.write_text("hello, this is a readme\nnot a game\n")
    line = _one_line(cli("scan", str(src), "--out", str(tmp_path / "o"))[0])
    assert f"named {name[name.rindex('.') :]}" in line and f"not {what}" in line and "text" in line


def test_game_text_named_zst_is_read_as_text(tmp_path):
    """Content wins over the name: PGN text in a file named .zst is read as the text it is,
    and the scan says so."""
    src = tmp_path / "games.pgn.zst"
    src.write_text(GAME * 3)
    proc, summary = cli("scan", str(src), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "named .zst but not zstd-compressed" in proc.stderr and "read as plain text" in proc.stderr
    assert summary["games"] == summary["ok"] == 3


def test_zstd_content_with_any_name_is_decoded(tmp_path):
    """The other way round: compressed content named .pgn is decoded (by its magic number)."""
    src = tmp_path / "games.pgn"
    src.write_bytes(gzip.compress((GAME * 2).encode()))
    proc, summary = cli("scan", str(src), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert summary["games"] == summary["ok"] == 2


@pytest.mark.parametrize("magic,what", [(b"\xfd7zXZ\x00\x00", "xz"), (b"PK\x03\x04\x14\x00", "zip")])
def test_an_archive_nothing_reads_is_refused(tmp_path, magic, what):
    src = tmp_path / "games.pgn.x"
    src.write_bytes(magic + os.urandom(64))
    line = _one_line(cli("scan", str(src), "--out", str(tmp_path / "o"))[0])
    assert what in line


def test_a_directory_input_hints_at_a_glob(tmp_path):
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "a.pgn").write_text(GAME)
    line = _one_line(cli("scan", str(d), "--out", str(tmp_path / "o"))[0])
    assert "is a directory" in line and f"'{d}/*.pgn*'" in line


def test_show_on_a_folder_that_is_no_scan_output(tmp_path):
    # was: "no game 'x#0' in ..." as if the folder were a scan output without that game
    (tmp_path / "stuff").mkdir()
    line = _one_line(cli("show", str(tmp_path / "stuff"), "x#0")[0])
    assert "not an analyzer scan output" in line


def test_report_on_a_folder_that_is_no_scan_output(tmp_path):
    (tmp_path / "stuff").mkdir()
    line = _one_line(cli("report", str(tmp_path / "stuff"))[0])
    assert "not an analyzer scan output" in line or "holds no analyzer tables" in line


def test_bare_command_exits_2_with_usage():
    # was: the help on stdout and exit 0, so `analyzer && next` went on
    proc = subprocess.run([sys.executable, "-m", "analyzer"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: analyzer") and "scan" in proc.stderr and "report" in proc.stderr


LICHESS_GAME = (
    '[Event "Rated Blitz game"]\n[Site "https://lichess.org/abcdefgh"]\n[UTCDate "2021.03.01"]\n'
    '[Result "1/2-1/2"]\n[TimeControl "180+0"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 1/2-1/2\n\n'
)


def test_show_does_not_claim_an_edition_in_force_that_was_not_scanned(tmp_path):
    # was: "edition in force: lichess" for a scan under fide_2018 alone
    src = tmp_path / "mine.pgn"
    src.write_text(LICHESS_GAME)
    for eds, want in (
        ("fide_2018", "edition in force: lichess, not scanned (this scan has fide_2018)"),
        ("fide_2018,lichess", "edition in force: lichess\n"),
    ):
        out = tmp_path / eds.replace(",", "_")
        assert cli("scan", str(src), "--out", str(out), "--edition", eds)[0].returncode == 0
        proc, _ = cli("show", str(out), "mine#0")
        assert proc.returncode == 0, proc.stderr
        assert want in proc.stdout
        assert ("(in force)" in proc.stdout) == ("lichess" in eds)
