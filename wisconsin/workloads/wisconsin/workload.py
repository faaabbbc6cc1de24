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

DESCRIPTION = "the batch queries (speedup on F tables, batch scaleup on G tables)"


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
