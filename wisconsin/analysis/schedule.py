"""Interleaved rounds and when to stop them.

Each round runs every step (a table and query, plus the single-thread baseline's steps)
once, in an order shuffled with a seed derived from the run's order seed and the round
index, so machine drift cannot line up with P. After each round the stopping rule looks at
the headline ratios' intervals.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wisconsin.analysis import metrics, stats
from wisconsin.runfiles.facts import StopRule, stop_text
from wisconsin.runfiles.runfile import Measurement, Stop

# A point is harness-dominated (not a headline ratio) below either bound (issue 8); the
# bounds and the rule live in wisconsin.analysis.metrics, these are their names here.
ENGINE_SHARE_MIN = metrics.HARNESS_SHARE
OVERHEAD_MULTIPLE_MIN = metrics.HARNESS_FACTOR
BASELINE = "baseline"  # step-label prefix of the single-thread baseline's steps


@dataclass(frozen=True)
class Step:
    table: str
    query: str
    baseline: bool = False

    @property
    def label(self) -> str:
        return (
            f"{BASELINE}:{self.table}/{self.query}"
            if self.baseline
            else f"{self.table}/{self.query}"
        )

    @staticmethod
    def parse(label: str) -> Step:
        baseline = label.startswith(f"{BASELINE}:")
        table, query = label.removeprefix(f"{BASELINE}:").split("/")
        return Step(table, query, baseline)


def round_seed(order_seed: int, index: int) -> int:
    """Each round's own seed: reproducible from the run's order seed alone."""
    return (order_seed * 1_000_003 + index) % 2**31


def round_order(steps: Sequence[Step], seed: int) -> list[Step]:
    """steps in a seeded shuffled order: the tables shuffled, and each table's queries
    shuffled within its block, so a table is opened once per round (opening, evicting and
    closing P partitions per step cost ~1 s of untimed work each). Only the seed matters:
    the input is put in a stable order first."""
    rng = random.Random(seed)
    blocks: dict[tuple[bool, str], list[Step]] = {}
    for s in sorted(steps, key=lambda s: s.label):
        blocks.setdefault((s.baseline, s.table), []).append(s)
    keys = sorted(blocks)
    rng.shuffle(keys)
    out = []
    for key in keys:
        block = blocks[key]
        rng.shuffle(block)
        out += block
    return out


# --------------------------------------------------------------------------- stopping rule


def ratio_interval(num: Sequence[float], den: Sequence[float]) -> metrics.Ratio:
    """The one call to the analysis' ratio interval (swap the method here only)."""
    return metrics.bootstrap_ratio(num, den)


def harness_dominated(m: Measurement) -> bool | None:
    """Engine share below 80% or median below 20x the harness overhead; None if unknown
    (metrics.measurement_harness: the report's rule)."""
    return metrics.measurement_harness([m])


@dataclass(frozen=True)
class Headline:
    """One headline ratio (speedup for F, scaleup for G) and its relative half-width."""

    kind: str
    query: str
    P: int
    P0: int
    value: float
    half_width: float | None  # (hi - lo) / 2 / value; None without an interval
    lo: float | None = None
    hi: float | None = None


def _ratio(num: Measurement, den: Measurement, blocks) -> metrics.Ratio:
    """Over the blocks when there are two or more (the report's interval), else within."""
    if blocks is not None:
        a, b = blocks(num), blocks(den)
        common = sorted(a.keys() & b.keys())
        if len(common) >= 2:
            return stats.block_ratio_interval([a[k] for k in common], [b[k] for k in common])
    return ratio_interval(num.times, den.times)


def headline_ratios(measurements: Iterable[Measurement], blocks=None) -> list[Headline]:
    """Every ratio against P0 whose two points are not harness-dominated
    (metrics.headline_ratio: the report's Point.headline less verification). blocks: a
    measurement's times by block (Run.times_by_block), so the interval is the report's."""
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in measurements:
        if m.times and m.kind in ("F", "G"):
            groups.setdefault((m.kind, m.query), []).append(m)
    out = []
    for (kind, query), ms in sorted(groups.items()):
        ms.sort(key=lambda m: m.partitions)
        base = ms[0]
        base_harness = harness_dominated(base)
        for m in ms[1:]:
            if not metrics.headline_ratio(harness_dominated(m), base_harness):
                continue
            r = _ratio(base, m, blocks) if kind == "F" else _ratio(m, base, blocks)
            hw = None if r.lo is None or r.hi is None else (r.hi - r.lo) / 2 / abs(r.value)
            out.append(
                Headline(kind, query, m.partitions, base.partitions, r.value, hw, r.lo, r.hi)
            )
    return out


def stop_rule(
    measurements: Sequence[Measurement],
    rounds_done: int,
    *,
    min_reps: int,
    max_reps: int,
    target_ci: float,
    elapsed_s: float,
    next_round_s: float,
    time_budget_s: float | None,
    blocks=None,
    max_flag: str = "--max-reps",
) -> Stop | None:
    """Why to stop after rounds_done timed rounds, or None to run another round. max_flag:
    the option the user set max_reps with (--repeat sets it too)."""
    n = rounds_done
    if n >= max_reps:
        return Stop(StopRule.MAX_REPS, n, max_reps, flag=max_flag)
    if time_budget_s is not None and elapsed_s + next_round_s > time_budget_s:
        short = min_reps if n < min_reps else None
        return Stop(
            StopRule.TIME_BUDGET, n, time_budget_s, elapsed_s=elapsed_s,
            next_round_s=next_round_s, short_of=short,
        )  # fmt: skip
    if n < min_reps:
        return None
    heads = headline_ratios(measurements, blocks)
    if not heads:
        return Stop(StopRule.MIN_REPS, n, min_reps)
    wide = [h for h in heads if h.half_width is None or h.half_width > target_ci]
    if not wide:
        return Stop(StopRule.TARGET_CI, n, target_ci, headlines=len(heads))
    return None


def stop_reason(measurements: Sequence[Measurement], rounds_done: int, **settings) -> str:
    """stop_rule's verdict in words, or "" to run another round."""
    return stop_text(stop_rule(measurements, rounds_done, **settings)) or ""
