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

import itertools
import math
import statistics
from dataclasses import dataclass

from wisconsin.workloads.debitcredit import histogram
from wisconsin.workloads.debitcredit.driver import REMOTE_SHARE
from wisconsin.workloads.debitcredit.runfile import DebitCreditRun, PartitionResult, Step
from wisconsin.workloads.debitcredit.schema import Sizing


@dataclass(frozen=True)
class Interval:
    median: float
    low: float
    high: float
    n: int

    def fmt(self, digits: int = 1) -> str:
        if self.n == 0:
            return "-"  # nothing measured sets it: never a rate that was not delivered
        if self.n == 1:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} [{self.low:.{digits}f}-{self.high:.{digits}f}]"


def as_json(v):
    """An Interval as a JSON object, None (null) when nothing set it; other values as is."""
    if not isinstance(v, Interval):
        return v
    return v.__dict__ if v.n else None


def interval(values: list[float]) -> Interval:
    if not values:
        return Interval(0.0, 0.0, 0.0, 0)
    return Interval(statistics.median(values), min(values), max(values), len(values))


DRIFT_LIMIT = 0.10  # delivered tps, last third of the window against the first
NOISE_SIGMAS = 3.0  # ... or this many standard deviations of its noise, if larger
DRIFT_CAP = 0.25  # ... but never more than this for the wander of a busy step
BATCH_S = 5  # batch means: a step's per-second series in batches of this many seconds
MIN_WANDER_BATCHES = 4  # fewer batches tell nothing of a step's wander
MEMORY_GROWTH_LIMIT = 0.10  # engine memory, last third of the samples against the first ...
MEMORY_GROWTH_SLACK = 16 * 2**20  # ... and at least this many bytes (buffer cache noise)
MIN_JUDGED_S = 3  # a shorter window has no thirds to compare
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


def _thirds(values) -> tuple[list, list]:
    k = max(1, len(values) // 3)
    return list(values[:k]), list(values[-k:])


def tps_drift(step: Step) -> tuple[float | None, float]:
    """drift_of the step's whole seconds."""
    return drift_of(step.tps_series[: int(step.duration_s + 1e-9)] or step.tps_series)


def drift_of(per_second) -> tuple[float | None, float]:
    """(drift of delivered tps between the first and last thirds of a per-second series, the
    drift allowed). Allowed: 10%, or 3 sigma of the thirds' difference if that is larger --
    the counting noise of their commits (a slow step), or the step's own wander (a busy
    step on a shared machine wanders 5-10% over seconds: measured in
    benchmarks/results/2026-11-26-debitcredit-vs-loop-*.md), the latter at most 25% so a
    collapse or a real slide fails however noisy the step."""
    first, last = _thirds(per_second)
    a, b = sum(first), sum(last)  # commits (whole seconds: a rate is a count)
    if a <= 0:
        return (None if b <= 0 else math.inf), DRIFT_LIMIT
    counting = NOISE_SIGMAS * math.sqrt(a + b) / a
    # The wander is measured in batches of half a third (at least BATCH_S): a shared
    # machine's tps wanders over tens of seconds, which 5 s batches of a 60 s window miss
    # (measured: its thirds moved 11% where 5 s batches allowed 11.0%, 10 s ones 16%).
    # The SD of a third's mean is then a batch mean's SD over sqrt(batches in a third).
    third_s = len(first)
    size = max(BATCH_S, third_s // 2)
    wander = NOISE_SIGMAS * batch_noise(per_second, size) * math.sqrt(2 * size / third_s)
    return b / a - 1, max(DRIFT_LIMIT, counting, min(DRIFT_CAP, wander / (a / third_s)))


def batch_means(per_second, size: int = BATCH_S) -> list[float]:
    """The means of a per-second series' whole `size`-second batches."""
    return [
        statistics.fmean(per_second[i * size : (i + 1) * size])
        for i in range(len(per_second) // size)
    ]


def batch_noise(per_second, size: int = BATCH_S) -> float:
    """The SD of one `size`-second batch mean of a per-second series, by von Neumann's mean
    squared successive difference: a slow trend differences away, so a slide does not pass
    as noise (a step change adds one difference: the cap in drift_of bounds it). 0 under
    MIN_WANDER_BATCHES batches."""
    means = batch_means(per_second, size)
    if len(means) < MIN_WANDER_BATCHES:
        return 0.0
    squares = [(y - x) ** 2 for x, y in itertools.pairwise(means)]
    return math.sqrt(statistics.fmean(squares) / 2)


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


def growth_of(samples) -> tuple[int, int]:
    """(growth of one engine's memory, last third of its samples against the first, in bytes;
    the growth allowed: 16 MB or 10% of the first third, whichever is larger)."""
    first, last = _thirds(samples)
    base = statistics.mean(first)
    return int(statistics.mean(last) - base), max(
        MEMORY_GROWTH_SLACK, int(MEMORY_GROWTH_LIMIT * base)
    )


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


def scaleup(base: Interval, new: Interval) -> Interval:
    """NewThroughput / OldThroughput; the interval pairs the extremes (worst and best case).
    Unset ("-") when either side is: a rate no steady step set is not a scaleup of 0."""
    if base.n == 0 or new.n == 0 or base.median <= 0 or base.low <= 0:
        return Interval(0.0, 0.0, 0.0, 0)
    n = max(base.n, new.n)  # spread on either side makes an interval
    return Interval(new.median / base.median, new.low / base.high, new.high / base.low, n)


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
