"""Batch runs an operator can leave alone (issue 15): nothing lost, nothing hung, nothing
touched that is not ours. Each test reproduces one failure of the issue's list; they failed on
the code before the engine package (commit b120e26)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import polars as pl
import pytest

import analyzer
from analyzer import engine
from analyzer.engine.dataset import Dataset
from conftest import pzstd_file, scan


def _cli(*args, timeout=300, **kw):
    if args and args[0] == "scan":
        args = (*args, "--json", "--progress-interval", "0")
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args], capture_output=True, text=True, timeout=timeout, **kw
    )


def _summary(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


_scan = scan


def _games(out) -> pl.DataFrame:
    return analyzer.scan_games(str(out)).collect()


# 1. A resume that hung: the first unfinished unit of a pzstd source at index >= 4 x workers.


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked engine is for Linux")
def test_resume_with_first_missing_unit_beyond_the_window_finishes(tmp_path, small_text):
    mf = str(pzstd_file(tmp_path, small_text * 5, "big"))  # ~14 frames of 2 MiB
    out = tmp_path / "out"
    # --compact-games 1: each unit its own file, so that a lost unit record costs that unit only
    args = ("scan", mf, "--out", str(out), "--workers", "2", "--frames-per-unit", "1", "--compact-games", "1")
    r = _cli(*args)
    assert r.returncode == 0, r.stderr
    first = _summary(r)
    assert first["units"] >= 10 and first["engine_by_source"] == {"big": "forked"}
    ref = _games(out).sort("game_index")
    assert ref.height == first["games"] == 5 * 2000  # the table compared after the rerun: every game
    man = out / "_manifest" / "big"
    (man / "source.json").unlink()
    (man / "unit-000009.json").unlink()  # beyond the window of 4 x 2 units
    r = _cli(*args, timeout=120)  # hung forever before the fix
    assert r.returncode == 0, r.stderr
    again = _summary(r)
    assert again["games"] == first["games"] and again["games_analyzed"] < first["games"]
    assert _games(out).sort("game_index").equals(ref)


# 2. Games silently lost with exit 0.


def test_tagless_games_across_many_units_are_all_kept(tmp_path):
    """'1. e4 *' games without tags: units used to be cut only at tag lines, so every unit
    after the first forced cut skipped to a tag line that never came."""
    n = 120_000
    src = tmp_path / "tagless.pgn"
    src.write_bytes(b"1. e4 *\n\n" * n)
    summary, code = _scan([src], tmp_path / "out", unit_text_bytes=64 << 10, max_game_bytes=16 << 10)
    assert code == 0, summary
    assert summary["games"] == n and summary["units"] > 10
    g = _games(tmp_path / "out")
    assert g.height == n and g["game_index"].n_unique() == n
    assert (g["status"] == "ok").all() and (g["plies"] == 1).all()


def test_no_blank_lines_between_games_read_in_units(tmp_path, small_text):
    """Lichess games with the blank lines removed: 2,000 games, read in many small units (not
    6,534 of 50,722 as before), and the same rows as reading it in one unit."""
    text = small_text.replace(b"\n\n", b"\n")
    src = tmp_path / "noblank.pgn"
    src.write_bytes(text)
    one, code1 = _scan([src], tmp_path / "one")
    many, code2 = _scan([src], tmp_path / "many", unit_text_bytes=100_000, max_game_bytes=50_000)
    assert code1 == code2 == 0
    assert one["games"] == many["games"] == 2000 and many["units"] > 10
    cols = ["game_index", "byte_offset", "site", "status", "plies", "first_third_occurrence_ply"]
    assert _games(tmp_path / "one").height == 2000  # (two empty tables would be equal)
    assert (
        _games(tmp_path / "one")
        .select(cols)
        .sort("game_index")
        .equals(_games(tmp_path / "many").select(cols).sort("game_index"))
    )


def test_no_blank_lines_in_pzstd_frames(tmp_path, small_text):
    """Frame units find game starts after a result token when there are no blank lines."""
    text = small_text.replace(b"\n\n", b"\n") * 3
    mf = str(pzstd_file(tmp_path, text, "noblank"))
    summary, code = _scan([mf], tmp_path / "out", workers=2, frames_per_unit=1)
    assert code == 0 and summary["units"] >= 3
    assert summary["games"] == 6000 and _games(tmp_path / "out").height == 6000


def test_unit_size_zero_is_refused():
    with pytest.raises(ValueError):
        engine.Config(out="x", editions=[], unit_text_bytes=0)
    r = _cli("scan", "x.pgn", "--unit-mb", "0", "--out", "never")
    assert r.returncode == 2 and "--unit-mb" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.skipif(shutil.which("zstd") is None or shutil.which("bash") is None, reason="needs zstd and bash")
@pytest.mark.parametrize("how", ["decompressed", "compressed", "stdin"])
def test_pipes_lose_no_bytes(tmp_path, small_text, how):
    """Process substitution and pipes: sniffing the compression used to eat the first bytes
    (50,688 games and a bogus illegal_move game; or 'Unknown frame descriptor')."""
    src = tmp_path / "g.pgn"
    src.write_bytes(small_text)
    zst = tmp_path / "g.pgn.zst"
    subprocess.run(["zstd", "-q", "-f", str(src), "-o", str(zst)], check=True)
    out = tmp_path / "out"
    exe = f"{sys.executable} -m analyzer scan --json --progress-interval 0 --out {out}"
    cmd = {
        "decompressed": f"{exe} <(zstd -dc {zst})",
        "compressed": f"{exe} <(cat {zst})",
        "stdin": f"cat {zst} | {exe} -",
    }[how]
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    s = _summary(r)
    assert s["games"] == 2000 and s["status"].get("ok", 0) + s["status"].get("no_moves", 0) == 2000


def test_summary_accounts_games_in_and_rows(tmp_path, small_text):
    src = tmp_path / "g.pgn"
    src.write_bytes(small_text)
    summary, code = _scan([src], tmp_path / "out", editions=("fide_2018", "lichess"))
    assert code == 0 and summary["accounting_errors"] == []
    (entry,) = summary["sources"]
    assert entry["games"] == entry["rows"] == 2000  # one games row per game
    assert analyzer.scan_verdicts(str(tmp_path / "out")).collect().height == 4000  # and edition


# 3. Files the tool does not own.


def test_temporary_looking_files_of_others_are_not_touched(tmp_path, small_text):
    out = tmp_path / "O"
    victim = tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    (out / "backup.tmp-2023").write_text("mine")
    (victim / "thesis.docx.tmp-2").write_text("my thesis")
    (out / "linked").symlink_to("../victim")
    (out / "games").mkdir()
    (out / "games" / "notes.tmp-1").write_text("also mine")
    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:20000])
    r = _cli("scan", str(src), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "backup.tmp-2023").read_text() == "mine"
    assert (victim / "thesis.docx.tmp-2").read_text() == "my thesis"
    assert (out / "games" / "notes.tmp-1").read_text() == "also mine"


def test_our_stale_temporary_files_are_cleaned(tmp_path, small_text):
    from analyzer.engine.dataset.names import TEMP_PREFIX

    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:20000])
    out = tmp_path / "out"
    _scan([src], out)
    stale = out / "games" / "source=x" / f"{TEMP_PREFIX}0123456789ab-999999-abcd0123-part-000000.parquet.partial"
    stale.write_bytes(b"partial")
    _scan([src], out)
    assert not stale.exists()


# 4. Two runs on one OUT; results additive, never silently replaced.


def test_a_second_run_on_a_busy_out_is_refused(tmp_path, small_text):
    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:20000])
    out = tmp_path / "out"
    out.mkdir()
    lock = Dataset(str(out)).lock().acquire()
    try:
        r = _cli("scan", str(src), "--out", str(out))
        assert r.returncode == 2 and f"pid {os.getpid()}" in r.stderr and "Traceback" not in r.stderr
    finally:
        lock.release()
    r = _cli("scan", str(src), "--out", str(out))  # a stale lock file: taken over
    assert r.returncode == 0, r.stderr


def test_other_editions_are_added_not_replaced(tmp_path, small_text):
    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:200_000])
    out = tmp_path / "out"
    s1, _ = _scan([src], out, editions=("fide_2018",))
    s2, code = _scan([src], out, editions=("lichess",))
    assert code == 0 and "adding" in s2["sources"][0]["note"]
    v = analyzer.scan_verdicts(str(out)).collect()
    assert sorted(v["edition"].unique().to_list()) == ["fide_2018", "lichess"]
    assert v.height == 2 * s1["games"] and _games(out).height == s1["games"]
    s3, _ = _scan([src], out, editions=("fide_2018",))
    assert s3["sources_skipped_as_complete"] == ["x"]
    assert analyzer.scan_verdicts(str(out)).collect().height == 2 * s1["games"]
    # The rows of fide_2018 are the same as in a run of fide_2018 alone.
    _s4, _ = _scan([src], tmp_path / "alone", editions=("fide_2018",))
    a = analyzer.scan_verdicts(str(tmp_path / "alone")).collect().sort("game_index")
    b = analyzer.scan_verdicts(str(out)).filter(pl.col("edition") == "fide_2018").collect().sort("game_index")
    assert a.equals(b)


def test_an_edition_id_with_other_parameters_is_refused(tmp_path, small_text):
    from analyzer.kinds.chess.editions import custom_edition

    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:20000])
    out = tmp_path / "out"
    engine.run_scan(
        [str(src)], engine.Config(out=str(out), editions=[custom_edition(id="c", claim_moves=40)]), progress_interval=0
    )
    with pytest.raises(engine.RunError, match="other parameters"):
        engine.run_scan(
            [str(src)],
            engine.Config(out=str(out), editions=[custom_edition(id="c", claim_moves=30)]),
            progress_interval=0,
        )


def test_same_name_from_another_directory_or_stdin_is_refused(tmp_path, small_text):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = tmp_path / "a" / "g.pgn"
    b = tmp_path / "b" / "g.pgn"
    a.write_bytes(small_text[:20000])
    b.write_bytes(small_text[20000:40000])
    out = tmp_path / "out"
    assert _cli("scan", str(a), "--out", str(out)).returncode == 0
    r = _cli("scan", str(b), "--out", str(out))
    assert r.returncode == 2 and "--source-name" in r.stderr
    r = _cli("scan", str(b), "--out", str(out), "--source-name", "g_b")
    assert r.returncode == 0, r.stderr
    assert sorted(_games(out)["source"].unique().to_list()) == ["g", "g_b"]
    for k, piece in enumerate((small_text[:10000], small_text[10000:20000])):
        r = _cli("scan", "-", "--out", str(out), input=piece.decode())
        assert r.returncode == (0 if k == 0 else 2), r.stderr
    r = _cli("scan", "-", "--out", str(out), "--source-name", "second", input=small_text[10000:20000].decode())
    assert r.returncode == 0, r.stderr
    assert sorted(_games(out)["source"].unique().to_list()) == ["g", "g_b", "second", "stdin"]


# 5. Names safe for every layer.


@pytest.mark.parametrize("name", ["a=b", "x" * 250, "caf\udce9"])
def test_source_names_survive_every_layer(tmp_path, small_text, name):
    src = os.path.join(os.fsencode(str(tmp_path)), os.fsencode(name) + b".pgn")
    with open(src, "wb") as fh:
        fh.write(small_text[:20000])
    out = tmp_path / "out"
    summary, code = _scan([os.fsdecode(src)], out)
    assert code == 0, summary
    g = _games(out)
    expected = name if "\udce9" not in name else "caf%E9"
    assert g["source"].unique().to_list() == [expected]
    assert g.height == summary["games"]
    pytest.importorskip("matplotlib")
    r = _cli("report", str(out))
    assert r.returncode == 0, r.stderr


# 6. Arguments validated at parse time.


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--max-game-mb", "0"], "--max-game-mb"),
        (["--max-game-mb", "-1"], "--max-game-mb"),
        (["--custom", "x:claim_moves=abc"], "claim_moves"),
        (["--custom", "x:claim_moves=-5"], "claim_moves"),
        (["--progress-interval", "-3"], "--progress-interval"),
        (["--edition", "fshr_rusian"], "fshr_russian"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(tmp_path, args, needle):
    r = _cli("scan", "nothing.pgn", "--out", str(tmp_path / "o"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow  # waits out the Dask client's 10 s connect timeout
def test_unreachable_scheduler_is_a_clear_error(tmp_path, small_text):
    pytest.importorskip("dask.distributed")
    src = tmp_path / "x.pgn"
    src.write_bytes(small_text[:5000])
    r = _cli("scan", str(src), "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:1", timeout=120)
    assert r.returncode == 2 and "cannot reach the Dask scheduler" in r.stderr, r.stderr


def test_report_on_a_folder_without_tables_exits_2(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "empty").mkdir()
    r = _cli("report", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no analyzer tables" in r.stderr


def test_huge_single_line_comment_is_game_too_large(tmp_path):
    """A game above the size limit made of one long comment line is game_too_large (it was
    'unterminated': the reader cut the unit inside it), and the games around it are kept."""
    g = b'[Event "%s"]\n[Result "*"]\n\n1. e4 e5 *\n\n'
    big = b'[Event "big"]\n[Result "*"]\n\n1. e4 {' + b"x" * (3 << 20) + b"} e5 *\n\n"
    src = tmp_path / "c.pgn"
    src.write_bytes(g % b"a" + big + g % b"c")
    _summary, _code = _scan([src], tmp_path / "out", unit_text_bytes=1 << 20, max_game_bytes=1 << 20)
    rows = _games(tmp_path / "out").sort("game_index")
    assert rows["event"].to_list() == ["a", "big", "c"]
    assert rows["status"].to_list() == ["ok", "game_too_large", "ok"]


# 7. Stale results: an input rewritten with the same size and mtime.


def test_rewritten_input_with_same_size_and_mtime_is_recomputed(tmp_path, small_text):
    src = tmp_path / "g.pgn"
    text = small_text[:50000]
    src.write_bytes(text)
    st = os.stat(src)
    out = tmp_path / "out"
    _scan([src], out)
    assert b"Rated" in text
    src.write_bytes(text.replace(b"Rated", b"RATED"))  # same size
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert os.stat(src).st_size == st.st_size
    summary, _code = _scan([src], out)
    assert summary["sources_skipped_as_complete"] == []
    events = _games(out)["event"].to_list()
    assert any("RATED" in e for e in events) and not any("Rated" in e for e in events)
