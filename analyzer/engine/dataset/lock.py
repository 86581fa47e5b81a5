"""One writer per OUT, held for the whole run.

- OutLock (a local OUT): an advisory lock (fcntl) on OUT/.lock. The kernel releases it when
  its holder dies, however it dies, so a lock left by a killed run is simply taken over; the
  file keeps the holder's pid for the message. The file is created exclusively, opened without
  following a link, and written only when it is a regular file that holds a lock line (a
  link, or a file of someone else's, named .lock is an error that names it).
- LeaseLock (an object store, where there is no fcntl): a lease object, below.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import socket
import stat
import threading
import time
import uuid

from analyzer.engine.dataset import names
from analyzer.errors import LockHeld, UnsafePath
from analyzer.io import remote

log = logging.getLogger("analyzer")

_LOCK_LINE = re.compile(rb"^(\d+ \S+( [0-9a-f]{12})?\n?)?$")


class OutLock:
    def __init__(self, store):
        self.store = store
        self.path = store.path(names.LOCK)
        self.fd: int | None = None

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        try:
            fd = os.open(self.path, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a symbolic link
                raise UnsafePath(
                    f"{self.path} is a symbolic link; the analyzer does not write its lock through a link (remove it)",
                    names.LOCK,
                ) from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 200 or not _LOCK_LINE.match(os.pread(fd, 200, 0)):
            os.close(fd)
            raise UnsafePath(
                f"{self.path} is not an analyzer lock file (it holds something else); the analyzer does "
                f"not overwrite it: move it away",
                names.LOCK,
            )
        return fd

    def acquire(self) -> OutLock:
        import fcntl

        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
            finally:
                os.close(fd)
            who = f"pid {holder[0]}" if holder else "another process"
            since = f", started {holder[1]}" if len(holder) > 1 else ""
            raise LockHeld(
                f"{self.store.root or '.'} is in use by another analyzer run "
                f"({who}{since}); wait for it to finish or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {time.strftime('%Y-%m-%dT%H:%M:%S')} {self.store.run_id}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock
            self.fd = None

    def __enter__(self) -> OutLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


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

    def __init__(self, store, ttl: float | None = None):
        self.store = store
        self.name = names.LOCK
        self.path = store.path(self.name)
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
            data = self.store.get(self.name)
        except FileNotFoundError:
            return None, None
        try:
            return json.loads(data), (info.get("ETag") or "").strip('"') or None
        except ValueError:
            return {}, None

    def _put(self, **cond) -> None:
        resp = self.store.put(self.name, self._body(), **cond)
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
        self.store.delete(self.name)
        return self._create()

    def acquire(self) -> LeaseLock:
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
                self.store.delete(self.name)
        except Exception as exc:  # noqa: BLE001 - it expires by itself
            log.warning("could not remove the lease on %s (%s); it expires in %.0f s", self.store.root, exc, self.ttl)

    def __enter__(self) -> LeaseLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
