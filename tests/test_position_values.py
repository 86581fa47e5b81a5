"""What a position was worth when a rule fired (issue 37): [%eval] per position and at events,
move limits by material (fide_1988, TOML limits), the counterfactual editions, and Syzygy values
(tb_wdl, tb_dtz, win_in_time) checked against python-chess probing positions it builds itself
from the PGN."""

from __future__ import annotations

import io
import math
import os
import random
import shutil
import subprocess
import sys

import chess
import chess.pgn
import chess.syzygy
import numpy as np
import polars as pl
import pytest

from conftest import FIXTURES, analyze, need, shared_path

TB_FIXTURE = os.path.join(FIXTURES, "syzygy")
KBBKN_GAMES = os.path.join(FIXTURES, "kbbkn_games.pgn")


def _tables_dir() -> str:
    """The shared tables when they are here (KBBvKN included), else the repository's subset."""
    return shared_path("syzygy") or TB_FIXTURE


def _games(text: bytes) -> list[chess.pgn.Game]:
    pgn = io.StringIO(text.decode("utf-8", "replace"))
    out = []
    while (g := chess.pgn.read_game(pgn)) is not None:
        out.append(g)
    return out


def _expected_eval(node) -> tuple[int | None, int | None]:
    """(centipawns, mate) from White's view as python-chess reads the node's comment."""
    e = node.eval()
    if e is None:
        return None, None
    w = e.white()
    if w.is_mate():
        return None, w.mate()
    return max(-30000, min(30000, w.score())), None


# ---------------------------------------------------------------------------------------------
# [%eval]


LAYOUTS = (
    b"1. e4 { [%eval 0.17] [%clk 0:03:00] } 1... e5 { [%eval 0.2] [%clk 0:03:00] } *",
    b"1. e4 { [%eval #-3] } 1... e5 { [%eval #4] } 2. Nf3 { [%eval #0] } *",
    b"1. e4 { [%eval 0.17,23] [%clk 0:01:00] } 1... e5 {[%clk 0:00:10] [%eval 1.5]} *",
    b"1. e4 { [%eval 0.123] } 1... e5 { [%eval 5.] } 2. Nf3 { [%eval .5] } 2... Nc6 { [%eval -0.00] } *",
    b"1. e4 { [%eval x] } { [%eval 0.3] } 1... e5 { [%eval 0.4] } { [%eval 0.9] } *",
    b"1. e4 { [%eval  0.3] } 1... e5 { [%eval\t-1.25] } 2. Nf3 {[%eval +2]} *",
    b"{ [%eval 0.2] } 1. e4 ( 1. d4 { [%eval 9.9] } ) 1... e5 { note [%eval -7.77] more } *",
    b"1. e4 { [%eval 12345678901.5] } 1... e5 { [%eval 9999.99] } 2. Nf3 { [%eval -99999] } *",
    b"1. e4 { [%eval #+2] } 1... e5 { [%eval #-0] } 2. Nf3 { [%eval 1.5] [%eval 2.5] } *",
)


def test_eval_fact_reads_every_layout_as_python_chess():
    """The per-position eval fact equals python-chess's GameNode.eval() on odd layouts: mates,
    depth suffixes, %eval after %clk, invalid values (three decimals), two comments (the first
    valid one counts), a comment before the first move, evaluations inside a variation (not the
    main line's), values beyond +-300 pawns (saturated)."""
    text = b"".join(b'[Event "e"]\n[Result "*"]\n\n' + m + b"\n\n" for m in LAYOUTS)
    res = analyze(text, keep_facts=True)
    facts = res.facts
    off = facts["game_offsets"]
    from analyzer.kinds.chess._replay import EVAL_CP_MAX, EVAL_MATE_CODE, EVAL_NONE

    for g, game in enumerate(_games(text)):
        for ply, node in enumerate([game, *game.mainline()]):
            code = int(facts["eval"][off[g] + ply])
            cp, mate = _expected_eval(node)
            if cp is None and mate is None:
                assert code == EVAL_NONE, (g, ply, node.comment, code)
            elif mate is not None:
                assert abs(code) > EVAL_CP_MAX and np.sign(code) * (EVAL_MATE_CODE - abs(code)) == mate, (g, ply, code)
            else:
                assert code == cp, (g, ply, node.comment, code, cp)


