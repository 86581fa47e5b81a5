"""Long fuzz run: mutated real games must never crash the analysis or lose a game.

Inputs are slices of 1-6 consecutive games of ``../shared/data/lichess_small.pgn`` and
``edge_cases.pgn``, mutated by truncation, byte flips, insertions (random bytes and PGN syntax:
braces, parentheses, tag openers, line ends, result tokens, ``%``/``;`` lines, NUL, 0xFF, ...),
deletions and duplications, one to three at a time. Each mutated text is analyzed by the
streaming reader (``analyzer.engine.region.analyze_chunks``) with random block sizes and chunking, and
2% are also written gzip/zstd/bz2-compressed, the *compressed* bytes damaged, and run through the
whole batch job (``analyzer.engine.run_scan``: units, Parquet parts, summary).

Checked for every input (see `check`):

- no exception (a crash);
- exactly one row per game and edition the run counts; game_index 0..n-1; byte offsets strictly
  increasing inside the text; statuses known; an error message for every non-ok status, naming
  the ply for move errors, with ``plies == error_ply``;
- "nothing lost": every game of the unmutated input whose bytes the mutation did not touch (nor
  the byte before, nor the rest of the line after the edit and the next line break) is found at
  its shifted byte offset with the same row (all columns but game_index/byte_offset). A game
  that is only weakly delimited (no tag line after a blank line, e.g. a game without tags, which
  starts after the previous game's result) counts as touched when the game before it is touched,
  and so does the game just before a touched one when it has no termination marker (its movetext
  may legitimately absorb the damaged text).

Numba bounds checking is on (``NUMBA_BOUNDSCHECK=1`` with a private ``NUMBA_CACHE_DIR``) unless
``--no-boundscheck``. Usage::

    python benchmarks/fuzz.py --inputs 100000 --workers 2 --seed 1
    python benchmarks/fuzz.py --serve        # request/response server used by tests/test_mutations.py

Prints progress, then one JSON line: inputs, crashes, games_lost, games_changed, invariant
violations, seconds. Failing inputs are saved under ``--save-dir``. Exit 0 only when all are 0.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import random
import re
import struct
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "data")
CORPUS_FILES = ("lichess_small.pgn", "edge_cases.pgn")
EDITIONS = ("fide_2018", "lichess")

# Columns that identify where a row is, not what it says.
POSITION_COLUMNS = ("game_index", "byte_offset")
MOVE_ERRORS = ("illegal_move", "ambiguous_move", "bad_token", "unterminated")

INSERTS = [
    b"{",
    b"}",
    b"(",
    b")",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b'[Event "',
    b"[",
    b"]",
    b'"',
    b"\\",
    b"%",
    b"\n%",
    b";",
    b"\n;",
    b"\x00",
    b"\xff",
    b"\xef\xbb\xbf",
    b"--",
    b"$1",
    b"!?",
    b"1-0",
    b"0-1",
    b"1/2-1/2",
    b"*",
    b" 1-0\n\n",
    b"0-0",
    b"O-O-O",
    b"=Q",
    b"e8=Q",
    b"1...",
    b"1.",
    b"...",
    b'\n[Event "x"]\n',
    b'\n\n[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]\n',
    b'[Variant "Atomic"]',
    b"{ [%clk 0:00:01] }",
    b"\t",
    b" ",
    b"Z0",
    b"e.p.",
    b"#",
    b"+",
]

_ENDS_WITH_RESULT = re.compile(rb"(?:1-0|0-1|1/2-1/2|\*)\s*$")


# ---------------------------------------------------------------------------------------------
# Corpus and mutations (pure Python, shared with tests/test_mutations.py)


def load_games(path: str) -> list[bytes]:
    """The games of a PGN file as byte strings (cut before every '[Event ' at a line start)."""
    with open(path, "rb") as fh:
        data = fh.read()
    starts = [m.start() for m in re.finditer(rb"(?m)^\[Event ", data)]
    if not starts or starts[0] != 0:
        starts = [0] + starts
    return [data[a:b] for a, b in zip(starts, starts[1:] + [len(data)])]


def _corpus_path(name: str) -> str:
    """The repository's copy (tests/fixtures/data, zstd) or the shared sample."""
    packed = os.path.join(ROOT, "tests", "fixtures", "data", name + ".zst")
    if os.path.exists(packed):
        import tempfile

        import zstandard

        out = os.path.join(tempfile.gettempdir(), f"analyzer-fuzz-{os.getuid()}-{name}")
        if not os.path.exists(out):
            with open(packed, "rb") as src, open(out + f".{os.getpid()}", "wb") as dst:
                zstandard.ZstdDecompressor().copy_stream(src, dst)
            os.replace(out + f".{os.getpid()}", out)
        return out
    return os.path.join(SHARED, name)


