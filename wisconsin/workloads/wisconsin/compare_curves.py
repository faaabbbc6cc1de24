"""Whole-curve comparisons on blocks: per table (one P of one kind), the geometric mean of
T_B/T_A over its queries; per point above P0, B's speedup (F) or scaleup (G) over A's.

Both are tested like compare's points: each block of a side gives one value (the mean of its
queries' log median times; its log median at P0 minus at P), and a Welch t-test and interval
on those values compare the sides. A curve's test pools its queries' blocks, so it can find a
difference that no single point shows; its p-values are Holm-adjusted as their own family.
Sides with fewer than two blocks give no curve rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wisconsin.analysis import stats
from wisconsin.analysis.metrics import Ratio
from wisconsin.runfiles.runfile import Run


@dataclass(frozen=True)
class CurveRow:
    """One table of both sides: geometric mean over its queries of T_B/T_A."""

    table: str
    P: int
    queries: int
    blocks_a: int
    blocks_b: int
    time_ratio: Ratio
    p_value: float
    p_holm: float = 1.0
    significant: bool = False


@dataclass(frozen=True)
class RatioOfRatios:
    """One point above P0: B's speedup (F) or scaleup (G) divided by A's."""

    query: str
    table: str
    P: int
    ratio: Ratio  # (T_B(P0)/T_B(P)) / (T_A(P0)/T_A(P))
    p_value: float
    blocks_a: int
    blocks_b: int


def block_logs(runs: Sequence[Run], table: str, query: str) -> dict[tuple[int, int], float]:
    """(run index, block) -> the block's log median time of (table, query) on one side."""
    out = {}
    for i, run in enumerate(runs):
        m = run.measurement(table, query)
        if m is None or not m.times:
            continue
        for block, times in run.times_by_block(m).items():
            if len(times):
                out[(i, block)] = float(np.log(np.median(times)))
    return out


def welch(la: Sequence[float], lb: Sequence[float]) -> tuple[Ratio, float]:
    """exp(mean lb - mean la) with its Welch t-interval, and the two-sided p-value."""
    from scipy import stats as sps

    a, b = np.asarray(la, float), np.asarray(lb, float)
    centre, half = stats.log_t_ratio(np.exp(b), np.exp(a))
    value = float(np.exp(centre))
    lo, hi = float(np.exp(centre - half)), float(np.exp(centre + half))
    if np.allclose(a.std(), 0) and np.allclose(b.std(), 0):
        p = 1.0 if np.isclose(a.mean(), b.mean()) else 0.0
    else:
        p = float(sps.ttest_ind(b, a, equal_var=False).pvalue)
    return Ratio(value, lo, hi, bool(hi - lo > stats.WIDE_FRACTION * value)), p


def _tables(run: Run) -> dict[str, tuple[str, int, list[str]]]:
    """table -> (kind, P, its queries with times), in the run's order."""
    out: dict[str, tuple[str, int, list[str]]] = {}
    for m in run.measurements:
        if m.times:
            out.setdefault(m.table, (m.kind, m.partitions, []))[2].append(m.query)
    return out


def curve_rows(runs_a: Sequence[Run], runs_b: Sequence[Run], holm, alpha: float) -> list[CurveRow]:
    """Per table measured on both sides: the geometric mean over its queries of T_B/T_A,
    tested on per-block means of log times (blocks holding every query)."""
    ta, tb = _tables(runs_a[0]), _tables(runs_b[0])
    rows = []
    for table, (_, P, qa) in ta.items():
        if table not in tb:
            continue
        queries = [q for q in qa if q in tb[table][2]]
        sides = []
        for runs in (runs_a, runs_b):
            logs = [block_logs(runs, table, q) for q in queries]
            common = set.intersection(*(set(x) for x in logs)) if logs else set()
            sides.append([float(np.mean([x[k] for x in logs])) for k in sorted(common)])
        la, lb = sides
        if len(la) < 2 or len(lb) < 2:
            continue
        ratio, p = welch(la, lb)
        rows.append(CurveRow(table, P, len(queries), len(la), len(lb), ratio, p))
    adjusted = holm([r.p_value for r in rows])
    return [
        CurveRow(
            r.table, r.P, r.queries, r.blocks_a, r.blocks_b, r.time_ratio, r.p_value, q, q < alpha
        )  # fmt: skip
        for r, q in zip(rows, adjusted, strict=True)
    ]


def ratio_of_ratios(runs_a: Sequence[Run], runs_b: Sequence[Run]) -> list[RatioOfRatios]:
    """Per (kind, query) and P above that kind's P0 on both sides: B's speedup or scaleup
    over A's, from each block's log median at P0 minus at P (one block, one value)."""
    ta, tb = _tables(runs_a[0]), _tables(runs_b[0])
    shared = {t: v for t, v in ta.items() if t in tb}
    out = []
    for kind in sorted({k for k, _, _ in shared.values()}):
        tables = sorted((P, t) for t, (k, P, _) in shared.items() if k == kind)
        (_, base), rest = tables[0], tables[1:]
        for P, table in rest:
            for q in shared[table][2]:
                if q not in shared[base][2] or q not in tb[table][2] or q not in tb[base][2]:
                    continue
                sides = []
                for runs in (runs_a, runs_b):
                    at0, atp = block_logs(runs, base, q), block_logs(runs, table, q)
                    sides.append([at0[k] - atp[k] for k in sorted(set(at0) & set(atp))])
                la, lb = sides
                if len(la) < 2 or len(lb) < 2:
                    continue
                ratio, p = welch(la, lb)
                out.append(RatioOfRatios(q, table, P, ratio, p, len(la), len(lb)))
    return out
