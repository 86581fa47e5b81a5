"""Can a side still mate? The kernel (analyzer.kinds.chess._unwinnable) against the python-chess
reference (tests/unwinnable_reference.py) on curated dead positions and look-alikes, its
certificates replayed by python-chess, python-chess's insufficient material on real final
positions, and the tables' columns (dead_position_ply, timeout_unwinnable, the rules
dead_position and timeout_vs_unwinnable) on hand-built games, with plies from the rule text."""

from __future__ import annotations

import os
import sys

import chess
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import shared_path
from unwinnable_reference import helpmate, reachable_mate, truth


def _classify(boards: list[chess.Board], sides: list[bool], budget: int = 200_000):
    """The kernel's (verdict, proof, certificate as python-chess moves) per (board, side)."""
    from analyzer.kinds.chess import _unwinnable as unw
    from analyzer.kinds.chess.analyze import _start_arrays

    arrays = [_start_arrays(b) for b in boards]
    n = len(boards)
    bb = np.stack([a[0] for a in arrays])
    st = np.stack([a[2] for a in arrays])
    cts = np.stack([a[3] for a in arrays])
    verdict = np.empty(n, np.int8)
    proof = np.empty(n, np.int8)
    nodes = np.empty(n, np.int64)
    off = np.empty(n + 1, np.int64)
    moves = np.empty(64 * n + 4096, np.int32)
    side = np.array([0 if s == chess.WHITE else 1 for s in sides], np.int8)
    total = unw.classify_batch(
        bb, st, cts, np.arange(n, dtype=np.int64), side, budget, verdict, proof, nodes, off, moves
    )
    assert total <= len(moves)
    out = []
    for i, b in enumerate(boards):
        line = []
        for m in moves[off[i] : off[i + 1]].tolist():
            frm, to, promo = m & 63, (m >> 6) & 63, (m >> 12) & 7
            if (m >> 15) & 3 == 2 and not b.chess960:  # castling: king takes rook -> king's two-step
                to = (frm & 56) + (6 if to > frm else 2)
            line.append(chess.Move(frm, to, promo or None))
        out.append((unw.VERDICTS[verdict[i]], unw.PROOFS[proof[i]], line))
    return out


def _replays_to_mate(board: chess.Board, side: bool, line: list[chess.Move]) -> bool:
    b = board.copy(stack=False)
    for move in line:
        if move not in b.legal_moves:
            return False
        b.push(move)
    return b.is_checkmate() and b.turn != side


# (FEN, what it is, White's truth, Black's truth): every truth is recomputed by the reference
# search in the test; both unwinnable = a dead position.
CURATED = [
    ("4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1", "locked chain, kings only", "unwinnable", "unwinnable"),
    ("4k3/8/8/p1p1p1p1/P1P1P1P1/8/1K6/8 w - - 0 1", "locked chain, king elsewhere", "unwinnable", "unwinnable"),
    ("8/8/2k5/p1p1p1p1/P1P1P1P1/8/1K6/8 b - - 0 1", "locked chain, Black to move", "unwinnable", "unwinnable"),
    (
        "4k3/8/1p1p1p1p/pPpPpPpP/P1P1P1P1/3B4/8/4K3 w - - 0 1",
        "locked chain, a light bishop that can never reach a weakness",
        "unwinnable",
        "unwinnable",
    ),
    (
        "8/8/8/8/8/2kb4/r7/K7 w - - 0 1",
        "White's only move takes the rook (then K v K+B): dead before it",
        "unwinnable",
        "unwinnable",
    ),
    ("8/8/8/8/8/2k5/r7/K4b2 w - - 0 1", "look-alike: Kb1 is legal too, Black keeps the rook", "unwinnable", "winnable"),
    ("k7/6P1/1K6/8/8/8/8/8 w - - 0 1", "a lone king against a pawn that promotes", "winnable", "unwinnable"),
    ("k7/P7/1K6/8/8/8/8/5B2 w - - 0 1", "K+B+P v K", "winnable", "unwinnable"),
    ("7k/5Kpp/6PP/8/8/8/8/8 w - - 0 1", "look-alike: a chain with a break (hxg7 mates)", "winnable", None),
    (
        "7k/5Kpp/8/4B3/8/8/8/8 w - - 0 1",
        "look-alike: a bishop of one colour against pawns on both colours (Bxg7 mates)",
        "winnable",
        None,
    ),
    ("8/8/k7/p1p5/P1P2K2/8/8/8 w - - 0 1", "look-alike: a wall with a gap, the king reaches a pawn", "winnable", None),
    ("8/8/8/4k3/8/8/8/4KB2 w - - 0 1", "K+B v K", "unwinnable", "unwinnable"),
    ("8/3b4/8/4k3/8/8/8/4KB2 w - - 0 1", "K+B v K+B, bishops of one colour", "unwinnable", "unwinnable"),
    ("8/8/8/4k3/8/8/8/4KN2 w - - 0 1", "K+N v K", "unwinnable", "unwinnable"),
]


