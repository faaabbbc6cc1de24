"""The DebitCredit run file: frozen dataclasses, saved by the project's atomic writer.

Its `workload` key ("debitcredit") lets `report` and `plot` dispatch; it has its own schema
version. Every step keeps its HdrHistogram, so percentiles can be recomputed from the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta

from wisconsin import WisconsinError, atomic, jsonfields
from wisconsin.jsonfields import (
    AtLeastOne,
    Count,
    Fraction,
    Int,
    NonNegative,
    Positive,
    Utc,
    UtcOrEmpty,
)
from wisconsin.oltp import runfile as oltp_runfile
from wisconsin.oltp.histogram import Latency
from wisconsin.runfiles import runfile as common
from wisconsin.workloads.debitcredit.schema import Sizing

WORKLOAD = "debitcredit"
# 2: per-second series in each step; 3: durability as a protocol's code; 4: the progress
# estimate at half the bench; 5: each step's CPU split by what it served, and the
# remote transactions' CPU per P (older versions are migrated on load)
SCHEMA_VERSION = 5

# The commit protocol the bench runs with (Config.durability), and its words.
DURABILITY = "wal-home-decision"
DURABILITY_TEXT = {
    DURABILITY: "every commit fsyncs its partition's DuckDB WAL (no group commit across "
    "transactions); a distributed transaction's decision is the home partition's commit",
}


def durability_text(code: str) -> str:
    """The protocol in words (what the report prints); a value that is no protocol of this
    tool (an older file's own words, kept as written) as it is."""
    return DURABILITY_TEXT.get(code, code)


@dataclass(frozen=True)
class Step:
    """One measured window at one partition count: all partitions at once."""

    mode: Literal["closed", "open"]
    repeat: Count
    offered_tps: NonNegative  # open: the whole system's arrival rate; closed: 0
    threads: AtLeastOne  # closed: streams per partition; open: server threads per partition
    duration_s: Positive
    arrivals: Count  # transactions submitted in the window
    committed: Count
    in_window: Count  # committed before the window closed
    distributed: Count
    retries: Count  # conflict aborts retried (hot teller and branch rows)
    failed: Count  # given up
    unfinished: Count  # still queued when the drain ended (counted as too slow)
    throughput_tps: NonNegative  # in_window / duration
    latency: Latency
    cpu_s: NonNegative  # CPU of all partition processes during the step
    committed_by_partition: tuple[Count, ...]
    hist: str  # HdrHistogram, microseconds, base64
    first_error: str = ""  # the first unexpected (non-conflict) error of the step, if any
    # Version 2: the window second by second, to judge steadiness (metrics.steadiness).
    tps_series: tuple[NonNegative, ...] = ()  # delivered (committed) tps in each second
    p95_series_s: tuple[NonNegative, ...] = ()  # p95 response time of those commits
    # Per partition, sampled at the step's start and each second until its end (drain too):
    memory_bytes: tuple[tuple[Count, ...], ...] = ()  # duckdb_memory() total
    txn_memory_bytes: tuple[tuple[Count, ...], ...] = ()  # its TRANSACTION tag (undo buffers)
    temp_bytes: tuple[tuple[Count, ...], ...] = ()  # temp-file bytes (spilled)
    # HdrHistogram (as hist) of the distributed transactions only; "": not recorded
    remote_hist: str = ""
    # Version 5: per partition, its CPU over the step split by what it served (oltp.cpu);
    # (): not recorded
    cpu: tuple[oltp_runfile.PartitionCpu, ...] = ()


@dataclass(frozen=True)
class AuditRecord:
    account_sum: Int
    teller_sum: Int
    branch_sum: Int
    history_sum: Int
    history_rows: Count
    distributed_rows: Count
    bad_accounts: Count
    bad_tellers: Count
    bad_branches: Count
    half_committed: Count
    begun: Count
    acknowledged: Count
    aborted: Count
    acknowledged_missing: Count
    aborted_present: Count
    unknown_present: Count
    in_doubt_committed: Count
    problems: tuple[str, ...]
    recovered: Count  # remote halves redone before the audit
    independent: tuple[str, ...]  # check.py's report (reads the files with duckdb only)
    independent_ok: bool

    @property
    def ok(self) -> bool:
        return not self.problems and self.independent_ok


@dataclass(frozen=True)
class PartitionResult:
    partitions: AtLeastOne
    oversubscribed: bool  # more partitions than usable cores
    branches: AtLeastOne
    tellers: AtLeastOne
    accounts: AtLeastOne
    build_s: NonNegative
    warmup_committed: Count  # the untimed warm-up window's transactions (in the audit too)
    steps: tuple[Step, ...]
    audit: AuditRecord
    # the partition files' bytes on disk after the build (None: not recorded, before 2026-11-25)
    db_bytes: Count | None = None
    # core of each partition's process (server, terminals, DuckDB threads); () not pinned
    pinned_cores: tuple[Count, ...] = ()
    # on a Dask cluster: the scheduler, each partition's host, each link; None: this machine
    cluster: oltp_runfile.ClusterRecord | None = None
    # version 5: CPU per local transaction, extra CPU per remote half (oltp.cpu.summary of
    # the steps' cpu); None: not recorded
    remote_cpu: oltp_runfile.RemoteCpu | None = None


@dataclass(frozen=True)
class Config:
    partitions: Annotated[tuple[AtLeastOne, ...], Meta(min_length=1)]
    sizing: Sizing
    streams: AtLeastOne  # closed mode, per partition
    servers: AtLeastOne  # open mode, per partition
    step_s: Positive
    repeats: AtLeastOne
    load_fractions: tuple[Positive, ...]  # open steps, as fractions of the closed peak
    rule_share: Fraction  # 0.95 (standard) or 0.90 (Tandem 1987)
    # 1.0 (standard) or 2.0 (Tandem 1987); at most the histograms' range, 10 minutes
    rule_limit_s: Annotated[float, Meta(gt=0, le=600)]
    seed: Int
    data_dir: str
    # the commit protocol's code (DURABILITY_TEXT; version 2 said it in words, read into
    # the code when migrated). A string, not an enum: a file stating another protocol loads,
    # and the audit's `durability stated` fails it.
    durability: str
    closed_step_s: Positive | None = None  # the closed (peak) windows; None: step_s (older files)
    # an unsteady closed window is measured again, at most this many more times (older files: 0)
    closed_retries: Count = 0

    @property
    def closed_s(self) -> float:
        return self.step_s if self.closed_step_s is None else self.closed_step_s

    def seconds_per_partition_count(self) -> float:
        """Measured seconds at one P: its closed windows and its open steps."""
        return self.repeats * (self.closed_s + len(self.load_fractions) * self.step_s)


@dataclass(frozen=True)
class DebitCreditRun:
    workload: Literal["debitcredit"]
    schema_version: Int
    started_utc: Utc
    finished_utc: UtcOrEmpty
    environment: dict  # the Wisconsin run file's Environment, as a dict (checked on load)
    config: Config
    results: tuple[PartitionResult, ...]
    notes: tuple[str, ...] = field(default=())
    # version 4: the time-left estimate at half the bench; None: not recorded
    estimate: common.Estimate | None = None

    def result(self, partitions: int) -> PartitionResult | None:
        return next((r for r in self.results if r.partitions == partitions), None)


def save(run: DebitCreditRun, path: str | os.PathLike) -> Path:
    """Atomic, never overwrites; noted as published (oltp.runfile.save)."""
    return oltp_runfile.save(run, path)


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
    return oltp_runfile.is_workload(path, WORKLOAD)


def load(path: str | os.PathLike) -> DebitCreditRun:
    p = Path(path)
    data = oltp_runfile.read(p, WORKLOAD, "DebitCredit")
    if data.get("schema_version") == 1:
        data = _migrate_v1(data)
    if data.get("schema_version") == 2:
        data = _migrate_v2(data)
    if data.get("schema_version") == 3:
        data = dict(data, schema_version=4, estimate=None)  # not recorded
    if data.get("schema_version") == 4:
        data = dict(data, schema_version=5)  # no step's CPU split: not recorded (defaults)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise WisconsinError(
            f"{p}: DebitCredit run file version {data.get('schema_version')!r} is not supported "
            f"(this wisconsin reads versions 1 to {SCHEMA_VERSION})"
        )
    try:
        run = jsonfields.convert(DebitCreditRun, data)
        # what the report and the audit read of the environment: typed as a Wisconsin run's
        jsonfields.convert(_Environment, run.environment, "environment")
        _consistent(run)
    except jsonfields.FieldError as exc:
        raise WisconsinError(f"{p}: not a valid DebitCredit run file: {exc}") from None
    return run


