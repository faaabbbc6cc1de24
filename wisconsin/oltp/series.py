"""Per-second series of an OLTP step and what they say: delivered rate and p95 by second,
drift between a window's thirds, batch-means noise, engine-memory growth, intervals."""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass


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


def _thirds(values) -> tuple[list, list]:
    k = max(1, len(values) // 3)
    return list(values[:k]), list(values[-k:])


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


def growth_of(samples) -> tuple[int, int]:
    """(growth of one engine's memory, last third of its samples against the first, in bytes;
    the growth allowed: 16 MB or 10% of the first third, whichever is larger)."""
    first, last = _thirds(samples)
    base = statistics.mean(first)
    return int(statistics.mean(last) - base), max(
        MEMORY_GROWTH_SLACK, int(MEMORY_GROWTH_LIMIT * base)
    )


def per_second(done: list[tuple[float, float]], duration_s: float) -> tuple[list, list]:
    """Delivered tps and p95 response time (s) in each second of the window.

    A commit counts in the second its answer came; a last, partial second is scaled to a rate.
    A second with no commit has p95 0.
    """
    n = max(1, math.ceil(duration_s - 1e-9))
    buckets: list[list[float]] = [[] for _ in range(n)]
    for at, latency in done:
        if 0 <= at <= duration_s:
            buckets[min(int(at), n - 1)].append(latency)
    tps, p95 = [], []
    for i, b in enumerate(buckets):
        width = min(1.0, duration_s - i)
        tps.append(len(b) / width)
        b.sort()
        p95.append(b[max(0, math.ceil(0.95 * len(b)) - 1)] if b else 0.0)
    return tps, p95
