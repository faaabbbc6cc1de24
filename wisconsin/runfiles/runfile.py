"""Run files: what one `wisconsin run` measured, as frozen dataclasses saved to JSON.

A run file is the only thing `report`, `plot` and `compare` read. It carries what is
needed to reproduce the run and to judge it: versions, machine, seed, sizes, mode,
cluster, warm/cold, repetitions, durability, and every timed repetition.

Files are written to a temporary name and renamed, and never overwrite an existing file.
Loading a file with an unknown schema version, or a field of the wrong type or out of
range (a hand-edited file), fails with RunFileError in one line naming the field.
"""

from __future__ import annotations

import dataclasses
import enum
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
    Finite,
    Int,
    NonNegative,
    Positive,
    Utc,
    UtcOrEmpty,
)
from wisconsin.runfiles import facts, migrate
from wisconsin.runfiles.facts import Durability, StopRule  # noqa: F401  (re-exported)
from wisconsin.runfiles.machine import (  # noqa: F401  (re-exported: one schema, one import)
    Environment,
    HostInfo,
    Preflight,
    Topology,
    WorkerRestart,
)

SCHEMA_VERSION = 4
# Versions from_dict can read: older ones are migrated on load (runfiles.migrate).
READABLE_VERSIONS = (1, 2, 3, 4)


class CacheState(enum.StrEnum):
    """The cache state a run measures in (a str, so run files keep "cold"/"warm")."""

    COLD = "cold"  # every partition evicted before each timed execution, proven by bytes read
    WARM = "warm"  # the statement ran untimed right before, data resident


CACHE_STATES = tuple(CacheState)
# What the analysis branches on, as the schema's closed sets ("" = not recorded, v1)
Cache = Literal["", "cold", "warm"]
Kind = Literal["F", "G"]
Status = Literal["complete", "incomplete"]
Transport = Literal["", "direct", "dask"]
Share = Annotated[float, Meta(gt=0, le=1)]


class RunFileError(WisconsinError):
    """A run file that cannot be read, is of an unknown version, or cannot be written."""


@dataclass(frozen=True)
class PartitionSample:
    """One partition's share of one repetition (shared-nothing: one worker's task)."""

    part: Int  # -1: the unpartitioned baseline table
    engine_s: NonNegative  # wall time of the statement inside the engine
    cpu_s: NonNegative  # CPU time of the process (or thread) running it
    rows_scanned: Count | None  # rows read by the table scan(s), from the engine's profile
    peak_rss_bytes: Count | None  # peak resident memory of the worker during the repetition
    # from coordinator dispatch to the partition starting work (across hosts a difference of
    # two clocks: may be < 0)
    start_delay_s: Finite = 0.0
    worker: str = ""  # worker name (shared-nothing / cluster)
    host: str = ""
    # --- schema 2: the evidence an auditor re-checks (None / () = not recorded)
    bytes_read: Count | None = None  # read from storage by this process during the statement
    projections: tuple[tuple[str, ...], ...] = ()  # columns each table scan read (profiled)
    data_bytes: Count | None = None  # on-disk size of this partition's queried data
    # page-cache bytes of the partition's files still resident after eviction (cold only)
    resident_bytes: Count | None = None


@dataclass(frozen=True)
class Repetition:
    """One execution of one query on one table. index 0 is the untimed warm-up."""

    index: Int  # -1 for a warm-up
    cold: bool  # schema 2: the OS page cache and DuckDB held none of its data (evicted, proven)
    wall_s: Positive  # coordinator wall time, dispatch to last answer
    rows: Count  # rows returned / inserted / updated / joined (verified)
    partitions: tuple[PartitionSample, ...] = ()
    answer: Finite | None = None  # the AVG value, for the average query
    verified: bool = True
    # --- schema 2
    round: Count | None = None  # interleaving round it ran in (None: v1, back to back)
    position: Count | None = None  # its position in that round's shuffled order
    dispatched_unix: Positive | None = None  # wall clock at dispatch (timeline figures)
    overhead_s: NonNegative | None = None  # empty statement, same path, same P, just before
    # (max partition engine_s + commit_decision_s) / wall_s
    engine_share: NonNegative | None = None
    # storage reads of every process of the step, summed: the evidence where units share a
    # process and cannot be split (the shared-memory update); None if unknown
    bytes_read: Count | None = None
    # update: the coordinator's fsynced commit decision, counted in the engine share (the
    # transaction manager's write); None: not an update, or written before it was recorded
    commit_decision_s: NonNegative | None = None


