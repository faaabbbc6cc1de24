"""Audit rules that re-derive instead of re-reading: every answer from the table's facts
(size and seed, through the generator), the least a cold execution can read (the entropy
of the columns its query must read), and times against the physics the run recorded (its
measured bound, its calibration re-derived from its own times, its dispatch timeline).

A forger who edits a run file consistently with itself still has to agree with the
generator, with information theory and with the clock; docs/methodology.md says what each
rule can and cannot catch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import numpy as np

from wisconsin import generator
from wisconsin.analysis import bound as bnd
from wisconsin.analysis import metrics, stats
from wisconsin.analysis.audit import Rule, step_label, summary
from wisconsin.generator.core import column_sizes
from wisconsin.runfiles.runfile import Measurement, Repetition, Run
from wisconsin.store.expect import onepct_bound

ANSWER_REL_TOL = 1e-9  # one AVG over the same data: equal up to summation order
# Columns a query cannot answer without reading in full from storage when cold: the filter
# column of select, update and join (hundpct is uniform over [0, n): zone maps prune no row
# group), the aggregated column of AVG. The join also reads its copy's hundpct and the 1%
# rows' other columns; counting one column keeps this a lower bound.
COLUMNS_READ = {
    "select": ("hundpct",),
    "update": ("hundpct",),
    "join": ("hundpct",),
    "average": ("onepct",),
}
# A cold execution must read at least this share of the entropy of those columns: no
# lossless encoding stores uniform random values in fewer bits, so the only slack is the
# sample's deviation from uniform (far below 10% at any table size). Real runs read
# 3.0-570x it (4 real run files, 2026-11-25; block reads and metadata on top).
COLD_COLUMNS_MIN = 0.90
# A point's median time may beat its measured bound by at most this factor (the bound's
# single-thread rate is the baseline's fastest repetition, its bandwidths the fastest of
# up to 5 short probes: measure/calibrate.py).
# Real run files: worst median 0.77 of its bound, worst single repetition 0.44, so the
# median is judged. Time / 10 puts a point at <= 0.47 of its bound in those files.
BOUND_BEAT_MAX = 2.0
# Each repetition is held against the bound too (a median does not move when one of five
# repetitions is edited): at most this factor faster. Real run files' worst single
# repetition is 0.44 of its bound (tests/fixtures: audit_tiny_sn F1/update, run_real_cold
# F1/average; 2026-11-27), 1.3x above the limit. One repetition made 10x faster fails
# wherever it ran under 3.3x its bound: 66 of 75 repetitions of audit_tiny_sn, 99 of 100 of
# run_real_cold, 550 of 550 of the reference run (1/4 would catch 56, 99 and 545).
REP_BEAT_MAX = 3.0
# One execution ends before the next is dispatched (the runner runs steps one at a time):
# dispatch + wall time <= the next dispatch, up to this (time.time vs perf_counter).
TIMELINE_SLACK_S = 0.005
CALIBRATION_REL_TOL = 1e-9  # the calibration is computed from these very times


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class TableFacts:
    """What the generator says a table of (rows, seed) answers."""

    rows: int
    selected: int  # rows with hundpct < rows // 100: select, update and join
    sum_onepct: int  # AVG(onepct) = sum_onepct / rows

    def expected_rows(self, query: str) -> int | None:
        return {
            "scan": 0,
            "select": self.selected,
            "update": self.selected,
            "join": self.selected,
            "average": self.rows,
        }.get(query)


@lru_cache(maxsize=32)
def table_facts(rows: int, seed: int) -> TableFacts:
    """Regenerate the table's integer columns (about 1 s per 9 M rows) and count its answers."""
    bound = onepct_bound(rows)
    selected = total = 0
    for batch in generator.generate(rows, seed, 0, rows, batch_rows=1 << 20, strings=False):
        selected += int(np.count_nonzero(batch.column("hundpct").to_numpy() < bound))
        total += int(batch.column("onepct").to_numpy().sum(dtype=np.int64))
    return TableFacts(rows, selected, total)


def _facts_for(run: Run, m: Measurement) -> tuple[TableFacts | None, str]:
    t = next((t for t in run.tables if t.name == m.table), None)
    if t is None:  # the baseline's F1 when P = 1 was not measured: the same data as F<P>
        t = next((t for t in run.tables if (t.kind, t.rows) == (m.kind, m.rows)), None)
    if t is None:
        return None, f"{step_label(m)}: table {m.table} not among the run's tables"
    if t.generator_version != generator.GENERATOR_VERSION:
        return None, (
            f"{m.table}: generator version {t.generator_version!r}, this audit re-derives "
            f"answers with version {generator.GENERATOR_VERSION}"
        )
    return table_facts(m.rows, t.seed), ""


def executions(m: Measurement) -> Iterator[Repetition]:
    """Every execution of m: the timed ones and the warm-up, unless the warm-up is the
    runner's stand-in when none ran (a copy of the first timed repetition, index -1)."""
    yield from m.repetitions
    if not warmup_is_copy(m):
        yield m.warmup


