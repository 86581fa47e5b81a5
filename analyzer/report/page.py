"""The HTML page: a Jinja2 template (templates/report.html.j2, autoescaped) filled with text
prepared here from the report's tables. Numbers keep their units on one line (`keep` filter)."""

from __future__ import annotations

import datetime as _dt
import functools
import os
import re

import jinja2
import markupsafe
import polars as pl

from analyzer.report import audit, periods, stats
from analyzer.report.cube import UNKNOWN
from analyzer.report.model import (
    ALL_CLASSES,
    DRAUGHTS_RULES,
    GAME_TYPE_LABELS,
    IN_FORCE,
    MEASURE,
    MEASURES,
    RULE_LABELS,
    RULE_MEASURES,
    Report,
    applies,
    edition_features,
    platform_label,
    primary_class,
    rule_applies,
)

# A number with its unit (12 %, 0.84–0.97 %), or a date: never broken across lines.
_KEEP = re.compile(r"\d[\d,.]*(?:–\d[\d,.]*)?[ \u00a0]%|\b\d{4}-\d{2}(?:-\d{2})?\b")


def keep(text) -> markupsafe.Markup:
    """Text (escaped) with every number-and-unit and date wrapped in a no-wrap span."""
    escaped = str(markupsafe.escape("" if text is None else text))
    return markupsafe.Markup(_KEEP.sub(lambda m: f'<span class="nw">{m.group(0)}</span>', escaped))


