"""The scalability card: why a curve bends, and when it beats one good thread.

Per query and kind, fitted with scipy.optimize.curve_fit to the points' ratios with
N = P / P0 (the P0 point is 1 by definition in every model and is not fitted):

* Amdahl (F speedups): S(N) = 1 / (s + (1 - s) / N), serial fraction s.
* Gustafson (G): scaled speedup N / scaleup(N) = N - s (N - 1), serial fraction s.
* Gunther's Universal Scalability Law: C(N) = N / (1 + sigma (N - 1) + kappa N (N - 1)),
  contention sigma, coherency kappa, peak N* = sqrt((1 - sigma) / kappa); C is the speedup
  (F) or the scaled speedup N / scaleup (G).
* Karp-Flatt: e(N) = (1/S - 1/N) / (1 - 1/N) per F point.
* COST (McSherry et al., HotOS 2015): the smallest P whose median time beats the median
  time of one in-process DuckDB thread on the unpartitioned table (Run.baseline).

Intervals are 95% t-intervals from the fit's covariance (df = points - parameters); N*'s
comes from multivariate-t draws of (sigma, kappa). A fit needs one point more than it has
parameters, and says so instead of printing a number.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from wisconsin.analysis.metrics import Point, as_runs
from wisconsin.analysis.stats import median, t_quantile
from wisconsin.runfiles.runfile import Run

NSTAR_DRAWS = 4000
NSTAR_SEED = 19890605


@dataclass(frozen=True)
class Param:
    name: str
    value: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class Fit:
    model: str  # "Amdahl", "Gustafson", "USL"
    params: tuple[Param, ...]
    points: int  # points fitted (N > 1)
    note: str  # why there is no fit, or a remark on it ("" otherwise)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class Cost:
    P: int | None  # smallest P beating the baseline; None: unbounded or not measurable
    baseline_s: float | None
    text: str  # "P = 2", "unbounded (...)", "not recorded (...)"


@dataclass(frozen=True)
class Card:
    query: str
    kind: str
    P0: int
    fits: tuple[Fit, ...]
    karp_flatt: tuple[tuple[int, float], ...]  # (P, e) for F points beyond P0
    cost: Cost | None  # F only
    excluded: tuple[int, ...]  # P of points left out (harness-dominated or unverified)
    oversubscribed: tuple[int, ...] = ()  # P of fitted points with more threads than cores


def amdahl(n, s):
    return 1.0 / (s + (1.0 - s) / n)


def gustafson(n, s):
    return n - s * (n - 1.0)


def usl(n, sigma, kappa):
    return n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def _fit(model: str, f, names, p0, bounds, n, y) -> Fit:
    k = len(names)
    n, y = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    if n.size < k + 1:
        names = (*names, "N*") if model == "USL" else names
        return Fit(
            model,
            tuple(Param(x, None, None, None) for x in names),
            int(n.size),
            f"too few points: {n.size} beyond P0, {model} needs {k + 1}",
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optimize.OptimizeWarning)
        popt, pcov = optimize.curve_fit(f, n, y, p0=p0, bounds=bounds, maxfev=20000)
    df = n.size - k
    tq = t_quantile(df)  # 95%, two-sided
    params = []
    for i, name in enumerate(names):
        se = math.sqrt(pcov[i, i]) if np.isfinite(pcov[i, i]) else math.nan
        if math.isfinite(se):
            lo = max(bounds[0][i], popt[i] - tq * se)
            hi = min(bounds[1][i], popt[i] + tq * se)
            params.append(Param(name, float(popt[i]), float(lo), float(hi)))
        else:
            params.append(Param(name, float(popt[i]), None, None))
    if model == "USL":
        params.append(_nstar(popt, pcov, df))
    return Fit(model, tuple(params), int(n.size), "")


def _peak(sigma, kappa):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(kappa > 0, np.sqrt(np.clip(1.0 - sigma, 0, None) / kappa), np.inf)


def _nstar(popt, pcov, df) -> Param:
    """Peak N* = sqrt((1 - sigma)/kappa) (inf when kappa = 0) and its 95% interval."""
    value = float(_peak(np.asarray(popt[0]), np.asarray(popt[1])))
    if not np.all(np.isfinite(pcov)):
        return Param("N*", value, None, None)
    draws = stats.multivariate_t(
        loc=popt, shape=pcov + 1e-300 * np.eye(2), df=df, allow_singular=True
    ).rvs(size=NSTAR_DRAWS, random_state=np.random.default_rng(NSTAR_SEED))
    ns = _peak(np.clip(draws[:, 0], 0, 1), np.clip(draws[:, 1], 0, None))
    # Order statistics rather than np.percentile: draws with kappa <= 0 have no peak (inf).
    ns = np.sort(ns)
    lo, hi = ns[int(0.025 * ns.size)], ns[int(0.975 * ns.size) - 1]
    return Param("N*", value, float(lo), float(hi))


def fit_amdahl(n: Sequence[float], s: Sequence[float]) -> Fit:
    return _fit("Amdahl", amdahl, ("s",), (0.1,), ([0.0], [1.0]), n, s)


def fit_gustafson(n: Sequence[float], scaled: Sequence[float]) -> Fit:
    return _fit("Gustafson", gustafson, ("s",), (0.1,), ([0.0], [1.0]), n, scaled)


def fit_usl(n: Sequence[float], c: Sequence[float]) -> Fit:
    return _fit("USL", usl, ("sigma", "kappa"), (0.05, 0.001), ([0.0, 0.0], [1.0, 1.0]), n, c)


def cost(points: Sequence[Point], runs: Sequence[Run]) -> Cost:
    """COST of one F series against the single-thread baseline of the same table size."""
    pts = sorted(points, key=lambda p: p.P)
    rows = {r.rows for run in runs for r in run.measurements if r.table == pts[0].table}
    query = pts[0].query
    times = [
        t
        for run in runs
        for b in run.baseline
        if b.query == query and b.rows in rows
        for t in b.times
    ]
    if not times:
        return Cost(None, None, "not recorded (the run file has no single-thread baseline)")
    base = median(times)
    for p in pts:
        if p.time_median < base:
            return Cost(p.P, base, f"P = {p.P}")
    return Cost(None, base, f"unbounded (no P up to {pts[-1].P} beats one thread's {base:.4g} s)")


def cards(points: Sequence[Point], runs: Run | Sequence[Run]) -> list[Card]:
    """One card per (kind, query) of the points (pooled runs: runs of one configuration)."""
    runs = as_runs(runs)
    out = []
    for key in dict.fromkeys((p.kind, p.query) for p in points):
        kind, query = key
        pts = sorted((p for p in points if (p.kind, p.query) == key), key=lambda p: p.P)
        P0 = pts[0].P0
        used = [p for p in pts if p.P != P0 and p.headline]
        excluded = tuple(p.P for p in pts if p.P != P0 and not p.headline)
        n = [p.P / P0 for p in used]
        if kind == "F":
            s = [p.ratio.value for p in used]
            fits = (fit_amdahl(n, s), fit_usl(n, s))
            kf = tuple((p.P, p.karp_flatt) for p in pts if p.karp_flatt is not None)
            c = cost(pts, runs)
        else:
            scaled = [x / p.ratio.value for x, p in zip(n, used, strict=True)]
            fits = (fit_gustafson(n, scaled), fit_usl(n, scaled))
            kf, c = (), None
        over = tuple(p.P for p in used if p.oversubscribed)
        out.append(Card(query, kind, P0, fits, kf, c, excluded, over))
    return out
