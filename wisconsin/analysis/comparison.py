"""The comparison of two sides (a run, or several runs of one configuration each) of the
same tables: a frozen Comparison, computed here and rendered elsewhere.

The replicates are blocks (groups of rounds with fresh worker processes;
wisconsin.analysis.stats): with at least two blocks a side, each point's T_B/T_A and its
test come from the blocks' median times (a Welch t-test and interval on their logs), so
run-to-run variation is in them. Sides with one block each (files written before blocks)
fall back to a permutation test on repetitions, and say that variation is unknown. Every
point's and whole curve's (wisconsin.analysis.curves) p-value is adjusted for the whole
family (Holm); a point is significant only below ALPHA after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from wisconsin.analysis import significance, stats
from wisconsin.analysis.curves import CurveRow, RatioOfRatios, curve_rows, ratio_of_ratios
from wisconsin.analysis.metrics import Point, Ratio, compute_points
from wisconsin.analysis.significance import block_test, holm, run_to_run_var, verdict_of
from wisconsin.runfiles.runfile import Measurement, Run

ALPHA = 0.05


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
    p_value: float  # the point's own test
    significant: bool  # Holm-adjusted p below alpha
    p_holm: float = 1.0  # adjusted for every point of the comparison (Holm)
    blocks_a: int = 1  # replicates each side's test used (1: repetitions, see the footer)
    blocks_b: int = 1
    detectable: float | None = None  # smallest T_B/T_A this test could call slower (Holm)

    @property
    def verdict(self) -> str:
        """The point's word: "B slower", "B faster" or "cannot tell apart"."""
        return verdict_of(self.significant, self.time_b / self.time_a)

    @property
    def on_blocks(self) -> bool:
        """Tested on blocks (two or more a side), not on repetitions."""
        return min(self.blocks_a, self.blocks_b) >= 2


