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


ENGINES: dict[str, EngineKind] = {
    e.name: e
    for e in (
        EngineKind(
            "shared-nothing",
            "wisconsin.shared_nothing:SharedNothingEngine",
            "one worker process per partition (a local Dask cluster, or --cluster)",
            accepts_cluster=True,
        ),
        EngineKind(
            "shared-memory",
            "wisconsin.shared_memory:SharedMemoryEngine",
            "one DuckDB with P threads over the attached partitions",
            accepts_cluster=False,
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


def make_engine(mode: str, config):
    """A new engine of this mode (not started)."""
    check_cluster(mode, config.cluster)
    module, cls = kind(mode).factory.split(":")
    return getattr(importlib.import_module(module), cls)(config)
