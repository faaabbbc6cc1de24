"""Compare two runs of the same tables: time ratios, both runs' ratios, significance.

Runs of different tables (sizes, partition counts) or seeds measure different things and
are refused unless forced. Each side may be several runs of one configuration, pooled as
replicates (wisconsin.analysis.stats). Significance is scipy.stats.permutation_test on the
difference of mean repetition times (exact when the number of splits is small, else Monte
Carlo with a fixed seed).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wisconsin import WisconsinError
from wisconsin.analysis import stats
from wisconsin.analysis.metrics import Ratio, as_runs, compute_points
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin import tandem
from wisconsin.workloads.wisconsin.queries import QUERIES
from wisconsin.workloads.wisconsin.report import (
    Section,
    Table,
    configuration,
    fnum,
    interval_text,
    load_runs,
    render_document,
)

ALPHA = 0.05
FORMATS = ("text", "markdown", "json")
permutation_p = stats.permutation_p


@dataclass(frozen=True)
class Row:
    """One (table, query) measured in both runs."""

    query: str
    kind: str
    table: str
    P: int
    reps_a: int
    reps_b: int
    time_a: float  # median seconds
    time_b: float
    time_ratio: Ratio  # T_b / T_a with its 95% interval
    ratio_a: Ratio | None  # run A's speedup (F) or scaleup (G) at this P
    ratio_b: Ratio | None
    p_value: float
    significant: bool


@dataclass(frozen=True)
class Comparison:
    a: str  # run labels (start times)
    b: str
    differences: tuple[str, ...]  # non-empty only when forced
    rows: tuple[Row, ...]


def differences(a: Run, b: Run) -> list[str]:
    """What makes two runs measure different things (tables, sizes, partitions, seeds)."""
    out = []
    if a.config.seed != b.config.seed:
        out.append(f"seed differs: {a.config.seed} in A, {b.config.seed} in B")
    ta = {t.name: t for t in a.tables}
    tb = {t.name: t for t in b.tables}
    pa, pb = sorted({t.partitions for t in a.tables}), sorted({t.partitions for t in b.tables})
    if pa != pb:
        out.append(f"partition counts differ: {pa} in A, {pb} in B")
    if set(ta) != set(tb):
        only_a, only_b = sorted(set(ta) - set(tb)), sorted(set(tb) - set(ta))
        out.append(f"tables differ: only in A {only_a or '-'}, only in B {only_b or '-'}")
    for name in sorted(set(ta) & set(tb)):
        x, y = ta[name], tb[name]
        if (x.rows, x.partitions) != (y.rows, y.partitions):
            out.append(
                f"table {name} differs: {x.rows:,} rows/{x.partitions} partitions in A, "
                f"{y.rows:,} rows/{y.partitions} partitions in B"
            )
        if x.seed != y.seed and a.config.seed == b.config.seed:
            out.append(f"table {name} seed differs: {x.seed} in A, {y.seed} in B")
    return out


def compare_runs(
    a: Run | Sequence[Run],
    b: Run | Sequence[Run],
    force: bool = False,
    *,
    alpha: float = ALPHA,
) -> Comparison:
    """Per (table, query) in both sides: T_b/T_a, both ratios, permutation p-value.

    Each side is a run or several runs of one configuration (pooled as replicates). Raises
    WisconsinError naming the difference if the sides are of different tables or seeds,
    unless force is True (the differences are then carried in the result).
    """
    runs_a, runs_b = as_runs(a), as_runs(b)
    for side, rs in (("A", runs_a), ("B", runs_b)):
        if len({configuration(r) for r in rs}) > 1:
            raise WisconsinError(
                f"the runs pooled as {side} are not of one configuration (machine, mode, "
                "tables, seed, cache): compare them one at a time"
            )
    a, b = runs_a[0], runs_b[0]
    diffs = differences(a, b)
    if diffs and not force:
        raise WisconsinError(
            "runs are not comparable: " + "; ".join(diffs) + " (use --force to compare anyway)"
        )
    pts_a = {(p.table, p.query): p for p in compute_points(runs_a)}
    pts_b = {(p.table, p.query): p for p in compute_points(runs_b)}
    rows = []
    for ma in a.measurements:
        sa = [r.measurement(ma.table, ma.query) for r in runs_a]
        sb = [r.measurement(ma.table, ma.query) for r in runs_b]
        if any(m is None or not m.times for m in (*sa, *sb)):
            continue
        ta = [t for m in sa for t in m.times]
        tb = [t for m in sb for t in m.times]
        pa, pb = pts_a.get((ma.table, ma.query)), pts_b.get((ma.table, ma.query))
        p = permutation_p(ta, tb)
        # The ratio's interval pairs runs by position; with unequal numbers of runs the
        # sides are pooled into one sample each.
        if len(sa) == len(sb):
            tr = stats.ratio_interval([m.times for m in sb], [m.times for m in sa])
        else:
            tr = stats.ratio_interval([tb], [ta])
        rows.append(
            Row(
                query=ma.query,
                kind=ma.kind,
                table=ma.table,
                P=ma.partitions,
                reps_a=len(ta),
                reps_b=len(tb),
                time_a=float(np.median(ta)),
                time_b=float(np.median(tb)),
                time_ratio=tr,
                ratio_a=pa.ratio if pa else None,
                ratio_b=pb.ratio if pb else None,
                p_value=p,
                significant=p < alpha,
            )
        )
    qidx = {q: i for i, q in enumerate(QUERIES)}
    rows.sort(key=lambda r: (r.kind, qidx.get(r.query, len(QUERIES)), r.query, r.P))
    return Comparison(_label(runs_a), _label(runs_b), tuple(diffs), tuple(rows))


def _label(runs: list[Run]) -> str:
    run = runs[0]
    where = run.config.cluster or run.environment.hostname
    when = (
        f"run {run.started_utc}"
        if len(runs) == 1
        else f"{len(runs)} runs pooled ({', '.join(r.started_utc for r in runs)})"
    )
    return (
        f"{when}, {run.config.mode} on {where}, DuckDB {run.environment.duckdb}, "
        f"{run.config.repeat} reps"
    )


def _ratio(r: Ratio | None) -> str:
    if r is None:
        return "-"
    return interval_text(r.value, r.lo, r.hi)


def _verdict(r: Row) -> str:
    if not r.significant:
        return "not significant"
    return "B slower" if r.time_b > r.time_a else "B faster"


def _document(c: Comparison) -> list[Section]:
    head = [("A", c.a), ("B", c.b)]
    head += [("FORCED", d) for d in c.differences]
    header = [
        "Query",
        "Table",
        "P",
        "T_A s",
        "T_B s",
        "T_B/T_A [95% CI]",
        "p",
        "Verdict",
        "Ratio A",
        "Ratio B",
    ]
    rows = [
        [
            tandem.QUERY_LABELS.get(r.query, r.query),
            r.table,
            str(r.P),
            fnum(r.time_a, 4),
            fnum(r.time_b, 4),
            _ratio(r.time_ratio),
            f"{r.p_value:.3f}",
            _verdict(r),
            _ratio(r.ratio_a),
            _ratio(r.ratio_b),
        ]
        for r in c.rows
    ]
    min_p = {1.0 / math.comb(r.reps_a + r.reps_b, r.reps_a) * 2 for r in c.rows if r.reps_a}
    notes = [
        "T: median seconds; T_B/T_A with its 95% interval (t-interval on log times). p: "
        "two-sided permutation test (scipy) on the difference of mean "
        f"repetition times; significant below {ALPHA}. Ratio: speedup (F) or scaleup (G) "
        "of each run against its own P0.",
    ]
    if len(c.rows) > 1:
        notes.append(
            f"{len(c.rows)} tests at {ALPHA}: about {len(c.rows) * ALPHA:.0f} may come out "
            "significant by chance alone."
        )
    if min_p and max(min_p) >= ALPHA:
        notes.append(
            "Some rows have too few repetitions for any split to reach p < "
            f"{ALPHA}: add repetitions to detect a difference there."
        )
    return [Section("Wisconsin run comparison", [head, Table(header, rows), *notes])]


def render_comparison(c: Comparison, fmt: str = "text") -> str:
    """Render a comparison as text, markdown or json."""
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown compare format {fmt!r} (choose {', '.join(FORMATS)})")
    if fmt == "json":
        return json.dumps(dataclasses.asdict(c), indent=1) + "\n"
    return render_document(_document(c), fmt)


def compare_files(
    a: str | os.PathLike | Sequence[str | os.PathLike],
    b: str | os.PathLike | Sequence[str | os.PathLike],
    force: bool = False,
    fmt: str = "text",
) -> str:
    """Load run files (a path, or several of one configuration per side) and render their
    comparison (what `wisconsin compare` prints)."""
    pa = [a] if isinstance(a, str | os.PathLike) else list(a)
    pb = [b] if isinstance(b, str | os.PathLike) else list(b)
    runs = load_runs([*pa, *pb])
    return render_comparison(compare_runs(runs[: len(pa)], runs[len(pa) :], force=force), fmt)
