"""Is B different from A? The tests `compare` and its gate use, on one side's blocks against
the other's: Welch's t on log block medians (with the variance separate runs add), Holm's
step-down adjustment over one family, and the smallest difference a test could show.

Measured on the reference machine: RUN_TO_RUN_LOG_SD (docs/methodology.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from wisconsin.analysis import stats
from wisconsin.analysis.stats import Interval

# How much a whole run's level (log median times) shifts from one run to the next beyond
# what its blocks show: the page cache, placement and neighbours of that session. Measured
# on the reference machine from quiet A/A pairs of 15 blocks (method of moments over every
# point: E[d^2 - block variance] / 2; benchmarks/aa_compare.py, docs/methodology.md).
RUN_TO_RUN_LOG_SD = 0.03


def run_to_run_var(runs_a: int, runs_b: int, paired: bool) -> float:
    """Variance (log scale) separate runs add to T_B/T_A beyond their blocks': each run's
    level shifts as a whole (RUN_TO_RUN_LOG_SD), less for a side pooling several runs; none
    for an A/B file, whose blocks of A and B alternate in one session."""
    if paired:
        return 0.0
    return RUN_TO_RUN_LOG_SD**2 * (1 / max(1, runs_a) + 1 / max(1, runs_b))


def welch(
    la: Sequence[float], lb: Sequence[float], extra_var: float = 0.0
) -> tuple[Interval, float]:
    """exp(mean lb - mean la) with its Welch t-interval, and the two-sided p-value.

    extra_var (log scale) is added to the variance of the difference: the run-to-run
    variation two separate runs carry and their own blocks do not (run_to_run_var).
    The degrees of freedom stay the blocks' (Welch-Satterthwaite): conservative."""
    from scipy import stats as sps

    a, b = np.asarray(la, float), np.asarray(lb, float)
    na, nb = a.size, b.size
    centre = float(b.mean() - a.mean())
    va, vb = a.var(ddof=1) / na, b.var(ddof=1) / nb
    se2 = va + vb + extra_var
    if np.isclose(va + vb, 0) and extra_var <= 0:  # identical blocks: no spread to test on
        p, half = (1.0 if np.isclose(centre, 0) else 0.0), 0.0
    else:
        denom = va**2 / (na - 1) + vb**2 / (nb - 1)
        df = (va + vb) ** 2 / denom if denom > 0 else na + nb - 2
        se = float(np.sqrt(se2))
        p = float(2 * sps.t.sf(abs(centre) / se, df))
        half = float(stats.t_quantile(df)) * se
    value = float(np.exp(centre))
    lo, hi = float(np.exp(centre - half)), float(np.exp(centre + half))
    return Interval(value, lo, hi, bool(hi - lo > stats.WIDE_FRACTION * value)), p


def block_test(ba, bb, ta, tb, extra_var: float = 0.0) -> tuple[Interval, float]:
    """T_B/T_A (ratio of medians) with the Welch t-interval on the blocks' log medians
    (widened to hold it), and the Welch test's p-value (extra_var: run_to_run_var)."""
    r, p = welch(stats.block_log_medians(ba), stats.block_log_medians(bb), extra_var)
    value = float(np.median(tb) / np.median(ta))
    lo, hi = min(r.lo, value), max(r.hi, value)
    return Interval(value, lo, hi, bool(hi - lo > stats.WIDE_FRACTION * value)), p


def detectable(ratio: Interval, blocks_a: int, blocks_b: int, level: float) -> float | None:
    """The smallest T_B/T_A > 1 a Welch test with these blocks' spread would call
    significant at `level` (two-sided): exp(t * se) around no difference. None for a point
    tested on repetitions (one block a side)."""
    lo, hi = ratio.lo, ratio.hi
    if min(blocks_a, blocks_b) < 2 or not lo or not hi or hi <= lo:
        return None
    half = math.log(hi / lo) / 2
    df = max(1, min(blocks_a, blocks_b) - 1)
    se = half / stats.t_quantile(df)
    return float(math.exp(stats.t_quantile(df, 1 - level / 2) * se))


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error at most alpha)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [1.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def verdict_of(significant: bool, ratio: float) -> str:
    """A point's or curve's word from its test and its T_B/T_A; a ratio of exactly 1 is
    neither slower nor faster, whatever the test says."""
    if not significant or ratio == 1:
        return "cannot tell apart"
    return "B slower" if ratio > 1 else "B faster"