def test_eval_columns_against_python_chess_on_lichess_sample():
    """eval_cp, eval_mate and win_chance of every event of the lichess_sample games that carry
    evaluations, and every position's eval fact, against python-chess's node.eval()."""
    path = need("lichess_sample.pgn.zst")
    import zstandard

    with open(path, "rb") as fh:
        whole = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
    games = [g for g in whole.split(b"\n\n[Event ") if b"%eval" in g]
    assert len(games) > 10_000
    text = b"[Event " + b"\n\n[Event ".join(g.removeprefix(b"[Event ") for g in games[:5000]) + b"\n\n"
    res = analyze(text, editions=("fide_2018", "lichess"), keep_facts=True)
    facts = res.facts
    off = facts["game_offsets"]
    parsed = _games(text)
    expected: dict = {}
    checked = 0
    for g, game in enumerate(parsed):
        for ply, node in enumerate([game, *game.mainline()]):
            cp, mate = _expected_eval(node)
            expected[(g, ply)] = (cp, mate, node.turn())
            code = int(facts["eval"][off[g] + ply])
            if cp is not None:
                assert code == cp
                checked += 1
    assert checked > 100_000
    ev = pl.from_arrow(res.events)
    assert ev.height > 500
    with_eval = 0
    for row in ev.iter_rows(named=True):
        cp, mate, white = expected[(row["game_index"], row["ply"])]
        assert row["eval_cp"] == cp and row["eval_mate"] == mate, row
        if cp is None and mate is None:
            assert row["win_chance"] is None
            continue
        with_eval += 1
        pov = (cp if cp is not None else (1000 if mate > 0 else -1000)) * (1 if white else -1)
        pov = max(-1000, min(1000, pov))
        want = 50 + 50 * (2 / (1 + math.exp(-0.00368208 * pov)) - 1)
        assert row["win_chance"] == pytest.approx(want, abs=1e-4)
    assert with_eval > 300


def test_win_chance_is_lichess_formula():
    from analyzer.kinds.chess.valuation import win_chance

    codes = np.array([0, 100, -250, 5000, -32768, 32767 - 3, -(32767 - 3), 32767], np.int16)
    white = np.array([True, True, False, True, True, True, False, True])
    got = win_chance(codes, white)
    assert got[0] == pytest.approx(50)
    assert got[1] == pytest.approx(50 + 50 * (2 / (1 + math.exp(-0.368208)) - 1), abs=1e-4)
    assert got[2] == pytest.approx(50 + 50 * (2 / (1 + math.exp(-0.00368208 * 250)) - 1), abs=1e-4)  # black's view
    assert got[3] == pytest.approx(50 + 50 * (2 / (1 + math.exp(-3.68208)) - 1), abs=1e-4)  # clamped to 1000
    assert math.isnan(got[4])
    assert got[5] == pytest.approx(got[3]) and got[6] == pytest.approx(got[3])  # mate for the side to move
    assert got[7] == 0  # "#0": the side to move is mated


# ---------------------------------------------------------------------------------------------
# Material and boards


