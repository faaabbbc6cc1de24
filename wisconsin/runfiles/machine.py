"""Where a run ran, as its run file records it: the machine (versions, hardware, the noise
check before the run) and the topology (hosts, workers, round trip, restarts, start-up).
Part of the run file's schema (runfile.Run); types and ranges as the fields declare them."""

from __future__ import annotations

from dataclasses import dataclass

from wisconsin.jsonfields import AtLeastOne, Count, NonNegative, Positive


@dataclass(frozen=True)
class Preflight:
    """The noise check right before the run (wisconsin.measure.preflight)."""

    governors: tuple[str, ...]  # cpufreq governors (() where none is exposed)
    busy_cores: NonNegative  # other processes' CPU, in cores, over half a second
    load_1m: NonNegative
    swap_used_bytes: Count
    cpu_quota: Positive | None  # cgroup v2 quota in cores; None: no quota
    findings: tuple[str, ...]  # what may disturb the timings, in words


@dataclass(frozen=True)
class Environment:
    tool_version: str
    git_commit: str
    python: str
    duckdb: str
    pyarrow: str
    numpy: str
    dask: str
    distributed: str
    os: str
    hostname: str
    cpu_model: str
    usable_cores: AtLeastOne
    memory_bytes: AtLeastOne
    # The guest hands freed memory back to its host (Linux free page reporting, e.g.
    # virtio-balloon on Firecracker): cold reads then fault pages in through the hypervisor.
    # None: not recorded (older run files) or not knowable here.
    free_page_reporting: bool | None = None
    # The kernel pages out idle memory on its own (a DAMON `pageout` scheme): page cache a
    # run left idle shrinks within minutes, and the freed pages go the host's way too.
    proactive_reclaim: bool | None = None
    preflight: Preflight | None = None  # None: not checked (files before 2026-11-25)


@dataclass(frozen=True)
class HostInfo:
    host: str
    workers: tuple[str, ...]
    cores: AtLeastOne
    memory_bytes: AtLeastOne
    # per worker, in the order of workers (() = not recorded): Dask threads, and Dask memory
    # limit in bytes (0 = none; DuckDB's "60%" default is then of memory_bytes)
    worker_nthreads: tuple[AtLeastOne, ...] = ()
    worker_memory_bytes: tuple[Count, ...] = ()


@dataclass(frozen=True)
class WorkerRestart:
    """A worker process that died while the run used it (its nanny or the cluster started
    another under the same name): seen when a table was opened or at the end of the run."""

    worker: str
    was: str  # its address before
    now: str  # its address after; "" if it had left the scheduler


@dataclass(frozen=True)
class Topology:
    """Where the work ran. Local modes have one host."""

    scheduler: str  # "" for shared-memory, "local" for a LocalCluster, else the address
    hosts: tuple[HostInfo, ...]
    rtt_s: NonNegative | None = None  # measured coordinator <-> worker round trip (median)
    worker_restarts: tuple[WorkerRestart, ...] = ()  # workers that died mid-run
    # --- schema 3: seconds the engine took to start (P local workers up, or connected to
    # the cluster) before the first round; None: not recorded
    start_s: NonNegative | None = None
