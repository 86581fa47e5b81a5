"""Damage loop: the dataset at rest under every kind of damage a copied, synced or kept OUT
meets (issues 27 and 35). A scan of a pzstd input (2 workers, one unit per frame, several
compacted files per source) writes OUT; then, cycle after cycle, one damage is done, and

- `analyzer verify`, `analyzer report`, `analyzer show` and the API (`analyzer.scan_*`) are
  run on the damaged OUT: none may serve a wrong or short number with exit 0 (a report that
  exits 0 must have the reference report's tables, byte for byte; a `show` that exits 0 the
  reference timeline; an API read that does not raise DatasetError the reference tables), and
  none may print a traceback;
- the repair that verify prints is run (after removing, as verify says, a symbolic link or a
  foreign file that stands in OUT); the tables must then equal a clean run's, and verify
  --deep must say whole;
- a sentinel tree beside OUT (and any foreign file put inside it) must be unchanged: nothing
  the analyzer did not write is changed or removed.

    python benchmarks/damage_loop.py --cycles 60 --seed 1     # the RESULTS.md run
    python benchmarks/damage_loop.py --kinds all-once --json  # what tests/test_damage_loop.py runs

Damage kinds: bytes changed at random offsets of a table file's data pages, page headers,
footer, footer statistics (the game_index max), anywhere; a forged file of the same size and
rows (results swapped); a truncated or deleted table file; a record deleted, truncated or
changed; a foreign file beside the parts; a table folder and the lock replaced by symbolic
links; the input rewritten in the middle with its size and mtime kept (found by verify --deep,
repaired by rescanning).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kill_loop  # noqa: E402  (the same input, command and table reader as the kill loop)
from kill_loop import _small_text, _tables  # noqa: E402

TABLE_KINDS = (
    "flip_data_page",
    "flip_page_header",
    "flip_footer",
    "change_statistic",
    "flip_anywhere",
    "forge_same_size",
    "truncate_part",
    "delete_part",
)
RECORD_KINDS = ("delete_record", "truncate_record", "flip_record")
OTHER_KINDS = ("foreign_file", "link_table_folder", "link_lock", "rewrite_input")
KINDS = TABLE_KINDS + RECORD_KINDS + OTHER_KINDS
ENV = dict(os.environ, ANALYZER_KERNELS=os.environ.get("ANALYZER_KERNELS", "auto"))


def _scan_cmd(src: str, out: str, compact: int) -> list[str]:
    return kill_loop._scan_cmd(src, out, compact=compact)


def _run(cmd: list[str], cwd: str | None = None) -> tuple[int, str, str]:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd, env=ENV)
    return r.returncode, r.stdout, r.stderr


def _analyzer(*args: str, cwd: str | None = None) -> tuple[int, str, str]:
    return _run([sys.executable, "-m", "analyzer", *args], cwd)


def _table_files(out: str) -> list[str]:
    found = []
    for t in ("games", "verdicts", "events"):
        d = os.path.join(out, t)
        for root, _dirs, names in os.walk(d):
            found += [os.path.join(root, n) for n in names if n.endswith(".parquet")]
    return sorted(found)


def _records(out: str) -> list[str]:
    found = []
    for root, _dirs, names in os.walk(os.path.join(out, "_manifest")):
        # not the last run's summary (run.json), which nothing reads to decide anything
        found += [os.path.join(root, n) for n in names if n.endswith(".json") and n != "run.json"]
    return sorted(found)


def _tree_hash(root: str) -> dict[str, str]:
    found = {}
    for dirpath, dirs, names in os.walk(root):
        for n in names + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                found[os.path.relpath(p, root)] = "link:" + os.readlink(p)
            else:
                with open(p, "rb") as fh:
                    found[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return found


def _flip(path: str, at: int, rng: random.Random) -> None:
    with open(path, "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ (1 << rng.randrange(8))]))


def _page_offsets(path: str, rng: random.Random) -> dict[str, int]:
    """Offsets inside a file's parts, from its own footer."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    rg = meta.row_group(rng.randrange(meta.num_row_groups))
    col = rg.column(rng.randrange(rg.num_columns))
    start = col.dictionary_page_offset or col.data_page_offset
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        fh.seek(size - 8)
        footer_len = int.from_bytes(fh.read(4), "little")
    return {
        "data_page": start + 24 + rng.randrange(max(1, col.total_compressed_size - 24)),
        "page_header": col.data_page_offset + rng.randrange(1, 12),
        "footer": size - 8 - footer_len + rng.randrange(footer_len),
    }


