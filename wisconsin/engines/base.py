"""The engine seam: what the runner needs from an execution architecture.

Implementations: shared_nothing.SharedNothingEngine (one Dask worker per partition, local
or on a cluster) and shared_memory.SharedMemoryEngine (one DuckDB instance, P threads).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from wisconsin.engines import commit
from wisconsin.statement import BindableQuery, Statement
from wisconsin.store import Manifest


@dataclass(frozen=True)
class Fault:
    """Test hook: make one partition fail or stall in one phase of a statement."""

    part: int
    phase: str  # "run" | "prepare" | "commit"
    action: str = "raise"  # "raise" | "sleep"
    seconds: float = 0.0

    def to(self, part: int, phase: str) -> Fault | None:
        """This fault if it is aimed at part's phase, else None (what a worker is sent)."""
        return self if self.part == part and self.phase == phase else None

    def fire(self, phase: str) -> None:
        """Where the phase runs: stall or fail as told (the one injection point)."""
        if self.phase != phase:
            return
        if self.action == "sleep":
            time.sleep(self.seconds)
        else:
            raise RuntimeError(f"injected failure in {phase}")


def inject(fault: Fault | None, part: int, phase: str) -> None:
    """Fire fault if it is aimed at this part's phase."""
    if fault is not None and (f := fault.to(part, phase)) is not None:
        f.fire(phase)


@dataclass(frozen=True)
class EngineConfig:
    threads_per_worker: int = 1
    memory_limit: str = "1GB"  # per DuckDB instance
    timeout_s: float = 3600.0  # every wait on a worker has this bound
    fault: Fault | None = None
    cluster: str | None = None  # scheduler address for a remote cluster
    security: object | None = None  # distributed.Security for tls://
    # make_cold also drops the whole machine's page cache (root only; posix_fadvise
    # eviction of the table's files needs no root and is always done)
    drop_caches: bool = False
    # When set, replaces memory_limit: DuckDB gets this fraction of each host's RAM, split
    # evenly among the instances the open table uses on that host (shared-memory: its one
    # instance). A per-instance limit sized for max(P) starves P=1's buffer pool, whose
    # "warm" scans then re-read blocks (2x the CPU; docs/performance.md, Engine parity).
    memory_fraction: float | None = None
    # How a shared-nothing coordinator sends the timed statements (execute, the empty
    # statement, the update's prepare/commit/abort): "direct" (a socket per partition,
    # wisconsin.engines.channel; a TLS cluster falls back to Dask) or "dask" (a pinned Dask task).
    transport: str = "direct"
    # Where diagnostic logs (Dask's) go: a private directory made inside it (None: $TMPDIR);
    # the runner gives the run file's directory.
    log_dir: str | None = None


@dataclass(frozen=True)
class PartitionReport:
    """One unit's timed statement (PartitionSession.run), measured next to the engine."""

    engine_s: float  # execute + fetch, on the clock next to the engine
    cpu_s: float  # the process's CPU time meanwhile
    rows: list[tuple]  # the answer rows
    rows_scanned: int | None  # from the profile; None when the statement was not profiled
    scans: int  # table scans in the plan
    projections: list[list[str]]  # the columns each table scan read
    # This process's reads from storage during the statement (page-cache hits are not
    # counted): the proof that a cold repetition was cold. None where unmeasurable.
    bytes_read: int | None
    peak_rss_bytes: int | None
    start_delay_s: float  # dispatch to start (0.0: not dispatched)
    pid: int


@dataclass(frozen=True)
class CommitReport:
    """One partition's phase 2 of the cross-partition update (its COMMIT)."""

    engine_s: float
    cpu_s: float


@dataclass
class StepResult:
    """One statement on all partitions: coordinator wall time and each unit's report.

    units maps partition -> its PartitionReport; a shared-memory statement over all
    partitions reports one unit, keyed -1. Each unit's bytes_read is what its process read
    from storage during the statement (None where unavailable, or where units share one
    process and ran at once: the shared-memory update's).
    """

    wall_s: float
    units: dict[int, PartitionReport] = field(default_factory=dict)
    commit: dict[int, CommitReport] = field(default_factory=dict)  # update: phase 2
    # Storage reads of every process that ran the statement, summed (None if unknown).
    bytes_read: int | None = None
    # update: the coordinator's durable commit decision, the transaction manager's own
    # write (database work, as Tandem's TMF commit record was; None: not an update)
    decision_s: float | None = None


