"""What a DebitCredit run means: steadiness, tps by the rule, peak tps, scaleup, remote share.

Throughput is delivered: transactions committed in the measured window per second, never
the offered rate. A step is steady when its per-second series show (metrics.steadiness):
delivered tps drifting at most 10% between the window's first and last thirds (or within
the step's own noise, at most 25%: see drift_of), no partition's engine memory still
growing, and nothing spilled to temp files. Only steady steps set the headline:

- peak tps: the delivered rate of the closed (N streams, no think time) steps;
- tps by the rule: the highest delivered rate of a steady step in which `share` (95%) of the
  transactions finished within `limit_s` (1 s) -- those that failed or were still queued
  when the drain ended count as too slow -- and, for open arrivals, at least 90% of the
  window's arrivals were answered within it and at most `limit_s` worth of offered arrivals
  were left unanswered (Little's law: a longer backlog means the next arrivals wait more
  than `limit_s`; both matter in short windows, where an overload has not yet pushed the
  percentile past the limit).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from wisconsin.oltp import histogram
from wisconsin.oltp.compare import ratio as scaleup  # noqa: F401  (B / A, extremes paired)
from wisconsin.oltp.series import (
    BATCH_S,
    DRIFT_CAP,
    DRIFT_LIMIT,
    MEMORY_GROWTH_LIMIT,
    MEMORY_GROWTH_SLACK,
    MIN_JUDGED_S,
    MIN_WANDER_BATCHES,
    NOISE_SIGMAS,
    Interval,
    as_json,
    batch_means,
    batch_noise,
    drift_of,
    growth_of,
    interval,
)
from wisconsin.workloads.debitcredit.driver import REMOTE_SHARE
from wisconsin.workloads.debitcredit.runfile import DebitCreditRun, PartitionResult, Step
from wisconsin.workloads.debitcredit.schema import Sizing

# the series' names DebitCredit's readers know from here
__all__ = [
    "BATCH_S", "DRIFT_CAP", "DRIFT_LIMIT", "MEMORY_GROWTH_LIMIT", "MEMORY_GROWTH_SLACK",
    "MIN_JUDGED_S", "MIN_WANDER_BATCHES", "NOISE_SIGMAS", "Interval", "as_json", "batch_means",
    "batch_noise", "drift_of", "growth_of", "interval",
]  # fmt: skip

DELIVERY_SHORTFALL = 0.10  # an open step answering under 90% of its arrivals is overloaded


@dataclass(frozen=True)
class Steadiness:
    steady: bool | None  # None: not judged (no series recorded, or the window is too short)
    why: str  # what was found, in a few words
    drift: float | None = None  # delivered tps, last third / first third - 1
    drift_allowed: float = DRIFT_LIMIT
    memory_growth: int = 0  # bytes, the largest of any partition
    memory_allowed: int = MEMORY_GROWTH_SLACK
    spilled: int = 0  # temp-file bytes, the most of any partition at any sample


def tps_drift(step: Step) -> tuple[float | None, float]:
    """drift_of the step's whole seconds."""
    return drift_of(step.tps_series[: int(step.duration_s + 1e-9)] or step.tps_series)


def memory_growth(step: Step) -> tuple[int, int]:
    """(the largest growth of a partition's engine memory, last third of its samples against
    the first, in bytes; the growth allowed for that partition)."""
    worst, allowed = 0, MEMORY_GROWTH_SLACK
    for series in step.memory_bytes:
        if len(series) < MIN_JUDGED_S:
            continue
        grew, limit = growth_of(series)
        if grew >= worst:
            worst, allowed = grew, limit
    return worst, allowed