def warmup_is_copy(m: Measurement) -> bool:
    return (
        m.warmup.index == -1
        and bool(m.repetitions)
        and m.warmup == dataclasses.replace(m.repetitions[0], index=-1)
    )


def answer_problems(run: Run) -> tuple[list[str], int]:
    """Every execution's rows and AVG, and each measurement's expectation, against the
    generator's. Returns (problems, executions judged)."""
    bad: list[str] = []
    judged = 0
    for m in (*run.measurements, *run.baseline):
        facts, why = _facts_for(run, m)
        if facts is None:
            bad.append(why)
            continue
        want = facts.expected_rows(m.query)
        if want is None:
            bad.append(f"{step_label(m)}: no answer known for query {m.query!r}")
            continue
        if m.expected_rows != want:
            bad.append(
                f"{step_label(m)}: expects {m.expected_rows} rows, the generator's table "
                f"(rows {m.rows}) gives {want}"
            )
        for r in executions(m):
            judged += 1
            where = f"{step_label(m)} rep {r.index}"
            if r.rows != want:
                bad.append(f"{where}: {r.rows} rows, the generator's table gives {want}")
            if m.query == "average":
                avg = facts.sum_onepct / facts.rows
                if r.answer is None or not math.isclose(r.answer, avg, rel_tol=ANSWER_REL_TOL):
                    bad.append(f"{where}: average {r.answer!r}, the generator's table {avg!r}")
    return bad, judged


# --------------------------------------------------------------------------- cold reads


def entropy_bytes(n: int, rows: int, columns) -> float:
    """Fewest bytes any lossless encoding can store `rows` values of each column in: the
    generator draws them uniformly from column_sizes(n) values."""
    sizes = column_sizes(n)
    return sum(rows * math.log2(sizes[c]) for c in columns) / 8


def partition_rows(m: Measurement, part: int) -> int:
    """Rows of partition `part` by the generator's partitioning (-1: the whole table)."""
    if part < 0:
        return m.rows
    lo, hi = generator.partition_range(m.rows, part, m.partitions)
    return hi - lo


def columns_read(m: Measurement) -> tuple[str, ...]:
    if m.query == "scan":
        return ("hundpct",) if m.variant == "predicate-column" else ()
    return COLUMNS_READ.get(m.query, ())


def least_read(m: Measurement, part: int) -> float:
    """COLD_COLUMNS_MIN of the entropy of the columns m's query reads, for one partition
    (part -1: the whole table)."""
    return COLD_COLUMNS_MIN * entropy_bytes(m.rows, partition_rows(m, part), columns_read(m))


def cold_columns_problem(m: Measurement, r: Repetition) -> str | None:
    """A cold execution that read less than the columns its query must read could hold."""
    if not columns_read(m):
        return None
    parts = [s for s in r.partitions if s.bytes_read is not None]
    if not parts and r.bytes_read is not None:  # one total for the step (shared process)
        need = least_read(m, -1)
        if r.bytes_read < need:
            return (
                f"{step_label(m)} rep {r.index}: cold, read {r.bytes_read:,} bytes, less than "
                f"{need:,.0f} ({COLD_COLUMNS_MIN:.0%} of the entropy of {'+'.join(columns_read(m))})"
            )
    for s in parts:
        need = least_read(m, s.part)
        if s.bytes_read < need:
            return (
                f"{step_label(m)} rep {r.index} part {s.part}: cold, read {s.bytes_read:,} "
                f"bytes, less than {need:,.0f} ({COLD_COLUMNS_MIN:.0%} of the entropy of "
                f"{'+'.join(columns_read(m))} over {partition_rows(m, s.part):,} rows)"
            )
    return None


# --------------------------------------------------------------------------- physics


def _calibration_problems(run: Run) -> list[str]:
    """The calibration the runner derived from this run's own times, derived again: the
    single-thread rates from the baseline's fastest repetitions, the dispatch times from
    the median overhead per P."""
    cal = run.calibration
    bad = []
    rates = dict(cal.scan_rows_per_s)
    for m in run.baseline:  # the runner writes the baseline it calibrated from
        if m.query in rates and m.times:
            # today's runner: the fastest repetition; runners before 2026-11-24: the median
            want = m.rows / min(m.times), m.rows / stats.median(m.times)
            if not any(math.isclose(rates[m.query], w, rel_tol=CALIBRATION_REL_TOL) for w in want):
                bad.append(
                    f"baseline {m.query}: calibration rate {rates[m.query]:.4g} rows/s, its "
                    f"fastest repetition gives {want[0]:.4g} (its median {want[1]:.4g})"
                )
    by_p: dict[int, list[float]] = {}
    for m in run.measurements:
        for r in m.repetitions:
            if r.overhead_s is not None:
                by_p.setdefault(m.partitions, []).append(r.overhead_s)
    missing = sorted(set(by_p) - {p for p, _ in cal.dispatch_s})
    if missing:  # the runner records one for every P whose overheads it measured
        bad.append(f"P={', '.join(map(str, missing))}: no calibration dispatch time")
    for p, recorded in cal.dispatch_s:
        if p in by_p and not math.isclose(
            recorded, stats.median(by_p[p]), rel_tol=CALIBRATION_REL_TOL
        ):
            bad.append(
                f"P={p}: calibration dispatch {recorded:.4g} s, the median overhead of its "
                f"repetitions {stats.median(by_p[p]):.4g} s"
            )
    return bad


