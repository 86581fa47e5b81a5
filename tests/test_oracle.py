"""The engine against the python-chess oracle (tests/reference.py) on every game of
lichess_small.pgn (2,000) and edge_cases.pgn (243, 19 of them Chess960): per-ply key identity
classes, halfmove clocks and %clk clocks, every fide_2018 game column, and the event set.

Expected values come only from python-chess (and, for the oracle's own sanity checks, from the
facts written into the data files by their curator). A missing engine is a failure, not a skip.
"""

from __future__ import annotations

import collections
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref
from conftest import need

FILES = {
    "lichess_small": need("lichess_small.pgn"),
    "edge_cases": need("edge_cases.pgn"),
}
EXPECTED_GAMES = {"lichess_small": 2000, "edge_cases": 243}
# edge_cases is small but full of long repetition-heavy games: there the oracle also checks every
# one of its shortcuts against the plain python-chess method call at every ply (cached in /tmp).
EXHAUSTIVE = {"lichess_small": False, "edge_cases": True}


@pytest.fixture(scope="module", params=sorted(FILES))
def name(request):
    return request.param


_ORACLE: dict = {}
_ENGINE: dict = {}
_MISMATCHES: dict = {}


def oracle(name: str) -> list:
    if name not in _ORACLE:
        _ORACLE[name] = ref.analyze_file(FILES[name], exhaustive=EXHAUSTIVE[name])
    return _ORACLE[name]


def engine(name: str):
    if name not in _ENGINE:
        from analyzer.api import analyze_bytes  # a missing engine must fail the tests

        with open(FILES[name], "rb") as fh:
            data = fh.read()
        res = analyze_bytes(data, source=name, editions=(ref.EDITION,), keep_facts=True)
        _ENGINE[name] = (res, ref.engine_games(res))
    return _ENGINE[name]


def paired(name: str) -> list:
    """(oracle, engine) per game of the file, once both are seen to hold every game of it (zip
    would pass over games the engine lost, and an empty engine result would compare nothing)."""
    orc = oracle(name)
    _, eng = engine(name)
    assert len(orc) == len(eng) == EXPECTED_GAMES[name], (len(orc), len(eng))
    return list(zip(orc, eng))


def mismatches(name: str) -> list:
    """All mismatches of the file (games the engine did not analyze give a 'status' mismatch)."""
    if name not in _MISMATCHES:
        out = []
        for o, e in paired(name):
            out.extend(ref.compare_game(o, e))
        _MISMATCHES[name] = out
    return _MISMATCHES[name]


def _check(name: str, whats: tuple) -> None:
    ms = [m for m in mismatches(name) if m.what in whats]
    if ms:
        pytest.fail(
            f"{name}: {len(ms)} mismatches in {whats}\n" + ref.format_mismatches(oracle(name), ms), pytrace=False
        )


# ------------------------------------------------------------------------------------------
# The oracle itself (independent of the engine)


def test_oracle_reads_every_game(name):
    orc = oracle(name)
    assert len(orc) == EXPECTED_GAMES[name]
    bad = [o.describe() for o in orc if o.errors]
    assert not bad, bad[:5]
    with open(FILES[name], "rb") as fh:
        bounds = ref.split_games(fh.read())
    assert len(bounds) == len(orc)


