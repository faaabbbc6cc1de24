"""The engine registry: every architecture the runner can measure, by name.

Adding an engine: one module with a class that implements `engine.Engine`, and one entry
here. The CLI's --mode choices, the runner's mode list and the factory all read this table,
and the rule "--cluster needs an engine that accepts one" is checked here only. Light on
purpose (the CLI imports it for its choices): engine modules are imported on use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from wisconsin import WisconsinError


@dataclass(frozen=True)
class EngineKind:
    name: str  # the --mode value, recorded in run files
    factory: str  # "module:Class", constructed with an EngineConfig
    description: str
    accepts_cluster: bool  # can run on a remote Dask cluster (--cluster)
    instance_per_partition: bool  # a DuckDB instance per partition (else one for all)


ENGINES: dict[str, EngineKind] = {
    e.name: e
    for e in (
        EngineKind(
            "shared-nothing",
            "wisconsin.engines.shared_nothing:SharedNothingEngine",
            "one worker process per partition (a local Dask cluster, or --cluster)",
            accepts_cluster=True,
            instance_per_partition=True,
        ),
        EngineKind(
            "shared-memory",
            "wisconsin.engines.shared_memory:SharedMemoryEngine",
            "one DuckDB with P threads over the attached partitions",
            accepts_cluster=False,
            instance_per_partition=False,
        ),
    )
}
MODES = tuple(ENGINES)


def kind(mode: str) -> EngineKind:
    try:
        return ENGINES[mode]
    except KeyError:
        raise WisconsinError(f"unknown mode {mode!r}; choose from {', '.join(ENGINES)}") from None


def check_cluster(mode: str, cluster: str | None) -> None:
    """The one place the cluster rule lives."""
    if cluster and not kind(mode).accepts_cluster:
        able = " or ".join(n for n, e in ENGINES.items() if e.accepts_cluster)
        raise WisconsinError(f"--cluster needs --mode {able}")


def default_memory_limit(mode: str, partitions) -> str:
    """DuckDB's memory_limit per instance when none is given: 60% of RAM over the most
    instances the mode opens at once (a partition each, or one for all), at least 256 MB."""
    import psutil

    total = psutil.virtual_memory().total
    share = 0.6 / (max(partitions) if kind(mode).instance_per_partition else 1)
    return f"{max(256, int(total * share) // 2**20)}MB"


def make_engine(mode: str, config):
    """A new engine of this mode (not started)."""
    check_cluster(mode, config.cluster)
    module, cls = kind(mode).factory.split(":")
    return getattr(importlib.import_module(module), cls)(config)
