"""Slow, obviously correct reference (oracle) for the replay engine and the `fide_2018` rules.

Everything here is computed by replaying the mainline with python-chess and asking python-chess's
own methods. Nothing is taken from the engine. The module also holds the comparison helpers used by
``tests/test_oracle.py`` and ``benchmarks/compare_python_chess.py``.

Per ply ``p`` (0 = start position, ``k`` = after the k-th half-move; a game of ``n`` half-moves has
``n + 1`` positions) the oracle records:

* ``key_class[p]``: index of the first ply whose ``Board._transposition_key()`` equals this one
  (the identity class of the position within the game);
* ``halfmove_clock[p]``, ``turn[p]`` (True = white to move);
* ``rep_count[p]``: occurrences of the current position since the last irreversible move,
  counted exactly as python-chess counts them (see "Shortcuts" below);
* python-chess's verdicts ``is_repetition(3)`` (``rep3``), ``can_claim_threefold_repetition()``
  (``claim3``), ``is_fifty_moves()`` (``fifty``), ``can_claim_fifty_moves()`` (``claim50``),
  ``is_fivefold_repetition()`` (``fivefold``), ``is_seventyfive_moves()`` (``seventyfive``),
  ``is_checkmate()``, ``is_stalemate()``, ``is_insufficient_material()``;
* ``clock[p]``: the ``%clk`` of the side to move = the ``%clk`` comment on half-move ``p - 1``
  (1-based half-moves), for ``p >= 2``; None for ``p < 2`` or when that comment has no ``%clk``.

Expected ``fide_2018`` game columns (exact definitions):

* ``plies`` = number of half-moves in the mainline;
* ``first_threefold_ply`` = first p with ``is_repetition(3)``;
  ``first_threefold_claim_ply`` = first p with ``can_claim_threefold_repetition()``;
  ``first_fifty_ply`` = first p with ``is_fifty_moves()``;
  ``first_fifty_claim_ply`` = first p with ``can_claim_fifty_moves()``;
  ``first_fivefold_ply`` = first p with ``is_fivefold_repetition()``;
  ``first_seventyfive_ply`` = first p with ``is_seventyfive_moves()``; None when never.
* A **board chance** at ply p: threefold ``is_repetition(3)`` with a legal move for the side to
  move, or fifty ``is_fifty_moves()``. A **written-move chance**: ``can_claim_threefold_repetition()``
  without ``is_repetition(3)``, or ``can_claim_fifty_moves()`` without ``is_fifty_moves()``.
  A board chance at p < plies is **missed** (the side to move played on): ``first_missed_claim_ply``
  = the first such p; ``missed_claim_rule`` = "threefold" if the threefold chance is on the board
  there, else "fifty"; ``missed_claim_side`` = "white"/"black" (side to move at p);
  ``missed_claim_result`` = the recorded ``Result`` seen from that side: "win"/"draw"/"loss", None
  when the result is not 1-0/0-1/1/2-1/2; ``plies_after_missed_claim`` = plies - that p;
  ``missed_claim_clock_seconds`` = ``clock[p]``.
* A written-move chance at p < plies is **avoided** when position p + 1 is not a board chance of
  the same rule: ``first_avoided_claim_ply``, ``avoided_claim_rule`` (threefold first),
  ``avoided_claim_side``.
* ``draw_reason`` (only when Result is "1/2-1/2", else None), evaluated on the final position,
  first match wins: Termination "Time forfeit" -> "timeout_vs_insufficient_material";
  is_stalemate -> "stalemate"; is_insufficient_material -> "insufficient_material";
  is_fivefold_repetition -> "fivefold"; is_seventyfive_moves -> "seventyfive";
  can_claim_threefold_repetition -> "threefold"; can_claim_fifty_moves -> "fifty";
  else "agreement".
* ``final_repetition_count``, ``final_halfmove_clock``, ``final_is_checkmate``,
  ``final_is_stalemate``, ``final_insufficient_material``: the per-ply values at ply ``plies``;
  ``first_third_occurrence_ply`` / ``first_fifth_occurrence_ply``: first p with ``rep_count``
  >= 3 / >= 5; ``first_halfmove_clock_100_ply`` / ``_150_ply``: first p with the clock >= 100 / 150.
* Events (one row per (ply, rule)): threefold: kind "claim_now" if is_repetition(3) else
  "claim_intended" if can_claim_threefold_repetition(); fifty: "claim_now" if is_fifty_moves()
  else "claim_intended" if can_claim_fifty_moves(); fivefold "automatic" if
  is_fivefold_repetition(); seventyfive "automatic" if is_seventyfive_moves(); with ``side`` (side
  to move), ``repetition_count`` (``rep_count[p]``), ``halfmove_clock``, ``clock_seconds``
  (``clock[p]``), and ``outcome``: automatic rules "automatic"; claim_now "missed" if p < plies,
  else "claimed" if the game is recorded drawn, else "ended"; claim_intended at the last ply
  "claimed"/"ended" likewise, else "passed_on" when ply p + 1 is a board chance of the same rule
  ("claimed" if that is the last ply of a drawn game), else "avoided". The threefold claim_now
  needs a legal move (a repeated checkmate or stalemate is not a chance).

Shortcuts (all provably identical to calling the method; ``exhaustive=True`` calls every method at
every ply and asserts that the shortcut agrees — the default test run does that on edge_cases.pgn):

* python-chess's repetition scans (``is_repetition`` and ``can_claim_threefold_repetition``) walk
  back from the current position, popping moves; when the popped move is irreversible
  (``Board.is_irreversible``, evaluated on the position before the move) they stop *without*
  counting the position before it. So the positions they see — the "window" — are the positions
  reached since the last irreversible move (or since the start), plus the current one. We keep
  that window as a Counter of ``_transposition_key()`` values, resetting it exactly when python-chess
  would stop (``board.is_irreversible(move)`` before pushing the move).
* ``is_repetition(k)`` is true iff the window count of the current key is >= k (its occupancy
  pre-filter and its ``len(move_stack) < count - 1`` test are necessary conditions only). So we call
  it (and ``is_fivefold_repetition``) only when our count is >= k; otherwise the answer is False.
* ``can_claim_threefold_repetition()`` is true iff the window count of the current key is >= 3 or
  some legal move reaches a key whose window count is >= 2. If no key of the window has count >= 2
  both are false, so we call the method only when some window key has count >= 2.
* ``is_fifty_moves()`` / ``is_seventyfive_moves()`` need ``halfmove_clock >= 100`` / ``>= 150``;
  ``can_claim_fifty_moves()`` is false when ``halfmove_clock < 99``. We call them only then.
"""

