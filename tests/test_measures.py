"""The research measures on hand-built games (docs/measures.md): claimed, missed, avoided, passed
on, ended, automatic; the games/verdicts/events layout; derived columns; provenance.

Every expected ply is derived in a comment from the rules (FIDE Laws 2018/2023 Art. 9, seed 000:
9.2.1.1 written move, 9.2.1.2 on the board, 9.3.1/9.3.2, 9.4 the claim is lost by moving) and
the definitions of docs/measures.md; none is taken from the code. python-chess checks only that
the games are legal and show what the comments say.
"""

from __future__ import annotations

import io
import json

import chess
import chess.pgn
import pyarrow.parquet as pq
import pytest

from analyzer import engine, tables
from analyzer.kinds import resolve_editions
from conftest import analyze, out_tables, verdict_rows

SHUFFLE = "1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8"  # the start position at plies 0, 4, 8


def _pgn(moves: str, result: str, fen: str | None = None, **tags) -> str:
    hdr = [f'[Event "{tags.pop("Event", "test")}"]', f'[Result "{result}"]']
    hdr += [f'[{k} "{v}"]' for k, v in tags.items()]
    if fen:
        hdr += [f'[FEN "{fen}"]', '[SetUp "1"]']
    text = "\n".join(hdr) + f"\n\n{moves} {result}\n\n"
    game = chess.pgn.read_game(io.StringIO(text))
    assert not game.errors, game.errors
    return text


def _one(text: str, edition: str = "fide_2018"):
    res = analyze(text.encode(), editions=(edition,))
    (row,) = verdict_rows(res)
    events = sorted((e["ply"], e["rule"], e["kind"], e["side"], e["outcome"]) for e in res.events.to_pylist())
    return row, events


def test_claimed_by_a_written_move_recorded_as_the_last_move():
    # OTB: black writes 4...Ng8 (the start position a 3rd time: plies 0, 4, 8), claims, and the
    # scoresheet ends with that move. Ply 7 (black to move): 4...Ng8 would make a 3rd occurrence
    # -> a written-move chance (9.2.1.1); ply 8: a 3rd occurrence on the board, the last position
    # of a drawn game -> both `claimed`; nothing missed (the old measure counted black's ply 7).
    row, events = _one(_pgn(SHUFFLE, "1/2-1/2"))
    assert row["plies"] == 8 and row["first_threefold_ply"] == 8 and row["first_threefold_claim_ply"] == 7
    assert events == [
        (7, "threefold", "claim_intended", "black", "claimed"),
        (8, "threefold", "claim_now", "white", "claimed"),
    ]
    assert row["first_missed_claim_ply"] is None and row["first_avoided_claim_ply"] is None
    assert row["draw_reason"] == "threefold"
    assert row["first_third_occurrence_ply"] == 8
    # the claim, beside the missed columns: the first claimed chance is black's written move at 7
    assert (row["claimed_ply"], row["claimed_rule"]) == (7, "threefold")


def test_claimed_on_the_board_under_lichess():
    # Lichess has no written-move claims: the same scoresheet is a claim of the position on the
    # board at ply 8, the last position of a drawn game.
    row, events = _one(_pgn(SHUFFLE, "1/2-1/2", UTCDate="2023.01.01"), "lichess")
    assert events == [(8, "threefold", "claim_now", "white", "claimed")]
    assert (row["claimed_ply"], row["claimed_rule"]) == (8, "threefold")


