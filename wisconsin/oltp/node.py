"""The partition server: one long-lived process per partition, owning its DuckDB file.

DuckDB lets one process write a file, so the process that owns partition p runs everything
that touches it: p's terminals and the remote halves of other partitions' distributed
transactions, which arrive on its peer port (one thread and one cursor per peer
connection). The coordinator talks to it over a pipe: it sends steps, it returns tallies. A
plain multiprocessing server rather than a Dask worker: a remote half is one pickled
message each way on a kept-open socket (~0.05 ms round trip), not a scheduled task (~20 ms).
A workload subclasses Node (its sizing, its txid start) and calls serve() with its step and
its peer session.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable

import duckdb

from wisconsin import interrupts
from wisconsin.oltp import acklog, cpu, failures, links, probe
from wisconsin.oltp.twophase import first_line

TXID_PART_SHIFT = 52  # txid = part << 52 | sequence: unique across partitions and restarts

ENGINE_MEMORY = (
    "SELECT sum(memory_usage_bytes), sum(memory_usage_bytes) FILTER (tag = 'TRANSACTION'), "
    "sum(temporary_storage_bytes) FROM duckdb_memory()"
)
TEMP_FILES = "SELECT coalesce(sum(size), 0) FROM duckdb_temporary_files()"

# Every terminal of every peer may open its link at a step's start (terminals and their
# links live one step). With multiprocessing's default backlog of 1 the kernel dropped such
# connections (ListenOverflows; past its SYN queue, syncookies), and a terminal whose ACK was
# dropped after a cookie waited for the handshake forever: a step at 100% remote hung in its
# second step (2026-11-27). At 15% a dropped connect costs a terminal 1 s or more.
PEER_BACKLOG = 256


def peer_listener(authkey: bytes):
    """The partition's peer port, deep enough for every peer terminal at once: on loopback,
    or on a cluster on its worker's own address (wisconsin.oltp.links)."""
    return links.listen(authkey, PEER_BACKLOG)


class Node:
    """What the terminals and the peer handlers of one partition share."""

    def __init__(self, part, partitions, con, log_path, authkey, last_txid: int = 0):
        self.part, self.partitions = part, partitions
        self.con = con
        self.authkey = authkey
        self.peers: dict[int, object] = {}
        self.stopping = threading.Event()
        self.fatal = ""  # why this partition cannot go on (a full disk, a thread's error)
        self._fatal_lock = threading.Lock()
        self.log = acklog.AckLog(log_path)
        self.cpu = cpu.Account()  # what its threads charge: transactions, remote halves
        # A restarted process starts past every txid it may have issued before: the clock in
        # microseconds grows faster than any one process issues transactions.
        base = max(int(time.time() * 1e6), (last_txid & ((1 << TXID_PART_SHIFT) - 1)) + 1)
        self._seq = itertools.count(base)

    def engine_sample(self, cur) -> tuple[int, int, int]:
        """(engine memory, its TRANSACTION tag, temp-file bytes) of this partition's DuckDB."""
        mem, txn, temp = cur.execute(ENGINE_MEMORY).fetchall()[0]
        ((files,),) = cur.execute(TEMP_FILES).fetchall()
        return int(mem or 0), int(txn or 0), max(int(temp or 0), int(files))

    def next_txid(self) -> int:
        return (self.part << TXID_PART_SHIFT) | next(self._seq)

    def fail(self, why: str) -> None:
        """This partition cannot go on: keep the first reason, stop every terminal."""
        with self._fatal_lock:
            self.fatal = self.fatal or why
        self.stopping.set()

    def close(self) -> None:
        # Closing checkpoints; on a full disk that fails, and the WAL keeps every commit.
        with contextlib.suppress(duckdb.Error):
            self.con.close()
        self.log.close()


def why(exc: BaseException, doing: str) -> str:
    """One line for an error nobody expected, or for a full disk."""
    if failures.is_storage_failure(exc):
        return failures.storage_line(exc, "the database")
    return f"{doing} failed: {type(exc).__name__}: {first_line(exc)}"


def _thread_errors_fail(node: Node) -> None:
    """No thread of this process prints a traceback: an error that escapes one stops the
    partition, and the coordinator says it in one line."""

    def hook(args) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "a thread"
        node.fail(why(args.exc_value, f"thread {name}"))

    threading.excepthook = hook


