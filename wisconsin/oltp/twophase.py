"""Presumed-abort two-phase commit whose durable decision is the home partition's commit.

DuckDB has no PREPARE TRANSACTION and a transaction writes one file, so a transaction that
touches partitions H (home) and R1..Rk commits in three moves:

1. each R "prepares": begins, does its part and writes its applied-marker, keeps it open,
   answers ("ok", value) -- or ("conflict" | "error", why) after rolling back;
2. H does its part, writes the decision record naming the remotes, and COMMITS: that commit
   is the decision, durable and atomic with H's half (no decision log, no extra fsync);
3. each R commits. If an R failed before 2, H rolls back: nothing anywhere. If an R dies
   after 2, its open transaction is lost, and recovery redoes its part from H's decision
   record; the marker makes the redo exactly-once.

The workload brings the halves (what a prepare message does, how a decided half is redone)
and the records; this module is the messages and their order, on both sides.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import duckdb

from wisconsin.oltp import links
from wisconsin.oltp.failures import is_storage_failure, storage_line

# A remote that neither answers nor closes its end is stuck, not slow: a prepare or a commit
# takes milliseconds, and DuckDB never waits on a lock (a conflict aborts). Without a bound
# the home's terminal would wait for ever (a FORCE CHECKPOINT held by open writes did that).
REPLY_TIMEOUT_S = 60.0
# A decided half redone this long, conflict after conflict, stops its partition: recovery
# redoes it from the home's decision record.
REDO_TIMEOUT_S = 60.0

# The remote halves this thread's committed distributed transactions decided since the last
# take_sent(): the CPU account (oltp.cpu) divides a transaction's home CPU by them.
_sent = threading.local()


def take_sent() -> int:
    """The remote halves this thread decided since it last asked (and start again at 0)."""
    n = getattr(_sent, "n", 0)
    _sent.n = 0
    return n


class PartitionDown(Exception):
    """A remote partition did not answer before the decision: rolled back."""


class DecidedHalfStuck(Exception):
    """A decided remote half kept conflicting for REDO_TIMEOUT_S: the partition stops."""


def is_conflict(exc: BaseException) -> bool:
    """DuckDB's optimistic concurrency: a write-write conflict aborts the later writer.

    A commit refused because the WAL could not be written is a TransactionException too
    ("Failed to commit: Could not write file ...: No space left on device"): that is no
    conflict, and retrying it (up to 100 times, or forever in a redo) only hides the disk."""
    if is_storage_failure(exc):
        return False
    return isinstance(exc, duckdb.TransactionException) or "onflict" in str(exc)


def rollback(cur: duckdb.DuckDBPyConnection) -> None:
    # No transaction may be open (it failed before BEGIN, or DuckDB already ended it).
    with contextlib.suppress(duckdb.Error):
        cur.execute("ROLLBACK")


class Links:
    """One terminal's kept-open connections to the peers' ports, made on first use."""

    def __init__(self, node):
        self.node = node
        self.open: dict[int, object] = {}

    def __call__(self, part: int):
        if part not in self.open:
            self.open[part] = links.connect(self.node.peers[part], self.node.authkey)
        return self.open[part]

    def drop(self, part: int) -> None:
        link = self.open.pop(part, None)
        if link is not None:  # closed, so a remote that still holds a half sees the end
            with contextlib.suppress(OSError):
                link.close()

    def reply(self, part: int):
        """The next message from `part`, or TimeoutError (an OSError) after REPLY_TIMEOUT_S."""
        link = self(part)
        if not link.poll(REPLY_TIMEOUT_S):
            raise TimeoutError(f"partition {part} did not answer within {REPLY_TIMEOUT_S:g} s")
        return link.recv()

    def close(self) -> None:
        for link in self.open.values():
            with contextlib.suppress(OSError):
                link.close()


def commit(cur, links: Links, prepares: dict[int, tuple], home_half: Callable) -> dict:
    """Run one distributed transaction as the home partition: send each remote its prepare
    message, run home_half(replies) on cur (it begins the home transaction, may call
    replies() for the remotes' values, and stops short of COMMIT), commit home (the
    decision), then tell the remotes. Returns {part: value} of the remotes' prepares.

    PartitionDown: a remote did not answer before the decision (rolled back everywhere);
    duckdb.TransactionException: a remote's prepare conflicted (rolled back everywhere)."""
    sent: list[int] = []
    got: dict[int, tuple] = {}
    for part, msg in prepares.items():
        try:
            links(part).send(msg)
        except (OSError, EOFError) as exc:
            links.drop(part)
            _settle_abort(links, prepares, sent, got)
            raise PartitionDown(str(exc)) from exc
        sent.append(part)

    def replies() -> dict:
        """Every remote's answer ({part: value}); a refusal raised as what it was."""
        for part in sent:
            if part in got:
                continue
            try:
                got[part] = links.reply(part)
            except (OSError, EOFError) as exc:
                links.drop(part)
                raise PartitionDown(str(exc)) from exc
        for part, reply in got.items():
            if reply[0] == "conflict":
                raise duckdb.TransactionException(reply[1])
            if reply[0] != "ok":
                raise RuntimeError(f"partition {part}: {reply[1]}")
        return {p: r[1] if len(r) > 1 else None for p, r in got.items()}

    try:
        home_half(replies)
        replies()
    except BaseException:
        rollback(cur)
        _settle_abort(links, prepares, sent, got)
        raise
    try:
        cur.execute("COMMIT")  # the durable decision
    except BaseException:
        rollback(cur)
        _settle_abort(links, prepares, sent, got)
        raise
    _sent.n = getattr(_sent, "n", 0) + len(sent)
    for part in sent:
        try:
            links(part).send(("commit", prepares[part][1]))
            links.reply(part)
        except (OSError, EOFError):
            links.drop(part)  # decided: recovery redoes the remote half
    return {p: r[1] if len(r) > 1 else None for p, r in got.items()}


