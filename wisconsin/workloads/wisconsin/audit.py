"""`wisconsin audit RUN.json`: re-check every measurement rule from the run file alone.

Each rule answers a pitfall of the TP1 checklist or of issue 8 (docs/methodology.md maps
them). A rule passes only on evidence the file holds; what a file does not record fails
("not recorded" is not proof).
"""

from __future__ import annotations

import math
import os

from wisconsin import WisconsinError, generator
from wisconsin.analysis import metrics, schedule, stats
from wisconsin.analysis.audit import (  # noqa: F401  (Rule, format_rules...: re-exported)
    Rule,
    checked,
    coverage,
    format_rules,
    mark_incomplete,
    rule_blocks,
    rule_interleaved,
    rule_rounds_complete,
    rules_json,
    step_label,
    summary,
)
from wisconsin.runfiles import facts, runfile
from wisconsin.runfiles.facts import Durability
from wisconsin.runfiles.runfile import CacheState, Measurement, Repetition, Run
from wisconsin.workloads.wisconsin import queries, rules_derived
from wisconsin.workloads.wisconsin.rules_derived import ANSWER_REL_TOL, executions, rule_physics

COLD_SCAN_MIN = 0.90  # the share of its data a cold full-row scan must read
# A warm timed repetition reading more than this share of its data from storage did not find
# it resident (read-ahead and metadata reads stay far below; sn-warm's repetitions read 0).
WARM_READ_MAX = 0.10
# The methodology's minimum of timed repetitions per measurement (`--min-reps` default):
# a run asking for fewer may be run, but audit does not pass it.
MIN_REPS = 5
# A recorded engine share must equal (slowest partition engine_s + commit_decision_s) /
# wall_s, as the runner computes it (execution.execute_once); this allows float rounding.
SHARE_REL_TOL = 1e-4
SHARE_ABS_TOL = 1e-6


def recomputed_share(r: Repetition) -> float | None:
    """The share the repetition's own times give (runfile.engine_share, as the runner records
    it); None without partition samples."""
    if not r.partitions:
        return None
    return runfile.engine_share([s.engine_s for s in r.partitions], r.commit_decision_s, r.wall_s)


def _multiple(times, overheads) -> str:
    """median time / median overhead, e.g. "12x"; an in-process overhead can be ~0."""
    over = stats.median(overheads)  # None: no overhead recorded
    return f"{stats.median(times) / over:.0f}x" if over else "no measurable"


def _samples_problem(run: Run, m: Measurement, r: Repetition, in_process: bool) -> str | None:
    """Each execution has one sample per partition (0..P-1), or, where one in-process
    statement covered every partition, a single sample (part -1; some files from before
    the interleaving runner numbered it 0)."""
    parts = [s.part for s in r.partitions]
    whole = ([-1],) if run.config.interleaved else ([-1], [0])
    if parts == list(range(m.partitions)) or (in_process and parts in whole):
        return None
    return (
        f"{step_label(m)} rep {r.index}: samples for partitions {parts}, table has {m.partitions}"
    )


def rule_complete(run: Run) -> Rule:
    name = "run complete"
    # (schema-1 files load migrated to schema 2: judged by what they hold, below)
    if run.status != "complete":
        return Rule(name, False, f"status {run.status!r}: {run.stop_reason or '?'}")
    c = run.config
    want = [f"{k}{p}/{q}" for k, p in c.tables() for q in c.queries]
    bad = coverage("measurements", want, [step_label(m) for m in run.measurements])
    if run.baseline:
        bad += coverage("baseline", list(c.queries), [m.query for m in run.baseline])
    tables = {t.name: t for t in run.tables}
    empty = [step_label(m) for m in run.measurements if not m.repetitions]
    if empty:
        bad.append(f"no timed repetitions for {', '.join(empty[:4])}")
    for m in run.measurements:
        t = tables.get(m.table)
        if t is None:
            bad.append(f"{step_label(m)}: table {m.table} not among the run's tables")
        elif (m.rows, m.partitions) != (t.rows, t.partitions):
            bad.append(
                f"{step_label(m)}: {m.rows} rows in {m.partitions} partitions, the table has "
                f"{t.rows} in {t.partitions}"
            )
    in_process = c.mode == "shared-memory"
    for group, local in ((run.measurements, in_process), (run.baseline, True)):
        for m in group:
            for r in executions(m):
                problem = _samples_problem(run, m, r, local)
                if problem:
                    bad.append(problem)
    if not facts.stated(run.stop) and c.interleaved:
        bad.append("stop reason not recorded")
    for w in run.topology.worker_restarts:
        # its sessions, caches and any open transaction died with it mid-block
        gone = f"restarted as {w.now}" if w.now else "left the scheduler"
        bad.append(f"worker {w.worker} ({w.was}) died during the run and {gone}")
    if bad:
        return Rule(name, False, summary(bad))
    return Rule(
        name,
        True,
        f"{len(run.measurements)} measurements = the config's tables x queries"
        + (f", baseline of all {len(c.queries)} queries" if run.baseline else "")
        + ", one sample per partition; "
        + (
            f"stopped on {run.stop_reason}"
            if c.interleaved
            else f"{c.repeat} repetitions back to back (no stopping rule before interleaving)"
        ),
    )


