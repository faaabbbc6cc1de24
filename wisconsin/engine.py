"""The engine seam: what the runner needs from an execution architecture.

Implementations: shared_nothing.SharedNothingEngine (one Dask worker per partition, local
or on a cluster) and shared_memory.SharedMemoryEngine (one DuckDB instance, P threads).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from wisconsin import commit
from wisconsin.queries import Statement
from wisconsin.store import Manifest


@dataclass(frozen=True)
class Fault:
    """Test hook: make one partition fail or stall in one phase of a statement."""

    part: int
    phase: str  # "run" | "prepare" | "commit"
    action: str = "raise"  # "raise" | "sleep"
    seconds: float = 0.0


@dataclass(frozen=True)
class EngineConfig:
    threads_per_worker: int = 1
    memory_limit: str = "1GB"  # per DuckDB instance
    timeout_s: float = 3600.0  # every wait on a worker has this bound
    fault: Fault | None = None
    cluster: str | None = None  # scheduler address for a remote cluster
    security: object | None = None  # distributed.Security for tls://


@dataclass
class StepResult:
    """One statement on all partitions: coordinator wall time and each unit's report.

    units maps partition -> PartitionSession.run() output; a shared-memory statement over
    all partitions reports one unit, keyed -1.
    """

    wall_s: float
    units: dict[int, dict] = field(default_factory=dict)
    commit: dict[int, dict] = field(default_factory=dict)  # update: phase-2 reports


def timed_update(
    table_dir: str, transport: commit.Transport, txid: str, statements: Mapping[int, Statement]
) -> StepResult:
    """The cross-partition update as both engines time it: all four protocol steps."""
    t0 = time.perf_counter()
    prepared, committed = commit.run_transaction(
        commit.DecisionLog(table_dir), transport, txid, statements
    )
    return StepResult(wall_s=time.perf_counter() - t0, units=prepared, commit=committed)


class Engine(Protocol):
    mode: str
    table_dir: str  # the open table's directory (its _txlog holds update/undo intents)

    def start(self, partitions: int, placement: Mapping[int, str] | None = None) -> float:
        """Start P workers (or check a cluster has them); return the start-up seconds."""

    def open_table(self, manifest: Manifest, table_dir: str) -> float:
        """Open fresh connections to the table's partitions, finishing any interrupted
        update first; return the seconds it took."""

    def statements(self, query: str, manifest: Manifest, scan_variant: str, delta: int = 117):
        """The statement(s) for query: {part: Statement}, or {-1: Statement} for one
        statement over the whole table."""

    def reset_result(self, name: str) -> None: ...

    def execute(self, statements: Mapping[int, Statement]) -> StepResult: ...

    def update(self, txid: str, statements: Mapping[int, Statement]) -> StepResult: ...

    def query(self, sql: str) -> dict[int, list[tuple]]:
        """Run an untimed query on every partition (verification)."""

    def result_digests(self, name: str) -> dict[int, tuple[int, str]]:
        """(rows, digest) of a result table: per partition, or {-1: ...} if unpartitioned."""

    def topology(self): ...

    def close_table(self) -> None: ...

    def stop(self) -> None: ...