@pytest.mark.parametrize("fen,what,white,black", CURATED, ids=[c[1] for c in CURATED])
def test_curated_positions_against_the_reference(fen, what, white, black):
    board = chess.Board(fen)
    answers = _classify([board, board], [chess.WHITE, chess.BLACK])
    for side, want, (verdict, proof, line) in zip((chess.WHITE, chess.BLACK), (white, black), answers):
        if want is None:
            continue
        ref = truth(board, side, plies=4, cap=60_000)
        assert ref == want, (what, side, ref)  # the reference decides this one
        assert verdict == want, (what, side, verdict, proof)
        if verdict == "winnable":
            assert _replays_to_mate(board, side, line), (what, [m.uci() for m in line])
        else:
            assert proof in ("insufficient_material", "blocked", "search"), proof


def test_the_kernel_never_contradicts_a_found_helpmate():
    """Look-alikes whose truth only a long line shows: what the kernel says winnable replays to
    mate; what it says unwinnable, the reference's complete search agrees with (or cannot decide)."""
    fens = [
        "4k3/8/1p1p1p1p/pPpPpPpP/P1P1P1P1/8/8/2B1K3 w - - 0 1",  # a dark bishop can take Black's pawns
        "7k/6pp/6PP/5K2/8/8/8/8 w - - 0 1",
        "7k/5Bpp/6P1/8/8/8/8/6K1 w - - 0 1",
        "7k/7p/7P/8/8/8/8/K1B5 w - - 0 1",
        "7k/7p/7P/8/8/8/8/K2B4 w - - 0 1",
    ]
    boards = [chess.Board(f) for f in fens for _ in (0, 1)]
    sides = [s for _ in fens for s in (chess.WHITE, chess.BLACK)]
    for board, side, (verdict, _proof, line) in zip(boards, sides, _classify(boards, sides, 50_000)):
        if verdict == "winnable":
            assert _replays_to_mate(board, side, line), (board.fen(), side)
        elif verdict == "unwinnable":
            assert helpmate(board, side, 4) is None and reachable_mate(board, side, 20_000) is not True


def test_the_static_proofs():
    from analyzer.kinds.chess import _unwinnable as unw
    from analyzer.kinds.chess.analyze import _start_arrays

    def frozen(fen):
        bb, _, st, _ = _start_arrays(chess.Board(fen))
        out = np.zeros(4, np.int64)
        return bool(unw.frozen_analysis(bb, st, out)), int(out[0]), int(out[1])

    assert frozen("4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1") == (True, 1, 1)
    # a white knight in Black's camp can reach (and take) Black's pawns: the chain is not frozen
    assert frozen("4k3/8/3N4/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1")[0] is False
    # a capture of a pawn by a pawn is possible: not frozen
    assert frozen("4k3/8/8/p1p1p1p1/PP2P1P1/8/8/4K3 w - - 0 1")[0] is False
    # a pawn that can still push: not frozen
    assert frozen("4k3/8/8/p1p1p3/P1P1P1P1/8/8/4K3 w - - 0 1")[0] is False
    # an e.p. square: a capture may be legal now
    assert frozen("4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - a6 0 1")[0] is False


