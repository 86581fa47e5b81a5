"""`analyzer show OUT GAME`: one game's draw-rule timeline as a person reads it, from the tables
(the chances, who could claim, the clocks, the automatic ends, the verdict per edition) and the
game's own text, replayed by python-chess (the moves, the plies of each repeated position, the
position drawn as a board). The report's example games get the same page (`write_example_pages`).

GAME is a Site URL (a Lichess game's `https://lichess.org/<id>`, with or without `/white`, `#ply`),
or SOURCE#INDEX (the source name and the game's 0-based index in it, as the report lists them).
The game's text is read from the input the scan recorded (OUT/_manifest/<source>/source.json) at
the game's byte offset; when that input is gone or changed, the timeline is shown without moves.
"""

from __future__ import annotations

import collections
import io
import os
import re
from dataclasses import dataclass, field

import polars as pl

from analyzer.errors import GameNotFound
from analyzer.report import audit

LICHESS = re.compile(r"^https?://(?:www\.)?lichess\.org/([A-Za-z0-9]{8})")
MAX_GAME = 16 << 20
REPORT_READ_BUDGET = 1 << 31  # text bytes the report decodes per source for example boards
KIND_TEXT = {
    "claim_now": "could claim on the board",
    "claim_intended": "could write a move and claim",
    "automatic": "automatic draw",
    "offer": "draw offer",
}
OUTCOME_TEXT = {
    "missed": "missed: played on",
    "claimed": "claimed: the game ended here, drawn",
    "avoided": "avoided: played another move",
    "passed_on": "passed on: the move was played, the opponent has the claim",
    "automatic": "the game ends here under this edition",
    "ended": "the game ended here, not drawn",
}


@dataclass
class Repetition:
    key: str
    plies: list[int]  # every occurrence
    nth: int  # the ply of the occurrence that made it claimable (the third)
    label: str  # "after 31. Nf3"
    svg: str = ""


@dataclass
class GameView:
    source: str
    game_index: int
    game: dict
    verdicts: list[dict]
    events: list[dict]
    moves: list[str] | None = None  # SAN labels of the positions: labels[q] = "after 12. Nf3"
    labels: list[str] = field(default_factory=list)
    repetitions: list[Repetition] = field(default_factory=list)
    written: dict[int, list[str]] = field(default_factory=dict)  # ply -> moves a written claim could use
    note: str = ""  # why there are no moves, if none
    final_fen: str | None = None  # the last position python-chess reached (a certificate starts there)

    @property
    def key(self) -> str:
        return f"{self.source}#{self.game_index}"

    def lichess_link(self, ply: int) -> str | None:
        m = LICHESS.match(self.game.get("site") or "")
        return f"https://lichess.org/{m.group(1)}#{ply}" if m else None

    def label(self, ply: int) -> str:
        return self.labels[ply] if self.moves is not None and 0 <= ply < len(self.labels) else f"ply {ply}"


# ----------------------------------------------------------------------------------------------
# Finding and loading a game


def parse_game(game: str) -> tuple[str | None, int | None, str | None]:
    """(source, index, None) for SOURCE#INDEX / SOURCE:INDEX, (None, None, site) for a Site."""
    m = re.match(r"^(.+)[#:](\d+)$", game)
    if m and "://" not in game:
        return m.group(1), int(m.group(2)), None
    return None, None, game.strip()