def test_boards_and_material_against_python_chess(small_text, edge_text):
    """boards_at (the board at any ply, replaying only the games asked for) equals python-chess's
    board at random plies and the replay's final boards; final_material is the Syzygy name of
    python-chess's final position."""
    from analyzer.kinds.chess.position import to_board

    text = small_text[: small_text.index(b"\n\n[Event ", 1_500_000) + 2] + edge_text
    res = analyze(text, keep_facts=True)
    facts = res.facts
    games = _games(text)
    rng = random.Random(5)
    req_g, req_p, want = [], [], []
    for g, game in enumerate(games):
        if not facts["final_st"][g, 0] >= 0:
            continue
        moves = list(game.mainline_moves())
        plies = sorted(rng.sample(range(len(moves) + 1), min(3, len(moves) + 1)))
        board = game.board()
        for ply, move in enumerate([*moves, None]):
            if ply in plies:
                req_g.append(g)
                req_p.append(ply)
                want.append(board.copy(stack=False))
            if move is not None:
                board.push(move)
        final = to_board(facts["final_bb"][g], facts["final_st"][g], facts["final_ct"][g])
        assert final.board_fen() == board.board_fen() and final.turn == board.turn
    src = facts["board_source"]
    bb, st = src.boards(np.array(req_g), np.array(req_p))
    for j, board in enumerate(want):
        got = to_board(bb[j], st[j], src.castling_table(req_g[j]))
        assert got.board_fen() == board.board_fen(), (req_g[j], req_p[j])
        assert got.turn == board.turn and got.halfmove_clock == board.halfmove_clock
        assert got.has_legal_en_passant() == board.has_legal_en_passant()
    names = pl.from_arrow(res.games)["final_material"].to_list()
    for g, game in enumerate(games):
        board = game.end().board()
        if names[g] is None:
            assert len(board.piece_map()) > 7 or not facts["final_st"][g, 0] >= 0
            continue
        sides = [
            "K" + "".join(chess.piece_symbol(t).upper() * len(board.pieces(t, c)) for t in (5, 4, 3, 2, 1))
            for c in (chess.WHITE, chess.BLACK)
        ]
        assert names[g] == chess.syzygy.normalize_tablename("v".join(sides)), g


# ---------------------------------------------------------------------------------------------
# Move limits by material: fide_1988


def _shuffle_game(fen: str, plies: int, seed: int) -> str:
    """A game from `fen` of `plies` random moves that neither capture nor move a pawn nor end the
    game, each leaving the opponent such a move (python-chess), as PGN with [FEN]."""
    rng = random.Random(seed)
    for _attempt in range(50):
        board = chess.Board(fen)
        start = board.copy()
        moves = []
        ok = True
        for _ in range(plies):
            cands = [m for m in board.legal_moves if not board.is_zeroing(m)]
            rng.shuffle(cands)
            chosen = None
            for m in cands:
                board.push(m)
                over = board.is_checkmate() or board.is_stalemate()
                fine = not over and any(not board.is_zeroing(r) for r in board.legal_moves)
                board.pop()
                if fine:
                    chosen = m
                    break
            if chosen is None:
                ok = False
                break
            moves.append(chosen)
            board.push(chosen)
        if ok:
            game = chess.pgn.Game()
            game.headers["Result"] = "*"
            game.setup(start)
            node = game
            for m in moves:
                node = node.add_variation(m)
            return str(game) + "\n\n"
    raise AssertionError(f"no shuffle game from {fen}")


# The six endings of the 1988 clause (strong side White) and look-alikes that keep 50 moves.
ENDINGS_1988 = {
    "KBBvKN": "8/8/3k4/8/2n5/8/2B1B3/4K3 w - - 0 1",
    "KBBvKQ": "8/8/3k4/8/2q5/8/2B1B3/4K3 w - - 0 1",
    "KNNvKP": "8/p7/3k4/8/8/8/2N1N3/4K3 w - - 0 1",
    "KNNvKQ": "8/8/3k4/8/1q6/8/2N1N3/4K3 w - - 0 1",
    "KQPvKQ": "7k/P7/8/8/8/2q5/8/3QK3 w - - 0 1",  # the pawn on its 7th rank (KQP7vKQ)
    "KRBvKR": "8/8/3k4/1r6/8/8/2B5/R3K3 w - - 0 1",
}
LOOK_ALIKES = {
    "KBBvKB": "8/8/3k4/8/2b5/8/2B1B3/4K3 w - - 0 1",
    "KQPvKQ": "7k/8/P7/8/8/2q5/8/3QK3 w - - 0 1",  # the pawn on its 6th: 50 moves
    "KRNvKR": "8/8/3k4/1r6/8/8/2N5/R3K3 w - - 0 1",
}


