"""Terminals: the load generator that runs inside each partition's process.

Like Tandem's terminal programs on every processor, a partition's terminals belong to its
branches and run next to its DuckDB file; a remote account is reached through its owner's
peer port. Two load modes:

- closed: N streams, each submits its next transaction when the last one answered (no think
  time, as Gray & Levine ran it): the peak throughput;
- open: arrivals at a set rate with exponential inter-arrival times (as Tandem's driver),
  served by a pool of server threads; response time counts from the scheduled arrival, so
  queueing is in it (no coordinated omission).

Every transaction is logged (B = begun with its inputs, C = the driver saw it commit,
A = given up) to an append-only file that survives kill -9 of this process, for the audit;
a C line is fsynced before the transaction counts as acknowledged.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import queue
import random
import re
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Client
from pathlib import Path

import duckdb

from wisconsin import DamagedData
from wisconsin.workloads.debitcredit import histogram, transaction
from wisconsin.workloads.debitcredit.failures import is_storage_failure, storage_line
from wisconsin.workloads.debitcredit.schema import NO_REMOTE

REMOTE_SHARE = 0.15  # of transactions whose account is at another branch
DELTA = 999_999
MAX_RETRIES = 100


@dataclass(frozen=True)
class Load:
    mode: str  # "closed" | "open"
    duration_s: float
    streams: int = 8  # closed: terminals per partition
    rate: float = 0.0  # open: offered transactions per second at this partition
    servers: int = 8  # open: server threads per partition
    drain_s: float = 5.0  # open: how long queued arrivals may still finish after the window
    seed: int = 0  # inputs and arrival times come from string-seeded streams: reproducible
    # of transactions whose account is at another branch (0: every one local; benchmarks)
    remote_share: float = REMOTE_SHARE


@dataclass
class Tally:
    """One terminal's counts; merged per partition at the end of a step."""

    hist: object = field(default_factory=histogram.new)
    arrivals: int = 0
    committed: int = 0
    in_window: int = 0  # committed before the window closed
    distributed: int = 0  # committed transactions that touched two partitions
    retries: int = 0  # conflict aborts that were retried
    failed: int = 0  # given up (retries exhausted or a partition unreachable)
    unfinished: int = 0  # open mode: still queued when the drain ended
    error: str = ""  # the first unexpected (non-conflict) error, if any
    # every commit: (seconds from the window's start to the answer, response time)
    done: list[tuple[float, float]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.hist.add(other.hist)
        self.done.extend(other.done)
        for name in ("arrivals", "committed", "in_window", "distributed", "retries"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failed += other.failed
        self.unfinished += other.unfinished
        self.error = self.error or other.error


class PartitionDown(Exception):
    """The account's partition did not answer before the decision: rolled back."""


class Terminal:
    """One stream of transactions: its own DuckDB cursor and its own links to the peers."""

    def __init__(self, node, rng: random.Random, remote_share: float = REMOTE_SHARE):
        self.node = node
        self.remote_share = remote_share
        self.cur = node.con.cursor()
        self.rng = rng
        self.links: dict[int, object] = {}

    def close(self) -> None:
        for link in self.links.values():
            with contextlib.suppress(OSError):
                link.close()
        self.cur.close()

    def inputs(self) -> tuple[int, int, int, int]:
        """(aid, tid, bid, delta): 85% the teller's own branch, 15% (remote_share) another
        one uniformly."""
        node, rng, s = self.node, self.rng, self.node.sizing
        tid = node.first_teller + rng.randrange(node.tellers)
        bid = s.branch_of_teller(tid)
        abid = bid
        if node.total_branches > 1 and rng.random() < self.remote_share:
            abid = rng.randrange(node.total_branches - 1)
            abid += abid >= bid
        aid = abid * s.accounts_per_branch + rng.randrange(s.accounts_per_branch)
        return aid, tid, bid, rng.randint(-DELTA, DELTA)

    def one(self, tally: Tally) -> bool:
        """Run one transaction to its end (with retries); True if it committed and its
        acknowledgement is on disk. A log or a database that cannot be written (a full disk)
        stops the partition (node.fail): this terminal and every other begin nothing more."""
        try:
            return self._one(tally)
        except LogFailed as exc:
            tally.failed += 1
            self.node.fail(str(exc))
            return False

    def _one(self, tally: Tally) -> bool:
        node = self.node
        aid, tid, bid, delta = self.inputs()
        remote = node.sizing.partition_of_branch(node.sizing.branch_of_account(aid))
        remote = NO_REMOTE if remote == node.part else remote
        txid = node.next_txid()
        node.log(f"B {txid} {aid} {tid} {delta} {remote}\n")
        for _attempt in range(MAX_RETRIES):
            try:
                if remote == NO_REMOTE:
                    transaction.run_local(self.cur, txid, aid, tid, bid, delta)
                else:
                    self.distributed(txid, aid, tid, bid, delta, remote)
                    tally.distributed += 1
            except PartitionDown:
                break
            except Exception as exc:
                if is_storage_failure(exc):
                    # A refused COMMIT may or may not be in the WAL: no A line, so the audit
                    # counts it in doubt, whichever it is.
                    tally.failed += 1
                    node.fail(storage_line(exc, "the database"))
                    return False
                if not transaction.is_conflict(exc):
                    tally.error = tally.error or f"{type(exc).__name__}: {exc}"
                    break  # rolled back; counted as failed, the first message kept
                tally.retries += 1
                time.sleep(self.rng.random() * 0.002)  # de-synchronise the colliding pair
                continue
            node.log.acknowledge(f"C {txid}\n")  # committed; a LogFailed leaves it in doubt
            return True
        node.log(f"A {txid}\n")
        tally.failed += 1
        return False

    def link(self, part: int):
        if part not in self.links:
            self.links[part] = Client(self.node.peers[part], authkey=self.node.authkey)
        return self.links[part]

    def distributed(self, txid, aid, tid, bid, delta, remote) -> None:
        """Presumed-abort 2PC; the home COMMIT is the decision (see transaction.py)."""
        try:
            link = self.link(remote)
            link.send(("prepare", txid, self.node.part, aid, delta))
        except (OSError, EOFError) as exc:
            self.links.pop(remote, None)
            raise PartitionDown(str(exc)) from exc
        try:
            transaction.home_half(self.cur, txid, aid, tid, bid, delta, remote)
        except BaseException:
            self._settle_abort(link, remote, txid)
            raise
        try:
            reply = link.recv()
        except (OSError, EOFError) as exc:
            transaction.rollback(self.cur)
            self.links.pop(remote, None)
            raise PartitionDown(str(exc)) from exc
        if reply[0] != "ok":
            transaction.rollback(self.cur)
            if reply[0] == "conflict":
                raise duckdb.TransactionException(reply[1])
            raise RuntimeError(f"partition {remote}: {reply[1]}")
        try:
            self.cur.execute("COMMIT")  # the durable decision
        except BaseException:
            transaction.rollback(self.cur)
            self._send_abort(link, remote, txid)
            raise
        try:
            link.send(("commit", txid))
            link.recv()
        except (OSError, EOFError):
            self.links.pop(remote, None)  # decided: recovery redoes the remote half

    def _settle_abort(self, link, remote, txid) -> None:
        try:
            if link.recv()[0] == "ok":
                self._send_abort(link, remote, txid)
        except (OSError, EOFError):
            self.links.pop(remote, None)

    def _send_abort(self, link, remote, txid) -> None:
        try:
            link.send(("abort", txid))
        except (OSError, EOFError):
            self.links.pop(remote, None)


def _answered(tally: Tally, began: float, t_end: float, duration: float) -> None:
    """Count one commit whose clock started at `began` (closed: submitted; open: scheduled)."""
    done = time.perf_counter()
    histogram.record(tally.hist, done - began)
    tally.done.append((done - (t_end - duration), done - began))
    tally.committed += 1
    tally.in_window += done <= t_end


def _closed(node, load: Load, index: int, tally: Tally, t_end: float) -> None:
    term = Terminal(
        node, random.Random(f"{load.seed}-{node.part}-{index}-closed"), load.remote_share
    )
    try:
        while time.perf_counter() < t_end and not node.stopping.is_set():
            t0 = time.perf_counter()
            tally.arrivals += 1
            if term.one(tally):
                _answered(tally, t0, t_end, load.duration_s)
    finally:
        term.close()


def _serve_open(node, load, index, tally, work: queue.Queue, t_end, t_drain) -> None:
    term = Terminal(node, random.Random(f"{load.seed}-{node.part}-{index}-open"), load.remote_share)
    try:
        while True:
            arrival = work.get()
            if arrival is None:
                return
            if time.perf_counter() > t_drain or node.stopping.is_set():
                tally.unfinished += 1
                continue
            if term.one(tally):
                _answered(tally, arrival, t_end, load.duration_s)
    finally:
        term.close()


def run(node, load: Load) -> Tally:
    """One measured step at this partition; returns its merged tally."""
    t_start = time.perf_counter()
    t_end = t_start + load.duration_s
    tallies = []
    threads = []
    if load.mode == "closed":
        for i in range(load.streams):
            tallies.append(Tally())
            threads.append(
                threading.Thread(target=_closed, args=(node, load, i, tallies[-1], t_end))
            )
        for t in threads:
            t.start()
    else:
        work: queue.Queue = queue.Queue()
        t_drain = t_end + load.drain_s
        for i in range(load.servers):
            tallies.append(Tally())
            threads.append(
                threading.Thread(
                    target=_serve_open,
                    args=(node, load, i, tallies[-1], work, t_end, t_drain),
                )
            )
        for t in threads:
            t.start()
        rng = random.Random(f"{load.seed}-{node.part}-arrivals")
        arrivals = 0
        t_next = t_start + rng.expovariate(load.rate)
        while t_next < t_end and not node.stopping.is_set():
            wait = t_next - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            work.put(t_next)  # scheduled time: lateness of this thread counts too
            arrivals += 1
            t_next += rng.expovariate(load.rate)
        for _ in threads:
            work.put(None)
        tallies[0].arrivals += arrivals
    for t in threads:
        t.join()
    total = Tally()
    for t in tallies:
        total.add(t)
    return total


class LogFailed(Exception):
    """The acknowledgement log refused a record (its message names the path and why); it
    takes no more, so no record ever follows a cut one."""


# Every record the writer makes, whole: a line it did not finish is no record.
_RECORD = re.compile(r"(?:B -?\d+ -?\d+ -?\d+ -?\d+ -?\d+|[CA] -?\d+)")


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


def read_records(path: str | os.PathLike) -> list[tuple[str, int]]:
    """(kind, txid) of each record of a driver's log, in order. A last line without its
    newline (cut by a crash) is not a record; any other line that is not one the writer
    makes is damage, named in one line (LogDamaged), never guessed at."""
    text = Path(path).read_bytes().decode("ascii", errors="replace")
    lines = text.split("\n")
    out = []
    for number, line in enumerate(lines[:-1], 1):  # lines[-1]: after the last newline
        if not _RECORD.fullmatch(line):
            shown = line if len(line) <= 40 else line[:40] + "..."
            raise LogDamaged(f"{path}: line {number} is not a log record: {shown!r}")
        kind, txid = line.split()[:2]
        out.append((kind, int(txid)))
    return out


class LogDamaged(DamagedData):
    """A driver's log holds a line its writer never writes: the audit cannot trust it."""


def per_second(done: list[tuple[float, float]], duration_s: float) -> tuple[list, list]:
    """Delivered tps and p95 response time (s) in each second of the window.

    A commit counts in the second its answer came; a last, partial second is scaled to a rate.
    A second with no commit has p95 0.
    """
    n = max(1, math.ceil(duration_s - 1e-9))
    buckets: list[list[float]] = [[] for _ in range(n)]
    for at, latency in done:
        if 0 <= at <= duration_s:
            buckets[min(int(at), n - 1)].append(latency)
    tps, p95 = [], []
    for i, b in enumerate(buckets):
        width = min(1.0, duration_s - i)
        tps.append(len(b) / width)
        b.sort()
        p95.append(b[max(0, math.ceil(0.95 * len(b)) - 1)] if b else 0.0)
    return tps, p95