from __future__ import annotations

import collections
import hashlib
import io
import os
import pickle
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.pgn
import chess.polyglot

EDITION = "fide_2018"

# The fide_2018 game columns compared exactly against the engine.
GAME_COLUMNS = (
    "plies",
    "first_threefold_ply",
    "first_threefold_claim_ply",
    "first_fifty_ply",
    "first_fifty_claim_ply",
    "first_fivefold_ply",
    "first_seventyfive_ply",
    "first_missed_claim_ply",
    "missed_claim_rule",
    "missed_claim_side",
    "missed_claim_result",
    "plies_after_missed_claim",
    "first_avoided_claim_ply",
    "avoided_claim_rule",
    "avoided_claim_side",
    "draw_reason",
)
# Further well-defined columns of GAMES_SCHEMA, compared in a separate test.
EXTRA_GAME_COLUMNS = (
    "missed_claim_clock_seconds",
    "final_repetition_count",
    "final_halfmove_clock",
    "final_is_checkmate",
    "final_is_stalemate",
    "final_insufficient_material",
    "first_third_occurrence_ply",
    "first_fifth_occurrence_ply",
    "first_halfmove_clock_100_ply",
    "first_halfmove_clock_150_ply",
)

PER_PLY_FLAGS = (
    "rep3",
    "claim3",
    "fifty",
    "claim50",
    "fivefold",
    "seventyfive",
    "checkmate",
    "stalemate",
    "insufficient",
)


def _side(turn: bool) -> str:
    return "white" if turn == chess.WHITE else "black"


def _result_for(result: str, side: str) -> str | None:
    if result == "1/2-1/2":
        return "draw"
    if result == "1-0":
        return "win" if side == "white" else "loss"
    if result == "0-1":
        return "win" if side == "black" else "loss"
    return None


