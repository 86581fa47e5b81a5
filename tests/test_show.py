"""`analyzer show OUT GAME`: a game's rule timeline from the tables and its text. The repeated
positions and their plies are checked against python-chess's own replay (tests/reference.py,
the oracle), the chances and verdicts against the tables; the board is drawn, the Lichess link
points at the ply; a game whose input is gone is still shown, without moves; the report's example
games link to the same page.
"""

from __future__ import annotations

import collections
import io
import os
import re
import shutil

import chess.pgn
import polars as pl
import pytest

import reference as ref
from analyzer import report, scan_events, scan_games
from conftest import need
from report_checks import cli

EDGE = need("edge_cases.pgn")
CLK = "{{ [%clk 0:00:{:02d}] }}"
# A Lichess game: the start position again at plies 4 and 8 (White to move at 8), then 5. e4 and a
# loss on time for White: the threefold claim at ply 8 was missed.
MOVES = ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8", "e4", "e5"]
LICHESS = (
    '[Event "Rated Bullet game"]\n[Site "https://lichess.org/abcdefgh"]\n[UTCDate "2021.03.01"]\n'
    '[White "alice"]\n[Black "<b>bob</b>"]\n[Result "0-1"]\n[TimeControl "60+0"]\n[Termination "Time forfeit"]\n\n'
    + " ".join((f"{i // 2 + 1}. " if i % 2 == 0 else "") + f"{m} " + CLK.format(59 - i) for i, m in enumerate(MOVES))
    + " 0-1\n\n"
)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("show")
    shutil.copy(EDGE, d / "edge.pgn")
    (d / "mine.pgn").write_text(LICHESS, encoding="utf-8")
    out = d / "out"
    proc, _ = cli(
        "scan", str(d / "mine.pgn"), str(d / "edge.pgn"), "--out", str(out), "--edition", "fide_2018,fide_2014,lichess"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def test_show_a_lichess_game_by_its_site(out, tmp_path):
    page = tmp_path / "g.html"
    proc, _ = cli("show", str(out), "https://lichess.org/abcdefgh/white#3", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "mine#0 — https://lichess.org/abcdefgh" in text
    assert "1. after 4... Ng8 — at plies 0, 4, 8; third occurrence at ply 8  https://lichess.org/abcdefgh#8" in text
    lich = text[text.index("\nlichess (in force):") :]
    assert (
        "ply    8  after 4... Ng8: White could claim on the board (threefold) — missed: played on [clock 0:00:53]"
        in (lich)
    )
    assert "verdict: first missed claim: ply 8 (threefold, white; the result for that side: loss)" in lich
    fide = text[text.index("\nfide_2018 = fide_2014:") :]
    assert "ply    7  after 4. Ng1: Black could write a move and claim (threefold), e.g. by writing Ng8" in fide
    assert "passed on" in fide
    assert "edition in force: lichess" in text
    html_page = page.read_text(encoding="utf-8")
    assert html_page.count("<svg") == 1 and 'href="https://lichess.org/abcdefgh#8"' in html_page
    assert "&lt;b&gt;bob&lt;/b&gt;" in html_page and "<b>bob</b>" not in html_page  # tags are text


def _oracle_repetitions(text: str) -> list[list[int]]:
    game = chess.pgn.read_game(io.StringIO(text))
    o = ref.analyze_game(game)
    by = collections.defaultdict(list)
    for ply, k in enumerate(o.key_class):
        by[k].append(ply)
    return sorted((p for p in by.values() if len(p) >= 3), key=lambda p: p[2])


def test_repeated_positions_match_python_chess(out):
    from analyzer.report import show

    g = scan_games(str(out)).filter(pl.col("source") == "edge").collect()
    every_event = scan_events(str(out)).filter(pl.col("source") == "edge").collect()
    ev = every_event.filter(pl.col("rule") == "threefold")
    with_rep = sorted(set(ev["game_index"]))[:25]
    assert len(with_rep) >= 10
    with open(EDGE, encoding="utf-8", errors="replace") as fh:
        data = fh.read().encode("utf-8")
    for gi in with_rep:
        row = g.filter(pl.col("game_index") == gi).row(0, named=True)
        view = show.load(str(out), "edge", gi)
        assert view.moves is not None, view.note
        text = data[row["byte_offset"] :].decode("utf-8", "replace")
        expected = _oracle_repetitions(text)
        assert [r.plies for r in view.repetitions] == expected, gi
        # every chance and automatic end of the tables is in the timeline, under its editions
        in_tables = {
            (e["edition"], e["ply"], e["rule"], e["kind"])
            for e in every_event.filter((pl.col("game_index") == gi) & (pl.col("kind") != "offer")).iter_rows(
                named=True
            )
        }
        shown = {
            (ed, e["ply"], e["rule"], e["kind"]) for eds, evs, _ in show.edition_groups(view) for ed in eds for e in evs
        }
        assert shown == in_tables and in_tables, gi


def test_show_by_source_and_index_and_errors(out):
    proc, _ = cli("show", str(out), "edge#0")
    assert proc.returncode == 0 and proc.stdout.startswith("edge#0"), proc.stderr
    proc, _ = cli("show", str(out), "edge#99999")
    assert proc.returncode == 2 and "no game 'edge#99999'" in proc.stderr and "Traceback" not in proc.stderr
    proc, _ = cli("show", str(out / "nope"), "edge#0")
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_a_game_whose_input_is_gone_is_shown_without_moves(tmp_path):
    src = tmp_path / "gone.pgn"
    src.write_text(LICHESS, encoding="utf-8")
    out = tmp_path / "out"
    proc, _ = cli("scan", str(src), "--out", str(out), "--edition", "lichess")
    assert proc.returncode == 0, proc.stderr
    src.unlink()
    proc, _ = cli("show", str(out), "gone#0")
    assert proc.returncode == 0, proc.stderr
    assert "(no moves: the input" in proc.stdout and "is not here any more)" in proc.stdout
    # the ply once (it printed "ply    8  ply 8:" without the moves' labels)
    assert "  ply    8: White could claim on the board (threefold) — missed" in proc.stdout
    assert "ply 8:" not in proc.stdout


def test_report_example_games_link_to_their_timeline(out):
    path = report.write_report(str(out))
    with open(path, encoding="utf-8") as fh:
        page = fh.read()
    links = re.findall(r'href="(games/[^"]+\.html)"', page)
    assert links
    for link in set(links):
        with open(os.path.join(os.path.dirname(path), link), encoding="utf-8") as fh:
            g = fh.read()
        assert "Chances and automatic ends, per edition" in g and 'href="../index.html"' in g
    boards = 0
    for x in set(links):
        with open(os.path.join(os.path.dirname(path), x), encoding="utf-8") as fh:
            boards += "<svg" in fh.read()
    assert boards


def test_edition_pair_examples_open_games_on_which_the_editions_differ(out):
    """Each example of an edition pair links to the page of a game whose verdicts differ
    between the two editions (checked on the raw verdicts)."""
    from report_checks import raw_joined

    path = report.write_report(str(out))
    with open(path, encoding="utf-8") as fh:
        page = fh.read()
    section = page[page.index('id="editions"') : page.index('id="trends"')]
    j = raw_joined(str(out))
    sig = ["first_missed_claim_ply", "missed_claim_rule", "first_avoided_claim_ply", "avoided_claim_rule"]
    sig += ["claimed", "end_ply", "end_rule"]
    checked = 0
    for a, b, links in re.findall(r'<td class="l">(\w+) vs (\w+)</td>.*?<td class="l">(.*?)</td></tr>', section, re.S):
        for href in re.findall(r'href="(games/[^"]+)"', links):
            with open(os.path.join(os.path.dirname(path), href), encoding="utf-8") as fh:
                key = re.search(r"<h1>(.*?)</h1>", fh.read()).group(1)
            src, gi = key.rsplit("#", 1)
            rows = j.filter((pl.col("source") == src) & (pl.col("game_index") == int(gi)))
            va = rows.filter(pl.col("edition") == a).select(sig).row(0)
            vb = rows.filter(pl.col("edition") == b).select(sig).row(0)
            assert va != vb, (a, b, key)
            checked += 1
    assert checked >= 3


def test_example_pages_read_the_records_once_not_per_game(out, tmp_path, monkeypatch):
    """The example pages read OUT's source records a fixed number of times, not three times per
    game: on a 10 M-game source (a 1.5 MB record, checksummed on every read) the per-game reads
    took 12 of the report's 15 s of example pages."""
    from analyzer.engine.dataset import Dataset
    from analyzer.report import model, show

    rep = model.build(str(out))
    reads = collections.Counter()
    real = Dataset.read_record

    def counting(self, name):
        if name.endswith("/source.json"):
            reads["n"] += 1
        return real(self, name)

    monkeypatch.setattr(Dataset, "read_record", counting)
    pages = show.write_example_pages(Dataset(str(out)), rep, str(tmp_path / "games"))
    assert len(pages) >= 5
    sources = 2
    assert reads["n"] <= 4 * 3 * sources, (reads["n"], len(pages))  # before: 172 for 29 pages
    assert reads["n"] < len(pages), (reads["n"], len(pages))  # fewer than one read per page


def test_a_game_far_into_a_pzstd_dump_is_read_from_its_own_frames(tmp_path, monkeypatch):
    """An example game far into a month's dump gets its board: a pzstd input is decoded from
    the frame unit that holds the game, not from its start up to a read budget (before: the
    report decoded at most 2 GB of text per source, and games beyond it had no moves)."""
    from analyzer.report import show
    from conftest import pzstd_file, read_data

    text = read_data("lichess_small.pgn") * 3  # ~8 MB of text: 2 MiB frames, 1 per unit
    src = pzstd_file(tmp_path, text, name="dump")
    out = tmp_path / "out"
    proc, _ = cli("scan", str(src), "--out", str(out), "--frames-per-unit", "1", "--edition", "fide_2018")
    assert proc.returncode == 0, proc.stderr[-2000:]
    games = scan_games(str(out)).select("game_index", "byte_offset", "site").collect()
    last = games.row(games.height - 1, named=True)
    budget = 1 << 20  # a read budget far below the game's offset
    assert last["byte_offset"] > 4 * budget
    monkeypatch.setattr(show, "REPORT_READ_BUDGET", budget)
    from analyzer.engine.dataset import Dataset

    texts, why = Dataset(str(out)).game_texts("dump", [last["byte_offset"]], budget)
    assert why is None and last["byte_offset"] in texts
    got = texts[last["byte_offset"]]
    assert got.startswith("[Event ") and last["site"] in got.split("\n\n", 1)[0]
    assert text[last["byte_offset"] :].decode("utf-8").startswith(got.split("\n\n", 1)[0])