def corpus() -> dict[str, list[bytes]]:
    return {name: load_games(_corpus_path(name)) for name in CORPUS_FILES}


def apply_mutations(text: bytes, muts: list[tuple[int, int, bytes]]):
    """Apply (x, y, replacement) edits, given in original coordinates and not overlapping.
    Returns (new text, touched ranges [(x, y)] in original coordinates, sorted)."""
    muts = sorted(muts, key=lambda m: m[0])
    out = []
    pos = 0
    ranges = []
    for x, y, rep in muts:
        x = max(x, pos)
        y = max(min(y, len(text)), x)
        out.append(text[pos:x])
        out.append(rep)
        ranges.append((x, y, len(rep)))
        pos = y
    out.append(text[pos:])
    return b"".join(out), ranges


def disjoint(edits: list) -> list:
    """The edits (start, end, bytes) in order of position, each overlapping an earlier one
    dropped, so that they can be applied one after the other without touching each other."""
    edits = sorted(edits, key=lambda m: (m[0], m[1]))
    kept = []
    end = -1
    for m in edits:
        if m[0] > end:
            kept.append(m)
            end = max(m[1], m[0])
    return kept


def random_mutations(rng: random.Random, text: bytes) -> list[tuple[int, int, bytes]]:
    n = len(text)
    if n == 0:
        return [(0, 0, rng.choice(INSERTS))]
    k = rng.choice((1, 1, 1, 2, 3))
    muts = []
    for _ in range(k):
        kind = rng.choice(("truncate", "flip", "flip", "insert", "insert", "delete", "dup", "random"))
        x = rng.randrange(n)
        if kind == "truncate":
            muts.append((x, n, b""))
        elif kind == "flip":
            muts.append((x, x + 1, bytes([text[x] ^ (1 << rng.randrange(8))])))
        elif kind == "insert":
            muts.append((x, x, rng.choice(INSERTS)))
        elif kind == "delete":
            muts.append((x, min(n, x + rng.choice((1, 1, 2, 5, 20, 200))), b""))
        elif kind == "dup":
            a = rng.randrange(n)
            muts.append((x, x, text[a : a + rng.randrange(1, 300)]))
        else:
            muts.append((x, x + rng.randrange(0, 4), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))))
    return disjoint(muts)


# ---------------------------------------------------------------------------------------------
# The invariants


def spans_of(rows: list[dict], n_text: int) -> list[tuple[int, int]]:
    offs = sorted({r["byte_offset"] for r in rows})
    return [(a, b) for a, b in zip(offs, offs[1:] + [n_text])]


def content(row: dict, loose: bool = False) -> tuple:
    skip = POSITION_COLUMNS + (("error",) if loose else ())
    return tuple((k, row[k]) for k in sorted(row) if k not in skip)


