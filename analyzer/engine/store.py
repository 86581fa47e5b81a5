"""Where OUT lives: the one interface (a "store") through which parts, records and the lock are
written, read, listed and removed. Two implementations:

- LocalStore: a directory. Exactly what the engine always did: every file written under a
  temporary name and renamed (os.replace), JSON records fsynced, an fcntl lock on OUT/.lock.
- ObjectStore: an fsspec URL (s3://, gs://, az://, memory://, ...). Object stores have no
  rename, so a part is written once under a name of its own (`part-000003.<token>.parquet`,
  a new token per write) and is *committed* by the record that names it: the unit record
  (`_manifest/<dir>/unit-*.json`, written after its parts) and the source record
  (`source.json`, written last). Readers trust only parts named by a source record; parts that
  no record names (left by a killed run) are removed by the next run of that source. One PUT
  is atomic on S3, GCS and Azure, so a record is never seen half-written. The lock is a lease
  object (LeaseLock below).

`open_store(out)` picks the implementation: a URL -> ObjectStore, anything else -> LocalStore.
"""

from __future__ import annotations

import builtins
import io
import json
import logging
import os
import socket
import threading
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.io import remote

log = logging.getLogger("analyzer")


def is_remote(out: str) -> bool:
    return remote.is_url(remote.localize(out))


def open_store(out: str):
    out = remote.localize(out)
    if remote.is_url(out):
        return ObjectStore(out)
    return LocalStore(out)


def parquet_options(schema: pa.Schema) -> dict:
    """zstd; Parquet dictionary encoding for the text columns only and min/max statistics for
    the numeric ones only: ~20% less time per part and smaller files (statistics of names and
    codes, which every part spans, would not prune anything). Every page carries a CRC, so a
    reader that verifies them (pyarrow's page_checksum_verification, `analyzer verify --deep`)
    catches a flipped byte inside a page."""
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    other = [f.name for f in schema if f.name not in text]
    return {"compression": "zstd", "use_dictionary": text, "write_statistics": other, "write_page_checksum": True}


class LocalStore:
    """OUT as a local directory (see analyzer.engine.parts for the atomic writes)."""

    remote = False

    def __init__(self, root: str):
        self.root = root

    def committed_name(self, path: str) -> str:
        """The name a part is written under: its own (the rename makes it atomic)."""
        return path

    def put(self, path: str, data: bytes) -> None:
        from analyzer.engine.layout import temp_path

        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = temp_path(path)
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise

    def get(self, path: str) -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def size(self, path: str) -> int:
        return os.stat(path).st_size

    def list(self, folder: str) -> list[str]:
        """Names of the regular files directly in `folder` (links not followed; [] if none)."""
        if not os.path.isdir(folder) or os.path.islink(folder):
            return []
        with os.scandir(folder) as it:
            return sorted(e.name for e in it if e.is_file(follow_symlinks=False))

    def delete(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def read_table(self, path: str) -> pa.Table:
        # (ParquetFile.read, not pq.read_table, which imports pyarrow.compute: tests/test_start_up.py)
        return pq.ParquetFile(path).read()

    def num_rows(self, path: str) -> int:
        return pq.read_metadata(path).num_rows

    def lock(self):
        from analyzer.engine.lock import OutLock

        return OutLock(self.root)


class ObjectStore:
    """OUT as an fsspec URL. Every call is retried on transient errors (remote.with_retries)."""

    remote = True

    def __init__(self, root: str):
        self.root = root.rstrip("/")
        self.fs = remote.filesystem(self.root)

    def __getstate__(self):
        return {"root": self.root}

    def __setstate__(self, state):
        ObjectStore.__init__(self, state["root"])

    def committed_name(self, path: str) -> str:
        """A name no other write used: `x.parquet` -> `x.<token>.parquet`."""
        head, dot, ext = path.rpartition(".")
        return f"{head}.{uuid.uuid4().hex[:12]}.{ext}" if dot else f"{path}.{uuid.uuid4().hex[:12]}"

    def put(self, path: str, data: bytes, **kwargs):
        return remote.with_retries(f"write of {path}", self.fs.pipe_file, path, data, **kwargs)

    def get(self, path: str) -> bytes:
        # start=0: one ranged GET (s3fs would first ask for the size of a whole-object read)
        return remote.with_retries(f"read of {path}", self.fs.cat_file, path, start=0)

    def exists(self, path: str) -> bool:
        return remote.with_retries(f"stat of {path}", self.fs.exists, path)

    def size(self, path: str) -> int:
        return int(remote.with_retries(f"stat of {path}", self.fs.info, path)["size"])

    def list(self, folder: str) -> list[str]:
        try:
            entries = remote.with_retries(f"list of {folder}", self.fs.ls, folder.rstrip("/"), detail=True)
        except FileNotFoundError:
            return []
        return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "file")

    # `builtins.list`: inside the class body `list` is the method above
    def folders(self, folder: str) -> builtins.list[str]:
        try:
            entries = remote.with_retries(f"list of {folder}", self.fs.ls, folder.rstrip("/"), detail=True)
        except FileNotFoundError:
            return []
        return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory")

    def delete(self, path: str) -> None:
        try:
            remote.with_retries(f"delete of {path}", self.fs.rm_file, path)
        except FileNotFoundError:
            pass

    def read_table(self, path: str) -> pa.Table:
        return pq.ParquetFile(pa.BufferReader(self.get(path))).read()

    def num_rows(self, path: str) -> int:
        """From the Parquet footer only (a ranged read of the object's end)."""

        def footer() -> int:
            with self.fs.open(path, "rb", block_size=1 << 16, cache_type="readahead") as fh:
                return pq.read_metadata(fh).num_rows

        return remote.with_retries(f"footer of {path}", footer)

    def lock(self):
        return LeaseLock(self)