def _scan(ds, table: str, partial: bool = False, check: str = "digest") -> pl.LazyFrame:
    """A table of the Dataset, its files checked (a damaged one raises DatasetError)."""
    import warnings

    from analyzer.engine.dataset import as_dataset
    from analyzer.errors import DatasetError

    ds = as_dataset(ds)
    if not ds.is_dataset():
        raise DatasetError(f"{ds.root}: not an analyzer scan output (no _manifest folder)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (unfinished sources are left out: show says "no game")
        lf = ds.scan(table, partial=partial, check=check)
    return lf.with_columns(pl.col(pl.Categorical).cast(pl.String))


def find(ds, game: str, check: str = "digest") -> tuple[str, int]:
    """The (source, game_index) GAME names; GameNotFound otherwise."""
    source, index, site = parse_game(game)
    g = _scan(ds, "games", check=check)
    if site is None:
        hit = g.filter((pl.col("source") == source) & (pl.col("game_index") == index)).select("source", "game_index")
    else:
        m = LICHESS.match(site)
        cond = pl.col("site").str.starts_with(f"https://lichess.org/{m.group(1)}") if m else pl.col("site") == site
        hit = g.filter(cond).select("source", "game_index")
    rows = hit.head(2).collect().rows()
    if not rows:
        raise GameNotFound(f"no game {game!r} in {ds.root}")
    return rows[0]


def _rows(tables: dict[str, pl.LazyFrame], source: str, indexes: list[int]) -> dict[int, GameView]:
    """The views (without moves) of a source's games `indexes`: one filtered read per table for
    them all (the records are read once, by whoever built `tables`)."""
    key = (pl.col("source") == source) & pl.col("game_index").is_in(indexes)
    g, v, e = pl.collect_all(
        [
            tables["games"].filter(key),
            tables["verdicts"].filter(key),
            tables["events"].filter(key).sort("game_index", "edition", "ply"),
        ]
    )
    views = {row["game_index"]: GameView(source, row["game_index"], row, [], []) for row in g.iter_rows(named=True)}
    for row in v.iter_rows(named=True):
        if row["game_index"] in views:
            views[row["game_index"]].verdicts.append(row)
    for row in e.iter_rows(named=True):
        if row["game_index"] in views:
            views[row["game_index"]].events.append(row)
    return views


def _tables(ds, partial: bool = False, check: str = "digest") -> dict[str, pl.LazyFrame]:
    return {t: _scan(ds, t, partial, check) for t in ("games", "verdicts", "events")}


def load(
    ds, source: str, game_index: int, text: str | None = None, read: bool = True, check: str = "digest"
) -> GameView:
    """The game's view: its rows of the three tables and, with `read`, its moves from the
    input's text (or from `text`)."""
    from analyzer.engine.dataset import as_dataset

    ds = as_dataset(ds)
    view = _rows(_tables(ds, check=check), source, [game_index]).get(game_index)
    if view is None:
        raise GameNotFound(f"no game {source}#{game_index} in {ds.root}")
    return _with_moves(view, ds, text, read)


def _with_moves(view: GameView, ds, text: str | None, read: bool) -> GameView:
    if view.game["game_type"] != "chess":
        view.note = "the board is drawn for chess games only"
        return view
    why = None
    if text is None and read:
        texts, why = ds.game_texts(
            view.source, [view.game["byte_offset"]], window=MAX_GAME, games=[view.game["game_index"]]
        )
        text = texts.get(view.game["byte_offset"])
    if text is None:
        view.note = why or "the game's text was not read"
        return view
    replay(view, text)
    return view


# ----------------------------------------------------------------------------------------------
# Replay (python-chess, the oracle)


def _key(board) -> str:
    """FIDE 9.2.2's "same position": pieces, side to move, castling rights, and an en-passant
    square only where the capture is legal."""
    return board.epd(en_passant="legal")


def replay(view: GameView, text: str) -> None:
    """Moves, position labels, repeated positions and written-claim moves from the game text;
    a game python-chess reads differently from the tables is left without moves."""
    import chess
    import chess.pgn

    game = chess.pgn.read_game(io.StringIO(text))
    if game is None:
        view.note = "python-chess could not read the game's text"
        return
    tags = game.headers
    for tag, col in (("White", "white"), ("Black", "black"), ("Site", "site")):
        want = view.game.get(col)
        if want is not None and tags.get(tag) not in (want, None) and not (tag == "Site" and tags.get(tag) == "?"):
            view.note = f"the text at the game's offset is another game ({tag} {tags.get(tag)!r})"
            return
    board = game.board()
    labels = ["start position"]
    keys = [_key(board)]
    sans = []
    for mv in game.mainline_moves():
        if not board.is_legal(mv):
            break
        num = board.fullmove_number
        dots = "." if board.turn == chess.WHITE else "..."
        san = board.san(mv)
        sans.append(san)
        board.push(mv)
        labels.append(f"after {num}{dots} {san}")
        keys.append(_key(board))
    view.moves, view.labels = sans, labels
    view.final_fen = board.fen()
    if isinstance(view.game.get("plies"), int) and len(sans) < view.game["plies"]:
        view.note = f"python-chess replayed {len(sans)} of the {view.game['plies']} plies"
    occ: dict[str, list[int]] = {}
    for q, k in enumerate(keys):
        occ.setdefault(k, []).append(q)
    # Each position seen three times, drawn at its third occurrence. One pass over the moves for
    # them all, and counts kept as the moves go: a long game repeats thousands of positions.
    mainline = list(game.mainline_moves())
    start = game.board()
    thirds = {plies[2]: k for k, plies in occ.items() if len(plies) >= 3}
    if thirds:
        b = start.copy()
        last = max(thirds)
        for q in range(last + 1):
            if q in thirds:
                k = thirds[q]
                view.repetitions.append(Repetition(k, occ[k], q, labels[q], _board_svg(b)))
            if q < last:
                b.push(mainline[q])
    view.repetitions.sort(key=lambda r: r.nth)
    # written-move chances: the moves whose position would occur a third time (threefold)
    want = {ev["ply"] for ev in view.events if ev["kind"] == "claim_intended" and ev["rule"] == "threefold"}
    if want:
        b = start.copy()
        seen: collections.Counter = collections.Counter()  # keys[: q + 1]
        for q, nxt in enumerate([*mainline, None]):
            seen[keys[q]] += 1
            if q in want:
                moves = []
                for cand in b.legal_moves:
                    b.push(cand)
                    if seen[_key(b)] >= 2:
                        moves.append(cand)
                    b.pop()
                view.written[q] = [b.san(m) for m in moves[:3]]
            if nxt is None or q >= len(sans):
                break
            b.push(nxt)


def _board_svg(board) -> str:
    import chess.svg

    last = board.peek() if board.move_stack else None
    return chess.svg.board(board, size=240, lastmove=last)


# ----------------------------------------------------------------------------------------------
# The timeline, as text and as HTML


def _clock(seconds) -> str:
    if seconds is None:
        return ""
    s = round(float(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def edition_groups(view: GameView) -> list[tuple[list[str], list[dict], dict]]:
    """Editions with the same chances and verdict, as one group: (editions, events, verdict)."""
    cols = [
        "first_missed_claim_ply",
        "missed_claim_rule",
        "missed_claim_side",
        "missed_claim_result",
        "first_avoided_claim_ply",
        "avoided_claim_rule",
        "end_ply",
        "end_rule",
        "result_changed",
        "draw_reason",
    ]
    groups: dict[tuple, tuple[list[str], list[dict], dict]] = {}
    for v in view.verdicts:
        evs = [e for e in view.events if e["edition"] == v["edition"] and e["kind"] != "offer"]
        sig = (
            tuple((e["ply"], e["rule"], e["kind"], e["side"], e["outcome"]) for e in evs),
            tuple(v.get(c) for c in cols),
        )
        if sig in groups:
            groups[sig][0].append(v["edition"])
        else:
            groups[sig] = ([v["edition"]], evs, v)
    return list(groups.values())


def event_text(view: GameView, e: dict) -> str:
    side = (e["side"] or "").capitalize()
    what = KIND_TEXT.get(e["kind"], e["kind"])
    text = f"{side} {what} ({e['rule']})" if e["kind"] != "automatic" else f"{e['rule']}: {what}"
    if e.get("certificate"):
        text += f" ({e['certificate']})"
    if e["kind"] == "claim_intended" and view.written.get(e["ply"]):
        text += f", e.g. by writing {' or '.join(view.written[e['ply']])}"
    if e.get("outcome"):
        text += f" — {OUTCOME_TEXT.get(e['outcome'], e['outcome'])}"
    if e.get("clock_seconds") is not None:
        text += f" [clock {_clock(e['clock_seconds'])}]"
    return text


def verdict_lines(v: dict) -> list[str]:
    out = []
    if v.get("first_missed_claim_ply") is not None:
        out.append(
            f"first missed claim: ply {v['first_missed_claim_ply']} ({v['missed_claim_rule']}, "
            f"{v['missed_claim_side']}; the result for that side: {v['missed_claim_result'] or 'unknown'})"
        )
    else:
        out.append("no missed claim")
    if v.get("first_avoided_claim_ply") is not None:
        out.append(f"first avoided written-move claim: ply {v['first_avoided_claim_ply']} ({v['avoided_claim_rule']})")
    if v.get("end_ply") is not None:
        changed = " (the recorded result would change)" if v.get("result_changed") else ""
        out.append(f"automatic end: ply {v['end_ply']} ({v['end_rule']}){changed}")
    else:
        out.append("no automatic end")
    if v.get("draw_reason"):
        out.append(f"drawn: {v['draw_reason']}")
    return out


def header_line(view: GameView) -> str:
    g = view.game
    from analyzer.report.model import platform_label

    bits = [
        platform_label(g.get("platform")),
        str(g.get("date") or g.get("utc_date") or g.get("date_tag") or "no date"),
        f"TimeControl {g.get('time_control') or '-'} ({g.get('time_control_class') or 'unknown'})",
        f"{g.get('white') or '?'} – {g.get('black') or '?'}",
        f"{g.get('result') or '*'}" + (f" ({g['termination']})" if g.get("termination") else ""),
        f"{g.get('plies')} plies, status {g.get('status')}",
    ]
    return " · ".join(bits)


def in_force(view: GameView) -> str | None:
    """The edition in force for the game, by the audit's rule (audit.in_force)."""
    g = view.game
    row = pl.DataFrame(
        {"game_type": [g.get("game_type")], "platform": [g.get("platform")], "date": [g.get("date")]},
        schema={"game_type": pl.String, "platform": pl.String, "date": pl.Date},
    )
    return row.select(audit.in_force()).item()


def in_force_text(view: GameView) -> str | None:
    """'edition in force: X', or that X was not scanned (and which were), or None."""
    force = in_force(view)
    if not force:
        return None
    scanned = [v["edition"] for v in view.verdicts]
    if force in scanned:
        return f"edition in force: {force}"
    return f"edition in force: {force}, not scanned (this scan has {', '.join(scanned) or 'no edition'})"


def _side_name(result: str | None, winner: bool) -> str:
    white_won = result == "1-0"
    return ("White" if white_won else "Black") if winner else ("Black" if white_won else "White")


def certificate_line(view: GameView) -> tuple[str | None, bool | None]:
    """(the certificate as SAN moves from the final position, whether python-chess's replay of
    it ends in the winner's mate), or (None, None) without moves or certificate."""
    import chess

    g = view.game
    cert = g.get("timeout_certificate")
    if not cert or cert.startswith(("unwinnable:", "unknown:")) or view.final_fen is None:
        return None, None
    board = chess.Board(view.final_fen)
    winner = chess.WHITE if g.get("result") == "1-0" else chess.BLACK
    sans: list[str] = []
    for uci in cert.split():
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            return cert, False
        if move not in board.legal_moves:
            return " ".join(sans + [f"{uci}?"]), False
        num = board.fullmove_number
        prefix = f"{num}." if board.turn == chess.WHITE else (f"{num}..." if not sans else "")
        sans.append(prefix + board.san(move))
        board.push(move)
    return " ".join(sans), board.is_checkmate() and board.turn != winner


def dead_and_timeout_lines(view: GameView) -> list[str]:
    """What the game's facts say of dead positions and of a loss on time (FIDE 5.2.2, 6.9)."""
    g = view.game
    out = []
    dp = g.get("dead_position_ply")
    if dp is not None:
        plies = g.get("plies")
        later = (
            f"the game went on for {plies - dp} more plies (under FIDE's Laws it ended there, drawn)"
            if isinstance(plies, int) and plies > dp
            else "the game ended there"
        )
        where = view.label(dp) if view.moves is not None else f"ply {dp}"
        out.append(
            f"dead position from ply {dp} ({where}): no series of legal moves leads to mate "
            f"({g.get('dead_position_proof')}); {later}"
        )
    answer = g.get("timeout_winner_can_mate")
    if answer is not None:
        winner = _side_name(g.get("result"), True)
        cert = g.get("timeout_certificate") or ""
        if answer == "winnable":
            line, mates = certificate_line(view)
            shown = line or cert
            check = (
                " (python-chess replays it to mate)"
                if mates
                else ("" if mates is None else " (python-chess does NOT replay it to mate: please report)")
            )
            out.append(
                f"lost on time: {winner}, the winner, could still mate (FIDE 6.9: a win), e.g. by {shown}{check}"
            )
        elif answer == "unwinnable":
            out.append(
                f"lost on time: {winner}, the winner, could not mate by any series of legal moves "
                f"({cert}): a draw under FIDE 6.9"
            )
        else:
            out.append(f"lost on time: whether {winner} could still mate is unknown (the search's budget was spent)")
    return out


def text(view: GameView) -> str:
    """The timeline as plain text (what `analyzer show` prints)."""
    lines = [f"{view.key}" + (f" — {view.game['site']}" if view.game.get("site") else ""), header_line(view)]
    force = in_force(view)
    said = in_force_text(view)
    if said:
        lines.append(said)
    lines.append("")
    if view.moves is None:
        lines.append(f"(no moves: {view.note})")
    elif view.repetitions:
        lines.append("Repeated positions (three occurrences or more):")
        for i, r in enumerate(view.repetitions, 1):
            link = view.lichess_link(r.nth)
            lines.append(
                f"  {i}. {r.label} — at plies {', '.join(map(str, r.plies))}; third occurrence at ply {r.nth}"
                + (f"  {link}" if link else "")
            )
    else:
        lines.append("No position occurs three times.")
    facts = dead_and_timeout_lines(view)
    if facts:
        lines.append("")
        lines.extend(f"{line[0].upper()}{line[1:]}." for line in facts)
    for eds, evs, v in edition_groups(view):
        lines.append("")
        lines.append(" = ".join(eds) + (" (in force)" if force in eds else "") + ":")
        for e in evs:
            # "after 13. Nf3" where the moves are known; the ply alone, once, where they are not
            where = f"  {view.label(e['ply'])}" if view.moves is not None else ""
            lines.append(f"  ply {e['ply']:>4}{where}: {event_text(view, e)}")
        if not evs:
            lines.append("  no claim chance, no automatic draw")
        for line in verdict_lines(v):
            lines.append(f"  verdict: {line}")
    return "\n".join(lines) + "\n"


def html(view: GameView, back: str | None = None) -> str:
    """The timeline as a self-contained HTML page, the repeated positions drawn as boards."""
    from analyzer.report import page

    force = in_force(view)
    groups = [
        {
            "editions": " = ".join(eds),
            "in_force": force in eds,
            "events": [
                {
                    "ply": e["ply"],
                    "label": view.label(e["ply"]),
                    "text": event_text(view, e),
                    "link": view.lichess_link(e["ply"]),
                }
                for e in evs
            ],
            "verdict": verdict_lines(v),
        }
        for eds, evs, v in edition_groups(view)
    ]
    site = view.game.get("site") or ""
    reps = [
        {
            "label": r.label,
            "plies": ", ".join(map(str, r.plies)),
            "nth": r.nth,
            "svg": r.svg,
            "link": view.lichess_link(r.nth),
        }
        for r in view.repetitions
    ]
    return (
        page.env()
        .get_template("game.html.j2")
        .render(
            key=view.key,
            header=header_line(view),
            site=site,
            site_url=site if re.match(r"^https?://\S+$", site) else None,
            in_force=(in_force_text(view) or "").removeprefix("edition in force: "),
            moves=view.moves is not None,
            note=view.note,
            repetitions=reps,
            facts=[f"{line[0].upper()}{line[1:]}." for line in dead_and_timeout_lines(view)],
            groups=groups,
            back=back,
        )
    )


# ----------------------------------------------------------------------------------------------
# The report's example games


def page_name(key: str) -> str:
    """A file name for a game key (source#index): safe characters, and a hash for uniqueness."""
    import hashlib

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", key)[:80]
    return f"{safe}-{hashlib.sha1(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}.html"


def example_keys(rep) -> list[str]:
    """The games the page links to: the edition pairs' examples and the flagged games shown."""
    keys: list[str] = []
    pairs = rep.tables.get("edition_pairs")
    if pairs is not None and "example_games" in pairs.columns:
        for s in pairs["example_games"].drop_nulls().to_list():
            keys += [k for k in s.split(" ") if k]
    ag = rep.tables.get("audit_games")
    if ag is not None and ag.height:
        keys += [f"{s}#{i}" for s, i in ag.head(60).select("source", "game_index").rows()]
    return list(dict.fromkeys(keys))


def write_example_pages(ds, rep, games_dir: str) -> dict[str, str]:
    """One page per example game under games_dir; returns key -> path relative to the report.
    The inputs are read once per source, up to REPORT_READ_BUDGET bytes of text; a game beyond
    it, or whose input is gone, gets its timeline without moves. Never fails the report."""
    keys = example_keys(rep)
    if not keys or ds.remote:
        return {}
    os.makedirs(games_dir, exist_ok=True)
    by_source: dict[str, list[int]] = {}
    for k in keys:
        s, i = k.rsplit("#", 1)
        by_source.setdefault(s, []).append(int(i))
    out: dict[str, str] = {}
    try:
        tables = _tables(ds, partial=bool(getattr(rep, "partial", False)))  # a --partial report's games too
    except Exception:  # noqa: BLE001 - an example page is a convenience: the report goes on without it
        return out
    for source, idx in by_source.items():
        try:
            views = _rows(tables, source, idx)
            chess_offsets = [v.game["byte_offset"] for v in views.values() if v.game["game_type"] == "chess"]
            chess_games = [v.game["game_index"] for v in views.values() if v.game["game_type"] == "chess"]
            texts, why = (
                ds.game_texts(source, chess_offsets, REPORT_READ_BUDGET, games=chess_games)
                if chess_offsets
                else ({}, None)
            )
            for gi, view in views.items():
                off = view.game["byte_offset"]
                _with_moves(view, ds, texts.get(off), read=False)
                if view.moves is None and off not in texts and why:
                    view.note = why
                name = page_name(f"{source}#{gi}")
                with open(os.path.join(games_dir, name), "w", encoding="utf-8") as fh:
                    fh.write(html(view, back="../index.html"))
                out[f"{source}#{gi}"] = f"games/{name}"
        except Exception:  # noqa: BLE001 - an example page is a convenience: the report goes on without it
            continue
    return out
