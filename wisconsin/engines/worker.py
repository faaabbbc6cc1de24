"""What runs inside a Dask worker: a plugin owning the worker's DuckDB sessions, and the
task functions the shared-nothing coordinator pins to it by worker name.

The plugin keeps one long-lived session per partition file, so a transaction opened by
`prepare` is still open when `commit` arrives as a later task.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import sys
import threading
import time

from distributed import WorkerPlugin, get_worker

from wisconsin.engines import channel
from wisconsin.engines.base import NOOP, Fault
from wisconsin.engines.duckdb_session import PartitionSession, memory_share, resolve_memory_limit
from wisconsin.statement import Statement
from wisconsin.store import pagecache

# Each engine registers its plugin under its own name, PLUGIN-<token>: runs sharing one
# cluster's workers keep their own sessions and channels (one name for all once let the
# second run's registration replace the first's plugin, closing its sessions).
PLUGIN = "wisconsin-partitions"
# One statement at a time on a worker's sessions, whether it came as a Dask task or over
# the direct channel (the coordinator is sequential; this makes it safe regardless).
_LOCK = threading.RLock()
_channel_thread = threading.local()  # .plugin: the plugin a channel thread serves


def dask_setup(worker) -> None:
    """Worker preload (local clusters): ^C in the user's terminal reaches every process of
    the group; the coordinator handles it and stops the workers, so they ignore it rather
    than each print a traceback. A worker that closed cleanly skips Python's finalization
    at exit (_exit_closed)."""
    import atexit

    from wisconsin import interrupts

    with contextlib.suppress(ValueError):  # not the main thread: leave the defaults
        interrupts.child_ignores_sigint()  # spawned under interrupts.deferred()
    from wisconsin.cluster.logs import redirect_worker_output

    redirect_worker_output()  # Dask's log lines to the run's log file, not the terminal
    atexit.register(_exit_closed)  # after the imports' handlers: it runs before them


_closed = threading.Event()  # this worker closed cleanly (dask_teardown)


def dask_teardown(worker) -> None:
    """Worker preload: called as the worker closes, after its plugins' teardown (every
    DuckDB session closed)."""
    _closed.set()


def _exit_closed() -> None:
    """At the exit of a worker that closed cleanly: end the process now, without Python's
    finalization of its heap (~0.35 s of CPU a worker: 16 workers took 4.1-4.6 s to stop
    on the shared 2 cores, 0.26-0.4 s so; each block restarts them). Its sessions are
    closed and its output flushed; a worker that did not close cleanly exits as usual."""
    if not _closed.is_set():
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


class PartitionSessions(WorkerPlugin):
    """memory_limit is DuckDB's per worker: a size ("2GB") for each session, or a share of
    the worker's own memory ("60%") split evenly among the sessions it holds open."""

    name = PLUGIN

    def __init__(self, threads: int = 1, memory_limit: str = "1GB", authkey: bytes | None = None):
        self.threads = threads
        self.memory_limit = memory_limit
        self.authkey = authkey  # given: serve the direct channel (wisconsin.engines.channel)
        self.sessions: dict[str, PartitionSession] = {}
        self.budget: int | None = None  # bytes shared by this worker's sessions
        self.limits: dict[str, str] = {}  # per-file memory_limit (EngineConfig.memory_fraction)
        self.server: channel.Server | None = None

    def setup(self, worker) -> None:
        from distributed.comm import get_address_host

        self.sessions = {}
        mm = getattr(worker, "memory_manager", None)
        self.budget = resolve_memory_limit(self.memory_limit, getattr(mm, "memory_limit", None))
        if self.authkey is not None:
            # The worker's own contact address (a netns cluster's namespace IP), not 0.0.0.0.
            self.server = channel.Server(
                get_address_host(worker.address), self.authkey, DIRECT, self._serving
            )

    def _serving(self) -> None:
        _channel_thread.plugin = self

    def teardown(self, worker) -> None:
        # The worker is closing on purpose: a heartbeat racing the scheduler's shutdown is
        # not an error worth a traceback on the user's terminal.
        logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)
        if self.server is not None:
            self.server.close()
            self.server = None
        # Not under a statement still running on the channel; a hung one is not waited for.
        locked = _LOCK.acquire(timeout=10)
        try:
            self.close_all()
        finally:
            if locked:
                _LOCK.release()

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
                    other.con.execute("SET memory_limit = ?", [share])
            # A fresh instance's first statement costs ~0.5-1 ms more (DuckDB's first-query
            # set-up): paid here, as part of opening, not by the first statement timed.
            s.con.execute("SELECT 1").fetchall()
            self.sessions[path] = s
        return s

    def release_path(self, path: str) -> None:
        """cluster.release_sessions' hook: repair is about to replace path."""
        self.close(path)

    def close(self, path: str) -> None:
        s = self.sessions.pop(path, None)
        if s is not None:
            s.close()

    def close_all(self) -> None:
        for path in list(self.sessions):
            self.close(path)


def _sessions() -> PartitionSessions:
    plugin = getattr(_channel_thread, "plugin", None)  # get_worker() knows Dask's threads only
    return plugin if plugin is not None else get_worker().plugins[PLUGIN]


def in_plugin(name: str, fn, *args):
    """A Dask task: fn(*args) against the sessions of the plugin registered as `name` (the
    engine's own), as a channel thread serves its plugin."""
    _channel_thread.plugin = get_worker().plugins[name]
    try:
        return fn(*args)
    finally:
        _channel_thread.plugin = None


def _ours(dask_worker) -> list[PartitionSessions]:
    return [p for p in dask_worker.plugins.values() if isinstance(p, PartitionSessions)]