def _consistent(run: DebitCreditRun) -> None:
    """What one field implies of another, as the bench writes them: FieldError if not."""
    show = jsonfields.show
    if len(set(run.config.partitions)) != len(run.config.partitions):
        raise jsonfields.FieldError(
            "config.partitions", show(run.config.partitions), "distinct partition counts"
        )
    seen: set[int] = set()
    for i, r in enumerate(run.results):
        if r.partitions in seen:
            raise jsonfields.FieldError(
                f"results[{i}].partitions",
                str(r.partitions),
                "a partition count not measured twice",
            )
        seen.add(r.partitions)
        for j, st in enumerate(r.steps):
            # throughput is the commits in the window over its length: a rate that is not
            # is no measurement (and 1e308 of it overflows every figure made from it)
            tps = st.in_window / st.duration_s
            if abs(st.throughput_tps - tps) > 1e-6 * max(tps, 1.0):
                raise jsonfields.FieldError(
                    f"results[{i}].steps[{j}].throughput_tps",
                    show(st.throughput_tps),
                    f"in_window / duration_s = {tps:g}",
                )


def missing(run: DebitCreditRun) -> list[str]:
    """What the run's configuration asks for that it does not hold, in words ([]: none):
    a partition count never measured, or one with fewer windows than its schedule. Such a
    run is incomplete: a bench stopped early, or a file cut by hand."""
    cfg = run.config
    asked = ",".join(map(str, cfg.partitions))
    measured = {r.partitions for r in run.results}
    out = []
    absent = [p for p in cfg.partitions if p not in measured]
    if absent:
        ps = ", ".join(map(str, absent))
        out.append(
            f"P = {ps} of --partitions {asked} {'was' if len(absent) == 1 else 'were'} not measured"
        )
    extra = sorted(measured - set(cfg.partitions))
    if extra:
        out.append(f"P = {', '.join(map(str, extra))} measured but not in --partitions {asked}")
    for r in run.results:
        for rep in range(cfg.repeats):
            closed = sum(s.mode == "closed" and s.repeat == rep for s in r.steps)
            opened = sum(s.mode == "open" and s.repeat == rep for s in r.steps)
            if not 1 <= closed <= 1 + cfg.closed_retries or opened != len(cfg.load_fractions):
                out.append(
                    f"P = {r.partitions} repeat {rep + 1}: {closed} closed and {opened} open "
                    f"windows, its schedule has 1 to {1 + cfg.closed_retries} and "
                    f"{len(cfg.load_fractions)}"
                )
    return out