def _forge(path: str, tmp: str) -> None:
    """A valid file of the same table, size and rows, results swapped."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from analyzer.engine.dataset.store import parquet_options

    size = os.path.getsize(path)
    t = pq.read_table(path)
    if "result" in t.column_names:
        col = t.column("result").cast("string")
        new = pc.if_else(pc.equal(col, "1-0"), "0-1", pc.if_else(pc.equal(col, "0-1"), "1-0", col))
        t = t.set_column(t.schema.get_field_index("result"), "result", new.cast(t.schema.field("result").type))
    else:  # verdicts, events: the plies of every row one later
        i = next(j for j, f in enumerate(t.schema) if f.name.endswith("ply") or f.name == "ply")
        t = t.set_column(i, t.schema.field(i).name, pc.add(t.column(i), 1).cast(t.schema.field(i).type))
    meta = dict(t.schema.metadata or {})
    key = max(meta, key=lambda k: len(meta[k]))
    value = meta[key]
    for _ in range(20):
        meta[key] = value
        pq.write_table(t.replace_schema_metadata(meta), tmp, **parquet_options(t.schema))
        d = size - os.path.getsize(tmp)
        if d == 0:
            break
        value = value + b" " * d if d > 0 else value[:d]
    shutil.copy(tmp, path)


def _change_statistic(path: str) -> None:
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    stats = meta.row_group(0).column(meta.schema.names.index("game_index")).statistics
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    at = data.rfind(int(stats.max).to_bytes(8, "little"))
    data[at : at + 2] = bytes([data[at] ^ 0xFF, data[at + 1] ^ 0x0F])
    with open(path, "wb") as fh:
        fh.write(data)


def _damage(rng: random.Random, out: str, src: str, kind: str, work: str) -> dict:
    """Do one damage; returns what was done and what the loop must undo as a user would."""
    done: dict = {"kind": kind, "remove_first": [], "foreign": {}}
    if kind in TABLE_KINDS:
        path = rng.choice(_table_files(out))
        done["what"] = os.path.relpath(path, out)
        size = os.path.getsize(path)
        if kind == "delete_part":
            os.remove(path)
        elif kind == "truncate_part":
            os.truncate(path, rng.randrange(0, max(size, 1)))
        elif kind == "flip_anywhere":
            _flip(path, rng.randrange(size), rng)
        elif kind == "forge_same_size":
            _forge(path, os.path.join(work, "forged.parquet"))
        elif kind == "change_statistic":
            _change_statistic(next(p for p in _table_files(out) if p.startswith(os.path.join(out, "games"))))
            done["what"] = "games statistic"
        else:
            _flip(path, _page_offsets(path, rng)[kind[len("flip_") :]], rng)
    elif kind in RECORD_KINDS:
        path = rng.choice(_records(out))
        done["what"] = os.path.relpath(path, out)
        if kind == "delete_record":
            os.remove(path)
        elif kind == "truncate_record":
            os.truncate(path, rng.randrange(0, max(os.path.getsize(path), 1)))
        else:
            _flip(path, rng.randrange(os.path.getsize(path)), rng)
    elif kind == "foreign_file":
        folder = os.path.dirname(rng.choice(_table_files(out)))
        name = rng.choice(["part-000001.parquet", "part-000007.parquet", "notes.txt"])
        path = os.path.join(folder, name)
        data = f"a user's file {rng.random()}".encode()
        with open(path, "wb") as fh:
            fh.write(data)
        done["what"] = os.path.relpath(path, out)
        done["foreign"] = {path: hashlib.sha256(data).hexdigest()}
        done["remove_first"] = [path]  # verify says: move it out of OUT
    elif kind == "link_table_folder":
        folder = os.path.dirname(rng.choice(_table_files(out)))
        copy = os.path.join(work, "sentinel", f"moved-{rng.randrange(10**9)}")
        shutil.copytree(folder, copy)
        shutil.rmtree(folder)
        os.symlink(copy, folder)
        done["what"] = os.path.relpath(folder, out)
        done["remove_first"] = [folder]  # the link; the rerun makes the folder again
    elif kind == "link_lock":
        lock = os.path.join(out, ".lock")
        if os.path.exists(lock) or os.path.islink(lock):
            os.remove(lock)
        os.symlink(os.path.join(work, "sentinel", "precious.txt"), lock)
        done["what"] = ".lock"
        done["remove_first"] = [lock]
    elif kind == "rewrite_input":
        st = os.stat(src)
        with open(src, "r+b") as fh:  # a byte in the middle of a zstd frame's data: a different text or a damaged frame
            # between the first and the last MiB, which the cheap identity hashes: only a full hash sees it
            lo, hi = 1 << 20, st.st_size - (1 << 20)
            at = rng.randrange(lo, hi) if hi > lo else st.st_size // 2
            fh.seek(at)
            b = fh.read(1)
            fh.seek(at)
            fh.write(bytes([b[0] ^ 0x01]))
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        done["what"] = f"input byte {at}"
    return done


def _api_tables(out: str) -> tuple[str, str]:
    """('ok', digest of the three tables) or ('refused', the error's class) from the API: a
    DatasetError, or the IncompleteDatasetWarning with which it leaves out a source whose run
    did not finish (or whose record is lost), which a user sees."""
    code = (
        "import sys, hashlib, warnings, analyzer\n"
        "warnings.simplefilter('error', analyzer.IncompleteDatasetWarning)\n"
        "try:\n"
        "    h = hashlib.sha256()\n"
        "    for f in (analyzer.scan_games, analyzer.scan_verdicts, analyzer.scan_events):\n"
        "        df = f(sys.argv[1]).collect()\n"
        "        df = df.sort(df.columns[:4])\n"
        "        h.update(df.write_csv().encode())\n"
        "    print('ok', h.hexdigest())\n"
        "except (analyzer.DatasetError, analyzer.IncompleteDatasetWarning) as exc:\n"
        "    print('refused', type(exc).__name__)\n"
    )
    rc, stdout, stderr = _run([sys.executable, "-c", code, out])
    if rc != 0 or not stdout.strip():
        return "crashed", stderr[-300:]
    word, _, rest = stdout.strip().splitlines()[-1].partition(" ")
    return word, rest


def _report_tables(out: str, rep: str) -> tuple[int, dict[str, str], str]:
    shutil.rmtree(rep, ignore_errors=True)
    rc, _, stderr = _analyzer("report", out, "--report-dir", rep)
    csvs = {}
    if rc == 0:
        for n in sorted(os.listdir(rep)):
            if n.endswith(".csv"):
                with open(os.path.join(rep, n), "rb") as fh:
                    csvs[n] = hashlib.sha256(fh.read()).hexdigest()
    return rc, csvs, stderr


def run(cycles: int, seed: int, copies: int, compact: int, workdir: str, kinds: tuple[str, ...] = KINDS) -> dict:
    rng = random.Random(seed)
    plain = os.path.join(workdir, "games.pgn")
    with open(plain, "wb") as fh:
        fh.write(_small_text() * copies)
    src = os.path.join(workdir, "games.pgn.zst")
    subprocess.run(["pzstd", "-q", "-1", "-p", "2", "-f", "-o", src, plain], check=True)
    os.remove(plain)
    with open(src, "rb") as fh:
        original_input = fh.read()
    sentinel = os.path.join(workdir, "sentinel")
    os.makedirs(sentinel)
    with open(os.path.join(sentinel, "precious.txt"), "w") as fh:
        fh.write("a file outside OUT that no analyzer command may change\n")
    ref = os.path.join(workdir, "ref")
    t0 = time.time()
    code, stdout, stderr = _run(_scan_cmd(src, ref, compact))
    if code != 0:
        raise SystemExit(f"reference run failed: {stderr[-2000:]}")
    clean_seconds = time.time() - t0
    ref_tables = _tables(ref)
    total_games = json.loads(stdout.splitlines()[-1])["games"]
    ref_api = _api_tables(ref)
    ref_report = _report_tables(ref, os.path.join(workdir, "ref-report"))
    show_key = "games#5"
    ref_show = _analyzer("show", ref, show_key)[1]
    assert ref_api[0] == "ok" and ref_report[0] == 0 and ref_show, (ref_api, ref_report[2])
    out = os.path.join(workdir, "out")
    code, _, stderr = _run(_scan_cmd(src, out, compact))
    if code != 0:
        raise SystemExit(f"first run failed: {stderr[-2000:]}")
    per_kind = {k: {"cycles": 0, "found_by_verify": 0, "refused_by_readers": 0, "games_recomputed": 0, "equal": 0}
                for k in kinds}  # fmt: skip
    stats: dict = {
        "cycles": cycles,
        "seed": seed,
        "input_games": total_games,
        "compact_games": compact,
        "clean_run_seconds": round(clean_seconds, 2),
        "wrong_numbers_served": 0,
        "games_lost": 0,
        "rows_wrong": 0,
        "tracebacks": 0,
        "sentinel_changed": 0,
        "verify_whole_after": 0,
        "final_equal": 0,
        "repair_seconds": [],
        "failures": [],
    }
    report_dir = os.path.join(workdir, "report")
    for cycle in range(cycles):
        kind = kinds[cycle % len(kinds)] if cycle < len(kinds) else rng.choice(kinds)
        k = per_kind[kind]
        k["cycles"] += 1
        done = _damage(rng, out, src, kind, workdir)
        before = _tree_hash(sentinel)  # (after the damage: a link's target is in it)
        what = f"cycle {cycle} ({kind} {done.get('what')})"
        deep = kind == "rewrite_input"
        vargs = ["verify", out, "--json", *(["--deep"] if deep else [])]
        vcode, vout, verr = _analyzer(*vargs)
        stats["tracebacks"] += "Traceback" in verr
        report = json.loads(vout.strip().splitlines()[-1]) if vout.strip() else {"sources": []}
        repairs = [s["repair"] for s in report["sources"] if s.get("repair")]
        k["found_by_verify"] += vcode != 0
        # The readers on the damaged OUT: a refusal (exit 2, DatasetError), or the right numbers.
        refused = 0
        rc, csvs, rerr = _report_tables(out, report_dir)
        stats["tracebacks"] += "Traceback" in rerr
        if rc == 0 and csvs != ref_report[1]:
            stats["wrong_numbers_served"] += 1
            stats["failures"].append(f"{what}: the report exited 0 with other tables")
        refused += rc != 0
        sc, sout, serr = _analyzer("show", out, show_key)
        stats["tracebacks"] += "Traceback" in serr
        # (a timeline without moves, saying why, is no wrong number: the input may be gone or changed)
        if sc == 0 and sout != ref_show and "(no moves: " not in sout:
            stats["wrong_numbers_served"] += 1
            stats["failures"].append(f"{what}: show exited 0 with another timeline")
        refused += sc != 0
        api, detail = _api_tables(out)
        if api == "crashed":
            stats["tracebacks"] += 1
            stats["failures"].append(f"{what}: the API crashed: {detail}")
        elif api == "ok" and detail != ref_api[1]:
            stats["wrong_numbers_served"] += 1
            stats["failures"].append(f"{what}: the API served other tables")
        refused += api == "refused"
        k["refused_by_readers"] += refused == 3
        # The repair, as a user follows verify: what stands in OUT that is not the analyzer's
        # goes first (a link, a foreign file: checked unchanged), then the command it prints.
        for path, digest in done["foreign"].items():
            with open(path, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() != digest:
                    stats["sentinel_changed"] += 1
                    stats["failures"].append(f"{what}: the foreign file was changed")
        if kind.startswith("link_"):  # the scan refuses to write through the link, naming it
            lcode, _, lerr = _run(_scan_cmd(src, out, compact))
            if lcode != 2 or "symbolic link" not in lerr or "Traceback" in lerr:
                stats["failures"].append(f"{what}: the scan through a link exited {lcode}: {lerr[-300:]}")
        for path in done["remove_first"]:
            if os.path.lexists(path):
                os.remove(path)
        t0 = time.time()
        for line in repairs or [shlex.join(["analyzer", *_scan_cmd(src, out, compact)[3:]])]:
            cmd = shlex.split(line)
            cmd = [sys.executable, "-m", "analyzer", *cmd[1:], *([] if "--json" in cmd else ["--json"])]
            code, stdout, stderr = _run(cmd)
            stats["tracebacks"] += "Traceback" in stderr
            # (a rewritten compressed input is also a damaged one: its rescan says so, exit 1)
            if code != 0 and not (kind == "rewrite_input" and code == 1 and stdout.strip()):
                stats["failures"].append(f"{what}: repair exited {code}: {stderr[-500:]}")
                break
            summary = json.loads(stdout.splitlines()[-1])
            k["games_recomputed"] += summary["games_analyzed"]
            if kind == "rewrite_input" and "content changed" not in summary["sources"][0]["note"]:
                stats["failures"].append(f"{what}: the rescan did not say the input changed: {summary['sources'][0]}")
        stats["repair_seconds"].append(round(time.time() - t0, 2))
        if kind == "rewrite_input":  # the rewritten input's tables are another text's: put it back, repair again
            st = os.stat(src)
            with open(src, "wb") as fh:
                fh.write(original_input)
            os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
            vcode, vout, _ = _analyzer("verify", out, "--deep", "--json")
            again = [s["repair"] for s in json.loads(vout.strip().splitlines()[-1])["sources"] if s.get("repair")]
            if vcode != 1 or not again:
                stats["failures"].append(f"{what}: the restored input was not found stale")
            for line in again:
                cmd = shlex.split(line)
                _run([sys.executable, "-m", "analyzer", *cmd[1:]])
        g, v, e = _tables(out)
        rg, rv, re_ = ref_tables
        stats["games_lost"] += max(0, rg.height - g.height)
        if g.equals(rg) and v.equals(rv) and e.equals(re_):
            k["equal"] += 1
            stats["final_equal"] += 1
        else:
            stats["rows_wrong"] += abs(rg.height - g.height) + abs(rv.height - v.height) or 1
            stats["failures"].append(f"{what}: tables differ after the repair")
            shutil.rmtree(out)  # the next cycle starts from whole tables again (a failure counts once)
            shutil.copytree(ref, out, symlinks=True)
        wcode, _, werr = _analyzer("verify", out, "--deep")
        stats["tracebacks"] += "Traceback" in werr
        stats["verify_whole_after"] += wcode == 0
        if wcode != 0:
            stats["failures"].append(f"{what}: verify --deep after the repair exited {wcode}")
        if _tree_hash(sentinel) != before:
            stats["sentinel_changed"] += 1
            stats["failures"].append(f"{what}: the sentinel tree beside OUT changed")
    stats["per_kind"] = per_kind
    secs = sorted(stats["repair_seconds"])
    stats["repair_seconds"] = {"median": secs[len(secs) // 2] if secs else None, "max": secs[-1] if secs else None}
    stats["ok"] = (
        stats["wrong_numbers_served"] == 0
        and stats["games_lost"] == 0
        and stats["rows_wrong"] == 0
        and stats["tracebacks"] == 0
        and stats["sentinel_changed"] == 0
        and stats["final_equal"] == cycles
        and stats["verify_whole_after"] == cycles
        and not stats["failures"]
    )
    return stats


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=None, help="default: every kind once (--kinds)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--copies", type=int, default=2, help="lichess_small repeated this many times")
    p.add_argument("--compact-games", type=int, default=1000, help="games per compacted file (several per source)")
    p.add_argument("--kinds", default="all", help="comma-separated damage kinds, or all")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    kinds = KINDS if args.kinds in ("all", "all-once") else tuple(args.kinds.split(","))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        p.error(f"unknown kinds {unknown}; known: {', '.join(KINDS)}")
    cycles = args.cycles if args.cycles is not None else len(kinds)
    with tempfile.TemporaryDirectory(prefix="analyzer-damage-loop-") as tmp:
        stats = run(cycles, args.seed, args.copies, args.compact_games, tmp, kinds)
    if args.json:
        print(json.dumps(stats))
    else:
        for k, v in stats.items():
            print(f"{k:>22}: {v}")
    return 0 if stats["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
