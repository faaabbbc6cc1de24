"""The capacity model across partition counts: Gunther's Universal Scalability Law fitted
to throughput measured at the smaller P, predicting a larger one, with its error where that
P was measured.

X(P) = lambda P / (1 + sigma (P - 1) + kappa P (P - 1)), in absolute throughput, so the
smallest P's own windows are fitted too (the relative form of scalability.fit_usl would
take P0's throughput as exact). Each measured window (a repeat, a run) is one point: with
more points than the three parameters, the fit has 95% t-intervals from its covariance,
and the prediction's interval comes from multivariate-t draws of the parameters (as
scalability's N*). With four or more P measured, the largest is held out and predicted;
with three, every P is fitted and the next (twice the largest) is predicted, with no error
to state.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from wisconsin.analysis.scalability import Param, usl
from wisconsin.analysis.stats import median, t_quantile

DRAWS = 4000
SEED = 19930601
MIN_FITTED_P = 3  # three parameters: three partition counts at least


@dataclass(frozen=True)
class Measured:
    """One P's throughput: each window's (a repeat of a run, or a run) delivered rate."""

    P: int
    values: tuple[float, ...]

    @property
    def middle(self) -> float:
        return median(self.values)

    def fmt(self, unit: str) -> str:
        if len(self.values) == 1:
            return f"{self.values[0]:.1f} {unit} (one window)"
        return (
            f"{self.middle:.1f} [{min(self.values):.1f}-{max(self.values):.1f}] {unit} "
            f"(median [min-max] of {len(self.values)} windows)"
        )


@dataclass(frozen=True)
class Prediction:
    P: int
    value: float
    low: float | None  # 95% of the fitted curve at P (None: no interval, df = 0)
    high: float | None
    measured: Measured | None  # None: P was not measured (or was fitted)

    def error(self) -> tuple[float, float | None, float | None] | None:
        """(measured median / predicted - 1, its low and high: the measured range against
        the prediction's interval, widest pairing); None when P was not measured."""
        m = self.measured
        if m is None or self.value <= 0:
            return None
        mid = m.middle / self.value - 1
        if self.low is None or self.high is None or self.low <= 0:
            return mid, None, None
        return mid, min(m.values) / self.high - 1, max(m.values) / self.low - 1


@dataclass(frozen=True)
class Capacity:
    fitted: tuple[int, ...]  # the P fitted
    points: int  # windows fitted
    params: tuple[Param, ...]  # lambda, sigma, kappa (empty when there is no fit)
    prediction: Prediction | None
    note: str  # why there is no fit, or why no error is stated ("" otherwise)


def _draws(popt, pcov, df: int):
    if df < 1 or not np.all(np.isfinite(pcov)):
        return None
    d = stats.multivariate_t(
        loc=popt, shape=pcov + 1e-300 * np.eye(3), df=df, allow_singular=True
    ).rvs(size=DRAWS, random_state=np.random.default_rng(SEED))
    return np.column_stack(
        [np.clip(d[:, 0], 1e-12, None), np.clip(d[:, 1], 0, 1), np.clip(d[:, 2], 0, 1)]
    )


def _curve(p, lam, sigma, kappa):
    return lam * usl(p, sigma, kappa)


def model(measured: Sequence[Measured], hold_out: bool = True) -> Capacity:
    """Fit the smaller P and predict the largest (four or more P measured, hold_out), or fit
    every P and predict twice the largest (three, or not hold_out); too few P: the reason,
    no numbers."""
    pts = sorted((m for m in measured if m.values), key=lambda m: m.P)
    held = pts[-1] if hold_out and len(pts) > MIN_FITTED_P else None
    fit = pts[:-1] if held is not None else pts
    if len(fit) < MIN_FITTED_P:
        have = ", ".join(str(m.P) for m in pts) or "none"
        return Capacity(
            tuple(m.P for m in fit), 0, (), None,
            f"too few partition counts: {have} measured, the model needs {MIN_FITTED_P} to fit",
        )  # fmt: skip
    x = np.array([m.P for m in fit for _ in m.values], dtype=float)
    y = np.array([v for m in fit for v in m.values], dtype=float)
    lam0 = max(fit[0].middle / fit[0].P, 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optimize.OptimizeWarning)
        popt, pcov = optimize.curve_fit(
            _curve, x, y, p0=(lam0, 0.05, 0.001),
            bounds=([1e-12, 0.0, 0.0], [np.inf, 1.0, 1.0]), maxfev=20000,
        )  # fmt: skip
    df = y.size - 3
    params = []
    for i, name in enumerate(("lambda", "sigma", "kappa")):
        se = math.sqrt(pcov[i, i]) if df > 0 and np.isfinite(pcov[i, i]) else math.nan
        if math.isfinite(se):
            tq = t_quantile(df)
            lo = max(0.0, popt[i] - tq * se)
            hi = popt[i] + tq * se if i == 0 else min(1.0, popt[i] + tq * se)
            params.append(Param(name, float(popt[i]), float(lo), float(hi)))
        else:
            params.append(Param(name, float(popt[i]), None, None))
    target = held.P if held is not None else 2 * fit[-1].P
    value = float(_curve(target, *popt))
    draws = _draws(popt, pcov, df)
    lo = hi = None
    if draws is not None:
        at = np.sort(_curve(target, draws[:, 0], draws[:, 1], draws[:, 2]))
        lo, hi = float(at[int(0.025 * at.size)]), float(at[int(0.975 * at.size) - 1])
    notes = []
    if held is None:
        notes.append(
            f"every measured P was fitted: P = {target} is predicted, no error can be stated"
        )
    if df < 1:
        notes.append("as many windows as parameters: no interval (repeat the windows to get one)")
    note = "; ".join(notes)
    return Capacity(
        tuple(m.P for m in fit), int(y.size), tuple(params),
        Prediction(target, value, lo, hi, held), note,
    )  # fmt: skip


def _pct(x: float) -> str:
    return f"{x:+.0%}"


def lines(c: Capacity, unit: str) -> list[str]:
    """The model in words: the fit, the prediction, the measured value and the error."""
    head = "capacity model (USL: X(P) = lambda P / (1 + sigma (P-1) + kappa P (P-1)))"
    if c.prediction is None:
        return [f"{head}: {c.note}"]

    def par(p: Param, digits: int) -> str:
        iv = "" if p.lo is None else f" [{p.lo:.{digits}f}-{p.hi:.{digits}f}]"
        return f"{p.name} {p.value:.{digits}f}{iv}"

    lam, sigma, kappa = c.params
    fitted = ", ".join(map(str, c.fitted))
    out = [
        f"{head} fitted on P = {fitted} ({c.points} windows): {par(lam, 1)} {unit} per "
        f"partition, {par(sigma, 3)}, {par(kappa, 4)}"
        + ("" if lam.lo is None else " (95% intervals)")
    ]
    p = c.prediction
    iv = "" if p.low is None else f" [{p.low:.1f}-{p.high:.1f}]"
    text = f"P = {p.P}: predicted {p.value:.1f}{iv} {unit}"
    err = p.error()
    if err is not None:
        mid, lo, hi = err
        text += f"; measured {p.measured.fmt(unit)}; error {_pct(mid)}"
        text += "" if lo is None else f" [{_pct(lo)} to {_pct(hi)}]"
        text += " (measured against predicted)"
    out.append(text)
    if c.note:
        out.append(c.note)
    return out
