"""The durability test: kill -9 a partition process and the coordinator in the middle of a run.

A coordinator child process starts P partition servers and runs closed load. Once the drivers
have acknowledged some commits, one partition process and the coordinator are killed with
SIGKILL; the other partitions notice the coordinator is gone and stop. Then, as after any
crash: `wisconsin repair` (redo decided remote halves), audit against the drivers' logs, and read the
files independently. Used by tests/test_debitcredit_crash.py and benchmarks/.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from wisconsin import WisconsinError
from wisconsin.oltp import crash
from wisconsin.workloads.debitcredit import audit, driver, schema, tables
from wisconsin.workloads.debitcredit.check import independent_check


@dataclass(frozen=True)
class CrashResult:
    acknowledged_before_kill: int
    recovered: int  # remote halves redone
    audit: audit.Audit
    independent_ok: bool
    independent: tuple[str, ...]


def crash_test(
    data_dir: str | os.PathLike,
    partitions: int = 2,
    sizing: schema.Sizing | None = None,
    min_acked: int = 30,
    victim: int = 1,
    timeout_s: float = 60.0,
) -> CrashResult:
    sizing = sizing or schema.Sizing(branches_per_partition=4, accounts_per_branch=100)
    if not 0 <= victim < partitions:
        raise WisconsinError(f"victim partition {victim} out of range")
    paths = schema.build(data_dir, partitions, sizing)
    log_dir = schema.ack_log_dir(paths[0].parent)  # emptied by the build
    acked = crash.kill_mid_run(
        [sys.executable, "-m", __name__, str(data_dir), str(partitions), str(log_dir),
         str(sizing.branches_per_partition), str(sizing.tellers_per_branch),
         str(sizing.accounts_per_branch)],
        log_dir, driver.RECORD, min_acked, (victim,), timeout_s,
    )  # fmt: skip
    recovered = tables.repair(paths[0].parent).redone  # what `wisconsin repair` does
    result = audit.check(paths, log_dir)
    ok, lines = independent_check(str(paths[0].parent))
    return CrashResult(acked, recovered, result, ok, tuple(lines))


def _coordinator(data_dir, partitions, log_dir, nb, tpb, apb) -> None:
    """The child: start the servers and run closed load until killed."""
    from wisconsin.workloads.debitcredit.coordinator import PartitionServers
    from wisconsin.workloads.debitcredit.driver import Load

    sizing = schema.Sizing(int(nb), int(tpb), int(apb))
    with PartitionServers(data_dir, int(partitions), sizing, log_dir) as servers:
        servers.run(Load("closed", 120.0, streams=4))


if __name__ == "__main__":
    _coordinator(*sys.argv[1:])
