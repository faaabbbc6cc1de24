"""The OLTP partition servers a cluster bench starts on the namespace cluster's hosts."""

from __future__ import annotations

from pathlib import Path


def server_pid(cluster, worker: str) -> int | None:
    """The pid of the partition server (wisconsin.oltp.hosted) on worker's host, if any."""
    for pid in cluster.worker_pids(worker):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"wisconsin.oltp.hosted" in cmd:
            return pid
    return None
