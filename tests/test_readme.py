"""The README's facts, checked against the code and the latest recorded result."""

from __future__ import annotations

import re
from pathlib import Path

from wisconsin.workloads.wisconsin.pipeline import BENCH_PARTITIONS
from wisconsin.workloads.wisconsin.presets import PRESETS

ROOT = Path(__file__).parent.parent
README = " ".join((ROOT / "README.md").read_text().split())  # lines joined


def _counts(ps) -> str:
    return "P = " + ", ".join(map(str, ps))


def test_partition_counts_are_the_codes():
    assert (
        f"`bench` on its defaults (sizes calibrated for the machine) runs F at "
        f"{_counts(BENCH_PARTITIONS)} and G at P up to the cores" in README
    )
    by_counts: dict[tuple[int, ...], list[str]] = {}
    for p in PRESETS.values():
        by_counts.setdefault(p.partitions, []).append(p.name)
    for counts, names in by_counts.items():
        said = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 else names[0]
        assert f"{said} {_counts(counts)}" in README, (said, counts)


def test_quickstart_timing_is_the_latest_recorded_one():
    def started(path):  # the file's date, then the time its header gives, if any
        head = path.read_text().splitlines()[
            0
        ]  # "# The README Quickstart ...: 2026-11-25 21:05 UTC"
        at = re.search(r"\d\d:\d\d", head)
        return path.name[:10], at.group(0) if at else "00:00"

    results = sorted((ROOT / "benchmarks/results").glob("*-quickstart-bench*.md"), key=started)
    latest = results[-1].read_text()
    took = re.search(
        r"whole command \(venv, install, bench\): \*\*\d+ s \((\d+ min \d+ s)\)\*\*", latest
    )
    assert took, results[-1]
    assert re.search(rf"the latest, on a (quiet|shared) machine, {took.group(1)}", README)