def test_board_chance_played_past():
    # After 4...Ng8 (ply 8) white may claim on the board (9.2.1.2) but plays 5.e4 (9.4: the claim
    # is lost) and mates at ply 13: white's chance at 8 is missed, 13 - 8 = 5 plies after it,
    # the side that missed won; black's written move at 7 handed white the chance: passed on.
    row, events = _one(_pgn(SHUFFLE + " 5. e4 f6 6. d4 g5 7. Qh5#", "1-0"))
    assert row["plies"] == 13
    assert (row["first_missed_claim_ply"], row["missed_claim_rule"], row["missed_claim_side"]) == (
        8,
        "threefold",
        "white",
    )
    assert row["missed_claim_result"] == "win" and row["plies_after_missed_claim"] == 5
    assert events == [
        (7, "threefold", "claim_intended", "black", "passed_on"),
        (8, "threefold", "claim_now", "white", "missed"),
    ]
    assert row["first_avoided_claim_ply"] is None and row["draw_reason"] is None
    assert row["final_is_checkmate"] is True
    assert row["claimed_ply"] is None and row["claimed_rule"] is None  # played on, then won


def test_written_move_chance_avoided():
    # Ply 7 (black to move): 4...Ng8 would repeat the start position a 3rd time; black plays
    # 4...e5 instead, so ply 8 is no claimable position: avoided (black, ply 7). No board chance
    # ever arises: nothing missed.
    row, events = _one(_pgn("1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 e5 5. e4", "1/2-1/2"))
    assert events == [(7, "threefold", "claim_intended", "black", "avoided")]
    assert (row["first_avoided_claim_ply"], row["avoided_claim_rule"], row["avoided_claim_side"]) == (
        7,
        "threefold",
        "black",
    )
    assert row["first_missed_claim_ply"] is None
    assert row["draw_reason"] == "agreement"


def test_fifty_moves_at_clock_99_then_100():
    # Start: halfmove clock 98, white to move. 1.Ra2 makes it 99 (ply 1, black to move): black
    # may write a non-zeroing move and claim (9.3.1) -> written-move chance at 1; 1...Ke7 makes
    # it 100 (ply 2): white may claim on the board (9.3.2) but plays 2.Ra1 -> missed at 2 (white);
    # black plays on at 3 -> missed; the game ends drawn at ply 4 (clock 102): claimed. Black's
    # written move at 1 made ply 2 claimable for white: passed on.
    fen = "4k3/8/8/8/8/8/8/R3K3 w - - 98 60"
    row, events = _one(_pgn("60. Ra2 Ke7 61. Ra1 Ke8", "1/2-1/2", fen=fen))
    assert row["first_fifty_claim_ply"] == 1 and row["first_fifty_ply"] == 2
    assert (row["first_missed_claim_ply"], row["missed_claim_rule"], row["missed_claim_side"]) == (2, "fifty", "white")
    assert row["missed_claim_result"] == "draw" and row["plies_after_missed_claim"] == 2
    assert events == [
        (1, "fifty", "claim_intended", "black", "passed_on"),
        (2, "fifty", "claim_now", "white", "missed"),
        (3, "fifty", "claim_now", "black", "missed"),
        (4, "fifty", "claim_now", "white", "claimed"),
    ]
    assert row["first_halfmove_clock_100_ply"] == 2 and row["final_halfmove_clock"] == 102
    assert (row["claimed_ply"], row["claimed_rule"]) == (4, "fifty")  # missed twice, then claimed


def test_lichess_edition_has_no_written_move_chances():
    # Lichess: a claim is of the position on the board (no 9.2.1.1), so the only chance is
    # white's 3rd occurrence at ply 8, missed; the side is the side to move, although the server
    # would take a claim from either player.
    row, events = _one(_pgn(SHUFFLE + " 5. e4 f6 6. d4 g5 7. Qh5#", "1-0", UTCDate="2023.01.01"), "lichess")
    assert events == [(8, "threefold", "claim_now", "white", "missed")]
    assert (row["first_missed_claim_ply"], row["missed_claim_side"]) == (8, "white")
    assert row["first_avoided_claim_ply"] is None


