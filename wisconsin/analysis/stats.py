"""Intervals and tests used by the report (numpy + scipy.stats, no resampling of our own).

Interval method: a t-interval on log times. Times are positive and right-skewed; on the log
scale a ratio is a difference, and the Welch t-interval of that difference is exact for
log-normal times. tests/test_stats.py simulates its coverage at 3, 5 and 10 repetitions
(>= 95% there) next to scipy.stats.bootstrap's BCa on the ratio of medians (about 90% at
3 repetitions, 96% at 5): the t-interval is the one that holds at every repetition count
a run may stop at, and it needs no random resampling, so reports are repeatable.

Blocks (a run's groups of consecutive rounds, each with fresh worker processes) are the
replicates when there are at least two: the interval is the t-interval over the blocks'
log ratios of medians (df = blocks - 1), so more blocks, not more repetitions, narrow it; the
repetitions inside a block only make its median steadier. With one block per run (files
written before blocks) the intervals below are used, and say nothing of run-to-run variation.

Several runs of one configuration are pooled as replicates, runs first: each run gives its
own interval and its own estimate; the pooled interval is the t-interval over the runs'
estimates (df = runs - 1) widened to contain every run's own interval. Run-to-run variation
therefore widens the interval, and pooling can never make it narrower than any one run's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.95
WIDE_FRACTION = 0.10  # an interval wider than this fraction of its value is marked "wide"
PERMUTATIONS = 20_000
PERMUTATION_SEED = 19890605  # the date of the auditor's report; fixed so reports repeat

Samples = Sequence[Sequence[float]]  # one sequence of repetition times per run


@dataclass(frozen=True)
class Interval:
    """A value with its 95% interval (lo/hi None when there is nothing to estimate it from)."""

    value: float
    lo: float | None
    hi: float | None
    wide: bool


def t_quantile(df, q: float = 0.5 + LEVEL / 2):
    """Student's t quantile q with df degrees of freedom (vectorised over df): by default
    the two-sided 95% one every t-interval here is built from. The one place it is taken."""
    return stats.t.ppf(q, df)


def mean_half_width(x: np.ndarray):
    """Half-width of the t-interval of the mean of x (over its last axis, df = n - 1)."""
    n = x.shape[-1]
    return t_quantile(n - 1) * x.std(-1, ddof=1) / np.sqrt(n)


def log_t_ratio(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Welch t-interval of mean(log num) - mean(log den), vectorised over leading axes.

    Returns (centre, half_width) on the log scale; half_width is nan with < 2 values a side.
    """
    ln, ld = np.log(num), np.log(den)
    na, nb = ln.shape[-1], ld.shape[-1]
    centre = ln.mean(-1) - ld.mean(-1)
    if na < 2 or nb < 2:
        return centre, np.full(np.shape(centre), np.nan)
    va, vb = ln.var(-1, ddof=1) / na, ld.var(-1, ddof=1) / nb
    se2 = va + vb
    with np.errstate(invalid="ignore", divide="ignore"):
        df = se2**2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    # Identical repetitions: zero variance, zero width (df is then undefined).
    df = np.where(np.isfinite(df), df, na + nb - 2)
    return centre, t_quantile(df) * np.sqrt(se2)