def test_certificates_replay_to_mate_on_real_timeouts(small_text):
    """Every certificate of lichess_small's losses on time replays in python-chess, from the final
    position, to the winner's mate; unwinnable ones carry a proof kind."""
    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess.position import to_board

    res = analyze_bytes(small_text, source="s", editions=("fide_2018", "lichess"), keep_facts=True)
    games = res.games.to_pylist()
    f = res.facts
    checked = 0
    for g in games:
        answer = g["timeout_winner_can_mate"]
        if answer is None:
            assert g["timeout_certificate"] is None
            continue
        assert g["termination"] == "Time forfeit" and g["result"] in ("1-0", "0-1")
        i = g["game_index"]
        board = to_board(f["final_bb"][i], f["final_st"][i], f["final_ct"][i])
        side = chess.WHITE if g["result"] == "1-0" else chess.BLACK
        if answer == "winnable":
            line = [chess.Move.from_uci(u) for u in g["timeout_certificate"].split()]
            assert _replays_to_mate(board, side, line), (i, g["timeout_certificate"])
            checked += 1
        elif answer == "unwinnable":
            assert g["timeout_certificate"].startswith("unwinnable:")
        else:
            assert g["timeout_certificate"] == "unknown:budget"
    assert checked > 500


# Final positions of lichess_sample games lost on time (game index, the winner) whose mate needs a
# long cooperative plan: a lone knight or bishop that needs the loser's own men as blockers in a
# corner, pawns that must get past blockers. The scan's budget left every one `unknown` before the
# search where progress is free (70 such positions in lichess_sample then, 14 after).
LONG_PLANS = [
    (5336, chess.BLACK, "8/5Nb1/8/7K/8/1k6/8/8 w - - 0 1", "lone bishop, the loser's knight as blocker"),
    (38352, chess.BLACK, "8/7k/7P/8/5K2/2n5/8/8 w - - 47 1", "lone knight against a pawn"),
    (9364, chess.WHITE, "8/8/p7/8/1p2N3/6K1/k7/8 b - - 1 1", "lone knight against two pawns"),
    (42300, chess.WHITE, "8/2k5/8/8/4Kp2/5B2/8/8 b - - 14 1", "lone bishop against a pawn"),
    (564, chess.BLACK, "8/2n2K1b/8/4N2k/2N5/8/8/8 w - - 26 1", "bishop and knight against two knights"),
    (10382, chess.BLACK, "8/8/2K3kp/n2P1p2/5P2/7P/8/8 w - - 1 1", "lone knight against pawns"),
    (2034, chess.WHITE, "8/pp6/2k3p1/4p3/4P3/1K6/8/8 b - - 9 1", "a blocked pawn, the king takes a way free"),
    (25288, chess.WHITE, "8/1k3pp1/p1p1p1p1/K7/P7/8/8/8 b - - 1 1", "a pawn past five blockers"),
]


@pytest.mark.parametrize("game,side,fen,what", LONG_PLANS, ids=[f"lichess_sample#{p[0]}" for p in LONG_PLANS])
def test_long_plans_are_found_within_the_scans_budget(game, side, fen, what):
    """At the scan's own budget each is winnable, and its certificate replays to mate."""
    from analyzer.kinds.chess.analyze import UNWINNABLE_BUDGET

    board = chess.Board(fen)
    [(verdict, proof, line)] = _classify([board], [side], budget=UNWINNABLE_BUDGET)
    assert verdict == "winnable", (what, verdict, proof)
    assert len(line) >= 8 and _replays_to_mate(board, side, line), (what, [m.uci() for m in line])


