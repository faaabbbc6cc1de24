"""Each point's median time across runs, in date order, with a change between neighbours
flagged only where the comparison's own tests (wisconsin.analysis.comparison) find one.

Runs are grouped first: a change means something only between runs of one machine (host,
CPU, usable cores) and one configuration (tables, seed, mode, cache, scan variant); each
group is its own series."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wisconsin.analysis.comparison import compare, differences
from wisconsin.analysis.stats import median
from wisconsin.runfiles.runfile import Run


@dataclass(frozen=True)
class Change:
    """A significant difference between a run and the one before it (compare's test)."""

    what: str  # "F4 scan" (a point) or "curve F scan" / "curve F4" (a whole curve)
    ratio: float  # T(this run) / T(the run before)
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class Entry:
    path: str
    started_utc: str
    commit: str
    times: tuple[tuple[str, float], ...]  # "F4 scan" -> median seconds
    verdict: str = ""  # against the run before: compare's word ("" for the first)
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class Series:
    machine: str
    configuration: str
    entries: tuple[Entry, ...]


def _machine(r: Run) -> str:
    e = r.environment
    return f"{e.hostname}, {e.cpu_model}, {e.usable_cores} cores"


def _configuration(r: Run) -> str:
    c = r.config
    tables = ",".join(sorted(t.name for t in r.tables))
    return f"{c.mode}, {c.cache or 'warm'} cache, {c.scan_variant}, seed {c.seed}, {tables}"


def group_series(
    files: Sequence[Path], runs: Sequence[Run], order: Sequence[str] = ()
) -> list[Series]:
    """The runs (loaded from files) grouped by machine and configuration, each group in date
    order; order: the query order of the comparisons' rows (comparison.compare)."""
    groups: list[list[tuple[Path, Run]]] = []
    for f, r in sorted(zip(files, runs, strict=True), key=lambda fr: fr[1].started_utc):
        for g in groups:
            first = g[0][1]
            same = _machine(first) == _machine(r) and _configuration(first) == _configuration(r)
            if same and not differences(first, r):
                g.append((f, r))
                break
        else:
            groups.append([(f, r)])
    return [_series(g, order) for g in groups]


def _series(group: list[tuple[Path, Run]], order: Sequence[str]) -> Series:
    entries = []
    for i, (f, r) in enumerate(group):
        times = tuple(
            (f"{m.table} {m.query}", float(median(m.times))) for m in r.measurements if m.times
        )
        entry = Entry(str(f), r.started_utc, r.environment.git_commit[:12], times)
        if i:
            # neighbours of one group measure the same tables: nothing to force
            c = compare([group[i - 1][1]], [r], order=order)
            changes = [
                Change(f"{x.table} {x.query}", x.time_ratio.value, x.time_ratio.lo, x.time_ratio.hi)
                for x in c.rows
                if x.significant
            ] + [
                Change(f"curve {x.label}", x.time_ratio.value, x.time_ratio.lo, x.time_ratio.hi)
                for x in c.curves
                if x.significant
            ]
            entry = Entry(entry.path, r.started_utc, entry.commit, times, c.verdict, tuple(changes))
        entries.append(entry)
    return Series(_machine(group[0][1]), _configuration(group[0][1]), tuple(entries))