def f32(x: float | None) -> float | None:
    """Round a clock value the way the engine stores it (float32); None stays None."""
    if x is None:
        return None
    import numpy as np

    v = float(np.float32(x))
    return None if v != v else v


@dataclass
class GameOracle:
    index: int
    headers: dict
    chess960: bool
    start_fen: str
    ucis: list
    errors: list
    plies: int = 0
    key_class: list = field(default_factory=list)
    halfmove_clock: list = field(default_factory=list)
    turn: list = field(default_factory=list)
    rep_count: list = field(default_factory=list)
    clock: list = field(default_factory=list)
    flags: dict = field(default_factory=dict)  # name -> list[bool] per ply
    columns: dict = field(default_factory=dict)  # GAME_COLUMNS + EXTRA_GAME_COLUMNS
    events: list = field(default_factory=list)  # sorted tuples, see EVENT_FIELDS
    calls: collections.Counter = field(default_factory=collections.Counter)
    ep_captures: int = 0  # en-passant captures played
    illegal_ep_plies: list = field(default_factory=list)  # plies with a pseudo-legal, illegal e.p.

    def board_at(self, ply: int) -> chess.Board:
        board = chess.Board(self.start_fen, chess960=self.chess960)
        for uci in self.ucis[:ply]:
            board.push(chess.Move.from_uci(uci))
        return board

    def fen_at(self, ply: int) -> str:
        return self.board_at(ply).fen(en_passant="fen")

    def describe(self) -> str:
        h = self.headers
        return (
            f"#{self.index} {h.get('White', '?')} - {h.get('Black', '?')} "
            f"{h.get('Event', '?')} {h.get('Date', h.get('UTCDate', '?'))} "
            f"{h.get('Site', '')} {h.get('Result', '?')}"
        )


# Rules of the events this oracle models; other engine rows (e.g. rule "offer", draw offers read
# from comments) are outside the spec and are counted, not compared.
EVENT_RULES = ("threefold", "fifty", "fivefold", "seventyfive")

EVENT_FIELDS = ("ply", "rule", "kind", "side", "repetition_count", "halfmove_clock", "clock_seconds", "outcome")


def perft(board: chess.Board, depth: int) -> int:
    """python-chess's leaf count of `board` at `depth` (depth >= 1): the independent count the
    perft files are checked against (that they were read right)."""
    if depth == 1:
        return board.legal_moves.count()
    n = 0
    for move in board.legal_moves:
        board.push(move)
        n += perft(board, depth - 1)
        board.pop()
    return n


def _counted_check(board: chess.Board, calls: collections.Counter, possible: bool, name: str, *args: int) -> bool:
    """python-chess's `board.name(*args)`, called only where it can be true (`possible`, a
    provably exact shortcut); the calls made are counted in `calls[name]`."""
    if not possible:
        return False
    calls[name] += 1
    return bool(getattr(board, name)(*args))


