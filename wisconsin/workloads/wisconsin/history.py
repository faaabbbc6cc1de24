"""`wisconsin history`: each point's median time across runs, in date order, with a change
between neighbours flagged only where `compare`'s own statistics find one (computed in
wisconsin.analysis.history; rendered here).

Runs are grouped first, by machine and configuration; each group is its own series, and the
text says how the runs were split."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.analysis.history import Series, group_series
from wisconsin.workloads.wisconsin.queries import QUERIES
from wisconsin.workloads.wisconsin.runs import load_runs

FORMATS = ("text", "json")


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
    """The run files given (or found in the directories given) as series
    (wisconsin.analysis.history), comparisons in the paper's query order."""
    files = run_paths(paths)
    return group_series(files, load_runs(files), order=tuple(QUERIES))


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
