"""The DebitCredit run file: frozen dataclasses, saved by the project's atomic writer.

Its `workload` key ("debitcredit") lets `report` and `plot` dispatch; it has its own schema
version. Every step keeps its HdrHistogram, so percentiles can be recomputed from the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from wisconsin import WisconsinError, atomic, jsonfields, outputs
from wisconsin.runfiles import runfile as common
from wisconsin.workloads.debitcredit.histogram import Latency
from wisconsin.workloads.debitcredit.schema import Sizing

WORKLOAD = "debitcredit"
SCHEMA_VERSION = 2  # 2: per-second series in each step (1 is migrated on load)


@dataclass(frozen=True)
class Step:
    """One measured window at one partition count: all partitions at once."""

    mode: str  # "closed" | "open"
    repeat: int
    offered_tps: float  # open: the whole system's arrival rate; closed: 0
    threads: int  # closed: streams per partition; open: server threads per partition
    duration_s: float
    arrivals: int  # transactions submitted in the window
    committed: int
    in_window: int  # committed before the window closed
    distributed: int
    retries: int  # conflict aborts retried (hot teller and branch rows)
    failed: int  # given up
    unfinished: int  # still queued when the drain ended (counted as too slow)
    throughput_tps: float  # in_window / duration
    latency: Latency
    cpu_s: float  # CPU of all partition processes during the step
    committed_by_partition: tuple[int, ...]
    hist: str  # HdrHistogram, microseconds, base64
    first_error: str = ""  # the first unexpected (non-conflict) error of the step, if any
    # Version 2: the window second by second, to judge steadiness (metrics.steadiness).
    tps_series: tuple[float, ...] = ()  # delivered (committed) tps in each second
    p95_series_s: tuple[float, ...] = ()  # p95 response time of those commits
    # Per partition, sampled at the step's start and each second until its end (drain too):
    memory_bytes: tuple[tuple[int, ...], ...] = ()  # duckdb_memory() total
    txn_memory_bytes: tuple[tuple[int, ...], ...] = ()  # its TRANSACTION tag (undo buffers)
    temp_bytes: tuple[tuple[int, ...], ...] = ()  # temp-file bytes (spilled)


@dataclass(frozen=True)
class AuditRecord:
    account_sum: int
    teller_sum: int
    branch_sum: int
    history_sum: int
    history_rows: int
    distributed_rows: int
    bad_accounts: int
    bad_tellers: int
    bad_branches: int
    half_committed: int
    begun: int
    acknowledged: int
    aborted: int
    acknowledged_missing: int
    aborted_present: int
    unknown_present: int
    in_doubt_committed: int
    problems: tuple[str, ...]
    recovered: int  # remote halves redone before the audit
    independent: tuple[str, ...]  # check.py's report (reads the files with duckdb only)
    independent_ok: bool

    @property
    def ok(self) -> bool:
        return not self.problems and self.independent_ok


@dataclass(frozen=True)
class PartitionResult:
    partitions: int
    oversubscribed: bool  # more partitions than usable cores
    branches: int
    tellers: int
    accounts: int
    build_s: float
    warmup_committed: int  # the untimed warm-up window's transactions (in the audit too)
    steps: tuple[Step, ...]
    audit: AuditRecord
    # the partition files' bytes on disk after the build (None: not recorded, before 2026-11-25)
    db_bytes: int | None = None
    # core of each partition's process (server, terminals, DuckDB threads); () not pinned
    pinned_cores: tuple[int, ...] = ()


@dataclass(frozen=True)
class Config:
    partitions: tuple[int, ...]
    sizing: Sizing
    streams: int  # closed mode, per partition
    servers: int  # open mode, per partition
    step_s: float
    repeats: int
    load_fractions: tuple[float, ...]  # open steps, as fractions of the closed peak
    rule_share: float  # 0.95 (standard) or 0.90 (Tandem 1987)
    rule_limit_s: float  # 1.0 (standard) or 2.0 (Tandem 1987)
    seed: int
    data_dir: str
    durability: str
    closed_step_s: float | None = None  # the closed (peak) windows; None: step_s (older files)
    # an unsteady closed window is measured again, at most this many more times (older files: 0)
    closed_retries: int = 0

    @property
    def closed_s(self) -> float:
        return self.step_s if self.closed_step_s is None else self.closed_step_s

    def seconds_per_partition_count(self) -> float:
        """Measured seconds at one P: its closed windows and its open steps."""
        return self.repeats * (self.closed_s + len(self.load_fractions) * self.step_s)


@dataclass(frozen=True)
class DebitCreditRun:
    workload: str
    schema_version: int
    started_utc: str
    finished_utc: str
    environment: dict
    config: Config
    results: tuple[PartitionResult, ...]
    notes: tuple[str, ...] = field(default=())

    def result(self, partitions: int) -> PartitionResult | None:
        return next((r for r in self.results if r.partitions == partitions), None)


def save(run: DebitCreditRun, path: str | os.PathLike) -> Path:
    """Atomic, never overwrites (the project's writer). The file is noted as published
    (outputs.published): a ^C after it is written must not say no run file was written."""
    try:
        saved = common.save(run, path)
    except common.RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    outputs.note_published(saved)
    return saved


PARTIAL = ".partial"  # suffix of a bench's progress file: never read as a run file


def save_partial(run: DebitCreditRun, final: Path) -> Path:
    """The partition counts measured so far, beside the final run file's name (replaced
    after each P; `bench --resume` continues from it, and the final save removes it)."""
    path = final.with_name(final.name + PARTIAL)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(common.to_dict(run), indent=1) + "\n")
    return path


def load_partial(path: str | os.PathLike) -> DebitCreditRun:
    """A progress file written by save_partial (refused if it is anything else)."""
    p = Path(path)
    if not p.name.endswith(".json" + PARTIAL):
        raise WisconsinError(
            f"{p}: not a DebitCredit progress file (debitcredit-*.json{PARTIAL}, written by "
            "an interrupted bench)"
        )
    return load(p)


def is_debitcredit(path: str | os.PathLike) -> bool:
    """True if the file is a readable JSON object whose workload is DebitCredit."""
    try:
        data = atomic.read_json(path, "run file")
    except WisconsinError:
        return False
    return isinstance(data, dict) and data.get("workload") == WORKLOAD


def load(path: str | os.PathLike) -> DebitCreditRun:
    p = Path(path)
    if not p.exists():
        raise WisconsinError(f"{p}: no such run file")
    data = atomic.read_json(p, "not a readable run file:")
    if not isinstance(data, dict) or data.get("workload") != WORKLOAD:
        raise WisconsinError(f"{p}: not a DebitCredit run file")
    if data.get("schema_version") == 1:
        data = _migrate_v1(data)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise WisconsinError(
            f"{p}: DebitCredit run file version {data.get('schema_version')!r} is not supported "
            f"(this wisconsin reads versions 1 to {SCHEMA_VERSION})"
        )
    try:
        return jsonfields.read(DebitCreditRun, data)
    except jsonfields.FieldError as exc:
        raise WisconsinError(f"{p}: not a valid DebitCredit run file: {exc}") from None
    except (TypeError, KeyError, ValueError) as exc:
        raise WisconsinError(f"{p}: malformed DebitCredit run file ({exc})") from None


SERIES = ("tps_series", "p95_series_s", "memory_bytes", "txn_memory_bytes", "temp_bytes")


def _migrate_v1(data: dict) -> dict:
    """Version 1 recorded no per-second series: its steps get empty ones (not recorded, so
    no step of it can be shown steady)."""
    out = dict(data, schema_version=2)
    results = []
    for r in data.get("results") or []:
        if isinstance(r, dict) and isinstance(r.get("steps"), list):
            steps = [
                dict(st, **{k: [] for k in SERIES}) if isinstance(st, dict) else st
                for st in r["steps"]
            ]
            r = dict(r, steps=steps)
        results.append(r)
    out["results"] = results
    return out