def analyze_game(game: chess.pgn.Game, index: int = 0, exhaustive: bool = False) -> GameOracle:
    """Replay the mainline of `game` with python-chess and compute every expected value."""
    board = game.board()
    headers = dict(game.headers)
    nodes = list(game.mainline())
    moves = [n.move for n in nodes]
    clk_after = [n.clock() for n in nodes]  # clk_after[k-1] = %clk comment on half-move k
    o = GameOracle(
        index=index,
        headers=headers,
        chess960=board.chess960,
        start_fen=board.fen(en_passant="fen"),
        ucis=[m.uci() for m in moves],
        errors=[str(e) for e in game.errors],
        plies=len(moves),
    )
    flags: dict[str, list] = {name: [] for name in PER_PLY_FLAGS}
    calls = o.calls

    window: collections.Counter = collections.Counter()
    repeated_in_window = 0  # distinct window keys with count >= 2
    first_ply_of_key: dict = {}

    for p in range(len(moves) + 1):
        if p > 0:
            move = moves[p - 1]
            irreversible = board.is_irreversible(move)
            if board.is_en_passant(move):
                o.ep_captures += 1
            board.push(move)
            if irreversible:
                window.clear()
                repeated_in_window = 0
        key = board._transposition_key()
        window[key] += 1
        count = window[key]
        if count == 2:
            repeated_in_window += 1
        o.key_class.append(first_ply_of_key.setdefault(key, p))
        if board.ep_square is not None and board.has_pseudo_legal_en_passant() and not board.has_legal_en_passant():
            o.illegal_ep_plies.append(p)
        o.halfmove_clock.append(board.halfmove_clock)
        o.turn.append(board.turn)
        o.rep_count.append(count)
        o.clock.append(clk_after[p - 2] if p >= 2 else None)

        hmc = board.halfmove_clock
        # --- python-chess verdicts (with provably exact shortcuts) ---
        rep3 = _counted_check(board, calls, count >= 3, "is_repetition", 3)
        five = _counted_check(board, calls, count >= 5, "is_fivefold_repetition")
        claim3 = _counted_check(board, calls, repeated_in_window > 0, "can_claim_threefold_repetition")
        fifty = _counted_check(board, calls, hmc >= 100, "is_fifty_moves")
        claim50 = _counted_check(board, calls, hmc >= 99, "can_claim_fifty_moves")
        s75 = _counted_check(board, calls, hmc >= 150, "is_seventyfive_moves")
        mate = board.is_checkmate()
        stale = board.is_stalemate()
        insuff = board.is_insufficient_material()

        if exhaustive:
            full = (
                board.is_repetition(3),
                board.can_claim_threefold_repetition(),
                board.is_fifty_moves(),
                board.can_claim_fifty_moves(),
                board.is_fivefold_repetition(),
                board.is_seventyfive_moves(),
            )
            mine = (rep3, claim3, fifty, claim50, five, s75)
            assert full == mine, (index, p, board.fen(), full, mine)
            # the window count is python-chess's count: is_repetition(k) <=> count >= k
            assert board.is_repetition(count) and not board.is_repetition(count + 1), (index, p)

        for name, val in (
            ("rep3", rep3),
            ("claim3", claim3),
            ("fifty", fifty),
            ("claim50", claim50),
            ("fivefold", five),
            ("seventyfive", s75),
            ("checkmate", mate),
            ("stalemate", stale),
            ("insufficient", insuff),
        ):
            flags[name].append(bool(val))

    o.flags = flags
    o.columns = _columns(o)
    o.events = _events(o)
    return o


def _first(seq: Iterable[bool]) -> int | None:
    for i, v in enumerate(seq):
        if v:
            return i
    return None


# Why a drawn game was drawn: the first of these per-ply flags true at its last position (in
# this order of precedence), else agreement.
DRAW_REASON_FLAGS = (
    ("stalemate", "stalemate"),
    ("insufficient", "insufficient_material"),
    ("fivefold", "fivefold"),
    ("seventyfive", "seventyfive"),
    ("claim3", "threefold"),
    ("claim50", "fifty"),
)