def engine_share(engine_s: list[float], decision_s: float | None, wall_s: float) -> float | None:
    """What Repetition.engine_share records: (slowest partition's engine time + the update's
    commit decision) / coordinator wall time; None without a wall time."""
    if wall_s <= 0:
        return None
    return (max(engine_s, default=0.0) + (decision_s or 0.0)) / wall_s


@dataclass(frozen=True)
class Measurement:
    """All repetitions of one (table, query)."""

    table: str  # "F4", "G8", ...
    kind: Kind  # "F" or "G"
    partitions: AtLeastOne
    rows: AtLeastOne  # table size n (?tablesize)
    query: str  # one of config.queries
    variant: str  # scan variant ("full-row", "predicate-column", "as-written"); "" otherwise
    warmup: Repetition
    repetitions: tuple[Repetition, ...]
    expected_rows: Count  # the independently computed answer the runner verified against
    startup_s: NonNegative = 0.0  # opening fresh connections to the P partitions (workers running)
    # --- schema 2
    cache: Cache = ""  # "cold" | "warm" for every timed repetition; "" = not recorded (v1)
    table_bytes: Count | None = None  # on-disk bytes of the queried table over all partitions
    fits_in_ram: bool | None = None  # table_bytes < the memory of the host(s) running it

    @property
    def times(self) -> tuple[float, ...]:
        """Timed coordinator wall times (warm-up excluded)."""
        return tuple(r.wall_s for r in self.repetitions)


@dataclass(frozen=True)
class TableInfo:
    name: str
    kind: Kind
    rows: AtLeastOne
    partitions: AtLeastOne
    seed: Int
    generator_version: str
    rows_per_partition: tuple[Count, ...] = ()


@dataclass(frozen=True)
class Calibration:
    """The machine profile the analysis bounds each point with (measured by the run)."""

    measured_utc: UtcOrEmpty
    cores: AtLeastOne
    storage_read_bytes_per_s: Positive | None  # sequential read of an evicted file, one stream
    memory_read_bytes_per_s: Positive | None  # one core streaming resident memory
    # per query: rows/s of one in-process DuckDB thread on the unpartitioned table
    scan_rows_per_s: tuple[tuple[str, Positive], ...] = ()
    # P -> median harness overhead (empty statement through the run's engine to P partitions)
    dispatch_s: tuple[tuple[AtLeastOne, NonNegative], ...] = ()
    notes: tuple[str, ...] = ()  # what could not be measured, and why
    # --- schema 3: where the bound's rates came from. The single-thread rates: the
    # baseline's fastest repetition, or (runners before 2026-11-24) its median; "" either.
    scan_rates_from: Literal["", "fastest", "median"] = ""
    # the storage probe: the file it read (evicted), and per number of parallel streams
    # the rate they read it at (None: that probe failed); storage_read_bytes_per_s is the best
    storage_file: str = ""
    storage_streams: tuple[tuple[AtLeastOne, Positive | None], ...] = ()


@dataclass(frozen=True)
class Round:
    """One interleaving round: every (table, query) once, in a seeded shuffled order."""

    index: Count
    seed: Int
    order: tuple[str, ...]  # "F4/scan", ... in execution order
    started_utc: UtcOrEmpty = ""
    # The block it ran in (fresh worker processes per block); 1 in files written before
    # blocks, which load as one block each: their run-to-run variation is unknown.
    block: AtLeastOne = 1
    # Seconds it took to start fresh worker processes right before this round (the first of
    # its block); None: the round ran on the workers of the round before it.
    fresh_workers_s: NonNegative | None = None