@dataclass(frozen=True)
class Comparison:
    a: str  # run labels (start times)
    b: str
    differences: tuple[str, ...]  # non-empty only when forced
    rows: tuple[Row, ...]
    context: tuple[str, ...] = ()  # what else differs (tool, machine, cores, settings)
    verdict: str = ""  # overall: "B slower", "B faster", "mixed", "cannot tell apart"
    geomean: Ratio | None = None  # geometric mean of T_B/T_A over every point
    # whole curves (analysis.curves): per table, the geometric mean of T_B/T_A over its
    # queries; per point above P0, B's speedup or scaleup over A's (both on blocks)
    curves: tuple[CurveRow, ...] = ()
    speedup_ratios: tuple[RatioOfRatios, ...] = ()
    paired: bool = False  # from one A/B file: blocks of A and B alternated in one session

    @property
    def significant_points(self) -> int:
        return sum(r.significant for r in self.rows)

    @property
    def significant_curves(self) -> int:
        return sum(c.significant for c in self.curves)

    @property
    def blocked_rows(self) -> list[Row]:
        """The points tested on blocks."""
        return [r for r in self.rows if r.on_blocks]

    @property
    def fewest_blocks(self) -> int:
        """The fewest blocks on a side of any point tested on blocks (0: none is)."""
        return min((min(r.blocks_a, r.blocks_b) for r in self.blocked_rows), default=0)

    @property
    def detectable_spread(self) -> tuple[float, float, float] | None:
        """(middle, smallest, largest) of the points' smallest detectable slowdowns (the
        middle: the upper one of an even count); None when no point has one."""
        detect = sorted(r.detectable for r in self.blocked_rows if r.detectable)
        if not detect:
            return None
        return detect[len(detect) // 2], detect[0], detect[-1]

    @property
    def repetitions_too_few(self) -> bool:
        """Some point tested on repetitions has too few of them for any split to reach
        p < ALPHA (the permutation test's smallest p)."""
        min_p = {
            stats.smallest_permutation_p(r.reps_a, r.reps_b)
            for r in self.rows
            if r.reps_a and not r.on_blocks
        }
        return bool(min_p) and max(min_p) >= ALPHA


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


def context_differences(a: Run, b: Run) -> list[str]:
    """What differs besides the tables: tool version, machine, cores, engine settings."""
    ea, eb, ca, cb = a.environment, b.environment, a.config, b.config
    pairs = [
        ("tool version", ea.tool_version, eb.tool_version),
        ("git commit", ea.git_commit, eb.git_commit),
        ("host", ea.hostname, eb.hostname),
        ("usable cores", ea.usable_cores, eb.usable_cores),
        ("DuckDB", ea.duckdb, eb.duckdb),
        ("mode", ca.mode, cb.mode),
        ("cluster", ca.cluster or "local", cb.cluster or "local"),
        ("threads per worker", ca.threads_per_worker, cb.threads_per_worker),
        ("memory limit", ca.memory_limit, cb.memory_limit),
        ("cache", ca.cache, cb.cache),
        ("scan variant", ca.scan_variant, cb.scan_variant),
    ]
    return [f"{name}: {x} in A, {y} in B" for name, x, y in pairs if x != y]


def compare(
    runs_a: Sequence[Run],
    runs_b: Sequence[Run],
    diffs: Sequence[str] = (),
    *,
    alpha: float = ALPHA,
    paired: bool = False,
    order: Sequence[str] = (),
) -> Comparison:
    """Per (table, query) in both sides: T_b/T_a with its interval and test, both sides'
    ratios; the whole curves; every p adjusted in one family. Each side is one or more runs
    of one configuration (pooled as replicates); diffs: what makes the sides measure
    different things (differences), when they were compared anyway. Rows are in order's
    query order (others after, by name) within each kind, then by P."""
    extra = run_to_run_var(len(runs_a), len(runs_b), paired)
    rows = _point_rows(runs_a, runs_b, extra)
    qidx = {q: i for i, q in enumerate(order)}
    rows.sort(key=lambda r: (r.kind, qidx.get(r.query, len(order)), r.query, r.P))
    # one family: every point and every whole curve (analysis.curves), adjusted together
    rows, curves = _adjusted(rows, curve_rows(runs_a, runs_b, extra), alpha)
    return Comparison(
        side_label(runs_a),
        side_label(runs_b),
        tuple(diffs),
        tuple(rows),
        tuple(context_differences(runs_a[0], runs_b[0])),
        overall_verdict([*rows, *curves]),
        _geomean(rows),
        tuple(curves),
        # within each run: a run's level shift cancels in its own speedups
        tuple(ratio_of_ratios(runs_a, runs_b)),
        paired,
    )


def _point_rows(runs_a: Sequence[Run], runs_b: Sequence[Run], extra: float) -> list[Row]:
    """A row per (table, query) of A's first run timed in every run of both sides."""
    pts_a = {(p.table, p.query): p for p in compute_points(runs_a)}
    pts_b = {(p.table, p.query): p for p in compute_points(runs_b)}
    rows = []
    for ma in runs_a[0].measurements:
        sa = [r.measurement(ma.table, ma.query) for r in runs_a]
        sb = [r.measurement(ma.table, ma.query) for r in runs_b]
        if any(m is None or not m.times for m in (*sa, *sb)):
            continue
        key = (ma.table, ma.query)
        rows.append(_row(ma, (runs_a, sa), (runs_b, sb), extra, pts_a.get(key), pts_b.get(key)))
    return rows


def _row(ma: Measurement, side_a, side_b, extra: float, pa: Point | None, pb: Point | None):
    """One point: side_a and side_b are (runs, the point's measurement in each run)."""
    (runs_a, sa), (runs_b, sb) = side_a, side_b
    ta = [t for m in sa for t in m.times]
    tb = [t for m in sb for t in m.times]
    ba, bb = _blocks(runs_a, sa), _blocks(runs_b, sb)
    if len(ba) >= 2 and len(bb) >= 2:
        tr, p = block_test(ba, bb, ta, tb, extra)
    else:
        p = stats.permutation_p(ta, tb)
        # The ratio's interval pairs runs by position; with unequal numbers of runs the
        # sides are pooled into one sample each.
        if len(sa) == len(sb):
            tr = stats.ratio_interval([m.times for m in sb], [m.times for m in sa])
        else:
            tr = stats.ratio_interval([tb], [ta])
    return Row(
        query=ma.query,
        kind=ma.kind,
        table=ma.table,
        P=ma.partitions,
        reps_a=len(ta),
        reps_b=len(tb),
        time_a=stats.median(ta),
        time_b=stats.median(tb),
        time_ratio=tr,
        ratio_a=pa.ratio if pa else None,
        ratio_b=pb.ratio if pb else None,
        p_value=p,
        significant=False,
        blocks_a=max(1, len(ba)),
        blocks_b=max(1, len(bb)),
    )


def _adjusted(
    rows: list[Row], curves: list[CurveRow], alpha: float
) -> tuple[list[Row], list[CurveRow]]:
    """Rows and curves with Holm's adjusted p over all of them, their verdicts at alpha,
    and each row's smallest slowdown it could show at Holm's strictest step."""
    adjusted = holm([r.p_value for r in rows] + [c.p_value for c in curves])
    rows = [
        dataclasses.replace(r, p_holm=q, significant=q < alpha)
        for r, q in zip(rows, adjusted, strict=False)
    ]
    curves = [
        dataclasses.replace(c, p_holm=q, significant=q < alpha)
        for c, q in zip(curves, adjusted[len(rows) :], strict=True)
    ]
    family = len(rows) + len(curves)
    rows = [dataclasses.replace(r, detectable=row_detectable(r, alpha / family)) for r in rows]
    return rows, curves


def _geomean(rows: Sequence[Row]) -> Ratio | None:
    if not rows:
        return None
    return Ratio(stats.geometric_mean([r.time_ratio.value for r in rows]), None, None, False)


def _blocks(runs: Sequence[Run], ms) -> list[tuple[float, ...]]:
    """Every block of every run of one side (only runs measured in blocks count as more
    than one: a file from before blocks is one block)."""
    return [blk for r, m in zip(runs, ms, strict=True) for blk in r.times_by_block(m).values()]


def row_detectable(r: Row, level: float) -> float | None:
    """The smallest T_B/T_A the row's test could call slower at level
    (significance.detectable on its interval and blocks)."""
    return significance.detectable(r.time_ratio, r.blocks_a, r.blocks_b, level)


def overall_verdict(rows: Sequence[Row | CurveRow]) -> str:
    """From every point's and curve's own word (verdict_of)."""
    words = {verdict_of(r.significant, r.time_ratio.value) for r in rows}
    words.discard("cannot tell apart")
    if len(words) > 1:
        return "mixed"
    return words.pop() if words else "cannot tell apart"


def side_label(runs: Sequence[Run]) -> str:
    """What one side is: its run (or runs pooled), mode, where, DuckDB, repetitions."""
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
