"""One partition's DuckDB session: what a shared-nothing worker (or one shared-memory
cursor) does with its partition. Every statement is timed here, next to the engine, and
its profile gives the rows the table scan(s) really read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from pathlib import Path

import duckdb

from wisconsin import WisconsinError, store
from wisconsin.engines.base import CommitReport, PartitionReport
from wisconsin.sqltext import db_path, ident
from wisconsin.statement import Statement
from wisconsin.store import pagecache

TXN_TABLE = "wisconsin_txn"  # commit markers: a row per committed cross-partition txid


def _result_ddl(name: str) -> str:
    cols = ", ".join(
        f"{c} {'INTEGER' if i < 13 else 'VARCHAR'}" for i, c in enumerate(store.generator.COLUMNS)
    )
    return f"CREATE TABLE {name} ({cols})"


def reset_peak_rss() -> None:
    """Make the next peak-RSS reading cover only what follows (Linux; no-op elsewhere)."""
    pagecache.proc_write("clear_refs", b"5")


def peak_rss_bytes() -> int | None:
    kib = pagecache.proc_field("status", b"VmHWM:")
    return None if kib is None else kib * 1024


def _scan_stats(profile: dict) -> tuple[int, int, list[list[str]]]:
    """(rows scanned, table scans, projected columns per scan) from a detailed profile."""
    rows, scans, projections = 0, 0, []

    def walk(node):
        nonlocal rows, scans
        if node.get("type") == "TABLE_SCAN":
            scans += 1
            rows += int(node.get("rows_scanned") or 0)
            projections.append(list(node.get("extra_info", {}).get("Projections", [])))
        for child in node.get("children", []):
            walk(child)

    for root in profile.get("operator", []):
        walk(root)
    return rows, scans, projections


class PartitionSession:
    """A DuckDB connection (or cursor) bound to one partition's tables."""

    def __init__(self, con: duckdb.DuckDBPyConnection, label: str = ""):
        self.con = con
        self.label = label
        self.profiling = False
        self._profile(True)
        self.txid: str | None = None

    def _profile(self, on: bool) -> None:
        if on == self.profiling:
            return
        if on:
            self.con.execute("PRAGMA enable_profiling='no_output'")
            self.con.execute("SET profiling_mode='detailed'")
        else:
            self.con.execute("PRAGMA disable_profiling")
        self.profiling = on

    @classmethod
    def open(cls, path: str, threads: int = 1, memory_limit: str = "1GB") -> PartitionSession:
        if not Path(path).is_file():
            raise FileNotFoundError(f"partition file {path} is missing")
        con = duckdb.connect(
            db_path(path), config={"threads": threads, "memory_limit": memory_limit}
        )
        # A statement over 2 s would draw a progress bar (on the user's terminal, from a
        # worker too) and pay for rendering it inside the timed statement.
        con.execute("SET enable_progress_bar = false")
        con.execute(f"CREATE TABLE IF NOT EXISTS {TXN_TABLE} (txid VARCHAR PRIMARY KEY)")
        return cls(con, label=path)

    def close(self) -> None:
        if self.txid is not None:
            self.abort()
        self.con.close()

    # ------------------------------------------------------------------ timed statements

    def run(self, stmt: Statement, dispatched: float | None = None) -> PartitionReport:
        """Execute stmt; return its timings, answer rows and scan statistics."""
        started = time.time()
        self._profile(stmt.profile)
        for name, value in stmt.settings:
            self.con.execute(f"SET {ident(name)} = ?", [value])
        reset_peak_rss()
        io0 = pagecache.read_bytes()
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        rows = self.con.execute(stmt.sql).fetchall()
        engine_s = time.perf_counter() - t0
        cpu_s = time.process_time() - cpu0
        io1 = pagecache.read_bytes()
        scanned, scans, projections = None, 0, []
        if stmt.profile:  # before RESET, which is profiled too and would replace it
            profile = json.loads(self.con.get_profiling_information())
            scanned, scans, projections = _scan_stats(profile)
        for name, _ in stmt.settings:
            self.con.execute(f"RESET {ident(name)}")
        return PartitionReport(
            engine_s=engine_s,
            cpu_s=cpu_s,
            rows=[tuple(r) for r in rows],
            rows_scanned=scanned,
            scans=scans,
            projections=projections,
            bytes_read=io1 - io0 if io0 is not None and io1 is not None else None,
            peak_rss_bytes=peak_rss_bytes(),
            start_delay_s=(started - dispatched) if dispatched else 0.0,
            pid=os.getpid(),
        )

    # ------------------------------------------------------------------ untimed helpers

    def reset_result(self, name: str) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {name}")
        self.con.execute(_result_ddl(name))
        self.con.execute("CHECKPOINT")

    def data_bytes(self, table: str) -> int:
        """On-disk bytes of table's column data: the distinct storage blocks its segments
        occupy (pragma_storage_info, string overflow blocks included) x the block size.
        A full-row scan reads whole blocks, so this is what a cold one must fetch; the
        primary-key index and other tables in the file are not counted. Reads only
        metadata: call it before evicting, not between eviction and a cold statement."""
        db = table.rpartition(".")[0]
        (block_size,) = self.con.execute(
            "SELECT block_size FROM pragma_database_size() "
            "WHERE database_name = coalesce(?, current_database())",
            [db or None],
        ).fetchone()
        (blocks,) = self.con.execute(
            "SELECT count(DISTINCT b) FROM (SELECT block_id AS b FROM pragma_storage_info($1) "
            "WHERE block_id >= 0 UNION ALL SELECT unnest(additional_block_ids) "
            "FROM pragma_storage_info($1))",
            [table],
        ).fetchone()
        return int(blocks) * int(block_size)

    def query(self, sql: str) -> list[tuple]:
        return [tuple(r) for r in self.con.execute(sql).fetchall()]

    def digest(self, table: str, checksum: str = store.STORAGE["checksum"]) -> tuple[int, str]:
        """(rows, content digest in key order) of a table, for verifying inserted rows;
        checksum: the table's manifest's (store.checksum_of)."""
        reader = self.con.sql(f"SELECT * FROM {table} ORDER BY unique2").to_arrow_reader(65536)
        d = store.ContentDigest(checksum)
        for batch in reader:
            d.update(batch)
        return d.rows, d.hexdigest()

    # ------------------------------------------------------------------ two-phase update

    def prepare(
        self, txid: str, stmt: Statement, dispatched: float | None = None
    ) -> PartitionReport:
        """Phase 1: run the update and write the commit marker, leaving the txn open."""
        if self.txid is not None:
            self.abort()
        self.con.execute("BEGIN TRANSACTION")
        self.txid = txid
        try:
            out = self.run(stmt, dispatched)
            # The marker is the transaction's own database work (it commits with the
            # update, and a cold one reads its table first): engine time, like the COMMIT.
            t0, cpu0 = time.perf_counter(), time.process_time()
            self.con.execute(f"INSERT INTO {TXN_TABLE} VALUES (?)", [txid])
            out = dataclasses.replace(
                out,
                engine_s=out.engine_s + time.perf_counter() - t0,
                cpu_s=out.cpu_s + time.process_time() - cpu0,
            )
        except BaseException:
            self.abort()
            raise
        return out

    def commit(self, txid: str) -> CommitReport:
        """Phase 2: make this partition's part of txid durable (COMMIT fsyncs the WAL)."""
        if self.txid != txid:
            raise RuntimeError(f"{self.label}: no prepared transaction {txid}")
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        self.con.execute("COMMIT")
        self.txid = None
        return CommitReport(engine_s=time.perf_counter() - t0, cpu_s=time.process_time() - cpu0)

    def abort(self) -> None:
        if self.txid is not None:
            self.txid = None
            with contextlib.suppress(duckdb.Error):
                self.con.execute("ROLLBACK")

    def has_committed(self, txid: str) -> bool:
        # fetchall: a result read only in part holds the connection (DuckDB 2.0)
        sql = f"SELECT count(*) FROM {TXN_TABLE} WHERE txid = ?"
        return bool(self.con.execute(sql, [txid]).fetchall()[0][0])

    def prune_markers(self) -> None:
        """Drop commit markers once recovery has run: only a pending decision needs them."""
        self.con.execute(f"DELETE FROM {TXN_TABLE}")

    def redo(self, txid: str, stmt: Statement) -> None:
        """Recovery: apply a committed txid this partition missed, exactly once."""
        if self.has_committed(txid):
            return
        self.prepare(txid, stmt)
        self.commit(txid)


