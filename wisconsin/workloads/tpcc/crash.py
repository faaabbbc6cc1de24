"""The durability test of TPC-C: kill -9 the coordinator (and any partition servers) mid-run.

A coordinator child process starts the partition servers and runs no-wait load (distributed
New-Orders and Payments through two-phase commit, Delivery inline). Once the drivers have
acknowledged some commits, the victims and then the coordinator are killed with SIGKILL
(oltp.crash); the surviving partitions notice their coordinator is gone and stop, an open
remote half rolled back. Then, as after any crash, `wisconsin repair`: decided halves redone,
undecided ones stay aborted (presumed abort), and every acknowledged transaction is looked
for in the database (receipts.py). Used by tests/test_tpcc_crash.py.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from wisconsin.oltp import crash
from wisconsin.workloads.tpcc import consistency, load, receipts, workload
from wisconsin.workloads.tpcc.runfile import Receipts
from wisconsin.workloads.tpcc.schema import Placement, Scale

TINY = Scale(customers_per_district=30, items=200)
TWO = Placement(2, 1)  # two partitions of one warehouse: remote warehouses are remote


@dataclass(frozen=True)
class CrashResult:
    acknowledged_before_kill: int
    repair: tuple[str, ...]  # what `wisconsin repair` printed
    receipts: Receipts
    failed: tuple[int, ...]  # consistency conditions that fail (11 aside: see the test)


def crash_test(
    db_dir: str | os.PathLike,
    placement: Placement = TWO,
    scale: Scale = TINY,
    min_acked: int = 60,
    victims: tuple[int, ...] = (),
    timeout_s: float = 90.0,
) -> CrashResult:
    db_dir = Path(db_dir)
    m = load.build(db_dir, placement, 3, scale)
    log_dir = load.ack_log_dir(db_dir)  # emptied by the build
    acked = crash.kill_mid_run(
        [sys.executable, "-m", __name__, str(db_dir)],
        log_dir, receipts.RECORD, min_acked, victims, timeout_s,
    )  # fmt: skip
    lines, _ = workload.repair_table(db_dir)  # what `wisconsin repair DIR` does
    paths = load.partition_paths(db_dir, m)
    # 11 counts the deliveries the run made, which died with the coordinator's tallies
    numbers = [n for n in consistency.CONDITIONS if n != 11]
    verdicts = consistency.check_database(paths, m.scale, None, numbers)
    return CrashResult(
        acked, tuple(lines), receipts.check(paths, log_dir), tuple(consistency.failed(verdicts))
    )


def _coordinator(db_dir: str) -> None:
    """The child: start the servers and run no-wait load until killed."""
    from wisconsin.workloads.tpcc.driver import Load
    from wisconsin.workloads.tpcc.server import PartitionServers

    m = load.read_manifest(db_dir)
    step = Load("nowait", 0.0, 120.0, 3, (1, 2, 3), workers=3, deferred_delivery=False)
    with PartitionServers(db_dir, m, load.ack_log_dir(db_dir), pin=False) as servers:
        servers.run(step)


if __name__ == "__main__":
    _coordinator(*sys.argv[1:])