def rule_repetitions(run: Run) -> Rule:
    # the methodology's minimum, whatever the run asked for (a --repeat 1 run is a smoke
    # test, not a measurement); a run that asked for more is held to its own setting
    want = max(MIN_REPS, run.config.min_reps or 0)
    why = f"the methodology's minimum is {MIN_REPS}"
    if run.config.min_reps is not None and run.config.min_reps < MIN_REPS:
        why += f"; this run asked for only {run.config.min_reps} (--min-reps/--repeat)"
    elif want > MIN_REPS:
        why = f"this run asked for --min-reps {want}"
    # distinct repetition indices: a duplicated repetition is one execution
    count = {step_label(m): len({r.index for r in m.repetitions}) for m in run.measurements}
    short = [f"{label} ({n})" for label, n in count.items() if n < want]
    if short:
        return Rule(
            "enough repetitions", False, f"fewer than {want} timed ({why}): {', '.join(short)}"
        )
    n = sorted(set(count.values()))
    return Rule(
        "enough repetitions",
        True,
        f"{'-'.join(map(str, n[:: max(1, len(n) - 1)]))} timed per measurement (>= {want})",
    )


def rule_full_scan(run: Run) -> Rule:
    scans = [m for m in run.measurements if m.query == "scan"]
    if not scans:
        if "scan" in run.config.queries:  # asked for, not measured: nothing proves it
            return Rule("full scan proven", False, "the config times the scan; none is recorded")
        return Rule("full scan proven", True, "no scan measured")
    columns = set(generator.COLUMNS)
    bad = []
    for m in scans:
        if m.variant != "full-row":
            bad.append(f"{m.table}: variant {m.variant!r} does not read whole rows")
            continue
        for r in m.repetitions:
            scanned = [s.rows_scanned for s in r.partitions]
            if any(x is None for x in scanned) or sum(scanned) != m.rows:
                bad.append(f"{m.table} rep {r.index}: rows scanned {scanned}, table has {m.rows}")
            elif any(
                not s.projections or any(set(p) != columns for p in s.projections)
                for s in r.partitions
            ):
                bad.append(
                    f"{m.table} rep {r.index}: projections do not cover all {len(columns)} columns"
                )
    if bad:
        return Rule(
            "full scan proven",
            False,
            summary(bad),
        )
    reps = sum(len(m.repetitions) for m in scans)
    if reps == 0:  # an incomplete run: "0 scans read every row" proves nothing
        return Rule("full scan proven", False, "no timed scan recorded (an incomplete run?)")
    return Rule(
        "full scan proven", True, f"{reps} scans read every row and all {len(columns)} columns"
    )


def _one_process_update(m: Measurement, shared_process: bool) -> bool:
    """The only step whose storage reads are recorded for the repetition, not per partition:
    the update run by units sharing one process (shared-memory mode and the baseline)."""
    return shared_process and m.query in queries.REGISTRY and queries.get(m.query).transactional


