"""Wisconsin run files as a report reads them: loaded (complete runs only) and pooled by
configuration."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from wisconsin import WisconsinError
from wisconsin.runfiles.runfile import Run, RunFileError, load


def load_runs(paths: Iterable[str | os.PathLike]) -> list[Run]:
    """Load run files; a missing, malformed or unknown-version file raises WisconsinError."""
    runs = []
    for p in paths:
        try:
            runs.append(load(p))
        except RunFileError as exc:
            raise WisconsinError(str(exc)) from None
        if runs[-1].status != "complete":  # a failed or interrupted run: not a result
            raise WisconsinError(
                f"{p}: an incomplete run ({runs[-1].stop_reason or 'stopped'}); continue "
                f"it with `wisconsin run --resume {p}`"
            )
    return runs


def configuration(run: Run) -> tuple:
    """What must be equal for runs to be replicates: machine, mode, tables, protocol."""
    cfg = run.config
    return (
        run.environment.hostname,
        run.environment.cpu_model,
        cfg.mode,
        cfg.cluster,
        cfg.scan_variant,
        cfg.cache,
        cfg.threads_per_worker,
        cfg.seed,
        tuple(sorted((t.name, t.rows, t.partitions, t.seed) for t in run.tables)),
    )


def group_runs(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs of one configuration pooled together (first-seen order); others stay apart."""
    groups: dict[tuple, list[Run]] = {}
    for r in runs:
        groups.setdefault(configuration(r), []).append(r)
    return list(groups.values())
