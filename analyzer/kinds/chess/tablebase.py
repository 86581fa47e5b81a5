"""Syzygy tablebase probes at the positions where a move-count rule fired (`--syzygy DIR`).

Probes go through python-chess (`chess.syzygy`): they run at the few 50- and 75-move events of a
block (a few per ten thousand games) and at final positions with few enough pieces, never per
position, so they are off the hot path. Each process opens the tables once per list of folders
(`tables(dirs)`: the scan's worker threads share it, forked and spawned workers open their own)
and keeps its probes by position key: the replay's Zobrist key of pieces, side to move, castling
rights and the e.p. file where an e.p. capture is legal, which is everything WDL and DTZ depend
on (not the halfmove clock: Syzygy values assume a count at zero).

Values, as python-chess's probe_wdl and probe_dtz define them, for the side to move:
  WDL  2 win, 1 cursed win (a win, but not within the 50-move rule), 0 draw, -1 blessed loss,
       -2 loss;
  DTZ  plies to the next zeroing move (capture or pawn move) with best play, signed as WDL;
       |DTZ| > 100 for cursed wins and blessed losses, where a zeroing move comes in |DTZ| plies
       or |DTZ| - 100 (when a later phase is the cursed one); the value may be one ply short
       (n for n + 1), never at the edge of the 50-move rule (python-chess's documentation).

A folder that is not there, a table file that cannot be read or whose data is damaged: one
warning each (`warnings()`), the values null, never a failed scan.
"""

from __future__ import annotations

import hashlib
import os
import threading

PROBED_OK = 0
NO_TABLE = 1  # no table (or one it depends on) for this material
DAMAGED = 2  # a table file could not be read
CASTLING = 3  # Syzygy tables hold no position with castling rights
STATUS_NAMES = ("probed", "no_table", "damaged", "castling_rights")

_CACHE_MAX = 1 << 20  # probes kept per process (about 100 MB at the most)


def normalize_dirs(dirs) -> tuple[str, ...]:
    """Absolute folders, in order, from --syzygy values (each may hold several, joined by the
    platform's path separator, as engines take SyzygyPath)."""
    out: list[str] = []
    for d in dirs or ():
        for part in str(d).split(os.pathsep):
            if part.strip():
                p = os.path.abspath(os.path.expanduser(part.strip()))
                if p not in out:
                    out.append(p)
    return tuple(out)


def _table_files(dirs: tuple[str, ...]) -> list[tuple[str, str, int]]:
    """(folder, file name, size) of every .rtbw / .rtbz file in the folders."""
    out = []
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name.endswith((".rtbw", ".rtbz")):
                try:
                    out.append((d, name, os.path.getsize(os.path.join(d, name))))
                except OSError:
                    pass
    return out


def fingerprint(dirs) -> dict:
    """What identifies a set of tables for reuse of finished results: the folders, and the name
    and size of every table file in them (a rescan with other tables is not silently reused)."""
    dirs = normalize_dirs(dirs)
    files = _table_files(dirs)
    h = hashlib.sha256()
    for _, name, size in sorted((n, s, d) for d, n, s in files):
        h.update(f"{name}:{size}\n".encode())
    return {"dirs": list(dirs), "files": len(files), "digest": h.hexdigest()[:32]}


# The most pieces of any table, by the tables' names (KBBvKN: 5).
def _pieces_of(name: str) -> int:
    return len(name.replace("v", ""))


_MAGIC = {".rtbw": bytes([0x71, 0xE8, 0x23, 0x5D]), ".rtbz": bytes([0xD7, 0x66, 0x0C, 0xA5])}


