"""Speedup, scaleup, their bounds and the causes of bending, from runs (pure, no I/O).

Definitions follow the Tandem report (TR 89.4, "The SQL Release 2 Benchmark"):

* speedup(P) = T(F_P0) / T(F_P) on the fixed-size F tables,
* batch scaleup(P) = T(G_P) / T(G_P0) on the G tables (fixed rows per partition),

where P0 is the smallest partition count measured for that kind and query and T is the
median of the timed repetitions. Every ratio but P0's (1 by definition) carries a 95%
interval (wisconsin.analysis.stats); several runs of one configuration are pooled as replicates.
Each point is also held against its measured bound (wisconsin.analysis.bound).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wisconsin.analysis import bound as bnd
from wisconsin.analysis import stats
from wisconsin.runfiles.runfile import Measurement, Run

Ratio = stats.Interval  # a ratio of medians with its 95% interval
HARNESS_SHARE = 0.80  # engine share below this: the point measures the harness
HARNESS_FACTOR = 20.0  # ... or its median below this many harness overheads


@dataclass(frozen=True)
class Point:
    """One (query, kind, P): its times, its ratio against P0, its bound, what bent it."""

    query: str
    kind: str  # "F" (speedup) or "G" (scaleup)
    table: str
    P: int
    P0: int
    runs: int  # run files pooled
    reps: int  # timed repetitions over all runs
    time_median: float
    time_min: float
    time_max: float
    time: stats.Interval  # median time with its pooled 95% interval
    ratio: Ratio  # speedup for F, scaleup for G; no interval at P0
    ideal: float  # P/P0 for speedup, 1.0 for scaleup
    oversubscribed: bool  # more DuckDB threads than usable cores
    efficiency: float  # ratio / ideal for speedup, ideal / ratio for scaleup
    bound: bnd.Bound | None  # the best time this machine allows here
    bound_note: str  # why there is no bound ("" when there is one)
    bound_ratio: float | None  # the best ratio given the measured P0 time and this bound
    of_bound: float | None  # bound time / median time (1 = as fast as the machine allows)
    beats_bound: bool  # the time's interval lies wholly below the bound: a measuring error
    engine_share: float | None  # median max partition engine time / wall; None: not recorded
    overhead_s: float | None  # median harness overhead; None: not recorded
    harness: bool | None  # harness-dominated (kept out of headline ratios); None: unknown
    base_harness: bool | None  # the P0 point (the ratio's other half) is harness-dominated
    karp_flatt: float | None  # speedup only, undefined at P = P0
    startup: float | None  # median over reps of the mean partition start delay (s)
    worker_startup: float  # Measurement.startup_s: opening the P partitions (s)
    skew: float | None  # slowest / mean partition engine time
    interference: float | None  # per-partition engine time vs the same work at P0
    cpu_util: float | None  # sum cpu / (wall * min(P, cores))
    verified: bool  # every timed repetition's answer was verified
    # Replicates behind the ratio's interval: blocks over all runs (>= 2: run-to-run
    # variation is in it; 1: the interval is within one block, that variation unknown).
    blocks: int = 1

    @property
    def headline(self) -> bool:
        """A ratio to quote: verified, and neither this point nor its base (P0) known to be
        harness-dominated (headline_ratio)."""
        return self.verified and headline_ratio(self.harness, self.base_harness)


def ratio_interval(num: Sequence[float], den: Sequence[float]) -> Ratio:
    """stats.median(num)/stats.median(den) of one run's repetitions with its 95% interval."""
    return stats.ratio_interval([num], [den])


# The old name, kept so wisconsin.analysis.schedule (issue 8's stopping rule) keeps working until it
# calls ratio_interval: it is a t-interval on log times now, not a bootstrap.
bootstrap_ratio = ratio_interval


def efficiency(speedup: float, p: float) -> float:
    """Parallel efficiency: speedup over the ideal p = P/P0."""
    return speedup / p


def karp_flatt(speedup: float, p: float) -> float | None:
    """Experimentally determined serial fraction e = (1/S - 1/p)/(1 - 1/p); None at p = 1."""
    if p <= 1:
        return None
    return (1.0 / speedup - 1.0 / p) / (1.0 - 1.0 / p)


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
    return stats.median([float(np.mean([s.engine_s for s in r.partitions])) for r in m.repetitions])


