"""Compare two runs of the same tables: time ratios, both runs' ratios, significance.

Runs of different tables (sizes, partition counts) or seeds measure different things and
are refused unless forced. Significance is a permutation test on the difference of mean
repetition times (exact when the number of splits is small, else Monte Carlo).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wisconsin import WisconsinError, tandem
from wisconsin.metrics import BOOTSTRAP_SEED, Ratio, bootstrap_ratio, compute_points
from wisconsin.report import Section, Table, fnum, load_runs, render_document
from wisconsin.runfile import QUERIES, Run

ALPHA = 0.05
EXACT_LIMIT = 20_000  # enumerate every split up to this many, else sample
PERMUTATIONS = 20_000
FORMATS = ("text", "markdown", "json")


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
    time_ratio: Ratio  # T_b / T_a with a 95% bootstrap CI
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


def permutation_p(
    a: Sequence[float],
    b: Sequence[float],
    *,
    seed: int = BOOTSTRAP_SEED,
    n_perm: int = PERMUTATIONS,
) -> float:
    """Two-sided permutation p-value of mean(a) - mean(b); exact for small samples."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    pooled = np.concatenate([x, y])
    n, total = x.size, pooled.sum()
    observed = abs(x.mean() - y.mean())
    # A relative tolerance so float rounding does not push the observed split out of its tie.
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    m = pooled.size - n
    if m == 0 or n == 0:
        return 1.0
    if math.comb(pooled.size, n) <= EXACT_LIMIT:
        idx = np.array(list(itertools.combinations(range(pooled.size), n)))
        sums = pooled[idx].sum(axis=1)
        diffs = np.abs(sums / n - (total - sums) / m)
        return float(np.mean(diffs >= observed - tol))
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(pooled, (n_perm, 1)), axis=1)
    sums = perms[:, :n].sum(axis=1)
    diffs = np.abs(sums / n - (total - sums) / m)
    return float((np.sum(diffs >= observed - tol) + 1) / (n_perm + 1))


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


def compare_runs(a: Run, b: Run, force: bool = False, *, alpha: float = ALPHA) -> Comparison:
    """Per (table, query) in both runs: T_b/T_a, both ratios, permutation p-value.

    Raises WisconsinError naming the difference if the runs are of different tables or
    seeds, unless force is True (the differences are then carried in the result).
    """
    diffs = differences(a, b)
    if diffs and not force:
        raise WisconsinError(
            "runs are not comparable: " + "; ".join(diffs) + " (use --force to compare anyway)"
        )
    pts_a = {(p.table, p.query): p for p in compute_points(a)}
    pts_b = {(p.table, p.query): p for p in compute_points(b)}
    rows = []
    for ma in a.measurements:
        mb = b.measurement(ma.table, ma.query)
        if mb is None or not ma.times or not mb.times:
            continue
        pa, pb = pts_a.get((ma.table, ma.query)), pts_b.get((ma.table, ma.query))
        p = permutation_p(ma.times, mb.times)
        rows.append(
            Row(
                query=ma.query,
                kind=ma.kind,
                table=ma.table,
                P=ma.partitions,
                reps_a=len(ma.times),
                reps_b=len(mb.times),
                time_a=float(np.median(ma.times)),
                time_b=float(np.median(mb.times)),
                time_ratio=bootstrap_ratio(mb.times, ma.times),
                ratio_a=pa.ratio if pa else None,
                ratio_b=pb.ratio if pb else None,
                p_value=p,
                significant=p < alpha,
            )
        )
    qidx = {q: i for i, q in enumerate(QUERIES)}
    rows.sort(key=lambda r: (r.kind, qidx.get(r.query, len(QUERIES)), r.query, r.P))
    return Comparison(_label(a), _label(b), tuple(diffs), tuple(rows))


def _label(run: Run) -> str:
    where = run.config.cluster or run.environment.hostname
    return (
        f"run {run.started_utc}, {run.config.mode} on {where}, DuckDB {run.environment.duckdb}, "
        f"{run.config.repeat} reps"
    )


def _ratio(r: Ratio | None) -> str:
    if r is None:
        return "-"
    return fnum(r.value) if r.lo is None else f"{r.value:.2f} [{r.lo:.2f}-{r.hi:.2f}]"


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
        "T: median seconds. p: two-sided permutation test on the difference of mean "
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
    a: str | os.PathLike, b: str | os.PathLike, force: bool = False, fmt: str = "text"
) -> str:
    """Load two run files and render their comparison (what `wisconsin compare` prints)."""
    run_a, run_b = load_runs([a, b])
    return render_comparison(compare_runs(run_a, run_b, force=force), fmt)