def test_fide_1988_gives_75_moves_to_its_six_endings_of_either_colour():
    """Each ending of the 1988 clause, with the strong side White and (mirrored) Black: the
    50-move claim (by a written move at clock 149, on the board at 150) under fide_1988, at 99
    under fide_2018; look-alikes (KBB v KB, KQP v KQ with the pawn on its 6th, KRN v KR) keep
    50 moves. Expected plies from the rule text: the first written-move chance is at clock
    2 x limit - 1."""
    cases = []
    for name, fen in ENDINGS_1988.items():
        cases += [(name, fen, 149), (name, chess.Board(fen).mirror().fen(), 149)]
    for name, fen in LOOK_ALIKES.items():
        cases += [(name, fen, 99), (name, chess.Board(fen).mirror().fen(), 99)]
    text = b"".join(_shuffle_game(fen, 160, k).encode() for k, (_, fen, _) in enumerate(cases))
    res = analyze(text, editions=("fide_2018", "fide_1988"))
    v = pl.from_arrow(res.verdicts)
    ev = pl.from_arrow(res.events)
    for k, (name, _fen, want) in enumerate(cases):
        row88 = v.filter((pl.col("edition") == "fide_1988") & (pl.col("game_index") == k)).row(0, named=True)
        row18 = v.filter((pl.col("edition") == "fide_2018") & (pl.col("game_index") == k)).row(0, named=True)
        assert row88["first_fifty_claim_ply"] == want, (name, k, row88["first_fifty_claim_ply"])
        assert row88["first_fifty_ply"] == want + 1
        assert row18["first_fifty_claim_ply"] == 99 and row18["first_seventyfive_ply"] == 150
        assert row88["first_seventyfive_ply"] is None  # no automatic draws in 1988
        fifty = ev.filter(
            (pl.col("edition") == "fide_1988") & (pl.col("game_index") == k) & (pl.col("rule") == "fifty")
        )
        assert set(fifty["limit_plies"].to_list()) == {want + 1}
        assert set(fifty["material"].to_list()) == {name}


def test_custom_limits_from_toml(tmp_path):
    """[NAME.limits] in a TOML file: a limit by material (moves), either colour; a P7 pattern;
    automatic_limits for the 75-move rule."""
    from analyzer import kinds

    path = tmp_path / "eds.toml"
    path.write_text(
        '[short]\nbase = "fide_2018"\n[short.limits]\nKBBvKN = 30\n[short.automatic_limits]\nKBBvKN = 40\n',
        encoding="utf-8",
    )
    (ed,) = kinds.load_toml(str(path))
    assert ed.limits == (("KBBvKN", 30),) and ed.automatic_limits == (("KBBvKN", 40),)
    text = b"".join(
        _shuffle_game(fen, 90, 1).encode()
        for fen in (ENDINGS_1988["KBBvKN"], chess.Board(ENDINGS_1988["KBBvKN"]).mirror().fen())
    )
    v = pl.from_arrow(analyze(text, editions=(ed,)).verdicts)
    assert v["first_fifty_claim_ply"].to_list() == [59, 59]
    assert v["first_seventyfive_ply"].to_list() == [80, 80]
    assert v["end_rule"].to_list() == ["seventyfive", "seventyfive"]
    with pytest.raises(ValueError, match="material pattern"):
        kinds.custom_edition(id="bad", limits="KBBxKN:75")
    assert kinds.custom_edition(id="cli", limits="KRBvKR:75;KQP7vKQ:80").limits == (("KQP7vKQ", 80), ("KRBvKR", 75))


def test_fingerprints_of_older_editions_are_unchanged():
    """The new edition fields are left out of the fingerprint at their defaults (so a dataset
    written before them still matches), and a fingerprint read back makes the same edition."""
    from analyzer.kinds.chess.editions import BUILTIN, ChessEdition

    for ed in ("fide_2018", "fide_2014", "fide_2009", "fide_1997", "lichess"):
        fp = BUILTIN[ed].fingerprint()
        assert not {"limits", "automatic_limits", "stalemate_wins", "counterfactual"} & set(fp)
    for ed in BUILTIN.values():
        assert ChessEdition(**ed.fingerprint()) == ed


# ---------------------------------------------------------------------------------------------
# Counterfactual editions