def test_progress_rules_count_castling_as_no_capture():
    """Castling is encoded king takes rook; the search where progress is free must not score it as
    a capture (progress for W, against it for L)."""
    from analyzer.kinds.chess import _unwinnable as unw
    from analyzer.kinds.chess._tables import MF_CASTLE, MF_NORMAL
    from analyzer.kinds.chess.analyze import _start_arrays

    board = chess.Board("r3k2r/p6p/8/8/8/8/P6P/R3K2R w KQkq - 0 1")
    _bb, mb, _st, _ct = _start_arrays(board)
    castle = int(unw._enc(chess.E1, chess.H1, 0, MF_CASTLE))
    quiet_rook = int(unw._enc(chess.H1, chess.G1, 0, MF_NORMAL))
    for stm_is_w in (True, False):
        w = 0 if stm_is_w else 1  # the intended winner: the side to move (White) or the other
        got = unw._variation(mb, castle, w, 0, chess.H8, chess.G8, chess.H6, False)
        assert got == unw._variation(mb, quiet_rook, w, 0, chess.H8, chess.G8, chess.H6, False) == unw.VAR_NORMAL


def test_insufficient_material_is_unwinnable_for_both_on_real_final_positions():
    """Every final position of lichess_sample that python-chess calls insufficient material is
    unwinnable for both sides (the kernel's proof: insufficient_material)."""
    path = shared_path("lichess_sample.pgn.zst")
    if path is None:
        pytest.skip("lichess_sample.pgn.zst: needs the shared data samples")
    import zstandard

    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess.position import to_board

    with open(path, "rb") as fh:
        text = zstandard.ZstdDecompressor().decompressobj().decompress(fh.read())
    res = analyze_bytes(text, source="l", editions=("fide_2018",), keep_facts=True)
    f = res.facts
    bb = f["final_bb"]
    # a cheap pre-filter (python-chess decides): no pawn, rook or queen on the board
    maybe = np.flatnonzero((f["final_st"][:, 0] >= 0) & ((bb[:, 0] | bb[:, 3] | bb[:, 4]) == 0))
    boards = []
    for i in maybe.tolist():
        b = to_board(bb[i], f["final_st"][i], f["final_ct"][i])
        if b.is_insufficient_material():
            boards.append(b)
    assert len(boards) > 100
    answers = _classify(boards + boards, [chess.WHITE] * len(boards) + [chess.BLACK] * len(boards))
    assert all(a[:2] == ("unwinnable", "insufficient_material") for a in answers)


# The blocked dead positions the scan finds in the shared samples (game index, ply, FEN at that ply).
REAL_DEAD = [
    ("lichess_sample", 37969, 98, "8/8/1p2k3/1Pp4p/2Pp1p1P/3P1P2/3K4/8 w - - 0 50"),
    ("lichess_sample", 46581, 114, "8/8/4k3/2p2p1p/1pP2P1P/pP2K3/P7/8 w - - 1 58"),
    ("otb_sample", 8484, 119, "8/8/1p1k4/pP1p1p1p/P2P1P1P/3K4/8/8 b - - 1 60"),
    ("otb_sample", 8909, 94, "8/3k1p2/4pPp1/3pP1Pp/1p1P3P/1P4K1/8/8 w - - 1 48"),
    ("otb_sample", 9765, 92, "8/8/p5k1/Pp1p2p1/1P1P2Pp/7P/8/5K2 w - - 0 47"),
    ("otb_sample", 9786, 93, "8/4k3/8/3p2p1/1p1P1pPp/1P3P1P/8/4K3 b - - 0 47"),
]


@pytest.mark.parametrize("fen", [r[3] for r in REAL_DEAD], ids=[f"{r[0]}#{r[1]}" for r in REAL_DEAD])
def test_real_blocked_dead_positions_have_no_mate_by_the_reference(fen):
    board = chess.Board(fen)
    assert [reachable_mate(board, side, 100_000) for side in (chess.WHITE, chess.BLACK)] == [False, False]
    assert [a[:2] for a in _classify([board, board], [chess.WHITE, chess.BLACK])] == [("unwinnable", "blocked")] * 2


