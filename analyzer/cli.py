"""Command line: `analyzer scan`, `analyzer sync`, `analyzer report`, `analyzer verify`,
`analyzer show`, `analyzer warmup`.

Errors the user can fix (bad arguments, unreadable inputs, unwritable or busy output) get one
clear line on stderr and exit 2, never a traceback. Messages go through `logging` (logger
"analyzer"; -q and -v set the level), so a program that embeds the analyzer can route them.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import logging
import os
import signal
import sys
import time

import analyzer._numba_env  # noqa: F401  (NUMBA_CACHE_DIR before any kernel import)

EXIT_OK = 0
EXIT_UNITS_FAILED = 1  # a unit failed, an input was damaged, or an input gave no analyzable game
EXIT_USAGE = 2  # bad arguments, unreadable input, unwritable or busy output
# Stopped by a signal: 128 + its number, as a shell reports it (SIGINT 130, SIGTERM 143, SIGHUP 129).
EXIT_SIGNAL_BASE = 128

# The cyclic GC's thresholds during a scan: a block makes few Python objects and no cycles worth
# a collection every 700 allocations (CPython's default); 10x rarer passes keep cycles bounded.
SCAN_GC_THRESHOLDS = (7000, 10, 10)
BUNDLED = ("lichess_3000.pgn.zst", "russian_draughts_sample.pdn")
COMMANDS = ("scan", "sync", "report", "verify", "show", "warmup")

log = logging.getLogger("analyzer")


def _version() -> str:
    from analyzer import __version__

    return __version__


def _bundled_inputs() -> list[str]:
    """The sample shipped in the repository's data/ folder (cwd first, then next to the package)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for base in (os.path.join(os.getcwd(), "data"), os.path.join(here, "data")):
        paths = [os.path.join(base, f) for f in BUNDLED]
        if all(os.path.exists(p) for p in paths):
            return paths
    raise SystemExit(
        _fail(
            "no input given and the bundled sample (data/"
            + BUNDLED[0]
            + ") was not found; run from the repository or name inputs"
        )
    )