STALEMATE_GAME = b"""[Event "stalemate"]
[Result "1/2-1/2"]
[FEN "7k/8/6K1/8/8/8/8/5Q2 w - - 0 1"]
[SetUp "1"]

1. Qf7 1/2-1/2

[Event "stalemate by black"]
[Result "1/2-1/2"]
[FEN "5q2/8/8/8/8/6k1/8/7K b - - 0 1"]
[SetUp "1"]

1... Qf2 1/2-1/2

"""


def test_counterfactual_editions(edge_text):
    """no_fifty: no 50- or 75-move event at all; stalemate_win: a stalemate ends the game as a
    win for the side that gave it (end_rule stalemate, end_result, result_changed); both marked
    counterfactual; on games without stalemate, stalemate_win's verdicts are fide_2018's."""
    res = analyze(edge_text + STALEMATE_GAME, editions=("fide_2018", "no_fifty", "stalemate_win"))
    v = pl.from_arrow(res.verdicts)
    ev = pl.from_arrow(res.events)
    assert ev.filter((pl.col("edition") == "no_fifty") & pl.col("rule").is_in(["fifty", "seventyfive"])).height == 0
    assert ev.filter((pl.col("edition") == "fide_2018") & (pl.col("rule") == "fifty")).height > 0
    assert v.group_by("edition").agg(pl.col("counterfactual").all())["counterfactual"].sort().to_list() == [
        False,
        True,
        True,
    ]
    n = v["game_index"].max()
    sw = v.filter(pl.col("edition") == "stalemate_win").sort("game_index")
    assert sw.filter(pl.col("game_index") == n - 1).select("end_ply", "end_rule", "end_result", "result_changed").row(
        0
    ) == (1, "stalemate", "1-0", True)
    assert sw.filter(pl.col("game_index") == n).select("end_rule", "end_result", "draw_reason").row(0) == (
        "stalemate",
        "0-1",
        "stalemate",
    )
    f18 = v.filter(pl.col("edition") == "fide_2018").sort("game_index")
    cols = [c for c in v.columns if c not in ("edition", "counterfactual")]
    assert (
        sw.filter(pl.col("game_index") < n - 1)
        .select(cols)
        .equals(f18.filter(pl.col("game_index") < n - 1).select(cols))
    )


# ---------------------------------------------------------------------------------------------
# Tablebases


def _independent_values(text: bytes, tb_dir: str, positions: dict) -> dict:
    """(game, ply) -> (wdl, dtz) by python-chess: each game replayed from its PGN and probed."""
    out = {}
    with chess.syzygy.open_tablebase(tb_dir) as tb:
        for g, game in enumerate(_games(text)):
            want = positions.get(g)
            if not want:
                continue
            board = game.board()
            for ply, move in enumerate([*game.mainline_moves(), None]):
                if ply in want:
                    try:
                        wdl = tb.probe_wdl(board)
                    except (KeyError, chess.syzygy.MissingTableError):
                        wdl = None
                    try:
                        dtz = tb.probe_dtz(board) if wdl is not None else None
                    except chess.syzygy.MissingTableError:
                        dtz = None
                    out[(g, ply)] = (wdl, dtz)
                if move is not None:
                    board.push(move)
    return out


