"""The partition server: one long-lived process per partition, owning its DuckDB file.

DuckDB lets one process write a file, so the process that owns partition p runs everything
that touches it: p's terminals (driver.py) and the remote halves of other partitions'
distributed transactions, which arrive on its peer port (one thread and one cursor per peer
connection). The coordinator talks to it over a pipe: it sends steps, it returns tallies. A
plain multiprocessing server rather than a Dask worker: a remote half is one pickled
message each way on a kept-open socket (~0.05 ms round trip), not a scheduled task (~20 ms).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from multiprocessing.connection import Listener
from pathlib import Path

import duckdb

from wisconsin import interrupts
from wisconsin.workloads.debitcredit import driver, failures, histogram, transaction
from wisconsin.workloads.debitcredit.schema import Sizing, connect

TXID_PART_SHIFT = 52  # txid = part << 52 | sequence: unique across partitions and restarts


ENGINE_MEMORY = (
    "SELECT sum(memory_usage_bytes), sum(memory_usage_bytes) FILTER (tag = 'TRANSACTION'), "
    "sum(temporary_storage_bytes) FROM duckdb_memory()"
)
TEMP_FILES = "SELECT coalesce(sum(size), 0) FROM duckdb_temporary_files()"


def last_txid(con, part: int, leave_open: bool = False) -> int:
    """The highest txid this partition issued before (0 if none).

    The result is read to its end: a result left unexhausted keeps its statement, and so its
    transaction, open for the connection's life, and DuckDB then keeps the undo memory of
    every later transaction (issue 31: 393 -> 4 tps in 15 s, then spilling). leave_open
    reproduces that old start-up, for the regression test and the collapse benchmark only.
    """
    con.execute(
        "SELECT coalesce(max(txid), 0) FROM history WHERE txid >> $1 = $2",
        [TXID_PART_SHIFT, part],
    )
    ((last,),) = [con.fetchone()] if leave_open else con.fetchall()
    return last


# Every terminal of every peer may open its link at a step's start (terminals and their
# links live one step). With multiprocessing's default backlog of 1 the kernel dropped such
# connections (ListenOverflows; past its SYN queue, syncookies), and a terminal whose ACK was
# dropped after a cookie waited for the handshake forever: a step at 100% remote hung in its
# second step (2026-11-27). At 15% a dropped connect costs a terminal 1 s or more.
PEER_BACKLOG = 256


def peer_listener(authkey: bytes) -> Listener:
    """The partition's peer port on loopback, deep enough for every peer terminal at once."""
    return Listener(("127.0.0.1", 0), authkey=authkey, backlog=PEER_BACKLOG)


class Node:
    """What the terminals and the peer handlers of one partition share."""

    def __init__(self, part, partitions, sizing: Sizing, path, log_path, authkey, leave_open=False):
        self.part, self.partitions, self.sizing = part, partitions, sizing
        self.con = connect(path)
        self.authkey = authkey
        self.peers: dict[int, object] = {}
        self.tellers = sizing.branches_per_partition * sizing.tellers_per_branch
        self.first_teller = part * self.tellers
        self.total_branches = sizing.branches(partitions)
        self.stopping = threading.Event()
        self.fatal = ""  # why this partition cannot go on (a full disk, a thread's error)
        self._fatal_lock = threading.Lock()
        self.log = driver.AckLog(log_path)
        # A restarted process starts past every txid it may have issued before: the clock in
        # microseconds grows faster than any one process issues transactions.
        last = last_txid(self.con, part, leave_open)
        base = max(int(time.time() * 1e6), (last & ((1 << TXID_PART_SHIFT) - 1)) + 1)
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


def _peer_session(node: Node, conn) -> None:
    """Serve one peer connection: prepare / commit / abort of remote halves, in order.

    The peer's end of the connection (its process died, its terminal gave up) ends the
    session quietly: an open half is rolled back, and a decided one is redone by recovery.
    A half this partition cannot write (a full disk) stops the partition (node.fail)."""
    cur = node.con.cursor()
    open_tx = None
    try:
        while True:
            msg = conn.recv()
            op = msg[0]
            if op == "prepare":
                _, txid, home, aid, delta = msg
                try:
                    transaction.prepare_remote(cur, txid, home, aid, delta)
                    open_tx = msg
                    conn.send(("ok",))
                except duckdb.Error as exc:
                    if failures.is_storage_failure(exc):
                        node.fail(failures.storage_line(exc, "the database"))
                    kind = "conflict" if transaction.is_conflict(exc) else "error"
                    conn.send((kind, str(exc)))
            elif op == "commit":
                _commit_decided(cur, open_tx)
                open_tx = None
                conn.send(("ok",))
            elif op == "abort":
                transaction.rollback(cur)
                open_tx = None
    except (EOFError, OSError):
        return  # the peer is gone (a closed, reset or broken connection)
    except duckdb.Error as exc:  # a decided half that cannot commit: recovery redoes it
        node.fail(
            failures.storage_line(exc, "the database")
            if failures.is_storage_failure(exc)
            else f"a remote half failed: {type(exc).__name__}: {_first_line(exc)}"
        )
    finally:
        if open_tx is not None:
            transaction.rollback(cur)  # undecided or decided: recovery redoes a decided one
        cur.close()
        conn.close()


