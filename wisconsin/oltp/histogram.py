"""Response-time histograms: HdrHistogram (microseconds, 3 significant digits, up to 10 min).

Every transaction's response time is recorded, so percentiles are exact to 0.1% of the value,
not estimated from an average; partitions' histograms merge losslessly, and a run file keeps
each step's histogram in HdrHistogram's portable compressed form (base64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from wisconsin.jsonfields import Count, Fraction, NonNegative

__all__ = [
    "LOWEST_US",
    "HIGHEST_US",
    "DIGITS",
    "PERCENTILES",
    "new",
    "record",
    "encode",
    "decode",
    "merge",
    "Latency",
    "within",
    "summarize",
    "percentile_interval",
]

LOWEST_US = 1
HIGHEST_US = 600_000_000
DIGITS = 3
PERCENTILES = (50.0, 90.0, 95.0, 99.0)


def new() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def record(h: HdrHistogram, seconds: float) -> None:
    h.record_value(min(max(int(seconds * 1e6), LOWEST_US), HIGHEST_US))


def encode(h: HdrHistogram) -> str:
    return h.encode().decode("ascii")


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text.encode("ascii"))


def merge(encoded: list[str]) -> HdrHistogram:
    out = new()
    for text in encoded:
        if text:
            out.add(decode(text))
    return out


@dataclass(frozen=True)
class Latency:
    """Percentiles in seconds, and the share of transactions within 1 s and 2 s."""

    count: Count
    p50: NonNegative
    p90: NonNegative
    p95: NonNegative
    p99: NonNegative
    max: NonNegative
    within_1s: Fraction
    within_2s: Fraction


def within(h: HdrHistogram, seconds: float) -> int:
    """How many recorded values are at most `seconds` (histogram resolution)."""
    limit = int(seconds * 1e6)
    n = 0
    for item in h.get_recorded_iterator():
        if item.value_iterated_to <= limit:
            n += item.count_at_value_iterated_to
    return n


def summarize(h: HdrHistogram) -> Latency:
    n = h.get_total_count()
    if n == 0:
        return Latency(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    p = {q: h.get_value_at_percentile(q) / 1e6 for q in PERCENTILES}
    return Latency(
        count=n,
        p50=p[50.0],
        p90=p[90.0],
        p95=p[95.0],
        p99=p[99.0],
        max=h.get_max_value() / 1e6,
        within_1s=within(h, 1.0) / n,
        within_2s=within(h, 2.0) / n,
    )


Z95 = 1.959964  # the two-sided 95% normal quantile


def percentile_interval(h: HdrHistogram, q: float) -> tuple[float, float, float, int]:
    """(point, low, high, n) of the q-th percentile in seconds, with its distribution-free
    95% interval: the order statistics at ranks n*q/100 -/+ 1.96 sqrt(n p (1-p)) (the
    binomial count below a quantile), read from the histogram. n = 0: nothing recorded."""
    n = h.get_total_count()
    if n == 0:
        return 0.0, 0.0, 0.0, 0
    p = q / 100.0
    half = Z95 * math.sqrt(n * p * (1.0 - p))
    lo, hi = max(0.0, n * p - half), min(float(n), n * p + half)

    def at(rank: float) -> float:
        return h.get_value_at_percentile(100.0 * rank / n) / 1e6

    return h.get_value_at_percentile(q) / 1e6, at(lo), at(hi), n