def check_rows(text: bytes, n_games: int, rows: list[dict], editions=EDITIONS) -> list[str]:
    """Accounting and message invariants of one run's rows."""
    from analyzer.codes import STATUSES as STATUS_CODES

    problems = []
    n_ed = len(editions)
    if len(rows) != n_games * n_ed:
        problems.append(f"{len(rows)} rows for {n_games} games x {n_ed} editions")
    for ed in editions:
        rs = [r for r in rows if r["edition"] == ed]
        if [r["game_index"] for r in rs] != list(range(len(rs))):
            problems.append(f"{ed}: game_index not 0..{len(rs) - 1}")
        offs = [r["byte_offset"] for r in rs]
        if any(b <= a for a, b in itertools.pairwise(offs)) or (
            offs and (offs[0] < 0 or offs[-1] >= max(len(text), 1))
        ):
            problems.append(f"{ed}: byte offsets not strictly increasing inside the text: {offs[:20]}")
    for r in rows:
        st = r["status"]
        where = f"game {r['game_index']} at {r['byte_offset']}"
        if st not in STATUS_CODES:
            problems.append(f"{where}: unknown status {st!r}")
        if st not in ("ok", "no_moves") and not r["error"]:
            problems.append(f"{where}: status {st} without an error message")
        if st in MOVE_ERRORS:
            if r["error_ply"] is None or f"at ply {r['error_ply']}" not in r["error"]:
                problems.append(
                    f"{where}: {st} message does not name the ply: {r['error']!r} (error_ply {r['error_ply']})"
                )
            elif r["plies"] != r["error_ply"]:
                problems.append(f"{where}: plies {r['plies']} != error_ply {r['error_ply']}")
    return problems


def untouched_games(text: bytes, base_rows: list[dict], ranges) -> list[tuple[int, int, int]]:
    """(original offset, shifted offset, original game number) of the games the edits left alone."""
    spans = spans_of(base_rows, len(text))
    touched = []
    for a, b in spans:
        t = False
        for x, y, _ in ranges:
            # The edit meets the game, widened by a byte to the left and to the right up to the
            # start of the next line (an edit to the blank line before a game, or a tag line
            # inserted right before it, changes where that game starts).
            yy = _next_break(text, y) + 2
            if a < yy and x - 1 < b:
                t = True
                break
        touched.append(t)
    # Weakly delimited games after a touched one; unterminated games before a touched one.
    for k in range(1, len(spans)):
        if touched[k - 1] and not touched[k]:
            a, _ = spans[k]
            if not _strong_at(text, a):
                touched[k] = True
    for k in range(len(spans) - 2, -1, -1):
        if touched[k + 1] and not touched[k]:
            a, b = spans[k]
            if not _ENDS_WITH_RESULT.search(text[a:b]):
                touched[k] = True
    out = []
    for k, (a, _b) in enumerate(spans):
        if touched[k]:
            continue
        shift = sum(r - (y - x) for x, y, r in ranges if y <= a)
        out.append((a, a + shift, k))
    return out


def _next_break(text: bytes, y: int) -> int:
    ks = [k for k in (text.find(b"\n", y), text.find(b"\r", y)) if k >= 0]
    return min(ks) if ks else len(text)


def _strong_at(text: bytes, a: int) -> bool:
    """The game at offset a starts with a tag line preceded by a blank line (or the text start)."""
    line = text[a : a + 64].lstrip(b" \t")
    if not re.match(rb"\[[A-Za-z0-9_]+[ \t]*\"", line):
        return False
    if a == 0:
        return True
    before = text[max(a - 8, 0) : a]
    return bool(re.search(rb"(?:\r\n|\n|\r)[ \t]*(?:\r\n|\n|\r)[ \t]*$", before)) or before.strip(b" \t") == b""


def check_untouched(text: bytes, base_rows: list[dict], ranges, rows: list[dict]) -> tuple[list[str], int, int]:
    """(problems, games lost, games changed) for the games the edits did not touch."""
    problems = []
    lost = changed = 0
    by_off = {}
    for r in rows:
        by_off[(r["edition"], r["byte_offset"])] = r
    base_by_off = {(r["edition"], r["byte_offset"]): r for r in base_rows}
    eds = sorted({r["edition"] for r in base_rows})
    for a, a2, k in untouched_games(text, base_rows, ranges):
        for ed in eds:
            want = base_by_off[(ed, a)]
            got = by_off.get((ed, a2))
            if got is None:
                lost += 1
                problems.append(f"game {k} (offset {a} -> {a2}, {ed}) lost")
                continue
            loose = want["status"] == "game_too_large" and got["status"] == "game_too_large"
            if content(want, loose) != content(got, loose):
                changed += 1
                diff = {c: (want[c], got[c]) for c in want if c not in POSITION_COLUMNS and want[c] != got[c]}
                problems.append(f"game {k} (offset {a} -> {a2}, {ed}) changed: {diff}")
    return problems, lost, changed