_EDGE_FACTS = [
    # (regex on the EdgeCase tag, function(oracle, match) -> list of (what, expected, got))
    (
        r"position occurred 3rd time at ply (\d+), game continued to ply (\d+) \(max repetitions (\d+)\)",
        lambda o, m: [
            ("first_threefold_ply", int(m[1]), o.columns["first_threefold_ply"]),
            ("plies", int(m[2]), o.plies),
            ("max rep", int(m[3]), max(o.rep_count)),
        ],
    ),
    (
        r"halfmove clock reaches 100 at the final ply (\d+)",
        lambda o, m: [("first clock 100", int(m[1]), _first_clock(o, 100)), ("plies", int(m[1]), o.plies)],
    ),
    (
        r"very long game: (\d+) plies; max halfmove clock (\d+)",
        lambda o, m: [("plies", int(m[1]), o.plies), ("max clock", int(m[2]), max(o.halfmove_clock))],
    ),
    (
        r"after the double pawn push at ply\(s\) \[([\d, ]+)\] an en-passant capture is pseudo-legal but illegal",
        lambda o, m: [("illegal ep plies", [int(x) for x in m[1].split(",")], o.illegal_ep_plies)],
    ),
    (
        r"first threefold ply by repetition key: legal-ep\(FIDE\)=(\d+),.*game ended at ply (\d+)",
        lambda o, m: [
            ("first_threefold_ply", int(m[1]), o.columns["first_threefold_ply"]),
            ("plies", int(m[2]), o.plies),
        ],
    ),
    (
        r"fivefold repetition at ply (\d+) .*threefold first at ply (\d+); "
        r"game ended at ply (\d+); max repetitions (\d+)",
        lambda o, m: [
            ("first_fivefold_ply", int(m[1]), o.columns["first_fivefold_ply"]),
            ("first_threefold_ply", int(m[2]), o.columns["first_threefold_ply"]),
            ("plies", int(m[3]), o.plies),
            ("max rep", int(m[4]), max(o.rep_count)),
        ],
    ),
    (
        r"draw by threefold repetition: 3rd occurrence at the final ply (\d+)",
        lambda o, m: [
            ("first_threefold_ply", int(m[1]), o.columns["first_threefold_ply"]),
            ("plies", int(m[1]), o.plies),
            ("draw_reason", "threefold", o.columns["draw_reason"]),
        ],
    ),
    (
        r"50-move rule NOT claimed: halfmove clock reached 100 at ply (\d+), "
        r"game continued to ply (\d+) \(max clock (\d+)",
        lambda o, m: [
            ("first clock 100", int(m[1]), _first_clock(o, 100)),
            ("plies", int(m[2]), o.plies),
            ("max clock", int(m[3]), max(o.halfmove_clock)),
        ],
    ),
    (
        r"reached 150 = 75-move automatic draw at ply (\d+)",
        lambda o, m: [("first_seventyfive_ply", int(m[1]), o.columns["first_seventyfive_ply"])],
    ),
    (
        r"-- (\d+) plies; max halfmove clock (\d+);",
        lambda o, m: [("plies", int(m[1]), o.plies), ("max clock", int(m[2]), max(o.halfmove_clock))],
    ),
    (
        r"threefold first at ply (\d+)",
        lambda o, m: [("first_threefold_ply", int(m[1]), o.columns["first_threefold_ply"])],
    ),
    (r"no position occurs 3 times", lambda o, m: [("first_threefold_ply", None, o.columns["first_threefold_ply"])]),
    (
        r"50-move claim possible from ply (\d+)",
        lambda o, m: [("first_fifty_ply", int(m[1]), o.columns["first_fifty_ply"])],
    ),
    (
        r"75-move automatic draw point at ply (\d+)",
        lambda o, m: [("first_seventyfive_ply", int(m[1]), o.columns["first_seventyfive_ply"])],
    ),
    (
        r"missed draw claim: threefold repetition available at ply (\d+) but game was decided \((\S+)\) at ply (\d+)",
        lambda o, m: [
            ("first_threefold_ply", int(m[1]), o.columns["first_threefold_ply"]),
            ("plies", int(m[3]), o.plies),
            ("result", m[2], o.headers.get("Result")),
        ],
    ),
    (
        r"missed 50-move claim: halfmove clock reached 100 at ply (\d+) \(max (\d+)\), "
        r"game then decided (\S+) at ply (\d+)",
        lambda o, m: [
            ("first clock 100", int(m[1]), _first_clock(o, 100)),
            ("max clock", int(m[2]), max(o.halfmove_clock)),
            ("plies", int(m[4]), o.plies),
            (
                "missed",
                True,
                o.columns["first_missed_claim_ply"] is not None and o.columns["first_missed_claim_ply"] <= int(m[1]),
            ),
        ],
    ),
    (
        r"checkmate delivered by an en-passant capture",
        lambda o, m: [
            ("final mate", True, o.flags["checkmate"][o.plies]),
            (
                "last move e.p.",
                True,
                o.board_at(o.plies - 1).is_en_passant(__import__("chess").Move.from_uci(o.ucis[-1])),
            ),
        ],
    ),
    (
        r"en-passant capture giving check \((\d+)x in game\)",
        lambda o, m: [("ep captures >=", True, o.ep_captures >= int(m[1]))],
    ),
]


def _first_clock(o, n):
    return next((p for p, h in enumerate(o.halfmove_clock) if h >= n), None)


def test_oracle_matches_edge_case_annotations():
    """The curator computed facts for each edge case independently (written in its EdgeCase tag);
    the oracle must reproduce them. Guards the oracle against its own bugs."""
    orc = oracle("edge_cases")
    bad, checked = [], 0
    for o in orc:
        tag = o.headers.get("EdgeCase", "")
        for pattern, fn in _EDGE_FACTS:
            m = re.search(pattern, tag)
            if not m:
                continue
            for what, exp, got in fn(o, m):
                checked += 1
                if exp != got:
                    bad.append(f"#{o.index} {what}: tag says {exp!r}, oracle {got!r}  [{tag[:90]}]")
    assert checked > 300
    assert not bad, "\n".join(bad[:20])