def test_tb_values_against_python_chess(edge_text):
    """tb_wdl and tb_dtz of every 50/75-move event and final_tb_* of every final position equal
    python-chess probing positions it builds from the PGN; win_in_time follows its rule
    (halfmove_clock + |tb_dtz| <= limit_plies)."""
    tb_dir = _tables_dir()
    with open(KBBKN_GAMES, "rb") as fh:
        text = edge_text + fh.read() + STALEMATE_GAME + STALEMATE_GAME
    res = analyze(text, editions=("fide_2018", "fide_1988", "lichess"), syzygy=[tb_dir])
    ev = pl.from_arrow(res.events).filter(pl.col("rule").is_in(["fifty", "seventyfive"]))
    g = pl.from_arrow(res.games)
    positions: dict = {}
    for row in ev.iter_rows(named=True):
        positions.setdefault(row["game_index"], set()).add(row["ply"])
    for row in g.iter_rows(named=True):
        if row["plies"] is not None and row["plies"] >= 0:
            positions.setdefault(row["game_index"], set()).add(row["plies"])
    maxp = max(len(n.split(".")[0]) - 1 for n in os.listdir(tb_dir) if n.endswith(".rtbw"))
    truth = _independent_values(text, tb_dir, positions)
    games_by_index = dict(enumerate(_games(text)))
    event_positions = {(r["game_index"], r["ply"]) for r in ev.iter_rows(named=True)}
    probed = 0
    for row in ev.iter_rows(named=True):
        wdl, dtz = truth[(row["game_index"], row["ply"])]
        pieces = sum(ch.isalpha() and ch != "v" for ch in row["material"])
        if pieces > maxp:
            assert row["tb_wdl"] is None
            continue
        assert row["tb_wdl"] == wdl and row["tb_dtz"] == dtz, row
        if wdl is not None:
            probed += 1
            if wdl == 0:
                assert row["win_in_time"] is None
            else:
                assert row["win_in_time"] == (row["halfmove_clock"] + abs(dtz) <= row["limit_plies"])
    assert probed > 20
    for row in g.iter_rows(named=True):
        wdl, dtz = truth.get((row["game_index"], row["plies"]), (None, None))
        board_pieces = sum(ch.isalpha() and ch != "v" for ch in row["final_material"] or "")
        if row["final_material"] is None or board_pieces > maxp:
            assert row["final_tb_wdl"] is None
            continue
        assert row["final_tb_wdl"] == wdl, row
        board = games_by_index[row["game_index"]].end().board()
        if wdl == 0 or board.is_checkmate() or (row["game_index"], row["plies"]) in event_positions:
            assert row["final_tb_dtz"] == dtz, row  # a draw, a mate, or probed as an event
        else:
            assert row["final_tb_dtz"] is None, row  # (no DTZ probe at final positions that were no event)


