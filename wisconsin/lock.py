"""One run (or generate) per data directory at a time.

The lock is ``fcntl.flock`` on ``<data>/.wisconsin.lock``: the kernel drops it when the
holder exits, however it exits (a SIGKILLed run leaves the file but not the lock). The
holder writes its pid, host, command and start time into the file, so a refused second
run can name it. The lock is re-entrant within one process (``bench`` generates, then
runs), and advisory: it keeps `wisconsin` processes apart, nothing else. On NFS, flock
works only where the server supports it: keep data directories on local disks.
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
from collections.abc import Callable, Iterator
from pathlib import Path

from wisconsin import WisconsinError

LOCK_FILE = ".wisconsin.lock"

_held: dict[str, tuple[int, int]] = {}  # realpath of the data directory -> (fd, depth)


class DataDirBusy(WisconsinError):
    """Another wisconsin process holds the data directory."""


def _holder_details(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0)
        d = json.loads(raw)
        return f"pid {d['pid']} on {d['host']} ({d['command']}), started {d['started_utc']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (its details are not written yet)"


@contextlib.contextmanager
def hold(data_dir: str | os.PathLike, create: bool = False) -> Iterator[None]:
    """Hold the data directory's lock for the block, or DataDirBusy in one line.

    create: make the directory first (generate); otherwise a missing directory is not
    locked (there is nothing to protect, and the caller reports it).
    """
    root = Path(data_dir)
    if create:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WisconsinError(f"cannot write to {root}: {exc.strerror or exc}") from None
    if not root.is_dir():
        yield
        return
    key = os.path.realpath(root)
    if key in _held:  # this process already holds it (bench: generate, then run)
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
        try:
            yield
        finally:
            fd, depth = _held[key]
            _held[key] = (fd, depth - 1)
        return
    path = root / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise WisconsinError(f"cannot lock {root}: {path}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirBusy(
                f"{root} is in use by another wisconsin process: {_holder_details(fd)}; "
                "wait for it to finish or stop it"
            ) from None
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:500],
            "started_utc": _utc_now(),
        }
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
        os.close(fd)  # releases the flock


def locked(arg: str, create: bool = False) -> Callable:
    """Decorator: hold the lock of the data directory given as the function's argument
    named arg (a path, or an object with ``.data_dir``, e.g. RunOptions) for the call."""

    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            value = sig.bind(*args, **kwargs).arguments[arg]
            with hold(getattr(value, "data_dir", value), create=create):
                return fn(*args, **kwargs)

        return wrapper

    return deco


def _utc_now() -> str:
    from wisconsin.store import utc_now

    return utc_now()