# The harness-overhead probe: a statement that does no work, dispatched like any other.
NOOP = Statement(query="noop", sql="SELECT 1", profile=False)


def units_bytes_read(units: Mapping[int, PartitionReport]) -> int | None:
    """Sum of the units' bytes_read, or None if any is unknown."""
    values = [u.bytes_read for u in units.values()]
    return None if not values or None in values else sum(values)


OVERHEAD_SAMPLES = 3  # empty statements per measurement of the harness overhead


def harness_overhead(engine, samples: int = OVERHEAD_SAMPLES) -> float:
    """The harness's own cost of one statement at this P: an empty statement's wall time
    outside the engine (its wall minus the slowest partition's engine time), the median of
    `samples`. DuckDB's per-statement cost is engine time here as in every timed statement;
    one sample right after an eviction measured the fresh session's first statement too."""
    outside = []
    for _ in range(samples):
        step = engine.execute(engine.noop_statements())
        inside = max((u.engine_s for u in step.units.values()), default=0.0)
        outside.append(max(0.0, step.wall_s - inside))
    return statistics.median(outside)


def timed_update(
    table_dir: str, transport: commit.Transport, txid: str, statements: Mapping[int, Statement]
) -> StepResult:
    """The cross-partition update as both engines time it: all four protocol steps."""
    t0 = time.perf_counter()
    prepared, committed, decision_s = commit.run_transaction(
        commit.DecisionLog(table_dir), transport, txid, statements
    )
    return StepResult(
        wall_s=time.perf_counter() - t0,
        units=prepared,
        commit=committed,
        bytes_read=units_bytes_read(prepared),
        decision_s=decision_s,
    )


class Engine(Protocol):
    mode: str
    memory_limits: dict[int, str]  # DuckDB memory_limit per open partition (-1: the one)
    table_dir: str  # the open table's directory (its _txlog holds update/undo intents)
    placement: dict[int, str]  # partition -> the worker that owns it ({}: one process)
    warnings: list[str]  # said on stderr and kept in the run file's notes

    def start(self, partitions: int, placement: Mapping[int, str] | None = None) -> float:
        """Start P workers (or check a cluster has them); return the start-up seconds."""

    def open_table(self, manifest: Manifest, table_dir: str) -> float:
        """Open fresh connections to the table's partitions, finishing any interrupted
        update first; return the seconds it took."""

    def statements(
        self, query: BindableQuery, manifest: Manifest, scan_variant: str, delta: int | None = None
    ):
        """The statement(s) for query, bound to this engine's table references:
        {part: Statement}, or {-1: Statement} for one statement over the whole table. delta:
        the update's (None: the query's own; the undo passes it negated)."""

    def reset_result(self, name: str) -> None: ...

    def execute(self, statements: Mapping[int, Statement]) -> StepResult: ...

    def noop_statements(self) -> dict[int, Statement]:
        """An empty statement shaped like statements(): execute() of it measures the
        harness overhead at this P through the same dispatch path."""

    def make_cold(self) -> dict[int, dict]:
        """Untimed: drop every cached copy of the open table's data before the next
        statement: close the sessions (DuckDB's buffer pool goes with them), fsync and
        posix_fadvise(DONTNEED) each partition file and its WAL where it lives (optionally
        drop_caches), reopen fresh sessions, evict again (opening re-reads metadata), and
        measure what is still resident. Per partition {"file_bytes", "resident_bytes"
        (None if unmeasurable), "seconds"}. Reset result tables before calling it."""

    def data_bytes(self) -> dict[int, int]:
        """Per partition, on-disk bytes of the queried table's column data (see
        PartitionSession.data_bytes): what a cold full-row scan must read."""

    def update(self, txid: str, statements: Mapping[int, Statement]) -> StepResult: ...

    def query(self, sql: str) -> dict[int, list[tuple]]:
        """Run an untimed query on every partition (verification)."""

    def result_digests(self, name: str) -> dict[int, tuple[int, str]]:
        """(rows, digest) of a result table: per partition, or {-1: ...} if unpartitioned."""

    def topology(self): ...

    def close_table(self) -> None: ...

    def stop(self) -> None: ...
