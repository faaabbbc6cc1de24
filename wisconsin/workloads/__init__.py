"""The workloads the tool measures, by name: the one place the CLI learns what a run file
is and which module reports, plots, compares and audits it.

A workload is a module with these entry points (imported on use, so `--help` stays light):

    DESCRIPTION                           one line, for `bench --workload` help
    owns(path) -> bool                    is this run file one of mine
    report_files(paths, fmt) -> str       `wisconsin report`
    plot_files(paths, out_dir, force) -> [Path]  `wisconsin plot` (force: replace figures)
    compare_files(a, b, force, fmt) -> str  `wisconsin compare` (a, b: lists of run files)
    audit_file(path) -> [audit.Rule]      `wisconsin audit`

The Wisconsin benchmark (`wisconsin.py`: the five batch queries of wisconsin/queries.py on
F and G tables) is the first; DebitCredit (`debitcredit/`: OLTP scaleup) the second.
Adding one: a module with the entry points above and one line in WORKLOADS.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from types import ModuleType

from wisconsin import WisconsinError

# name -> its module; the first is the default, and owns run files no other one claims
WORKLOADS: dict[str, str] = {
    "wisconsin": "wisconsin.workloads.wisconsin",
    "debitcredit": "wisconsin.workloads.debitcredit.workload",
}
NAMES = tuple(WORKLOADS)


def get(name: str) -> ModuleType:
    try:
        return importlib.import_module(WORKLOADS[name])
    except KeyError:
        raise WisconsinError(f"unknown workload {name!r}; choose from {', '.join(NAMES)}") from None


def of_run(path: str | os.PathLike) -> str:
    """The name of the workload a run file belongs to (the default if none claims it, so
    its loader says what is wrong with the file)."""
    for name in NAMES[1:]:
        if get(name).owns(path):
            return name
    return NAMES[0]


def of_runs(paths: Sequence[str | os.PathLike]) -> ModuleType:
    """The one workload of these run files; WisconsinError if they mix workloads or name
    one file twice."""
    seen: dict[str, int] = {}
    for i, p in enumerate(paths):
        # One file given twice would be pooled as two independent replicates (or compared
        # with itself), narrowing intervals it has no evidence for.
        first = paths[seen.setdefault(os.path.realpath(p), i)]
        if seen[os.path.realpath(p)] != i:
            same = "" if str(first) == str(p) else f" (as {first})"
            raise WisconsinError(
                f"{p} is given twice{same}: each run file counts once; give distinct runs"
            )
    names = {of_run(p) for p in paths}
    if len(names) > 1:
        raise WisconsinError(
            f"run files of different workloads ({', '.join(sorted(names))}): "
            "give the files of one workload at a time"
        )
    return get(names.pop() if names else NAMES[0])