def test_the_scan_finds_the_real_blocked_dead_positions():
    import zstandard

    from analyzer.api import analyze_bytes

    for source in ("lichess_sample", "otb_sample"):
        path = shared_path(f"{source}.pgn.zst")
        if path is None:
            pytest.skip(f"{source}.pgn.zst: needs the shared data samples")
        with open(path, "rb") as fh:
            text = zstandard.ZstdDecompressor().decompressobj().decompress(fh.read())
        games = analyze_bytes(text, source=source, editions=("fide_2018",)).games
        proofs = games.column("dead_position_proof").to_pylist()
        plies = games.column("dead_position_ply").to_pylist()
        found = sorted((i, plies[i]) for i, p in enumerate(proofs) if p and "blocked" in p)
        assert found == [(r[1], r[2]) for r in REAL_DEAD if r[0] == source]


# ---------------------------------------------------------------------------------------------
# The tables on hand-built games


def _pgn(moves: str, fen: str, result: str, termination: str = "Normal") -> bytes:
    return (
        f'[Event "t"]\n[Site "https://lichess.org/abcdefgh"]\n[White "a"]\n[Black "b"]\n'
        f'[Result "{result}"]\n[UTCDate "2023.05.05"]\n[TimeControl "180+0"]\n'
        f'[Termination "{termination}"]\n[FEN "{fen}"]\n[SetUp "1"]\n\n{moves} {result}\n\n'
    ).encode()


def _tables(pgn: bytes):
    from analyzer.api import analyze_bytes

    res = analyze_bytes(pgn, source="t", editions=("fide_2018", "lichess"))
    game = res.games.to_pylist()[0]
    verdicts = {v["edition"]: v for v in res.verdicts.to_pylist()}
    events = res.events.to_pylist()
    return game, verdicts, events


def test_a_dead_position_played_on_and_lost_on_time():
    # 1. g4 rams the last pawn pair: from ply 1 no king can reach a pawn (every square next to an
    # enemy pawn it could take is across the chain or covered by a pawn): dead (5.2.2), both sides
    # unwinnable, by the blocked proof. The game went on; Black lost on time at ply 6.
    fen = "4k3/8/8/p1p1p1p1/P1P1P3/6P1/8/4K3 w - - 0 1"
    game, v, events = _tables(_pgn("1. g4 Kd7 2. Kd2 Kc7 3. Kc3 Kb6", fen, "1-0", "Time forfeit"))
    assert game["dead_position_ply"] == 1
    assert game["dead_position_proof"] == "unwinnable:blocked"
    assert game["timeout_winner_can_mate"] == "unwinnable"
    assert game["timeout_certificate"] == "unwinnable:blocked"
    fide, lichess = v["fide_2018"], v["lichess"]
    assert (fide["dead_position_ply"], fide["end_ply"], fide["end_rule"]) == (1, 1, "dead_position")
    assert fide["end_result"] == "1/2-1/2" and fide["result_changed"] is True
    assert fide["timeout_unwinnable"] is True
    # Lichess: no dead-position rule; a loss on time is a draw only on insufficient material
    assert lichess["dead_position_ply"] is None and lichess["end_ply"] is None
    assert lichess["timeout_unwinnable"] is False and lichess["result_changed"] is False
    fe = [
        (e["ply"], e["rule"], e["kind"], e["side"], e["outcome"], e["certificate"])
        for e in events
        if e["edition"] == "fide_2018"
    ]
    assert (1, "dead_position", "automatic", "black", "automatic", "unwinnable:blocked") in fe
    assert (6, "timeout_vs_unwinnable", "automatic", "black", "automatic", "unwinnable:blocked") in fe
    assert not [
        e for e in events if e["edition"] == "lichess" and e["rule"] in ("dead_position", "timeout_vs_unwinnable")
    ]


