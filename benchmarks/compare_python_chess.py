"""Full comparison of the analyzer engine with the python-chess oracle (not in the default tests).

Every game of ``lichess_sample.pgn.zst`` and ``otb_sample.pgn.zst`` (about 81,600) is replayed by
python-chess (``tests/reference.py``, 2 worker processes) and by ``analyzer.api.analyze_bytes``;
per game we compare the ``fide_2018`` columns, the event set, the per-ply key identity classes,
halfmove clocks and ``%clk`` clocks. Prints counts and a final one-line JSON summary.

Games are cut the way a tag-section reader cuts them (a game starts at a tag line that does not
follow another tag line). python-chess instead ends a game at two consecutive blank lines after
the tags, so it reads the 7 OTB games with two blank lines between tags and movetext as two games
each (see the data MANIFEST). For those the oracle is run on the same text with the extra blank
line removed, and they are listed as "split differently".

Usage::

    python benchmarks/compare_python_chess.py                # both samples, engine vs oracle
    python benchmarks/compare_python_chess.py --oracle-only  # oracle + MANIFEST figures only
    python benchmarks/compare_python_chess.py --limit 2000 FILE...

Exit status 0 only when every game was compared and nothing differs.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))


import reference as ref  # noqa: E402

DATA = os.environ.get("ANALYZER_SHARED_DATA", os.path.join(HERE, "..", "..", "shared", "data"))
DEFAULT_FILES = [os.path.join(DATA, "lichess_sample.pgn.zst"), os.path.join(DATA, "otb_sample.pgn.zst")]

# MANIFEST.md, "Repetition / move-counter facts found in the data (FIDE legal-ep keys)".
MANIFEST_FIGURES = {
    "otb_sample.pgn.zst": {
        "position occurred 3 times": 2004,
        "...ended on that ply with a draw": 1448,
        "...game continued": 556,
        "...then decided 1-0/0-1": 65,
        "fivefold reached": 8,
        "halfmove clock reached 100": 40,
        "...clock 100, game continued": 24,
        "halfmove clock reached 150": 2,
        "pseudo-legal but illegal ep target": 21,
        "games with an en-passant capture": 1747,
    },
    "lichess_sample.pgn.zst": {
        "position occurred 3 times": 1163,
        "...ended on that ply with a draw": 1088,
        "...game continued": 75,
        "...then decided 1-0/0-1": 24,
        "fivefold reached": 6,
        "halfmove clock reached 100": 18,
        "...clock 100, game continued": 0,
        "halfmove clock reached 150": 0,
        "pseudo-legal but illegal ep target": 20,
        "games with an en-passant capture": 1825,
    },
}

# Globals inherited by the forked workers.
_DATA: dict = {}  # source -> bytes
_BOUNDS: dict = {}  # source -> [(start, end)]
_ENGINE: dict = {}  # source -> EngineView or None


class EngineView:
    """Engine result kept as columns/arrays; one EngineGame built on demand."""

    def __init__(self, res):
        import numpy as np

        # one games row per game; the rule columns of the edition compared are in verdicts
        verdicts = {v["game_index"]: v for v in res.verdicts.to_pylist() if v["edition"] == ref.EDITION}
        games = [{**g, **verdicts.get(g["game_index"], {})} for g in res.games.to_pylist()]
        games.sort(key=lambda g: g["game_index"])
        self.games = games
        self.row_of_offset = {g["byte_offset"]: i for i, g in enumerate(games)}
        self.events = collections.defaultdict(list)
        if res.events is not None and res.events.num_rows:
            cols = {k: res.events.column(k).to_pylist() for k in ref.EVENT_FIELDS + ("game_index", "edition")}
            for j in range(res.events.num_rows):
                if cols["edition"][j] not in (ref.EDITION, None):
                    continue
                self.events[cols["game_index"][j]].append(
                    tuple(ref.f32(cols[k][j]) if k == "clock_seconds" else cols[k][j] for k in ref.EVENT_FIELDS)
                )
        facts = res.facts
        self.off = np.asarray(facts["game_offsets"], dtype=np.int64)
        self.keys = np.asarray(facts["key"]).astype(np.uint64)
        self.hmc = np.asarray(facts["halfmove_clock"])
        self.clk = np.asarray(facts["clock_seconds"]) if "clock_seconds" in facts else None
        self.facts_ok = len(self.off) == len(games) + 1

    def game(self, row: int) -> ref.EngineGame:
        import numpy as np

        g = self.games[row]
        all_evs = self.events.get(g["game_index"], [])
        evs = sorted((x for x in all_evs if x[1] in ref.EVENT_RULES), key=ref._event_sort_key)
        eg = ref.EngineGame(
            status=g["status"], error=g.get("error"), columns=g, events=evs, byte_offset=g.get("byte_offset")
        )
        eg.other_events = len(all_evs) - len(evs)
        if self.facts_ok:
            a, b = int(self.off[row]), int(self.off[row + 1])
            eg.keys = [int(k) for k in self.keys[a:b]]
            eg.halfmove_clock = [int(h) for h in self.hmc[a:b]]
            if self.clk is not None:
                eg.clock = [None if c != c else float(np.float32(c)) for c in self.clk[a:b]]
        return eg


def _rejoin_tags_and_movetext(text: str) -> str:
    """Remove blank lines between the tag section and the movetext (python-chess reads a second
    blank line there as the end of the game)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and (lines[i].lstrip().startswith("[") or not lines[i].strip()):
        if not lines[i].strip():
            # blank line inside/after the tag section: find whether tags continue
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j].lstrip().startswith("["):
                i = j
                continue
            return "\n".join(lines[:i] + [""] + lines[j:])
        i += 1
    return text


