"""Command line: `analyzer scan`, `analyzer report`, `analyzer warmup`.

Errors the user can fix (bad arguments, unreadable inputs, unwritable output) get one clear
line on stderr and a non-zero exit code, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import analyzer._numba_env  # noqa: F401  (NUMBA_CACHE_DIR before any kernel import)

EXIT_OK = 0
EXIT_UNITS_FAILED = 1   # some unit failed or an input was damaged: see the summary
EXIT_USAGE = 2          # bad arguments, unreadable input, unwritable output

BUNDLED = ("lichess_3000.pgn.zst", "russian_draughts_sample.pdn")


def _bundled_inputs() -> list[str]:
    """The sample shipped in the repository's data/ folder (cwd first, then next to the package)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for base in (os.path.join(os.getcwd(), "data"), os.path.join(here, "data")):
        paths = [os.path.join(base, f) for f in BUNDLED]
        if all(os.path.exists(p) for p in paths):
            return paths
    raise SystemExit(_fail("no input given and the bundled sample (data/" + BUNDLED[0] +
                           ") was not found; run from the repository or name inputs"))


def _fail(msg: str) -> int:
    print(f"analyzer: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        raise SystemExit(_fail(message))


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return v


def _parse_custom(text: str) -> dict:
    """NAME:key=value,key=value -> options for editions.custom_edition."""
    if ":" not in text:
        raise ValueError(f"--custom {text!r}: expected NAME:key=value[,key=value...]")
    name, rest = text.split(":", 1)
    opts: dict = {"id": name}
    for item in filter(None, rest.split(",")):
        if "=" not in item:
            raise ValueError(f"--custom {text!r}: {item!r} is not key=value")
        k, v = item.split("=", 1)
        k = k.strip()
        v = v.strip()
        if v.lower() in ("true", "false"):
            opts[k] = v.lower() == "true"
        elif v.lstrip("-").isdigit():
            opts[k] = int(v)
        else:
            opts[k] = v
    return opts


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="analyzer", description="Draw-rule statistics over chess and Russian draughts game databases.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("scan", help="analyze PGN/PDN inputs and write Parquet tables")
    s.add_argument("inputs", nargs="*", help=".pgn .pgn.zst .pgn.gz .pgn.bz2 .pdn ... or - for stdin "
                   "(default: the sample in data/)")
    s.add_argument("--out", default="analyzer_out", help="output directory (default: analyzer_out)")
    s.add_argument("--edition", action="append", default=None,
                   help="rule edition(s), repeat or comma-separate: fide_2018 (default), fide_2014, fide_2009, "
                   "fide_1997, lichess, custom ones; draughts: fshr_russian (default), fmjd_64")
    s.add_argument("--editions-file", help="TOML file of custom editions ([name] base=... claim_moves=...)")
    s.add_argument("--custom", action="append", default=[], metavar="NAME:key=value,...",
                   help="a custom edition, e.g. forty:claim_moves=40,automatic_moves=0 (selected automatically)")
    s.add_argument("--workers", type=_positive_int, default=None, help="worker processes (default: all cores)")
    s.add_argument("--engine", choices=("local", "threads", "processes", "dask"), default="local",
                   help="local: on Linux, pzstd inputs in forked worker processes that write their "
                   "own parts, other inputs in worker threads (the kernels release the GIL); "
                   "threads: worker threads for every input; processes: a spawned process pool; "
                   "dask: a Dask cluster (a local one unless --scheduler)")
    s.add_argument("--scheduler", help="address of a Dask scheduler (implies --engine dask)")
    s.add_argument("--force", action="store_true", help="recompute units already done by an earlier run")
    s.add_argument("--progress-interval", type=float, default=10.0, help="seconds between progress lines (0 = none)")
    s.add_argument("--max-game-mb", type=float, default=16.0, help="games larger than this are reported, not analyzed")
    s.add_argument("--unit-mb", type=float, default=None,
                   help="text per work unit (default: 16 for inputs read by one reader; pzstd inputs: "
                   "whole frames of about 64 MiB of text)")
    s.add_argument("--frames-per-unit", type=_positive_int, default=None,
                   help="pzstd frames per work unit (default: by size, see --unit-mb)")
    r = sub.add_parser("report", help="summary tables and an HTML page from a scan output directory")
    r.add_argument("out_dir")
    r.add_argument("--report-dir", default=None, help="where to write (default: OUT_DIR/report)")
    sub.add_parser("warmup", help="compile all numba kernels once (fills the cache)")
    return p


def _editions(args):
    from analyzer import editions as E

    custom = []
    if args.editions_file:
        try:
            custom += E.load_toml(args.editions_file)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--editions-file {args.editions_file}: {exc}") from None
    for text in args.custom:
        custom.append(E.custom_edition(**_parse_custom(text)))
    names = []
    for item in args.edition or []:
        names += [x.strip() for x in item.split(",") if x.strip()]
    from analyzer.draughts import rules as DR

    draughts = [n for n in names if n in DR.EDITIONS]
    chess_names = [n for n in names if n not in DR.EDITIONS]
    if not chess_names and not custom:
        chess_names = ["fide_2018"]
    chess_eds = E.resolve(chess_names, custom)
    chess_eds += [c for c in custom if c.id not in chess_names]
    return chess_eds, draughts or ["fshr_russian"]


def cmd_scan(args) -> int:
    from analyzer import pipeline, run
    from analyzer.io.sources import InputError

    try:
        chess_eds, draughts_eds = _editions(args)
    except ValueError as exc:
        return _fail(str(exc))
    inputs = args.inputs or _bundled_inputs()
    if inputs.count("-") > 1:
        return _fail("standard input (-) can be given only once")
    workers = args.workers or os.cpu_count() or 1
    cfg = pipeline.Config(out=args.out, editions=chess_eds, draughts_editions=draughts_eds,
                          max_game_bytes=int(args.max_game_mb * (1 << 20)),
                          **({} if args.unit_mb is None else {
                              "unit_text_bytes": int(args.unit_mb * (1 << 20)),
                              "frame_unit_text_bytes": int(args.unit_mb * (1 << 20))}),
                          frames_per_unit=args.frames_per_unit)
    import gc

    from analyzer._numba_env import skip_registry_refresh_on_cache_hits

    skip_registry_refresh_on_cache_hits()
    gc.freeze()  # the imported modules' objects need no cyclic-GC passes during the scan (GIL time)
    try:
        summary, code = run.run_scan(inputs, cfg, workers=workers, engine=args.engine,
                                     scheduler=args.scheduler, force=args.force,
                                     progress_interval=args.progress_interval)
    except (InputError, run.RunError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.filename or 'output'}: {exc.strerror or exc}")
    print(json.dumps(summary, separators=(",", ":")))
    if code:
        for u in summary["units_failed"]:
            print(f"analyzer: unit failed: {u}", file=sys.stderr)
        for d in summary["damage"]:
            print(f"analyzer: damaged input: {d}", file=sys.stderr)
    return code


def cmd_report(args) -> int:
    try:
        from analyzer import report
    except ImportError as exc:
        return _fail(f"the report needs matplotlib: pip install 'analyzer[report]' ({exc})")
    if not os.path.isdir(args.out_dir):
        return _fail(f"{args.out_dir}: not a directory (run analyzer scan --out {args.out_dir} first)")
    try:
        path = report.write_report(args.out_dir, args.report_dir)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    print(json.dumps({"report": path}))
    return EXIT_OK


def cmd_warmup(args) -> int:
    from analyzer.warmup import warmup

    t0 = time.time()
    warmup()
    print(json.dumps({"warmup_seconds": round(time.time() - t0, 2),
                      "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR")}))
    return EXIT_OK


def _skip_numba_blas_probe() -> None:
    """numba probes for BLAS by importing scipy.linalg when it first loads a kernel: ~0.1-0.2 s
    of every scan's start-up where scipy is installed. The kernels use no linear algebra, so
    the command-line process (ours alone) hides scipy from that probe."""
    if "scipy" not in sys.modules and "numba" not in sys.modules:
        sys.modules["scipy"] = None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("scan", "warmup"):
        _skip_numba_blas_probe()
    try:
        return {"scan": cmd_scan, "report": cmd_report, "warmup": cmd_warmup}[args.command](args)
    except KeyboardInterrupt:
        print("analyzer: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