def _accept(node: Node, listener, session: Callable) -> None:
    while not node.stopping.is_set():
        try:
            conn = listener.accept()
        except (OSError, EOFError):
            if node.stopping.is_set():
                return
            continue  # a client that failed authentication
        threading.Thread(target=session, args=(node, conn), daemon=True).start()


def _orphan_watch(node: Node, parent: int) -> None:
    """Stop the terminals if the coordinator dies (kill -9 closes no pipe mid-step)."""
    while not node.stopping.is_set():
        if os.getppid() != parent:
            node.stopping.set()
            return
        time.sleep(0.2)


def _sample_engine(node: Node, t0: float, stop: threading.Event, out: list) -> None:
    """Sample the engine at the step's start and each second after it, until stop."""
    cur = node.con.cursor()
    try:
        while True:
            out.append(node.engine_sample(cur))
            if stop.wait(max(0.0, t0 + len(out) - time.perf_counter())):
                return
    except duckdb.Error:
        return  # the engine failed: the step's tally says how
    finally:
        cur.close()


def run_step(node: Node, step: Callable, load) -> dict:
    """One step, step(node, load) -> its tally as a dict, with the process's CPU and wall
    seconds (cpu_s, wall_s), that CPU split by what it served (cpu: oltp.cpu) and the
    engine sampled each second beside it (engine)."""
    charged0 = node.cpu.snapshot()
    cpu0, t0 = time.process_time(), time.perf_counter()
    samples: list = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_engine, args=(node, t0, stop, samples))
    sampler.start()
    try:
        tally = step(node, load)
    finally:
        stop.set()
        sampler.join()
    cpu_s = time.process_time() - cpu0
    out = {**tally, "cpu_s": cpu_s, "wall_s": time.perf_counter() - t0}
    out["cpu"] = cpu.step_record(charged0, node.cpu.snapshot(), cpu_s)
    out["engine"] = samples
    return out


def pin_every_thread(core: int) -> None:
    """Pin the process's existing threads too: sched_setaffinity(0) pins only the calling
    thread, and imports in the spawned child (pyarrow's pools) start threads before us."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(tid, {core})


def serve(make_node: Callable, ctrl, core, session: Callable, step: Callable) -> None:
    """Process entry: open the file, listen, report the address, then obey the coordinator.

    make_node() opens the partition; session(node, conn) serves one peer connection;
    step(node, load) runs one step and returns its tally as a dict (run_step). The coordinator's pipe closing (it exited or was killed) ends the
    process. core: pin this process to that core first, so DuckDB's threads and the
    terminals (all started later) inherit it: one partition, one processor.
    """
    if core is not None:
        pin_every_thread(core)
    interrupts.child_ignores_sigint()  # ^C is the coordinator's to handle
    try:
        node = make_node()
        listener = peer_listener(node.authkey)
    except Exception as exc:  # e.g. a full disk: one line to the coordinator, no traceback
        with contextlib.suppress(OSError):
            ctrl.send(("failed", why(exc, "the start")))
        os._exit(1)
    _thread_errors_fail(node)
    threading.Thread(target=_accept, args=(node, listener, session), daemon=True).start()
    threading.Thread(target=_orphan_watch, args=(node, os.getppid()), daemon=True).start()
    try:
        reply: object = ("ready", listener.address, os.getpid())
        while reply is not None:
            try:  # a closed pipe: the coordinator is gone (^C, exit, kill)
                ctrl.send(reply)
                if node.fatal:
                    break
                msg = ctrl.recv()
            except (EOFError, OSError):
                break
            reply = None
            if msg[0] == "peers":
                node.peers = msg[1]
                reply = ("ok",)
                if links.on_cluster():  # every link tried, timed, before the first step
                    reply = probe.peers(node, msg[2])
            elif msg[0] == "run":
                reply = run_step(node, step, msg[1])
                if node.fatal:  # the step is not measured: its tally is not sent
                    reply = ("failed", node.fatal)
                elif node.stopping.is_set():
                    break
    except Exception as exc:
        node.fail(why(exc, "the partition server"))
        with contextlib.suppress(OSError):
            ctrl.send(("failed", node.fatal))
    finally:
        node.stopping.set()
        listener.close()
        node.close()
    # Committed work is in the WAL. Skip interpreter teardown: peer threads may still hold
    # cursors, and DuckDB's bindings complain about them at exit.
    os._exit(1 if node.fatal else 0)