def startup_delay(m: Measurement) -> float | None:
    """Median over repetitions of the mean partition start delay; None without samples."""
    reps = [r for r in m.repetitions if r.partitions]
    if not reps:
        return None
    return stats.median([float(np.mean([s.start_delay_s for s in r.partitions])) for r in reps])


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
    return stats.median(vals)


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
    return stats.median(vals) if vals else None


def engine_share(ms: Sequence[Measurement]) -> float | None:
    """Median recorded engine share (Repetition.engine_share); None: not recorded."""
    vals = [r.engine_share for m in ms for r in m.repetitions if r.engine_share is not None]
    return stats.median(vals) if vals else None


def harness_dominated(share: float | None, overhead: float | None, t: float) -> bool | None:
    """Engine share < 80% or median < 20x the harness overhead; None when neither recorded."""
    if share is None and overhead is None:
        return None
    return bool(
        (share is not None and share < HARNESS_SHARE)
        or (overhead is not None and t < HARNESS_FACTOR * overhead)
    )


def measurement_harness(ms: Sequence[Measurement]) -> bool | None:
    """Whether one point (a measurement, or its replicates in pooled runs) is
    harness-dominated: its recorded engine share and overhead against its median time."""
    times = [t for m in ms for t in m.times]
    if not times:
        return None
    return harness_dominated(engine_share(ms), bnd.recorded_overhead(ms), stats.median(times))


def headline_ratio(harness: bool | None, base_harness: bool | None) -> bool:
    """A ratio is only as good as both its points: it is a headline ratio unless the point
    or its base (P0) is known to be harness-dominated. The one definition shared by the
    report, plots and scalability cards (Point.headline) and the stopping rule
    (wisconsin.analysis.schedule.headline_ratios)."""
    return harness is not True and base_harness is not True


def as_runs(runs: Run | Sequence[Run]) -> list[Run]:
    """One run or several runs of one configuration, as a non-empty list."""
    out = [runs] if isinstance(runs, Run) else list(runs)
    if not out:
        raise ValueError("no runs given")
    return out


def pooled(ms: Sequence[Measurement]) -> Measurement:
    """One measurement holding every run's timed repetitions (for the causes of bending)."""
    reps = tuple(r for m in ms for r in m.repetitions)
    return dataclasses.replace(ms[0], repetitions=reps)


def series(runs: Sequence[Run]) -> dict[tuple[str, str], list[list[Measurement]]]:
    """(kind, query) -> per P (ascending) the measurement of that table in every run.

    Only (table, query) pairs timed in every run are kept, so ratios pair runs."""
    first = runs[0]
    groups: dict[tuple[str, str], list[list[Measurement]]] = {}
    for m in first.measurements:
        # Without timed repetitions there is no time to report; kinds other than F and G
        # have no defined ratio.
        if not m.times or m.kind not in ("F", "G"):
            continue
        same = [r.measurement(m.table, m.query) for r in runs]
        if any(x is None or not x.times for x in same):
            continue
        groups.setdefault((m.kind, m.query), []).append(same)  # type: ignore[arg-type]

    listed = first.config.queries  # the run's own query list, in its order

    def order(key: tuple[str, str]) -> tuple[str, int, str]:
        kind, q = key
        return (kind, listed.index(q) if q in listed else len(listed), q)

    return {
        k: sorted(groups[k], key=lambda ms: ms[0].partitions) for k in sorted(groups, key=order)
    }


def paired_blocks(
    runs: Sequence[Run], num: Sequence[Measurement], den: Sequence[Measurement]
) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]]]:
    """The blocks of every run in which both num's and den's measurement were timed, as
    (num times per block, den times per block), paired block by block."""
    a_out, b_out = [], []
    for run, a, b in zip(runs, num, den, strict=True):
        ga, gb = run.times_by_block(a), run.times_by_block(b)
        for k in sorted(ga.keys() & gb.keys()):
            a_out.append(ga[k])
            b_out.append(gb[k])
    return a_out, b_out


