"""`wisconsin history`: each point's median time across runs, in date order, with a change
between neighbours flagged only where `compare`'s own statistics find one.

Runs are grouped first: a change means something only between runs of one machine (host,
CPU, usable cores) and one configuration (tables, seed, mode, cache, scan variant); each
group is its own series, and the text says how the runs were split."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.analysis.stats import median
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin.compare import compare_runs, differences
from wisconsin.workloads.wisconsin.runs import load_runs

FORMATS = ("text", "json")


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


def run_paths(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Run files given, or found directly in directories given (the tool's JSON run files)."""
    from wisconsin.workloads.inventory import file_kind

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += [f for f in sorted(p.glob("*.json")) if file_kind(f) == "wisconsin run"]
        else:
            out.append(p)
    if not out:
        raise WisconsinError("no Wisconsin run files among the paths given")
    return out


def history(paths: Iterable[str | os.PathLike]) -> list[Series]:
    files = run_paths(paths)
    runs = load_runs(files)
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
    return [_series(g) for g in groups]


def _series(group: list[tuple[Path, Run]]) -> Series:
    entries = []
    for i, (f, r) in enumerate(group):
        times = tuple(
            (f"{m.table} {m.query}", float(median(m.times))) for m in r.measurements if m.times
        )
        entry = Entry(str(f), r.started_utc, r.environment.git_commit[:12], times)
        if i:
            c = compare_runs([group[i - 1][1]], [r])
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


def render(series: list[Series], fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps([asdict(s) for s in series], indent=1) + "\n"
    if fmt != "text":
        raise WisconsinError(f"unknown history format {fmt!r}; choose from {', '.join(FORMATS)}")
    out = []
    if len(series) > 1:
        out.append(
            f"{len(series)} series: runs of different machines or configurations are not "
            "compared with each other"
        )
    for s in series:
        out += ["", f"{s.machine} | {s.configuration}: {len(s.entries)} runs"]
        for e in s.entries:
            head = f"  {e.started_utc}  {e.commit or '?':12}  {Path(e.path).name}"
            if not e.verdict:
                out.append(head)
                continue
            flagged = "; ".join(
                f"{c.what} {c.ratio:.2f}x" + (f" [{c.lo:.2f}-{c.hi:.2f}]" if c.lo else "")
                for c in sorted(e.changes, key=lambda c: -abs(c.ratio - 1))[:4]
            )
            more = len(e.changes) - 4
            out.append(
                f"{head}  vs the run before: {e.verdict}"
                + (f": {flagged}" + (f" (+{more} more)" if more > 0 else "") if flagged else "")
            )
        names = [name for name, _ in s.entries[0].times]
        out.append("  median seconds per point, run by run:")
        for name in names:
            vals = [dict(e.times).get(name) for e in s.entries]
            out.append(
                f"    {name:<14}"
                + " ".join(f"{v:9.4f}" if v is not None else "        -" for v in vals)
            )
    return "\n".join(out).lstrip("\n") + "\n"
