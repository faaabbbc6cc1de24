"""What every OLTP workload's run file does alike: saved by the project's atomic writer and
never overwritten, recognised by its `workload` key, read as a JSON object of its workload."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, atomic, outputs
from wisconsin.jsonfields import Count, Finite, NonNegative, Positive
from wisconsin.runfiles import runfile as common


@dataclass(frozen=True)
class PartitionHost:
    """Where one partition ran on a cluster: its worker, that worker's host and address,
    and the partition file's path on that host."""

    part: Count
    worker: str
    host: str
    address: str  # its peer port, host:port
    path: str
    cores: Count = 0  # the cores its worker's process may run on (0: not recorded)
    machine: str = ""  # the host's kernel boot id: simulated hosts on one machine share it


@dataclass(frozen=True)
class Link:
    """One peer link between two partitions' hosts, measured at the servers' start."""

    source: Count  # the partition that connected
    target: Count
    rtt_s: Positive  # median of oltp.probe.ROUND_TRIPS round trips of a small message
    rtt_min_s: Positive
    rtt_max_s: Positive
    bandwidth_bps: NonNegative  # bytes per second, both directions of the echo counted


@dataclass(frozen=True)
class ClusterRecord:
    """A P measured on a Dask cluster: the scheduler, each partition's host, each link."""

    scheduler: str
    tls: bool
    hosts: tuple[PartitionHost, ...]
    links: tuple[Link, ...]


@dataclass(frozen=True)
class KindCpu:
    """One transaction type's committed transactions at one partition in one step, and the
    CPU their terminal threads spent on them (oltp.cpu), local and distributed apart."""

    kind: str
    local_s: NonNegative
    local: Count
    home_s: NonNegative  # the distributed ones' home side: its half, the 2PC messages sent
    distributed: Count
    sent: Count  # remote halves the distributed ones decided (one each in DebitCredit)


@dataclass(frozen=True)
class PartitionCpu:
    """One partition process's CPU over one step: its total, and what was charged to work."""

    total_s: NonNegative  # the process's CPU clock over the step (the step's cpu_s)
    kinds: tuple[KindCpu, ...]
    halves_s: NonNegative  # its peer threads serving remote halves: prepare, commit, abort
    halves: Count  # remote halves committed here


@dataclass(frozen=True)
class CpuFigure:
    """Seconds of CPU: the median, lowest and highest over n partition-steps."""

    median: Finite
    low: Finite
    high: Finite
    n: Count


@dataclass(frozen=True)
class RemoteCpu:
    """CPU per local transaction and extra CPU per remote half over a P's steps (oltp.cpu):
    pooled over every partition-step, and spread over the partition-steps that had enough
    of each to say."""

    local_s: Finite | None  # pooled: local CPU / local transactions
    extra_s: Finite | None  # pooled: extra CPU per remote half (None: no remote half)
    local_spread: CpuFigure | None
    extra_spread: CpuFigure | None
    halves: Count  # remote halves committed
    attributed_s: NonNegative  # CPU charged to transactions and halves
    total_s: NonNegative  # the partition processes' CPU over the same steps


def cluster_record(hosts, address: str, tls: bool, paths) -> ClusterRecord:
    """The record of a run's hosts (oltp.hosted.Hosts: each partition's place, peer port
    and links' figures) and its partitions' paths."""
    places, figures = hosts.places, hosts.link_figures
    return ClusterRecord(
        scheduler=address,
        tls=tls,
        hosts=tuple(
            PartitionHost(
                p, pl.worker, pl.host, hosts.peer_addresses[p], str(paths[p]), pl.cores, pl.machine
            )
            for p, pl in enumerate(places)
        ),
        links=tuple(
            Link(p, q, **f) for p, row in sorted(figures.items()) for q, f in sorted(row.items())
        ),
    )


def save(run, path: str | os.PathLike) -> Path:
    """Atomic, never overwrites (the project's writer). The file is noted as published
    (outputs.published): a ^C after it is written must not say no run file was written."""
    try:
        saved = common.save(run, path)
    except common.RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    outputs.note_published(saved)
    return saved


def is_workload(path: str | os.PathLike, workload: str) -> bool:
    """True if the file is a readable JSON object whose workload is this one."""
    try:
        data = atomic.read_json(path, "run file")
    except WisconsinError:
        return False
    return isinstance(data, dict) and data.get("workload") == workload


def read(path: str | os.PathLike, workload: str, label: str) -> dict:
    """The run file's JSON object; one line if it is missing, unreadable or another's."""
    p = Path(path)
    if not p.exists():
        raise WisconsinError(f"{p}: no such run file")
    data = atomic.read_json(p, "not a readable run file:")
    if not isinstance(data, dict) or data.get("workload") != workload:
        raise WisconsinError(f"{p}: not a {label} run file")
    return data
