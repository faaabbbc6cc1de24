"""Each point's median time (and each headline ratio) across runs, in commit and date order,
with its interval; a change between neighbours flagged only where the comparison's own tests
(wisconsin.analysis.comparison) find one.

Runs are grouped first: a change means something only between runs of one machine (host,
CPU, usable cores) and one configuration (tables, seed, mode, cache, scan variant); each
group is its own series. Within a series the commits come in the order of their first run,
and each commit's runs in date order, so that a step between commits is one step."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from wisconsin.analysis.comparison import compare, differences
from wisconsin.analysis.metrics import compute_points
from wisconsin.analysis.stats import Interval
from wisconsin.analysis.verdict import top_points
from wisconsin.runfiles.runfile import Run

RATIO_NAME = {"F": "speedup", "G": "scaleup"}


@dataclass(frozen=True)
class Figure:
    """A value with its 95% interval (lo/hi None: none to estimate it from)."""

    name: str  # "F4 scan" (a point's median s), "speedup scan P=4", "curve F scan" (a change)
    value: float
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class Entry:
    path: str
    started_utc: str
    commit: str
    times: tuple[Figure, ...]  # each point's median seconds with its interval
    ratios: tuple[Figure, ...]  # each query's speedup (scaleup) at the largest P
    verdict: str = ""  # against the run before: compare's word ("" for the first)
    changes: tuple[Figure, ...] = ()  # significant T(this)/T(before), points and curves
    # each table's T(this)/T(before) over its queries (compare's whole curve of a table)
    tables: tuple[Figure, ...] = ()
    audit: str = ""  # the workload's audit verdict of this run ("" when not asked)
    # right before the run (its noise check; None: not run): other processes' CPU in cores,
    # and the 1-minute load average (busy cores saturate at the cores; the load does not)
    busy_cores: float | None = None
    load_1m: float | None = None
    noise: tuple[str, ...] = ()  # what the noise check found may disturb the timings


@dataclass(frozen=True)
class Series:
    machine: str
    configuration: str
    entries: tuple[Entry, ...]

    @property
    def flagged(self) -> int:
        """Steps between neighbours with a change flagged."""
        return sum(1 for e in self.entries if e.changes)


def _machine(r: Run) -> str:
    e = r.environment
    return f"{e.hostname}, {e.cpu_model}, {e.usable_cores} cores"


def _configuration(r: Run) -> str:
    c = r.config
    tables = ",".join(sorted(t.name for t in r.tables))
    return f"{c.mode}, {c.cache or 'warm'} cache, {c.scan_variant}, seed {c.seed}, {tables}"


def _commit_order(group: list[tuple[Path, Run]]) -> list[tuple[Path, Run]]:
    """Commits in the order of their first run, each commit's runs by date."""
    first: dict[str, int] = {}
    for i, (_, r) in enumerate(group):  # group is in date order
        first.setdefault(r.environment.git_commit, i)
    return sorted(group, key=lambda fr: first[fr[1].environment.git_commit])  # stable


def group_series(
    files: Sequence[Path],
    runs: Sequence[Run],
    order: Sequence[str] = (),
    audit: Callable[[Run], str] | None = None,
) -> list[Series]:
    """The runs (loaded from files) grouped by machine and configuration, each group in
    commit and date order; order: the query order of the comparisons' rows
    (comparison.compare); audit: a run's audit verdict, as the workload words it."""
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
    return [_series(_commit_order(g), order, audit) for g in groups]


def _figure(name: str, i: Interval) -> Figure:
    return Figure(name, float(i.value), i.lo, i.hi)


def _entry(f: Path, r: Run, audit: Callable[[Run], str] | None) -> Entry:
    points = compute_points(r)
    times = tuple(_figure(f"{p.table} {p.query}", p.time) for p in points)
    ratios = tuple(
        _figure(f"{RATIO_NAME[k]} {p.query} P={p.P}", p.ratio)
        for k in ("F", "G")
        if any(p.kind == k for p in points)
        for p in top_points([p for p in points if p.kind == k])
    )
    pre = r.environment.preflight
    return Entry(str(f), r.started_utc, r.environment.git_commit[:12], times, ratios,
                 audit=audit(r) if audit else "", busy_cores=pre.busy_cores if pre else None,
                 load_1m=pre.load_1m if pre else None, noise=pre.findings if pre else ())  # fmt: skip


def _series(
    group: list[tuple[Path, Run]], order: Sequence[str], audit: Callable[[Run], str] | None
) -> Series:
    entries = []
    for i, (f, r) in enumerate(group):
        entry = _entry(f, r, audit)
        if i:
            # neighbours of one group measure the same tables: nothing to force
            c = compare([group[i - 1][1]], [r], order=order)
            changes = [
                _figure(f"{x.table} {x.query}", x.time_ratio) for x in c.rows if x.significant
            ] + [_figure(f"curve {x.label}", x.time_ratio) for x in c.curves if x.significant]
            tables = tuple(_figure(f"curve {x.label}", x.time_ratio) for x in c.curves if x.table)
            entry = dataclasses.replace(
                entry, verdict=c.verdict, changes=tuple(changes), tables=tables
            )
        entries.append(entry)
    return Series(_machine(group[0][1]), _configuration(group[0][1]), tuple(entries))
