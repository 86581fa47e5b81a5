"""Same-run A/B of two analyzer revisions: `analyzer scan` of one input, old and new code
alternating in interleaved rounds, each round's ratio new ÷ old (the machine is shared and
noisy: only ratios taken side by side mean anything).

    python benchmarks/ab_scan.py --old b120e26 [--new HEAD] [--rounds 7] [--workers 1]
        [--edition fide_2018] [--input ../shared/data/lichess_sample.pgn.zst] [--instructions]
        [--old-args "..."] [--new-args "..."]

--old-args / --new-args add scan options to one side (e.g. --new-args "--syzygy DIR" with
--old HEAD --new HEAD: the cost of an option on the same code, which is exported and warmed once).

Each revision is exported with `git archive` into a temp dir (the working tree is not touched)
and run from there with its own NUMBA_CACHE_DIR, warmed by one untimed scan first. Timed: the
whole command (interpreter start, imports, cached kernels, scan, Parquet) and its CPU time
(user + sys of the child), and the scan's own "seconds" from its JSON summary (without
start-up). The order within a round alternates (old first, then new first) so that a drift in
load does not favour one side. Prints a Markdown table for RESULTS.md.

--instructions counts instructions instead (valgrind's cachegrind, one run per side): on a
shared machine, where even CPU seconds move by 10-30 % with the load on the other vCPU, a count
is the same from run to run, and the functions whose counts changed say where.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_INPUT = os.path.join(ROOT, "..", "shared", "data", "lichess_sample.pgn.zst")


def export(rev: str, dest: str) -> tuple[str, str]:
    """The tree of `rev` under dest (git archive | tar): (its folder, its commit hash).
    'worktree' is this checkout as it is, uncommitted edits included (not copied, not
    byte-compiled: its start-up includes compiling the sources when PYTHONDONTWRITEBYTECODE is set)."""
    if rev == "worktree":
        return ROOT, "worktree"
    os.makedirs(dest)
    sha = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    # Byte-compiled, as an installed package is: with PYTHONDONTWRITEBYTECODE set (as on the
    # team's machines) every start would compile the sources, ~0.07 s for 0.2's 60 modules,
    # half that for 0.1's, which is not what a user of either sees.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(dest, "analyzer")], check=True)
    return dest, sha


def run_once(code_dir: str, cache: str, args, out: str, prefix: tuple = (), extra: tuple = ()) -> dict:
    """One timed scan; wall and child CPU seconds, and the summary's own seconds. `prefix`: a
    command to run it under (valgrind, for --instructions)."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=code_dir)
    if args.instructions:
        # machine code for a generic x86-64, so that the kernels cached outside valgrind are the
        # ones loaded under it (valgrind reports other CPU features: numba would recompile)
        env["NUMBA_CPU_NAME"] = "generic"
    # 0.1 had no analyzer/__main__.py: call its console-script entry point the same way
    if os.path.exists(os.path.join(code_dir, "analyzer", "__main__.py")):
        entry = ["-m", "analyzer"]
    else:
        entry = ["-c", "import sys; from analyzer.cli import main; sys.exit(main(sys.argv[1:]))"]
    cmd = [
        *prefix,
        os.path.realpath(sys.executable),  # not a shell shim: valgrind follows the interpreter itself
        *entry,
        "scan",
        args.input,
        "--out",
        out,
        "--edition",
        args.edition,
        "--workers",
        str(args.workers),
        "--progress-interval",
        "0",
        *extra,
    ]
    with open(os.path.join(code_dir, "analyzer", "cli.py")) as fh:
        if '"--json"' in fh.read():  # 0.2 prints a table unless asked; 0.1 always printed JSON
            cmd.append("--json")
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out_fh, tempfile.TemporaryFile() as err_fh:
        proc = subprocess.Popen(cmd, cwd=code_dir, env=env, stdout=out_fh, stderr=err_fh)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage: its CPU and peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out_fh.seek(0)
        err_fh.seek(0)
        stdout, stderr = out_fh.read().decode(), err_fh.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{code_dir}: exit {proc.returncode}\n{stderr[-2000:]}")
    summary = json.loads(stdout.strip().splitlines()[-1])
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "wall": wall,
        "cpu": cpu,
        "scan": summary.get("seconds"),
        "games": summary.get("games"),
        "peak_mb": usage.ru_maxrss / 1024,  # (its children's, e.g. forked workers, not included)
    }


def _cachegrind_counts(path: str) -> dict[tuple[str, str], int]:
    """Instructions per (file, function) from a cachegrind output file."""
    counts: dict[tuple[str, str], int] = {}
    fl = fn = ""
    with open(path) as fh:
        for line in fh:
            if line.startswith("fl="):
                fl = line[3:].strip().rsplit("/", 1)[-1]
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2:
                    counts[(fl, fn)] = counts.get((fl, fn), 0) + int(parts[1])
    return counts


def extra_args(args, name: str) -> tuple:
    return tuple(shlex.split(args.old_args if name == "old" else args.new_args))