def test_a_loss_on_time_against_a_bare_king():
    # White has only its king when Black's flag falls (ply 3): both the Laws (6.9) and Lichess's
    # test call it a draw; the position is not dead (Black could still mate).
    fen = "8/8/8/4k3/q7/8/8/4K3 w - - 0 1"
    game, v, events = _tables(_pgn("1. Kf2 Qd4+ 2. Kg2", fen, "1-0", "Time forfeit"))
    assert game["dead_position_ply"] is None
    assert (game["timeout_winner_can_mate"], game["timeout_certificate"]) == (
        "unwinnable",
        "unwinnable:insufficient_material",
    )
    for ed in ("fide_2018", "lichess"):
        r = v[ed]
        assert r["timeout_unwinnable"] is True
        assert (r["end_ply"], r["end_rule"], r["result_changed"]) == (3, "timeout_vs_unwinnable", True)
        evs = [e for e in events if e["edition"] == ed and e["rule"] == "timeout_vs_unwinnable"]
        assert [(e["ply"], e["side"], e["certificate"]) for e in evs] == [
            (3, "black", "unwinnable:insufficient_material")
        ]


def test_a_loss_on_time_against_a_winner_who_can_mate():
    fen = "4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1"
    game, v, events = _tables(_pgn("1. Qg5 Kd7", fen, "1-0", "Time forfeit"))
    assert game["timeout_winner_can_mate"] == "winnable"
    board = chess.Board(fen)
    board.push_san("Qg5")
    board.push_san("Kd7")
    line = [chess.Move.from_uci(u) for u in game["timeout_certificate"].split()]
    assert _replays_to_mate(board, chess.WHITE, line)
    for ed in ("fide_2018", "lichess"):
        assert v[ed]["timeout_unwinnable"] is False and v[ed]["end_ply"] is None
    assert not [e for e in events if e["rule"] == "timeout_vs_unwinnable"]


def test_a_game_not_lost_on_time_has_no_timeout_answer():
    fen = "4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1"
    game, v, _ = _tables(_pgn("1. Qg5 Kd7", fen, "1-0", "Normal"))
    assert game["timeout_winner_can_mate"] is None and game["timeout_certificate"] is None
    assert v["fide_2018"]["timeout_unwinnable"] is None


def test_custom_editions_switch_the_rules_off():
    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess.editions import custom_edition

    fen = "4k3/8/8/p1p1p1p1/P1P1P3/6P1/8/4K3 w - - 0 1"
    ed = custom_edition(id="no_dead", dead_position_is_automatic=False, timeout_rule=0)
    res = analyze_bytes(_pgn("1. g4 Kd7 2. Kd2", fen, "1-0", "Time forfeit"), source="t", editions=(ed,))
    row = res.verdicts.to_pylist()[0]
    assert row["dead_position_ply"] is None and row["end_ply"] is None and row["timeout_unwinnable"] is None
    assert res.games.to_pylist()[0]["dead_position_ply"] == 1  # the fact stays


def test_dead_position_when_a_capture_leaves_insufficient_material():
    # 1...Kxd2 leaves K v K+N: python-chess's insufficient material, a dead position at ply 1.
    # FIDE ends the game there (dead_position), Lichess by its own insufficient-material rule.
    fen = "8/8/8/8/8/4k1K1/3R4/6n1 b - - 0 1"
    game, v, events = _tables(_pgn("1... Kxd2 2. Kf4 Nf3", fen, "1/2-1/2"))
    assert (game["dead_position_ply"], game["dead_position_proof"]) == (1, "unwinnable:insufficient_material")
    assert (v["fide_2018"]["end_ply"], v["fide_2018"]["end_rule"]) == (1, "dead_position")
    assert (v["lichess"]["end_ply"], v["lichess"]["end_rule"]) == (1, "insufficient_material")
    assert v["fide_2018"]["draw_reason"] == "insufficient_material"
    assert [(e["ply"], e["certificate"]) for e in events if e["rule"] == "dead_position"] == [
        (1, "unwinnable:insufficient_material")
    ]