class Tables:
    """The Syzygy tables of some folders, opened once, and the probes made so far."""

    def __init__(self, dirs: tuple[str, ...]):
        import chess.syzygy

        self.dirs = dirs
        self.lock = threading.Lock()
        self.cache: dict[int, tuple[int, int | None, int, bool]] = {}
        self._warnings: dict[str, None] = {}
        self.tb = chess.syzygy.Tablebase()
        wdl_names: set[str] = set()
        dtz_names: set[str] = set()
        for d in dirs:
            if not os.path.isdir(d):
                self._warn(f"syzygy: {d} is not a folder: no tables read from it")
                continue
            found = 0
            for _, name, size in _table_files((d,)):
                stem, ext = os.path.splitext(name)
                path = os.path.join(d, name)
                problem = self._check_file(path, ext, size)
                if problem:
                    self._warn(f"syzygy: {path}: {problem}; positions that need it get no value")
                    continue
                try:
                    n = self.tb.add_file(path)
                except Exception as exc:  # noqa: BLE001 - a bad file is a warning, never a failed scan
                    self._warn(f"syzygy: {path}: cannot be read ({type(exc).__name__}: {exc})")
                    continue
                found += n
                if n:
                    (wdl_names if ext == ".rtbw" else dtz_names).add(stem)
            if not found:
                self._warn(f"syzygy: {d} holds no Syzygy table files (.rtbw, .rtbz)")
        for name in sorted(wdl_names - dtz_names):
            self._warn(f"syzygy: {name}.rtbz (DTZ) is missing: tb_dtz and win_in_time are null for {name}")
        self.max_pieces = max((_pieces_of(n) for n in wdl_names), default=0)
        self.names = {chess.syzygy.normalize_tablename(n) for n in wdl_names}  # tables of WDL by name

    def covers(self, name: str) -> bool:
        """Is there a WDL table of this material (a Syzygy name, the stronger side first)? K v K
        needs none (python-chess answers it)."""
        return name in self.names or name == "KvK"

    @staticmethod
    def _check_file(path: str, ext: str, size: int) -> str | None:
        """Why a table file is unusable (a Syzygy file is 16 bytes past a multiple of 64 and
        starts with its magic number), or None."""
        if size % 64 != 16:
            return f"damaged (its size {size} is not a Syzygy table's: truncated?)"
        try:
            with open(path, "rb") as fh:
                head = fh.read(4)
        except OSError as exc:
            return f"cannot be read ({exc})"
        if head != _MAGIC[ext]:
            return "damaged (not a Syzygy table: wrong magic number)"
        return None

    def _warn(self, message: str) -> None:
        self._warnings.setdefault(message, None)

    def warnings(self) -> list[str]:
        with self.lock:
            return list(self._warnings)

    def probe(self, key: int, board, want_dtz: bool = True, ended: int = 0) -> tuple[int, int | None, int]:
        """(WDL, DTZ or None, status) of the position `board` whose replay key is `key`; WDL is
        meaningful only with status PROBED_OK. DTZ is probed only if `want_dtz` (a DTZ probe
        costs python-chess ~1.3 ms, a WDL probe ~0.2 ms); a draw's DTZ is 0 without one.
        `ended`: the replay knows the position is checkmate (1), stalemate (2) or dead by
        material (3: neither side can mate by any sequence, python-chess's
        is_insufficient_material: K v K, K and a minor piece v K, bishops all on one colour):
        its values are python-chess's for such positions (-2 / -1, 0 / 0 and 0 / 0: a table holds
        no win where no mate exists) without a probe, where a table of its material is there."""
        with self.lock:
            hit = self.cache.get(key)
            if hit is not None and (hit[1] is not None or not want_dtz or hit[2] != PROBED_OK or hit[3]):
                return hit[:3]
            out = self._probe(board, want_dtz, ended, hit)
            if len(self.cache) >= _CACHE_MAX:
                self.cache.clear()
            self.cache[key] = out
            return out[:3]

    def _probe(self, board, want_dtz: bool, ended: int, hit) -> tuple[int, int | None, int, bool]:
        """(WDL, DTZ, status, whether DTZ was asked for): the cache's entry."""
        import chess.syzygy

        if board.castling_rights:
            return 0, None, CASTLING, True
        if board.occupied == board.kings:  # K v K: python-chess answers a draw without a table
            return 0, 0, PROBED_OK, True
        if chess.syzygy.calc_key(board) not in self.tb.wdl:  # (python-chess would raise MissingTableError)
            return 0, None, NO_TABLE, True
        if ended == 1:
            return -2, -1, PROBED_OK, True
        if ended == 2 or ended == 3:
            return 0, 0, PROBED_OK, True
        if hit is not None:
            wdl = hit[0]
        else:
            try:
                wdl = self.tb.probe_wdl(board)
            except chess.syzygy.MissingTableError:
                return 0, None, NO_TABLE, True
            except Exception as exc:  # noqa: BLE001 - damaged data: a warning, the value null
                self._warn(
                    f"syzygy: a table needed for {_material_name(board)} is damaged ({type(exc).__name__}: {exc}); "
                    "its positions get no value"
                )
                return 0, None, DAMAGED, True
        if wdl == 0:
            return 0, 0, PROBED_OK, True
        if not want_dtz:
            return wdl, None, PROBED_OK, False
        try:
            dtz = self.tb.probe_dtz(board)
        except chess.syzygy.MissingTableError:
            dtz = None
        except Exception as exc:  # noqa: BLE001
            self._warn(
                f"syzygy: a DTZ table needed for {_material_name(board)} is damaged ({type(exc).__name__}: {exc}); "
                "tb_dtz is null there"
            )
            dtz = None
        return wdl, dtz, PROBED_OK, True


def _material_name(board) -> str:
    import chess
    import chess.syzygy

    sides = []
    for color in (chess.WHITE, chess.BLACK):
        sides.append(
            "K" + "".join(chess.piece_symbol(t).upper() * len(board.pieces(t, color)) for t in (5, 4, 3, 2, 1))
        )
    return chess.syzygy.normalize_tablename("v".join(sides))


_OPEN: dict[tuple[str, ...], Tables] = {}
_OPEN_LOCK = threading.Lock()


def tables(dirs) -> Tables:
    """This process's Tables of the folders (opened on first use, then shared by its threads)."""
    key = normalize_dirs(dirs)
    t = _OPEN.get(key)
    if t is None:
        with _OPEN_LOCK:
            t = _OPEN.get(key)
            if t is None:
                t = Tables(key)
                _OPEN[key] = t
    return t