# --------------------------------------------------------------------------- memory settings
# DuckDB defaults to 80% of RAM per instance; a run's instances must share each machine.


def memory_share(fraction: float, instances: int) -> str:
    """A DuckDB memory_limit: fraction of this host's RAM over instances (in MB)."""
    import psutil

    total = psutil.virtual_memory().total
    return f"{max(64, int(total * fraction / max(1, instances)) // 2**20)}MB"


def check_memory_limit(limit: str) -> None:
    """WisconsinError unless DuckDB's own parser accepts limit (like 4GB or 512MB)."""
    try:
        duckdb.connect(":memory:", config={"memory_limit": limit}).close()
    except duckdb.Error as exc:
        reason = str(exc).splitlines()[0]
        raise WisconsinError(
            f"--memory-limit {limit!r} is not a DuckDB memory limit (like 4GB or 512MB): {reason}"
        ) from None


def resolve_memory_limit(limit: str, worker_limit: int | None) -> int | None:
    """Bytes for a percentage limit ("60%": of this worker's Dask memory limit, or of its
    host's RAM if it has none), decided here on the worker; None for a DuckDB size string."""
    if not limit.strip().endswith("%"):
        return None
    import psutil

    base = worker_limit or psutil.virtual_memory().total
    return int(base * float(limit.strip()[:-1]) / 100)