def _commit_decided(cur, prepared) -> None:
    """The home committed: this half must commit too, by redo if its commit conflicts."""
    try:
        cur.execute("COMMIT")
        return
    except duckdb.Error:
        transaction.rollback(cur)
    _, txid, home, aid, delta = prepared
    while True:
        try:
            transaction.redo_remote(cur, txid, home, aid, delta)
            return
        except duckdb.Error as exc:
            if not transaction.is_conflict(exc):
                raise
            time.sleep(0.001)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _why(exc: BaseException, doing: str) -> str:
    """One line for an error nobody expected, or for a full disk."""
    if failures.is_storage_failure(exc):
        return failures.storage_line(exc, "the database")
    return f"{doing} failed: {type(exc).__name__}: {_first_line(exc)}"


def _thread_errors_fail(node: Node) -> None:
    """No thread of this process prints a traceback: an error that escapes one stops the
    partition, and the coordinator says it in one line."""

    def hook(args) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "a thread"
        node.fail(_why(args.exc_value, f"thread {name}"))

    threading.excepthook = hook


def _accept(node: Node, listener: Listener) -> None:
    while not node.stopping.is_set():
        try:
            conn = listener.accept()
        except (OSError, EOFError):
            if node.stopping.is_set():
                return
            continue  # a client that failed authentication
        threading.Thread(target=_peer_session, args=(node, conn), daemon=True).start()


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


def run_step(node: Node, load: driver.Load) -> dict:
    """One step with the engine sampled beside it; the tally as sent to the coordinator."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    samples: list = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_engine, args=(node, t0, stop, samples))
    sampler.start()
    try:
        tally = driver.run(node, load)
    finally:
        stop.set()
        sampler.join()
    out = tally_dict(tally, time.process_time() - cpu0, time.perf_counter() - t0)
    out["engine"] = samples
    return out


def tally_dict(tally: driver.Tally, cpu_s: float, wall_s: float) -> dict:
    return {
        "done": tally.done,
        "hist": histogram.encode(tally.hist),
        "arrivals": tally.arrivals,
        "committed": tally.committed,
        "in_window": tally.in_window,
        "distributed": tally.distributed,
        "retries": tally.retries,
        "failed": tally.failed,
        "unfinished": tally.unfinished,
        "error": tally.error,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
    }


def _pin_every_thread(core: int) -> None:
    """Pin the process's existing threads too: sched_setaffinity(0) pins only the calling
    thread, and imports in the spawned child (pyarrow's pools) start threads before us."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(tid, {core})


def serve(
    part, partitions, sizing, path, log_dir, authkey, ctrl, leave_open=False, core=None
) -> None:
    """Process entry: open the file, listen, report the address, then obey the coordinator.

    The coordinator's pipe closing (it exited or was killed) ends the process. leave_open:
    the old start-up's open result (tests and the collapse benchmark only; see last_txid).
    core: pin this process to that core first, so DuckDB's threads and the terminals (all
    started later) inherit it: one partition, one processor, as Tandem counted them.
    """
    if core is not None:
        _pin_every_thread(core)
    interrupts.child_ignores_sigint()  # ^C is the coordinator's to handle
    log_path = Path(log_dir) / f"driver-p{part:03d}.log"
    try:
        node = Node(part, partitions, sizing, path, log_path, authkey, leave_open)
        listener = peer_listener(authkey)
    except Exception as exc:  # e.g. a full disk: one line to the coordinator, no traceback
        with contextlib.suppress(OSError):
            ctrl.send(("failed", _why(exc, "the start")))
        os._exit(1)
    _thread_errors_fail(node)
    threading.Thread(target=_accept, args=(node, listener), daemon=True).start()
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
            elif msg[0] == "run":
                reply = run_step(node, msg[1])
                if node.fatal:  # the step is not measured: its tally is not sent
                    reply = ("failed", node.fatal)
                elif node.stopping.is_set():
                    break
    except Exception as exc:
        node.fail(_why(exc, "the partition server"))
        with contextlib.suppress(OSError):
            ctrl.send(("failed", node.fatal))
    finally:
        node.stopping.set()
        listener.close()
        node.close()
    # Committed work is in the WAL. Skip interpreter teardown: peer threads may still hold
    # cursors, and DuckDB's bindings complain about them at exit.
    os._exit(1 if node.fatal else 0)
