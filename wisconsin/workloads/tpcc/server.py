"""TPC-C's partition server and its coordinator, on the OLTP core (oltp.node, oltp.servers).

The process that owns partition p runs the terminals of p's warehouses (driver.py) and the
remote halves of other partitions' New-Orders and Payments (remote.py) on its peer port.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from wisconsin.oltp import node as core
from wisconsin.oltp import servers, twophase
from wisconsin.workloads.tpcc import driver, remote
from wisconsin.workloads.tpcc.load import TpccManifest, partition_paths
from wisconsin.workloads.tpcc.schema import connect

MEMORY_LIMIT = "1GB"  # per partition's DuckDB (2 partitions and the harness share the box)


def last_txid(con, part: int) -> int:
    """The highest decision this partition recorded (0 if none): a restart issues past it."""
    ((last,),) = con.execute(
        "SELECT coalesce(max(txid), 0) FROM tpcc_decided WHERE txid >> $1 = $2",
        [core.TXID_PART_SHIFT, part],
    ).fetchall()
    return last


class Node(core.Node):
    """What one TPC-C partition's terminals, delivery worker and peer sessions share."""

    def __init__(self, part: int, m: TpccManifest, path: str, log_path, authkey):
        con = connect(path, memory_limit=MEMORY_LIMIT)
        remote.create(con)
        super().__init__(part, m.partitions, con, log_path, authkey, last_txid(con, part))
        self.path = path
        self.placement, self.scale = m.placement, m.scale


def _session(node: Node, conn) -> None:
    twophase.serve_peer(node, conn, remote.prepare, remote.redo)


def serve(part, m: TpccManifest, path, log_dir, authkey, ctrl, pin=None) -> None:
    """Process entry (core.serve)."""
    log_path = Path(log_dir) / f"driver-p{part:03d}.log"
    core.serve(partial(Node, part, m, path, log_path, authkey), ctrl, pin, _session, driver.run)


class PartitionServers(servers.PartitionServers):
    """The P TPC-C partition processes of a database, used as a context manager."""

    def __init__(self, db_dir, m: TpccManifest, log_dir, pin: bool = True, hosts=None, paths=None):
        """On a cluster: hosts (oltp.hosted.Hosts) and each partition's path on its host."""
        self.manifest = m
        paths = paths or partition_paths(db_dir, m)
        super().__init__(paths, log_dir, serve, self._args, "TPC-C", pin, hosts)

    def _args(self, p: int, authkey: bytes, ctrl, core_: int | None) -> tuple:
        log_dir = str(self.log_dir_of(p))
        return (p, self.manifest, str(self.paths[p]), log_dir, authkey, ctrl, core_)

    def run(self, load: driver.Load) -> list[dict]:
        timeout = load.ramp_s + load.duration_s + load.drain_s + 120.0
        return self.step(load, timeout, f"a {load.mode} step")