@dataclass(frozen=True)
class TimeSpent:
    """Where a run's wall time went, in seconds, as the runner measured it (issue 45): the
    parts that are not the timed statements are the harness's own cost."""

    total_s: NonNegative  # from the run's start (tables listed) to its file being saved
    checks_s: NonNegative  # the check of every partition before timing
    probes_s: NonNegative  # the storage and memory read rates (Calibration)
    start_s: NonNegative  # the engines' first start (the first block's workers)
    fresh_workers_s: NonNegative  # restarting the local workers before each later block
    warmups_s: NonNegative  # warm-up executions, whole (the cold warm-up round's included)
    opens_s: NonNegative  # opening and closing each table in each round
    resets_s: NonNegative  # emptying the result tables before a select or join
    eviction_s: NonNegative  # making each partition cold before a timed execution
    empty_statements_s: NonNegative  # the harness overhead measured before each one
    timed_s: NonNegative  # the timed statements, dispatch to answer (wall_s)
    verify_s: NonNegative  # checking each answer (and the update's applied state)
    undo_s: NonNegative  # undoing the update, and checking the table is as generated

    @property
    def other_s(self) -> float:
        """What no part names: journaling, the stopping rule, the rounds' bookkeeping."""
        named = sum(getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "total_s")
        return max(0.0, self.total_s - named)


@dataclass(frozen=True)
class RunConfig:
    mode: str  # "shared-nothing" | "shared-memory"
    cluster: str | None  # scheduler address, None for a local run
    data_dir: str
    kinds: tuple[Kind, ...]
    partitions: tuple[AtLeastOne, ...]
    queries: tuple[str, ...]
    scan_variant: str
    repeat: Count  # rounds done: 0 while the first runs
    warmup: Count
    seed: Int
    threads_per_worker: Count  # shared-nothing: DuckDB threads per worker; 0: threads = P
    memory_limit: str
    # How commits reached disk: a protocol's code (facts.Durability; schema 2 said it in
    # words, read into the code when migrated). A string, not the enum: a file stating
    # another protocol loads, and the audit's `durability on` fails it.
    durability: str
    # --- schema 2
    cache: Cache = ""  # "cold" | "warm"; "" = not recorded (v1: data was resident)
    interleaved: bool = False  # rounds of shuffled (table, query) vs back to back (v1)
    order_seed: Int | None = None
    min_reps: AtLeastOne | None = None
    max_reps: AtLeastOne | None = None
    target_ci: Positive | None = None  # relative half-width every headline ratio must reach
    time_budget_s: Positive | None = None
    # the scan variant's DuckDB settings, SET for the scan statement only (TP1 pitfall 9),
    # e.g. (("disabled_optimizers", "statistics_propagation,filter_pushdown"),); None: not
    # recorded (written before 2026-11-23)
    scan_settings: tuple[tuple[str, str], ...] | None = None
    # Blocks: `block_rounds` consecutive timed rounds share one set of worker processes and
    # are one replicate of the run; intervals and tests are computed over blocks. None: not
    # recorded (before blocks): the whole run is one block.
    blocks: AtLeastOne | None = None  # asked for
    block_rounds: AtLeastOne | None = None
    # The G tables' partition counts when they are not `partitions` (the calibrated bench
    # keeps batch scaleup to P <= cores, where each partition has a processor); None: the
    # same counts (every file before 2026-11-26).
    g_partitions: tuple[AtLeastOne, ...] | None = None
    # shared-nothing: how timed statements were asked to reach the workers ("direct" or
    # "dask"; a TLS cluster uses dask whatever was asked); "" elsewhere. Files before this
    # field said it only in a note: its migration maps that note to it.
    transport: Transport = ""
    # --- schema 3
    # shared-nothing: what carried them ("dask" for "direct" on a TLS cluster); "" not recorded
    transport_used: Transport = ""
    # DuckDB's memory limit as a share of each host's RAM, split among the open table's
    # instances (memory_limit then only the fallback); None: memory_limit itself
    memory_fraction: Share | None = None
    # the single-thread baseline: timed on F1 as steps of its own ("separate"), the F1
    # measurements themselves (shared-memory at P = 1: "own"), not asked for, or asked for
    # with no F1 table generated ("no-f1"); "" not recorded
    single_thread: Literal["", "separate", "own", "not-asked", "no-f1"] = ""

    def tables(self) -> list[tuple[str, int]]:
        """(kind, P) of every table the run measures, in kinds order."""
        return table_list(self.kinds, self.partitions, self.g_partitions)