# -- the lease: one run at a time on an object store ------------------------------------------

LEASE_SECONDS = float(os.environ.get("ANALYZER_LEASE_SECONDS", "60"))


def _proc_start(pid: int) -> str:
    """The start time of a process (Linux: /proc/<pid>/stat field 22), so that a reused pid is
    not taken for the run that held a lease."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _alive(holder: dict) -> bool:
    """Whether the holder of a lease taken on this host still runs (other hosts: unknown -> True)."""
    if holder.get("host") != socket.gethostname():
        return True
    pid = holder.get("pid")
    if not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not holder.get("pid_start") or _proc_start(pid) == holder["pid_start"]


class LeaseLock:
    """One writer per OUT on an object store, where there is no fcntl: a lease object OUT/.lock
    that names its holder (host, pid, a token) and an expiry, created by a conditional PUT
    (`If-None-Match: *`: of two runs starting at once, exactly one creates it) and renewed by a
    thread every ttl/4 (S3: `If-Match` on the holder's own ETag, so a renewal never overwrites
    a lease another run took over).

    A lease is taken over when it has expired (its holder stopped renewing: killed, or its
    machine gone; expiry is judged by this machine's clock, so clocks must agree to within the
    ttl) or at once when its holder ran on this host and its process is gone (kill -9). A run
    that finds its lease taken over (it stalled for longer than the ttl) marks it `lost`: the
    run then ends with an error instead of reporting success.

    Stores without conditional writes (pipe_file has no mode="create"): write, wait, read back,
    and proceed only if the lease is still ours; this narrows the race but does not close it
    (logged as a warning)."""

    def __init__(self, store: ObjectStore, ttl: float | None = None):
        self.store = store
        self.path = f"{store.root}/.lock"
        self.ttl = ttl if ttl is not None else LEASE_SECONDS
        self.token = uuid.uuid4().hex
        self.etag: str | None = None
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _body(self) -> bytes:
        pid = os.getpid()
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": pid,
                "pid_start": _proc_start(pid),
                "token": self.token,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "expires": time.time() + self.ttl,
                "ttl": self.ttl,
            }
        ).encode()

    def _read(self) -> tuple[dict | None, str | None]:
        try:
            info = remote.with_retries("stat of the lease", self.store.fs.info, self.path)
            data = self.store.get(self.path)
        except FileNotFoundError:
            return None, None
        try:
            return json.loads(data), (info.get("ETag") or "").strip('"') or None
        except ValueError:
            return {}, None

    def _put(self, **cond) -> None:
        resp = self.store.put(self.path, self._body(), **cond)
        etag = resp.get("ETag") if isinstance(resp, dict) else None
        self.etag = etag.strip('"') if etag else None

    def _s3(self) -> bool:
        proto = self.store.fs.protocol
        return "s3" in ((proto,) if isinstance(proto, str) else tuple(proto))

    def _create(self) -> bool:
        """Create the lease if there is none: True if this run now holds it."""
        try:
            self._put(mode="create")
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if remote._status(exc) == 412 or "Precondition" in str(exc):
                return False
            raise
        except (TypeError, NotImplementedError, ValueError):
            return self._create_unconditionally()

    def _create_unconditionally(self) -> bool:
        log.warning(
            "%s: this store has no conditional writes; the lease is taken by write and "
            "read-back, which cannot rule out two runs starting at the same instant",
            self.store.root,
        )
        cur, _ = self._read()
        if cur:
            return False
        self._put()
        time.sleep(1.0)
        cur, _ = self._read()
        return bool(cur and cur.get("token") == self.token)

    def _take_over(self, etag: str | None) -> bool:
        if etag and self._s3():
            try:
                self._put(IfMatch=etag)
                return True
            except OSError:
                return False
        self.store.delete(self.path)
        return self._create()

    def acquire(self) -> LeaseLock:
        from analyzer.engine.lock import LockHeld

        if not self._create():
            cur, etag = self._read()
            if cur is None:  # released between our create and our read
                if not self._create():
                    raise LockHeld(
                        f"{self.store.root} is in use by another analyzer run (it just started); "
                        f"wait for it to finish or use another --out"
                    )
            else:
                expired = time.time() > float(cur.get("expires", 0) or 0)
                dead = not _alive(cur)
                if not (expired or dead) or not self._take_over(etag):
                    left = float(cur.get("expires", 0) or 0) - time.time()
                    raise LockHeld(
                        f"{self.store.root} is in use by another analyzer run (host {cur.get('host', '?')}, "
                        f"pid {cur.get('pid', '?')}, started {cur.get('started', '?')}; its lease "
                        f"{f'expires in {left:.0f} s' if left > 0 else 'has just been taken over'}); wait "
                        f"for it to finish, or for the lease to expire if that run is dead, or use another --out"
                    )
                log.info(
                    "%s: took over the lease of a run that %s",
                    self.store.root,
                    "is no longer running" if dead else "stopped renewing it",
                )
        self._thread = threading.Thread(target=self._renew, name="analyzer-lease", daemon=True)
        self._thread.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            try:
                cur, etag = self._read()
                if not cur or cur.get("token") != self.token:
                    self.lost = (
                        f"the lease on {self.store.root} was taken over by another run at "
                        f"{time.strftime('%H:%M:%S')} (this run stalled for longer than {self.ttl:.0f} s)"
                    )
                    log.error(self.lost)
                    return
                if etag and self._s3():
                    self._put(IfMatch=etag)
                else:
                    self._put()
            except Exception as exc:  # noqa: BLE001 - try again at the next tick; expiry is ttl away
                log.warning("could not renew the lease on %s: %s", self.store.root, exc)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            cur, _ = self._read()
            if cur and cur.get("token") == self.token:
                self.store.delete(self.path)
        except Exception as exc:  # noqa: BLE001 - it expires by itself
            log.warning("could not remove the lease on %s (%s); it expires in %.0f s", self.store.root, exc, self.ttl)

    def __enter__(self) -> LeaseLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def table_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **parquet_options(table.schema))
    return buf.getvalue()
