"""Terminals: the load generator that runs inside each partition's process.

A partition's terminals run next to its DuckDB file; a remote partition is reached through
its owner's peer port (twophase). Two load modes:

- closed: N streams, each submits its next transaction when the last one answered (no think
  time): the peak throughput;
- open: arrivals at a set rate with exponential inter-arrival times, served by a pool of
  server threads; response time counts from the scheduled arrival, so queueing is in it (no
  coordinated omission).

A workload's terminal has one(tally) -> bool (ran one transaction; True if it committed and
was acknowledged) and close(); `attempt` is the retry-and-log loop one() runs inside.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wisconsin.oltp import cpu, histogram
from wisconsin.oltp.acklog import LogFailed
from wisconsin.oltp.failures import is_storage_failure, storage_line
from wisconsin.oltp.twophase import PartitionDown, is_conflict

MAX_RETRIES = 100
KIND = "transaction"  # what oltp.cpu charges these terminals' transactions to (one type)


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
    # the response times of the distributed ones among them (their cost beside the link's)
    remote_hist: object = field(default_factory=histogram.new)
    last_distributed: bool = False  # the last transaction that ran (attempt sets it)
    # every commit: (seconds from the window's start to the answer, response time)
    done: list[tuple[float, float]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.hist.add(other.hist)
        self.remote_hist.add(other.remote_hist)
        self.done.extend(other.done)
        for name in ("arrivals", "committed", "in_window", "distributed", "retries"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failed += other.failed
        self.unfinished += other.unfinished
        self.error = self.error or other.error


def guarded(node, tally: Tally, one: Callable[[], bool]) -> bool:
    """one(), but a log that cannot be written (a full disk) stops the partition
    (node.fail): this terminal and every other begin nothing more."""
    try:
        return one()
    except LogFailed as exc:
        tally.failed += 1
        node.fail(str(exc))
        return False


def attempt(
    node,
    tally: Tally,
    rng: random.Random,
    txid: int,
    body: Callable[[], bool],
    receipt: Callable[[], str] = str,
) -> bool:
    """Run body() until it commits (at most MAX_RETRIES conflicts); body returns whether it
    was distributed. The B line is the caller's; C (acknowledged, fsynced) or A follows.
    receipt(): what the C line adds after the txid (" ..." with the keys that find the
    transaction in the database; nothing by default)."""
    for _attempt in range(MAX_RETRIES):
        try:
            tally.last_distributed = bool(body())
            tally.distributed += tally.last_distributed
        except PartitionDown:
            break
        except Exception as exc:
            if is_storage_failure(exc):
                # A refused COMMIT may or may not be in the WAL: no A line, so the audit
                # counts it in doubt, whichever it is.
                tally.failed += 1
                node.fail(storage_line(exc, "the database"))
                return False
            if not is_conflict(exc):
                tally.error = tally.error or f"{type(exc).__name__}: {exc}"
                break  # rolled back; counted as failed, the first message kept
            tally.retries += 1
            time.sleep(rng.random() * 0.002)  # de-synchronise the colliding pair
            continue
        node.log.acknowledge(f"C {txid}{receipt()}\n")  # a LogFailed leaves it in doubt
        return True
    node.log(f"A {txid}\n")
    tally.failed += 1
    return False


def answered(tally: Tally, began: float, t_end: float, duration: float) -> None:
    """Count one commit whose clock started at `began` (closed: submitted; open: scheduled)."""
    done = time.perf_counter()
    histogram.record(tally.hist, done - began)
    if tally.last_distributed:
        histogram.record(tally.remote_hist, done - began)
    tally.done.append((done - (t_end - duration), done - began))
    tally.committed += 1
    tally.in_window += done <= t_end


def _closed(node, load, index: int, tally: Tally, t_end: float, make: Callable) -> None:
    term = make(node, load, random.Random(f"{load.seed}-{node.part}-{index}-closed"))
    try:
        while time.perf_counter() < t_end and not node.stopping.is_set():
            t0 = time.perf_counter()
            tally.arrivals += 1
            since = cpu.begin()
            if term.one(tally):
                cpu.charged(node, KIND, since, tally.last_distributed)
                answered(tally, t0, t_end, load.duration_s)
    finally:
        term.close()


def _serve_open(node, load, index, tally, work: queue.Queue, t_end, t_drain, make) -> None:
    term = make(node, load, random.Random(f"{load.seed}-{node.part}-{index}-open"))
    try:
        while True:
            arrival = work.get()
            if arrival is None:
                return
            if time.perf_counter() > t_drain or node.stopping.is_set():
                tally.unfinished += 1
                continue
            since = cpu.begin()
            if term.one(tally):
                cpu.charged(node, KIND, since, tally.last_distributed)
                answered(tally, arrival, t_end, load.duration_s)
    finally:
        term.close()


def run(node, load, make: Callable) -> Tally:
    """One measured step at this partition; returns its merged tally. make(node, load, rng)
    is a terminal; load has mode, duration_s, streams, rate, servers, drain_s and seed."""
    t_start = time.perf_counter()
    t_end = t_start + load.duration_s
    tallies = []
    threads = []
    if load.mode == "closed":
        for i in range(load.streams):
            tallies.append(Tally())
            threads.append(
                threading.Thread(target=_closed, args=(node, load, i, tallies[-1], t_end, make))
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
                    args=(node, load, i, tallies[-1], work, t_end, t_drain, make),
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
