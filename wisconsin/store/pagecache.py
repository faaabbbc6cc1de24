"""The OS page cache: evict a file from it, measure how much of a file it holds, and count
the bytes a process really read from storage.

Linux only where it matters (posix_fadvise, mincore, /proc/self/io); elsewhere the
measurements are None rather than guesses.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import mmap
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from wisconsin import WisconsinError

DROP_CACHES = "/proc/sys/vm/drop_caches"


class EvictionError(WisconsinError):
    """Asked to drop caches this process is not allowed to drop."""


@contextlib.contextmanager
def descriptor(path: str | os.PathLike, readable: bool = False) -> Iterator[int]:
    """A read descriptor of path that is safe to use beside the engine: closing ANY
    descriptor of a file drops every POSIX lock this process holds on it (close(2)), which
    would release DuckDB's own lock on a partition file it has open. So where this process
    already has the file open, its descriptor is borrowed (never closed); otherwise one is
    opened and closed (a process holding no descriptor of the file holds no lock on it).
    readable: only a descriptor open for reading is borrowed (mmap needs one); DuckDB opens
    its files read-write or read-only, never write-only."""
    st = os.stat(path)
    fd = _open_descriptor(st.st_dev, st.st_ino, readable)
    if fd is not None:
        yield fd
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_descriptor(dev: int, ino: int, readable: bool) -> int | None:
    """A descriptor this process already holds on the file (dev, ino), if any."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in fds:
        try:
            st = os.fstat(int(name))
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) != (dev, ino):
            continue
        if readable:
            try:
                mode = fcntl.fcntl(int(name), fcntl.F_GETFL) & os.O_ACCMODE
            except OSError:
                continue
            if mode == os.O_WRONLY:
                continue
        return int(name)
    return None


# /proc/self files kept open per process (name -> (pid, fd)): each statement reads two or
# three of them around its timing, and open + read + close cost 35-65 us each against
# 1-15 us for a pread of a kept descriptor: harness time every statement paid.
_PROC: dict[str, tuple[int, int]] = {}
_PROC_LOCK = threading.Lock()


def _proc_fd(name: str, flags: int) -> int:
    """This process's kept descriptor of /proc/self/<name> (a forked child opens its own:
    an inherited one names the parent)."""
    pid = os.getpid()
    kept = _PROC.get(name)
    if kept is not None and kept[0] == pid:
        return kept[1]
    with _PROC_LOCK:
        kept = _PROC.get(name)
        if kept is None or kept[0] != pid:
            kept = _PROC[name] = (pid, os.open(f"/proc/self/{name}", flags | os.O_CLOEXEC))
    return kept[1]


def proc_field(name: str, field: bytes) -> int | None:
    """The first number after `field` (e.g. b"read_bytes:") in /proc/self/<name>; None if
    the file or the field is not there."""
    try:
        text = os.pread(_proc_fd(name, os.O_RDONLY), 16384, 0)
        at = text.index(field) + len(field)
        return int(text[at : text.index(b"\n", at)].split()[0])
    except (OSError, ValueError, IndexError):
        return None


def proc_write(name: str, data: bytes) -> bool:
    """Write data to /proc/self/<name> (e.g. clear_refs); False if not possible here."""
    try:
        os.pwrite(_proc_fd(name, os.O_WRONLY), data, 0)
    except OSError:
        return False
    return True


def read_bytes() -> int | None:
    """Bytes this process (all its threads) caused to be fetched from storage so far:
    `read_bytes` of /proc/self/io. Page-cache hits do not count. None if unavailable."""
    return proc_field("io", b"read_bytes:")


def _libc():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    )
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    return libc


_LIBC = None
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_bytes(path: str | os.PathLike) -> int | None:
    """Bytes of the file now in the page cache (mincore on a shared read-only mapping,
    which does not fault pages in). None where mincore is unavailable."""
    global _LIBC
    if _LIBC is None:
        _LIBC = _libc() or False
    if not _LIBC or not hasattr(_LIBC, "mincore"):
        return None
    size = os.path.getsize(path)
    if size == 0:
        return 0
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    with descriptor(path, readable=True) as fd:
        addr = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            return None
        try:
            vec = (ctypes.c_ubyte * pages)()
            if _LIBC.mincore(addr, size, vec) != 0:
                return None
            resident = _count(vec)
        finally:
            _LIBC.munmap(addr, size)
    return min(size, resident * page)


