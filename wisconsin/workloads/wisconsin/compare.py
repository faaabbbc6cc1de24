"""Compare two sides (a run, or several runs of one configuration each) of the same tables.

Runs of different tables (sizes, partition counts) or seeds measure different things and
are refused unless forced; differences in tool version, machine, cores and engine settings
are named before any verdict. The replicates are blocks (groups of rounds with fresh worker
processes; wisconsin.analysis.stats): with at least two blocks a side, each point's T_B/T_A
and its test come from the blocks' median times (a Welch t-test and interval on their logs),
so run-to-run variation is in them. Sides with one block each (files written before blocks)
fall back to a permutation test on repetitions, and the footer says that variation is
unknown. Every point's p-value is adjusted for the whole family (Holm); a point is
significant only below ALPHA after it.
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
from wisconsin.analysis import significance, stats
from wisconsin.analysis.metrics import Ratio, as_runs, compute_points
from wisconsin.analysis.significance import (
    RUN_TO_RUN_LOG_SD,
    block_test,
    holm,
    run_to_run_var,
)
from wisconsin.runfiles.runfile import Run, RunFileError
from wisconsin.workloads.wisconsin import tandem
from wisconsin.workloads.wisconsin.compare_curves import (
    CurveRow,
    RatioOfRatios,
    curve_rows,
    ratio_of_ratios,
)
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
    p_value: float  # the point's own test
    significant: bool  # Holm-adjusted p below alpha
    p_holm: float = 1.0  # adjusted for every point of the comparison (Holm)
    blocks_a: int = 1  # replicates each side's test used (1: repetitions, see the footer)
    blocks_b: int = 1
    detectable: float | None = None  # smallest T_B/T_A this test could call slower (Holm)


@dataclass(frozen=True)
class Comparison:
    a: str  # run labels (start times)
    b: str
    differences: tuple[str, ...]  # non-empty only when forced
    rows: tuple[Row, ...]
    context: tuple[str, ...] = ()  # what else differs (tool, machine, cores, settings)
    verdict: str = ""  # overall: "B slower", "B faster", "mixed", "cannot tell apart"
    geomean: Ratio | None = None  # geometric mean of T_B/T_A over every point
    # whole curves (compare_curves): per table, the geometric mean of T_B/T_A over its
    # queries; per point above P0, B's speedup or scaleup over A's (both on blocks)
    curves: tuple[CurveRow, ...] = ()
    speedup_ratios: tuple[RatioOfRatios, ...] = ()
    paired: bool = False  # from one A/B file: blocks of A and B alternated in one session

    @property
    def significant_points(self) -> int:
        return sum(r.significant for r in self.rows)


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
    paired: bool = False,
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
    extra = run_to_run_var(len(runs_a), len(runs_b), paired)
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
        ba, bb = _blocks(runs_a, sa), _blocks(runs_b, sb)
        if len(ba) >= 2 and len(bb) >= 2:
            tr, p = block_test(ba, bb, ta, tb, extra)
        else:
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
                significant=False,
                blocks_a=max(1, len(ba)),
                blocks_b=max(1, len(bb)),
            )
        )
    qidx = {q: i for i, q in enumerate(QUERIES)}
    rows.sort(key=lambda r: (r.kind, qidx.get(r.query, len(QUERIES)), r.query, r.P))
    # one family: every point and every whole curve (compare_curves), adjusted together
    curves = curve_rows(runs_a, runs_b, extra)
    adjusted = holm([r.p_value for r in rows] + [c.p_value for c in curves])
    rows = [
        dataclasses.replace(r, p_holm=q, significant=q < alpha)
        for r, q in zip(rows, adjusted, strict=False)
    ]
    curves = [
        dataclasses.replace(c, p_holm=q, significant=q < alpha)
        for c, q in zip(curves, adjusted[len(rows) :], strict=True)
    ]
    # the smallest slowdown each point could have shown, at Holm's strictest step
    family = len(rows) + len(curves)
    rows = [dataclasses.replace(r, detectable=_detectable(r, alpha / family)) for r in rows]
    return Comparison(
        _label(runs_a),
        _label(runs_b),
        tuple(diffs),
        tuple(rows),
        tuple(context_differences(a, b)),
        overall_verdict([*rows, *curves]),
        _geomean(rows),
        tuple(curves),
        # within each run: a run's level shift cancels in its own speedups
        tuple(ratio_of_ratios(runs_a, runs_b)),
        paired,
    )


def _blocks(runs: list[Run], ms) -> list[tuple[float, ...]]:
    """Every block of every run of one side (only runs measured in blocks count as more
    than one: a file from before blocks is one block)."""
    return [blk for r, m in zip(runs, ms, strict=True) for blk in r.times_by_block(m).values()]


def _detectable(r: Row, level: float) -> float | None:
    return significance.detectable(r.time_ratio, r.blocks_a, r.blocks_b, level)


# Past this, a "smallest slowdown" is no figure a reader can use (2 blocks a side, df = 1 at
# Holm's strictest level, once printed 1784397320.19x): say the blocks are too few instead.
DETECTABLE_SHOWN_MAX = 10.0


def _detectable_note(detect: list[float], fewest_blocks: int) -> str:
    if not detect:
        return ""
    mid = detect[len(detect) // 2]
    if mid > DETECTABLE_SHOWN_MAX:
        return (
            f"; with {fewest_blocks} blocks on a side these points cannot show a slowdown "
            f"smaller than {DETECTABLE_SHOWN_MAX:.0f}x (median over points): give each run "
            "more blocks (--blocks) for a test that can"
        )
    return (
        f"; the smallest slowdown these blocks could show is about {mid:.2f}x (median over "
        f"points, {detect[0]:.2f}x-"
        + (f"{detect[-1]:.2f}x)" if detect[-1] <= DETECTABLE_SHOWN_MAX else "more than 10x)")
    )


def overall_verdict(rows: Sequence[Row | CurveRow]) -> str:
    """From every point's and curve's own word (Row or CurveRow: _verdict_of)."""
    words = {_verdict_of(r.significant, r.time_ratio.value) for r in rows}
    words.discard("cannot tell apart")
    if len(words) > 1:
        return "mixed"
    return words.pop() if words else "cannot tell apart"


def _geomean(rows: Sequence[Row]) -> Ratio | None:
    if not rows:
        return None
    logs = np.log([r.time_ratio.value for r in rows])
    return Ratio(float(np.exp(logs.mean())), None, None, False)


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
    return _verdict_of(r.significant, r.time_b / r.time_a)


def _document(c: Comparison) -> list[Section]:
    head = [("A", c.a), ("B", c.b)]
    head += [("FORCED", d) for d in c.differences]
    head += [("Differs", d) for d in c.context]
    sig = c.significant_points
    head.append(
        (
            "Verdict",
            f"{c.verdict} ({sig} of {len(c.rows)} points and "
            f"{sum(x.significant for x in c.curves)} of {len(c.curves)} curves differ after "
            "Holm's correction"
            + (f"; geometric mean T_B/T_A {c.geomean.value:.3f}" if c.geomean else "")
            + ")",
        )
    )
    header = [
        "Query",
        "Table",
        "P",
        "T_A s",
        "T_B s",
        "T_B/T_A [95% CI]",
        "p (Holm)",
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
            f"{r.p_value:.3f} ({r.p_holm:.3f})",
            _verdict(r),
            _ratio(r.ratio_a),
            _ratio(r.ratio_b),
        ]
        for r in c.rows
    ]
    blocked = [r for r in c.rows if min(r.blocks_a, r.blocks_b) >= 2]
    curves = _curve_tables(c)
    notes = [
        "T: median seconds. Ratio: speedup (F) or scaleup (G) of each side against its own "
        f"P0. Family-wise error: each p is adjusted for all {len(c.rows)} points and "
        f"{len(c.curves)} whole curves (Holm); a point or curve differs only if its adjusted "
        f"p is below {ALPHA}, so the chance that any of identical runs is called different "
        f"is at most {ALPHA}.",
    ]
    if blocked:
        detect = sorted(r.detectable for r in blocked if r.detectable)
        notes.append(
            f"{len(blocked)} points are tested on blocks (Welch t on the blocks' log median "
            "times; T_B/T_A's 95% interval likewise), so run-to-run variation is in the test"
            + (
                "; A and B alternated block by block in one session (an A/B file)"
                if c.paired
                else f"; separate runs: each side's whole level may also shift by "
                f"{RUN_TO_RUN_LOG_SD:.0%} (SD) from one run to the next (measured, "
                "docs/methodology.md), and the tests allow for it"
            )
            + _detectable_note(detect, min(min(r.blocks_a, r.blocks_b) for r in blocked))
            + "."
        )
    if len(blocked) < len(c.rows):
        notes.append(
            f"{len(c.rows) - len(blocked)} points have one block on a side (files written "
            "before blocks, or too few rounds): tested by permutation on repetitions, which "
            "treats repetitions of one run as independent: run-to-run variation unknown. "
            "For a verdict that holds, measure both in blocks (run --blocks), or A and B "
            "alternately in one session (`wisconsin ab`)."
        )
        min_p = {
            1.0 / math.comb(r.reps_a + r.reps_b, r.reps_a) * 2
            for r in c.rows
            if r.reps_a and min(r.blocks_a, r.blocks_b) < 2
        }
        if min_p and max(min_p) >= ALPHA:
            notes.append(
                "Some rows have too few repetitions for any split to reach p < "
                f"{ALPHA}: add repetitions to detect a difference there."
            )
    if c.verdict == "cannot tell apart" and not c.paired:
        notes.append(
            "Cannot tell apart: separate runs also differ by the drift between them. To "
            "resolve a smaller difference, measure A and B in one invocation, blocks in turn: "
            '`wisconsin ab --data DIR --a "A\'s options" --b "B\'s options"`.'
        )
    return [Section("Wisconsin run comparison", [head, Table(header, rows), *notes, *curves])]


def _curve_tables(c: Comparison) -> list:
    """The whole-curve tables (compare_curves), with what they rest on."""
    out: list = []
    if c.curves:
        out.append(
            Table(
                [
                    "Curve",
                    "Points",
                    "Blocks A/B",
                    "geomean T_B/T_A [95% CI]",
                    "p (Holm)",
                    "Verdict",
                ],  # fmt: skip
                [
                    [
                        r.label,
                        str(r.points),
                        f"{r.blocks_a}/{r.blocks_b}",
                        _ratio(r.time_ratio),
                        f"{r.p_value:.3f} ({r.p_holm:.3f})",
                        _verdict_of(r.significant, r.time_ratio.value),
                    ]
                    for r in c.curves
                ],
            )
        )
        out.append(
            "Whole curves: per query, the geometric mean of T_B/T_A over every P (e.g. 'F "
            "scan'); per table, over its queries (e.g. 'F2'); tested on each block's mean "
            f"log time (Welch t). Holm adjusts the {len(c.rows)} points and {len(c.curves)} "
            "curves as one family."
        )
    if c.speedup_ratios:
        out.append(
            Table(
                ["Query", "Table", "P", "B's ratio / A's [95% CI]", "p"],
                [
                    [
                        tandem.QUERY_LABELS.get(r.query, r.query),
                        r.table,
                        str(r.P),
                        _ratio(r.ratio),
                        f"{r.p_value:.3f}",
                    ]
                    for r in c.speedup_ratios
                ],
            )
        )
        out.append(
            "Ratio of speedups (F) or scaleups (G): B's over A's at each P above P0, from each "
            "block's log time at P0 minus at P (Welch t); p is the point's own, not adjusted."
        )
    return out


def _verdict_of(significant: bool, ratio: float) -> str:
    """A point's or curve's word (overall_verdict combines them); a ratio of exactly 1 is
    neither slower nor faster, whatever the block test says."""
    if not significant or ratio == 1:
        return "cannot tell apart"
    return "B slower" if ratio > 1 else "B faster"


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


def _ab_runs(path: str | os.PathLike) -> tuple[tuple[Run, ...], tuple[Run, ...]]:
    from wisconsin.runfiles import abfile

    try:
        ab = abfile.load(path)
    except RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    return ab.a, ab.b


def compare_ab_file(path: str | os.PathLike, fmt: str = "text") -> str:
    """An A/B file's A blocks against its B blocks (what `wisconsin compare AB.json` prints).
    Its sides differ by design (mode, settings, data): compared as if forced."""
    a, b = _ab_runs(path)
    return render_comparison(compare_runs(a, b, force=True, paired=True), fmt)


def ab_slower_than(path: str | os.PathLike, factor: float) -> str:
    """`compare AB.json --fail-slower FACTOR`."""
    return _slower(compare_runs(*_ab_runs(path), force=True, paired=True), factor)


def slower_than(
    a: Sequence[str | os.PathLike], b: Sequence[str | os.PathLike], factor: float, force=False
) -> str:
    """`compare --fail-slower FACTOR`: what makes B fail the gate ("" when it passes)."""
    runs = load_runs([*a, *b])
    return _slower(compare_runs(runs[: len(a)], runs[len(a) :], force=force), factor)


def _slower(c: Comparison, factor: float) -> str:
    """The gate judges as the verdict does: points and whole curves, each significant after
    Holm's correction over the one family (a curve can be slower when no point alone is)."""
    bad = [r for r in c.rows if r.significant and r.time_ratio.value > factor]
    curves = [r for r in c.curves if r.significant and r.time_ratio.value > factor]
    if not bad and not curves:
        return ""
    what = [f"{len(bad)} point(s)"] if bad else []
    what += [f"{len(curves)} whole curve(s)"] if curves else []
    worst = []
    if bad:
        w = max(bad, key=lambda r: r.time_ratio.value)
        worst.append(f"{w.table} {w.query}: {_ratio_text(w.time_ratio)}")
    if curves:
        w = max(curves, key=lambda r: r.time_ratio.value)
        worst.append(f"curve {w.label}: {_ratio_text(w.time_ratio)}")
    return (
        f"{' and '.join(what)} of B slower than A by more than {factor:g}x, significant after "
        f"Holm's correction; worst {'; worst '.join(worst)}"
    )


def _ratio_text(r: Ratio) -> str:
    return interval_text(r.value, r.lo, r.hi)