def test_lichess_fifty_is_automatic():
    # Lichess ends the game at halfmove clock 100 (ply 2 here): automatic, not a claim; the rule
    # applies at every later position too (events mark every ply where a rule applies).
    fen = "4k3/8/8/8/8/8/8/R3K3 w - - 98 60"
    row, events = _one(_pgn("60. Ra2 Ke7 61. Ra1 Ke8", "1/2-1/2", fen=fen, UTCDate="2023.01.01"), "lichess")
    assert events == [
        (2, "fifty", "automatic", "white", "automatic"),
        (3, "fifty", "automatic", "black", "automatic"),
        (4, "fifty", "automatic", "white", "automatic"),
    ]
    assert (row["end_ply"], row["end_rule"]) == (2, "fifty") and row["first_missed_claim_ply"] is None


def test_a_chance_at_the_end_of_a_lost_game_is_ended():
    # The game is recorded 0-1 at the 3rd occurrence (say white lost on time there): the chance at
    # ply 8 was neither claimed nor played past: ended; black's at 7 likewise made ply 8
    # claimable and the game did not go on: passed on.
    row, events = _one(_pgn(SHUFFLE, "0-1"))
    assert events == [
        (7, "threefold", "claim_intended", "black", "passed_on"),
        (8, "threefold", "claim_now", "white", "ended"),
    ]
    assert row["first_missed_claim_ply"] is None
    assert row["claimed_ply"] is None  # a chance at the end of a lost game is no claim


def test_one_games_row_per_game_for_any_number_of_editions(tmp_path, small_text):
    src = tmp_path / "g.pgn"
    src.write_bytes(small_text[:300_000])
    n = small_text[:300_000].count(b"[Event ")
    first = None
    for eds in (
        ["fide_2018"],
        ["fide_2018", "lichess", "fide_1997"],
        ["fide_2018", "fide_2014", "fide_2009", "fide_1997", "lichess"],
    ):
        out = tmp_path / f"out{len(eds)}"
        summary, _code = engine.run_scan(
            [str(src)], engine.Config(out=str(out), editions=resolve_editions(eds)), progress_interval=0
        )
        g, v, e = out_tables(out)
        assert summary["games"] == g.height == n  # one row per game
        assert v.height == n * len(eds)  # one per game and edition
        assert set(v["edition"].cast(str)) == set(eds) and set(e["edition"].cast(str)) <= set(eds)
        # Facts are the same whatever the editions: the games tables are equal.
        if first is not None:
            assert g.equals(first)
        first = g


def test_derived_columns():
    games = [
        _pgn(
            "1. e4",
            "1-0",
            Site="https://lichess.org/abc",
            TimeControl="180+2",
            WhiteElo="1800",
            BlackElo="2099",
            UTCDate="2024.01.31",
        ),  # blitz: 180 + 40*2 = 260 s; mean 1949.5
        _pgn("1. e4", "1-0", Site="Moscow RUS", Event="USSR ch", Date="1955.??.??"),
        _pgn("1. e4", "1-0", Site="Chess.com", TimeControl="60", WhiteElo="900", Date="2020.05.05"),
        _pgn("1. e4", "1-0", Site="?", Event="Casual game", TimeControl="-"),
        _pgn(
            "1. e4 { [%clk 0:00:10] } e5 { [%clk 0:00:09] }", "1-0", TimeControl="15+0", Site="https://lichess.org/x"
        ),  # ultrabullet (< 30 s)
        _pgn("1. e4", "1-0", Site="Hoogeveen", Event="Internet blitz", TimeControl="40/7200:3600"),
    ]
    res = analyze("".join(games).encode())
    rows = res.games.to_pylist()
    assert [r["platform"] for r in rows] == ["lichess", "otb", "chess.com", "other", "lichess", "other"]
    assert [r["time_control_class"] for r in rows] == [
        "blitz",
        "unknown",
        "bullet",
        "correspondence",
        "ultrabullet",
        "classical",
    ]
    assert [r["rating_band"] for r in rows] == ["1800-1999", None, None, None, None, None]
    assert [str(r["date"]) if r["date"] else None for r in rows] == ["2024-01-31", None, "2020-05-05", None, None, None]
    assert [r["has_clock"] for r in rows] == [False, False, False, False, True, False]


