"""The TPC-C run file: frozen dataclasses, saved by the project's atomic writer, never
overwritten. Its `workload` key ("tpcc") lets `report` and `audit` dispatch. Each
transaction type keeps its HdrHistogram, the window its per-second New-Order series and
every deferred delivery's completion time, so the audit re-derives its figures from them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from wisconsin import WisconsinError, jsonfields
from wisconsin.jsonfields import AtLeastOne, Count, NonNegative, Positive, Utc, UtcOrEmpty
from wisconsin.oltp import runfile as oltp_runfile
from wisconsin.oltp.histogram import Latency

WORKLOAD = "tpcc"
# 2: each partition's CPU split by what it served, and the remote transactions' CPU
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class Times:
    """Keying or think times of one type in the window (seconds)."""

    n: Count
    mean: NonNegative
    min: NonNegative
    max: NonNegative


@dataclass(frozen=True)
class KindResult:
    """One transaction type in the window: completions, their response times, their inputs."""

    kind: str
    count: Count  # completed in the window (a rolled-back New-Order is completed)
    failed: Count  # given up (retries exhausted, a partition unreachable, an error)
    retries: Count  # conflict aborts retried
    distributed: Count  # through two-phase commit (a warehouse on another partition)
    latency: Latency
    hist: str  # HdrHistogram, base64: the audit recomputes the percentiles from it
    keying: Times
    think: Times


@dataclass(frozen=True)
class Config:
    mode: Literal["spec", "nowait"]
    partitions: AtLeastOne
    warehouses_per_partition: AtLeastOne
    customers_per_district: AtLeastOne
    items: AtLeastOne
    ramp_s: NonNegative
    window_s: Positive
    workers: AtLeastOne  # threads per partition serving due transactions
    seed: Count
    c_load: tuple[int, int, int]  # NURand C of the load (C_LAST, C_ID, OL_I_ID)
    c_run: tuple[int, int, int]  # ... and of this run
    checkpoint_at_s: NonNegative  # a FORCE CHECKPOINT this far into the window
    drain_s: NonNegative  # queued deliveries may complete this long after the window
    limit_s: NonNegative  # the 90th-percentile response-time limit of every type
    pinned_cores: tuple[int, ...]
    data_dir: str  # the database directory
    # on a Dask cluster: the scheduler, each partition's host, each link; None: this machine
    cluster: oltp_runfile.ClusterRecord | None = None

    @property
    def warehouses(self) -> int:
        return self.partitions * self.warehouses_per_partition


@dataclass(frozen=True)
class Checkpoint:
    partition: Count
    at_s: float  # seconds into the window
    seconds: NonNegative
    error: str  # "" when it completed


@dataclass(frozen=True)
class Receipts:
    """The acknowledgement log against the database after recovery (receipts.check)."""

    acknowledged: Count  # C lines: what the terminals were told committed
    with_keys: Count  # ... whose receipt names rows to find (New-Order, Payment, Delivery)
    found: Count
    lost: tuple[str, ...]  # each lost transaction named (the first ten), then a count
    lost_count: Count
    in_doubt: Count  # begun, answer lost in a crash (either outcome is correct)
    aborted: Count
    halves_missing: Count  # decided remote halves not applied
    halves_orphaned: Count  # applied remote halves no partition decided

    @property
    def ok(self) -> bool:
        return not (self.lost_count or self.halves_missing or self.halves_orphaned)

    def line(self) -> str:
        return (
            f"acknowledged transactions: {self.acknowledged:,} in the log, {self.found:,} of "
            f"{self.with_keys:,} with rows to find found, {self.lost_count:,} lost; "
            f"{self.in_doubt:,} in doubt, {self.aborted:,} aborted; remote halves: "
            f"{self.halves_missing} decided but missing, {self.halves_orphaned} applied "
            "without a decision" + ("" if not self.lost else ": " + "; ".join(self.lost))
        )


@dataclass(frozen=True)
class Result:
    kinds: tuple[KindResult, ...]
    no_series: tuple[int, ...]  # committed New-Orders in each second of the window
    new_orders_all: Count  # committed New-Orders in the whole run (ramp-up included)
    d_next_o_id_delta: Count  # sum(D_NEXT_O_ID) after the run - before it
    rolled_back: Count  # New-Orders rolled back (the unused item), in the window
    lines: Count  # order lines of the window's New-Orders
    remote_lines: Count  # ... supplied by another warehouse
    remote_payments: Count  # Payments by a customer of another warehouse
    by_name: Count  # Payments and Order-Status by last name
    delivery_s: tuple[float, ...]  # each delivery queued in the window: queued -> completed
    deliveries_unfinished: Count  # queued but not completed when the drain ended
    skipped_districts: Count  # districts a delivery found without a new order
    checkpoints: tuple[Checkpoint, ...]
    wal_bytes: tuple[tuple[int, ...], ...]  # per partition, each second of the window
    memory_bytes: tuple[tuple[int, ...], ...]  # per partition's engine, each second
    txn_memory_bytes: tuple[tuple[int, ...], ...]  # ... of it tagged TRANSACTION (undo)
    temp_bytes: tuple[tuple[int, ...], ...]  # ... spilled to temporary files
    cpu_s: tuple[float, ...]  # per partition process
    first_error: str
    recovered: Count  # decided remote halves redone after the run
    consistency: tuple[str, ...]  # conditions 3.3.2.1-12 across partitions, one line each
    consistency_failed: tuple[int, ...]
    independent: tuple[str, ...]  # check.py's lines (conditions 1-4, duckdb alone)
    independent_ok: bool
    build_s: NonNegative
    db_bytes: Count
    receipts: Receipts | None = None  # None: a run file from before the check
    # version 2: per partition, its CPU over the step split by what it served (oltp.cpu),
    # and CPU per local transaction and extra CPU per remote half from it; not recorded:
    # (), None
    cpu: tuple[oltp_runfile.PartitionCpu, ...] = ()
    remote_cpu: oltp_runfile.RemoteCpu | None = None


@dataclass(frozen=True)
class TpccRun:
    workload: Literal["tpcc"]
    schema_version: int
    started_utc: Utc
    finished_utc: UtcOrEmpty
    environment: dict
    config: Config
    result: Result
    notes: tuple[str, ...] = field(default=())


def save(run: TpccRun, path: str | os.PathLike) -> Path:
    """Atomic, never overwrites; noted as published (oltp.runfile.save)."""
    return oltp_runfile.save(run, path)


def is_tpcc(path: str | os.PathLike) -> bool:
    return oltp_runfile.is_workload(path, WORKLOAD)


def load(path: str | os.PathLike) -> TpccRun:
    p = Path(path)
    data = oltp_runfile.read(p, WORKLOAD, "TPC-C")
    if data.get("schema_version") == 1:
        data = dict(data, schema_version=2)  # no CPU split: not recorded (defaults)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise WisconsinError(
            f"{p}: TPC-C run file version {data.get('schema_version')!r} is not supported "
            f"(this wisconsin reads versions 1 to {SCHEMA_VERSION})"
        )
    try:
        return jsonfields.convert(TpccRun, data)
    except jsonfields.FieldError as exc:
        raise WisconsinError(f"{p}: not a valid TPC-C run file: {exc}") from None