def table_list(kinds, partitions, g_partitions=None) -> list[tuple[str, int]]:
    """(kind, P) for kinds over partitions, G over g_partitions when given."""
    return [
        (k, p)
        for k in kinds
        for p in (g_partitions if k == "G" and g_partitions is not None else partitions)
    ]


@dataclass(frozen=True)
class Stop:
    """Why the rounds stopped: the rule, after how many timed rounds, at which setting."""

    rule: Literal[
        "max-reps", "time-budget", "min-reps", "target-ci", "interrupted", "failed", "worded"
    ]
    rounds: Count | None = None  # timed rounds done (None: not recorded)
    # the setting it stopped at: max reps, min reps, target CI (a fraction), time budget (s)
    limit: NonNegative | None = None
    flag: Literal["", "--max-reps", "--repeat"] = ""  # max reps: the option as typed
    headlines: Count | None = None  # target CI: the headline ratios within it
    elapsed_s: NonNegative | None = None  # time budget: seconds spent
    next_round_s: NonNegative | None = None  # time budget: what another round would take
    short_of: AtLeastOne | None = None  # time budget: the --min-reps not reached
    text: str = ""  # failed: the error's first line; worded: an older file's own words


@dataclass(frozen=True)
class Estimate:
    """What the progress display's time-left estimate said when the job was half done (by
    the wall time the job took in all), and how far off it was. Every workload's run file
    holds one (schema 4; DebitCredit's version 4); wisconsin.measure.progress makes it."""

    job_s: Positive  # the job's wall time, from its start to its run file
    at_s: NonNegative  # when the estimate was made: the last one at or before job_s / 2
    left_s: NonNegative  # the time left it said then
    # (at_s + left_s) / job_s - 1: the estimated total against the actual, signed (> 0: it
    # said the job would take longer than it did)
    error: Finite
    measured_steps: Count  # the steps whose measured times it was estimated from then


def estimate_text(e: Estimate | None) -> str:
    """The time-left estimate at half the job, in words ("not recorded": a file before it)."""
    if e is None:
        return "not recorded"
    return (
        f"at half the job ({e.at_s:.0f} s) it said ~{e.left_s:.0f} s left, "
        f"{e.at_s + e.left_s:.0f} s in all; the job took {e.job_s:.0f} s: {e.error:+.0%} off "
        f"(from {e.measured_steps} measured steps)"
    )


@dataclass(frozen=True)
class Run:
    schema_version: Int
    started_utc: Utc
    finished_utc: UtcOrEmpty
    environment: Environment
    config: RunConfig
    topology: Topology
    tables: tuple[TableInfo, ...]
    measurements: tuple[Measurement, ...]
    notes: tuple[str, ...] = field(default=())
    # --- schema 2
    status: Status = "complete"  # a failed or interrupted run is "incomplete"
    calibration: Calibration | None = None
    baseline: tuple[Measurement, ...] = ()  # one in-process DuckDB thread, unpartitioned table
    rounds: tuple[Round, ...] = ()
    # --- schema 3 (schema 2's stop_reason sentence is read into it when migrated)
    stop: Stop | None = None  # why the rounds stopped; None: not recorded
    # the notes state in words what later files record as fields (a migrated file): a
    # report shows the notes, and does not say those facts a second time
    notes_say_facts: bool = False
    # --- schema 4
    estimate: Estimate | None = None  # the time-left estimate at half the job; None: not recorded
    # where the run's time went (None: not recorded, e.g. a resumed or incomplete run)
    time_spent: TimeSpent | None = None

    @property
    def stop_reason(self) -> str:
        """Why the rounds stopped, in words ("" if not recorded)."""
        return facts.stop_text(self.stop) or ""

    def block_of_round(self) -> dict[int, int]:
        """round index -> its block (1 for every round of a file written before blocks)."""
        return {r.index: r.block for r in self.rounds}

    def blocks_done(self) -> int:
        """Distinct blocks among the timed rounds (1 for a file written before blocks)."""
        return len({r.block for r in self.rounds if r.index > 0}) or 1

    def times_by_block(self, m: Measurement) -> dict[int, tuple[float, ...]]:
        """block -> m's timed repetitions in it, in block order: the run's replicates (one
        block for a file written before blocks)."""
        of = self.block_of_round()
        groups: dict[int, list[float]] = {}
        for r in m.repetitions:
            block = of.get(r.round, 1) if r.round is not None else 1
            groups.setdefault(block, []).append(r.wall_s)
        return {b: tuple(groups[b]) for b in sorted(groups)}

    def measurement(self, table: str, query: str) -> Measurement | None:
        for m in self.measurements:
            if m.table == table and m.query == query:
                return m
        return None