def _columns(o: GameOracle) -> dict:
    f = o.flags
    n = o.plies
    result = o.headers.get("Result", "*")
    cols: dict[str, Any] = {
        "plies": n,
        "first_threefold_ply": _first(f["rep3"]),
        "first_threefold_claim_ply": _first(f["claim3"]),
        "first_fifty_ply": _first(f["fifty"]),
        "first_fifty_claim_ply": _first(f["claim50"]),
        "first_fivefold_ply": _first(f["fivefold"]),
        "first_seventyfive_ply": _first(f["seventyfive"]),
    }
    board3 = [f["rep3"][p] and not (f["checkmate"][p] or f["stalemate"][p]) for p in range(n + 1)]
    board50 = f["fifty"]
    written3 = [f["claim3"][p] and not f["rep3"][p] for p in range(n + 1)]
    written50 = [f["claim50"][p] and not f["fifty"][p] for p in range(n + 1)]
    missed = None
    for p in range(n):  # p < plies
        if board3[p] or board50[p]:
            missed = p
            break
    avoided = None
    for p in range(n):
        for rule, written, board in (("threefold", written3, board3), ("fifty", written50, board50)):
            if written[p] and not board[p + 1]:
                avoided = (p, rule)
                break
        if avoided:
            break
    if avoided is None:
        cols.update(first_avoided_claim_ply=None, avoided_claim_rule=None, avoided_claim_side=None)
    else:
        cols.update(
            first_avoided_claim_ply=avoided[0],
            avoided_claim_rule=avoided[1],
            avoided_claim_side=_side(o.turn[avoided[0]]),
        )
    if missed is None:
        cols.update(
            first_missed_claim_ply=None,
            missed_claim_rule=None,
            missed_claim_side=None,
            missed_claim_result=None,
            plies_after_missed_claim=None,
            missed_claim_clock_seconds=None,
        )
    else:
        side = _side(o.turn[missed])
        cols.update(
            first_missed_claim_ply=missed,
            missed_claim_rule="threefold" if board3[missed] else "fifty",
            missed_claim_side=side,
            missed_claim_result=_result_for(result, side),
            plies_after_missed_claim=n - missed,
            missed_claim_clock_seconds=f32(o.clock[missed]),
        )
    reason = None
    if result == "1/2-1/2":
        if o.headers.get("Termination") == "Time forfeit":
            reason = "timeout_vs_insufficient_material"
        else:
            reason = next((name for flag, name in DRAW_REASON_FLAGS if f[flag][n]), "agreement")
    cols["draw_reason"] = reason
    cols["final_repetition_count"] = o.rep_count[n]
    cols["final_halfmove_clock"] = o.halfmove_clock[n]
    cols["final_is_checkmate"] = f["checkmate"][n]
    cols["final_is_stalemate"] = f["stalemate"][n]
    cols["final_insufficient_material"] = f["insufficient"][n]
    cols["first_third_occurrence_ply"] = _first(c >= 3 for c in o.rep_count)
    cols["first_fifth_occurrence_ply"] = _first(c >= 5 for c in o.rep_count)
    cols["first_halfmove_clock_100_ply"] = _first(h >= 100 for h in o.halfmove_clock)
    cols["first_halfmove_clock_150_ply"] = _first(h >= 150 for h in o.halfmove_clock)
    return cols


def _events(o: GameOracle) -> list:
    f = o.flags
    n = o.plies
    drawn = o.headers.get("Result") == "1/2-1/2"
    board = {
        "threefold": [f["rep3"][p] and not (f["checkmate"][p] or f["stalemate"][p]) for p in range(n + 1)],
        "fifty": f["fifty"],
    }

    def outcome(p: int, rule: str, kind: str) -> str:
        if kind == "automatic":
            return "automatic"
        if p == n:
            return "claimed" if drawn else "ended"
        if kind == "claim_now":
            return "missed"
        if not board[rule][p + 1]:
            return "avoided"
        return "claimed" if (p + 1 == n and drawn) else "passed_on"

    out = []
    for p in range(n + 1):
        common = (_side(o.turn[p]), o.rep_count[p], o.halfmove_clock[p], f32(o.clock[p]))
        rows = []
        if board["threefold"][p]:
            rows.append(("threefold", "claim_now"))
        elif f["claim3"][p] and not f["rep3"][p]:
            rows.append(("threefold", "claim_intended"))
        if f["fifty"][p]:
            rows.append(("fifty", "claim_now"))
        elif f["claim50"][p]:
            rows.append(("fifty", "claim_intended"))
        if f["fivefold"][p]:
            rows.append(("fivefold", "automatic"))
        if f["seventyfive"][p]:
            rows.append(("seventyfive", "automatic"))
        for rule, kind in rows:
            out.append((p, rule, kind) + common + (outcome(p, rule, kind),))
    return sorted(out, key=_event_sort_key)


def _event_sort_key(e: tuple) -> tuple:
    return tuple((x is None, x if x is not None else 0) for x in e)


# --------------------------------------------------------------------------------------------
# Per-ply facts of the replay (flags, rep_next, castling-now bits), for the facts-level tests

PLY_FACTS = (
    "check",
    "checkmate",
    "stalemate",
    "insufficient",
    "has_move",
    "legal_ep",
    "window_start",
    "rep_next",
    "castle_now",
)


def castle_now_bits(board: chess.Board) -> int:
    """Castling legal now for each colour as if it were to move (bits WK=1, WQ=2, BK=4, BQ=8):
    python-chess generate_castling_moves on a copy with that colour to move."""
    bits = 0
    for color, shift in ((chess.WHITE, 0), (chess.BLACK, 2)):
        b = board.copy(stack=False)
        b.turn = color
        b.ep_square = None
        for m in b.generate_castling_moves():
            bits |= (1 if b.is_kingside_castling(m) else 2) << shift
    return bits