def _settle_abort(links: Links, prepares: dict, sent: list[int], got: dict) -> None:
    """Every remote that prepared (or may have) is told to abort; one that failed its
    prepare rolled back itself."""
    for part in sent:
        if part not in links.open:
            continue
        try:
            reply = got[part] if part in got else links.reply(part)
            if reply[0] == "ok":
                links(part).send(("abort", prepares[part][1]))
        except (OSError, EOFError):
            links.drop(part)


def serve_peer(node, conn, prepare: Callable, redo: Callable) -> None:
    """Serve one peer connection: prepare / commit / abort of remote halves, in order.

    prepare(cur, msg) begins and does the half, leaving it open, and returns the value the
    home gets (None: nothing); redo(cur, msg) applies a decided half exactly once. The peer's
    end of the connection (its process died, its terminal gave up) ends the session quietly:
    an open half is rolled back, and a decided one is redone by recovery. A half this
    partition cannot write (a full disk) stops the partition (node.fail)."""
    cur = node.con.cursor()
    open_tx = None
    account = getattr(node, "cpu", None)  # oltp.cpu: this thread's CPU per message
    try:
        while True:
            if account is not None and open_tx is None:
                since = time.thread_time()  # a half's messages from its prepare on
            msg = conn.recv()
            op = msg[0]
            if op == "prepare":
                try:
                    value = prepare(cur, msg)
                    open_tx = msg
                    conn.send(("ok",) if value is None else ("ok", value))
                except Exception as exc:  # refused: the home rolls back (or retries)
                    if is_storage_failure(exc):
                        node.fail(storage_line(exc, "the database"))
                    kind = "conflict" if is_conflict(exc) else "error"
                    conn.send((kind, str(exc)))
            elif op == "commit":
                _commit_decided(cur, open_tx, redo)
                open_tx = None
                conn.send(("ok",))
            elif op == "abort":
                rollback(cur)
                open_tx = None
            elif op == "echo":  # the link's round trip and bandwidth (oltp.probe)
                conn.send_bytes(msg[1])
            if account is not None and op != "echo" and open_tx is None:
                # a half ended (committed, aborted, or refused at its prepare)
                account.half(time.thread_time() - since, op == "commit")
    except (EOFError, OSError):
        return  # the peer is gone (a closed, reset or broken connection)
    except DecidedHalfStuck as exc:
        node.fail(str(exc))
    except duckdb.Error as exc:  # a decided half that cannot commit: recovery redoes it
        node.fail(
            storage_line(exc, "the database")
            if is_storage_failure(exc)
            else f"a remote half failed: {type(exc).__name__}: {first_line(exc)}"
        )
    finally:
        if open_tx is not None:
            rollback(cur)  # undecided or decided: recovery redoes a decided one
        cur.close()
        conn.close()


def _commit_decided(cur, prepared, redo: Callable) -> None:
    """The home committed: this half must commit too, by redo if its commit conflicts."""
    try:
        cur.execute("COMMIT")
        return
    except duckdb.Error:
        rollback(cur)
    deadline = time.monotonic() + REDO_TIMEOUT_S
    while True:
        try:
            redo(cur, prepared)
            return
        except duckdb.Error as exc:
            if not is_conflict(exc):
                raise
            if time.monotonic() > deadline:
                raise DecidedHalfStuck(
                    f"a decided remote half (txid {prepared[1]}) conflicted for "
                    f"{REDO_TIMEOUT_S:g} s: {first_line(exc)}"
                ) from exc
            time.sleep(0.001)


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