def _cold_problem(m: Measurement, r: Repetition, shared_process: bool) -> str | None:
    if m.query == "scan" and m.variant == "as-written":
        return None  # answered from statistics: reads nothing by design
    unsplit = all(s.bytes_read is None for s in r.partitions) and r.bytes_read is not None
    if unsplit and _one_process_update(m, shared_process):
        # units sharing one process (the shared-memory update): the step's total
        if r.bytes_read <= 0:
            return f"{step_label(m)} rep {r.index}: read nothing from storage"
        return rules_derived.cold_columns_problem(m, r)
    if not r.partitions:
        return f"{step_label(m)} rep {r.index}: no partition recorded what it read"
    full_row = m.query == "scan" and m.variant == "full-row"
    for s in r.partitions:
        where = f"{step_label(m)} rep {r.index} part {s.part}"
        if s.bytes_read is None:
            return f"{where}: bytes read not recorded"
        if full_row:
            if not s.data_bytes:
                return f"{where}: data size not recorded"
            if s.bytes_read < COLD_SCAN_MIN * s.data_bytes:
                return f"{where}: read {s.bytes_read:,} of {s.data_bytes:,} data bytes (< {COLD_SCAN_MIN:.0%})"
        elif s.bytes_read <= 0:
            return f"{where}: read nothing from storage"
    if not full_row:
        return rules_derived.cold_columns_problem(m, r)
    if full_row:
        # held to the table's size too, so shrinking data_bytes with bytes_read proves
        # nothing (data_bytes may grow over a run: a table re-opened after updates)
        read = sum(s.bytes_read or 0 for s in r.partitions)
        if not m.table_bytes:
            return f"{step_label(m)} rep {r.index}: table size not recorded"
        if read < COLD_SCAN_MIN * m.table_bytes:
            return (
                f"{step_label(m)} rep {r.index}: read {read:,} bytes, less than {COLD_SCAN_MIN:.0%} "
                f"of the table's {m.table_bytes:,}"
            )
    return None


def _warm_problem(m: Measurement, r: Repetition) -> str | None:
    """A warm timed repetition that read a substantial part of its data from storage."""
    if r.partitions and all(s.bytes_read is None for s in r.partitions):
        read, data, where = r.bytes_read, m.table_bytes, f"{step_label(m)} rep {r.index}"
        if read is not None and data and read > WARM_READ_MAX * data:
            return f"{where}: warm, yet read {read:,} of {data:,} table bytes from storage"
        return None
    for s in r.partitions:
        if (
            s.bytes_read is not None
            and s.data_bytes
            and s.bytes_read > WARM_READ_MAX * s.data_bytes
        ):
            return (
                f"{step_label(m)} rep {r.index} part {s.part}: warm, yet read {s.bytes_read:,} of "
                f"{s.data_bytes:,} data bytes from storage (> {WARM_READ_MAX:.0%})"
            )
    return None


def rule_cache(run: Run) -> Rule:
    cache = run.config.cache
    if cache not in runfile.CACHE_STATES:
        return Rule("cache state proven", False, "cache state not recorded")
    shm = run.config.mode == "shared-memory"
    bad = []
    warm_checked = 0
    for m, shared_process in (
        *((m, shm) for m in run.measurements),
        *((m, True) for m in run.baseline),  # one in-process DuckDB
    ):
        if m.cache != cache:
            bad.append(f"{step_label(m)}: measured {m.cache or 'unrecorded'}, run says {cache}")
            continue
        for r in m.repetitions:
            if r.cold != (cache == CacheState.COLD):
                bad.append(f"{step_label(m)} rep {r.index}: tagged {'cold' if r.cold else 'warm'}")
            elif not r.cold:
                # warm: the timed repetition found its data resident (warm-ups load it)
                warm_checked += any(s.bytes_read is not None for s in r.partitions) or (
                    r.bytes_read is not None
                )
                problem = _warm_problem(m, r)
                if problem:
                    bad.append(problem)
        for r in executions(m):
            if r.cold:
                problem = _cold_problem(m, r, shared_process)
                if problem:
                    bad.append(problem)
    if bad:
        return Rule(
            "cache state proven",
            False,
            summary(bad),
        )
    if cache == CacheState.WARM:
        return Rule(
            "cache state proven",
            True,
            "warm: data resident by an untimed run right before; "
            f"{warm_checked} timed repetitions record their reads, none read more than "
            f"{WARM_READ_MAX:.0%} of its data from storage",
        )
    full = [
        s.bytes_read / s.data_bytes
        for m in run.measurements
        if m.query == "scan" and m.variant == "full-row"
        for r in m.repetitions
        for s in r.partitions
        if s.data_bytes and s.bytes_read is not None
    ]
    least = f"; full-row scans read >= {min(full):.0%} of their data" if full else ""
    return Rule("cache state proven", True, f"cold: every cold execution read from storage{least}")


