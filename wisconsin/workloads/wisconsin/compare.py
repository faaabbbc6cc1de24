"""`wisconsin compare`: two sides (a run, or several runs of one configuration each) of the
same tables, the CI gate (--fail-slower) and A/B files.

Runs of different tables (sizes, partition counts) or seeds measure different things and
are refused unless forced; differences in tool version, machine, cores and engine settings
are named before any verdict. The comparison is computed in wisconsin.analysis.comparison
(its tests and intervals: there) and rendered by compare_render.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from wisconsin import WisconsinError
from wisconsin.analysis import comparison
from wisconsin.analysis.comparison import (  # noqa: F401  (re-exported: compare's names)
    ALPHA,
    Comparison,
    Row,
    context_differences,
    differences,
    overall_verdict,
)
from wisconsin.analysis.comparison import row_detectable as _detectable  # noqa: F401
from wisconsin.analysis.metrics import as_runs
from wisconsin.analysis.significance import holm  # noqa: F401  (benchmarks/aa_compare.py)
from wisconsin.analysis.significance import verdict_of as _verdict_of  # noqa: F401
from wisconsin.analysis.stats import permutation_p  # noqa: F401  (re-exported)
from wisconsin.runfiles.runfile import Run, RunFileError
from wisconsin.workloads.wisconsin.compare_render import (  # noqa: F401  (re-exported)
    FORMATS,
    ratio_text,
    render_comparison,
)
from wisconsin.workloads.wisconsin.queries import QUERIES
from wisconsin.workloads.wisconsin.runs import configuration, load_runs


def compare_runs(
    a: Run | Sequence[Run],
    b: Run | Sequence[Run],
    force: bool = False,
    *,
    alpha: float = ALPHA,
    paired: bool = False,
) -> Comparison:
    """Per (table, query) in both sides: T_b/T_a, both ratios, their tests
    (wisconsin.analysis.comparison.compare), rows in the paper's query order.

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
    diffs = differences(runs_a[0], runs_b[0])
    if diffs and not force:
        raise WisconsinError(
            "runs are not comparable: " + "; ".join(diffs) + " (use --force to compare anyway)"
        )
    return comparison.compare(
        runs_a, runs_b, diffs, alpha=alpha, paired=paired, order=tuple(QUERIES)
    )


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
        worst.append(f"{w.table} {w.query}: {ratio_text(w.time_ratio)}")
    if curves:
        w = max(curves, key=lambda r: r.time_ratio.value)
        worst.append(f"curve {w.label}: {ratio_text(w.time_ratio)}")
    return (
        f"{' and '.join(what)} of B slower than A by more than {factor:g}x, significant after "
        f"Holm's correction; worst {'; worst '.join(worst)}"
    )
