"""Lichess variants (analyzer.kinds.chess.variants) against python-chess's chess.variant boards.

- perft per variant on positions from seeded random play, against python-chess;
- per-ply facts and fide_2018 rule columns/events on every shipped game (tests/fixtures/variants,
  generated; plus real games under shared/data/variants/ when present): 0 mismatches;
- the `lichess` edition per variant on hand-built games, expected plies derived from scalachess's
  rules (docs/variants.md), not from the code;
- routing by [Variant] tag, by file name, and the games table's `variant_end`.
"""

from __future__ import annotations

import collections
import os
import random
import sys

import chess
import chess.pgn
import chess.variant
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import reference as ref
import variant_games as vg
from analyzer.api import analyze_bytes
from analyzer.kinds.chess.variants import (
    V_ANTICHESS,
    V_ATOMIC,
    V_CRAZYHOUSE,
    V_HORDE,
    V_KOTH,
    V_RACINGKINGS,
    V_THREECHECK,
    VARIANT_NAMES,
    variant_code,
    variant_from_filename,
)
from conftest import SHARED as SHARED_DATA, SHARED_MISSING, verdict_rows

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "variants")
SHARED = os.path.join(SHARED_DATA, "variants")  # $ANALYZER_SHARED_DATA or ../shared/data (tests/conftest.py)
CODES = {
    "kingofthehill": V_KOTH,
    "threecheck": V_THREECHECK,
    "antichess": V_ANTICHESS,
    "atomic": V_ATOMIC,
    "horde": V_HORDE,
    "racingkings": V_RACINGKINGS,
    "crazyhouse": V_CRAZYHOUSE,
}


# ----------------------------------------------------------------------------------------------
# Perft


def _pc_perft(board, depth):
    if depth == 0:
        return 1
    moves = list(board.legal_moves)
    if depth == 1:
        return len(moves)
    n = 0
    for m in moves:
        board.push(m)
        n += _pc_perft(board, depth - 1)
        board.pop()
    return n


# Hand-picked positions (FEN on the variant board) that exercise the variant's special rules.
EXTRA_FENS = {
    "atomic": [
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
        "8/8/8/3k4/3K4/8/8/8 w - - 0 1",  # touching kings
        "4k3/8/8/3pP3/8/8/8/4K2R w K d6 0 2",  # e.p. with explosion
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",  # castling
        "8/8/8/8/8/8/2k5/rR2K2R w KQ - 0 1",
    ],
    "antichess": [
        "8/8/8/8/8/8/p7/8 b - - 0 1",  # promotion incl. to king
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w - - 0 2",
        "8/8/8/3pP3/8/8/8/8 w - d6 0 1",
    ],
    "crazyhouse": [
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R[Pp] w KQkq - 0 4",
        "4k3/8/8/8/8/8/8/R3K2r[QNnb] w Q - 0 1",  # check: drops must block
        "r~3k3/8/8/8/8/8/8/4K3[] w - - 0 1",  # promoted piece
    ],
    "horde": [
        "rnbqkbnr/pppppppp/8/1PP2PP1/PPPPPPPP/PPPPPPPP/PPPPPPPP/PPPPPPPP w kq - 0 1",
        "4k3/8/8/8/8/8/8/PPPP4 w - - 0 1",  # double pushes from rank 1
        "k7/5p2/4p2P/3p2P1/2p2P2/1p2P2P/p2P2P1/2P2P2 w - - 0 1",
    ],
    "racingkings": ["8/8/8/8/8/6K1/krbnNBR1/qrbnNBRQ b - - 1 1", "8/5K2/8/8/8/8/k7/8 b - - 0 1"],
    "threecheck": ["rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 1+2 0 2"],
    "kingofthehill": ["8/8/8/4k3/8/8/3K4/8 w - - 0 1"],
}


