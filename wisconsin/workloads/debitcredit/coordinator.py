"""DebitCredit's partition servers: the OLTP core's (wisconsin.oltp.servers) running
server.serve, one process per partition file."""

from __future__ import annotations

from wisconsin.oltp import servers
from wisconsin.oltp.servers import pinned_cores
from wisconsin.workloads.debitcredit import server
from wisconsin.workloads.debitcredit.driver import Load
from wisconsin.workloads.debitcredit.schema import Sizing, partition_file

__all__ = ["PartitionServers", "pinned_cores"]


class PartitionServers(servers.PartitionServers):
    """P DebitCredit partition processes, used as a context manager."""

    def __init__(
        self,
        data_dir,
        partitions: int,
        sizing: Sizing,
        log_dir,
        leave_open=False,
        pin=False,
        hosts=None,
        paths=None,
    ):
        """On a cluster: hosts (oltp.hosted.Hosts) and each partition's path on its host."""
        self.leave_open = leave_open  # the old start-up's open result (server.last_txid)
        self.sizing = sizing
        paths = paths or [partition_file(data_dir, p, partitions) for p in range(partitions)]
        super().__init__(paths, log_dir, server.serve, self._args, "DebitCredit", pin, hosts)

    def _args(self, p: int, authkey: bytes, ctrl, core) -> tuple:
        return (
            p, self.partitions, self.sizing, str(self.paths[p]), str(self.log_dir_of(p)), authkey,
            ctrl, self.leave_open, core,
        )  # fmt: skip

    def run(self, load: Load) -> list[dict]:
        """One step on every partition at once; the per-partition tallies."""
        during = f"{'an' if load.mode == 'open' else 'a'} {load.mode} step"
        return self.step(load, load.duration_s + load.drain_s + 60.0, during)