def to_dict(obj) -> dict:
    return dataclasses.asdict(obj)


# Types, ranges and finiteness are the fields' own (jsonfields.Positive, Count, ...), checked
# by msgspec on load. A wall time must be > 0: perf_counter around a query never reads 0,
# and medians of it are denominators (speedup, bound). Partition shares (engine, CPU) may be 0
# at coarse clock resolution. start_delay_s may be < 0: across hosts it is a difference of
# two clocks.


JOURNAL = ".journal"  # a run's journal beside its file (measure/journal.py)


def _other_kind(data, name: str) -> str | None:
    """What a file that is no Wisconsin run file is, in words, with what to give instead."""
    run = name.removesuffix(JOURNAL)
    if name.endswith(JOURNAL) or (isinstance(data, dict) and data.get("t") == "base"):
        return (
            f"a run's journal, not a run file: give the run file it belongs to "
            f"(`wisconsin run --resume {run}` reads the journal beside it)"
        )
    if not isinstance(data, dict):
        return None
    if data.get("kind") == "wisconsin-ab":
        return f"an A/B file, not a run file: compare its sides with `wisconsin compare {name}`"
    if "workload" in data:
        partial = name.endswith(".partial")
        return f"a {str(data['workload'])[:40]!r} run file, not a Wisconsin one" + (
            f": continue its bench with `wisconsin bench --workload debitcredit --resume {name}`"
            if partial
            else ""
        )
    return None


# A document holding none of these is another tool's JSON, not a damaged run file.
RUN_KEYS = frozenset({"schema_version", "config", "environment", "measurements", "baseline"})


def from_dict(data: dict, name: str = "") -> Run:
    other = _other_kind(data, name)
    if other:
        raise RunFileError(other)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version is None and not (isinstance(data, dict) and RUN_KEYS & data.keys()):
        raise RunFileError(
            "not a run file: a JSON document with none of a run file's fields "
            f"({', '.join(sorted(RUN_KEYS))})"
        )
    if version not in READABLE_VERSIONS:
        raise RunFileError(
            f"run file schema version {version!r} is not supported (this wisconsin reads "
            f"versions {', '.join(map(str, READABLE_VERSIONS))})"
        )
    data = migrate.migrate(data)
    try:
        return jsonfields.convert(Run, data)
    except jsonfields.FieldError as exc:
        raise RunFileError(f"not a valid run file: {exc}") from None


def load(path: str | os.PathLike) -> Run:
    """Read a run file; RunFileError on a missing, malformed or unknown-version file."""
    p = Path(path)
    if not p.exists():
        raise RunFileError(f"{p}: no such run file")
    if p.name.endswith(JOURNAL):  # JSON lines: not even readable as one document
        raise RunFileError(f"{p}: {_other_kind(None, str(p))}")
    data = atomic.read_json(p, "not a readable run file:", error=RunFileError)
    try:
        return from_dict(data, str(p))
    except RunFileError as exc:
        raise RunFileError(f"{p}: {exc}") from None


def save(run: Run, path: str | os.PathLike) -> Path:
    """Write the run atomically; refuse to overwrite an existing file."""
    p = Path(path)
    if p.exists():
        raise RunFileError(f"{p} already exists; run files are never overwritten")
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        # overwrite=False links into place: no silent overwrite even in a race.
        atomic.write_text(p, json.dumps(to_dict(run), indent=1) + "\n", overwrite=False)
    except atomic.AlreadyExistsError:
        raise RunFileError(f"{p} already exists; run files are never overwritten") from None
    return p