def _stats_for(o: ref.GameOracle) -> collections.Counter:
    c = collections.Counter()
    c["games"] += 1
    res = o.headers.get("Result")
    ft = o.columns["first_threefold_ply"]
    if ft is not None:
        c["position occurred 3 times"] += 1
        if ft == o.plies and res == "1/2-1/2":
            c["...ended on that ply with a draw"] += 1
        if ft < o.plies:
            c["...game continued"] += 1
            if res in ("1-0", "0-1"):
                c["...then decided 1-0/0-1"] += 1
    if o.columns["first_fivefold_ply"] is not None:
        c["fivefold reached"] += 1
    mx = max(o.halfmove_clock)
    if mx >= 100:
        c["halfmove clock reached 100"] += 1
        first100 = next(p for p, h in enumerate(o.halfmove_clock) if h >= 100)
        if first100 < o.plies:
            c["...clock 100, game continued"] += 1
    if mx >= 150:
        c["halfmove clock reached 150"] += 1
    if o.illegal_ep_plies:
        c["pseudo-legal but illegal ep target"] += 1
    if o.ep_captures:
        c["games with an en-passant capture"] += 1
    if o.columns["first_missed_claim_ply"] is not None:
        c["missed claim"] += 1
    if o.columns["draw_reason"] is not None:
        c["draw_reason=" + o.columns["draw_reason"]] += 1
    if o.chess960:
        c["chess960"] += 1
    if o.errors:
        c["python-chess errors"] += 1
    return c


def _work(task):
    source, lo, hi, compare = task
    data = _DATA[source]
    bounds = _BOUNDS[source]
    view = _ENGINE.get(source)
    stats = collections.Counter()
    mismatches = []  # (source, index, Mismatch, fen, describe)
    split = []  # (source, index, offset, n games python-chess read, describe)
    unmatched = []
    offsets_differ = 0
    for gi in range(lo, hi):
        start, end = bounds[gi]
        text = data[start:end].decode("utf-8", errors="replace")
        games = list(ref.read_games(text))
        if len(games) != 1:
            split.append((source, gi, start, len(games), text[:200].replace("\n", " | ")))
            games = list(ref.read_games(_rejoin_tags_and_movetext(text)))
            if len(games) != 1:
                stats["oracle could not read"] += 1
                mismatches.append((source, gi, ref.Mismatch(gi, "oracle_read", None, 1, len(games)), "", text[:200]))
                continue
        o = ref.analyze_game(games[0], gi)
        stats.update(_stats_for(o))
        if not compare:
            continue
        row = gi if gi < len(view.games) and view.games[gi]["byte_offset"] == start else view.row_of_offset.get(start)
        if row is None:
            if gi < len(view.games):
                row = gi
                offsets_differ += 1
            else:
                unmatched.append((source, gi, start))
                continue
        eg = view.game(row)
        if eg.status == "no_moves" and o.plies == 0:
            stats["no_moves games (0 plies in python-chess too)"] += 1
        if eg.status != "ok" and o.chess960:
            stats["chess960 not analyzed by engine (allowed)"] += 1
            continue
        ms = ref.compare_game(o, eg)
        stats["compared"] += 1
        if eg.other_events:
            stats["engine events of other rules (offer...), not compared"] += eg.other_events
        if ms:
            stats["games with mismatches"] += 1
            for m in ms:
                stats["mismatch:" + m.what] += 1
            for m in ms[:4]:
                fen = o.fen_at(m.ply) if m.ply is not None and 0 <= m.ply <= o.plies else ""
                mismatches.append((source, gi, m, fen, o.describe()))
    if offsets_differ:
        stats["engine byte_offset differs from cut (matched by index)"] += offsets_differ
    return source, stats, mismatches[:200], split, unmatched


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", default=DEFAULT_FILES)
    ap.add_argument("--oracle-only", action="store_true", help="skip the engine, print oracle figures")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="first N games of each file")
    ap.add_argument("--show", type=int, default=15, help="mismatch lines to print")
    args = ap.parse_args(argv)

    t0 = time.time()
    summary = {"files": {}, "seconds": {}}
    tasks = []
    for path in args.files:
        source = os.path.basename(path)
        data = ref.read_bytes(path)
        bounds = ref.split_games(data)
        if args.limit:
            bounds = bounds[: args.limit]
            data = data[: bounds[-1][1]] if bounds else b""
        _DATA[source] = data
        _BOUNDS[source] = bounds
        print(f"{source}: {len(data):,} bytes, {len(bounds):,} games (tag-section cut)", flush=True)
    summary["seconds"]["read"] = round(time.time() - t0, 1)

    compare = not args.oracle_only
    if compare:
        from analyzer.api import analyze_bytes  # must exist: a missing engine is a failure

        for source, data in _DATA.items():
            t = time.time()
            res = analyze_bytes(data, source=source, editions=(ref.EDITION,), keep_facts=True)
            _ENGINE[source] = EngineView(res)
            dt = time.time() - t
            summary["seconds"][f"engine:{source}"] = round(dt, 1)
            n = len(_ENGINE[source].games)
            st = collections.Counter(g["status"] for g in _ENGINE[source].games)
            print(f"engine {source}: {n:,} games in {dt:.1f}s, status {dict(st)}", flush=True)
            del res

    for source, bounds in _BOUNDS.items():
        step = 400
        for lo in range(0, len(bounds), step):
            tasks.append((source, lo, min(lo + step, len(bounds)), compare))

    t = time.time()
    total = collections.defaultdict(collections.Counter)
    mismatches, split, unmatched = [], [], []
    ctx = mp.get_context("fork")
    with ctx.Pool(args.workers) as pool:
        for source, stats, ms, sp, um in pool.imap_unordered(_work, tasks):
            total[source].update(stats)
            mismatches.extend(ms)
            split.extend(sp)
            unmatched.extend(um)
    summary["seconds"]["oracle+compare"] = round(time.time() - t, 1)
    return _report(args, summary, total, mismatches, split, unmatched, compare, t0)