# ---------------------------------------------------------------------------------------------
# Running the analysis (imports analyzer lazily, after the numba environment is set)


def set_numba_env(boundscheck: bool = True, cache_dir: str | None = None) -> None:
    import logging

    logging.getLogger("chess.pgn").setLevel(logging.CRITICAL)  # python-chess logs every bad move
    if boundscheck:
        os.environ["NUMBA_BOUNDSCHECK"] = "1"
        os.environ["NUMBA_CACHE_DIR"] = cache_dir or os.path.join(
            tempfile.gettempdir(), f"analyzer-fuzz-numba-{os.getuid()}"
        )


_EDS: dict = {}


def analyze(
    text: bytes, block_size: int = 8 << 20, chunk: int = 1 << 22, max_game_bytes: int = 16 << 20, editions=EDITIONS
) -> tuple[int, list[dict]]:
    """(games counted, rows) of one text through the streaming reader."""
    from analyzer.engine.region import analyze_chunks
    from analyzer.kinds import resolve_editions as resolve

    editions = tuple(editions)
    if editions not in _EDS:
        _EDS[editions] = resolve(list(editions))
    out = []
    chunks = (text[k : k + chunk] for k in range(0, len(text), chunk))
    stats = analyze_chunks(
        chunks,
        game_type="chess",
        source="fuzz",
        editions=_EDS[editions],
        sink=lambda g, v, e: out.append((g, v)),
        block_size=block_size,
        max_game_bytes=max_game_bytes,
    )
    rows = []
    for g, v in out:  # one row per game and edition: the game's columns and that edition's verdicts
        games = {r["game_index"]: r for r in g.to_pylist()}
        for r in v.to_pylist():
            rows.append({**games[r["game_index"]], **r})
    rows.sort(key=lambda r: (r["edition"], r["game_index"]))
    return stats.games, rows


def run_compressed(text: bytes, rng: random.Random, workdir: str) -> list[str]:
    """Compress, damage the compressed bytes, run the whole batch job; check the summary and
    tables agree. Returns problems."""
    import bz2
    import gzip

    import pyarrow.parquet as pq
    import zstandard

    from analyzer import engine
    from analyzer.kinds import resolve_editions as resolve

    fmt = rng.choice(("gz", "zst", "bz2"))
    comp = {"gz": gzip.compress, "bz2": bz2.compress, "zst": lambda b: zstandard.ZstdCompressor(level=1).compress(b)}[
        fmt
    ](text)
    comp = bytearray(comp)
    what = rng.choice(("truncate", "flip"))
    if what == "truncate":
        comp = comp[: rng.randrange(4, max(len(comp), 5))]
    else:
        for _ in range(rng.randrange(1, 4)):
            x = rng.randrange(4, max(len(comp), 5)) if len(comp) > 4 else 0
            if x < len(comp):
                comp[x] ^= 1 << rng.randrange(8)
    d = tempfile.mkdtemp(dir=workdir)
    src = os.path.join(d, f"g.pgn.{fmt}")
    with open(src, "wb") as fh:
        fh.write(comp)
    cfg = engine.Config(
        out=os.path.join(d, "out"), editions=resolve(["fide_2018"]), unit_text_bytes=rng.choice((1 << 12, 1 << 20))
    )
    problems = []
    try:
        summary, code = engine.run_scan([src], cfg, workers=1, progress_interval=0, progress_mode="none")
    except Exception as exc:  # noqa: BLE001 - InputError for an unreadable input is a clean refusal
        from analyzer.io.sources import InputError

        if not isinstance(exc, (InputError, engine.RunError)):
            problems.append(f"crash in run_scan ({fmt} {what}): {traceback.format_exc()}")
        _rmtree(d)
        return problems
    rows = 0
    for p in _parquets(os.path.join(d, "out", "games")):
        rows += pq.read_metadata(p).num_rows
    if rows != summary["games"]:
        problems.append(f"{fmt} {what}: {rows} rows, summary says {summary['games']} games")
    if summary["units_failed"]:
        problems.append(f"{fmt} {what}: units failed: {summary['units_failed']}")
    if code not in (0, 1) or (code == 0 and summary["damage"]):
        problems.append(f"{fmt} {what}: exit code {code} with damage {summary['damage']}")
    if sum(summary["status"].values()) != summary["games"]:
        problems.append(f"{fmt} {what}: status counts {summary['status']} != games {summary['games']}")
    _rmtree(d)
    return problems