def block_ratio(runs: Sequence[Run], num: Sequence[Measurement], den: Sequence[Measurement]):
    """(ratio with its interval, blocks used): over the blocks when there are two or more
    (run-to-run variation included), else within the run (stats.ratio_interval)."""
    a, b = paired_blocks(runs, num, den)
    if len(a) >= 2 and blocked(runs):
        return stats.block_ratio_interval(a, b), len(a)
    return stats.ratio_interval([m.times for m in num], [m.times for m in den]), len(a)


def blocked(runs: Sequence[Run]) -> bool:
    """Some run was measured in blocks; files written before blocks keep their pooling
    (the t-interval over runs widened to hold each run's own: stats.ratio_interval)."""
    return any(r.config.blocks for r in runs)


def compute_points(runs: Run | Sequence[Run]) -> list[Point]:
    """All points of one run or of several pooled runs of one configuration, ordered by
    kind (F, G), query (run-file order) and P."""
    runs = as_runs(runs)
    cores = machine_cores(runs[0])
    points: list[Point] = []
    for per_p in series(runs).values():
        base = per_p[0]
        t0 = stats.median([t for m in base for t in m.times])
        points += [_point(runs, cores, base, t0, ms) for ms in per_p]
    return points


def _point(
    runs: Sequence[Run], cores: int, base: list[Measurement], t0: float, ms: list[Measurement]
) -> Point:
    """One P of a (kind, query) series: ms holds its measurement in every run, base P0's
    (whose median time is t0)."""
    run, m = runs[0], ms[0]
    kind = m.kind
    times = [x.times for x in ms]
    flat = [t for ts in times for t in ts]
    p = m.partitions / base[0].partitions
    own = paired_blocks(runs, ms, ms)[0]
    if m.partitions == base[0].partitions:
        ratio, nblocks = Ratio(1.0, None, None, False), len(own)  # 1 by definition: no interval
    elif kind == "F":
        ratio, nblocks = block_ratio(runs, base, ms)
    else:
        ratio, nblocks = block_ratio(runs, ms, base)
    tmed = stats.median(flat)
    if kind == "F":
        ideal, eff, kf = p, efficiency(ratio.value, p), karp_flatt(ratio.value, p)
    else:
        ideal, eff, kf = 1.0, 1.0 / ratio.value, None
    tint = (
        stats.block_time_interval(own)
        if len(own) >= 2 and blocked(runs)
        else stats.time_interval(times)
    )
    b, note = bnd.point_bound(run, ms)
    harness = measurement_harness(ms)
    return Point(
        query=m.query,
        kind=kind,
        table=m.table,
        P=m.partitions,
        P0=base[0].partitions,
        runs=len(ms),
        blocks=nblocks,
        reps=len(flat),
        time_median=tmed,
        time_min=min(flat),
        time_max=max(flat),
        time=tint,
        ratio=ratio,
        ideal=ideal,
        oversubscribed=bnd.threads(run, m.partitions) > cores,
        efficiency=eff,
        bound=b,
        bound_note=note,
        **_against_bound(b, kind, t0, tmed, tint),
        engine_share=engine_share(ms),
        overhead_s=bnd.recorded_overhead(ms),
        harness=harness,
        base_harness=harness if ms is base else measurement_harness(base),
        karp_flatt=kf,
        **_causes(ms, base, cores),
    )


def _against_bound(b: bnd.Bound | None, kind: str, t0: float, tmed: float, tint) -> dict:
    """Point's bound_ratio, of_bound and beats_bound: the best ratio the bound allows given
    P0's median time t0, the share of it this point reaches, and whether its interval lies
    wholly below it."""
    if b is None:
        return {"bound_ratio": None, "of_bound": None, "beats_bound": False}
    return {
        "bound_ratio": t0 / b.time_s if kind == "F" else b.time_s / t0,
        "of_bound": b.time_s / tmed,
        "beats_bound": (tint.hi if tint.hi is not None else tmed) < b.time_s,
    }


def _causes(ms: list[Measurement], base: list[Measurement], cores: int) -> dict:
    """Point's causes of bending, over every run's repetitions pooled (and P0's, base)."""
    pm, bm = pooled(ms), pooled(base)
    return {
        "startup": startup_delay(pm),
        "worker_startup": float(np.median([x.startup_s for x in ms])),
        "skew": skew(pm),
        "interference": interference(pm, bm),
        "cpu_util": cpu_utilisation(pm, cores),
        "verified": all(r.verified for r in pm.repetitions),
    }