def _bound_problems(run: Run) -> tuple[list[str], float | None]:
    """Points whose median time beats their measured bound by more than BOUND_BEAT_MAX, or
    that have no bound; also the smallest median/bound seen."""
    bad, least = [], None
    for m in (*run.measurements, *run.baseline):
        if not m.times:
            continue
        b, why = bnd.point_bound(run, [m])
        if b is None or b.time_s <= 0:
            bad.append(f"{step_label(m)}: {why or 'a bound of 0 s'}")
            continue
        share = stats.median(m.times) / b.time_s
        least = share if least is None else min(least, share)
        if share * BOUND_BEAT_MAX < 1:
            bad.append(
                f"{step_label(m)}: median {stats.median(m.times):.3g} s is {share:.2f} of its "
                f"measured bound {b.time_s:.3g} s ({b.resource}-bound; at most "
                f"{BOUND_BEAT_MAX:g}x faster allowed)"
            )
        for r in m.repetitions:
            if r.wall_s * REP_BEAT_MAX < b.time_s:
                bad.append(
                    f"{step_label(m)} rep {r.index}: {r.wall_s:.3g} s is "
                    f"{r.wall_s / b.time_s:.2f} of its measured bound {b.time_s:.3g} s (one "
                    f"repetition at most {REP_BEAT_MAX:g}x faster allowed)"
                )
    return bad, least


def _timeline_problems(run: Run) -> tuple[list[str], int]:
    """Executions overlapping in time: the runner runs one at a time, so each one's
    dispatch plus wall time must come before the next dispatch (and inside the run)."""
    every = [
        (r.dispatched_unix, r.wall_s, f"{step_label(m)} rep {r.index}")
        for m in (*run.measurements, *run.baseline)
        for r in executions(m)  # not the stand-in warm-up: it repeats repetition 1's times
    ]
    stamped = sorted({e for e in every if e[0] is not None})  # the baseline at P = 1 may be
    # the measurement's executions
    # the runner stamps every execution or (before timelines) none: a gap hides one
    bad = [f"{what}: no dispatch time" for t, _, what in every if t is None] if stamped else []
    for (t0, wall, what), (t1, _, nxt) in zip(stamped, stamped[1:], strict=False):
        if t0 + wall > t1 + TIMELINE_SLACK_S:
            bad.append(f"{what}: dispatched {t1 - t0:.3f} s before {nxt}, yet took {wall:.3f} s")
    if stamped and run.finished_utc:
        end = datetime.fromisoformat(run.finished_utc).timestamp()
        t0, wall, what = stamped[-1]
        # finished_utc has whole seconds: allow the second it was written in
        if t0 + wall > end + 1 + TIMELINE_SLACK_S:
            bad.append(f"{what}: ends {t0 + wall - end:.1f} s after the run finished")
    return bad, len(stamped)


def cores_problems(run: Run) -> list[str]:
    """The usable cores the run file states, against what else it recorded of them: the
    calibration's cores (the runner's count when it bounded the run: usable cores locally,
    the hosts' sum on a cluster) and, locally, the one host's cores (an affinity mask cannot
    hold more). What the engine-share rule and the bound take as 'the cores'."""
    env, hosts = run.environment.usable_cores, run.topology.hosts
    cores = metrics.machine_cores(run)
    bad = []
    if run.calibration is not None and run.calibration.cores != cores:
        bad.append(f"usable cores {cores} disagree with the calibration's {run.calibration.cores}")
    if not run.config.cluster and len(hosts) == 1 and env > hosts[0].cores:
        bad.append(f"usable cores {env} exceed the host's {hosts[0].cores} (topology)")
    return bad


def rule_physics(run: Run) -> Rule:
    name = "times within physics"
    if run.calibration is None:
        return Rule(name, False, "no calibration recorded: no bound to check times against")
    bad = _calibration_problems(run)
    beats, least = _bound_problems(run)
    overlaps, stamped = _timeline_problems(run)
    bad += beats + overlaps
    figures = (("timestamped_executions", float(stamped)),)
    if least is not None:
        figures += (("least_median_over_bound", least),)
    if not bad and stamped == 0:
        bad.append("no execution records its dispatch time: no timeline to check")
    if bad:
        return Rule(name, False, summary(bad), figures)
    return Rule(
        name,
        True,
        "calibration re-derived from the run's own times; every median time >= "
        f"1/{BOUND_BEAT_MAX:g} of its measured bound (least {least:.2f}); {stamped} "
        "executions one after another on the clock, none overlapping the next",
        figures,
    )