def _parquets(d):
    for base, _, files in os.walk(d):
        for f in files:
            if f.endswith(".parquet"):
                yield os.path.join(base, f)


def _rmtree(d):
    import shutil

    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# One fuzz case, the worker loop and the main program


def fuzz_case(
    base: bytes,
    base_rows_by_max: dict,
    rng: random.Random,
    workdir: str,
    editions=("fide_2018",),
    all_strong: bool = False,
) -> dict:
    """Mutate `base` once and check everything. Returns counts and problems.

    Most runs read the text in one block; some in small blocks and chunks (block boundaries),
    and some with a small maximum game size (oversized games skipped to the next strong start;
    only for bases whose games all start strongly, where that skip passes over nothing else)."""
    muts = random_mutations(rng, base)
    text, ranges = apply_mutations(base, muts)
    block, chunk = 8 << 20, 1 << 22
    if rng.random() < 0.3:
        block = rng.choice((64, 512, 4096, 1 << 16))
        chunk = rng.choice((1, 7, 100, 4096)) if len(text) < 4000 else rng.choice((13, 100, 4096))
    max_game = 1500 if all_strong and rng.random() < 0.15 else 16 << 20
    res = {"crash": 0, "lost": 0, "changed": 0, "violations": 0, "known": 0, "problems": [], "games": 0}
    try:
        n, rows = analyze(text, block, chunk, max_game, editions)
    except Exception:  # noqa: BLE001 - the fuzzer records every crash
        res["crash"] = 1
        res["problems"].append("crash: " + traceback.format_exc())
        res["input"] = (base, muts, block, chunk, max_game)
        return res
    res["games"] = n
    probs = check_rows(text, n, rows, editions)
    res["known"] = sum(p.startswith("KNOWN") for p in probs)
    probs = [p for p in probs if not p.startswith("KNOWN")]
    res["violations"] = len(probs)
    base_rows = base_rows_by_max.get(max_game)
    if base_rows is None:
        base_rows = base_rows_by_max[max_game] = analyze(base, max_game_bytes=max_game, editions=editions)[1]
    p2, lost, changed = check_untouched(base, base_rows, ranges, rows)
    res["lost"] = lost
    res["changed"] = changed
    res["problems"] += probs + p2
    if res["problems"]:
        res["input"] = (base, muts, block, chunk, max_game)
    return res


def _worker(args):
    seed, count, boundscheck, cache_dir, workdir, compressed_rate = args
    set_numba_env(boundscheck, cache_dir)
    rng = random.Random(seed)
    games = corpus()
    names = sorted(games)
    tot = {
        "inputs": 0,
        "crashes": 0,
        "games_lost": 0,
        "games_changed": 0,
        "violations": 0,
        "compressed_runs": 0,
        "compressed_problems": 0,
        "games_analyzed": 0,
        "known_chess960_messages": 0,
    }
    failures = []
    base = None
    base_rows = {}
    for i in range(count):
        if base is None or i % 10 == 0:
            while True:
                name = rng.choice(names)
                gs = games[name]
                a = rng.randrange(len(gs))
                base = b"".join(gs[a : a + rng.randint(1, 5)])
                # Chess960 games go through python-chess (slow): take fewer of them.
                if b'[Variant "Chess960"]' not in base or rng.random() < 0.25:
                    break
            base_rows = {}
            all_strong = name == "lichess_small.pgn"
        if rng.random() < compressed_rate:
            probs = run_compressed(base, rng, workdir)
            tot["compressed_runs"] += 1
            tot["inputs"] += 1
            if probs:
                tot["compressed_problems"] += 1
                failures.append({"problems": probs, "input": base})
            continue
        res = fuzz_case(base, base_rows, rng, workdir, all_strong=all_strong)
        tot["inputs"] += 1
        tot["crashes"] += res["crash"]
        tot["games_lost"] += res["lost"]
        tot["games_changed"] += res["changed"]
        tot["violations"] += res["violations"]
        tot["known_chess960_messages"] += res["known"]
        tot["games_analyzed"] += res["games"]
        if res["problems"]:
            failures.append({"problems": res["problems"], "input": res.get("input")})
    return tot, failures[:50]