def _serial(fn):
    """A task on this worker's sessions: one at a time (Dask task or channel call)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with _LOCK:
            return fn(*args, **kwargs)

    return run


def direct_calls(dask_worker=None) -> list[str]:
    """Run with client.run: the task functions running on this worker's direct channel
    (what Client.processing shows of Dask tasks)."""
    servers = [p.server for p in _ours(dask_worker) if p.server is not None]
    return sorted(call for s in servers for call in s.running.values())


def channel_address(dask_worker=None, name: str = PLUGIN) -> tuple[str, int] | None:
    """Run with client.run: where the direct channel of plugin `name` listens (None: no
    channel)."""
    plugin = dask_worker.plugins.get(name)
    server = getattr(plugin, "server", None)
    return None if server is None else server.address


def _inject(fault: Fault | None, phase: str) -> None:
    if fault is not None:
        fault.fire(phase)  # already aimed at this partition by the coordinator


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


@_serial
def task_open(path: str, share: tuple[float, int] | None = None, prune: bool = False) -> str | None:
    """Open path's session afresh (DuckDB is slower right after writing a table), its
    memory_limit first sized as share = (fraction, instances): this host's RAM split
    among the open table's instances on it (EngineConfig.memory_fraction). prune: drop
    its commit markers too (no decided update left to recover). Returns the memory_limit
    it was sized to (None: not sized here)."""
    sessions = _sessions()
    if share is not None:
        sessions.limits[path] = memory_share(*share)
    sessions.close(path)
    s = sessions.session(path)
    if prune:
        s.prune_markers()
    return sessions.limits.get(path)


@_serial
def task_close(path: str) -> None:
    _sessions().close(path)


def make_cold(sessions: PartitionSessions, path: str, drop_caches: bool = False) -> dict:
    """Close path's session (its buffer pool goes too), evict the file and its WAL from
    this host's page cache, reopen a fresh session, and evict again: opening reads the
    header and catalog, and the kernel's readahead (8 MB on this VM's disk) drags table
    blocks in with them. Returns what stays resident, just before the next statement."""
    t0 = time.perf_counter()
    old = sessions.sessions.get(path)
    profiling = old.profiling if old is not None else None
    sessions.close(path)
    pagecache.evict_partition(path, drop_caches)
    fresh = sessions.session(path)
    if profiling is not None:
        # as the closed session was: else the next statement (the empty one that measures
        # dispatch, as a rule) pays for switching it, which no timed statement after it pays
        fresh._profile(profiling)
    out = pagecache.evict_partition(path)
    # Part of opening: a fresh instance's first statements (and this process's first ones
    # after the eviction's work) are ~1 ms slower; the empty statement after this measured
    # that, not dispatch. It reads no table data: residency is measured after it.
    for _ in range(3):
        fresh.run(dataclasses.replace(NOOP, profile=fresh.profiling))
    out["resident_bytes"] = _resident([path, f"{path}.wal"])
    out["seconds"] = time.perf_counter() - t0
    return out


def _resident(paths) -> int | None:
    sizes = [pagecache.resident_bytes(p) for p in paths if os.path.isfile(p)]
    return None if any(b is None for b in sizes) else sum(sizes)


@_serial
def task_make_cold(path: str, drop_caches: bool) -> dict:
    return make_cold(_sessions(), path, drop_caches)


@_serial
def task_data_bytes(path: str, table: str) -> int:
    return _sessions().session(path).data_bytes(table)


@_serial
@_serial
def task_run(path: str, stmt: Statement, dispatched: float, fault: Fault | None) -> dict:
    _inject(fault, "run")
    return _sessions().session(path).run(stmt, dispatched)


@_serial
def task_reset_result(path: str, name: str) -> None:
    _sessions().session(path).reset_result(name)


@_serial
def task_query(path: str, sql: str) -> list[tuple]:
    return _sessions().session(path).query(sql)


@_serial
def task_digest(path: str, name: str, checksum: str) -> tuple[int, str]:
    return _sessions().session(path).digest(name, checksum)


@_serial
def task_prepare(path: str, txid: str, stmt: Statement, dispatched: float, fault) -> dict:
    _inject(fault, "prepare")
    return _sessions().session(path).prepare(txid, stmt, dispatched)


@_serial
def task_commit(path: str, txid: str, fault: Fault | None) -> dict:
    _inject(fault, "commit")
    return _sessions().session(path).commit(txid)


@_serial
def task_abort(path: str, txid: str) -> None:
    s = _sessions().sessions.get(path)
    if s is not None and s.txid == txid:
        s.abort()


@_serial
def task_prune_markers(path: str) -> None:
    _sessions().session(path).prune_markers()


@_serial
def task_redo(path: str, txid: str, stmt: Statement) -> None:
    _sessions().session(path).redo(txid, stmt)


def task_noop() -> None:
    """Nothing: the bare round trip of a call (benchmarks/transport.py)."""


# What the direct channel may call: the timed statements' task functions, the untimed
# ones around them in a step (reset, evict, verify), so no Dask task runs just before a
# timed statement, and opening and closing a table (a Dask task to each of P workers cost
# ~7 ms of CPU each, several per table and round); recovery stays Dask tasks.
DIRECT = {
    f.__name__: f
    for f in (
        task_run,
        task_prepare,
        task_commit,
        task_abort,
        task_noop,
        task_make_cold,
        task_reset_result,
        task_query,
        task_digest,
        task_redo,
        task_data_bytes,
        task_open,
        task_close,
        task_prune_markers,
    )
}