def ply_facts(game: chess.pgn.Game) -> dict:
    """python-chess's answer, per position of the mainline, to what the replay records per ply:
    is_check, is_checkmate, is_stalemate, is_insufficient_material, any legal move,
    has_legal_en_passant, window_start (ply 0 or the move that led here is_irreversible), and
    rep_next = the most occurrences (>= 2, else 0) since the last irreversible move of a
    position one legal, not irreversible move reaches (the intended-move claim 9.2.1.1), and
    castle_now = castle_now_bits. {name: list per ply}."""
    board = game.board()
    out: dict = {name: [] for name in PLY_FACTS}
    window: collections.Counter = collections.Counter()
    moves = list(game.mainline_moves())
    for p in range(len(moves) + 1):
        irreversible = p == 0
        if p > 0:
            irreversible = board.is_irreversible(moves[p - 1])
            board.push(moves[p - 1])
            if irreversible:
                window.clear()
        window[board._transposition_key()] += 1
        legal = list(board.legal_moves)
        best = 0
        if legal and any(c >= 2 for c in window.values()):
            for mv in legal:
                if board.is_irreversible(mv):
                    continue
                board.push(mv)
                c = window[board._transposition_key()]
                board.pop()
                if c >= 2:
                    best = max(best, c)
        for name, val in (
            ("check", board.is_check()),
            ("checkmate", board.is_checkmate()),
            ("stalemate", board.is_stalemate()),
            ("insufficient", board.is_insufficient_material()),
            ("has_move", bool(legal)),
            ("legal_ep", board.has_legal_en_passant()),
            ("window_start", irreversible),
            ("rep_next", best),
            ("castle_now", castle_now_bits(board)),
        ):
            out[name].append(val)
    return out


# --------------------------------------------------------------------------------------------
# Reading files


def read_games(text: str) -> Iterator[chess.pgn.Game]:
    handle = io.StringIO(text)
    while True:
        game = chess.pgn.read_game(handle)
        if game is None:
            return
        yield game


def read_text(path: str) -> str:
    """Decoded text of a .pgn or .pgn.zst file (UTF-8, invalid bytes replaced)."""
    return read_bytes(path).decode("utf-8", errors="replace")


def read_bytes(path: str) -> bytes:
    if path.endswith(".zst"):
        import zstandard

        with open(path, "rb") as fh:
            reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
            out = bytearray()
            while True:
                chunk = reader.read(1 << 24)
                if not chunk:
                    break
                out += chunk
            return bytes(out)
    with open(path, "rb") as fh:
        return fh.read()


def analyze_text(text: str, exhaustive: bool = False, start_index: int = 0) -> list:
    return [analyze_game(g, start_index + i, exhaustive) for i, g in enumerate(read_games(text))]


def _source_digest() -> str:
    with open(__file__, "rb") as fh:
        return hashlib.sha1(fh.read() + chess.__version__.encode()).hexdigest()[:16]


def analyze_file(path: str, exhaustive: bool = False, cache: bool = True) -> list:
    """Oracle for every game of `path`, cached in a pickle under /tmp keyed by the file's
    mtime+size, this module's source and the python-chess version."""
    st = os.stat(path)
    tag = f"{os.path.abspath(path)}|{st.st_mtime_ns}|{st.st_size}|{_source_digest()}|{exhaustive}"
    name = hashlib.sha1(tag.encode()).hexdigest()[:20]
    cache_path = os.path.join(tempfile.gettempdir(), f"analyzer-oracle-{os.getuid()}-{name}.pkl")
    if cache and os.path.exists(cache_path):
        try:
            with open(cache_path, "rb") as fh:
                return pickle.load(fh)
        except Exception:  # noqa: BLE001 - a stale or damaged cache is recomputed
            pass
    games = analyze_text(read_text(path), exhaustive=exhaustive)
    if cache:
        tmp = cache_path + f".{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(games, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cache_path)
    return games


# --------------------------------------------------------------------------------------------
# Splitting a PGN byte string into games the way a tag-section-driven reader does

_TAG_LINE = re.compile(rb"^[ \t]*\[")


