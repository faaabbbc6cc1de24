"""Shared-nothing engine: one Dask worker process per partition, each with its own DuckDB
connection (threads=1) to its own partition file. The coordinator only sends statements
and combines small answers; inserted rows stay in the worker's local result partition.

Locally it starts a cluster of P workers named part0..part{P-1}; with --cluster it uses a
running scheduler whose workers own the partitions named in the table's manifest.

Timed statements, the untimed work around them in a step (reset, evict, verify) and opening
and closing a table travel over a direct socket per partition (wisconsin.engines.channel,
~1-2 ms a round trip at P = 2 on the shared two-core machine; kept open from one table to
the next on the same workers) unless the transport is "dask" or the cluster is TLS: then
as pinned Dask tasks (~15-25 ms), like starting and recovery always.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import secrets
import socket
import time
from collections import Counter
from collections.abc import Mapping

import dask
from distributed import Client, Nanny, Scheduler, SpecCluster

from wisconsin import WisconsinError, interrupts, store
from wisconsin.cluster import (
    WorkerLost,
    check_placement,
    connect,
    scheduler_identity,
    wait_pinned,
    worker_addresses,
)
from wisconsin.cluster.logs import DaskLogs
from wisconsin.engines import channel, commit, worker
from wisconsin.engines.base import NOOP, EngineConfig, StepResult, timed_update, units_bytes_read
from wisconsin.runfiles import facts
from wisconsin.runfiles.runfile import HostInfo, Topology, WorkerRestart
from wisconsin.statement import BindableQuery, Statement
from wisconsin.store import Manifest, partition_path
from wisconsin.store import check as store_check

# A quiet idle cluster: with defaults 16 idle workers ate 46% of both cores (engine-facts).
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "2s",
    "distributed.scheduler.work-stealing": False,
    "distributed.scheduler.allowed-failures": 0,  # a dead worker fails its task at once
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.worker.daemon": False,
    "distributed.worker.preload": ["wisconsin.engines.worker"],  # its dask_setup: ignore ^C
}


class WorkerUnavailable(WisconsinError):
    pass


def worker_name(part: int) -> str:
    return f"part{part}"


class SharedNothingEngine:
    mode = "shared-nothing"

    def __init__(self, config: EngineConfig):
        self.config = config
        self.cluster: SpecCluster | None = None
        self.client: Client | None = None
        self.placement: dict[int, str] = {}
        self.paths: dict[int, str] = {}
        self.table_dir = ""
        self.checksum = store.STORAGE["checksum"]  # the open table's (store.checksum_of)
        self._known: dict[str, str] | None = None
        # Each worker's address when this engine last saw it attached (set at start, checked
        # at every table opening and at the end): a change is a worker that died and was
        # restarted (by its nanny) between two tables, which no statement would notice.
        self._attached: dict[str, str] = {}
        self.restarts: list[WorkerRestart] = []  # recorded in the run file's topology
        self.warnings: list[str] = []  # said on stderr and kept in the run file's notes
        self.memory_limits: dict[int, str] = {}  # DuckDB memory_limit per open partition
        # Dask's log lines go here, not to the terminal: a private directory in the run's
        # output directory (EngineConfig.log_dir)
        self.logs = DaskLogs(directory=config.log_dir)
        # This engine's plugin on the workers: its own name, so runs sharing a cluster's
        # workers never replace each other's sessions (worker.PLUGIN says why)
        self.plugin_name = f"{worker.PLUGIN}-{secrets.token_hex(8)}"
        self.transport = self._choose_transport(config)
        # Sent to the workers through Dask; only this engine's channels pass the handshake.
        self._authkey = secrets.token_bytes(32) if self.transport == "direct" else None
        self._links: dict[int, channel.Link] = {}
        self._channel_at: dict[int, tuple[str, int]] = {}  # partition -> its worker's listener
        # Per worker process (its address), asked once: its channel's listener, its host.
        self._listeners: dict[str, tuple[str, int]] = {}
        self._hosts: dict[str, str] = {}

    @staticmethod
    def _choose_transport(config: EngineConfig) -> str:
        if config.transport not in ("direct", "dask"):
            raise WisconsinError(f"unknown transport {config.transport!r} (direct or dask)")
        tls = config.security is not None or (config.cluster or "").startswith("tls://")
        return "dask" if tls else config.transport  # the channel is not encrypted

    @property
    def transport_note(self) -> str:
        """What carried the timed statements, in the words of a run file's report."""
        return facts.transport_text(self.config.transport, self.transport)

    # ------------------------------------------------------------------ lifecycle

    def start(self, partitions: int, placement: Mapping[int, str] | None = None) -> float:
        t0 = time.perf_counter()
        self._disconnect()  # the plugin registered below serves new listeners
        self.placement = dict(placement or {p: worker_name(p) for p in range(partitions)})
        if self.config.cluster:
            self.logs.start()
            if self.client is None:
                self.client = connect(
                    self.config.cluster, self.config.security, min(self.config.timeout_s, 60)
                )
        else:
            self.stop()  # a previous local cluster, and its logging
            self.logs.start()  # after stop(): it would end the capture it starts
            workers = {
                worker_name(p): {
                    "cls": Nanny,
                    "options": {
                        "nthreads": 1,
                        "name": worker_name(p),
                        "memory_limit": 0,  # DuckDB's own memory_limit bounds the work
                        "host": "127.0.0.1",
                        "dashboard": False,
                        "silence_logs": logging.ERROR,
                        "local_directory": str(self.logs.scratch),
                    },
                }
                for p in range(partitions)
            }
            scheduler = {
                "cls": Scheduler,
                "options": {
                    "dashboard": False,
                    # its HTTP endpoints start anyway: a free port, not a clash on 8787
                    "dashboard_address": "127.0.0.1:0",
                    "host": "127.0.0.1",
                    "port": 0,
                },
            }
            # Scoped: the in-process scheduler and nannies read it at start-up (nannies pass
            # it on to their worker processes); nothing leaks into the caller's process.
            # A ^C meanwhile is deferred until the cluster object exists, so stop() can close
            # it. Worker processes start deaf to it; their preload ignores it.
            scratch = {"temporary-directory": str(self.logs.scratch)}  # not $TMPDIR
            with (
                dask.config.set({**QUIET, **scratch}),
                interrupts.deferred(),
                self.logs.children_output(),
            ):
                self.cluster = SpecCluster(
                    scheduler=scheduler, workers=workers, silence_logs=logging.ERROR
                )
                self.client = Client(self.cluster, set_as_default=False)
        if placement is not None or not self.config.cluster:
            # On a cluster the owners are known only from each table's manifest: open_table
            # waits for exactly the workers it needs.
            self._wait_for_workers()
        self._attached = {}  # fresh processes (or a cluster's): the baseline is taken anew
        self._note_restarts()
        self.client.register_plugin(
            worker.PartitionSessions(
                self.config.threads_per_worker, self.config.memory_limit, self._authkey
            ),
            name=self.plugin_name,
        )
        return time.perf_counter() - t0

    def _wait_for_workers(self) -> None:
        want = set(self.placement.values())
        # Local workers may still be starting (16 take ~7 s); a cluster's should be up: a
        # missing one is reported after a short grace instead of a silent long wait.
        grace = 30.0 if self.config.cluster else 120.0
        deadline = time.monotonic() + min(self.config.timeout_s, grace)
        while True:
            have = {str(w["name"]) for w in scheduler_identity(self.client)["workers"].values()}
            missing = want - have
            if not missing:
                return
            if time.monotonic() > deadline:
                parts = sorted(p for p, w in self.placement.items() if w in missing)
                raise WorkerUnavailable(
                    f"workers {', '.join(sorted(missing))} are not connected to the scheduler; "
                    f"partitions {', '.join(map(str, parts))} are unreachable; " + self.logs.where()
                )
            time.sleep(0.1)

    def stop(self) -> None:
        self._disconnect()
        # A deliberate shutdown: the in-process nannies log cancelled RPCs as errors.
        quiet = logging.getLogger("distributed")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        try:
            if self.client is not None:
                if self.config.cluster:
                    # A shared cluster's workers outlive this run: close its sessions there
                    with contextlib.suppress(Exception):
                        self.client.unregister_worker_plugin(self.plugin_name)
                self.client.close()
                self.client = None
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None
        finally:
            quiet.setLevel(level)
            self.logs.stop()

    def open_table(self, manifest: Manifest, table_dir: str) -> float:
        t0 = time.perf_counter()
        self.table_dir = table_dir
        self.checksum = store.checksum_of(manifest)  # what its digests are compared with
        self.paths = {p.index: str(partition_path(table_dir, p)) for p in manifest.parts}
        # Partition i runs on the worker the manifest placed it on (cluster generate), else
        # on part<i>: all workers stay attached, only the first P are used (as in the spec).
        self.placement = {p.index: p.worker or worker_name(p.index) for p in manifest.parts}
        self._wait_for_workers()
        if self.config.cluster:  # a worker name now on another host would open another file
            self.warnings += [
                w for w in check_placement(self.client, manifest) if w not in self.warnings
            ]
        # The processes this table's sessions live in: a restart after this point loses them.
        self._known = self._note_restarts()
        self._check_remote(manifest, table_dir)
        self._connect()
        # Nothing decided and unfinished: the markers can go as the sessions open (one call).
        settled = commit.DecisionLog(table_dir).is_empty()
        share = self._memory_shares()
        limits = self._call(worker.task_open, lambda p: (self.paths[p], share.get(p), settled))
        self.memory_limits = {p: limits.get(p) or self.config.memory_limit for p in self.paths}
        if not settled:
            commit.recover_table(table_dir, self._transport(), manifest)
            self._call(worker.task_prune_markers, lambda p: (self.paths[p],))
        return time.perf_counter() - t0

    def _note_restarts(self) -> dict[str, str]:
        """The workers' addresses now; a worker seen before under another address (or gone)
        is recorded as restarted, once."""
        now = worker_addresses(self.client)
        ours = set(self.placement.values())  # a shared cluster's other workers are not ours
        for name, was in sorted(self._attached.items()):
            is_ = now.get(name)
            if name not in ours:
                continue
            if is_ != was:
                self.restarts.append(WorkerRestart(worker=name, was=was, now=is_ or ""))
        self._attached.update({n: a for n, a in now.items() if n in ours})
        return now

    def _memory_shares(self) -> dict[int, tuple[float, int]]:
        """EngineConfig.memory_fraction: each host's share of RAM split evenly among this
        table's partitions on it (idle workers of a larger cluster get none), as
        {partition: (fraction, instances on its host)}; {} without a fraction."""
        frac = self.config.memory_fraction
        if frac is None:
            return {}
        addr = {p: self._known[self.placement[p]] for p in self.paths}
        unknown = sorted(set(addr.values()) - set(self._hosts))
        if unknown:  # a worker process's host does not change: asked once
            self._hosts.update(self.client.run(socket.gethostname, workers=unknown))
        host = {p: self._hosts[a] for p, a in addr.items()}
        count = Counter(host.values())
        return {p: (frac, count[host[p]]) for p in self.paths}

    def _check_remote(self, manifest: Manifest, table_dir: str) -> None:
        """The check before timing (store_check.check_partition) of partitions on cluster
        workers' disks, run by their owners; local files were checked by the runner."""
        remote = [p.index for p in manifest.parts if p.worker]
        if not remote:
            return
        pending = not commit.DecisionLog(table_dir).is_empty()  # recovery settles drift
        self._map(worker.task_close, lambda p: (self.paths[p],), parts=remote)
        found = self._map(
            store_check.check_partition,
            lambda p: (
                self.paths[p],
                dataclasses.asdict(manifest.parts[p]),
                manifest.rows,
                manifest.seed,
                (manifest.table, manifest.copy_table),
                not pending,
                store_check.CHECK_BLOCKS,
            ),
            parts=remote,
        )
        bad = {p: problems for p, problems in found.items() if problems}
        if bad:
            first = min(bad)
            raise store.TableDamaged(
                f"{manifest.name}: {bad[first][0]} (on {self.placement[first]}); nothing of "
                "this table was timed. Regenerate it on the cluster"
            )

    def close_table(self) -> None:
        # The channels stay open for the next table on the same workers.
        if self.client is not None and self.paths:
            self._call(worker.task_close, lambda p: (self.paths[p],))
        self.paths = {}
        self._known = None

    # ------------------------------------------------------------------ dispatch

    def _map(self, fn, args_of, parts=None) -> dict[int, object]:
        """Run fn on each partition's worker, pinned by name; bounded wait; named errors."""
        parts = sorted(self.paths) if parts is None else parts
        futures = {
            p: self.client.submit(
                worker.in_plugin,
                self.plugin_name,
                fn,
                *args_of(p),
                workers=[self.placement[p]],
                allow_other_workers=False,
                pure=False,
                key=f"{fn.__name__}-{p}-{time.time_ns()}",
            )
            for p in parts
        }
        # Bounded by timeout_s; a dead or restarted owner fails its partition within ~1 s
        # (a remote scheduler has its own allowed-failures and would otherwise retry).
        out, failed = wait_pinned(
            self.client, futures, self.placement, self.config.timeout_s, known=self._known
        )
        self._raise_failed(failed)
        return out

    def _raise_failed(self, failed: dict) -> None:
        """One PartitionFailure, on one line, naming every failed partition and the logs."""
        if not failed:
            return
        detail = "; ".join(
            f"partition {p} on {self.placement[p]}: {type(e).__name__}: {e}"
            for p, e in sorted(failed.items())
        )
        detail = " ".join(detail.split())  # one line, however the worker worded it
        raise commit.PartitionFailure(f"{detail}; {self.logs.where()}", tuple(sorted(failed)))

    # ------------------------------------------------------------------ direct channel

    def _connect(self) -> None:
        """A channel per open partition, to the listener of the worker that owns it; one
        still open to the same listener (the same worker process) is kept."""
        if self.transport != "direct":
            return
        owners = {p: self._known[self.placement[p]] for p in self.paths}
        unknown = sorted(set(owners.values()) - set(self._listeners))
        if unknown:  # a plugin's listener stays where it is for its worker's life
            try:
                where = self.client.run(
                    worker.channel_address, name=self.plugin_name, workers=unknown
                )
            except OSError as exc:  # a worker died since the table was opened
                self._raise_failed({p: WorkerLost(f"cannot reach it ({exc})") for p in owners})
            self._listeners.update({a: tuple(w) for a, w in where.items() if w})
        self._channel_at = {
            p: self._listeners[a] for p, a in owners.items() if a in self._listeners
        }
        missing = sorted(set(self.paths) - set(self._channel_at))
        if missing:
            raise commit.PartitionFailure(
                f"partitions {', '.join(map(str, missing))}: their workers serve no direct "
                f"channel (plugin not set up?); {self.logs.where()}",
                tuple(missing),
            )
        failed: dict[int, BaseException] = {}
        for p in sorted(self.paths):
            link = self._links.get(p)
            if link is not None and not link.broken and link.address == self._channel_at[p]:
                continue
            if link is not None:
                link.close()
            try:
                self._links[p] = self._link(p)
            except (OSError, EOFError) as exc:  # its worker died (reset, refused, closed)
                failed[p] = WorkerLost(f"cannot reach its channel ({exc})")
        self._raise_failed(failed)

    def _link(self, p: int) -> channel.Link:
        return channel.Link(self._channel_at[p], self._authkey, min(self.config.timeout_s, 30))

    def _disconnect(self) -> None:
        """Close every channel and forget what the workers were (their processes end)."""
        for link in self._links.values():
            link.close()
        self._links = {}
        self._listeners = {}
        self._hosts = {}

    def _lost(self, parts: list[int]) -> dict[int, BaseException]:
        """Partitions whose owner left the scheduler or was restarted since the table was
        opened (as cluster.wait_pinned decides for Dask tasks)."""
        now = worker_addresses(self.client)
        out: dict[int, BaseException] = {}
        for p in parts:
            name = self.placement[p]
            was, is_ = (self._known or {}).get(name), now.get(name)
            if was is not None and is_ == was:
                continue
            if is_ is None:
                out[p] = WorkerLost(f"worker {name} ({was}) left the scheduler")
            else:
                out[p] = WorkerLost(f"worker {name} was restarted ({was} -> {is_}); work lost")
        return out

    def _call(self, fn, args_of, parts=None) -> dict[int, object]:
        """The timed path: fn on each partition's worker over its direct channel (sent to
        all, then collected), or as pinned Dask tasks; the same errors either way."""
        if self.transport != "direct":
            return self._map(fn, args_of, parts)
        parts = sorted(self.paths) if parts is None else parts
        failed: dict[int, BaseException] = {}
        for p in parts:  # a channel closed by a failed call: reconnect (the worker decides)
            link = self._links.get(p)
            if link is None or link.broken:
                try:
                    self._links[p] = self._link(p)
                except (OSError, EOFError, TimeoutError, KeyError) as exc:
                    why = f"worker {self.placement[p]}: cannot reach its channel ({exc})"
                    failed[p] = WorkerLost(why)
        requests = {p: (fn.__name__, args_of(p)) for p in parts if p not in failed}
        out, lost = channel.call_all(self._links, requests, self.config.timeout_s, self._lost)
        for p, exc in lost.items():
            # A dropped channel is a lost worker: its sessions (and any open transaction)
            # are gone with the process, as WorkerLost says on the Dask path.
            if isinstance(exc, channel.ChannelLost):
                exc = WorkerLost(f"worker {self.placement[p]}: {exc}")
            failed[p] = exc
        self._raise_failed(failed)
        return out

    def _fault_for(self, p: int, phase: str):
        return self.config.fault.to(p, phase) if self.config.fault else None

    # ------------------------------------------------------------------ engine seam

    def statements(
        self, query: BindableQuery, manifest: Manifest, scan_variant: str, delta: int | None = None
    ):
        stmt = query.bind(
            manifest.rows,
            table=manifest.table,
            copy=manifest.copy_table,
            result=query.result_table,
            scan_variant=scan_variant,
            delta=delta,
        )
        return {p: stmt for p in sorted(self.paths)}

    def reset_result(self, name: str) -> None:
        self._call(worker.task_reset_result, lambda p: (self.paths[p], name))

    def execute(self, statements: Mapping[int, Statement]) -> StepResult:
        dispatched = time.time()
        t0 = time.perf_counter()
        units = self._call(
            worker.task_run,
            lambda p: (self.paths[p], statements[p], dispatched, self._fault_for(p, "run")),
            parts=sorted(statements),
        )
        return StepResult(
            wall_s=time.perf_counter() - t0, units=units, bytes_read=units_bytes_read(units)
        )

    def noop_statements(self) -> dict[int, Statement]:
        return {p: NOOP for p in sorted(self.paths)}

    def make_cold(self) -> dict[int, dict]:
        # In each owning worker: it holds the session, and the file's page cache is on
        # its host (a cluster's partitions are not on the coordinator's disk).
        # Over the channel too: a Dask task just before the timed statement leaves its
        # bookkeeping (worker and in-process scheduler) running into the next few ms.
        return self._call(worker.task_make_cold, lambda p: (self.paths[p], self.config.drop_caches))

    def data_bytes(self) -> dict[int, int]:
        return self._call(worker.task_data_bytes, lambda p: (self.paths[p], store.TABLE))

    def _transport(self) -> commit.Transport:
        state = {"dispatched": 0.0}

        def prepare_all(txid, statements):
            state["dispatched"] = time.time()
            return self._call(
                worker.task_prepare,
                lambda p: (
                    self.paths[p],
                    txid,
                    statements[p],
                    state["dispatched"],
                    self._fault_for(p, "prepare"),
                ),
                parts=sorted(statements),
            )

        def commit_all(txid):
            return self._call(
                worker.task_commit, lambda p: (self.paths[p], txid, self._fault_for(p, "commit"))
            )

        def abort_all(txid):
            # Best effort: a dead worker's open transaction died with it.
            with contextlib.suppress(commit.PartitionFailure):
                self._call(worker.task_abort, lambda p: (self.paths[p], txid))

        def redo(part, txid, stmt):
            self._map(worker.task_redo, lambda p: (self.paths[p], txid, stmt), parts=[part])

        def markers(part):
            sql = "SELECT txid FROM wisconsin_txn"
            rows = self._map(worker.task_query, lambda p: (self.paths[p], sql), parts=[part])
            return {r[0] for r in rows[part]}

        def digest(part, table):
            def args(p):
                return self.paths[p], table, self.checksum

            return self._map(worker.task_digest, args, parts=[part])[part]

        return commit.Transport(prepare_all, commit_all, abort_all, redo, markers, digest)

    def update(self, txid: str, statements: Mapping[int, Statement]) -> StepResult:
        return timed_update(self.table_dir, self._transport(), txid, statements)

    def query(self, sql: str) -> dict[int, list[tuple]]:
        return self._call(worker.task_query, lambda p: (self.paths[p], sql))

    def result_digests(self, name: str) -> dict[int, tuple[int, str]]:
        return self._call(worker.task_digest, lambda p: (self.paths[p], name, self.checksum))

    def topology(self) -> Topology:
        if self.client is not None:
            self._note_restarts()  # one that died after the last table was opened
        info = self.client.run(worker.worker_info) if self.client else {}
        hosts: dict[str, list[dict]] = {}
        for w in info.values():
            hosts.setdefault(w["host"], []).append(w)
        scheduler = self.config.cluster or "local"
        rtts = []
        for _ in range(5):
            t0 = time.perf_counter()
            self.client.run(os.getpid, workers=[next(iter(info))]) if info else None
            rtts.append(time.perf_counter() - t0)
        return Topology(
            scheduler=scheduler,
            hosts=tuple(
                HostInfo(
                    host=h,
                    workers=tuple(w["name"] for w in ws),
                    cores=ws[0]["cores"],
                    memory_bytes=ws[0]["memory_bytes"],
                    worker_nthreads=tuple(w["nthreads"] for w in ws),
                    worker_memory_bytes=tuple(w["memory_limit"] for w in ws),
                )
                for h, ws in sorted(
                    (h, sorted(ws, key=lambda w: w["name"])) for h, ws in hosts.items()
                )
            ),
            rtt_s=sorted(rtts)[len(rtts) // 2] if info else None,
            worker_restarts=tuple(self.restarts),
        )