def _share_problems(run: Run) -> list[str]:
    """Recorded engine shares the repetitions' own times contradict, or above 1."""
    out = []
    for m in (*run.measurements, *run.baseline):
        for r in m.repetitions:
            share = recomputed_share(r)
            if r.engine_share is None or share is None:
                continue  # unrecorded: judged below (measurements), not a contradiction
            where = f"{step_label(m)} rep {r.index}"
            if share > 1 + SHARE_ABS_TOL:
                out.append(f"{where}: engine time {share:.2f}x its wall time")
            elif not math.isclose(
                r.engine_share, share, rel_tol=SHARE_REL_TOL, abs_tol=SHARE_ABS_TOL
            ):
                out.append(
                    f"{where}: recorded engine share {r.engine_share:.6g}, its times give {share:.6g}"
                )
            elif r.engine_share > 1 + SHARE_ABS_TOL:
                out.append(f"{where}: engine share {r.engine_share:.3g} above 1")
    return out


def rule_engine_share(run: Run) -> Rule:
    cores = metrics.machine_cores(run)
    # which points are oversubscribed (not checked) turns on the cores: re-derived first
    wrong_cores = rules_derived.cores_problems(run)
    if wrong_cores:
        return Rule("engine share", False, "; ".join(wrong_cores))
    contradicted = _share_problems(run)
    if contradicted:
        return Rule(
            "engine share",
            False,
            "recorded share disagrees with its times: " + summary(contradicted),
        )
    bad, above, unrecorded = [], [], []
    for m in run.measurements:
        share = [
            r.engine_share
            for r in m.repetitions
            if r.engine_share is not None and recomputed_share(r) is not None
        ]
        over = [r.overhead_s for r in m.repetitions if r.overhead_s is not None]
        if len(share) < len(m.repetitions) or len(over) < len(m.repetitions) or not m.repetitions:
            unrecorded.append(step_label(m))
            continue
        if schedule.harness_dominated(m):
            what = (
                f"{step_label(m)}: engine share {stats.median(share):.0%}, median "
                f"{stats.median(m.times) * 1e3:.0f} ms = {_multiple(m.times, over)} overhead"
            )
            (bad if m.partitions <= cores else above).append(what)
    note = (
        f"; above {cores} cores (oversubscribed, not checked): {len(above)} harness-dominated"
        if above
        else ""
    )
    if unrecorded:
        return Rule(
            "engine share",
            False,
            f"harness overhead or engine share not recorded for {len(unrecorded)} "
            f"measurements ({', '.join(unrecorded[:3])}...)",
        )
    if bad:
        return Rule(
            "engine share",
            False,
            f"harness-dominated at P <= {cores}: "
            + "; ".join(bad[:4])
            + (f" (+{len(bad) - 4})" if len(bad) > 4 else "")
            + note,
        )
    return Rule(
        "engine share",
        True,
        f"every point at P <= {cores} has engine share >= {schedule.ENGINE_SHARE_MIN:.0%} and median >= {schedule.OVERHEAD_MULTIPLE_MIN:.0f}x overhead{note}",
    )


def _same_data(run: Run, m: Measurement) -> tuple:
    """Measurements of one table's data (same kind, size, seed, generator) and query must
    give one answer, whatever the partitioning or engine."""
    t = next((t for t in run.tables if t.name == m.table), None)
    return (m.kind, m.rows, t and t.seed, t and t.generator_version, m.query, m.variant)


def _answer_problems(run: Run) -> list[str]:
    out = []
    expected: dict[tuple, tuple[str, int]] = {}
    averages: dict[tuple, tuple[str, float]] = {}
    for m in (*run.measurements, *run.baseline):
        key = _same_data(run, m)
        first = expected.setdefault(key, (step_label(m), m.expected_rows))
        if first[1] != m.expected_rows:
            out.append(
                f"{step_label(m)}: expects {m.expected_rows} rows, {first[0]} on the same data "
                f"{first[1]}"
            )
        if m.query != "average":
            continue
        for r in executions(m):
            if r.answer is None:
                out.append(f"{step_label(m)} rep {r.index}: average not recorded")
                continue
            ref = averages.setdefault(key, (f"{step_label(m)} rep {r.index}", r.answer))
            if not math.isclose(r.answer, ref[1], rel_tol=ANSWER_REL_TOL):
                out.append(
                    f"{step_label(m)} rep {r.index}: average {r.answer!r}, {ref[0]} on the same "
                    f"data {ref[1]!r}"
                )
    return out