def steadiness(step: Step) -> Steadiness:
    spilled = max((max(s, default=0) for s in step.temp_bytes), default=0)
    if not step.tps_series:
        return Steadiness(None, "no per-second series", spilled=spilled)
    whole = int(step.duration_s + 1e-9)
    if whole < MIN_JUDGED_S:
        return Steadiness(None, f"{step.duration_s:g} s: too short", spilled=spilled)
    drift, allowed = tps_drift(step)
    grew, mem_allowed = memory_growth(step)
    why = []
    if drift is None:
        why.append("nothing delivered")
    elif abs(drift) > allowed:
        why.append(f"tps drift {drift:+.0%}")
    if grew > mem_allowed:
        why.append(f"memory +{grew / 2**20:.0f} MB")
    if spilled > 0:
        why.append(f"spilled {spilled / 2**20:.1f} MB")
    if not step.memory_bytes:
        why.append("engine memory not recorded")
    return Steadiness(
        not why,
        "; ".join(why) or f"tps drift {drift:+.0%}, memory {grew / 2**20:+.0f} MB",
        drift,
        allowed,
        grew,
        mem_allowed,
        spilled,
    )


def step_passes(step: Step, share: float, limit_s: float) -> bool:
    """The response-time condition of the rule (steadiness is judged apart)."""
    if step.arrivals == 0:
        return False
    known = {1.0: step.latency.within_1s, 2.0: step.latency.within_2s}
    if limit_s in known:  # decoding an HdrHistogram in Python is slow: use the summary
        fast = round(known[limit_s] * step.latency.count)
    else:
        fast = histogram.within(histogram.decode(step.hist), limit_s)
    if fast < share * step.arrivals:
        return False
    if step.mode == "closed":
        return True  # at most one transaction per stream is in flight: no backlog builds
    if step.in_window < (1 - DELIVERY_SHORTFALL) * step.arrivals:
        return False  # fell behind its arrivals: a longer window would miss the limit
    backlog = step.arrivals - step.in_window - step.failed
    return backlog <= step.offered_tps * limit_s


def headline_steps(result: PartitionResult, share: float, limit_s: float) -> dict[int, Step]:
    """Per repeat, the step that sets the rule's tps: the steady step meeting the rule with
    the highest delivered rate."""
    best: dict[int, Step] = {}
    for s in result.steps:
        if not (steadiness(s).steady and step_passes(s, share, limit_s)):
            continue
        if s.repeat not in best or s.throughput_tps > best[s.repeat].throughput_tps:
            best[s.repeat] = s
    return best


def batch_interval(step: Step) -> Interval:
    """One step's delivered tps with the 95% t-interval of its batch means (the per-second
    series in BATCH_S-second batches: seconds next to each other are correlated, batches of
    5 s much less; a 30 s step gives 6). Under two batches: no interval."""
    rate = step.throughput_tps
    means = batch_means(step.tps_series[: int(step.duration_s + 1e-9)])
    k = len(means)
    if k < 2:
        return Interval(rate, rate, rate, 1)
    from wisconsin.analysis.stats import t_quantile  # the 95% two-sided one

    half = float(t_quantile(k - 1)) * statistics.stdev(means) / math.sqrt(k)
    return Interval(rate, max(0.0, rate - half), rate + half, k)


def steps_interval(steps: list[Step]) -> Interval:
    """Delivered tps of one step with its batch-means interval, or of several (one per
    repeat) as median [min-max]."""
    if len(steps) == 1:
        return batch_interval(steps[0])
    return interval([s.throughput_tps for s in steps])


def rule_tps(result: PartitionResult, share: float, limit_s: float) -> Interval:
    """tps by the rule: per repeat, the steady step meeting it with the highest rate."""
    return steps_interval(list(headline_steps(result, share, limit_s).values()))


def closed_attempts(result: PartitionResult) -> dict[int, list[Step]]:
    """Each repeat's closed windows in the order measured: the first, then one more for
    each window before it that was unsteady (Config.closed_retries at most)."""
    out: dict[int, list[Step]] = {}
    for s in result.steps:
        if s.mode == "closed":
            out.setdefault(s.repeat, []).append(s)
    return out