def log_t_mean(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """t-interval of mean(log x) (centre, half_width), vectorised over leading axes."""
    lx = np.log(x)
    n = lx.shape[-1]
    if n < 2:
        return lx.mean(-1), np.full(np.shape(lx.mean(-1)), np.nan)
    return lx.mean(-1), mean_half_width(lx)


def _pool(value: float, parts: list[tuple[float, float]]) -> Interval:
    """Combine per-run (log centre, log half-width) into one interval around value."""
    parts = [(c, h) for c, h in parts if np.isfinite(c)]
    if not parts or any(not np.isfinite(h) for _, h in parts):
        return Interval(value, None, None, False)
    cs = np.array([c for c, _ in parts])
    if len(parts) == 1:
        lo, hi = cs[0] - parts[0][1], cs[0] + parts[0][1]
    else:
        # Runs are the replicates: the t-interval over their estimates ...
        centre = cs.mean()
        half = mean_half_width(cs)
        # ... widened to hold every run's own interval (few runs estimate the between-run
        # variance badly; pooling must not hide a run's own uncertainty).
        lo = min(centre - half, *(c - h for c, h in parts))
        hi = max(centre + half, *(c + h for c, h in parts))
    # The reported value is a ratio of medians; the interval is about log means. Keep the
    # value inside its interval (a widening only: coverage cannot drop).
    lo_v, hi_v = min(float(np.exp(lo)), value), max(float(np.exp(hi)), value)
    return Interval(value, lo_v, hi_v, bool(hi_v - lo_v > WIDE_FRACTION * abs(value)))


def _flat(xs: Samples) -> np.ndarray:
    return np.concatenate([np.asarray(x, dtype=float) for x in xs])


def ratio_interval(num: Samples, den: Samples) -> Interval:
    """median(num)/median(den) over all runs' repetitions, with its pooled 95% interval.

    num and den hold one sequence of times per run (paired by run: run i's numerator and
    denominator come from the same run).
    """
    if len(num) != len(den) or not num:
        raise ValueError("ratio_interval needs the same number (>= 1) of runs on each side")
    a, b = _flat(num), _flat(den)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio_interval needs at least one value on each side")
    value = float(np.median(a) / np.median(b))
    parts = []
    for x, y in zip(num, den, strict=True):
        c, h = log_t_ratio(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
        parts.append((float(c), float(h)))
    return _pool(value, parts)


def time_interval(times: Samples) -> Interval:
    """Median time over all runs' repetitions with its pooled 95% interval."""
    a = _flat(times)
    if a.size == 0:
        raise ValueError("time_interval needs at least one value")
    parts = []
    for x in times:
        c, h = log_t_mean(np.asarray(x, dtype=float))
        parts.append((float(c), float(h)))
    return _pool(float(np.median(a)), parts)


Blocks = Sequence[Sequence[float]]  # one sequence of repetition times per block


def _block_interval(value: float, logs: np.ndarray) -> Interval:
    """t-interval over per-block log estimates around value (kept inside it)."""
    if logs.size < 2:
        return Interval(value, None, None, False)
    half = mean_half_width(logs)
    lo_v = min(float(np.exp(logs.mean() - half)), value)
    hi_v = max(float(np.exp(logs.mean() + half)), value)
    return Interval(value, lo_v, hi_v, bool(hi_v - lo_v > WIDE_FRACTION * abs(value)))


def block_ratio_interval(num: Blocks, den: Blocks) -> Interval:
    """median(num)/median(den) over all repetitions, with the t-interval over the blocks'
    log(median num_b / median den_b): num[b] and den[b] come from the same block."""
    if len(num) != len(den) or not num or any(len(x) == 0 for x in (*num, *den)):
        raise ValueError("block_ratio_interval needs the same blocks (>= 1 value each) a side")
    value = float(np.median(_flat(num)) / np.median(_flat(den)))
    logs = np.log([np.median(x) / np.median(y) for x, y in zip(num, den, strict=True)])
    return _block_interval(value, logs)


def block_time_interval(times: Blocks) -> Interval:
    """Median time over all repetitions, with the t-interval over the blocks' log medians."""
    return _block_interval(
        float(np.median(_flat(times))), np.log([np.median(x) for x in times if len(x)])
    )


def block_log_medians(times: Blocks) -> np.ndarray:
    """Each block's log median time: the replicates a comparison tests."""
    return np.log([np.median(x) for x in times if len(x)])


def median(xs) -> float | None:
    """The median of the values given, Nones left out; None if there are none."""
    vals = [float(x) for x in xs if x is not None]
    return float(np.median(vals)) if vals else None


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(log values)): the mean of ratios on the scale they multiply on."""
    return float(np.exp(np.log(values).mean()))


def smallest_permutation_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p the permutation test can give n_a against n_b values: one
    split of all C(n_a + n_b, n_a) as extreme as the observed, on either side."""
    return 1.0 / math.comb(n_a + n_b, n_a) * 2


def permutation_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided permutation p-value of mean(a) - mean(b) (scipy.stats.permutation_test).

    Exact (every split) when there are at most PERMUTATIONS splits, else Monte Carlo with a
    fixed seed.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        return 1.0
    if min(x.size, y.size) < 2:  # scipy needs two a side: the few splits, exactly
        # scipy's two-sided p (twice the smaller one-sided p, at most 1), so one definition
        # holds at every size; its relative tolerance for ties of the observed difference
        z, k = np.concatenate([x, y]), x.size
        observed = x.mean() - y.mean()
        null = []
        for idx in itertools.combinations(range(z.size), k):
            inside = np.zeros(z.size, dtype=bool)
            inside[list(idx)] = True
            null.append(z[inside].mean() - z[~inside].mean())
        tol, null = abs(observed) * 1e-12, np.asarray(null)
        less, greater = np.mean(null <= observed + tol), np.mean(null >= observed - tol)
        return float(min(1.0, 2 * min(less, greater)))

    def diff(u, v, axis):
        return np.mean(u, axis=axis) - np.mean(v, axis=axis)

    res = stats.permutation_test(
        (x, y),
        diff,
        permutation_type="independent",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        alternative="two-sided",
        rng=np.random.default_rng(PERMUTATION_SEED),
    )
    return float(min(1.0, res.pvalue))
