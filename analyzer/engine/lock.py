"""One writer per OUT: an advisory lock on OUT/.lock (fcntl), held for the whole run.

The kernel releases the lock when its holder dies, however it dies, so a lock left by a
killed run is simply taken over; the file keeps the holder's pid for the message."""

from __future__ import annotations

import os
import time


class LockHeld(Exception):
    """OUT is in use by another run: a message for the user (exit 2)."""


class OutLock:
    def __init__(self, out: str):
        self.path = os.path.join(out, ".lock")
        self.fd: int | None = None

    def acquire(self) -> OutLock:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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
                f"{os.path.dirname(self.path) or '.'} is in use by another analyzer run "
                f"({who}{since}); wait for it to finish or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode(), 0)
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