@functools.cache
def env() -> jinja2.Environment:
    """The report's templates (report.html.j2, game.html.j2), loaded once per process."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("analyzer.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["keep"] = keep
    return env


def _cell(k, n, applicable=True, of: str | None = None, none: str = "no games") -> dict:
    """A table cell: 'k of n (p %)' (with what n counts, when given) and its interval; 'n/a' /
    'no games'."""
    if not applicable:
        return {"text": "n/a", "ci": "", "muted": True}
    if not n:
        return {"text": none, "ci": "", "muted": True}
    text = stats.count_pct(int(k), int(n))
    if of:
        text = text.replace(f" of {int(n):,} ", f" of {int(n):,} {of} ", 1)
    return {"text": text, "ci": stats.ci_text(int(k), int(n)), "muted": False}


# The FIDE Laws in force over the board, by date (audit.FIDE_IN_FORCE), in words.
_OTB_LAWS = ", ".join(f"{ed} from {d.isoformat()}" for d, ed in audit.FIDE_IN_FORCE)


def in_force_note(rep: Report, game_type: str, platform: str) -> dict | None:
    """Which edition is in force for a population, as the headline says it; `warn` where FIDE's
    Laws are the only reading of online games."""
    if game_type != "chess":
        return None
    scanned = rep.editions.get("chess", [])
    fide = [e for e in scanned if e != "lichess"]
    if platform == "lichess":
        if "lichess" in scanned:
            also = f" {', '.join(fide)}: what FIDE's Laws would say of the same games." if fide else ""
            return {
                "text": "Read under lichess, the rules Lichess plays by (the edition in force)." + also,
                "warn": False,
            }
        return {
            "text": f"lichess was not scanned: these are FIDE's Laws ({', '.join(fide)}) applied to online games. "
            "Lichess has no written-move claims and ends a game at 50 moves by itself, so many FIDE chances do not "
            "exist there. Scan with --edition lichess for the rules in force.",
            "warn": True,
        }
    if platform == "otb":
        row = rep.table("missed_by_rule").filter(
            (pl.col("game_type") == game_type)
            & (pl.col("platform") == platform)
            & (pl.col("edition") == IN_FORCE)
            & (pl.col("time_control_class") == ALL_CLASSES)
        )
        if row.height and row["games"][0]:
            r = row.row(0, named=True)
            return {
                "text": f"Missed claims read under the FIDE Laws in force at each game's date ({_OTB_LAWS}): "
                f"{stats.count_pct(r['games'], r['games_of_population'])} games (the others have no full date, "
                "are older, or their edition was not scanned).",
                "warn": False,
            }
        return {
            "text": f"No FIDE edition in force at these games' dates was scanned ({_OTB_LAWS}): read under "
            f"{scanned[0] if scanned else 'no edition'}.",
            "warn": True,
        }
    return {
        "text": f"No edition models {platform_label(platform)}'s rules: read under {fide[0] if fide else scanned[0]}, "
        "FIDE's Laws applied to online games.",
        "warn": True,
    }


def _headline(rep: Report) -> list[dict]:
    h = rep.table("headline").filter(pl.col("primary"))
    a_sum = rep.table("audit_summary")
    cards = []
    for gt, plat in rep.populations:
        items = []
        games = 0
        for r in h.filter((pl.col("game_type") == gt) & (pl.col("platform") == plat)).iter_rows(named=True):
            m = MEASURE[r["measure"]]
            games = max(games, r["games"] or 0)
            series = r["series"]
            if series == IN_FORCE:
                series = f"{r['editions'].replace(',', ', ')}: in force"
            item = {"label": m.label, "series": series, **_cell(r["k"], r["n"], r["applicable"], m.of, "no chance")}
            if not r["applicable"]:
                item["text"] = "n/a: " + (
                    "the 50-move draw is automatic" if m.name == "missed_fifty" else "no such chance"
                )
            if m.name in RULE_MEASURES and r["applicable"] and r["games"]:
                item["second"] = (
                    "share of all games: "
                    + stats.count_pct(r["k"], r["games"])
                    + (" (of the games read under it)" if r["series"] == IN_FORCE and plat == "otb" else "")
                )
            items.append(item)
        if gt == "chess":
            items += _audit_items(a_sum, plat)
        cards.append(
            {
                "title": f"{platform_label(plat)} · {GAME_TYPE_LABELS.get(gt, gt)}",
                "games": f"{games:,} analyzed games",
                "note": in_force_note(rep, gt, plat),
                "items": items,
            }
        )
    return cards


def _audit_items(a_sum: pl.DataFrame, plat: str) -> list[dict]:
    """The headline's audit lines: contradictions (breaches of the edition in force) only; leads
    apart, as what they are."""
    label = "audit: games whose recorded result contradicts the edition in force"
    a = a_sum.filter(pl.col("platform") == plat) if a_sum.height else a_sum
    if not (a.height and a["games_audited"][0]):
        return [{"label": label, "series": "", "text": "not audited", "ci": "", "muted": True}]
    row = a.row(0, named=True)
    return [
        {"label": label, "series": "edition in force", **_cell(row[audit.CONTRADICTION], row["games_audited"])},
        {
            "label": "audit: leads that break no rule (an agreed draw after a claimable one)",
            "series": "edition in force",
            **_cell(row[audit.LEAD], row["games_audited"]),
            "muted": True,
        },
    ]


def _identical(rep: Report) -> list[str]:
    """One sentence per group of editions that agree, naming the measures they agree on."""
    out = []
    pairs = rep.tables.get("edition_pairs")
    for gt, _eds in rep.editions.items():
        groups: dict[tuple[str, ...], list[str]] = {}
        for m in MEASURES:
            for cls in rep.classes.get((gt, m.name), []):
                if len(cls.editions) > 1:
                    groups.setdefault(tuple(cls.editions), []).append(m.name.replace("_", " "))
        for eds_, ms in groups.items():
            n = 0
            if pairs is not None:
                p = pairs.filter(
                    (pl.col("game_type") == gt)
                    & (pl.col("platform") == "all platforms")
                    & (pl.col("edition_a") == eds_[0])
                    & (pl.col("edition_b") == eds_[1])
                )
                top = p["games_compared"].max() if p.height else None
                n = top if isinstance(top, int) else 0  # an integer column: its max is an int, or None
            names = ", ".join(eds_[:-1]) + " and " + eds_[-1]
            what = ", ".join(ms[:-1]) + " and " + ms[-1] if len(ms) > 1 else ms[0]
            out.append(
                f"{GAME_TYPE_LABELS.get(gt, gt).capitalize()}: {names} give the same verdict on {what} "
                f"for every one of the {n:,} games compared, and are drawn as one series for "
                f"{'these measures' if len(ms) > 1 else 'it'}."
            )
    return out


def _pairs(rep: Report, games: dict[str, str]) -> list[dict]:
    pairs = rep.tables.get("edition_pairs")
    out: list[dict] = []
    if pairs is None:
        return out
    for gt, eds in rep.editions.items():
        p = pairs.filter(pl.col("game_type") == gt)
        if p.height == 0:
            continue
        allp = p.filter(pl.col("platform") == "all platforms")
        cell = {
            (a, b): (d, n)
            for a, b, d, n in allp.select("edition_a", "edition_b", "differ_any", "games_compared").iter_rows()
        }
        matrix = []
        for a in eds:
            row = []
            for b in eds:
                v = cell.get((a, b)) or cell.get((b, a))
                if a == b:
                    row.append({"text": "—", "muted": True})
                elif v is None:
                    row.append({"text": "not compared", "muted": True})
                else:
                    row.append({"text": stats.count_pct(v[0], v[1]), "muted": v[0] == 0})
            matrix.append({"edition": a, "cells": row})
        detail = []
        for r in p.filter(pl.col("platform") != "all platforms").iter_rows(named=True):
            keys = [k for k in (r["example_games"] or "").split(" ") if k]
            if games:  # each example game's own timeline page
                links = [{"href": games.get(k), "site": k} for k in keys]
            else:  # no pages (tables on an object store): the examples' Site URLs, where they are URLs
                links = [{"href": u, "site": u} for u in (r["examples"] or "").split(" ") if u]
            detail.append(
                {
                    "pair": f"{r['edition_a']} vs {r['edition_b']}",
                    "platform": platform_label(r["platform"]),
                    "compared": f"{r['games_compared']:,}",
                    "missed": f"{r['differ_missed']:,}",
                    "avoided": f"{r['differ_avoided']:,}",
                    "claimed": f"{r['differ_claimed']:,}",
                    "automatic": f"{r['differ_automatic']:,}",
                    "any": f"{r['differ_any']:,}",
                    "links": links,
                }
            )
        out.append({"game_type": GAME_TYPE_LABELS.get(gt, gt), "editions": eds, "matrix": matrix, "detail": detail})
    return out


def _population_table(rep: Report, game_type: str) -> list[dict]:
    s = rep.table("summary_by_population").filter(pl.col("game_type") == game_type)
    rows = []
    for r in s.iter_rows(named=True):
        if not r["games"]:
            continue
        rows.append(
            {
                "platform": platform_label(r["platform"]),
                "edition": r["edition"],
                "games": f"{r['games']:,}",
                "cells": [_cell(r[m.k], r[m.n], applies(r["edition"], m)) for m in MEASURES],
            }
        )
    return rows


def _draughts(rep: Report, game_type: str) -> dict:
    rules = rep.table("rules").filter(pl.col("game_type") == game_type)

    rows = []
    eds = rep.editions.get(game_type, [])
    plats = [p for g, p in rep.populations if g == game_type]
    order = sorted(
        rules.iter_rows(named=True),
        key=lambda r: (
            plats.index(r["platform"]) if r["platform"] in plats else 99,
            eds.index(r["edition"]) if r["edition"] in eds else 99,
            DRAUGHTS_RULES.index(r["rule"]) if r["rule"] in DRAUGHTS_RULES else 99,
        ),
    )
    for r in order:
        if r["rule"] not in DRAUGHTS_RULES or not r["games"]:
            continue
        ok = rule_applies(r["edition"], r["rule"])
        rows.append(
            {
                "platform": platform_label(r["platform"]),
                "edition": r["edition"],
                "rule": RULE_LABELS[r["rule"]],
                "games": f"{r['games']:,}",
                "reached": _cell(r["reached"], r["games"], ok),
                "ended": _cell(r["ended"], r["games"], ok),
                "claimed": f"{r['games_claimed']:,}" if ok else "n/a",
                "missed": f"{r['games_missed']:,}" if ok else "n/a",
                "avoided": f"{r['games_avoided']:,}" if ok else "n/a",
            }
        )
    return {
        "title": GAME_TYPE_LABELS.get(game_type, game_type),
        "rows": rows,
        "population": _population_table(rep, game_type),
    }


def _audit(rep: Report, games: dict[str, str]) -> dict:
    a = rep.table("audit_summary")
    rows = []
    for r in a.iter_rows(named=True):
        cells = []
        for k in (audit.CONTRADICTION, audit.LEAD, *audit.NAMES):
            if not r["games_audited"]:
                cells.append({"text": "not audited", "ci": "", "muted": True})
            elif k.startswith("lichess") and r["platform"] != "lichess":
                cells.append({"text": "n/a", "ci": "", "muted": True})
            else:
                cells.append(_cell(r[k], r["games_audited"]))
        rows.append(
            {
                "platform": platform_label(r["platform"]),
                "games": f"{r['games']:,}",
                "audited": f"{r['games_audited']:,}",
                "why": r["why_not_audited"] or "",
                "cells": cells,
            }
        )
    g = rep.table("audit_games")
    flagged = []
    if g.height:
        for r in g.head(60).iter_rows(named=True):
            site = r["site"] or ""
            key = f"{r['source']}#{r['game_index']}"
            flagged.append(
                {
                    "category": r["category"],
                    "kind": audit.KIND[r["kind"]].label,
                    "game": key,
                    "href": games.get(key),
                    "site": site,
                    "url": site if re.match(r"^https?://\S+$", site) else None,
                    "date": str(r["date"] or ""),
                    "players": f"{r['white'] or '?'} – {r['black'] or '?'}",
                    "result": r["result"] or "",
                    "in_force": r["in_force"],
                    "end": f"{r['end_rule']} at ply {r['end_ply']}" if r["end_ply"] is not None else "",
                    "plies": r["plies"],
                }
            )
    kinds = [{"label": k.label, "category": k.category, "explanation": k.explanation} for k in audit.KINDS]
    return {"rows": rows, "kinds": kinds, "flagged": flagged, "n_flagged": g.height}


def _time_controls(rep: Report) -> dict:
    """Games per time-control class and platform (chess), unknown included; games without both
    ratings."""
    first = rep.editions.get("chess", [""])[0]
    of_chess = (pl.col("game_type") == "chess") & (pl.col("edition") == first)  # every edition reads the same games
    by = rep.table("summary_by_time_control").filter(of_chess).select("platform", "time_control_class", "games")
    bands = rep.table("summary_by_rating_band").filter(of_chess)
    if by.height == 0:
        return {"classes": [], "rows": [], "unknown": [], "no_rating": []}
    classes = [k for k in periods.TC_CLASSES if k in set(by["time_control_class"].to_list())]
    rows, unknown, no_rating = [], [], []
    for g, plat in rep.populations:
        if g != "chess":
            continue
        sub = {r["time_control_class"]: r["games"] for r in by.filter(pl.col("platform") == plat).iter_rows(named=True)}
        total = sum(sub.values())
        rows.append(
            {"platform": platform_label(plat), "cells": [f"{sub.get(k, 0):,}" for k in classes], "total": f"{total:,}"}
        )
        if sub.get(UNKNOWN):
            unknown.append(f"{platform_label(plat)} {stats.count_pct(sub[UNKNOWN], total)}")
        nr = int(bands.filter((pl.col("platform") == plat) & (pl.col("rating_band") == UNKNOWN))["games"].sum())
        if nr:
            no_rating.append(f"{platform_label(plat)} {stats.count_pct(nr, total)}")
    return {"classes": classes, "rows": rows, "unknown": unknown, "no_rating": no_rating}


def _missed_by_class(rep: Report) -> list[dict]:
    """Per chess population: missed among the games with a chance, per rule and time-control
    class (all first), under the edition in force (else the headline's edition), with the share
    of all games beside it; and the same under every edition scanned (missed_by_rule)."""
    mbr = rep.table("missed_by_rule").filter(pl.col("game_type") == "chess")
    out = []
    for gt, plat in rep.populations:
        if gt != "chess":
            continue
        p = mbr.filter(pl.col("platform") == plat)
        forced = p.filter((pl.col("edition") == IN_FORCE) & (pl.col("games") > 0))
        if forced.height:
            reading = IN_FORCE
            label = f"under the edition in force ({forced['editions'][0].replace(',', ', ')})"
        else:
            cls = primary_class(rep, gt, plat, "missed_threefold")
            reading = cls.key if cls else rep.editions.get("chess", [""])[0]
            why = (
                "no edition in force was scanned for these games"
                if plat in ("lichess", "otb")
                else "no edition models its rules"
            )
            label = f"under {reading} ({why})"

        def rows_of(sub: pl.DataFrame) -> list[dict]:
            rows = []
            for (tc,), grp in sub.group_by("time_control_class", maintain_order=True):
                by = {r["rule"]: r for r in grp.iter_rows(named=True)}
                games = grp["games"][0]
                if not games:
                    continue
                cells = []
                for rule in ("threefold", "fifty"):
                    r = by.get(rule)
                    if r is None:
                        cells += [_cell(0, 0, False), _cell(0, 0, False)]
                        continue
                    ok = bool(r["applicable"])
                    cells.append(_cell(r["missed"], r["games_with_chance"], ok, none="no chance"))
                    cells.append(_cell(r["missed"], r["games"], ok))
                rows.append({"cls": tc, "games": f"{games:,}", "cells": cells})
            return rows

        every = []
        for ed in rep.editions.get("chess", []):
            every.append({"edition": ed, "rows": rows_of(p.filter(pl.col("edition") == ed))})
        eds = (forced["editions"][0] if forced.height else reading).split(",")
        na = [e for e in eds if edition_features(e).get("fifty_claim") is False]
        out.append(
            {
                "platform": platform_label(plat),
                "fifty_na": ", ".join(na),
                "reading": label,
                "note": in_force_note(rep, gt, plat),
                "rows": rows_of(p.filter(pl.col("edition") == reading)),
                "every": every,
            }
        )
    return out


def _unwinnable(rep: Report) -> list[dict]:
    """Per chess population and edition: by time-control class, the games lost on time whose
    winner could not mate (of the games lost on time), the unknown answers, the games with a
    dead position (of all games) and those played on after it (of the games with one)."""
    t = rep.tables.get("unwinnable_by_time_control")
    out: list[dict] = []
    if t is None or t.height == 0:
        return out
    for gt, plat in rep.populations:
        if gt != "chess":
            continue
        tables = []
        for ed in rep.editions.get("chess", []):
            sub = t.filter((pl.col("platform") == plat) & (pl.col("edition") == ed))
            rows = []
            for r in sub.iter_rows(named=True):
                if not r["games"]:
                    continue
                rows.append(
                    {
                        "cls": r["time_control_class"],
                        "games": f"{r['games']:,}",
                        "cells": [
                            _cell(
                                r["timeout_unwinnable"], r["lost_on_time"], of="lost on time", none="none lost on time"
                            ),
                            _cell(r["timeout_unknown"], r["lost_on_time"], of="lost on time", none="none lost on time"),
                            _cell(r["dead_position"], r["games"]),
                            _cell(
                                r["played_on_after_dead"], r["dead_position"], of="with one", none="no dead position"
                            ),
                        ],
                    }
                )
            fide = ed != "lichess"
            tables.append(
                {
                    "edition": ed,
                    "test": "FIDE 6.9: no series of legal moves mates" if fide else "Lichess: insufficient material",
                    "rows": rows,
                }
            )
        out.append({"platform": platform_label(plat), "tables": tables})
    return out


def _mix_notes(rep: Report) -> dict[str, dict]:
    """Per chess platform: the shifts of its time-control mix, for the note above its trend."""
    out: dict[str, dict] = {}
    sh = rep.table("mix_shifts").filter(pl.col("game_type") == "chess")
    for plat, grp in sh.group_by("platform", maintain_order=True):
        rows = grp.sort("distance", descending=True)
        kind = rows["period_kind"][0]
        largest = rows["text"].to_list()[:3]
        by_time = grp.sort("period_from")["text"].to_list()
        out[plat[0]] = {
            "n": rows.height,
            "word": kind + ("s" if kind else ""),
            "largest": largest,
            "latest": by_time[-1] if by_time[-1] not in largest else None,
            "all": by_time,
        }
    return out


def _title(rep: Report) -> tuple[str, str]:
    """The page's title and the date range, from the data: the games analyzed per kind, the
    platforms, the years of the dated games."""
    pop = rep.table("summary_by_population")
    parts = []
    for gt in rep.editions:
        n = pop.filter(pl.col("game_type") == gt).group_by("platform").agg(pl.col("games").max())["games"].sum()
        if n:
            parts.append(f"{n:,} {GAME_TYPE_LABELS.get(gt, gt)} games")
    if not parts:
        return "Draw rules: no analyzed games", ""
    plats = [platform_label(p) for p in dict.fromkeys(p for _, p in rep.populations)]
    months = rep.table("summary_cube")["month"].drop_nulls()
    years = ""
    dates = ""
    if len(months):
        lo, hi = months.min(), months.max()
        assert isinstance(lo, _dt.date) and isinstance(hi, _dt.date)
        years = f"{lo.year}–{hi.year}" if lo.year != hi.year else str(lo.year)
        dates = f"{lo.isoformat()[:7]} to {hi.isoformat()[:7]}"
    title = "Draw rules in " + " and ".join(parts) + " (" + ", ".join(plats) + (f"; {years}" if years else "") + ")"
    return title, dates


def partial_text(p: dict) -> str:
    """ "partial: N of about M games of source S" for an unfinished source (M estimated from the
    share of its input read, when known)."""
    of = f" of about {p['expected_games']:,}" if p.get("expected_games") else ""
    return f"source {p['source']}: {p['games']:,}{of} games ({p['note']})"


def _edition_label(rep: Report, ed: str) -> str:
    return ed + (" (counterfactual)" if ed in rep.collected.counterfactual else "")


def _values(rep: Report) -> dict:
    """The section on what the position was worth at the rule events (tablebase, [%eval])."""
    out: dict = {"move_draws": [], "first_chance": [], "endings": [], "win_chance": []}
    t = rep.tables
    md = t.get("value_move_draws")
    if md is not None and md.height:
        for r in md.filter(pl.col("game_type") == "chess").iter_rows(named=True):
            out["move_draws"].append(
                {
                    "platform": platform_label(r["platform"]),
                    "edition": _edition_label(rep, r["edition"]),
                    "rule": "75 moves" if r["rule"] == "seventyfive" else "50 moves",
                    "games": f"{r['move_draws']:,}",
                    "cells": [
                        _cell(r["with_tb_value"], r["move_draws"], of="move-count draws"),
                        _cell(r["tb_win"], r["with_tb_value"], of="with a value"),
                        _cell(r["tb_cursed_win"], r["with_tb_value"], of="with a value"),
                        _cell(r["win_in_time"], r["with_tb_value"], of="with a value"),
                    ],
                }
            )
    fc = t.get("value_first_chance")
    if fc is not None and fc.height:
        for r in fc.filter(pl.col("game_type") == "chess").iter_rows(named=True):
            out["first_chance"].append(
                {
                    "platform": platform_label(r["platform"]),
                    "edition": _edition_label(rep, r["edition"]),
                    "tb": r["tb"],
                    "games": f"{r['tb_win_at_first_chance']:,}",
                    "cells": [
                        _cell(r["given_away"], r["tb_win_at_first_chance"], of="tablebase wins"),
                        _cell(r["given_away_drawn"], r["tb_win_at_first_chance"]),
                        _cell(r["given_away_lost"], r["tb_win_at_first_chance"]),
                        _cell(r["win_in_time"], r["tb_win_at_first_chance"]),
                    ],
                }
            )
    e8 = t.get("endings_1988")
    if e8 is not None and e8.height:
        eds = [e for e in rep.editions.get("chess", []) if e in set(e8["edition"].to_list())]
        out["ending_editions"] = [_edition_label(rep, e) for e in eds]
        for (plat, ending), grp in e8.filter(pl.col("game_type") == "chess").group_by(
            "platform", "ending", maintain_order=True
        ):
            rows = {r["edition"]: r for r in grp.iter_rows(named=True)}
            games = max(r["games"] for r in rows.values())
            cols = []
            for ed in eds:
                er = rows.get(ed)
                if er is None:
                    cols.append([{"text": "–", "ci": "", "muted": True}] * 4)
                    continue
                cols.append(
                    [
                        _cell(er["fifty_chance"], er["games"]),
                        _cell(er["fifty_claimed"], er["games"]),
                        _cell(er["automatic_draw"], er["games"]),
                        _cell(er["final_win_in_time"], er["final_tb_winner"], none="no value"),
                    ]
                )
            out["endings"].append(
                {
                    "platform": platform_label(plat),
                    "ending": ending + (" (any pawn rank)" if ending == "KQPvKQ" else ""),
                    "games": f"{games:,}",
                    "cols": cols,
                }
            )
    wc = t.get("missed_by_win_chance")
    if wc is not None and wc.height:
        for r in wc.filter((pl.col("game_type") == "chess") & (pl.col("time_control_class") == "all")).iter_rows(
            named=True
        ):
            out["win_chance"].append(
                {
                    "platform": platform_label(r["platform"]),
                    "edition": _edition_label(rep, r["edition"]),
                    "bin": r["bin"],
                    "cells": [_cell(r["missed"], r["chances"], of="chances")],
                }
            )
    out["any"] = any(out[k] for k in ("move_draws", "first_chance", "endings", "win_chance"))
    return out


def _left_out(rep: Report) -> str:
    """What --exclude-data-issues left out: "N games (id: n, ...)", or "" when nothing was."""
    if not rep.excluded_issues:
        return ""
    cov = rep.table("coverage")
    if not cov.height or "games_left_out" not in cov.columns:
        return "no game"
    hit = cov.filter(pl.col("games_left_out") > 0)
    total = int(hit["games_left_out"].sum()) if hit.height else 0
    by = hit.group_by("data_issue").agg(pl.col("games_left_out").sum()).sort("data_issue")
    parts = ", ".join(f"{i}: {n:,}" for i, n in by.iter_rows())
    return f"{total:,} games" + (f" ({parts})" if parts else "")


def render(
    rep: Report, out_dir: str, figures: list[dict], files: list[dict], games: dict[str, str] | None = None
) -> str:
    """The page. figures: per figure its title, caption, files and inline SVG per layout
    ("wide", "narrow"); games: example game key (source#index) -> its page, relative."""
    games = games or {}
    cov = rep.table("coverage")
    read = int(cov["games"].sum()) if cov.height else 0
    ok = int(cov.filter(pl.col("status") == "ok")["games"].sum()) if cov.height else 0
    figs = {f["name"]: f for f in figures}
    title, dates = _title(rep)
    cube = rep.table("summary_cube")
    undated = 0
    if cube.height:
        first = cube.group_by("game_type").agg(pl.col("edition").first())
        und = cube.join(first, on=["game_type", "edition"], how="semi").filter(pl.col("month").is_null())
        undated = int(und["games"].sum())
    mix = _mix_notes(rep)
    ctx = {
        "title": title,
        "dates": dates,
        "undated": f"{undated:,}",
        "out_dir": out_dir if "://" in out_dir else os.path.abspath(out_dir),
        "generated": _dt.datetime.now().isoformat(timespec="seconds"),
        "n_sources": len(rep.collected.sources),
        "sources": rep.collected.sources[:12],
        "more_sources": max(0, len(rep.collected.sources) - 12),
        "platforms": [platform_label(p) for p in dict.fromkeys(p for _, p in rep.populations)],
        "editions": [
            {"game_type": GAME_TYPE_LABELS.get(g, g), "editions": ", ".join(_edition_label(rep, x) for x in e)}
            for g, e in rep.editions.items()
        ],
        "games_read": f"{read:,}",
        "games_ok": f"{ok:,}",
        "empty": not rep.populations,
        "min_games": stats.MIN_GAMES,
        "mix_shift": round(100 * periods.MIX_SHIFT),
        "headline": _headline(rep),
        "identical": _identical(rep),
        "measures": [
            {"name": m.name, "label": m.label, "unit": m.unit, "k": m.k, "n": m.n, "of": m.of} for m in MEASURES
        ],
        "chess_table": _population_table(rep, "chess"),
        "pairs": _pairs(rep, games),
        "fig": figs,
        "trends": [
            {
                "platform": platform_label(p),
                "trend": figs.get(f"trend_chess_{p}"),
                "by_class": figs.get(f"trend_by_class_chess_{p}"),
                "mix": mix.get(p),
            }
            for g, p in rep.populations
            if g == "chess" and figs.get(f"trend_chess_{p}")
        ],
        "time_controls": _time_controls(rep),
        "missed_by_class": _missed_by_class(rep),
        "unwinnable": _unwinnable(rep),
        "denominators": {m.name: m.of for m in MEASURES},
        "draughts": [
            dict(
                _draughts(rep, g),
                outcomes=figs.get(f"outcomes_{g}"),
                rules=figs.get(f"rules_{g}"),
                trends=[f for f in figures if f["name"].startswith(f"trend_{g}_")],
            )
            for g in rep.editions
            if g != "chess"
        ],
        "audit": _audit(rep, games),
        "values": _values(rep),
        "files": files,
        "partial": [{"text": partial_text(p)} for p in rep.partial],
        "left_out": _left_out(rep),
    }
    return env().get_template("report.html.j2").render(**ctx)