def test_oracle_manifest_examples():
    """Figures quoted in the data MANIFEST for named edge-case games."""
    orc = oracle("edge_cases")

    def find(white, black):
        hits = [o for o in orc if white in o.headers.get("White", "") and black in o.headers.get("Black", "")]
        assert len(hits) >= 1, (white, black)
        return hits[0]

    o = find("Kasparov", "Miles")  # fivefold at ply 101
    assert o.columns["first_fivefold_ply"] == 101
    o = find("Carlsen", "Le Quang Liem")  # 50-move claim possible at ply 203, White won at 205
    assert (o.columns["first_fifty_ply"], o.plies, o.headers["Result"]) == (203, 205, "1-0")
    # The claim on the board at ply 203 belongs to black (ply 203 of a game from the standard
    # start: black to move), who played on and lost; white's written-move chance at 202 made
    # the position claimable for black: passed on, not avoided.
    assert o.columns["first_missed_claim_ply"] == 203 and o.columns["missed_claim_rule"] == "fifty"
    assert o.columns["missed_claim_side"] == "black" and o.columns["missed_claim_result"] == "loss"
    assert [e[-1] for e in o.events if e[:3] == (202, "fifty", "claim_intended")] == ["passed_on"]
    o = find("Bykova", "Gaprindashvili")  # a position occurs 8 times
    assert max(o.rep_count) == 8
    o = find("Nikolic", "Arsovic")  # 538 plies; clock >= 100 from 322, 150 at 483, max 205
    assert o.plies == 538 and _first_clock(o, 100) == 322 and _first_clock(o, 150) == 483
    assert max(o.halfmove_clock) == 205
    o = find("Karpov", "Kasparov")  # Tilburg 1991: clock 100 at ply 225
    assert _first_clock(o, 100) == 225
    o = find("Lputian", "Harutjunyan")  # claim possible at ply 271, decided 1-0 at ply 283
    assert o.columns["first_fifty_ply"] == 271 and o.plies == 283 and o.headers["Result"] == "1-0"


def test_oracle_clock_reader():
    """%clk of the side to move = comment on its previous half-move (independent regex parse)."""
    text = ref.read_text(FILES["lichess_small"])
    first = text[: text.index("\n[Event ", 10)]
    clks = re.findall(r"\[%clk (\d+):(\d+):(\d+(?:\.\d+)?)\]", first)
    secs = [int(h) * 3600 + int(m) * 60 + float(s) for h, m, s in clks]
    o = oracle("lichess_small")[0]
    assert len(secs) == o.plies
    assert o.clock[:2] == [None, None]
    assert o.clock[2:] == secs[:-1]


# ------------------------------------------------------------------------------------------
# Engine vs oracle


def test_engine_game_count_and_index(name):
    _res, eng = engine(name)
    orc = oracle(name)
    assert len(eng) == len(orc), f"engine {len(eng)} games, python-chess {len(orc)}"
    idx = [e.columns["game_index"] for e in eng]
    assert idx == list(range(len(orc)))


def test_engine_byte_offsets(name):
    _, eng = engine(name)
    with open(FILES[name], "rb") as fh:
        bounds = ref.split_games(fh.read())
    got = [e.byte_offset for e in eng]
    exp = [b[0] for b in bounds]
    bad = [(i, x, y) for i, (x, y) in enumerate(zip(exp, got)) if x != y]
    assert len(got) == len(exp) == EXPECTED_GAMES[name] and not bad, f"(game, expected, got): {bad[:10]}"


def test_engine_status_ok(name):
    """Every game is analyzed, Chess960 games included."""
    orc = oracle(name)
    bad = []
    for o, e in paired(name):
        if e.status == "no_moves" and o.plies == 0:
            continue  # a game without movetext, analyzed as a 0-ply game: compared as ok
        if e.status != "ok":
            bad.append(
                f"{o.describe()} [{o.headers.get('Variant', '')}] FEN={o.headers.get('FEN')}: "
                f"{e.status}: {e.error} (error_ply {e.columns.get('error_ply')})"
            )
    assert not bad, "\n".join(bad[:10])
    if name == "edge_cases":
        assert sum(o.chess960 for o in orc) == 19


