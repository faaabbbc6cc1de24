"""The DebitCredit transaction in SQL, and the two halves of its distributed form.

Local (account in this partition): one DuckDB transaction that updates the account and
reads the balance back, updates the teller and the branch, inserts the history row, commits
(COMMIT fsyncs the WAL).

Distributed (account on partition R, teller and branch here on H). DuckDB has no PREPARE
TRANSACTION and commits one file per transaction, so the commit is presumed-abort two-phase
commit whose durable decision is the home transaction itself:

1. R "prepares": begins, updates the account, inserts remote_applied(txid), keeps it open;
2. H runs teller, branch and the history row (remote_part = R) and COMMITS: that commit is
   the decision, durable and atomic with H's half (no separate decision log, no extra fsync);
3. R commits. If R failed before 2, H rolls back: nothing anywhere. If R dies after 2, its
   open transaction is lost, and recovery (audit.recover) redoes the account update from the
   history row; the remote_applied primary key makes the redo exactly-once.

So a transaction is committed iff its history row exists, and then its account update exists
or is redone before the database is used again.
"""

from __future__ import annotations

from wisconsin.oltp.twophase import is_conflict, rollback
from wisconsin.workloads.debitcredit.schema import NO_REMOTE

__all__ = ["is_conflict", "rollback"]

UPDATE_ACCOUNT = "UPDATE account SET abalance = abalance + $1 WHERE aid = $2 RETURNING abalance"
UPDATE_TELLER = "UPDATE teller SET tbalance = tbalance + $1 WHERE tid = $2"
UPDATE_BRANCH = "UPDATE branch SET bbalance = bbalance + $1 WHERE bid = $2"
INSERT_HISTORY = (
    "INSERT INTO history VALUES ($1, $2, $3, $4, $5, current_localtimestamp(), $6, "
    "'hhhhhhhhhhhhhhhh')"
)
INSERT_MARKER = "INSERT INTO remote_applied VALUES ($1, $2, $3, $4)"


def run_local(cur, txid: int, aid: int, tid: int, bid: int, delta: int) -> int:
    """The whole transaction on one partition; returns the new account balance."""
    cur.execute("BEGIN")
    try:
        (balance,) = cur.execute(UPDATE_ACCOUNT, [delta, aid]).fetchone()
        cur.execute(UPDATE_TELLER, [delta, tid])
        cur.execute(UPDATE_BRANCH, [delta, bid])
        cur.execute(INSERT_HISTORY, [txid, tid, bid, aid, delta, NO_REMOTE])
        cur.execute("COMMIT")
    except BaseException:
        rollback(cur)
        raise
    return balance


def home_half(cur, txid: int, aid: int, tid: int, bid: int, delta: int, remote: int) -> None:
    """Step 2 up to (not including) COMMIT: teller, branch and the decision row."""
    cur.execute("BEGIN")
    try:
        cur.execute(UPDATE_TELLER, [delta, tid])
        cur.execute(UPDATE_BRANCH, [delta, bid])
        cur.execute(INSERT_HISTORY, [txid, tid, bid, aid, delta, remote])
    except BaseException:
        rollback(cur)
        raise


def prepare_remote(cur, txid: int, home: int, aid: int, delta: int) -> int:
    """Step 1 on the account's partition; leaves the transaction open. Returns the balance."""
    cur.execute("BEGIN")
    try:
        (balance,) = cur.execute(UPDATE_ACCOUNT, [delta, aid]).fetchone()
        cur.execute(INSERT_MARKER, [txid, home, aid, delta])
    except BaseException:
        rollback(cur)
        raise
    return balance


def redo_remote(cur, txid: int, home: int, aid: int, delta: int) -> bool:
    """Apply a decided remote half that did not commit; False if it already had."""
    cur.execute("BEGIN")
    try:
        if cur.execute("SELECT 1 FROM remote_applied WHERE txid = $1", [txid]).fetchone():
            cur.execute("ROLLBACK")
            return False
        cur.execute(UPDATE_ACCOUNT, [delta, aid]).fetchall()
        cur.execute(INSERT_MARKER, [txid, home, aid, delta])
        cur.execute("COMMIT")
    except BaseException:
        rollback(cur)
        raise
    return True
