"""The Wisconsin benchmark as a workload (the first; see wisconsin.workloads).

Where its parts live: the schema and rows in wisconsin.generator (docs/schema.md), table
builds in wisconsin.builds, the queries in wisconsin.workloads.wisconsin.queries (one entry each, with the SQL
in queries/*.sql, the expected answer from wisconsin.store.expect and the check in
wisconsin.workloads.wisconsin.verify), the measurement loop in wisconsin.measure.runner, run files in
wisconsin.runfiles.runfile, and the metrics (speedup, batch scaleup) in wisconsin.analysis.metrics.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from wisconsin import WisconsinError, atomic
from wisconsin.workloads.options import (
    BenchOptions,
    Console,
    InfoOptions,
    Outcome,
    RepairOptions,
    RunCommandOptions,
    Takes,
)

DESCRIPTION = "the batch queries (speedup on F tables, batch scaleup on G tables)"

# what `bench` (its default workload) reads; any other option given is refused, not ignored
BENCH_TAKES = Takes(
    frozenset(
        {
            "workload",
            "data_dir",
            "out",
            "partitions",
            "seed",
            "repeat",
            "quiet",
            "preset",
            "mode",
            "cache",
            "min_reps",
            "max_reps",
            "target_ci",
            "blocks",
            "transport",
            "time_budget",
            "disk_budget",
            "cluster_address",
            "tls_ca",
            "tls_cert",
            "tls_key",
            "worker_data",
        }
    ),  # fmt: skip
    "{given}: DebitCredit options (--workload debitcredit)",
    own=(
        (
            "resume_path",
            "--resume continues an interrupted DebitCredit bench; for a Wisconsin run use "
            "`wisconsin run --resume RUN.json`",
        ),
    ),
)


def bench(opts: BenchOptions, console: Console) -> Outcome:
    """`wisconsin bench`: size the tables (a preset, or calibrated), generate, run, report,
    plot."""
    from wisconsin.workloads.wisconsin.commands import bench

    return bench(opts, console)


def info_table(
    table_dir: str | os.PathLike, opts: InfoOptions | None = None
) -> tuple[list[str], str | None]:
    """`wisconsin info` on a table: its manifest and what the check found (lines, None or
    wisconsin.DAMAGED)."""
    from wisconsin.workloads.wisconsin.tables import info

    return info(opts or InfoOptions(str(table_dir)))


def repair_table(
    table_dir: str | os.PathLike, opts: RepairOptions | None = None, console: Console | None = None
) -> tuple[list[str], str | None]:
    """`wisconsin repair`: rebuild the damaged partitions, settle an interrupted update
    (what it cannot repair is raised)."""
    from wisconsin.workloads.wisconsin.tables import repair

    return repair(opts or RepairOptions(str(table_dir)), console or Console()), None


def run(opts: RunCommandOptions, progress=None) -> tuple:
    """`wisconsin run`: measure the tables into a run file, or with --resume continue an
    incomplete one; (Run, its path)."""
    from wisconsin.workloads.wisconsin.commands import run

    return run(opts, progress)


def run_options(opts: RunCommandOptions):
    """The runner's RunOptions of a `run` command line (each side of `wisconsin ab`)."""
    from wisconsin.workloads.wisconsin.commands import run_options

    return run_options(opts)


def owns(path: str | os.PathLike) -> bool:
    """A Wisconsin run file names no other workload (its files before the `workload` field
    had none). The registry makes this the default: it asks the others first."""
    try:
        data = atomic.read_json(path, "run file")
    except WisconsinError:
        return True  # its loader says what is wrong with it
    return not isinstance(data, dict) or data.get("workload", "wisconsin") == "wisconsin"


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text", full: bool = True) -> str:
    """full=False: text is one screen, the verdict block."""
    from wisconsin.workloads.wisconsin.report import report_files

    return report_files(paths, fmt, full=full)


def plot_files(paths: Sequence[str | os.PathLike], out_dir=None, force: bool = False) -> list[Path]:
    from wisconsin.workloads.wisconsin.plots import plot_files

    return plot_files(paths, out_dir, force=force)


def compare_files(a: Sequence, b: Sequence, force: bool = False, fmt: str = "text") -> str:
    from wisconsin.workloads.wisconsin.compare import compare_files

    return compare_files(list(a), list(b), force=force, fmt=fmt)


def slower_than(a: Sequence, b: Sequence, factor: float, force: bool = False) -> str:
    """`compare --fail-slower`: why B fails the gate, "" if it passes."""
    from wisconsin.workloads.wisconsin.compare import slower_than

    return slower_than(list(a), list(b), factor, force=force)


def audit_file(path: str | os.PathLike) -> list:
    from wisconsin.workloads.wisconsin.audit import audit_file

    return audit_file(path)