def _instructions(sides: dict, args, tmp: str) -> int:
    """One scan per side under cachegrind: total instructions, their ratio, and the functions
    whose counts changed most (numba's machine code is one entry, '???')."""
    totals, counts = {}, {}
    for name in ("old", "new"):
        code, cache, _ = sides[name]
        cg = os.path.join(tmp, f"cachegrind-{name}.out")
        prefix = ("valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={cg}")
        print(f"[ab] {name}: counting instructions under cachegrind", file=sys.stderr, flush=True)
        run_once(code, cache, args, os.path.join(tmp, "out"), prefix=prefix, extra=extra_args(args, name))
        counts[name] = _cachegrind_counts(cg)
        totals[name] = sum(counts[name].values())
    print(
        f"Instructions of `analyzer scan {os.path.basename(args.input)} --edition {args.edition} --workers "
        f"{args.workers}` (whole command, cachegrind, kernels for a generic x86-64), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        f"old = {args.old} ({sides['old'][2]}): {totals['old'] / 1e9:.3f} G; new = {args.new} "
        f"({sides['new'][2]}): {totals['new'] / 1e9:.3f} G; new ÷ old = {totals['new'] / totals['old']:.4f}\n"
    )
    print("| change (M) | old (M) | new (M) | function |")
    print("|---:|---:|---:|---|")
    keys = set(counts["old"]) | set(counts["new"])
    delta = {k: counts["new"].get(k, 0) - counts["old"].get(k, 0) for k in keys}
    for k in sorted(keys, key=lambda k: -abs(delta[k]))[: args.top]:
        label = "numba kernels (JIT code)" if k == ("???", "???") else f"{k[0]}: {k[1][:80]}"
        print(
            f"| {delta[k] / 1e6:+.1f} | {counts['old'].get(k, 0) / 1e6:.1f} | "
            f"{counts['new'].get(k, 0) / 1e6:.1f} | {label.replace('|', '/')} |"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default="HEAD", help="a git revision, or 'worktree' (this checkout as it is)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--edition", default="fide_2018")
    ap.add_argument("--input", default=DEFAULT_INPUT)
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="instead of timing: count each side's instructions once under valgrind's cachegrind "
        "(independent of the machine's load; kernels compiled for a generic x86-64), with the functions "
        "whose counts differ most",
    )
    ap.add_argument("--top", type=int, default=15, help="--instructions: how many functions to list")
    ap.add_argument("--old-args", default="", help="scan options of the old side only (one string)")
    ap.add_argument("--new-args", default="", help="scan options of the new side only, e.g. '--syzygy DIR'")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="ab_scan-")
    try:
        sides = {}
        extra = {"old": tuple(shlex.split(args.old_args)), "new": tuple(shlex.split(args.new_args))}
        for name, rev in (("old", args.old), ("new", args.new)):
            if name == "new" and rev == args.old:  # the same code: exported and warmed once
                sides["new"] = sides["old"]
                continue
            code, sha = export(rev, os.path.join(tmp, name))
            cache = os.path.join(tmp, f"numba-{name}")
            print(f"[ab] {name} = {rev} ({sha}): warming its kernels", file=sys.stderr, flush=True)
            run_once(code, cache, args, os.path.join(tmp, "out"), extra=extra[name])
            sides[name] = (code, cache, sha)
        if args.instructions:
            return _instructions(sides, args, tmp)
        rows: dict[str, list[dict]] = {"old": [], "new": []}
        for k in range(args.rounds):
            order = ("old", "new") if k % 2 == 0 else ("new", "old")
            for name in order:
                code, cache, _ = sides[name]
                rows[name].append(run_once(code, cache, args, os.path.join(tmp, "out"), extra=extra[name]))
            o, n = rows["old"][-1], rows["new"][-1]
            print(
                f"[ab] round {k + 1}: wall old {o['wall']:.2f} s new {n['wall']:.2f} s, "
                f"ratio {n['wall'] / o['wall']:.3f}",
                file=sys.stderr,
                flush=True,
            )
        games = rows["new"][0]["games"]
        load = os.getloadavg()
        print(
            f"A/B `analyzer scan {os.path.basename(args.input)} --edition {args.edition} --workers "
            f"{args.workers}` ({games:,} games), {args.rounds} interleaved rounds, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load at end {load[0]:.2f}"
        )
        print(
            f"old = {args.old} ({sides['old'][2]}){' ' + args.old_args if args.old_args else ''}, "
            f"new = {args.new} ({sides['new'][2]}){' ' + args.new_args if args.new_args else ''}; "
            "ratio = new ÷ old per round (< 1: new faster)\n"
        )
        print("| measure | old median | new median | ratio per round | median ratio |")
        print("|---|---:|---:|---|---:|")
        for key, label in (
            ("wall", "wall s, whole command"),
            ("cpu", "CPU s, whole command"),
            ("scan", "scan s (summary, no start-up)"),
            ("peak_mb", "peak RSS MB (the scan's process)"),
        ):
            if any(r[key] is None for r in rows["old"] + rows["new"]):
                continue
            ratios = [n[key] / o[key] for o, n in zip(rows["old"], rows["new"])]
            print(
                f"| {label} | {statistics.median(r[key] for r in rows['old']):.3f} | "
                f"{statistics.median(r[key] for r in rows['new']):.3f} | "
                f"{' '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.3f} |"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
