"""The scan's summary (issue 39): automatic draws per edition beside the claims, counted per game
by the rule of its first automatic draw, and which edition is in force for which population, with
a warning where FIDE's Laws are the only reading of online games. Checked against the tables as
polars reads them from the Parquet files (no summary code)."""

from __future__ import annotations

import subprocess
import sys

import polars as pl

from conftest import need
from report_checks import cli, raw

SMALL = need("lichess_small.pgn")


def test_automatic_draws_per_edition_match_the_tables(tmp_path):
    out = tmp_path / "out"
    proc, summary = cli("scan", SMALL, "--out", str(out), "--edition", "fide_2018,lichess")
    assert proc.returncode == 0, proc.stderr[-2000:]
    v = raw(str(out), "verdicts").filter(pl.col("end_rule").is_not_null())
    want = {f"{ed}:{rule}": n for ed, rule, n in v.group_by("edition", "end_rule").len().iter_rows()}
    assert summary["automatic_draws"] == want
    # Lichess's own automatic draws are there (insufficient material on these games)
    assert want.get("lichess:insufficient_material", 0) > 0
    assert summary["fifty_automatic"] == ["lichess"]
    g = raw(str(out), "games")
    with open(SMALL, "rb") as fh:
        assert g.height == fh.read().count(b"[Event ")  # every game in the table (the counts below compare it)
    n_lichess = g.filter(pl.col("platform") == "lichess").height
    assert summary["platforms"] == {"lichess": n_lichess} and n_lichess == g.height
    assert summary["in_force"] == [
        f"{n_lichess:,} Lichess games: lichess is the edition in force (fide_2018: what FIDE's Laws would say of them)"
    ]
    # the human summary (a rerun: the counts come from the finished source's records): the
    # automatic draws beside the claims, '-' for a claim the edition does not have (its 50-move
    # draw is automatic)
    proc2 = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", SMALL, "--out", str(out), "--edition", "fide_2018,lichess"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc2.returncode == 0 and "skipped: complete" in proc2.stdout, proc2.stderr
    lines = proc2.stdout.splitlines()
    row = next(line for line in lines if line.strip().startswith("lichess "))
    assert (
        row.split()[2] == "-" and row.split()[-1] == f"{sum(n for k, n in want.items() if k.startswith('lichess:')):,}"
    )
    assert any(line.strip().startswith("automatic draws under lichess: insufficient_material") for line in lines)
    assert "lichess is the edition in force" in proc2.stdout


def test_fide_alone_on_lichess_games_is_warned_of(tmp_path):
    proc, summary = cli("scan", SMALL, "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr[-2000:]  # a note, not a problem: the exit code stays 0
    (note,) = summary["in_force"]
    assert note.startswith("warning: ") and "read under fide_2018 only" in note and "add --edition lichess" in note
