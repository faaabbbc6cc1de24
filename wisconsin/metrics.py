"""Speedup, scaleup and the causes of bending, computed from a run (pure functions, no I/O).

Definitions follow the Tandem report (TR 89.4, "The SQL Release 2 Benchmark"):

* speedup(P) = T(F_P0) / T(F_P) on the fixed-size F tables,
* batch scaleup(P) = T(G_P) / T(G_P0) on the G tables (fixed rows per partition),

where P0 is the smallest partition count measured for that kind and query and T is the
median of the timed repetitions. Every ratio carries a 95% bootstrap confidence interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wisconsin.runfile import QUERIES, Measurement, Run

BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 19890605  # the date of the auditor's report; fixed so reports are repeatable
WIDE_FRACTION = 0.10  # a CI wider than this fraction of its ratio is marked "wide"


@dataclass(frozen=True)
class Ratio:
    """A ratio of medians with its 95% bootstrap interval (lo/hi None with < 2 repetitions)."""

    value: float
    lo: float | None
    hi: float | None
    wide: bool


@dataclass(frozen=True)
class Point:
    """One (query, kind, P): its times, its ratio against P0 and what bent it."""

    query: str
    kind: str  # "F" (speedup) or "G" (scaleup)
    table: str
    P: int
    P0: int
    reps: int
    time_median: float
    time_min: float
    time_max: float
    ratio: Ratio  # speedup for F, scaleup for G
    ideal: float  # P/P0 for speedup, 1.0 for scaleup
    ceiling: float  # the best ratio this hardware allows (see hardware_ceiling)
    oversubscribed: bool  # P exceeds the usable cores
    efficiency: float  # ratio / ideal for speedup, ideal / ratio for scaleup
    of_ceiling: float  # the same against the hardware ceiling instead of the ideal
    karp_flatt: float | None  # speedup only, undefined at P = P0
    startup: float | None  # median over reps of the mean partition start delay (s)
    worker_startup: float  # Measurement.startup_s: opening the P partitions (s)
    skew: float | None  # slowest / mean partition engine time
    interference: float | None  # per-partition engine time vs the same work at P0
    cpu_util: float | None  # sum cpu / (wall * min(P, cores))
    verified: bool  # every timed repetition's answer was verified


def median(xs: Sequence[float]) -> float:
    """Median of a non-empty sequence."""
    return float(np.median(np.asarray(xs, dtype=float)))


def bootstrap_ratio(
    num: Sequence[float],
    den: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    wide_fraction: float = WIDE_FRACTION,
) -> Ratio:
    """median(num)/median(den) with a percentile 95% CI, resampling each side independently."""
    a = np.asarray(num, dtype=float)
    b = np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("bootstrap_ratio needs at least one value on each side")
    value = float(np.median(a) / np.median(b))
    if a.size < 2 or b.size < 2:
        # One repetition carries no information about spread: no interval rather than a
        # falsely exact one.
        return Ratio(value, None, None, False)
    # A fresh generator per call so each ratio's interval does not depend on call order.
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, size=(resamples, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(resamples, b.size))], axis=1)
    lo, hi = np.percentile(ma / mb, [2.5, 97.5])
    wide = bool(hi - lo > wide_fraction * abs(value))
    return Ratio(value, float(lo), float(hi), wide)


def efficiency(speedup: float, p: float) -> float:
    """Parallel efficiency: speedup over the ideal p = P/P0."""
    return speedup / p


def karp_flatt(speedup: float, p: float) -> float | None:
    """Experimentally determined serial fraction e = (1/S - 1/p)/(1 - 1/p); None at p = 1."""
    if p <= 1:
        return None
    return (1.0 / speedup - 1.0 / p) / (1.0 - 1.0 / p)


def speedup_ceiling(P: int, P0: int, cores: int) -> float:
    """Best speedup the machine allows: min(P, cores)/min(P0, cores)."""
    return min(P, cores) / min(P0, cores)


def scaleup_ceiling(P: int, P0: int, cores: int) -> float:
    """Best scaleup the machine allows: P/P0 times the work on min(P,cores)/min(P0,cores) CPUs."""
    return (P / P0) / speedup_ceiling(P, P0, cores)


def machine_cores(run: Run) -> int:
    """Usable cores: the local machine's, or the sum over the cluster's hosts."""
    if run.config.cluster is not None and run.topology.hosts:
        return sum(h.cores for h in run.topology.hosts)
    return run.environment.usable_cores


def _per_partition(m: Measurement) -> bool:
    # Skew and interference need one sample per partition; shared-memory runs that report a
    # single engine sample for the whole statement cannot show them.
    return bool(m.repetitions) and all(len(r.partitions) == m.partitions for r in m.repetitions)


def _mean_engine(m: Measurement) -> float | None:
    if not _per_partition(m):
        return None
    return median([float(np.mean([s.engine_s for s in r.partitions])) for r in m.repetitions])


def startup_delay(m: Measurement) -> float | None:
    """Median over repetitions of the mean partition start delay; None without samples."""
    reps = [r for r in m.repetitions if r.partitions]
    if not reps:
        return None
    return median([float(np.mean([s.start_delay_s for s in r.partitions])) for r in reps])


def skew(m: Measurement) -> float | None:
    """Median over repetitions of slowest / mean partition engine time."""
    if not _per_partition(m):
        return None
    vals = []
    for r in m.repetitions:
        e = np.array([s.engine_s for s in r.partitions], dtype=float)
        if e.mean() <= 0:
            return None
        vals.append(float(e.max() / e.mean()))
    return median(vals)


def interference(m: Measurement, base: Measurement) -> float | None:
    """Per-partition engine time at P relative to the same per-partition work at P0.

    F tables: a partition at P holds P0/P of a P0 partition's rows, so the expected engine
    time is engine(P0) * P0/P. G tables: per-partition work is constant. 1.0 = no
    interference; above 1 the partitions slow each other down.
    """
    e, e0 = _mean_engine(m), _mean_engine(base)
    if e is None or e0 is None or e0 <= 0:
        return None
    expected = e0 * base.partitions / m.partitions if m.kind == "F" else e0
    return e / expected


def cpu_utilisation(m: Measurement, cores: int) -> float | None:
    """Median over repetitions of sum(cpu_s) / (wall_s * min(P, cores))."""
    vals = []
    for r in m.repetitions:
        if not r.partitions or r.wall_s <= 0:
            continue
        vals.append(sum(s.cpu_s for s in r.partitions) / (r.wall_s * min(m.partitions, cores)))
    return median(vals) if vals else None


def compute_points(
    run: Run,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    wide_fraction: float = WIDE_FRACTION,
) -> list[Point]:
    """All points of a run, ordered by kind (F, G), query (run-file order) and P."""
    cores = machine_cores(run)
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in run.measurements:
        # Without timed repetitions there is no time to report; kinds other than F and G
        # have no defined ratio.
        if m.times and m.kind in ("F", "G"):
            groups.setdefault((m.kind, m.query), []).append(m)

    def order(key: tuple[str, str]) -> tuple[str, int, str]:
        kind, q = key
        return (kind, QUERIES.index(q) if q in QUERIES else len(QUERIES), q)

    points: list[Point] = []
    for kind, query in sorted(groups, key=order):
        ms = sorted(groups[(kind, query)], key=lambda m: m.partitions)
        base = ms[0]
        for m in ms:
            p = m.partitions / base.partitions
            if kind == "F":
                ratio = bootstrap_ratio(
                    base.times, m.times, resamples=resamples, seed=seed, wide_fraction=wide_fraction
                )
                ideal = p
                ceiling = speedup_ceiling(m.partitions, base.partitions, cores)
                eff = efficiency(ratio.value, p)
                of_ceiling = ratio.value / ceiling
                kf = karp_flatt(ratio.value, p)
            else:
                ratio = bootstrap_ratio(
                    m.times, base.times, resamples=resamples, seed=seed, wide_fraction=wide_fraction
                )
                ideal = 1.0
                ceiling = scaleup_ceiling(m.partitions, base.partitions, cores)
                eff = ideal / ratio.value
                of_ceiling = ceiling / ratio.value
                kf = None
            points.append(
                Point(
                    query=query,
                    kind=kind,
                    table=m.table,
                    P=m.partitions,
                    P0=base.partitions,
                    reps=len(m.times),
                    time_median=median(m.times),
                    time_min=min(m.times),
                    time_max=max(m.times),
                    ratio=ratio,
                    ideal=ideal,
                    ceiling=ceiling,
                    oversubscribed=m.partitions > cores,
                    efficiency=eff,
                    of_ceiling=of_ceiling,
                    karp_flatt=kf,
                    startup=startup_delay(m),
                    worker_startup=m.startup_s,
                    skew=skew(m),
                    interference=interference(m, base),
                    cpu_util=cpu_utilisation(m, cores),
                    verified=all(r.verified for r in m.repetitions),
                )
            )
    return points