def split_games(data: bytes) -> list:
    """(byte_offset, end) of each game: a game starts at a tag line that is not preceded by
    another tag line (blank lines and comments-only lines in between are ignored). Movetext that
    follows a tag section after two blank lines stays in the same game (unlike python-chess)."""
    starts = []
    prev_tag = False
    pos = 0
    n = len(data)
    in_brace = False
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl + 1
        line = data[pos:end]
        if not in_brace and _TAG_LINE.match(line):
            if not prev_tag:
                starts.append(pos)
            prev_tag = True
        elif line.strip():
            prev_tag = False
            # track multi-line brace comments so a "[" inside one is not a tag
            opens = line.count(b"{")
            closes = line.count(b"}")
            if in_brace:
                if closes:
                    in_brace = line.rfind(b"{") > line.rfind(b"}")
            elif opens:
                in_brace = line.rfind(b"{") > line.rfind(b"}")
        pos = end
    bounds = []
    for i, s in enumerate(starts):
        bounds.append((s, starts[i + 1] if i + 1 < len(starts) else n))
    return bounds


# --------------------------------------------------------------------------------------------
# Comparison with the engine


@dataclass
class EngineGame:
    status: str
    error: str | None
    columns: dict
    events: list
    keys: list | None = None  # per ply, uint64 as int
    halfmove_clock: list | None = None
    clock: list | None = None  # per ply, float or None
    byte_offset: int | None = None
    other_rules: tuple = ()  # rules of the engine's event rows outside EVENT_RULES


def engine_games(res, edition: str = EDITION) -> list:
    """Turn an analyze_bytes result into a list of EngineGame, indexed by game_index: each
    game's columns are its games row and its verdicts row of `edition`."""
    import numpy as np

    verdicts = {v["game_index"]: v for v in res.verdicts.to_pylist() if v["edition"] == edition}
    games = []
    for g in res.games.to_pylist():
        g = dict(g)
        g.update(verdicts.get(g["game_index"], {}))
        games.append(g)
    games.sort(key=lambda g: g["game_index"])
    by_index: dict[int, list] = collections.defaultdict(list)
    ev = res.events
    if ev is not None and ev.num_rows:
        for e in ev.to_pylist():
            if e.get("edition") not in (edition, None):
                continue
            by_index[e["game_index"]].append(tuple(f32(e[k]) if k == "clock_seconds" else e[k] for k in EVENT_FIELDS))
    facts = getattr(res, "facts", None)
    ev_all = {k: list(v) for k, v in by_index.items()}
    out = []
    for gi in list(by_index):
        by_index[gi] = [x for x in by_index[gi] if x[1] in EVENT_RULES]
    for g in games:
        evs = sorted(by_index.get(g["game_index"], []), key=_event_sort_key)
        eg = EngineGame(
            status=g["status"], error=g.get("error"), columns=g, events=evs, byte_offset=g.get("byte_offset")
        )
        eg.other_rules = tuple(x[1] for x in ev_all.get(g["game_index"], []) if x[1] not in EVENT_RULES)
        out.append(eg)
    if facts is not None:
        off = np.asarray(facts["game_offsets"])
        keys = np.asarray(facts["key"]).astype(np.uint64)
        hmc = np.asarray(facts["halfmove_clock"])
        clk = np.asarray(facts["clock_seconds"]) if "clock_seconds" in facts else None
        if len(off) == len(out) + 1:
            for i, eg in enumerate(out):
                a, b = int(off[i]), int(off[i + 1])
                eg.keys = [int(k) for k in keys[a:b]]
                eg.halfmove_clock = [int(h) for h in hmc[a:b]]
                if clk is not None:
                    eg.clock = [None if c != c else float(np.float32(c)) for c in clk[a:b]]
        else:
            for eg in out:
                eg.keys = None
    return out


def identity_classes(keys: list) -> list:
    first: dict = {}
    return [first.setdefault(k, i) for i, k in enumerate(keys)]


def _norm(v):
    if isinstance(v, float):
        return None if v != v else float(v)
    return v


@dataclass
class Mismatch:
    game: int
    what: str  # column name, "keys", "halfmove_clock", "clock", "events", "status"
    ply: int | None
    expected: Any
    got: Any