# ---------------------------------------------------------------------------------------------
# `analyzer show` and the report


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    from report_checks import cli

    d = tmp_path_factory.mktemp("unwinnable")
    games = [
        _pgn("1. g4 Kd7 2. Kd2 Kc7 3. Kc3 Kb6", "4k3/8/8/p1p1p1p1/P1P1P3/6P1/8/4K3 w - - 0 1", "1-0", "Time forfeit"),
        _pgn("1. Qg5 Kd7", "4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1", "1-0", "Time forfeit"),
    ]
    games[1] = games[1].replace(b"abcdefgh", b"bcdefghi")
    (d / "mine.pgn").write_bytes(b"".join(games))
    out = d / "out"
    proc, _ = cli("scan", str(d / "mine.pgn"), "--out", str(out), "--edition", "fide_2018,lichess")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def test_show_prints_the_proof_or_the_certificate(out_dir, tmp_path):
    from report_checks import cli

    proc, _ = cli("show", str(out_dir), "mine#0")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Dead position from ply 1 (after 1. g4): no series of legal moves leads to mate (unwinnable:blocked)" in text
    assert "the game went on for 5 more plies" in text
    assert "Lost on time: White, the winner, could not mate by any series of legal moves (unwinnable:blocked)" in text
    page = tmp_path / "g.html"
    proc, _ = cli("show", str(out_dir), "mine#1", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "Lost on time: White, the winner, could still mate (FIDE 6.9: a win), e.g. by 2." in proc.stdout
    assert "(python-chess replays it to mate)" in proc.stdout
    assert "Dead position and flag fall" in page.read_text(encoding="utf-8")


def test_the_report_counts_wins_on_time_and_dead_positions_by_time_control(out_dir):
    import polars as pl

    from analyzer.report import build_tables

    t = build_tables(str(out_dir))["unwinnable_by_time_control"]
    rows = {
        (r["edition"], r["time_control_class"]): r
        for r in t.filter(pl.col("platform") == "lichess").iter_rows(named=True)
    }
    fide, lich = rows[("fide_2018", "all")], rows[("lichess", "all")]
    assert (fide["games"], fide["lost_on_time"], fide["timeout_unwinnable"], fide["timeout_unknown"]) == (2, 2, 1, 0)
    assert (lich["lost_on_time"], lich["timeout_unwinnable"]) == (2, 0)
    assert (fide["dead_position"], fide["played_on_after_dead"]) == (1, 1)
    assert fide["timeout_unwinnable_of_lost_on_time_rate"] == 0.5
    assert rows[("fide_2018", "blitz")]["lost_on_time"] == 2  # 180+0: blitz


def test_a_forced_capture_of_the_last_mating_material_is_a_dead_position():
    # White's only legal move takes the rook (g1: f1, h1 taken by the knight, h2 by the rook):
    # K v K+N follows, so the position before it is already dead (as in lichess_sample's game
    # 8149, ply 136). White: a bare king (insufficient_material); Black: the complete search.
    fen = "8/8/8/8/6k1/6n1/5r2/6K1 w - - 0 1"
    game, v, _events = _tables(_pgn("1. Kxf2 Kf4 2. Ke2", fen, "1/2-1/2"))
    assert (game["dead_position_ply"], game["dead_position_proof"]) == (0, "unwinnable:insufficient_material+search")
    assert (v["fide_2018"]["end_ply"], v["fide_2018"]["end_rule"]) == (0, "dead_position")
    # Lichess's own rule waits for the insufficient material itself
    assert (v["lichess"]["end_ply"], v["lichess"]["end_rule"]) == (1, "insufficient_material")
