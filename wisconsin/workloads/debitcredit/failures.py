"""How a DebitCredit run ends when something under it fails, said in one line.

A partition process that dies (kill -9, a crash) or stops answering, a disk that fills, a
thread that meets an error nobody expected: each stops the bench with one line naming the
partition, its pid and what happened; the error's kind (wisconsin.FAILED: the run failed, not
input a user can correct) is the CLI's exit code 1. Nothing here prints: the CLI prints the line.
"""

from __future__ import annotations

import contextlib
import errno
import re
import signal
from collections.abc import Iterator

import duckdb

from wisconsin import FAILED, WisconsinError

_FULL = {errno.ENOSPC, errno.EDQUOT}
_DUCKDB_PATH = re.compile(r'(?:write|read|open|create|sync|truncate) file "([^"]+)"')


class RunFailed(WisconsinError):
    """The run could not go on: a partition died or failed, or a disk is full."""

    kind = FAILED  # a partition's end is a failed run, not bad input


class PartitionLost(RunFailed):
    """A partition process ended (or stopped answering) while the coordinator needed it."""


def how_it_ended(exitcode: int | None) -> str:
    """'was killed by signal 9 (SIGKILL)', 'exited with exit code 3', or, for a process
    still running, 'stopped answering'."""
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        return f"was killed by signal {-exitcode} ({name})"
    return f"exited with exit code {exitcode}"


def is_storage_failure(exc: BaseException) -> bool:
    """DuckDB could not read or write its files (a full disk, an I/O error): not a conflict
    to retry, and a commit it refused this way may or may not be in the WAL."""
    if isinstance(exc, OSError):
        return True
    if not isinstance(exc, duckdb.Error):
        return False
    if isinstance(exc, duckdb.IOException | duckdb.FatalException):
        return True
    text = str(exc)
    return any(
        mark in text
        for mark in ("No space left on device", "Disk quota exceeded", "Could not write file",
                     "Could not fsync", "database has been invalidated")
    )  # fmt: skip


def disk_full(exc: BaseException) -> bool:
    return (
        getattr(exc, "errno", None) in _FULL
        or "No space left on device" in str(exc)
        or ("Disk quota exceeded" in str(exc))
    )


def storage_line(exc: BaseException, what: str) -> str:
    """One line for a failed write: 'the disk is full: ...' when it is, naming the path."""
    if isinstance(exc, OSError):
        cause = exc.strerror or str(exc)
        path = exc.filename
    else:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        found = _DUCKDB_PATH.search(first)
        path = found.group(1) if found else None
        cause = first.rsplit(": ", 1)[-1] if found else first
    where = f"{what} {path}" if path else what
    if disk_full(exc):
        return f"the disk is full: cannot write {where} ({cause})"
    return f"storage failed: {where}: {cause}"


@contextlib.contextmanager
def naming_storage(doing: str) -> Iterator[None]:
    """A full disk (or another storage failure) inside the block is RunFailed, one line:
    'doing: the disk is full: cannot write PATH (...)'; so is a file the atomic writer could
    not write for want of space."""
    try:
        yield
    except (duckdb.Error, OSError) as exc:
        if not is_storage_failure(exc):
            raise
        raise RunFailed(f"{doing}: {storage_line(exc, 'the database')}") from None
    except WisconsinError as exc:
        if isinstance(exc, RunFailed) or not disk_full(exc):
            raise
        raise RunFailed(f"{doing}: the disk is full: {exc}") from None
