"""Shared-memory engine: one DuckDB process with threads = P over the same partition files.

The partitions are ATTACHed to one instance and read through a UNION ALL view, so each
read query is one statement that DuckDB parallelises over its P threads. Inserted rows go
to one result database file. The update runs on P cursors (one per partition file, in
parallel threads) under the same commit protocol as shared-nothing, because one DuckDB
transaction can write only one attached file.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import duckdb
import psutil

from wisconsin import store
from wisconsin.engines import commit
from wisconsin.engines.base import NOOP, EngineConfig, StepResult, inject, timed_update
from wisconsin.engines.duckdb_session import PartitionSession, memory_share
from wisconsin.runfiles.runfile import HostInfo, Topology
from wisconsin.sqltext import db_path
from wisconsin.statement import BindableQuery, Statement
from wisconsin.store import Manifest, StoreError, pagecache, partition_path

WHOLE = -1  # the unit key of a statement over all partitions


class SharedMemoryEngine:
    mode = "shared-memory"

    def __init__(self, config: EngineConfig):
        self.config = config
        self.partitions = 0
        self.con: duckdb.DuckDBPyConnection | None = None
        self.parts: dict[int, PartitionSession] = {}
        self.whole: PartitionSession | None = None
        self.table_dir = ""
        self.manifest: Manifest | None = None
        self.checksum = store.STORAGE["checksum"]  # the open table's (store.checksum_of)
        self.result_file: Path | None = None
        self._update_bytes_read: int | None = None
        self.placement: dict[int, str] = {}  # one process: no partition has a worker
        self.warnings: list[str] = []

    def start(self, partitions: int, placement: Mapping[int, str] | None = None) -> float:
        self.partitions = partitions
        return 0.0  # no workers to start; connection time is counted in open_table

    def stop(self) -> None:
        self.close_table()

    def open_table(self, manifest: Manifest, table_dir: str) -> float:
        t0 = time.perf_counter()
        self.close_table()
        self.table_dir = table_dir
        self.manifest = manifest
        self.checksum = store.checksum_of(manifest)  # what its digests are compared with
        self.partitions = manifest.partitions  # one engine with P threads
        self.result_file = Path(table_dir) / "shared-memory-results.duckdb"
        for stale in (self.result_file, Path(str(self.result_file) + ".wal")):
            stale.unlink(missing_ok=True)
        self._connect(manifest)
        commit.recover_table(table_dir, self._transport(), manifest)
        for s in self.parts.values():
            s.prune_markers()
        return time.perf_counter() - t0

    def _connect(self, manifest: Manifest) -> None:
        """One DuckDB instance with every partition and the result file attached."""
        self.con = duckdb.connect(
            ":memory:",
            config={"threads": self.partitions, "memory_limit": self._memory_limit()},
        )
        self.con.execute("SET enable_progress_bar = false")  # see PartitionSession.open
        for p in manifest.parts:
            path = partition_path(self.table_dir, p)
            # ATTACH creates a missing file: never let a run make an empty partition.
            if not path.is_file():
                raise StoreError(f"{manifest.name} partition {p.index}: {path} is missing")
            self.con.execute(f"ATTACH ? AS p{p.index}", [db_path(path)])
        self.con.execute("ATTACH ? AS results", [db_path(self.result_file)])
        for name in (manifest.table, manifest.copy_table):
            union = " UNION ALL ".join(f"SELECT * FROM p{p.index}.{name}" for p in manifest.parts)
            self.con.execute(f"CREATE VIEW all_{name} AS {union}")
        for p in manifest.parts:
            cur = self.con.cursor()
            cur.execute(f"USE p{p.index}")
            cur.execute("CREATE TABLE IF NOT EXISTS wisconsin_txn (txid VARCHAR PRIMARY KEY)")
            self.parts[p.index] = PartitionSession(cur, label=f"p{p.index}")
        self.whole = PartitionSession(self.con.cursor(), label="all")

    def _memory_limit(self) -> str:
        frac = self.config.memory_fraction
        return self.config.memory_limit if frac is None else memory_share(frac, 1)

    @property
    def memory_limits(self) -> dict[int, str]:
        """DuckDB memory_limit of the one instance holding every partition."""
        return {WHOLE: self._memory_limit()}

    def _disconnect(self) -> None:
        for s in self.parts.values():
            s.close()
        self.parts = {}
        if self.whole is not None:
            self.whole.close()
            self.whole = None
        if self.con is not None:
            self.con.close()
            self.con = None

    def close_table(self) -> None:
        self._disconnect()
        if self.result_file is not None:
            for f in (self.result_file, Path(str(self.result_file) + ".wal")):
                f.unlink(missing_ok=True)
            self.result_file = None

    # ------------------------------------------------------------------ engine seam

    def statements(
        self, query: BindableQuery, manifest: Manifest, scan_variant: str, delta: int | None = None
    ):
        if query.transactional:
            stmt = query.bind(manifest.rows, table=manifest.table, delta=delta)
            return {p: stmt for p in sorted(self.parts)}
        stmt = query.bind(
            manifest.rows,
            table=f"all_{manifest.table}",
            copy=f"all_{manifest.copy_table}",
            result=f"results.{q}" if (q := query.result_table) else "",
            scan_variant=scan_variant,
        )
        return {WHOLE: stmt}

    def reset_result(self, name: str) -> None:
        self.whole.reset_result(f"results.{name}")

    def _parallel(self, fn, parts) -> dict[int, object]:
        with ThreadPoolExecutor(max_workers=max(1, len(parts))) as pool:
            futures = {p: pool.submit(fn, p) for p in parts}
            out, failed = {}, {}
            for p, f in futures.items():
                try:
                    out[p] = f.result(timeout=self.config.timeout_s)
                except Exception as exc:
                    failed[p] = exc
        if failed:
            detail = "; ".join(f"partition {p}: {e}" for p, e in sorted(failed.items()))
            raise commit.PartitionFailure(detail, tuple(sorted(failed)))
        return out

    def _fault(self, p: int, phase: str) -> None:
        inject(self.config.fault, p, phase)

    def execute(self, statements: Mapping[int, Statement]) -> StepResult:
        dispatched = time.time()
        self._fault(WHOLE, "run")
        unit = self.whole.run(statements[WHOLE], dispatched)
        # One process, nothing to dispatch: the wall time is the statement's own, from
        # execute to its last row. Per-statement SETs and reading the profile happen outside it
        # (docs/performance.md, "Harness overhead (shared-memory)"). So the empty statement of
        # engine.harness_overhead has nothing outside the engine: overhead_s is 0 and a read
        # query's engine share 1 by construction, so none is harness-dominated (methodology.md).
        return StepResult(wall_s=unit.engine_s, units={WHOLE: unit}, bytes_read=unit.bytes_read)

    def noop_statements(self) -> dict[int, Statement]:
        return {WHOLE: NOOP}

    def _files(self) -> dict[int, Path]:
        return {p.index: partition_path(self.table_dir, p) for p in self.manifest.parts}

    def make_cold(self) -> dict[int, dict]:
        # As worker.make_cold: evict, reopen, evict again (opening re-reads metadata, and
        # readahead brings table blocks with it).
        t0 = time.perf_counter()
        self._disconnect()  # the one buffer pool holding every partition's blocks
        if self.config.drop_caches:
            pagecache.drop_caches()
        files = [*self._files().values(), self.result_file]
        for path in files:
            pagecache.evict_partition(path)
        self._connect(self.manifest)
        out = {p: pagecache.evict_partition(path) for p, path in self._files().items()}
        pagecache.evict_partition(self.result_file)  # written by select/join: not table data
        seconds = time.perf_counter() - t0
        return {p: o | {"seconds": seconds} for p, o in out.items()}

    def data_bytes(self) -> dict[int, int]:
        return {p: s.data_bytes(f"p{p}.{self.manifest.table}") for p, s in self.parts.items()}

    def _transport(self) -> commit.Transport:
        def prepare_all(txid, statements):
            dispatched = time.time()
            io0 = pagecache.read_bytes()

            def one(p):
                self._fault(p, "prepare")
                return self.parts[p].prepare(txid, statements[p], dispatched)

            units = self._parallel(one, sorted(statements))
            io1 = pagecache.read_bytes()
            # The P cursors ran at once in this one process: its reads cannot be split
            # between them, so the units say None and the step carries the total.
            units = {p: replace(u, bytes_read=None) for p, u in units.items()}
            self._update_bytes_read = io1 - io0 if None not in (io0, io1) else None
            return units

        def commit_all(txid):
            def one(p):
                self._fault(p, "commit")
                return self.parts[p].commit(txid)

            return self._parallel(one, sorted(self.parts))

        def abort_all(txid):
            for s in self.parts.values():
                if s.txid == txid:
                    s.abort()

        def redo(part, txid, stmt):
            self.parts[part].redo(txid, stmt)

        def markers(part):
            return {r[0] for r in self.parts[part].query("SELECT txid FROM wisconsin_txn")}

        def digest(part, table):
            return self.parts[part].digest(table, self.checksum)

        return commit.Transport(prepare_all, commit_all, abort_all, redo, markers, digest)

    def update(self, txid: str, statements: Mapping[int, Statement]) -> StepResult:
        self._update_bytes_read = None
        step = timed_update(self.table_dir, self._transport(), txid, statements)
        step.bytes_read = self._update_bytes_read
        return step

    def query(self, sql: str) -> dict[int, list[tuple]]:
        return {p: s.query(sql) for p, s in self.parts.items()}

    def result_digests(self, name: str) -> dict[int, tuple[int, str]]:
        return {WHOLE: self.whole.digest(f"results.{name}", self.checksum)}

    def topology(self) -> Topology:
        return Topology(
            scheduler="",
            hosts=(
                HostInfo(
                    host=socket.gethostname(),
                    workers=(f"one DuckDB (threads = P of each table), pid {os.getpid()}",),
                    cores=psutil.cpu_count(logical=True) or 1,
                    memory_bytes=psutil.virtual_memory().total,
                ),
            ),
            rtt_s=None,
        )
