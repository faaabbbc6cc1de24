"""The acknowledgement log: every transaction a terminal runs, as append-only lines.

B = begun (with the workload's inputs), C = the driver saw it commit, A = given up. The file
survives kill -9 of its process; a C line is fsynced before the transaction counts as
acknowledged, so the audit can say that no acknowledged transaction was lost.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from wisconsin import DamagedData
from wisconsin.oltp.failures import storage_line


class LogFailed(Exception):
    """The acknowledgement log refused a record (its message names the path and why); it
    takes no more, so no record ever follows a cut one."""


class AckLog:
    """The driver's append-only line log; acknowledge() makes a line durable.

    One write() per line, kept by the OS across kill -9. A commit line counts as acknowledged
    only after an fdatasync covering it, so a power loss cannot lose one (issue 31, finding
    5). Syncs are shared: one fdatasync covers every line written before it, so terminals
    that acknowledge at once wait for one sync, not one each.

    A write that fails (a full disk: ENOSPC, or a short write) is cut back to the last whole
    record and the log refuses every later one (LogFailed): the file ends with whole records,
    and a cut that could not be undone is its last line, without its newline, which
    read_records does not count. An fdatasync that fails breaks the log the same way.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size  # bytes of whole records
        self.broken = ""  # why the log takes no more records
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self.written = 0  # lines written
        self.synced = 0  # lines known durable
        self.syncs = 0

    def __call__(self, line: str) -> int:
        """Append a line; returns its number."""
        data = memoryview(line.encode())
        with self._write_lock:
            if self.broken:
                raise LogFailed(self.broken)
            try:
                while data:
                    n = os.write(self.fd, data)
                    if n <= 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    data = data[n:]
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(self.fd, self.size)  # the cut record goes
                raise self._break(exc) from None
            self.size += len(line.encode())
            self.written += 1
            return self.written

    def _break(self, exc: OSError) -> LogFailed:
        self.broken = self.broken or storage_line(
            OSError(exc.errno, exc.strerror or str(exc), self.path), "the acknowledgement log"
        )
        return LogFailed(self.broken)

    def acknowledge(self, line: str) -> None:
        """Append a line and return once it is on disk."""
        n = self(line)
        with self._sync_lock:
            if self.synced >= n:
                return  # another terminal's sync covered it
            if self.broken:
                raise LogFailed(self.broken)
            upto = self.written
            try:
                os.fdatasync(self.fd)
            except OSError as exc:
                with self._write_lock:
                    raise self._break(exc) from None
            self.synced = upto
            self.syncs += 1

    def close(self) -> None:
        os.close(self.fd)


LOG_GLOB = "driver-p*.log"  # one log per partition's driver, in the log directory


def read_fields(path: str | os.PathLike, record: re.Pattern) -> list[tuple[str, int, tuple]]:
    """(kind, txid, the line's other fields) of each record of a driver's log, in order. A
    last line without its newline (cut by a crash) is not a record; any other line that is
    not one the writer makes (`record`, the workload's pattern of a whole line) is damage,
    named in one line (LogDamaged), never guessed at."""
    text = Path(path).read_bytes().decode("ascii", errors="replace")
    lines = text.split("\n")
    out = []
    for number, line in enumerate(lines[:-1], 1):  # lines[-1]: after the last newline
        if not record.fullmatch(line):
            shown = line if len(line) <= 40 else line[:40] + "..."
            raise LogDamaged(f"{path}: line {number} is not a log record: {shown!r}")
        kind, txid, *rest = line.split()
        out.append((kind, int(txid), tuple(rest)))
    return out


def read_records(path: str | os.PathLike, record: re.Pattern) -> list[tuple[str, int]]:
    """(kind, txid) of each record of a driver's log, in order (read_fields)."""
    return [(kind, txid) for kind, txid, _ in read_fields(path, record)]


@dataclass(frozen=True)
class Outcomes:
    """What every partition's driver log says of its transactions: begun (B), acknowledged
    (C, with the fields its line carries: a workload's receipt), aborted (A)."""

    begun: frozenset[int]
    acknowledged: dict[int, tuple]
    aborted: frozenset[int]

    @property
    def in_doubt(self) -> frozenset[int]:
        """Begun, neither acknowledged nor aborted: the answer was lost in a crash."""
        return self.begun - self.acknowledged.keys() - self.aborted


def read_log(log_dir: str | os.PathLike, record: re.Pattern) -> Outcomes:
    """Every partition's driver log under log_dir, whole records only."""
    begun, acked, aborted = set(), {}, set()
    for path in sorted(Path(log_dir).glob(LOG_GLOB)):
        for kind, txid, rest in read_fields(path, record):
            if kind == "B":
                begun.add(txid)
            elif kind == "C":
                acked[txid] = rest
            else:
                aborted.add(txid)
    return Outcomes(frozenset(begun), acked, frozenset(aborted))


class LogDamaged(DamagedData):
    """A driver's log holds a line its writer never writes: the audit cannot trust it."""