def expected_status(o: GameOracle) -> str:
    """The status the engine owes a game python-chess reads without errors: `no_moves` for a game
    with an empty movetext (an aborted game, as real Lichess dumps have), else `ok`."""
    return "no_moves" if o.plies == 0 and not o.ucis else "ok"


def compare_game(o: GameOracle, e: EngineGame, extra_columns: bool = True, check_facts: bool = True) -> list:
    """All mismatches between the oracle and the engine for one game ([] = equal)."""
    out: list[Mismatch] = []
    if e.status != "ok" and not (e.status == "no_moves" and o.plies == 0):
        out.append(Mismatch(o.index, "status", None, "ok", f"{e.status}: {e.error}"))
        return out
    cols = GAME_COLUMNS + (EXTRA_GAME_COLUMNS if extra_columns else ())
    for c in cols:
        exp = o.columns[c]
        got = _norm(e.columns.get(c))
        if c == "missed_claim_clock_seconds":
            got = f32(got)
        if c == "plies" and exp != got:
            out.append(Mismatch(o.index, c, None, exp, got))
        elif exp != got:
            ply = exp if isinstance(exp, int) and not isinstance(exp, bool) and c.endswith("_ply") else None
            if ply is None and isinstance(got, int) and c.endswith("_ply"):
                ply = got
            out.append(Mismatch(o.index, c, ply, exp, got))
    if e.events != o.events:
        exp_set = collections.Counter(o.events)
        got_set = collections.Counter(e.events)
        missing = sorted((exp_set - got_set).elements(), key=_event_sort_key)
        extra = sorted((got_set - exp_set).elements(), key=_event_sort_key)
        ply = min([x[0] for x in missing + extra], default=None)
        out.append(Mismatch(o.index, "events", ply, missing[:4], extra[:4]))
    if check_facts:
        n = o.plies + 1
        if e.keys is None:
            out.append(Mismatch(o.index, "facts", None, f"{n} positions", "no facts"))
            return out
        if len(e.keys) != n:
            out.append(Mismatch(o.index, "facts_length", None, n, len(e.keys)))
            return out
        got_cls = identity_classes(e.keys)
        for p in range(n):
            if got_cls[p] != o.key_class[p]:
                out.append(Mismatch(o.index, "keys", p, f"same as ply {o.key_class[p]}", f"same as ply {got_cls[p]}"))
                break
        for p in range(n):
            if e.halfmove_clock[p] != o.halfmove_clock[p]:
                out.append(Mismatch(o.index, "halfmove_clock", p, o.halfmove_clock[p], e.halfmove_clock[p]))
                break
        if e.clock is not None:
            # plies 0 and 1 (no earlier move of the side to move) apart: the spec says None there
            for p in range(min(2, n)):
                if e.clock[p] != f32(o.clock[p]):
                    out.append(Mismatch(o.index, "clock_initial", p, f32(o.clock[p]), e.clock[p]))
                    break
            for p in range(2, n):
                if e.clock[p] != f32(o.clock[p]):
                    out.append(Mismatch(o.index, "clock", p, f32(o.clock[p]), e.clock[p]))
                    break
        else:
            out.append(Mismatch(o.index, "clock", None, "clock_seconds", "missing"))
    return out


def format_mismatches(oracles: list, mismatches: list, max_games: int = 8, max_per_game: int = 6) -> str:
    """Compact diff: game index, ply, FEN, expected vs got, for the first few games."""
    by_game: dict[int, list] = collections.defaultdict(list)
    for m in mismatches:
        by_game[m.game].append(m)
    lines = []
    per_what = collections.Counter(m.what for m in mismatches)
    lines.append(f"{len(by_game)} games differ; mismatches per item: {dict(per_what)}")
    for gi in sorted(by_game)[:max_games]:
        o = oracles[gi]
        lines.append(
            f"- game {o.describe()}  plies={o.plies}"
            + (" [chess960]" if o.chess960 else "")
            + (f" [FEN {o.headers['FEN']}]" if "FEN" in o.headers else "")
        )
        for m in by_game[gi][:max_per_game]:
            fen = ""
            if m.ply is not None and 0 <= m.ply <= o.plies:
                fen = f" fen={o.fen_at(m.ply)!r}"
            lines.append(f"    {m.what} ply={m.ply}{fen}: expected {m.expected!r} got {m.got!r}")
    return "\n".join(lines)
