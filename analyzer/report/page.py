"""The HTML page: a Jinja2 template (templates/report.html.j2, autoescaped) filled with text
prepared here from the report's tables."""

from __future__ import annotations

import datetime as _dt
import os

import jinja2
import polars as pl

from analyzer.report import stats
from analyzer.report.collect import AUDIT_KINDS
from analyzer.report.model import (
    DRAUGHTS_RULES,
    GAME_TYPE_LABELS,
    MEASURES,
    RULE_LABELS,
    Report,
    applies,
    platform_label,
    primary_class,
)

AUDIT_LABELS = {
    "continued_past_automatic_draw": "play went on past an automatic draw",
    "decisive_after_automatic_draw": "a decisive result after an automatic draw",
    "lichess_agreement_after_claimable_draw": "a Lichess “Normal” draw by agreement after an earlier claimable draw",
}


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("analyzer.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def _cell(k, n, applicable=True) -> dict:
    """A table cell: 'k of n (p %)' and its interval; 'n/a' / 'no games'."""
    if not applicable:
        return {"text": "n/a", "ci": "", "muted": True}
    if not n:
        return {"text": "no games", "ci": "", "muted": True}
    return {"text": stats.count_pct(int(k), int(n)), "ci": stats.ci_text(int(k), int(n)), "muted": False}


def _headline(rep: Report) -> list[dict]:
    s = rep.table("summary_by_population")
    audit = rep.table("audit_summary")
    cards = []
    for gt, plat in rep.populations:
        items = []
        games = 0
        for m in MEASURES:
            cls = primary_class(rep, gt, plat, m.name)
            if cls is None:
                continue
            r = s.filter((pl.col("game_type") == gt) & (pl.col("platform") == plat) & (pl.col("edition") == cls.key))
            if r.height == 0:
                continue
            rec = r.row(0, named=True)
            games = max(games, rec["games"])
            items.append({"label": m.label, "series": cls.label, **_cell(rec[m.k], rec[m.n], applies(cls.key, m))})
        if gt == "chess":
            a = audit.filter(pl.col("platform") == plat) if audit.height else audit
            if a.height and a["games_audited"][0]:
                row = a.row(0, named=True)
                k = sum(row[x] or 0 for x in AUDIT_KINDS)
                items.append(
                    {
                        "label": "audit: games whose recorded result contradicts the edition in force",
                        "series": "edition in force",
                        **_cell(k, row["games_audited"]),
                    }
                )
            else:
                items.append(
                    {
                        "label": "audit: games whose recorded result contradicts the edition in force",
                        "series": "",
                        "text": "not audited",
                        "ci": "",
                        "muted": True,
                    }
                )
        cards.append(
            {
                "title": f"{platform_label(plat)} · {GAME_TYPE_LABELS.get(gt, gt)}",
                "games": f"{games:,} analyzed games",
                "items": items,
            }
        )
    return cards


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


def _pairs(rep: Report) -> list[dict]:
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
            links = [u for u in (r["examples"] or "").split(" ") if u]
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
    from analyzer.report.figures import _rule_applies

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
        ok = _rule_applies(r["edition"], r["rule"])
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


def _audit(rep: Report) -> dict:
    a = rep.table("audit_summary")
    rows = []
    for r in a.iter_rows(named=True):
        cells = []
        for k in AUDIT_KINDS:
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
            flagged.append(
                {
                    "kind": AUDIT_LABELS[r["kind"]],
                    "source": r["source"],
                    "game_index": r["game_index"],
                    "in_force": r["in_force"],
                    "date": str(r["date"] or ""),
                    "site": site,
                    "url": site if site.startswith(("http://", "https://")) else None,
                    "players": f"{r['white'] or '?'} – {r['black'] or '?'}",
                    "result": r["result"] or "",
                    "end": f"{r['end_rule']} at ply {r['end_ply']}" if r["end_ply"] is not None else "",
                    "plies": r["plies"],
                }
            )
    return {"rows": rows, "kinds": [AUDIT_LABELS[k] for k in AUDIT_KINDS], "flagged": flagged, "n_flagged": g.height}


def _name(out_dir: str) -> str:
    """The last component of OUT (a folder or a URL)."""
    if "://" in out_dir:
        return out_dir.rstrip("/").rsplit("/", 1)[-1] or out_dir
    return os.path.basename(os.path.abspath(out_dir)) or out_dir


def render(rep: Report, out_dir: str, figures: list[dict], files: list[dict]) -> str:
    cov = rep.table("coverage")
    read = int(cov["games"].sum()) if cov.height else 0
    ok = int(cov.filter(pl.col("status") == "ok")["games"].sum()) if cov.height else 0
    figs = {f["name"]: f for f in figures}
    ctx = {
        "title": f"Draw rules in {_name(out_dir)}",
        "out_dir": out_dir if "://" in out_dir else os.path.abspath(out_dir),
        "generated": _dt.datetime.now().isoformat(timespec="seconds"),
        "n_sources": len(rep.collected.sources),
        "sources": rep.collected.sources[:12],
        "more_sources": max(0, len(rep.collected.sources) - 12),
        "editions": [
            {"game_type": GAME_TYPE_LABELS.get(g, g), "editions": ", ".join(e)} for g, e in rep.editions.items()
        ],
        "games_read": f"{read:,}",
        "games_ok": f"{ok:,}",
        "empty": not rep.populations,
        "min_games": stats.MIN_GAMES,
        "headline": _headline(rep),
        "identical": _identical(rep),
        "measures": [{"name": m.name, "label": m.label, "unit": m.unit} for m in MEASURES],
        "chess_table": _population_table(rep, "chess"),
        "pairs": _pairs(rep),
        "fig": figs,
        "trend_figs": [f for f in figures if f["name"].startswith("trend_chess_")],
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
        "audit": _audit(rep),
        "files": files,
    }
    return _env().get_template("report.html.j2").render(**ctx)