def test_engine_headers(name):
    tags = {
        "event": "Event",
        "site": "Site",
        "white": "White",
        "black": "Black",
        "result": "Result",
        "time_control": "TimeControl",
        "termination": "Termination",
        "eco": "ECO",
        "utc_date": "UTCDate",
        "utc_time": "UTCTime",
    }
    bad = []
    for o, e in paired(name):
        for col, tag in tags.items():
            exp = o.headers.get(tag)
            got = e.columns.get(col)
            if exp is None or "\ufffd" in exp:
                continue
            if got is None and exp in ("?", "*", ""):
                continue
            if exp != got:
                bad.append(f"#{o.index} {col}: expected {exp!r} got {got!r}")
        for col, tag in (("white_elo", "WhiteElo"), ("black_elo", "BlackElo")):
            v = o.headers.get(tag)
            exp = int(v) if v is not None and v.isdigit() else None
            if exp != e.columns.get(col):
                bad.append(f"#{o.index} {col}: expected {exp!r} got {e.columns.get(col)!r}")
    assert not bad, f"{len(bad)} header mismatches\n" + "\n".join(bad[:15])


def test_keys_identity_classes(name):
    _check(name, ("keys", "facts", "facts_length"))


def test_halfmove_clocks(name):
    _check(name, ("halfmove_clock", "facts", "facts_length"))


def test_clocks(name):
    _check(name, ("clock",))


def test_clocks_initial_plies(name):
    """Plies 0 and 1: the side to move has made no move yet, so no %clk applies (None)."""
    _check(name, ("clock_initial",))


def test_uncompared_engine_events_are_only_draw_offers(name):
    """The oracle models the four repetition/move-count rules; the engine also writes draw-offer
    events (a recent draw offer lets a Lichess player claim, docs/rules.md 3.1), which are not
    compared, and the dead-position and flag-fall rules, which python-chess checks below and
    tests/test_unwinnable.py against its own reference search. Any other rule in the events
    would go unchecked: edge_cases has one offer event."""
    other = collections.Counter(r for _, e in paired(name) for r in e.other_rules)
    assert set(other) <= {"offer", "dead_position", "timeout_vs_unwinnable"}, other


def test_dead_position_events_are_dead_in_python_chess(name):
    """Every dead_position event of the file, replayed by python-chess to its ply: the position
    is insufficient material (python-chess), or its one legal move leads to insufficient material
    or to a stalemate, or the reference's complete search finds no mate for either side."""
    import io

    import chess.pgn

    from unwinnable_reference import reachable_mate

    res, eng = engine(name)
    with open(FILES[name], encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    stream = io.StringIO(text)
    checked = 0
    for index in range(len(eng)):
        game = chess.pgn.read_game(stream)
        dead = [ev for ev in res.events.to_pylist() if ev["game_index"] == index and ev["rule"] == "dead_position"]
        if not dead:
            continue
        (ev,) = dead  # the first dead position only
        assert eng[index].columns["dead_position_ply"] == ev["ply"]
        board = game.board()
        for move in list(game.mainline_moves())[: ev["ply"]]:
            board.push(move)
        assert not board.is_checkmate() and not board.is_stalemate()
        ok = board.is_insufficient_material()
        if not ok and board.legal_moves.count() == 1:
            after = board.copy(stack=False)
            after.push(next(iter(after.legal_moves)))
            ok = after.is_insufficient_material() or after.is_stalemate()
        if not ok:
            ok = all(reachable_mate(board, side, 50_000) is False for side in (chess.WHITE, chess.BLACK))
        assert ok, (index, ev["ply"], board.fen())
        checked += 1
    assert checked == sum(1 for e in eng if e.columns.get("dead_position_ply") is not None)


@pytest.mark.parametrize("column", ref.GAME_COLUMNS)
def test_game_column(name, column):
    _check(name, (column,))


@pytest.mark.parametrize("column", ref.EXTRA_GAME_COLUMNS)
def test_extra_game_column(name, column):
    _check(name, (column,))


def test_events(name):
    _check(name, ("events",))


def test_no_mismatch_at_all(name):
    """Summary: every kind of mismatch, all games (the compact diff of the first few)."""
    ms = mismatches(name)
    if ms:
        per = collections.Counter(m.what for m in ms)
        pytest.fail(
            f"{name}: {len({m.game for m in ms})} games differ ({dict(per)})\n"
            + ref.format_mismatches(oracle(name), ms),
            pytrace=False,
        )


@pytest.mark.slow
def test_oracle_shortcuts_exhaustive_lichess_small():
    """The oracle's shortcuts equal plain method calls at every ply of lichess_small."""
    ref.analyze_file(FILES["lichess_small"], exhaustive=True)
