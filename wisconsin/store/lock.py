"""One run (or generate, or repair) per data directory at a time, and per table.

A table is identified by its real path: each table directory holds its own lock file too,
taken by every command that touches the table (run, generate, repair, info, export), so
two data directories that share a table through a symlink cannot use it at once.

The lock is ``fcntl.flock`` on ``<data>/.wisconsin.lock``: the kernel drops it when the
holder exits, however it exits (a SIGKILLed run leaves the file but not the lock; the next
command removes it). The file exists only while held: the last holder removes it. The
holder writes its pid, host, command and start time into the file, so a refused second
run can name it. The lock is re-entrant within one process (``bench`` generates, then
runs), and advisory: it keeps `wisconsin` processes apart, nothing else. On NFS, flock
works only where the server supports it: keep data directories on local disks.

Commands that only read tables (`info`, `export`) take the lock shared: any number of them
run together, but not beside a writer. They must not overlap a run either: a reader's
read-only DuckDB connection holds a shared lock on the partition file, so a run that then
opens it to update fails ("Could not set lock on file"), and a repair may replace the file
under a reader. A shared holder writes no details (several may hold it at once).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import inspect
import json
import os
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.jsonfields import utc_now

LOCK_FILE = ".wisconsin.lock"

_held: dict[str, tuple[int, int]] = {}  # realpath of the data directory -> (fd, depth)


class DataDirBusy(WisconsinError):
    """Another wisconsin process holds the data directory."""


def _holder_details(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0)
        d = json.loads(raw)
        return f"pid {d['pid']} on {d['host']} ({d['command']}), started {d['started_utc']}"
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        # Readers (info, export) hold the lock shared and write no details.
        return "another process (one reading its tables, e.g. info or export, or one starting)"


@contextlib.contextmanager
def hold(data_dir: str | os.PathLike, create: bool = False, shared: bool = False) -> Iterator[None]:
    """Hold the data directory's lock for the block, or DataDirBusy in one line.

    create: make the directory first (generate); otherwise a missing directory is not
    locked (there is nothing to protect, and the caller reports it).
    shared: a reader's lock (info, export): refused only while a writer holds it.
    """
    root = Path(data_dir)
    # the directories this call creates (innermost first): removed again if left empty
    made = [d for d in (root, *root.parents) if not d.exists()] if create else []
    if create:
        from wisconsin.store import refuse_inside_table

        refuse_inside_table(root, below=True)  # a table is never built inside another
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WisconsinError(f"cannot write to {root}: {exc.strerror or exc}") from None
    if not root.is_dir():
        yield
        return
    try:
        with _hold(root, shared):
            yield
    finally:
        for d in made:  # a command refused before it wrote anything leaves no directory
            try:
                d.rmdir()
            except OSError:
                break  # not empty: the command wrote there


def _open_locked(path: Path, shared: bool) -> int | None:
    """An fd holding the flock of the lock file at path (created if missing), or None
    where this user cannot create it and a reader needs no lock. Retried when the file was
    removed (by a holder releasing it) between our open and our flock: that lock would be
    on a file no later command sees."""
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if not shared:
                raise WisconsinError(
                    f"cannot lock {path.parent}: {path}: {exc.strerror or exc}"
                ) from None
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                # A directory this user cannot write to: reading it needs no lock, as
                # no wisconsin process of ours can write there either.
                return None
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            details = _holder_details(fd)
            os.close(fd)
            raise DataDirBusy(
                f"{path.parent} is in use by another wisconsin process: {details}; "
                "wait for it to finish or stop it"
            ) from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)
    raise WisconsinError(f"cannot lock {path.parent}: {path} keeps being replaced")


def _release(fd: int, path: Path) -> None:
    """Remove the lock file if no other process holds it (taken exclusively, without
    waiting), then unlock: a lock file exists only while a command holds it. A reader
    that cannot take it exclusively leaves it to the last holder."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)


@contextlib.contextmanager
def _hold(root: Path, shared: bool) -> Iterator[None]:
    key = os.path.realpath(root)
    # This process already holds it (bench: generate, then run; a run verifying a table).
    # A shared hold is never upgraded: no command reads first and then writes.
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
        try:
            yield
        finally:
            fd, depth = _held[key]
            _held[key] = (fd, depth - 1)
        return
    path = root / LOCK_FILE
    fd = _open_locked(path, shared)
    if fd is None:
        yield
        return
    try:
        if shared:
            # No writer holds it, so any description left is stale (a killed writer's):
            # a refused writer must not name it.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            _held[key] = (fd, 1)
            try:
                yield
            finally:
                del _held[key]
            return
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:500],
            "started_utc": utc_now(),
        }
        # The details only name the holder to a refused command; the flock is the lock. A
        # full disk may refuse them (the refused command then says "another process").
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        _held[key] = (fd, 1)
        try:
            yield
        finally:
            del _held[key]
            # Emptied before unlocking: a stale description never names a finished run.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        _release(fd, path)
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def hold_tables(
    table_dirs: Iterable[str | os.PathLike], shared: bool = False, create: bool = False
) -> Iterator[None]:
    """Hold the lock of each table directory (a lock file in its real directory; in one
    order, so two commands never wait on each other), or DataDirBusy naming the real path."""
    with contextlib.ExitStack() as stack:
        for real in sorted({os.path.realpath(t) for t in table_dirs}):
            stack.enter_context(hold(real, create=create, shared=shared))
        yield


def locked(arg: str, create: bool = False, shared: bool = False, table: bool = False) -> Callable:
    """Decorator: hold the lock of the data directory given as the function's argument
    named arg (a path, or an object with ``.data_dir``, e.g. RunOptions) for the call.
    table: arg is a table directory; its data directory is the parent, and the table's own
    lock is held too. What is no table (a file, a directory without a manifest, another
    workload's database) is refused first, writing no lock file beside it, unless a lock
    file is there (a build at work on it: the lock names it)."""

    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            value = sig.bind(*args, **kwargs).arguments[arg]
            data_dir = getattr(value, "data_dir", value)
            tables = [value] if table else []
            if table:
                data_dir = Path(data_dir).absolute().parent
                if not any((d / LOCK_FILE).exists() for d in (Path(value), data_dir)):
                    from wisconsin.store import read_manifest

                    read_manifest(value)  # read again under the lock by fn
            with hold(data_dir, create=create, shared=shared), hold_tables(tables, shared):
                return fn(*args, **kwargs)

        return wrapper

    return deco
