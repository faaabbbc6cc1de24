"""What runs inside a Dask worker: a plugin owning the worker's DuckDB sessions, and the
task functions the shared-nothing coordinator pins to it by worker name.

The plugin keeps one long-lived session per partition file, so a transaction opened by
`prepare` is still open when `commit` arrives as a later task.
"""

from __future__ import annotations

import logging
import time

from distributed import WorkerPlugin, get_worker

from wisconsin import pagecache
from wisconsin.duckdb_session import PartitionSession
from wisconsin.engine import Fault, memory_share
from wisconsin.queries import Statement

PLUGIN = "wisconsin-partitions"


def dask_setup(worker) -> None:
    """Worker preload (local clusters): ^C in the user's terminal reaches every process of
    the group; the coordinator handles it and stops the workers, so they ignore it rather
    than each print a traceback."""
    import contextlib
    import signal

    with contextlib.suppress(ValueError):  # not the main thread: leave the defaults
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    from wisconsin.logs import redirect_worker_output

    redirect_worker_output()  # Dask's log lines to the run's log file, not the terminal


def resolve_memory_limit(limit: str, worker_limit: int | None) -> int | None:
    """Bytes for a percentage limit ("60%": of this worker's Dask memory limit, or of its
    host's RAM if it has none), decided here on the worker; None for a DuckDB size string."""
    if not limit.strip().endswith("%"):
        return None
    import psutil

    base = worker_limit or psutil.virtual_memory().total
    return int(base * float(limit.strip()[:-1]) / 100)


class PartitionSessions(WorkerPlugin):
    """memory_limit is DuckDB's per worker: a size ("2GB") for each session, or a share of
    the worker's own memory ("60%") split evenly among the sessions it holds open."""

    name = PLUGIN

    def __init__(self, threads: int = 1, memory_limit: str = "1GB"):
        self.threads = threads
        self.memory_limit = memory_limit
        self.sessions: dict[str, PartitionSession] = {}
        self.budget: int | None = None  # bytes shared by this worker's sessions
        self.limits: dict[str, str] = {}  # per-file memory_limit (EngineConfig.memory_fraction)

    def setup(self, worker) -> None:
        self.sessions = {}
        mm = getattr(worker, "memory_manager", None)
        self.budget = resolve_memory_limit(self.memory_limit, getattr(mm, "memory_limit", None))

    def teardown(self, worker) -> None:
        # The worker is closing on purpose: a heartbeat racing the scheduler's shutdown is
        # not an error worth a traceback on the user's terminal.
        logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)
        self.close_all()

    def _share(self, sessions: int) -> str:
        return f"{max(64, self.budget // max(1, sessions) // 2**20)}MB"

    def session(self, path: str) -> PartitionSession:
        s = self.sessions.get(path)
        if s is None:
            if path in self.limits:  # sized by the coordinator (EngineConfig.memory_fraction)
                s = PartitionSession.open(path, self.threads, self.limits[path])
            elif self.budget is None:
                s = PartitionSession.open(path, self.threads, self.memory_limit)
            else:
                share = self._share(len(self.sessions) + 1)
                s = PartitionSession.open(path, self.threads, share)
                for other in self.sessions.values():  # a worker holding k partitions: 1/k each
                    other.con.execute(f"SET memory_limit = '{share}'")
            self.sessions[path] = s
        return s

    def close(self, path: str) -> None:
        s = self.sessions.pop(path, None)
        if s is not None:
            s.close()

    def close_all(self) -> None:
        for path in list(self.sessions):
            self.close(path)


def _sessions() -> PartitionSessions:
    return get_worker().plugins[PLUGIN]


def _inject(fault: Fault | None, phase: str) -> None:
    if fault is None or fault.phase != phase:
        return
    if fault.action == "sleep":
        time.sleep(fault.seconds)
    else:
        raise RuntimeError(f"injected failure in {phase}")


def worker_info(dask_worker=None) -> dict:
    """Run with client.run, which passes the worker as dask_worker."""
    import os
    import socket

    import psutil

    w = dask_worker
    return {
        "name": str(w.name),
        "host": socket.gethostname(),
        "address": w.address,
        "pid": os.getpid(),
        "cores": psutil.cpu_count(logical=True) or 1,
        "memory_bytes": psutil.virtual_memory().total,
        "nthreads": w.state.nthreads,
        "memory_limit": int(getattr(w.memory_manager, "memory_limit", None) or 0),
    }


def task_open(path: str) -> float:
    t0 = time.perf_counter()
    sessions = _sessions()
    sessions.close(path)  # fresh connection: DuckDB is slower right after writing a table
    sessions.session(path)
    return time.perf_counter() - t0


def task_close(path: str) -> None:
    _sessions().close(path)


def make_cold(sessions: PartitionSessions, path: str, drop_caches: bool = False) -> dict:
    """Close path's session (its buffer pool goes too), evict the file and its WAL from
    this host's page cache, reopen a fresh session, and evict again: opening reads the
    header and catalog, and the kernel's readahead (8 MB on this VM's disk) drags table
    blocks in with them. Returns what stays resident, just before the next statement."""
    t0 = time.perf_counter()
    sessions.close(path)
    pagecache.evict_partition(path, drop_caches)
    sessions.session(path)
    out = pagecache.evict_partition(path)
    out["seconds"] = time.perf_counter() - t0
    return out


def task_make_cold(path: str, drop_caches: bool) -> dict:
    return make_cold(_sessions(), path, drop_caches)


def task_memory_share(path: str, fraction: float, instances: int) -> str:
    """Size path's DuckDB memory_limit as its share of this host's RAM, now (if open) and
    for every reopening."""
    sessions = _sessions()
    limit = sessions.limits[path] = memory_share(fraction, instances)
    s = sessions.sessions.get(path)
    if s is not None:
        s.con.execute(f"SET memory_limit = '{limit}'")
    return limit


def task_data_bytes(path: str, table: str) -> int:
    return _sessions().session(path).data_bytes(table)


def task_close_if_open(path: str) -> None:
    """Release a session on path, if this worker has the plugin and holds one (repair)."""
    plugin = get_worker().plugins.get(PLUGIN)
    if plugin is not None:
        plugin.close(path)


def task_run(path: str, stmt: Statement, dispatched: float, fault: Fault | None) -> dict:
    _inject(fault, "run")
    return _sessions().session(path).run(stmt, dispatched)


def task_reset_result(path: str, name: str) -> None:
    _sessions().session(path).reset_result(name)


def task_query(path: str, sql: str) -> list[tuple]:
    return _sessions().session(path).query(sql)


def task_digest(path: str, name: str) -> tuple[int, str]:
    return _sessions().session(path).digest(name)


def task_prepare(path: str, txid: str, stmt: Statement, dispatched: float, fault) -> dict:
    _inject(fault, "prepare")
    return _sessions().session(path).prepare(txid, stmt, dispatched)


def task_commit(path: str, txid: str, fault: Fault | None) -> dict:
    _inject(fault, "commit")
    return _sessions().session(path).commit(txid)


def task_abort(path: str, txid: str) -> None:
    s = _sessions().sessions.get(path)
    if s is not None and s.txid == txid:
        s.abort()


def task_prune_markers(path: str) -> None:
    _sessions().session(path).prune_markers()


def task_redo(path: str, txid: str, stmt: Statement) -> None:
    _sessions().session(path).redo(txid, stmt)