def peak_tps(result: PartitionResult) -> Interval:
    """Delivered tps of the steady closed N-stream steps (one per repeat)."""
    return steps_interval([s for s in result.steps if s.mode == "closed" and steadiness(s).steady])


def best_delivered(result: PartitionResult) -> float:
    """The highest rate any step delivered, steady or not (never a headline)."""
    return max((s.throughput_tps for s in result.steps), default=0.0)


def expected_remote(sizing: Sizing, partitions: int) -> float:
    """15% of transactions pick another branch uniformly; it is remote if on another partition.

    Exactly 0.15 * B(P-1)/(BP-1) for B branches per partition; about 0.15 (P-1)/P.
    """
    b = sizing.branches_per_partition
    total = b * partitions
    if total <= 1:
        return 0.0
    return REMOTE_SHARE * b * (partitions - 1) / (total - 1)


def observed_remote(result: PartitionResult) -> float:
    committed = sum(s.committed for s in result.steps)
    return sum(s.distributed for s in result.steps) / committed if committed else 0.0


def claimed_tps(run: DebitCreditRun, result: PartitionResult) -> tuple[float, str]:
    """The throughput this P claims (the larger of the rule's tps and the peak) and how it
    was got; with no steady step, the best rate delivered, named as such."""
    cfg = run.config
    claim = max(rule_tps(result, cfg.rule_share, cfg.rule_limit_s).median, peak_tps(result).median)
    if claim <= 0:
        return best_delivered(result), "delivered by an unsteady step"
    return claim, "measured"


def scaled_verdict(run: DebitCreditRun, result: PartitionResult) -> tuple[bool, str]:
    """Is the database big enough for the throughput claimed (the rule: 100,000 accounts/tps)?"""
    cfg = run.config
    rated = cfg.sizing.rated_tps_per_partition * result.partitions
    claim, what = claimed_tps(run, result)
    if not cfg.sizing.by_the_rules:
        return False, "not scaled: tellers or accounts per branch differ from the standard's"
    if claim <= rated:
        return True, f"scaled: database sized for {rated:g} tps >= {claim:.1f} tps {what}"
    return False, (
        f"not scaled: database sized for {rated:g} tps ({result.accounts:,} accounts), "
        f"{claim:.1f} tps {what} would need {int(claim * 100_000):,} accounts"
    )


def scale_label(run: DebitCreditRun) -> str:
    """One line, the first of the report: is the database big enough for the tps it
    reports (100,000 accounts per tps), per P; "not scaled" if any P is not."""
    parts, ok = [], True
    for r in run.results:
        scaled, _ = scaled_verdict(run, r)
        ok &= scaled
        claim, _ = claimed_tps(run, r)
        size = f", {r.db_bytes / 1e6:,.0f} MB on disk" if r.db_bytes else ""
        parts.append(f"P={r.partitions}: {r.accounts:,} accounts for {claim:.1f} tps{size}")
    head = "scaled" if ok and parts else "not scaled"
    return f"{head}: " + "; ".join(parts) + " (the rule: 100,000 accounts per tps)"


def capacity_points(runs) -> tuple[list, str]:
    """Each P's steady closed windows (the peak's repeats), pooled over runs of one size per
    partition and one load, as analysis.capacity.Measured; and why they cannot be pooled
    ("" when they can)."""
    from wisconsin.analysis.capacity import Measured

    shapes = {(r.config.sizing.branches_per_partition, r.config.streams) for r in runs}
    if len(shapes) > 1:
        said = ", ".join(f"{b} branches and {s} streams per partition" for b, s in sorted(shapes))
        return [], f"the runs differ in size or load per partition ({said})"
    values: dict[int, list[float]] = {}
    for run in runs:
        for res in run.results:
            steady = [s for s in res.steps if s.mode == "closed" and steadiness(s).steady]
            values.setdefault(res.partitions, []).extend(s.throughput_tps for s in steady)
    return [Measured(p, tuple(v)) for p, v in sorted(values.items()) if v], ""