def _report(args, summary, total, mismatches, split, unmatched, compare, t0) -> int:
    agg = collections.Counter()
    for c in total.values():
        agg.update(c)
    print()
    print("== oracle figures (python-chess, FIDE legal-ep keys) ==")
    sources = sorted(total)
    print(f"  {'':55s} " + " ".join(f"{s[:22]:>22s}" for s in sources))
    for k in sorted(agg):
        if not k.startswith("mismatch:"):
            print(f"  {k:55s} " + " ".join(f"{total[s][k]:>22,}" for s in sources))
    print()
    print("== oracle vs the data MANIFEST's 'Repetition / move-counter facts' (independent figures) ==")
    for source in sources:
        exp = MANIFEST_FIGURES.get(source)
        if not exp or args.limit:
            continue
        for k, v in exp.items():
            got = total[source][k]
            print(f"  {source:24s} {k:45s} manifest {v:>7,}  oracle {got:>7,}  {'ok' if v == got else 'DIFFERS'}")
    print()
    print(f"== games split differently (python-chess reads != 1 game per tag section): {len(split)} ==")
    for source, gi, off, n, head in split:
        print(f"  {source} #{gi} (1-based {gi + 1}) offset {off}: python-chess read {n} games; {head[:110]}")
    if compare:
        print()
        print(
            f"== engine comparison: {agg['compared']:,} games compared, "
            f"{agg['games with mismatches']:,} with mismatches, {len(unmatched)} unmatched =="
        )
        for k in sorted(agg):
            if k.startswith("mismatch:"):
                print(f"  {k:55s} {agg[k]:>8,}")
        for shown, (source, gi, m, fen, desc) in enumerate(sorted(mismatches, key=lambda x: (x[0], x[1]))):
            if shown >= args.show:
                break
            print(
                f"  {source} game {gi} ({desc[:80]}): {m.what} ply={m.ply} fen={fen!r} "
                f"expected {m.expected!r} got {m.got!r}"
            )
        for source, gi, off in unmatched[:10]:
            print(f"  unmatched: {source} game {gi} offset {off} (no engine game there)")
    summary.update(
        games=sum(len(b) for b in _BOUNDS.values()),
        compared=agg["compared"] if compare else 0,
        games_with_mismatches=agg["games with mismatches"] if compare else None,
        mismatches={k[9:]: v for k, v in agg.items() if k.startswith("mismatch:")},
        split_differently=[
            {"source": s, "game_index": gi, "byte_offset": off, "python_chess_games": n} for s, gi, off, n, _ in split
        ],
        unmatched=len(unmatched),
        chess960_skipped=agg["chess960 not analyzed by engine (allowed)"],
        oracle={s: {k: v for k, v in total[s].items() if not k.startswith("mismatch:")} for s in sources},
        engine_compared=compare,
    )
    summary["seconds"]["total"] = round(time.time() - t0, 1)
    for path in args.files:
        summary["files"][os.path.basename(path)] = len(_BOUNDS[os.path.basename(path)])
    print()
    print(json.dumps(summary, sort_keys=True))
    if not compare:
        return 0
    ok = (
        agg["games with mismatches"] == 0
        and not unmatched
        and agg["compared"] + agg["chess960 not analyzed by engine (allowed)"] == summary["games"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
