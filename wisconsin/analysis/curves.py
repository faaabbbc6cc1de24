"""Whole-curve comparisons on blocks: per table (one P of one kind), the geometric mean of
T_B/T_A over its queries; per point above P0, B's speedup (F) or scaleup (G) over A's.

Both are tested like the comparison's points (wisconsin.analysis.comparison): each block of
a side gives one value (the mean of its queries' log median times; its log median at P0
minus at P), and a Welch t-test and interval on those values compare the sides. A curve's
test pools its queries' blocks, so it can find a difference that no single point shows; its
p-value is Holm-adjusted in one family with the points'. Sides with fewer than two blocks
give no curve rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wisconsin.analysis.metrics import Ratio
from wisconsin.analysis.significance import verdict_of, welch
from wisconsin.runfiles.runfile import Run


@dataclass(frozen=True)
class CurveRow:
    """A whole curve of both sides: one query over every P of a kind (table ""), or one
    table over its queries (query ""); the geometric mean of T_B/T_A over its points."""

    label: str  # "F scan" (a query's curve) or "F2" (a table's queries)
    kind: str
    query: str  # "" for a table's curve
    table: str  # "" for a query's curve
    points: int  # points the geometric mean is over
    blocks_a: int
    blocks_b: int
    time_ratio: Ratio
    p_value: float
    p_holm: float = 1.0  # adjusted with every point and curve of the comparison
    significant: bool = False

    @property
    def verdict(self) -> str:
        """The curve's word: "B slower", "B faster" or "cannot tell apart"."""
        return verdict_of(self.significant, self.time_ratio.value)


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


def _tables(run: Run) -> dict[str, tuple[str, int, list[str]]]:
    """table -> (kind, P, its queries with times), in the run's order."""
    out: dict[str, tuple[str, int, list[str]]] = {}
    for m in run.measurements:
        if m.times:
            out.setdefault(m.table, (m.kind, m.partitions, []))[2].append(m.query)
    return out


def _curve(label, kind, query, table, cells, runs_a, runs_b, extra_var) -> CurveRow | None:
    """The curve over cells ((table, query) pairs): per side, each block holding every cell
    gives the mean of their log median times; Welch on those (+ extra_var: see welch)."""
    sides = []
    for runs in (runs_a, runs_b):
        logs = [block_logs(runs, t, q) for t, q in cells]
        common = set.intersection(*(set(x) for x in logs)) if logs else set()
        sides.append([float(np.mean([x[k] for x in logs])) for k in sorted(common)])
    la, lb = sides
    if len(la) < 2 or len(lb) < 2:
        return None
    ratio, p = welch(la, lb, extra_var)
    return CurveRow(label, kind, query, table, len(cells), len(la), len(lb), ratio, p)


def curve_rows(
    runs_a: Sequence[Run], runs_b: Sequence[Run], extra_var: float = 0.0
) -> list[CurveRow]:
    """Per query and kind, its curve over every P measured on both sides (a table 25%
    larger at every P shows as one slower curve); per table, its queries. Raw p-values:
    compare adjusts them together with the points' (one family)."""
    ta, tb = _tables(runs_a[0]), _tables(runs_b[0])
    both = {t: (k, P, [q for q in qs if q in tb[t][2]]) for t, (k, P, qs) in ta.items() if t in tb}
    rows = []
    for kind in sorted({k for k, _, _ in both.values()}):
        tables = sorted((P, t) for t, (k, P, _) in both.items() if k == kind)
        queries = [q for q in both[tables[0][1]][2] if all(q in both[t][2] for _, t in tables)]
        for q in queries:
            cells = [(t, q) for _, t in tables]
            row = _curve(f"{kind} {q}", kind, q, "", cells, runs_a, runs_b, extra_var)
            rows.append(row)
    for table, (kind, _, queries) in both.items():
        cells = [(table, q) for q in queries]
        rows.append(_curve(table, kind, "", table, cells, runs_a, runs_b, extra_var))
    return [r for r in rows if r is not None]


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