def _perft_positions(name):
    cls = vg.CLASSES[name]
    rng = random.Random(f"perft-{name}")
    boards = [cls()]
    for _ in range(6):
        b = cls()
        for _ in range(rng.randrange(4, 50)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        boards.append(cls(b.fen()))
    boards += [cls(f) for f in EXTRA_FENS.get(name, ())]
    return boards


@pytest.mark.parametrize("name", sorted(vg.CLASSES))
def test_perft_against_python_chess(name):
    from analyzer.kinds.chess.variants import _board as B
    from analyzer.kinds.chess.variants._start import arrays_of_board

    v = CODES[name]
    for board in _perft_positions(name):
        bb, mb, st = arrays_of_board(board, v)
        for depth in (1, 2, 3 if board.fen() == type(board)().fen() else 2):
            assert B.perft(v, bb, mb, st, depth) == _pc_perft(board, depth), (name, board.fen(), depth)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(vg.CLASSES))
def test_perft_depth3(name):
    from analyzer.kinds.chess.variants import _board as B
    from analyzer.kinds.chess.variants._start import arrays_of_board

    v = CODES[name]
    for board in _perft_positions(name):
        bb, mb, st = arrays_of_board(board, v)
        assert B.perft(v, bb, mb, st, 3) == _pc_perft(board, 3), (name, board.fen())


# ----------------------------------------------------------------------------------------------
# Facts and fide_2018 columns against the python-chess oracle


def _compare(text: str):
    res = analyze_bytes(text.encode(), editions=("fide_2018",), keep_facts=True)
    oracles = ref.analyze_text(text)
    eng = ref.engine_games(res)
    assert len(oracles) == len(eng)
    mismatches = []
    for o, e in zip(oracles, eng):
        mismatches += ref.compare_game(o, e)
    return oracles, eng, mismatches


def _describe(mismatches):
    c = collections.Counter(m.what for m in mismatches)
    return f"{dict(c)}; first: {mismatches[:4]}"


@pytest.mark.parametrize("name", sorted(vg.CLASSES))
def test_fixture_games_match_python_chess(name):
    with open(os.path.join(FIXTURES, f"{name}.pgn"), encoding="utf-8") as fh:
        text = fh.read()
    oracles, eng, mismatches = _compare(text)
    assert len(oracles) == 40
    assert all(e.status == "ok" for e in eng)
    assert not mismatches, _describe(mismatches)


