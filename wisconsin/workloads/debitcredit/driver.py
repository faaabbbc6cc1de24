"""DebitCredit's terminals, on the OLTP core's (wisconsin.oltp.terminals).

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

import random
import re
from dataclasses import dataclass
from functools import partial

from wisconsin.oltp import acklog, terminals, twophase
from wisconsin.oltp.terminals import Tally
from wisconsin.workloads.debitcredit import transaction
from wisconsin.workloads.debitcredit.schema import NO_REMOTE

REMOTE_SHARE = 0.15  # of transactions whose account is at another branch
DELTA = 999_999


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


class Terminal:
    """One stream of transactions: its own DuckDB cursor and its own links to the peers."""

    def __init__(self, node, rng: random.Random, remote_share: float = REMOTE_SHARE):
        self.node = node
        self.remote_share = remote_share
        self.cur = node.con.cursor()
        self.rng = rng
        self.links = twophase.Links(node)

    def close(self) -> None:
        self.links.close()
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
        acknowledgement is on disk."""
        return terminals.guarded(self.node, tally, partial(self._one, tally))

    def _one(self, tally: Tally) -> bool:
        node = self.node
        aid, tid, bid, delta = self.inputs()
        remote = node.sizing.partition_of_branch(node.sizing.branch_of_account(aid))
        remote = NO_REMOTE if remote == node.part else remote
        txid = node.next_txid()
        node.log(f"B {txid} {aid} {tid} {delta} {remote}\n")

        def body() -> bool:
            if remote == NO_REMOTE:
                transaction.run_local(self.cur, txid, aid, tid, bid, delta)
                return False
            self.distributed(txid, aid, tid, bid, delta, remote)
            return True

        return terminals.attempt(node, tally, self.rng, txid, body)

    def distributed(self, txid, aid, tid, bid, delta, remote) -> None:
        """Presumed-abort 2PC; the home COMMIT is the decision (see transaction.py)."""
        twophase.commit(
            self.cur,
            self.links,
            {remote: ("prepare", txid, self.node.part, aid, delta)},
            lambda _replies: transaction.home_half(self.cur, txid, aid, tid, bid, delta, remote),
        )


def make_terminal(node, load: Load, rng: random.Random) -> Terminal:
    return Terminal(node, rng, load.remote_share)


def run(node, load: Load) -> Tally:
    """One measured step at this partition; returns its merged tally."""
    return terminals.run(node, load, make_terminal)


# Every record the writer makes, whole: a line it did not finish is no record.
RECORD = re.compile(r"(?:B -?\d+ -?\d+ -?\d+ -?\d+ -?\d+|[CA] -?\d+)")
read_records = partial(acklog.read_records, record=RECORD)
read_log = partial(acklog.read_log, record=RECORD)
