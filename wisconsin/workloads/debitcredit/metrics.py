"""What a DebitCredit run means: tps by the rule, peak tps, OLTP scaleup, remote share, scaling.

tps by the rule: the highest offered rate (open arrivals) at which `share` (95%) of the
transactions offered in the window finished within `limit_s` (1 s) -- those that failed or
were still queued when the drain ended count as too slow -- and the window ended with at most
`limit_s` worth of offered arrivals still unanswered (Little's law: a longer backlog means
the next arrivals wait more than `limit_s`). The second condition exists because our windows
are seconds, not Tandem's 10 minutes: a short overload has no time to push the percentile past
the limit inside the window, but it leaves a backlog at the window's end.
"""

from __future__ import annotations

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
        if self.n <= 1:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} [{self.low:.{digits}f}-{self.high:.{digits}f}]"


def interval(values: list[float]) -> Interval:
    if not values:
        return Interval(0.0, 0.0, 0.0, 0)
    return Interval(statistics.median(values), min(values), max(values), len(values))


def step_passes(step: Step, share: float, limit_s: float) -> bool:
    if step.arrivals == 0:
        return False
    known = {1.0: step.latency.within_1s, 2.0: step.latency.within_2s}
    if limit_s in known:  # decoding an HdrHistogram in Python is slow: use the summary
        fast = round(known[limit_s] * step.latency.count)
    else:
        fast = histogram.within(histogram.decode(step.hist), limit_s)
    backlog = step.arrivals - step.in_window - step.failed
    return fast >= share * step.arrivals and backlog <= step.offered_tps * limit_s


def rule_tps(result: PartitionResult, share: float, limit_s: float) -> Interval:
    """tps by the rule, one value per repeat of the stepped curve."""
    per_repeat = {}
    for s in result.steps:
        if s.mode != "open":
            continue
        best = per_repeat.setdefault(s.repeat, 0.0)
        if step_passes(s, share, limit_s) and s.offered_tps > best:
            per_repeat[s.repeat] = s.offered_tps
    return interval(list(per_repeat.values()))


def rule_capped(result: PartitionResult, share: float, limit_s: float) -> bool:
    """True if some repeat passed at its highest offered rate: the rule's tps is a floor."""
    tops: dict[int, Step] = {}
    for s in result.steps:
        if s.mode == "open" and (
            s.repeat not in tops or s.offered_tps > tops[s.repeat].offered_tps
        ):
            tops[s.repeat] = s
    return any(step_passes(s, share, limit_s) for s in tops.values())


def peak_tps(result: PartitionResult) -> Interval:
    """Closed N-stream throughput, one value per repeat."""
    return interval([s.throughput_tps for s in result.steps if s.mode == "closed"])


def scaleup(base: Interval, new: Interval) -> Interval:
    """NewThroughput / OldThroughput; the interval pairs the extremes (worst and best case)."""
    if base.median <= 0 or base.low <= 0:
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


def scaled_verdict(run: DebitCreditRun, result: PartitionResult) -> tuple[bool, str]:
    """Is the database big enough for the throughput claimed (the rule: 100,000 accounts/tps)?"""
    cfg = run.config
    rated = cfg.sizing.rated_tps_per_partition * result.partitions
    claim = max(rule_tps(result, cfg.rule_share, cfg.rule_limit_s).median, peak_tps(result).median)
    if not cfg.sizing.by_the_rules:
        return False, "not scaled: tellers or accounts per branch differ from the standard's"
    if claim <= rated:
        return True, f"scaled: database sized for {rated:g} tps >= {claim:.1f} tps measured"
    return False, (
        f"not scaled: database sized for {rated:g} tps ({result.accounts:,} accounts), "
        f"{claim:.1f} tps measured would need {int(claim * 100_000):,} accounts"
    )