def rule_verified(run: Run) -> Rule:
    bad = []
    for m in (*run.measurements, *run.baseline):
        for r in executions(m):
            if not r.verified:
                bad.append(f"{step_label(m)} rep {r.index}: not verified")
            elif r.rows != m.expected_rows:
                bad.append(
                    f"{step_label(m)} rep {r.index}: {r.rows} rows, expected {m.expected_rows}"
                )
    bad += _answer_problems(run)
    derived, judged = rules_derived.answer_problems(run)
    bad += derived
    if bad:
        return Rule(
            "answers verified",
            False,
            summary(bad),
        )
    n = sum(1 for m in (*run.measurements, *run.baseline) for _ in executions(m))
    return Rule(
        "answers verified",
        True,
        f"{n} executions returned the expected answer; all {judged} re-derived from the "
        "tables' size and seed with the generator",
        (("executions", float(n)),),
    )


# Every commit protocol a runner of this tool has run with (config.durability; an older
# file's wording was read into its code word for word when it was migrated), as the audit
# names it. Anything else, such as words that merely mention the WAL, is not a setting this
# tool runs with.
DURABILITY_PROTOCOLS = {
    Durability.WAL_DECISION_UNIT: "the runner's setting",
    Durability.WAL_DECISION: "the first runner's setting",
    Durability.WAL: "the schema-1 runner's setting",
}


def rule_durability(run: Run) -> Rule:
    name = "durability on"
    d = run.config.durability
    if not d:
        return Rule(name, False, "durability not recorded")
    which = DURABILITY_PROTOCOLS.get(d)
    if which is None:
        return Rule(name, False, f"not a setting this tool runs with: {d!r}")
    # the structured evidence: the update's commit decision, fsynced by the coordinator
    # before any partition commits, timed on every update execution (commit_decision_s)
    updates = [
        (m, r)
        for m in (*run.measurements, *run.baseline)
        if m.query == "update"
        for r in executions(m)
    ]
    timed = [r.commit_decision_s for _, r in updates if r.commit_decision_s is not None]
    if not updates:
        evidence = "no update measured (no commit decision to time)"
    elif not timed:
        evidence = "its update executions predate the commit-decision timing (wording only)"
    else:
        bad = [
            f"{step_label(m)} rep {r.index}: "
            + ("not recorded" if r.commit_decision_s is None else f"{r.commit_decision_s} s")
            for m, r in updates
            if r.commit_decision_s is None or r.commit_decision_s <= 0
        ]
        if bad:
            return Rule(
                name,
                False,
                "the update's fsynced commit decision is not timed > 0 s: " + summary(bad),
            )
        evidence = (
            f"the update's fsynced commit decision timed > 0 s in all {len(updates)} executions"
        )
    return Rule(name, True, f"{which}, word for word (WAL, fsync on commit); {evidence}")


def rule_baseline(run: Run) -> Rule:
    if not run.baseline:
        return Rule("single-thread baseline", False, "no single-thread baseline recorded")
    qs = ", ".join(m.query for m in run.baseline)
    return Rule("single-thread baseline", True, f"F1 with one in-process DuckDB thread: {qs}")


# Every rule once, with its name, in the order the audit reports them.
RULES = (
    ("run complete", rule_complete),
    ("answers verified", rule_verified),
    ("full scan proven", rule_full_scan),
    ("cache state proven", rule_cache),
    ("engine share", rule_engine_share),
    ("durability on", rule_durability),
    ("repetitions interleaved", rule_interleaved),
    ("rounds complete", rule_rounds_complete),
    ("blocks", rule_blocks),
    ("enough repetitions", rule_repetitions),
    ("single-thread baseline", rule_baseline),
    ("times within physics", rule_physics),
)


def audit(run: Run) -> list[Rule]:
    rules = [checked(rule, run, name) for name, rule in RULES]
    # an incomplete run passes nothing: what held so far says "incomplete"
    return mark_incomplete(rules, "run complete") if run.status != "complete" else rules


def audit_file(path: str | os.PathLike) -> list[Rule]:
    try:
        run = runfile.load(path)
    except runfile.RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    return audit(run)
