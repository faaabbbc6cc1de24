"""The workloads the tool measures, by name: the one place the CLI learns what a run file
is and which module reports, plots, compares and audits it.

A workload is a module with these entry points (imported on use, so `--help` stays light):

    DESCRIPTION                           one line, for `bench --workload` help
    owns(path) -> bool                    is this run file one of mine
    owns_table(dir) -> bool               (optional) is this table directory one of mine
                                          (the default workload's are those none claims)
    info_table(dir, InfoOptions) -> (lines, kind)  `wisconsin info` (lines starting
                                          "problem:" or "Error:" go to standard error;
                                          kind None, or wisconsin.DAMAGED: the check failed)
    repair_table(dir, RepairOptions, Console) -> (lines, kind)  `wisconsin repair` (kind
                                          None, or wisconsin.DAMAGED: still damaged after it)
    INFO_TAKES, REPAIR_TAKES              (optional) the options of info and repair it reads
                                          (options.Takes); without them, every one
    report_files(paths, fmt) -> str       `wisconsin report`
    plot_files(paths, out_dir, force) -> [Path]  `wisconsin plot` (force: replace figures)
    compare_files(a, b, force, fmt) -> str  `wisconsin compare` (a, b: lists of run files)
    audit_file(path) -> [audit.Rule]      `wisconsin audit`
    slower_than(a, b, factor, force) -> str  (optional) `compare --fail-slower`: why B fails
    BENCH_TAKES                           the `bench` options it reads (options.Takes): any
                                          other given is refused in the entry's own words
    bench(BenchOptions, Console) -> Outcome  `wisconsin bench --workload NAME`: the lines it
                                          prints last, and where its disk went

A command's options reach an entry point as one frozen object (wisconsin.workloads.options);
the CLI only parses, calls the entry point and prints.

The Wisconsin benchmark (`wisconsin.py`: the five batch queries of wisconsin/queries.py on
F and G tables) is the first; DebitCredit (`debitcredit/`: OLTP scaleup) the second; TPC-C
(`tpcc/`: TPC-C-derived OLTP on partitions) the third.
Adding one: a module with the entry points above and one line in WORKLOADS.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Sequence
from types import ModuleType

from wisconsin import WisconsinError, atomic

# name -> its module; the first is the default, and owns run files no other one claims
WORKLOADS: dict[str, str] = {
    "wisconsin": "wisconsin.workloads.wisconsin.workload",
    "debitcredit": "wisconsin.workloads.debitcredit.workload",
    "tpcc": "wisconsin.workloads.tpcc.workload",
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


def of_table(table_dir: str | os.PathLike) -> str:
    """The name of the workload a table directory belongs to (the default if none claims
    it: its manifest reader says what is wrong with it)."""
    for name in NAMES[1:]:
        owns_table = getattr(get(name), "owns_table", None)
        if owns_table is not None and owns_table(table_dir):
            return name
    return NAMES[0]


# What a run measured, by workload: Wisconsin's timed and baseline measurements, DebitCredit's
# results per partition count, TPC-C's result. Settings, notes and verdicts are left out: they say what was
# asked or concluded, not what was measured.
MEASURED = ("measurements", "baseline", "results", "result")


def identity(path: str | os.PathLike) -> str | None:
    """What tells one run from another: when and on which host it started, and every record
    it measured (a digest). A copy of a run file under another name has the same identity;
    two runs never do (their timings differ). None for a file that cannot be read or does
    not say when it started or what it measured: its loader says what is wrong with it."""
    try:
        data = atomic.read_json(path, "run file")
    except WisconsinError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("started_utc"), str):
        return None
    if not any(k in data for k in MEASURED):
        return None
    env = data.get("environment")
    key = {
        "started_utc": data["started_utc"],
        "hostname": env.get("hostname") if isinstance(env, dict) else None,
        **{k: data[k] for k in MEASURED if k in data},
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def of_runs(paths: Sequence[str | os.PathLike]) -> ModuleType:
    """The one workload of these run files; WisconsinError if they mix workloads or name
    one run twice (one file twice, or two copies of one run)."""
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
    # A copy under another name is the same evidence as the file it was copied from.
    runs: dict[str, int] = {}
    for i, p in enumerate(paths):
        key = identity(p)
        if key is not None and runs.setdefault(key, i) != i:
            raise WisconsinError(
                f"{paths[runs[key]]} and {p} are the same run (same start, host and "
                "measurements; a copy?): each run counts once; give distinct runs"
            )
    names = {of_run(p) for p in paths}
    if len(names) > 1:
        raise WisconsinError(
            f"run files of different workloads ({', '.join(sorted(names))}): "
            "give the files of one workload at a time"
        )
    return get(names.pop() if names else NAMES[0])
