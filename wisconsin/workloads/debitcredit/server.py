"""DebitCredit's partition server, on the OLTP core's (wisconsin.oltp.node).

The process that owns partition p runs p's terminals (driver.py) and the remote halves of
other partitions' DebitCredit transactions (transaction.prepare_remote / redo_remote),
which arrive on its peer port.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from wisconsin.oltp import histogram, terminals, twophase
from wisconsin.oltp import node as core
from wisconsin.oltp.node import ENGINE_MEMORY, PEER_BACKLOG, TXID_PART_SHIFT, peer_listener
from wisconsin.oltp.node import pin_every_thread as _pin_every_thread
from wisconsin.workloads.debitcredit import driver, transaction
from wisconsin.workloads.debitcredit.schema import Sizing, connect

__all__ = ["ENGINE_MEMORY", "PEER_BACKLOG", "TXID_PART_SHIFT", "_pin_every_thread", "peer_listener"]


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


class Node(core.Node):
    """What the terminals and the peer handlers of one DebitCredit partition share."""

    def __init__(self, part, partitions, sizing: Sizing, path, log_path, authkey, leave_open=False):
        con = connect(path)
        super().__init__(part, partitions, con, log_path, authkey, last_txid(con, part, leave_open))
        self.sizing = sizing
        self.tellers = sizing.branches_per_partition * sizing.tellers_per_branch
        self.first_teller = part * self.tellers
        self.total_branches = sizing.branches(partitions)


def _prepare(cur, msg) -> None:
    _, txid, home, aid, delta = msg
    transaction.prepare_remote(cur, txid, home, aid, delta)


def _redo(cur, msg) -> None:
    _, txid, home, aid, delta = msg
    transaction.redo_remote(cur, txid, home, aid, delta)


def _peer_session(node: Node, conn) -> None:
    twophase.serve_peer(node, conn, _prepare, _redo)


def _step(node: Node, load: driver.Load) -> dict:
    return tally_dict(driver.run(node, load))


def tally_dict(tally: terminals.Tally) -> dict:
    return {
        "done": tally.done,
        "hist": histogram.encode(tally.hist),
        "remote_hist": histogram.encode(tally.remote_hist),
        "arrivals": tally.arrivals,
        "committed": tally.committed,
        "in_window": tally.in_window,
        "distributed": tally.distributed,
        "retries": tally.retries,
        "failed": tally.failed,
        "unfinished": tally.unfinished,
        "error": tally.error,
    }


def serve(
    part, partitions, sizing, path, log_dir, authkey, ctrl, leave_open=False, pin=None
) -> None:
    """Process entry (node.serve). leave_open: the old start-up's open result (tests and the
    collapse benchmark only; see last_txid). pin: the core to pin this process to."""
    log_path = Path(log_dir) / f"driver-p{part:03d}.log"
    make = partial(Node, part, partitions, sizing, path, log_path, authkey, leave_open)
    core.serve(make, ctrl, pin, _peer_session, _step)
