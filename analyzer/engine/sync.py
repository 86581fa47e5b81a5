"""`analyzer sync LISTING --out OUT`: the scheduled job over Lichess's dumps as the database
site publishes them (a listing: io.listing).

One run, under OUT's lock from its first step to its last:

1. read the listing: every dump of its folders (standard, the variants, the broadcasts), with
   its SHA-256 (sha256sums.txt) and its games (counts.txt);
2. the dumps OUT already holds whole are left as they are: a dump is whole when its source
   (named by its file, as `analyzer scan` names it) is committed with the listing's SHA-256 as
   the SHA-256 of the input it read, as many games as counts.txt says, the editions asked for,
   and every file of its tables present with its recorded size. Nothing of such a month is read;
3. every other dump, oldest month first, is one source scanned by the ordinary scan
   (engine.scan.scan_locked): its file read once, in order, as a stream (by HTTP with
   resumption after a cut connection, io.listing.HTTPStream; or from the folder), hashed as it
   is read, its units analyzed as they are cut. An unfinished month (a run stopped by a signal
   or a crash) resumes: the units its earlier run finished are reused, once the rerun has read
   the same bytes up to them (UnitSpec.input_prefix: the SHA-256 of the bytes read when each
   unit was cut);
4. before a month's source record commits it (the scan's `accept`): the SHA-256 of the bytes
   read must be the listing's, the tables must hold as many games as counts.txt counts, every
   one of them with the tag it counts (`[Site ` lines; `[GameURL ` for the broadcasts), and
   every reused unit must have been read from the same bytes. Otherwise nothing of the month is
   committed: what the run wrote of it is removed (Dataset.remove_source), the month is named
   with what differed, and the run exits 1. A month whose reused units were read from other
   bytes is scanned once more from its start, within the same run.

The summary (`run_sync`'s dict; `analyzer sync --json` prints it as one line, and it is
saved as OUT/_manifest/sync.json) says what was found, done, skipped and failed, the games, the
checksums verified, and why the run exits as it does: 0 when every month is whole (also when
there was nothing new), 1 when a month failed, 2 for a listing or an OUT that cannot be used (a
lock held by another run).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time

from analyzer.engine.config import Config, ScanOptions, edition_ids, edition_params
from analyzer.engine.dataset import Dataset, names
from analyzer.engine.scan import scan_locked, union_editions
from analyzer.errors import DamagedRecord, InputError
from analyzer.io import lichess_db, listing, remote, sources

log = logging.getLogger("analyzer")

# Why a month is scanned again from its start within the same run (a reason `accept` gives).
STALE_UNITS = "units an earlier run finished were read from other bytes than this run's"


@dataclasses.dataclass
class SyncOptions:
    """What `analyzer sync` reads of a listing (how it scans is the ScanOptions)."""

    folders: list[str] | None = None  # the listing's folders to sync (default: every one it has)
    since: str | None = None  # first month (YYYY-MM) to sync
    until: str | None = None  # last month
    timeout: float = listing.TIMEOUT  # seconds without a byte before a connection is resumed


@dataclasses.dataclass
class MonthResult:
    source: str
    folder: str
    month: str
    file: str
    status: str  # done | skipped (whole before this run) | failed
    games: int | None = None
    sha256: str | None = None
    reason: str = ""
    seconds: float = 0.0
    resumes: int = 0  # connections resumed while reading it
    games_reused: int = 0  # games of units an earlier (unfinished) run of it had finished
    attempts: int = 0

    def as_dict(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, "", 0) or k == "status"}


@dataclasses.dataclass
class SyncRun:
    """What a run has done so far (the command line prints it also when a signal stops it)."""

    listing: str
    out: str
    started: float = dataclasses.field(default_factory=time.time)
    found: int = 0
    folders: list[str] = dataclasses.field(default_factory=list)
    months: list[MonthResult] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    def summary(self, code: int, cause: str) -> dict:
        done = [m for m in self.months if m.status == "done"]
        failed = [m for m in self.months if m.status == "failed"]
        return {
            "command": "sync",
            "listing": self.listing,
            "out": self.out,
            "folders": self.folders,
            "months_found": self.found,
            "months_done": [m.source for m in done],
            "months_skipped": [m.source for m in self.months if m.status == "skipped"],
            "months_failed": [{"source": m.source, "reason": m.reason} for m in failed],
            "games": sum(m.games or 0 for m in done),
            "games_reused": sum(m.games_reused for m in done),
            "checksums": {m.source: m.sha256 for m in done},
            "resumes": sum(m.resumes for m in self.months),
            "listing_problems": self.problems,
            "months": [m.as_dict() for m in self.months if m.status != "skipped"],
            "seconds": round(time.time() - self.started, 3),
            "exit": code,
            "exit_cause": cause,
        }


def _month_window(entries: list[listing.Entry], opts: SyncOptions) -> list[listing.Entry]:
    out = []
    for e in entries:
        if opts.since and (not e.month or e.month < opts.since):
            continue
        if opts.until and (not e.month or e.month > opts.until):
            continue
        out.append(e)
    return out


def _whole(ds: Dataset, e: listing.Entry, record: dict | None, cfg: Config, check: str = "stat") -> str | None:
    """None if OUT holds the dump whole (see the module's doc), else why not. `check`: how each
    file of its tables is checked (stat: present with its size; digest: its SHA-256)."""
    if record is None:
        return "not in OUT"
    if record.get("input_sha256") != e.sha256:
        return f"OUT holds it read with SHA-256 {record.get('input_sha256')}, the listing says {e.sha256}"
    tag = lichess_db.count_tag(e.folder)
    tagged = sum((u.get("counts") or {}).get("tags", {}).get(tag, 0) for u in record.get("units", []))
    if record.get("games") != e.games or tagged != e.games:
        return f"OUT holds {record.get('games')} games ({tagged} with a [{tag}] tag), counts.txt says {e.games}"
    requested = edition_params(cfg.editions_for(record.get("input", {}).get("game_type") or "chess"))
    held = record.get("edition_params", {})
    if any(held.get(eid) != p for eid, p in requested.items()):
        return f"editions {sorted(set(requested) - set(held))} are not in OUT's tables of it"
    damage = ds.check_entries(e.name, ds.files_of(record), check)  # type: ignore[arg-type]
    if damage:
        return f"{damage[0].path}: {damage[0].problem}"
    return None


def _accept(e: listing.Entry):
    """The scan's `accept` for one dump: why its source must not be committed, or None."""
    tag = lichess_db.count_tag(e.folder)

    def accept(info, found: dict) -> str | None:
        recs = found.get("records") or []
        sha = found.get("input_sha256")
        if sha is None:
            damage = [d for r in recs for d in r.get("damage", [])]
            return "read incompletely" + (f": {damage[-1]}" if damage else "")
        if sha != e.sha256:
            return f"SHA-256 {sha} differs from sha256sums.txt's {e.sha256}"
        # (before the count: units of other bytes would make it differ, and are read again)
        prefixes = found.get("digest", {}).get("prefixes") or {}
        stale = [r["unit"] for r in recs if r.get("input_prefix") != prefixes.get(r["unit"])]
        if stale:
            return f"{STALE_UNITS} (unit {stale[0]}{' and others' if len(stale) > 1 else ''})"
        games = found.get("games")
        tagged = sum(r.get("counts", {}).get("tags", {}).get(tag, 0) for r in recs)
        if games != e.games or tagged != e.games:
            return f"{games} games ({tagged} with a [{tag}] tag) where counts.txt says {e.games}"
        return None

    return accept


def _open(e: listing.Entry, opts: SyncOptions) -> tuple[sources.InputInfo, listing.HTTPStream | None]:
    """The dump as an input read once from a stream opened here (its head sniffed)."""
    digest = f"sha256:{e.sha256}"
    if listing.is_http(e.location):
        raw = listing.HTTPStream(e.location, timeout=opts.timeout).open()
        size = raw.size if raw.size is not None else -1
        try:
            info = sources.inspect_stream(e.location, raw, e.name, size, raw.mtime, digest, url=True)
        except BaseException:
            raw.close()
            raise
        return info, raw
    path = os.path.abspath(e.location)
    try:
        fh = open(path, "rb", buffering=0)  # noqa: SIM115 - handed to the scan's reader, which closes it
    except FileNotFoundError:
        raise InputError(f"{path}: listed in {e.folder}/list.txt but not in the folder") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    st = os.fstat(fh.fileno())
    try:
        return sources.inspect_stream(path, fh, e.name, st.st_size, st.st_mtime, digest), None
    except BaseException:
        fh.close()
        raise


def _sync_month(
    ds: Dataset,
    e: listing.Entry,
    record: dict | None,
    cfg: Config,
    options: ScanOptions,
    opts: SyncOptions,
    lock,
    listing_root: str,
) -> MonthResult:
    res = MonthResult(e.name, e.folder, e.month, e.file, "failed")
    t0 = time.time()
    month_cfg = cfg
    force = False
    if record is not None:
        # OUT holds another reading of it (republished, other editions, files lost): it is
        # scanned again from its start with the editions it had and the ones asked for
        kind = record.get("input", {}).get("game_type") or "chess"
        editions, _ = union_editions(kind, record, cfg.editions_for(kind))  # type: ignore[arg-type]
        others = [x for x in cfg.editions if x.kind != kind]
        month_cfg = dataclasses.replace(cfg, editions=others + editions)
        force = True
    for attempt in (1, 2):
        res.attempts = attempt
        info, raw = _open(e, opts)
        try:
            summary, _ = scan_locked(
                ds,
                [info],
                month_cfg,
                dataclasses.replace(
                    options,
                    accept=_accept(e),
                    force=force,
                    deep_verify=False,
                    source_names=None,
                    record={
                        "sync": {
                            "listing": listing_root,
                            "folder": e.folder,
                            "month": e.month,
                            "file": e.file,
                            "listed_sha256": e.sha256,
                            "listed_games": e.games,
                            "count_tag": lichess_db.count_tag(e.folder),
                        }
                    },
                ),
                lock,
            )
        finally:
            sources.forget_stream(info.path)
            if raw is not None:
                res.resumes += raw.resumes
        src = summary["sources"][0]
        res.games_reused = src.get("games_reused") or 0
        if src.get("rejected"):
            res.reason = src["rejected"]
            if res.reason.startswith(STALE_UNITS) and attempt == 1:
                log.warning("%s: %s: reading it again from its start", e.name, res.reason)
                force = True
                continue
        elif summary["units_failed"]:
            res.reason = f"{len(summary['units_failed'])} unit(s) failed: {summary['units_failed'][0]}"
        elif src.get("complete"):
            res.status = "done"
            res.games = src.get("games")
            res.sha256 = src.get("input_sha256")
        else:
            res.reason = "not finished (see the log)"
        break
    res.seconds = round(time.time() - t0, 3)
    return res


def run_sync(root: str, cfg: Config, options: ScanOptions | None = None, opts: SyncOptions | None = None, run=None):
    """Sync OUT (cfg.out) with the listing at `root` (a URL or a folder). Returns (summary,
    exit code). `run` (a SyncRun) collects what is done as it is done, so that a caller can
    report it when a signal (KeyboardInterrupt) stops the run. Raises an AnalyzerError for a
    listing or an OUT that cannot be used (exit 2)."""
    options = options or ScanOptions()
    opts = opts or SyncOptions()
    cfg.out = remote.localize(cfg.out)
    if remote.is_url(cfg.out):
        cfg.out = cfg.out.rstrip("/")
    cfg.run_id = cfg.run_id or names.token()
    run = run or SyncRun(root, cfg.out)
    ds = cfg.dataset
    ds.prepare()
    lock = ds.lock()
    lock.acquire()
    try:
        lst = listing.read_listing(root, opts.folders, opts.timeout)
        run.folders = lst.folders
        run.problems = lst.problems
        entries = _month_window(lst.entries, opts)
        run.found = len(entries)
        for e in entries:
            try:
                record = ds.source_record(e.name)
            except DamagedRecord as exc:
                log.warning("%s: its source record is damaged (%s): scanned again", e.name, exc)
                record = None
            if e.sha256 is None or e.games is None:
                missing = " and ".join(
                    f for f, v in (("sha256sums.txt", e.sha256), ("counts.txt", e.games)) if v is None
                )
                run.months.append(
                    MonthResult(
                        e.name, e.folder, e.month, e.file, "failed", reason=f"not in {missing}: it cannot be checked"
                    )
                )
                continue
            why = _whole(ds, e, record, cfg, "digest" if options.deep_verify else "stat")  # type: ignore[arg-type]
            if why is None:
                run.months.append(
                    MonthResult(
                        e.name, e.folder, e.month, e.file, "skipped", games=(record or {}).get("games"), sha256=e.sha256
                    )
                )
                continue
            log.info("%s: %s: syncing it", e.name, why)
            try:
                res = _sync_month(ds, e, record, cfg, options, opts, lock, lst.root)  # type: ignore[arg-type]
            except InputError as exc:
                res = MonthResult(e.name, e.folder, e.month, e.file, "failed", reason=str(exc))
            run.months.append(res)
            if res.status == "failed":
                log.error("%s: %s", e.name, res.reason)
            else:
                log.info("%s: done, %s games, SHA-256 %s as listed", e.name, f"{res.games:,}", res.sha256)
        failed = [m for m in run.months if m.status == "failed"]
        done = [m for m in run.months if m.status == "done"]
        if failed:
            code, cause = 1, f"{len(failed)} month(s) failed: " + "; ".join(f"{m.source}: {m.reason}" for m in failed)
        elif done:
            code, cause = 0, f"{len(done)} month(s) done"
        else:
            code, cause = 0, "nothing new"
        summary = run.summary(code, cause)
        summary["editions"] = edition_ids(cfg.editions)
        ds.write_sync_summary(summary)
        return summary, code
    finally:
        lock.release()


def human(summary: dict) -> str:
    """The summary as a few lines for a terminal."""
    lines = [f"{'month':<44}  {'games':>11}  status"]
    for m in summary["months"]:
        what = m["status"] + (f": {m['reason']}" if m.get("reason") else "")
        if m.get("resumes"):
            what += f" ({m['resumes']} connection(s) resumed)"
        games = f"{m['games']:,}" if m.get("games") is not None else "-"
        lines.append(f"{m['source']:<44}  {games:>11}  {what}")
    skipped = len(summary["months_skipped"])
    lines.append(
        f"{summary['months_found']} month(s) listed in {', '.join(summary['folders']) or '-'}: "
        f"{len(summary['months_done'])} done, {skipped} already whole, {len(summary['months_failed'])} failed; "
        f"{summary['games']:,} games in {summary['seconds']:.1f} s"
        + (f". {summary['exit_cause']}" if not summary["months_failed"] else ": the failed months above are not in OUT")
    )
    return "\n".join(lines)


__all__ = ["MonthResult", "SyncOptions", "SyncRun", "human", "run_sync"]