def _count(vec) -> int:
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(vec, dtype=np.uint8) & 1))


def evict(path: str | os.PathLike) -> dict:
    """Drop all the file's pages from the page cache, writing its dirty pages back first
    where any stayed (DONTNEED skips dirty pages).

    A clean file is not fsynced: each fsync waits for the filesystem's journal (0.3-6 ms
    measured on this VM, more under other writers), and a cold execution evicts every
    partition twice. Works without root for a file no process has mapped or dirtied
    meanwhile. Returns {"file_bytes", "resident_bytes"} measured after the eviction.
    """
    with descriptor(path) as fd:  # never one that would release the engine's file lock
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        size = os.fstat(fd).st_size
        resident = resident_bytes(path)
        if resident != 0:  # dirty pages (or unmeasurable): write back, drop again
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            resident = resident_bytes(path)
    return {"file_bytes": size, "resident_bytes": resident}


def evict_files(paths) -> dict:
    """evict() each existing file of paths; totals {"file_bytes", "resident_bytes"}
    (resident None if any file's could not be measured)."""
    total, resident = 0, 0
    for p in paths:
        if not Path(p).is_file():
            continue
        out = evict(p)
        total += out["file_bytes"]
        resident = (
            None
            if resident is None or out["resident_bytes"] is None
            else (resident + out["resident_bytes"])
        )
    return {"file_bytes": total, "resident_bytes": resident}


def drop_caches() -> None:
    """Drop the whole machine's clean page cache (root only): sync, then echo 1."""
    os.sync()
    try:
        with open(DROP_CACHES, "w") as fh:
            fh.write("1\n")
    except OSError as exc:
        raise EvictionError(
            f"cannot drop the page cache ({DROP_CACHES}: {exc.strerror or exc}); it needs "
            "root: run without drop_caches (posix_fadvise eviction needs no root)"
        ) from None


def evict_partition(path: str | os.PathLike, also_drop_caches: bool = False) -> dict:
    """Evict a DuckDB database file and its WAL (the caller has closed every connection
    to it); report what remains resident."""
    if also_drop_caches:
        drop_caches()
    return evict_files([path, f"{path}.wal"])


class WrittenPagesDropper:
    """While a writer (DuckDB) fills files, keep their written pages from piling up in the
    page cache: every `interval_s` a thread calls posix_fadvise(DONTNEED) on each file past
    its first `keep_bytes`, which starts writeback of those dirty pages and drops the ones
    already written back. The first `keep_bytes` stay cached: a small file is left alone
    (its build reads it back, and re-reading it from storage cost more than it saved).

    Why: a buffered write into page-cache pages the kernel has to find anew is expensive on
    a VM whose guest hands freed memory back to the host (free page reporting): there, a
    fresh 4 GB file cost 9-13 s of system time, but 1.5-2 s when its written pages were
    dropped every 256 MB and so reused (docs/performance.md, "Build system time"). DONTNEED
    never drops a dirty page, so no data can be lost; what the writer reads back afterwards
    comes from storage instead of the cache.
    """

    def __init__(self, paths, interval_s: float = 0.25, keep_bytes: int = 512 << 20) -> None:
        import threading

        self.paths = [Path(p) for p in paths]
        self.interval_s = interval_s
        self.keep_bytes = keep_bytes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="drop-written-pages", daemon=True)

    def _drop(self) -> None:
        for p in self.paths:
            try:
                with descriptor(p) as fd:  # the writer's own: DuckDB holds a lock on it
                    os.posix_fadvise(fd, self.keep_bytes, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                continue  # not created yet, already renamed, or advice refused

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._drop()

    def __enter__(self) -> WrittenPagesDropper:
        if hasattr(os, "posix_fadvise"):
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
