"""What a report's verdict block states, computed from the points at the largest P: the
share of the measured bound they reach, and why the curve bends (the medians of the
startup / skew / interference split of wisconsin.analysis.metrics, and the cause that costs
the most time). The block itself is rendered by the workload."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wisconsin.analysis.metrics import Point
from wisconsin.analysis.stats import median


def top_points(points: Sequence[Point]) -> list[Point]:
    """The points at the largest partition count."""
    P = max(p.P for p in points)
    return [p for p in points if p.P == P]


@dataclass(frozen=True)
class BoundShares:
    """Of-bound shares (bound time / median time) over the points that have a bound."""

    lo: float
    hi: float
    median: float
    points: int


def bound_shares(top: Sequence[Point]) -> BoundShares | None:
    """The shares of the points given (None when none has a bound)."""
    shares = [p.of_bound for p in top if p.of_bound is not None]
    if not shares:
        return None
    return BoundShares(min(shares), max(shares), median(shares), len(shares))


@dataclass(frozen=True)
class Bend:
    """One kind's curve at its largest P: medians over that P's queries."""

    kind: str  # "F" (speedup) when the run has one, else "G"
    P: int
    P0: int
    cores: int
    harness_only: bool  # every query at P is harness-dominated
    efficiency: float | None
    interference: float | None  # per-partition time over the same work at P0
    skew: float | None  # slowest / mean partition
    startup: float | None  # share of the time partitions wait to start
    # each cause as the share of the time it costs, for the causes measured, in this order:
    # interference, skew, start-up
    losses: tuple[tuple[str, float], ...]

    @property
    def cause(self) -> str | None:
        """The cause that costs the most (the first of equals); None: none measured."""
        return max(self.losses, key=lambda kv: kv[1])[0] if self.losses else None

    @property
    def sharing(self) -> float:
        """How much slower each partition is from P partitions sharing the cores, over
        P0's own sharing."""
        return max(1.0, self.P / self.cores) / max(1.0, self.P0 / self.cores)


def why_it_bends(points: Sequence[Point], cores: int) -> Bend:
    """The speedup curve's (else the scaleup curve's) bend at its largest P."""
    kind = "F" if any(p.kind == "F" for p in points) else "G"
    top = top_points([p for p in points if p.kind == kind])
    interf = median(p.interference for p in top)
    skew = median(p.skew for p in top)
    start = median(p.startup / p.time_median for p in top if p.startup and p.time_median > 0)
    # Each cause as the share of the time it costs: interference I makes every partition
    # 1/I as fast, skew S leaves the others idle 1 - 1/S of the slowest's time.
    losses = {
        "interference": None if interf is None else 1 - 1 / interf if interf > 0 else None,
        "skew": None if skew is None or skew <= 0 else 1 - 1 / skew,
        "start-up": start,
    }
    return Bend(
        kind,
        top[0].P,
        top[0].P0,
        cores,
        all(p.harness for p in top),
        median(p.efficiency for p in top),
        interf,
        skew,
        start,
        tuple((k, v) for k, v in losses.items() if v is not None),
    )