@dataclass(frozen=True)
class _Environment:
    """The environment fields DebitCredit reads (the rest is shown as recorded)."""

    usable_cores: AtLeastOne | None = None
    memory_bytes: AtLeastOne | None = None


SERIES = ("tps_series", "p95_series_s", "memory_bytes", "txn_memory_bytes", "temp_bytes")


def _migrate_v1(data: dict) -> dict:
    """Version 1 recorded no per-second series: its steps get empty ones (not recorded, so
    no step of it can be shown steady)."""
    out = dict(data, schema_version=2)
    if not isinstance(data.get("results"), list):
        return out  # validation names what it is instead
    results = []
    for r in data["results"]:
        if isinstance(r, dict) and isinstance(r.get("steps"), list):
            steps = [
                dict(st, **{k: [] for k in SERIES}) if isinstance(st, dict) else st
                for st in r["steps"]
            ]
            r = dict(r, steps=steps)
        results.append(r)
    out["results"] = results
    return out


_DURABILITY_CODE = {text: code for code, text in DURABILITY_TEXT.items()}


def _migrate_v2(data: dict) -> dict:
    """Version 2 said its durability in words: the protocol's code, read from them once
    (other words are kept as written: the audit fails them)."""
    out = dict(data, schema_version=3)
    config = data.get("config")
    if isinstance(config, dict) and isinstance(config.get("durability"), str):
        said = config["durability"]
        out["config"] = dict(config, durability=_DURABILITY_CODE.get(said, said))
    return out