def test_probes_import_no_numba():
    """The probes' Python (valuation.probe_positions, tablebase) imports neither numba nor the
    JIT kernels' modules: a scan whose kernels were built ahead of time never loads numba, and
    importing _replay for its flag bits cost --syzygy ~0.3 s of CPU and 80 MB (issue 37)."""
    code = f"""
import sys
import numpy as np
from analyzer.kinds.chess import tablebase, valuation
from analyzer.kinds.chess._tables import CT_CHESS960, CT_SIZE

ct = np.full((1, CT_SIZE), -1, np.int64)
ct[0, CT_CHESS960] = 0
empty = np.zeros(0, np.int64)
src = valuation.BoardSource(np.zeros(1, np.uint8), empty, empty, np.zeros(1, np.int64),
                            np.zeros((1, 8), np.uint64), np.zeros((1, 8), np.uint64), np.zeros((1, 4), np.int64), ct)
bb = np.zeros((1, 8), np.uint64)
bb[0, 3] = 1 << 0  # a white rook on a1
bb[0, 5] = (1 << 4) | (1 << 36)  # kings on e1 and e5
bb[0, 6], bb[0, 7] = (1 << 0) | (1 << 4), 1 << 36
st = np.array([[0, 0, -1, 0]], np.int64)  # White to move
probes = valuation.Probes()
valuation.probe_positions(tablebase.tables([{TB_FIXTURE!r}]), src, np.array([0, 1]), np.array([7], np.uint64),
                          np.zeros(1, np.uint64), empty, bb, st, probes, np.zeros(1, np.int32))
assert probes.wdl == {{0: 2}}, probes
assert "numba" not in sys.modules and "analyzer.kinds.chess._replay" not in sys.modules
"""
    env = dict(os.environ)
    env.pop("ANALYZER_KERNELS", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_kbbkn_games_cursed_and_in_time():
    """The built KBB v KN games (tests/tb_games.py), values from the rule text and the tables:
    a 50-move draw claimed where the tables call the claimant lost with the win 24 plies away
    (a win in time under the 1988 clause: the claim was not yet possible then), the same with
    colours swapped, a 50-move draw of a cursed win, and a game won after a claim was missed
    under FIDE 2018 (no claim under 1988)."""
    tb_dir = shared_path("syzygy")
    if tb_dir is None:
        pytest.skip("needs the shared Syzygy tables (KBBvKN.rtbw, 13 MB, is not in the repository)")
    with open(KBBKN_GAMES, "rb") as fh:
        text = fh.read()
    res = analyze(text, editions=("fide_2018", "fide_1988"), syzygy=[tb_dir])
    games = _games(text)
    names = [gm.headers["Event"].split()[-1] for gm in games]
    v = pl.from_arrow(res.verdicts)
    ev = pl.from_arrow(res.events)
    gt = pl.from_arrow(res.games)

    def verdict(name, ed):
        return v.filter((pl.col("edition") == ed) & (pl.col("game_index") == names.index(name))).row(0, named=True)

    def claim_event(name, ed):
        return ev.filter(
            (pl.col("edition") == ed)
            & (pl.col("game_index") == names.index(name))
            & (pl.col("rule") == "fifty")
            & (pl.col("ply") == 100)
        ).row(0, named=True)

    for name in ("a_win_in_time", "a_win_in_time_black"):
        e = claim_event(name, "fide_2018")
        assert (e["kind"], e["outcome"], e["material"], e["limit_plies"]) == ("claim_now", "claimed", "KBBvKN", 100)
        assert e["tb_wdl"] == -2 and e["win_in_time"] is False  # the claimant lost by the tables
        assert verdict(name, "fide_2018")["draw_reason"] == "fifty"
        assert verdict(name, "fide_2018")["final_win_in_time"] is False
        r88 = verdict(name, "fide_1988")
        assert r88["first_fifty_claim_ply"] is None and r88["draw_reason"] == "agreement"
        assert r88["final_win_in_time"] is True  # 100 + |dtz| <= 150: the 1988 clause changes the result
        final = gt.filter(pl.col("game_index") == names.index(name)).row(0, named=True)
        assert final["final_tb_wdl"] == -2 and 100 + abs(final["final_tb_dtz"]) <= 150
    e = claim_event("b_cursed", "fide_2018")
    assert e["tb_wdl"] == -1 and abs(e["tb_dtz"]) > 100 and e["outcome"] == "claimed"
    assert verdict("b_cursed", "fide_1988")["final_win_in_time"] is False
    c18, c88 = verdict("c_won_after_claim", "fide_2018"), verdict("c_won_after_claim", "fide_1988")
    assert (c18["first_missed_claim_ply"], c18["missed_claim_side"], c18["missed_claim_result"]) == (
        100,
        "black",  # the defender, to move at ply 100
        "loss",
    )
    assert c88["first_missed_claim_ply"] is None and c88["first_fifty_claim_ply"] is None
    first = ev.filter(
        (pl.col("edition") == "fide_2018") & (pl.col("game_index") == names.index("c_won_after_claim"))
    ).sort("ply")
    assert first.row(0, named=True)["ply"] == 99  # the written-move chance, the stronger side's (passed on)


def test_damaged_and_missing_tables_are_warnings(tmp_path):
    """A truncated .rtbw copy and a folder that is not there: one warning each in the summary,
    the values of the positions that need them null, exit 0; the other tables still answer."""
    tb = tmp_path / "tb"
    shutil.copytree(TB_FIXTURE, tb)
    with open(tb / "KRvK.rtbw", "r+b") as fh:
        fh.truncate(100)  # 208 bytes in full
    (tmp_path / "g.pgn").write_bytes(
        b'[Event "krk"]\n[Result "1-0"]\n[FEN "8/8/8/4k3/8/8/8/R3K3 w - - 0 1"]\n[SetUp "1"]\n\n1. Ra5+ 1-0\n\n'
        b'[Event "kqk"]\n[Result "1-0"]\n[FEN "8/8/8/4k3/8/8/8/1Q2K3 w - - 0 1"]\n[SetUp "1"]\n\n1. Qb5+ 1-0\n\n'
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", str(tmp_path / "g.pgn"), "--out", str(out), "--json"]
        + ["--syzygy", f"{tb}{os.pathsep}{tmp_path / 'nowhere'}", "--workers", "1", "--progress", "none"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    warnings = summary["tablebase"]["warnings"]
    assert len([w for w in warnings if "KRvK.rtbw" in w]) == 1
    assert len([w for w in warnings if "nowhere" in w]) == 1
    assert summary["tablebase"]["positions"]["final:probed"] == 1
    assert summary["tablebase"]["positions"]["final:no_table"] == 1
    import analyzer

    g = analyzer.scan_games(str(out)).collect().sort("game_index")
    assert g["final_tb_wdl"].to_list() == [None, -2]


def test_other_tables_are_not_silently_reused(tmp_path, edge_path):
    """--syzygy is part of the settings a finished source is reused under: the same tables skip,
    other tables (or none) rescan."""
    from analyzer.engine import Config, run_scan
    from analyzer.kinds import resolve_editions

    small = tmp_path / "tb_small"
    small.mkdir()
    for name in ("KRvK.rtbw", "KRvK.rtbz"):
        shutil.copy(os.path.join(TB_FIXTURE, name), small / name)

    def scan(dirs):
        cfg = Config(out=str(tmp_path / "out"), editions=resolve_editions(["fide_2018"]), syzygy=tuple(dirs))
        summary, code = run_scan([edge_path], cfg, workers=1, progress_interval=0, progress_mode="none")
        assert code == 0
        return summary["sources"][0]

    assert scan([TB_FIXTURE])["action"] == "run"
    assert scan([TB_FIXTURE])["action"] == "skip"
    again = scan([str(small)])
    assert again["action"] == "run" and "settings changed" in again["note"]
    assert scan([])["action"] == "run"


def test_report_counts_position_values(tmp_path):
    """The report's tables of position values on the built KBB v KN games (scan with the shared
    tables): the 1988 endings side by side, the 50-move draws in tablebase wins, the first chances
    given away; both figures drawn; counterfactual editions labelled."""
    tb_dir = shared_path("syzygy")
    if tb_dir is None:
        pytest.skip("needs the shared Syzygy tables (KBBvKN.rtbw, 13 MB, is not in the repository)")
    from analyzer.engine import Config, run_scan
    from analyzer.kinds import resolve_editions
    from analyzer.report import build, build_figures

    eds = resolve_editions(["fide_2018", "fide_1988", "no_fifty", "stalemate_win"])
    out = tmp_path / "out"
    _, code = run_scan(
        [KBBKN_GAMES], Config(out=str(out), editions=eds, syzygy=(tb_dir,)), workers=1, progress_mode="none"
    )
    assert code == 0
    rep = build(str(out))
    e8 = rep.table("endings_1988").filter(pl.col("ending") == "KBBvKN")
    row = {r["edition"]: r for r in e8.iter_rows(named=True)}
    assert (row["fide_2018"]["games"], row["fide_2018"]["fifty_chance"], row["fide_2018"]["fifty_claimed"]) == (4, 4, 3)
    assert row["fide_2018"]["fifty_missed"] == 1 and row["fide_1988"]["fifty_chance"] == 0
    assert (row["fide_1988"]["final_win_in_time"], row["fide_1988"]["final_tb_winner"]) == (3, 4)
    assert row["fide_2018"]["final_win_in_time"] == 1  # only the game that was won
    md = rep.table("value_move_draws").filter(pl.col("edition") == "fide_2018").row(0, named=True)
    assert (md["move_draws"], md["with_tb_value"], md["tb_win"], md["tb_cursed_win"]) == (3, 3, 3, 1)
    fc = rep.table("value_first_chance").filter(pl.col("edition") == "fide_2018")
    assert fc["given_away"].sum() == 3 and fc["tb_win_at_first_chance"].sum() == 4
    assert rep.collected.counterfactual == {"no_fifty", "stalemate_win"}
    assert "(counterfactual)" in rep.styles("chess", ("stalemate_win",)).label
    names = {f.name for f in build_figures(rep)}
    assert "move_draws_tb_chess" in names