def _scan_head(tmp_path, text: bytes, size: int):
    """Scan the first `size` bytes of `text` as source "g" (editions fide_2018 and lichess) into
    tmp_path/out: a small OUT directory to read back. Returns (input file, OUT)."""
    src = tmp_path / "g.pgn"
    src.write_bytes(text[:size])
    out = tmp_path / "out"
    engine.run_scan(
        [str(src)],
        engine.Config(out=str(out), editions=resolve_editions(["fide_2018", "lichess"])),
        progress_interval=0,
    )
    return src, out


def test_parquet_files_carry_provenance_and_out_has_a_data_dictionary(tmp_path, small_text):
    src, out = _scan_head(tmp_path, small_text, 50_000)
    import analyzer

    for table in ("games", "verdicts", "events"):
        (first_file,) = analyzer.committed_files(str(out), table)  # the one compacted file of source g
        meta = pq.read_schema(first_file).metadata
        assert meta[b"analyzer.version"].decode() == analyzer.__version__
        assert meta[b"analyzer.source"] == b"g" and int(meta[b"analyzer.input_size"]) == src.stat().st_size
        eds = json.loads(meta[b"analyzer.editions"])
        assert sorted(eds) == ["fide_2018", "lichess"] and eds["lichess"]["fifty_is_automatic"] is True
    with open(out / "_dataset.json") as fh:
        dd = json.load(fh)
    for table, schema in tables.SCHEMAS.items():
        assert [c["column"] for c in dd["tables"][table]] == schema.names
        assert all(c["meaning"] for c in dd["tables"][table])


def test_games_with_verdicts_joins_one_edition(tmp_path, small_text):
    import analyzer

    _src, out = _scan_head(tmp_path, small_text, 80_000)
    j = analyzer.games_with_verdicts(str(out), "lichess").collect()
    g = analyzer.scan_games(str(out)).collect()
    assert j.height == g.height and set(j["edition"].cast(str)) == {"lichess"}
    assert "platform" in j.columns and "first_missed_claim_ply" in j.columns


@pytest.mark.parametrize("edition", ["fide_2018", "lichess"])
def test_outcomes_cover_every_claim_event(edge_text, edition):
    """On the curated edge cases: every claim or automatic event has an outcome, offers none;
    `missed` events are exactly the claim_now events before the last ply."""
    res = analyze(edge_text, editions=(edition,))
    plies = {g["game_index"]: g["plies"] for g in res.games.to_pylist()}
    events = res.events.to_pylist()
    # both sides of the equivalence below occur (no events, or no missed ones, would check nothing)
    assert sum(e["outcome"] == "missed" for e in events) > 0
    assert sum(e["kind"] == "claim_now" and e["outcome"] != "missed" for e in events) > 0
    for e in events:
        if e["kind"] == "offer":
            assert e["outcome"] is None
            continue
        assert e["outcome"] is not None
        assert (e["outcome"] == "missed") == (e["kind"] == "claim_now" and e["ply"] < plies[e["game_index"]])


@pytest.mark.parametrize("edition", ["fide_2018", "lichess"])
def test_claimed_columns_are_the_first_claimed_event(edge_text, edition):
    """On the curated edge cases: `claimed_ply` / `claimed_rule` of a game are its first event
    with outcome `claimed` (in ply order), and null exactly when it has none; the report's
    `claimed` measure (any claimed event) is then `claimed_ply` not null."""
    res = analyze(edge_text, editions=(edition,))
    first: dict[int, tuple[int, str]] = {}
    for e in sorted(res.events.to_pylist(), key=lambda e: (e["game_index"], e["ply"])):
        if e["outcome"] == "claimed":
            first.setdefault(e["game_index"], (e["ply"], e["rule"]))
    rows = res.verdicts.to_pylist()
    assert sum(r["claimed_ply"] is not None for r in rows) == len(first) > 0
    for r in rows:
        got = (r["claimed_ply"], r["claimed_rule"]) if r["claimed_ply"] is not None else None
        assert got == first.get(r["game_index"])