@pytest.mark.skipif(not os.path.isdir(SHARED), reason=f"real variant games (variants/): {SHARED_MISSING}")
def test_real_games_match_python_chess():
    """Every real game against python-chess. An aborted game (no moves, as real dumps have) is
    `no_moves`; every other game is `ok` and compared ply by ply."""
    names = sorted(f for f in os.listdir(SHARED) if f.endswith(".pgn"))
    assert names
    for f in names:
        with open(os.path.join(SHARED, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        oracles, eng, mismatches = _compare(text)
        assert [e.status for e in eng] == [ref.expected_status(o) for o in oracles], f
        assert sum(o.plies > 0 for o in oracles) >= len(oracles) - 1, f  # the games are compared, not skipped
        assert not mismatches, (f, _describe(mismatches))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(vg.CLASSES))
def test_more_generated_games(name):
    _oracles, _eng, mismatches = _compare(vg.generate_pgn(name, 150, seed=7))
    assert not mismatches, _describe(mismatches)


# ----------------------------------------------------------------------------------------------
# The lichess edition per variant (hand-built games; expectations from scalachess's rules)


def _pgn(variant: str, moves: str, fen: str | None = None, result: str = "*", date: str = "2024.01.01") -> str:
    tags = ['[Event "t"]', f'[Variant "{variant}"]', f'[UTCDate "{date}"]', f'[Result "{result}"]']
    if fen:
        tags += [f'[FEN "{fen}"]', '[SetUp "1"]']
    return "\n".join(tags) + "\n\n" + moves + " " + result + "\n\n"


def _games(text, edition="lichess"):
    res = analyze_bytes(text.encode(), editions=(edition,))
    return verdict_rows(res)


def _check_legal(variant_cls, moves: str, fen: str | None = None):
    """The test game is legal for python-chess (so the expectations are about rules, not parsing)."""
    g = chess.pgn.read_game(__import__("io").StringIO(_pgn(variant_cls.aliases[0], moves, fen)))
    assert not g.errors, g.errors


SHUFFLE = {
    # A knight shuffle that returns to the start position every 4 plies.
    "King of the Hill": "Nf3 Nf6 Ng1 Ng8",
    "Three-check": "Nf3 Nf6 Ng1 Ng8",
    "Antichess": "Nf3 Nf6 Ng1 Ng8",
    "Atomic": "Nf3 Nf6 Ng1 Ng8",
    "Crazyhouse": "Nf3 Nf6 Ng1 Ng8",
    "Racing Kings": "Ng3 Nb3 Ne2 Nd2",
}


def _repeat(cycle: str, times: int) -> str:
    out = []
    ply = 0
    for _ in range(times):
        for san in cycle.split():
            out.append((f"{ply // 2 + 1}. " if ply % 2 == 0 else "") + san)
            ply += 1
    return " ".join(out)


@pytest.mark.parametrize("variant", sorted(SHUFFLE))
def test_lichess_repetitions_every_variant(variant):
    """scalachess: threefold = History.isRepetition(3) (a claim of the current position), fivefold
    = isRepetition(5) inside Variant.autoDraw, no variant overrides either; drops/checks aside, the
    knight shuffle is reversible in every variant (Crazyhouse's isIrreversible is castling only).
    The start position recurs at plies 4, 8, 12, 16: 3rd occurrence at ply 8 (threefold claim,
    missed because the game goes on), 5th at ply 16 (the game ends automatically)."""
    cycle = SHUFFLE[variant]
    moves = _repeat(cycle, 5)
    cls = chess.variant.find_variant(variant)
    _check_legal(cls, moves)
    g = _games(_pgn(variant, moves, fen=None if variant != "Racing Kings" else cls.starting_fen))[0]
    assert g["status"] == "ok"
    assert g["first_threefold_ply"] == 8
    assert g["first_missed_claim_ply"] == 8 and g["missed_claim_rule"] == "threefold"
    assert g["first_fivefold_ply"] == 16
    assert g["end_ply"] == 16 and g["end_rule"] == "fivefold"


def test_variant_end_comes_before_automatic_draws():
    """scalachess Position.status: VariantEnd before Draw. A King of the Hill game whose king
    reaches the centre on a position that is also the 100th reversible ply: won, not drawn.
    The walk is 99 quiet plies, then the king steps onto the hill at ply 100 (clock 100)."""
    cls = chess.variant.KingOfTheHillBoard
    fen = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1"
    board = cls(fen)
    # White shuffles its rook and king towards d2 without entering the centre; Black's king
    # wanders on ranks 7-8; no position repeats (seeded search below).
    moves = _reversible_walk(cls, 99, seed=3, fen=fen)
    for tok in moves.split():
        if not tok.endswith("."):
            board.push_san(tok)
    hill = [
        m
        for m in board.legal_moves
        if board.piece_type_at(m.from_square) == chess.KING and chess.BB_SQUARES[m.to_square] & chess.BB_CENTER
    ]
    assert hill, "the walk (seeded: the same every run) did not end next to the centre"
    san = board.san(hill[0])
    text = _pgn("King of the Hill", moves + " " + san, fen=fen)
    g = _games(text)[0]
    assert g["plies"] == 100 and g["final_halfmove_clock"] == 100
    assert g["variant_end"] in ("white", "black")
    assert g["first_fifty_ply"] is None  # no legal move once the variant has ended
    assert g["end_ply"] is None


def test_lichess_fivefold_only_from_2020():
    """Fivefold became automatic in scalachess 8ca89d7e (2020-01-14): as for chess, earlier games
    get no automatic end."""
    moves = _repeat(SHUFFLE["Atomic"], 5)
    g = _games(_pgn("Atomic", moves, date="2019.06.01"))[0]
    assert g["first_fivefold_ply"] is None and g["end_ply"] is None
    assert g["first_threefold_ply"] == 8


def _reversible_walk(cls, plies: int, seed: int = 1, fen: str | None = None) -> str:
    """SAN of `plies` non-zeroing moves from the start that never repeat a position, never give
    check and never end the variant (so only the halfmove clock can end the game)."""
    rng = random.Random(seed)
    board = cls() if fen is None else cls(fen)
    seen = {board._transposition_key()}
    sans = []

    def dfs(depth):
        if depth == plies:
            return True
        moves = [m for m in board.legal_moves if not board.is_zeroing(m) and not board.gives_check(m)]
        rng.shuffle(moves)
        for m in moves:
            san = board.san(m)
            board.push(m)
            k = board._transposition_key()
            if k not in seen and not board.is_variant_end():
                seen.add(k)
                sans.append(san)
                if dfs(depth + 1):
                    return True
                sans.pop()
            board.pop()
        return False

    assert dfs(0)
    return " ".join((f"{i // 2 + 1}. " if i % 2 == 0 else "") + s for i, s in enumerate(sans))


@pytest.mark.parametrize("variant", ["King of the Hill", "Three-check", "Atomic", "Crazyhouse"])
def test_lichess_fifty_moves_per_variant(variant):
    """scalachess Variant.fiftyMoves = halfMoveClock >= 100, inside autoDraw (automatic), for
    every variant but Crazyhouse (`fiftyMoves = false`). 104 reversible, non-repeating plies from
    the start: the clock reaches 100 at ply 100, so the game ends there; Crazyhouse never."""
    cls = chess.variant.find_variant(variant)
    moves = _reversible_walk(cls, 104)
    g = _games(_pgn(variant, moves))[0]
    assert g["status"] == "ok" and g["plies"] == 104
    assert g["final_halfmove_clock"] == 104
    if variant == "Crazyhouse":
        assert g["first_fifty_ply"] is None and g["end_ply"] is None
    else:
        assert g["first_fifty_ply"] == 100
        assert g["end_ply"] == 100 and g["end_rule"] == "fifty"
    # FIDE 2018 as python-chess applies it: a claim at 100, none in Crazyhouse.
    f = _games(_pgn(variant, moves), edition="fide_2018")[0]
    if variant == "Crazyhouse":
        assert f["first_fifty_ply"] is None and f["first_fifty_claim_ply"] is None
    else:
        assert f["first_fifty_ply"] == 100 and f["first_fifty_claim_ply"] == 99


INSUFFICIENT = [
    # (variant, FEN, moves, Lichess autoDraw ply or None, python-chess insufficient at the end)
    # Three-check: isInsufficientMaterial = position.kingsOnly; 1. Kxf1 leaves two kings.
    ("Three-check", "4k3/8/8/8/8/8/8/4Kq2 w - - 0 1", "1. Kxf1", 1, True),
    # KOTH: isInsufficientMaterial = false, even with bare kings.
    ("King of the Hill", "4k3/8/8/8/8/8/8/4Kq2 w - - 0 1", "1. Kxf1", None, False),
    # Atomic, atomicClosedPosition: only kings and pawns blocked by pawns (a king cannot
    # capture); python-chess has no such rule. After 1. d3 the d-pawns block each other.
    ("Atomic", "4k3/8/8/8/3p4/8/3P4/4K3 w - - 0 1", "1. d3", 1, False),
    # Atomic, insufficientAtomicWinningMaterial: kings and knights only, <= 4 pieces. 1. Nxf3
    # explodes the capturing knight with the rook: bare kings (python-chess agrees).
    ("Atomic", "4k3/8/8/8/8/5r2/8/4K1N1 w - - 0 1", "1. Nxf3", 1, True),
    # Antichess: only bishops and pawns, bishops on opposite colours, pawns blocked and on the
    # other colour than the opposing bishop (white pawn b4 dark, black pawn b5 light, white
    # bishop c1 dark, black bishop f1 light): a draw from the start position (ply 0).
    ("Antichess", "8/8/8/1p6/1P6/8/8/2B2b2 w - - 0 1", "1. Bd2", 0, False),
    # Horde, hordeClosedPosition: Black to move and every Black move leaves White's blocked
    # pawn without a move: a draw from ply 0 (python-chess never draws Horde on material).
    ("Horde", "k7/8/8/8/8/p7/P7/8 b - - 0 1", "1... Kb7", 0, False),
    # Racing Kings: isInsufficientMaterial = false.
    ("Racing Kings", "8/8/8/8/8/8/k6K/8 w - - 0 1", "1. Kg3", None, False),
    # Crazyhouse: isInsufficientMaterial = false (pieces come back from the pockets).
    ("Crazyhouse", "4k3/8/8/8/8/8/8/4Kq2[] w - - 0 1", "1. Kxf1", None, False),
]


@pytest.mark.parametrize("variant,fen,moves,expected,pc_insufficient", INSUFFICIENT)
def test_lichess_insufficient_material_per_variant(variant, fen, moves, expected, pc_insufficient):
    cls = chess.variant.find_variant(variant)
    _check_legal(cls, moves, fen)
    g = _games(_pgn(variant, moves, fen))[0]
    assert g["status"] == "ok"
    assert g["end_ply"] == expected
    if expected is not None:
        assert g["end_rule"] == "insufficient_material"
    assert g["final_insufficient_material"] == pc_insufficient


def test_lichess_insufficient_never_labels_a_finished_game():
    """scalachess Position.status checks mate, variant end and stalemate before autoDraw; Horde's
    hordeClosedPosition holds on every position where Black has no move (a mated Black, too), so
    the automatic insufficient-material end must only be reported where a legal move exists."""
    import io

    with open(os.path.join(FIXTURES, "horde.pgn"), encoding="utf-8") as fh:
        text = fh.read()
    # none of the fixture games ends on insufficient material: add one that does (a closed
    # position, Black to move with moves left: INSUFFICIENT above), so the loop checks a game
    text += "\n" + _pgn("Horde", "1... Kb7", "k7/8/8/8/8/p7/P7/8 b - - 0 1")
    rows = _games(text)
    handle = io.StringIO(text)
    checked = 0
    for r in rows:
        game = chess.pgn.read_game(handle)
        if r["end_rule"] != "insufficient_material":
            continue
        board = game.board()
        for m in list(game.mainline_moves())[: r["end_ply"]]:
            board.push(m)
        assert any(board.legal_moves), (r["end_ply"], board.fen())
        checked += 1
    assert checked >= 1  # the loop above checked a game
    # Black mated in these games (python-chess: checkmate at the last ply), never "insufficient".
    mated = [r for r in rows if r["final_is_checkmate"]]
    assert mated and all(r["end_rule"] != "insufficient_material" or r["end_ply"] < r["plies"] for r in mated)


# ----------------------------------------------------------------------------------------------
# Variant ends, routing

ENDS = [
    ("King of the Hill", "1. e4 e5 2. Ke2 Ke7 3. Kd3 Nf6 4. Kc4 Nxe4 5. Kd5", "white"),
    ("Three-check", "1. e4 e5 2. Bc4 Nc6 3. Bxf7+ Kxf7 4. Qh5+ Ke7 5. Qxe5+", "white"),
    ("Atomic", "1. e4 d5 2. Qh5 Nf6 3. Qxf7", "white"),
    ("Antichess", "1. e3 b5 2. Bxb5 c6 3. Bxc6 Nxc6", None),
    ("Crazyhouse", "1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7#", None),  # mate, not a variant end
    # White's king reaches rank 8 and Black's king (a6) cannot follow: White wins.
    ("Racing Kings", "1. Kh3 Ka3 2. Kh4 Ka4 3. Kh5 Ka5 4. Kh6 Ka6 5. Kg7 Nc3 6. Kh8#", "white"),
]


@pytest.mark.parametrize("variant,moves,winner", ENDS)
def test_variant_end_column(variant, moves, winner):
    cls = chess.variant.find_variant(variant)
    _check_legal(cls, moves)
    g = _games(_pgn(variant, moves), edition="fide_2018")[0]
    assert g["status"] == "ok"
    board = chess.pgn.read_game(__import__("io").StringIO(_pgn(variant, moves))).end().board()
    if board.is_variant_end():
        expect = (
            "draw"
            if board.is_variant_draw()
            else ("white" if (board.is_variant_win() == (board.turn == chess.WHITE)) else "black")
        )
    else:
        expect = None
    assert expect == winner
    assert g["variant_end"] == winner


def test_variant_names_and_file_names():
    for name in (
        "Crazyhouse",
        "Antichess",
        "Atomic",
        "Horde",
        "King of the Hill",
        "Racing Kings",
        "Three-check",
        "3check",
        "KOTH",
        "ZH",
        " racingkings ",
    ):
        assert variant_code(name) is not None, name
        cls = chess.variant.find_variant(name.strip())
        assert (
            variant_code(name)
            == CODES[
                {
                    "CrazyhouseBoard": "crazyhouse",
                    "AntichessBoard": "antichess",
                    "AtomicBoard": "atomic",
                    "HordeBoard": "horde",
                    "KingOfTheHillBoard": "kingofthehill",
                    "RacingKingsBoard": "racingkings",
                    "ThreeCheckBoard": "threecheck",
                }[cls.__name__]
            ]
        )
    for name in ("Standard", "Chess960", "From Position", "", None, "Duck", "Giveaway", "Suicide"):
        assert variant_code(name) is None
    assert variant_from_filename("/x/lichess_db_kingOfTheHill_rated_2024-01.pgn.zst") == V_KOTH
    assert variant_from_filename("lichess_db_threeCheck_rated_2017-05.pgn.bz2") == V_THREECHECK
    assert variant_from_filename("lichess_db_racingKings_rated_2020-12.pgn") == V_RACINGKINGS
    for key, code in (
        ("antichess", V_ANTICHESS),
        ("atomic", V_ATOMIC),
        ("crazyhouse", V_CRAZYHOUSE),
        ("horde", V_HORDE),
    ):
        assert variant_from_filename(f"lichess_db_{key}_rated_2023-03.pgn.zst") == code
    assert variant_from_filename("lichess_db_standard_rated_2024-01.pgn.zst") is None
    assert variant_from_filename("lichess_db_chess960_rated_2024-01.pgn.zst") is None


def test_untagged_games_take_the_file_variant():
    """A dump's games lack the [Variant] tag only if the caller strips it; with default_variant the
    block's untagged games are replayed as that variant, tagged games keep their own."""
    import numpy as np

    from analyzer.analysis import analyze_block
    from analyzer.kinds import resolve_editions as resolve
    from analyzer.pgn.split import split_games

    # In Atomic 2. exd5 explodes the capturing pawn too, so the d-file opens and 2... Qxd2
    # explodes White's king (Black wins); in standard chess the pawn on d5 blocks the queen.
    text = (
        '[Event "a"]\n[Result "*"]\n\n1. e4 d5 2. exd5 Qxd2 *\n\n'
        '[Event "b"]\n[Variant "Standard"]\n[Result "*"]\n\n1. e4 d5 2. exd5 Qxd2 *\n\n'
    )
    buf = np.frombuffer(text.encode(), np.uint8)
    starts, ends = split_games(buf, final=True)[:2]
    res = analyze_block(
        "chess",
        buf,
        starts,
        ends,
        source="m",
        first_game_index=0,
        base_offset=0,
        editions=resolve(["fide_2018"]),
        options={"default_variant": VARIANT_NAMES[V_ATOMIC]},
    )
    rows = verdict_rows(res)
    assert [r["status"] for r in rows] == ["ok", "illegal_move"]
    assert rows[0]["plies"] == 4 and rows[0]["variant_end"] == "black"
    assert rows[1]["error_ply"] == 3 and rows[1]["plies"] == 3


def test_chess_games_unaffected_and_mixed_blocks():
    """A block mixing standard chess and variants: chess facts and columns equal those of the
    chess games alone."""
    chess_text = (
        '[Event "c"]\n[Result "1/2-1/2"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 '
        "5. Nf3 Nf6 6. Ng1 Ng8 7. Nf3 Nf6 8. Ng1 Ng8 1/2-1/2\n\n"
    )
    var_text = _pgn("Crazyhouse", _repeat(SHUFFLE["Crazyhouse"], 3))
    alone = analyze_bytes(chess_text.encode(), editions=("lichess",), keep_facts=True)
    mixed = analyze_bytes((var_text + chess_text + var_text).encode(), editions=("lichess",), keep_facts=True)
    a = verdict_rows(alone)[0]
    m = verdict_rows(mixed)
    for k, v in a.items():
        if k not in ("game_index", "byte_offset"):
            assert m[1][k] == v, k
    assert m[0]["first_threefold_ply"] == 8 and m[2]["first_threefold_ply"] == 8
    off = mixed.facts["game_offsets"]
    assert list(mixed.facts["key"][off[1] : off[2]]) == list(alone.facts["key"])


@pytest.mark.parametrize("name", sorted(vg.CLASSES))
def test_per_ply_flags_match_python_chess(name):
    """Every per-ply flag, the repetition count and the variant facts of the replay equal what
    python-chess's variant board says at that ply (fixture games)."""
    import io

    import numpy as np

    from analyzer.kinds.chess import _replay as R
    from analyzer.kinds.chess.variants._replay import VF_DRAW, VF_END, VF_LOSS, VF_WIN

    with open(os.path.join(FIXTURES, f"{name}.pgn"), encoding="utf-8") as fh:
        text = fh.read()
    res = analyze_bytes(text.encode(), editions=("fide_2018",), keep_facts=True)
    off = res.facts["game_offsets"]
    flags = res.facts["flags"]
    vflags = res.facts["vflags"]
    keys = res.facts["key"]
    handle = io.StringIO(text)
    g = 0
    while True:
        game = chess.pgn.read_game(handle)
        if game is None:
            break
        board = game.board()
        moves = list(game.mainline_moves())
        a = int(off[g])
        assert int(off[g + 1]) - a == len(moves) + 1
        window = collections.Counter()
        for p in range(len(moves) + 1):
            irreversible = p == 0
            if p:
                irreversible = board.is_irreversible(moves[p - 1])
                if irreversible:
                    window.clear()
                board.push(moves[p - 1])
            f = int(flags[a + p])
            vf = int(vflags[a + p])
            tk = board._transposition_key()
            window[tk] += 1
            exp = {
                "check": board.is_check(),
                "checkmate": board.is_checkmate(),
                "stalemate": board.is_stalemate(),
                "insufficient": board.is_insufficient_material(),
                "has_move": any(board.generate_legal_moves()),
                "legal_ep": board.has_legal_en_passant(),
                "window_start": irreversible,
                "variant_end": board.is_variant_end(),
                "win": board.is_variant_win(),
                "loss": board.is_variant_loss(),
                "draw": board.is_variant_draw(),
            }
            got = {
                "check": bool(f & R.FLAG_CHECK),
                "checkmate": bool(f & R.FLAG_CHECKMATE),
                "stalemate": bool(f & R.FLAG_STALEMATE),
                "insufficient": bool(f & R.FLAG_INSUFFICIENT),
                "has_move": bool(f & R.FLAG_HAS_MOVE),
                "legal_ep": bool(f & R.FLAG_LEGAL_EP),
                "window_start": bool(f & R.FLAG_WINDOW_START),
                "variant_end": bool(vf & VF_END),
                "win": bool(vf & VF_WIN),
                "loss": bool(vf & VF_LOSS),
                "draw": bool(vf & VF_DRAW),
            }
            assert got == exp, (name, g, p, board.fen(), {k: (exp[k], got[k]) for k in exp if exp[k] != got[k]})
            # Repetition count: occurrences of this key since the window start, same parity.
            ws = p
            while ws > 0 and not (flags[a + ws] & R.FLAG_WINDOW_START):
                ws -= 1
            k = keys[a + p]
            count = int(np.sum(keys[a + ws : a + p + 1][::-1][::2] == k))
            assert count == window[tk], (name, g, p)
        g += 1
    assert g == 40


def test_dump_file_name_routes_untagged_games(tmp_path):
    """A Lichess variant dump named lichess_db_<variant>_rated_YYYY-MM.pgn: its games without a
    [Variant] tag are replayed as that variant by the batch job (the Atomic game below is legal
    only in Atomic: 2. exd5 explodes the pawn, opening the d-file for 2... Qxd2, which explodes
    White's king)."""
    from analyzer import engine

    text = '[Event "a"]\n[Result "0-1"]\n\n1. e4 d5 2. exd5 Qxd2 0-1\n\n'
    for name, status in (("lichess_db_atomic_rated_2024-01.pgn", "ok"), ("plain.pgn", "illegal_move")):
        src = tmp_path / name
        src.write_text(text)
        out = tmp_path / f"out-{name}"
        engine.run_scan([str(src)], engine.Config(out=str(out)), progress_interval=0)
        (row,) = analyzer_games(out)
        assert row["status"] == status, row
        if status == "ok":
            assert row["variant_end"] == "black" and row["plies"] == 4


def analyzer_games(out):
    import analyzer

    return analyzer.scan_games(str(out)).collect().to_dicts()