def serve(boundscheck: bool, cache_dir: str | None) -> None:
    """Length-prefixed pickles on stdin/stdout: request (text, block, chunk, max_game) ->
    ("ok", games, rows) or ("crash", traceback)."""
    set_numba_env(boundscheck, cache_dir)
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        (size,) = struct.unpack("<Q", head)
        req = pickle.loads(inp.read(size))
        try:
            n, rows = analyze(*req)
            reply = ("ok", n, rows)
        except Exception:  # noqa: BLE001 - every crash goes back to the fuzzer
            reply = ("crash", traceback.format_exc())
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=500, help="inputs per task")
    ap.add_argument("--compressed-rate", type=float, default=0.02)
    ap.add_argument("--no-boundscheck", action="store_true")
    ap.add_argument("--cache-dir", default=None, help="NUMBA_CACHE_DIR for the bounds-checked build")
    ap.add_argument("--save-dir", default="fuzz_failures")
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args(argv)
    boundscheck = not args.no_boundscheck
    if args.serve:
        serve(boundscheck, args.cache_dir)
        return 0
    set_numba_env(boundscheck, args.cache_dir)
    t0 = time.time()
    # Compile (or load) the kernels once before the workers start.
    analyze(b'[Event "warm"]\n\n1. e4 e5 2. Nf3 *\n')
    print(f"[fuzz] kernels ready in {time.time() - t0:.1f}s (boundscheck={boundscheck})", file=sys.stderr, flush=True)
    import multiprocessing as mp

    workdir = tempfile.mkdtemp(prefix="analyzer-fuzz-")
    tasks = []
    left = args.inputs
    k = 0
    while left > 0:
        c = min(args.batch, left)
        tasks.append(
            (
                args.seed * 1_000_003 + k,
                c,
                boundscheck,
                os.environ.get("NUMBA_CACHE_DIR"),
                workdir,
                args.compressed_rate,
            )
        )
        left -= c
        k += 1
    tot: dict = {}
    failures = []
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for t, f in pool.imap_unordered(_worker, tasks):
            for key, v in t.items():
                tot[key] = tot.get(key, 0) + v
            for item in f:
                if len(failures) < 200:
                    os.makedirs(args.save_dir, exist_ok=True)
                    with open(os.path.join(args.save_dir, f"failure-{len(failures):04d}.pickle"), "wb") as fh:
                        pickle.dump(item, fh)
                failures.append(item)
            el = time.time() - t0
            print(
                f"[fuzz] {el:7.0f}s inputs={tot['inputs']} crashes={tot['crashes']} lost={tot['games_lost']} "
                f"changed={tot['games_changed']} violations={tot['violations']} "
                f"compressed={tot['compressed_runs']}/{tot['compressed_problems']} bad "
                f"rate={tot['inputs'] / el:.0f}/s",
                file=sys.stderr,
                flush=True,
            )
    _rmtree(workdir)
    if failures:
        for f in failures[:10]:
            print("[fuzz] FAIL:", "\n  ".join(p[:2000] for p in f["problems"][:5]), file=sys.stderr)
    tot["seconds"] = round(time.time() - t0, 1)
    tot["boundscheck"] = boundscheck
    tot["seed"] = args.seed
    tot["command"] = "python benchmarks/fuzz.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(json.dumps(tot))
    bad = tot["crashes"] + tot["games_lost"] + tot["games_changed"] + tot["violations"] + tot["compressed_problems"]
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