def _fail(msg: str) -> int:
    print(f"analyzer: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """One line (a value out of range is not worth argparse's 10-line usage), and where to look."""
        if "invalid choice" in message and "COMMAND" in message:
            word = message.split("'")[1] if "'" in message else ""
            close = difflib.get_close_matches(word, COMMANDS, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        raise SystemExit(_fail(f"{message} (see {self.prog} --help)"))


class _CommandParser(_Parser):
    """A subcommand's parser: the global -q and -v are accepted after the subcommand too
    (`analyzer scan x.pgn -q`); given nowhere, the global default stands (SUPPRESS)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=_QUIET)
        self.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE)


_QUIET = "only errors and the final summary"
_VERBOSE = "more detail on stderr"


def _number(kind, minimum, text: str, *, strict: bool):
    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if v < minimum or (strict and v == minimum):
        raise argparse.ArgumentTypeError(f"must be {'above' if strict else 'at least'} {minimum}: {text!r}")
    return v


def _positive_int(text: str) -> int:
    return _number(int, 1, text, strict=False)


def _nonnegative_int(text: str) -> int:
    return _number(int, 0, text, strict=False)


def _month(text: str) -> str:
    import re

    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", text):
        raise argparse.ArgumentTypeError(f"not a month YYYY-MM: {text!r}")
    return text


def _positive_float(text: str) -> float:
    return _number(float, 0, text, strict=True)


def _non_negative_float(text: str) -> float:
    return _number(float, 0, text, strict=False)


def _parse_custom(text: str) -> dict:
    """NAME:key=value,key=value -> options for editions.custom_edition (values typed there)."""
    if ":" not in text:
        raise ValueError(f"--custom {text!r}: expected NAME:key=value[,key=value...]")
    name, rest = text.split(":", 1)
    opts: dict = {"id": name.strip()}
    for item in filter(None, rest.split(",")):
        if "=" not in item:
            raise ValueError(f"--custom {text!r}: {item!r} is not key=value")
        k, v = item.split("=", 1)
        opts[k.strip()] = v.strip()
    return opts


def _add_analysis_options(s) -> None:
    """The options of `scan` and `sync` that say what is computed and where: storage options,
    editions, workers, engine."""
    s.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="[PROTOCOL.]KEY=VALUE",
        help="an fsspec option for URLs (inputs and --out), e.g. s3.endpoint_url=http://127.0.0.1:9000 "
        "or anon=true; VALUE is read as JSON when it is JSON. The protocol's standard environment "
        "(AWS_ENDPOINT_URL, AWS_PROFILE, credential chains) applies as well",
    )
    s.add_argument(
        "--edition",
        action="append",
        default=None,
        metavar="ID[,ID...]",
        help="rule edition(s), repeat or comma-separate: fide_2018 (default), fide_2014, fide_2009, "
        "fide_1997, lichess, custom ones; draughts: fshr_russian (default), fmjd_64",
    )
    s.add_argument(
        "--editions-file", metavar="TOML", help="TOML file of custom editions ([name] base=... claim_moves=...)"
    )
    s.add_argument(
        "--custom",
        action="append",
        default=[],
        metavar="NAME:key=value,...",
        help="a custom edition, e.g. forty:claim_moves=40,automatic_moves=0 or "
        "fshr25:base=fshr_russian,balance_moves=25 (selected automatically)",
    )
    s.add_argument(
        "--syzygy",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of Syzygy tablebases (.rtbw, .rtbz); repeat, or join folders with "
        f"'{os.pathsep}' as engines' SyzygyPath: the 50- and 75-move events and the final positions with "
        "few enough pieces get tb_wdl, tb_dtz and win_in_time (docs/measures.md)",
    )
    s.add_argument(
        "--unwinnable-budget",
        type=_nonnegative_int,
        default=None,
        metavar="NODES",
        help="chess: the search's work per final position of a game lost on time, to tell whether the "
        "winner could still mate (FIDE 6.9; default 20000). Past it the answer is 'unknown'; 0: only "
        "the static proofs (insufficient material, blocked pawns) and a mate on the board, the scan's "
        "cost without the search (docs/rules.md 1.4)",
    )
    s.add_argument("--workers", type=_positive_int, default=None, help="parallel workers (default: all cores)")
    s.add_argument(
        "--engine",
        choices=("local", "threads", "processes", "dask"),
        default="local",
        help="local: on Linux, pzstd inputs in forked worker processes that write their "
        "own parts, other inputs in worker threads (the kernels release the GIL); "
        "threads: worker threads for every input; processes: a spawned process pool; "
        "dask: a Dask cluster (a local one unless --scheduler)",
    )
    s.add_argument("--scheduler", metavar="ADDRESS", help="address of a Dask scheduler (implies --engine dask)")


def _add_run_options(s) -> None:
    """The options of `scan` and `sync` that say how a run goes: progress, game and unit sizes,
    compaction."""
    s.add_argument(
        "--progress",
        choices=("auto", "bar", "log", "none"),
        default="auto",
        help="progress on stderr: a live bar (auto on a terminal), log lines (auto otherwise), or none",
    )
    s.add_argument(
        "--progress-interval",
        type=_non_negative_float,
        default=10.0,
        metavar="SECONDS",
        help="seconds between progress log lines (default 10; 0 = none)",
    )
    s.add_argument(
        "--max-game-mb",
        type=_positive_float,
        default=16.0,
        metavar="MB",
        help="games larger than this are reported (game_too_large), not analyzed (default 16)",
    )
    s.add_argument(
        "--unit-mb",
        type=_positive_float,
        default=None,
        metavar="MB",
        help="text per work unit (default: 16 for inputs read by one reader; pzstd inputs: "
        "whole frames of about 64 MiB of text)",
    )
    s.add_argument(
        "--compact-games",
        type=_positive_int,
        default=1_000_000,
        metavar="N",
        help="games per table file once a source is finished: its work units' files are compacted into "
        "files of at least N games (default 1000000); the tables' content does not depend on it",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="analyzer",
        description="Draw-rule statistics (FIDE Article 9, Lichess, Russian "
        "draughts section 32) over chess and draughts game databases.",
        epilog="Run 'analyzer COMMAND --help' for a command's options.",
    )
    p.add_argument("--version", action="version", version=f"analyzer {_version()}")
    p.add_argument("-q", "--quiet", action="store_true", help=_QUIET)
    p.add_argument("-v", "--verbose", action="store_true", help=_VERBOSE)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    s = sub.add_parser(
        "scan",
        help="analyze PGN/PDN inputs and write Parquet tables",
        description="Analyze PGN/PDN inputs and write Parquet tables to --out.",
    )
    s.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help=".pgn .pgn.zst .pgn.gz .pgn.bz2 .pdn ... or - for standard input "
        "(default: the sample in data/); globs ('dumps/*.pgn.zst') and URLs through fsspec "
        "(s3://, gs://, az://, https://; 's3://bucket/lichess/*.pgn.zst', or a prefix ending in /) "
        "with the extra draw-rule-analyzer[cloud]",
    )
    s.add_argument(
        "--out",
        default="analyzer_out",
        help="output directory or URL, e.g. s3://bucket/results (default: analyzer_out)",
    )
    _add_analysis_options(s)
    s.add_argument(
        "--force",
        action="store_true",
        help="recompute the inputs' sources from scratch, with exactly the editions asked for",
    )
    s.add_argument(
        "--deep-verify",
        action="store_true",
        help="before reusing a finished source, also read every page of its files and re-hash its input "
        "(as 'analyzer verify --deep'), not only the files' SHA-256; damaged units are recomputed, and a "
        "source whose input's content changed is rescanned",
    )
    s.add_argument(
        "--source-name",
        action="append",
        default=None,
        metavar="NAME",
        help="name of the source (default: the file name without extensions; 'stdin' for -); "
        "give it once per input, in order",
    )
    _add_run_options(s)
    s.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON line on stdout (it is always saved in OUT/_manifest/run.json)",
    )
    s.add_argument(
        "--frames-per-unit",
        type=_positive_int,
        default=None,
        metavar="K",
        help="pzstd frames per work unit (default: by size, see --unit-mb)",
    )
    y = sub.add_parser(
        "sync",
        help="the scheduled job: scan the dumps of a Lichess-style listing that OUT does not hold whole",
        description="Scan, as one source each, the dumps of LISTING (a URL such as https://database.lichess.org "
        "or a folder laid out as it: per folder list.txt, sha256sums.txt, counts.txt) that OUT does not hold "
        "whole, oldest first: each read once as a stream (by HTTP, resumed after a cut connection), its SHA-256 "
        "and its games checked against the listing before anything of it is committed. Exit 0 when OUT holds "
        "every month whole (also when nothing was new), 1 when a month failed (each named on stderr and in the "
        "summary), 2 for a listing or an OUT that cannot be used. Holds OUT's lock for the whole run.",
    )
    y.add_argument("listing", metavar="LISTING", help="a URL (https://database.lichess.org) or a folder laid out as it")
    y.add_argument("--out", required=True, help="output directory or URL (as for scan)")
    y.add_argument(
        "--folder",
        action="append",
        default=None,
        metavar="NAME[,NAME...]",
        help="the listing's folders to sync, repeat or comma-separate: standard, antichess, atomic, chess960, "
        "crazyhouse, horde, kingOfTheHill, racingKings, threeCheck, broadcast (default: every one it has)",
    )
    y.add_argument("--since", metavar="YYYY-MM", type=_month, default=None, help="sync the months from this one on")
    y.add_argument("--until", metavar="YYYY-MM", type=_month, default=None, help="sync the months up to this one")
    y.add_argument(
        "--timeout",
        type=_positive_float,
        default=60.0,
        metavar="SECONDS",
        help="seconds without a byte before a connection is resumed (default 60)",
    )
    y.add_argument(
        "--deep-verify",
        action="store_true",
        help="check the months OUT holds by their files' SHA-256, not only their sizes; a damaged month is "
        "scanned again",
    )
    _add_analysis_options(y)
    _add_run_options(y)
    y.add_argument(
        "--json",
        action="store_true",
        help="print the run's summary as one JSON line on stdout (months found, done, skipped, failed, games, "
        "checksums, exit cause; also when a signal stops the run); saved in OUT/_manifest/sync.json",
    )
    r = sub.add_parser(
        "report",
        help="summary tables and an HTML page from a scan output directory",
        description="Summary tables (CSV, Parquet) and an HTML page from the tables of 'analyzer scan --out OUT_DIR'.",
    )
    r.add_argument(
        "out_dir", metavar="OUT_DIR", help="the --out directory (or URL) of one or more 'analyzer scan' runs"
    )
    r.add_argument(
        "--report-dir", default=None, help="where to write (default: OUT_DIR/report; for a URL OUT_DIR, ./report)"
    )
    r.add_argument(
        "--partial",
        action="store_true",
        help="report on an OUT whose run did not finish: the games its unfinished sources hold so far, "
        "under a banner on the page and a flag in the CSVs (without it, such an OUT is refused)",
    )
    r.add_argument(
        "--no-check",
        action="store_true",
        help="do not re-hash the table files before reading them (only check that each listed file exists "
        "with its size): for an OUT you have just checked with 'analyzer verify'",
    )
    r.add_argument(
        "--exclude-data-issues",
        action="store_true",
        help="leave out the games of the Lichess dumps' known data issues that change the measures (wrong "
        "results, moves, ratings, self-play; docs/lichess-data-issues.md): the page says how many, coverage.csv "
        "counts them by issue",
    )
    r.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="[PROTOCOL.]KEY=VALUE",
        help="an fsspec option for a URL OUT_DIR (as for scan)",
    )
    v = sub.add_parser(
        "verify",
        help="check that a scan output's tables are whole (the dataset's fsck)",
        description="Check every table file of OUT_DIR against the manifest (its SHA-256, as written; "
        "--deep: also every page's checksum, and each input it can reach re-hashed against the SHA-256 "
        "recorded when the scan read it). Exit 0 when whole; 1 with the damaged, stale or unfinished "
        "sources listed and the command that repairs each (for this OUT_DIR, from this folder); 2 if "
        "OUT_DIR is no scan output.",
    )
    v.add_argument("out_dir", metavar="OUT_DIR", help="the --out directory (or URL) of 'analyzer scan'")
    v.add_argument(
        "--deep", action="store_true", help="also read every page, and re-hash the inputs against the record (slower)"
    )
    v.add_argument("--json", action="store_true", help="print the findings as one JSON line")
    v.add_argument("--storage-option", action="append", default=[], metavar="[PROTOCOL.]KEY=VALUE", help="as for scan")
    sh = sub.add_parser(
        "show",
        help="one game's draw-rule timeline: repetitions, claims, clocks, automatic ends, verdicts",
        description="One game's draw-rule timeline as a person reads it, from the tables of "
        "'analyzer scan --out OUT_DIR' and the game's text (python-chess): each repeated position and its "
        "plies, the claims available and to whom, the clocks, the automatic ends, the verdict per edition.",
    )
    sh.add_argument("out_dir", metavar="OUT_DIR", help="the --out directory of 'analyzer scan'")
    sh.add_argument("game", metavar="GAME", help="a Site URL (e.g. https://lichess.org/abcdefgh) or SOURCE#INDEX")
    sh.add_argument("--html", metavar="FILE", default=None, help="also write the page, boards drawn, to FILE")
    sh.add_argument(
        "--no-check",
        action="store_true",
        help="do not re-hash the table files before reading them (only check that each listed file exists "
        "with its size): for an OUT you have just checked with 'analyzer verify'",
    )
    sub.add_parser(
        "warmup",
        help="compile the numba kernels once (fills the cache; the first scan does it too)",
        description="Compile every numba kernel for this machine and fill the cache, so "
        "that the first scan starts at once.",
    )
    return p


def _editions(args) -> list:
    """The editions asked for (any kinds; a kind none of them belongs to gets its defaults)."""
    from analyzer import kinds

    custom = []
    if args.editions_file:
        try:
            custom += kinds.load_toml(args.editions_file)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--editions-file {args.editions_file}: {exc}") from None
    for text in args.custom:
        custom.append(kinds.custom_edition(**_parse_custom(text)))
    names = []
    for item in args.edition or []:
        names += [x.strip() for x in item.split(",") if x.strip()]
    editions = kinds.resolve_editions(names, custom)
    return editions + [c for c in custom if c.id not in names]


def _progress_mode(args) -> str:
    if args.quiet or args.progress == "none":
        return "none"
    if args.progress == "auto":
        return "bar" if sys.stderr.isatty() else "log"
    return args.progress


def _rerun_args(args) -> list[str]:
    """The options of this scan that a rerun must repeat to reuse its work (editions, unit
    sizes, storage options, the engine), with paths made absolute: recorded with each source,
    so that `analyzer verify` can print a repair for a copied OUT from any folder."""
    out: list[str] = []
    for e in args.edition or []:
        out += ["--edition", e]
    if args.editions_file:
        out += ["--editions-file", os.path.abspath(args.editions_file)]
    for c in args.custom:
        out += ["--custom", c]
    defaults = {"max_game_mb": 16.0, "compact_games": 1_000_000}
    for dest, flag in (
        ("max_game_mb", "--max-game-mb"),
        ("unit_mb", "--unit-mb"),
        ("frames_per_unit", "--frames-per-unit"),
        ("compact_games", "--compact-games"),
    ):
        v = getattr(args, dest, None)
        if v is not None and v != defaults.get(dest):
            out += [flag, str(v)]
    for o in args.storage_option:
        out += ["--storage-option", o]
    for d in args.syzygy:
        out += ["--syzygy", os.pathsep.join(os.path.abspath(x) for x in d.split(os.pathsep) if x)]
    if getattr(args, "unwinnable_budget", None) is not None:
        out += ["--unwinnable-budget", str(args.unwinnable_budget)]
    if args.engine != "local":
        out += ["--engine", args.engine]
    if args.scheduler:
        out += ["--scheduler", args.scheduler]
    return out


def _config_and_options(args) -> tuple:
    """(Config, ScanOptions) of a scan or a sync from its arguments (ValueError, TypeError: bad
    editions or storage options)."""
    from analyzer.engine import Config, ScanOptions
    from analyzer.io import remote

    editions = _editions(args)
    workers = args.workers or os.cpu_count() or 1
    unit_bytes = None if args.unit_mb is None else max(1, int(args.unit_mb * (1 << 20)))
    storage = remote.options_from_args(args.storage_option)
    cfg = Config(
        out=args.out,
        editions=editions,
        max_game_bytes=max(1, int(args.max_game_mb * (1 << 20))),
        frames_per_unit=getattr(args, "frames_per_unit", None),
        storage_options=storage,
        compact_games=args.compact_games,
        syzygy=tuple(args.syzygy),
        unwinnable_budget=getattr(args, "unwinnable_budget", None),
    )
    if unit_bytes is not None:
        cfg.unit_text_bytes = cfg.frame_unit_text_bytes = unit_bytes
    from analyzer._numba_env import request_fast_cache_loads

    from analyzer.warmup import ensure_compiled

    request_fast_cache_loads()

    def prepare(game_kinds) -> bool:
        gc.freeze()  # the imported modules' objects need no cyclic-GC passes during the scan (GIL time)
        gc.enable()
        compiled = ensure_compiled(game_kinds)  # a machine's first run: only the kinds of these inputs
        gc.set_threshold(*SCAN_GC_THRESHOLDS)
        return compiled

    options = ScanOptions(
        workers=workers,
        engine=args.engine,
        scheduler=args.scheduler,
        force=getattr(args, "force", False),
        deep_verify=args.deep_verify,
        progress_interval=args.progress_interval,
        progress_mode=_progress_mode(args),
        source_names=getattr(args, "source_name", None),
        command=_command_line(),
        rerun_args=_rerun_args(args),
        prepare=prepare,
    )
    return cfg, options


def cmd_scan(args) -> int:
    from analyzer.engine import run_scan
    from analyzer.engine.summary import human
    from analyzer.errors import AnalyzerError

    inputs = args.inputs or _bundled_inputs()
    if inputs.count("-") > 1:
        return _fail("standard input (-) can be given only once")
    try:
        cfg, options = _config_and_options(args)
    except (ValueError, TypeError) as exc:
        return _fail(str(exc))
    try:
        summary, code = run_scan(inputs, cfg, options)
    except AnalyzerError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.filename or 'output'}: {exc.strerror or exc}")
    if args.json:
        print(json.dumps(summary, separators=(",", ":")))
    else:
        print(human(summary))
    for key, label in (
        ("units_failed", "unit failed"),
        ("damage", "damaged input"),
        ("accounting_errors", "accounting error"),
        ("warnings", "warning"),
    ):
        for item in summary[key]:
            log.error("%s: %s", label, item)
    return code


def cmd_sync(args) -> int:
    from analyzer.engine.sync import SyncOptions, SyncRun, human, run_sync
    from analyzer.errors import AnalyzerError

    folders = [x.strip() for item in args.folder or [] for x in item.split(",") if x.strip()] or None
    try:
        cfg, options = _config_and_options(args)
    except (ValueError, TypeError) as exc:
        return _fail(str(exc))
    opts = SyncOptions(folders=folders, since=args.since, until=args.until, timeout=args.timeout)
    run = SyncRun(args.listing, args.out)
    try:
        summary, code = run_sync(args.listing, cfg, options, opts, run)
    except AnalyzerError as exc:
        if args.json:
            print(json.dumps(run.summary(exc.exit_code, str(exc)), separators=(",", ":")))
        return _fail(str(exc))
    except OSError as exc:
        if args.json:
            print(json.dumps(run.summary(EXIT_USAGE, str(exc)), separators=(",", ":")))
        return _fail(f"{exc.filename or 'output'}: {exc.strerror or exc}")
    except KeyboardInterrupt as exc:
        if args.json:  # a scheduler's SIGTERM: the cron line still says what was done
            signum = getattr(exc, "signum", signal.SIGINT)
            name = signal.Signals(signum).name
            print(json.dumps(run.summary(EXIT_SIGNAL_BASE + signum, f"stopped by {name}"), separators=(",", ":")))
        raise
    if args.json:
        print(json.dumps(summary, separators=(",", ":")))
    else:
        print(human(summary))
    for m in summary["months_failed"]:
        log.error("month failed: %s: %s", m["source"], m["reason"])
    return code


def _command_line() -> list[str]:
    """This command as typed (program name `analyzer`), recorded with the sources it writes."""
    return ["analyzer", *sys.argv[1:]]


def _refuse_unfinished(ds, partial: bool, states) -> str | None:
    """Why a report of OUT would mislead (an unfinished source among `states`), or None."""
    unfinished = ds.incomplete(states)
    if not unfinished or partial:
        return None
    names = ", ".join(f"{s.name} ({s.games:,} games so far; {s.note})" for s in unfinished[:5])
    return (
        f"{ds.root}: {len(unfinished)} source(s) a run did not finish: {names}; finish them by rerunning "
        f"the scan, or report what they hold with --partial"
    )


def _open_dataset(out_dir: str, storage_option: list[str]):
    """The Dataset of OUT with the command's storage options (ValueError: a bad option)."""
    from analyzer.engine.dataset import Dataset
    from analyzer.io import remote

    return Dataset(out_dir, remote.options_from_args(storage_option))


def cmd_report(args) -> int:
    """The report of a scan output: a folder, or tables on an object store (read through fsspec,
    the report written to a local folder, ./report by default)."""
    try:
        from analyzer import report
    except ImportError as exc:
        return _fail(f"the report needs matplotlib and Jinja2: pip install 'draw-rule-analyzer[report]' ({exc})")
    from analyzer.errors import AnalyzerError

    try:
        ds = _open_dataset(args.out_dir, args.storage_option)
    except ValueError as exc:
        return _fail(str(exc))
    if not ds.remote and not os.path.isdir(ds.root):
        return _fail(f"{args.out_dir}: not a directory (run analyzer scan --out {args.out_dir} first)")
    bad_dir = _not_a_directory(args.report_dir)
    if bad_dir:
        return _fail(f"--report-dir {args.report_dir}: {bad_dir}")
    try:
        states = ds.sources()
        refusal = _refuse_unfinished(ds, args.partial, states)
        if refusal:
            return _fail(refusal)
        if not any(s.files for s in states if s.complete or args.partial):
            return _fail(
                f"{ds.root}: holds no analyzer tables (no finished source: _manifest/*/source.json); "
                f"run analyzer scan --out {ds.root} first"
            )
        path = report.write_report(
            ds,
            args.report_dir,
            partial=args.partial,
            check=_check_of(args),
            exclude_data_issues=args.exclude_data_issues,
        )
    except AnalyzerError as exc:
        return _fail(str(exc))
    except (NotADirectoryError, IsADirectoryError, PermissionError) as exc:  # writing the report
        return _fail(f"{exc.filename or args.report_dir}: cannot write the report ({exc.strerror or exc})")
    except Exception as exc:  # on an object store: credentials, bucket, network
        if not ds.remote:
            raise
        return _fail(f"{ds.root}: cannot read ({type(exc).__name__}: {exc})")
    print(path)
    return EXIT_OK


def _not_a_directory(path: str | None) -> str | None:
    """Why `path` cannot be (or be made) a directory: it, or a folder above it, is a file."""
    if not path:
        return None
    p = os.path.abspath(path)
    while p and not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent
    if os.path.exists(p) and not os.path.isdir(p):
        return "not a directory" + (f" ({p} is a file)" if p != os.path.abspath(path) else " (a file)")
    return None


def _check_of(args) -> str:
    """How the readers check each file before serving it: its SHA-256, unless --no-check."""
    return "stat" if getattr(args, "no_check", False) else "digest"


def cmd_verify(args) -> int:
    from analyzer.engine import verify
    from analyzer.errors import AnalyzerError

    try:
        ds = _open_dataset(args.out_dir, args.storage_option)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        if not ds.is_dataset():
            return _fail(f"{args.out_dir}: not an analyzer scan output (no _manifest folder)")
        rep = verify.verify(ds, deep=args.deep, out_as_given=args.out_dir)
    except AnalyzerError as exc:
        return _fail(str(exc))
    print(json.dumps(rep.as_dict(), separators=(",", ":")) if args.json else rep.text())
    return EXIT_OK if rep.whole else EXIT_UNITS_FAILED


def cmd_show(args) -> int:
    from analyzer.errors import AnalyzerError

    try:
        from analyzer.report import show
    except ImportError as exc:
        return _fail(f"analyzer show needs Jinja2: pip install 'draw-rule-analyzer[report]' ({exc})")
    if not os.path.isdir(args.out_dir):
        return _fail(f"{args.out_dir}: not a directory (run analyzer scan --out {args.out_dir} first)")
    from analyzer.engine.dataset import Dataset

    ds = Dataset(args.out_dir)
    if not ds.is_dataset():
        return _fail(f"{args.out_dir}: not an analyzer scan output (no _manifest folder)")
    try:
        source, index = show.find(ds, args.game, check=_check_of(args))
        view = show.load(ds, source, index, check=_check_of(args))
    except AnalyzerError as exc:
        return _fail(str(exc).strip("'\""))
    print(show.text(view), end="")
    if args.html:
        try:
            with open(args.html, "w", encoding="utf-8") as fh:
                fh.write(show.html(view))
        except OSError as exc:
            return _fail(f"{args.html}: cannot write ({exc.strerror or exc})")
        print(args.html)
    return EXIT_OK


def cmd_warmup(args) -> int:
    from analyzer import kernels
    from analyzer.warmup import build_ahead, compile_workers, is_warm, warmup

    t0 = time.time()
    # The chess kernels ahead of time, where they can be (analyzer.aot): for this CPU, also
    # where the wheel's portable ones would serve
    build_ahead(["chess"], even_if_portable=True)
    warmup(processes=1 if is_warm(["chess"]) else compile_workers())
    print(
        json.dumps(
            {
                "warmup_seconds": round(time.time() - t0, 2),
                "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR"),
                "kernels": kernels.source(),
            }
        )
    )
    return EXIT_OK


def _skip_numba_blas_probe() -> None:
    """numba probes for BLAS by importing scipy.linalg when it first loads a kernel: ~0.1-0.2 s
    of every scan's start-up where scipy is installed. The kernels use no linear algebra, so
    the command-line process (ours alone) hides scipy from that probe."""
    if "scipy" not in sys.modules and "numba" not in sys.modules:
        sys.modules["scipy"] = None  # type: ignore[assignment]


class _HidePandas:
    """A meta-path finder for which pandas does not exist (see _skip_pyarrow_pandas_probe)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden from pyarrow)", name=name)
        return None


def _skip_pyarrow_pandas_probe(args) -> None:
    """pyarrow imports pandas, where it is installed, the first time it builds an array from
    a list or numpy array, or converts one to numpy (its pandas shim asks whether the data is a
    pandas object): ~0.2-0.3 s of every scan's start-up. A scan never uses pandas, so in the
    command-line process of a scan (ours alone, and its forked workers) pandas cannot be found,
    as where it is not installed (sys.modules["pandas"] = None would not do: pyarrow's compiled
    import takes a None entry for the module). The Dask engine keeps it (Dask may use it)."""
    if getattr(args, "engine", None) == "dask" or getattr(args, "scheduler", None) or "pandas" in sys.modules:
        return
    sys.meta_path.insert(0, _HidePandas())


def _setup_logging(args) -> None:
    level = logging.ERROR if args.quiet else (logging.DEBUG if args.verbose else logging.INFO)
    for h in [h for h in log.handlers if getattr(h, "_analyzer_cli", False)]:
        log.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[analyzer] %(asctime)s %(message)s", "%H:%M:%S"))
    handler._analyzer_cli = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # a command is required: the usage on stderr, as for any bad argument
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    _setup_logging(args)
    if args.command in ("scan", "sync", "warmup"):
        _skip_numba_blas_probe()
    if args.command in ("scan", "sync"):
        # Importing numba and pyarrow makes ~10^6 long-lived objects and no garbage: the cyclic
        # GC would only traverse them (a full pass took 13-20 ms here, and ~1 ms each middle-
        # generation pass). It is back on, with the imports frozen, when the scan starts.
        gc.disable()
    if args.command in ("scan", "sync", "warmup"):
        _skip_pyarrow_pandas_probe(args)
    _stop_on_signals()
    try:
        command = {
            "scan": cmd_scan,
            "sync": cmd_sync,
            "report": cmd_report,
            "verify": cmd_verify,
            "show": cmd_show,
            "warmup": cmd_warmup,
        }
        code = command[args.command](args)
        sys.stdout.flush()  # here, where a closed pipe (analyzer verify OUT | head) can be caught
        return code
    except BrokenPipeError:
        # The reader of our output went away (| head): end quietly, as a shell tool does.
        # (stdout is pointed at /dev/null so that the interpreter's own flush at exit is quiet.)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_SIGNAL_BASE + signal.SIGPIPE
    except Stopped as exc:
        print(f"analyzer: stopped by {exc.name}; rerun the same command to resume", file=sys.stderr)
        return EXIT_SIGNAL_BASE + exc.signum
    except KeyboardInterrupt:
        print("analyzer: interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_SIGNAL_BASE + signal.SIGINT


class Stopped(KeyboardInterrupt):
    """A SIGTERM or SIGHUP (a scheduler stopping the job, a closed terminal): unwound like
    Ctrl-C (temporary files removed, workers stopped, the lock released), so a rerun resumes."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


def _stop_on_signals() -> None:
    def handler(signum, frame):
        raise Stopped(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread (an embedding program): its own handlers stay
            pass


if __name__ == "__main__":
    sys.exit(main())
