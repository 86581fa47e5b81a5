"""Where OUT lives: the two backends of a Dataset. Both take names relative to OUT (`/`
separators) and never anything else; only the Dataset uses them.

- LocalStore: a directory. Nothing inside it is ever followed through a symbolic link: every
  folder on the way to a name is checked with lstat (and made with mkdir, one level at a
  time), files are opened with O_NOFOLLOW, and a link, a device or a folder where the
  analyzer's folder or file belongs raises UnsafePath naming it. Records are written under a
  temporary name, fsynced and renamed over their old version (they are the analyzer's own);
  table files are published without replacing anything (a hard link from the temporary name,
  which fails if the name exists), so a file that is not the analyzer's is never overwritten.
- ObjectStore: an fsspec URL (s3://, gs://, az://, memory://, ...), with the storage options
  of the call that opened it (never a process-wide setting). Object stores have no rename: a
  table file is written once, whole, under its own name (names carry a token), and committed by
  the record that names it. One PUT is atomic on S3, GCS and Azure. The lock is a lease object
  (engine.dataset.lock.LeaseLock).
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import io
import os
import stat

import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.engine.dataset import names
from analyzer.errors import UnsafePath
from analyzer.io import remote

HASH_CHUNK = 8 << 20


def parquet_options(schema: pa.Schema) -> dict:
    """zstd; Parquet dictionary encoding for the text columns only and min/max statistics for
    the numeric ones only: ~20% less time per part and smaller files (statistics of names and
    codes, which every part spans, would not prune anything). Every page carries a CRC, so a
    reader that verifies them (pyarrow's page_checksum_verification, `analyzer verify --deep`)
    catches a flipped byte inside a page."""
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    other = [f.name for f in schema if f.name not in text]
    return {"compression": "zstd", "use_dictionary": text, "write_statistics": other, "write_page_checksum": True}


def table_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **parquet_options(table.schema))
    return buf.getvalue()


class Sink:
    """A table file on its way: written to `target` (a local temporary path, or a buffer),
    then published under `name` by commit(), or thrown away by abort()."""

    def __init__(self, store, name: str, target, tmp: str | None):
        self.store = store
        self.name = name
        self.target = target
        self.tmp = tmp

    def commit(self) -> tuple[int, str]:
        """Publish; (bytes, SHA-256) of what was published."""
        return self.store._publish(self)

    def abort(self) -> None:
        self.store._discard(self)


def _hash_fd(fd: int) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb", buffering=0, closefd=False) as fh:
        while chunk := fh.read(HASH_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


class LocalStore:
    """OUT as a local directory (see the module doc)."""

    remote = False

    def __init__(self, root: str, run_id: str = "0" * 12):
        self.root = root
        self.run_id = run_id
        self._safe: set[str] = set()  # folders (relative) found to be real folders, not links

    def __getstate__(self):
        return {"root": self.root, "run_id": self.run_id}

    def __setstate__(self, state):
        LocalStore.__init__(self, state["root"], state["run_id"])

    def path(self, name: str) -> str:
        return os.path.join(self.root, *name.split("/")) if name else self.root

    def display(self, name: str) -> str:
        return self.path(name)

    # -- folders, never through a link ---------------------------------------------------------

    def _check(self, rel: str, st: os.stat_result | None) -> bool:
        """True if `rel` is a real folder, False if absent; UnsafePath if it is anything else."""
        if st is None:
            return False
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(
                f"{self.path(rel)} is a symbolic link; the analyzer does not follow links inside its output "
                f"folder (remove the link, or give --out the folder it points to)",
                rel,
            )
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{self.path(rel)} is not a folder, where the analyzer keeps a folder of its own", rel)
        return True

    def safe_folder(self, folder: str, create: bool = False) -> bool:
        """Whether `folder` (relative) exists as a real folder, each level checked (and made, with
        create); UnsafePath where a link or a file stands in the way."""
        if not folder or folder in self._safe:
            return True
        parts = folder.split("/")
        for i in range(1, len(parts) + 1):
            rel = "/".join(parts[:i])
            if rel in self._safe:
                continue
            try:
                st = os.lstat(self.path(rel))
            except FileNotFoundError:
                st = None
            if not self._check(rel, st):
                if not create:
                    return False
                try:
                    os.mkdir(self.path(rel), 0o755)
                except FileExistsError:
                    self._check(rel, os.lstat(self.path(rel)))
            self._safe.add(rel)
        return True

    def _open(self, name: str, flags: int, mode: int = 0o644) -> int:
        """os.open of a file in a checked folder, never through a link."""
        self.safe_folder(names.folder_of(name), create=bool(flags & os.O_CREAT))
        try:
            return os.open(self.path(name), flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(
                    f"{self.path(name)} is a symbolic link; the analyzer does not read or write through links "
                    f"inside its output folder",
                    name,
                ) from None
            raise

    # -- records (the analyzer's own: replaced whole) ----------------------------------------

    def put(self, name: str, data: bytes) -> None:
        """`data` under `name`, complete (fsynced) or not at all; an older version is replaced."""
        tmp = names.temp_name(name, self.run_id, os.getpid())
        fd = self._open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._refuse_non_file(name)
            os.replace(self.path(tmp), self.path(name))
        except BaseException:
            _remove(self.path(tmp))
            raise

    def _refuse_non_file(self, name: str) -> None:
        """A link or a folder where a record goes is not replaced (rename would replace a link)."""
        try:
            st = os.lstat(self.path(name))
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise UnsafePath(f"{self.path(name)} is {kind}; the analyzer does not replace it", name)

    def get(self, name: str) -> bytes:
        fd = self._open_read(name)
        try:
            chunks = []
            while chunk := os.read(fd, HASH_CHUNK):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def _open_read(self, name: str) -> int:
        if not self.safe_folder(names.folder_of(name)):
            raise FileNotFoundError(self.path(name))
        fd = self._open(name, os.O_RDONLY)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnsafePath(f"{self.path(name)} is not a regular file", name)
        return fd

    # -- table files (published under new names, never over a file) -------------------------

    def sink(self, name: str) -> Sink:
        tmp = names.temp_name(name, self.run_id, os.getpid())
        self.safe_folder(names.folder_of(name), create=True)
        return Sink(self, name, self.path(tmp), tmp)

    def _publish(self, sink: Sink) -> tuple[int, str]:
        assert sink.tmp is not None
        fd = self._open(sink.tmp, os.O_RDONLY)
        try:
            size, digest = _hash_fd(fd)
        finally:
            os.close(fd)
        try:
            os.link(self.path(sink.tmp), self.path(sink.name), follow_symlinks=False)
        except FileExistsError:
            _remove(self.path(sink.tmp))
            raise UnsafePath(
                f"{self.path(sink.name)} exists and is not the analyzer's; it is left as it is", sink.name
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                _remove(self.path(sink.tmp))
                raise
            # a file system without hard links: a rename, after making sure nothing is there
            if os.path.lexists(self.path(sink.name)):
                _remove(self.path(sink.tmp))
                raise UnsafePath(f"{self.path(sink.name)} exists and is not the analyzer's", sink.name) from None
            os.rename(self.path(sink.tmp), self.path(sink.name))
            return size, digest
        _remove(self.path(sink.tmp))
        return size, digest

    def _discard(self, sink: Sink) -> None:
        if sink.tmp is not None:
            _remove(self.path(sink.tmp))

    def write_table(self, name: str, table: pa.Table) -> tuple[int, str]:
        s = self.sink(name)
        try:
            pq.write_table(table, s.target, **parquet_options(table.schema))
        except BaseException:
            s.abort()
            raise
        return s.commit()

    # -- reading, listing, removing -------------------------------------------------------------

    def stat(self, name: str) -> os.stat_result | None:
        """lstat of a name in a checked folder (None if absent)."""
        if not self.safe_folder(names.folder_of(name)):
            return None
        try:
            return os.lstat(self.path(name))
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return self.stat(name) is not None

    def size(self, name: str) -> int:
        st = self.stat(name)
        if st is None:
            raise FileNotFoundError(self.path(name))
        return st.st_size

    def sha256(self, name: str) -> tuple[int, str]:
        """(bytes, SHA-256) of a file, read without following links."""
        fd = self._open_read(name)
        try:
            return _hash_fd(fd)
        finally:
            os.close(fd)

    def parquet_file(self, name: str, **kwargs) -> pq.ParquetFile:
        """A ParquetFile over the file's bytes, read without following links."""
        return pq.ParquetFile(pa.BufferReader(self.get(name)), **kwargs)

    def read_table(self, name: str) -> pa.Table:
        # (ParquetFile.read, not pq.read_table, which imports pyarrow.compute: tests/test_start_up.py)
        return self.parquet_file(name).read()

    def list(self, folder: str) -> list[str]:
        """Names of the regular files directly in `folder` (links are not files here; [] if none)."""
        if not self.safe_folder(folder):
            return []
        with os.scandir(self.path(folder)) as it:
            return sorted(e.name for e in it if e.is_file(follow_symlinks=False))

    def entries(self, folder: str) -> builtins.list[tuple[str, str]]:
        """(name, kind) of everything directly in `folder`: kind file, folder, link or other."""
        if not self.safe_folder(folder):
            return []
        out = []
        with os.scandir(self.path(folder)) as it:
            for e in it:
                if e.is_symlink():
                    kind = "link"
                elif e.is_dir(follow_symlinks=False):
                    kind = "folder"
                elif e.is_file(follow_symlinks=False):
                    kind = "file"
                else:
                    kind = "other"
                out.append((e.name, kind))
        return sorted(out)

    def folders(self, folder: str) -> builtins.list[str]:
        return [n for n, kind in self.entries(folder) if kind == "folder"]

    def delete(self, name: str) -> bool:
        """Remove a regular file (never a link or a folder); True if it was removed."""
        st = self.stat(name)
        if st is None or not stat.S_ISREG(st.st_mode):
            return False
        try:
            os.remove(self.path(name))
        except FileNotFoundError:
            return False
        return True

    def remove_folder(self, folder: str) -> None:
        """Remove `folder` if it is an empty real folder."""
        if folder and self.safe_folder(folder):
            try:
                os.rmdir(self.path(folder))
            except OSError:
                pass
            self._safe.discard(folder)

    def local_path(self, name: str) -> str:
        return self.path(name)

    def lock(self):
        from analyzer.engine.dataset.lock import OutLock

        return OutLock(self)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class ObjectStore:
    """OUT as an fsspec URL, with the storage options it was opened with. Every call is
    retried on transient errors (remote.with_retries)."""

    remote = True

    def __init__(self, root: str, storage_options: dict | None = None, run_id: str = "0" * 12):
        self.root = root.rstrip("/")
        self.storage_options = storage_options or {}
        self.run_id = run_id
        self.fs = remote.filesystem(self.root, self.storage_options)

    def __getstate__(self):
        return {"root": self.root, "storage_options": self.storage_options, "run_id": self.run_id}

    def __setstate__(self, state):
        ObjectStore.__init__(self, state["root"], state["storage_options"], state["run_id"])

    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if name else self.root

    def display(self, name: str) -> str:
        return self.path(name)

    def safe_folder(self, folder: str, create: bool = False) -> bool:
        return True  # (an object store has no links, and no folders to make)

    def put(self, name: str, data: bytes, **kwargs):
        path = self.path(name)
        return remote.with_retries(f"write of {path}", self.fs.pipe_file, path, data, **kwargs)

    def get(self, name: str) -> bytes:
        path = self.path(name)
        # start=0: one ranged GET (s3fs would first ask for the size of a whole-object read)
        return remote.with_retries(f"read of {path}", self.fs.cat_file, path, start=0)

    def sink(self, name: str) -> Sink:
        return Sink(self, name, pa.BufferOutputStream(), None)

    def _publish(self, sink: Sink) -> tuple[int, str]:
        data = sink.target.getvalue().to_pybytes()
        self.put(sink.name, data)
        return len(data), hashlib.sha256(data).hexdigest()

    def _discard(self, sink: Sink) -> None:
        pass

    def write_table(self, name: str, table: pa.Table) -> tuple[int, str]:
        data = table_bytes(table)
        self.put(name, data)
        return len(data), hashlib.sha256(data).hexdigest()

    def stat(self, name: str) -> dict | None:
        path = self.path(name)
        try:
            return remote.with_retries(f"stat of {path}", self.fs.info, path)
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        path = self.path(name)
        return remote.with_retries(f"stat of {path}", self.fs.exists, path)

    def size(self, name: str) -> int:
        path = self.path(name)
        return int(remote.with_retries(f"stat of {path}", self.fs.info, path)["size"])

    def sha256(self, name: str) -> tuple[int, str]:
        data = self.get(name)
        return len(data), hashlib.sha256(data).hexdigest()

    def parquet_file(self, name: str, **kwargs) -> pq.ParquetFile:
        return pq.ParquetFile(pa.BufferReader(self.get(name)), **kwargs)

    def read_table(self, name: str) -> pa.Table:
        return self.parquet_file(name).read()

    def _ls(self, folder: str) -> list[dict]:
        path = self.path(folder)
        try:
            return remote.with_retries(f"list of {path}", self.fs.ls, path.rstrip("/"), detail=True)
        except FileNotFoundError:
            return []

    def list(self, folder: str) -> list[str]:
        return sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in self._ls(folder) if e.get("type") == "file")

    def entries(self, folder: str) -> builtins.list[tuple[str, str]]:
        out = []
        for e in self._ls(folder):
            kind = {"file": "file", "directory": "folder"}.get(str(e.get("type")), "other")
            out.append((e["name"].rstrip("/").rsplit("/", 1)[-1], kind))
        return sorted(out)

    def folders(self, folder: str) -> builtins.list[str]:
        return [n for n, kind in self.entries(folder) if kind == "folder"]

    def delete(self, name: str) -> bool:
        path = self.path(name)
        try:
            remote.with_retries(f"delete of {path}", self.fs.rm_file, path)
        except FileNotFoundError:
            return False
        return True

    def remove_folder(self, folder: str) -> None:
        pass  # (object stores have no empty folders)

    def local_path(self, name: str) -> str:
        raise TypeError("an object store has no local paths")

    def lock(self):
        from analyzer.engine.dataset.lock import LeaseLock

        return LeaseLock(self)
