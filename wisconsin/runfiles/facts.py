"""What a Wisconsin run file records as facts, and the words they are said in.

A run file records facts as typed fields (a durability protocol's code, why the rounds
stopped, which transport carried the statements); readers judge the fields, and the
sentences a report prints are rendered from them here. The same tables read an older
file's sentences back into fields, once, when it is migrated (runfiles.migrate).
"""

from __future__ import annotations

import enum


class Durability(enum.StrEnum):
    """The commit protocols a runner of this tool has run with (RunConfig.durability)."""

    # each partition's WAL fsynced on COMMIT; the update's commit decision fsynced by the
    # coordinator first; the update and its undo one recoverable unit (since 2026-11-22)
    WAL_DECISION_UNIT = "wal-decision-unit"
    WAL_DECISION = "wal-decision"  # the first interleaving runner: no update/undo unit
    WAL = "wal"  # the schema-1 runner


DURABILITY_TEXT = {
    Durability.WAL_DECISION_UNIT: (
        "durability on: each partition commits through DuckDB's WAL (COMMIT fsyncs it); the "
        "cross-partition update's commit decision is fsynced by the coordinator before any "
        "partition commits; the update and its untimed undo are one recoverable unit (an "
        "fsynced intent before the update; opening a table restores its generated state and "
        "verifies its digests); every partition is checked against its manifest before "
        "timing; inserts into result tables are autocommitted"
    ),
    Durability.WAL_DECISION: (
        "durability on: each partition commits through DuckDB's WAL (COMMIT fsyncs it); the "
        "cross-partition update's commit decision is fsynced by the coordinator before any "
        "partition commits; inserts into result tables are autocommitted"
    ),
    Durability.WAL: "DuckDB WAL, checkpoint after load; fsync on commit",
}


def durability_text(code: str) -> str:
    """The protocol in words; a value that is no protocol of this tool (an older file's own
    words, kept as written) as it is."""
    return DURABILITY_TEXT.get(code, code)  # type: ignore[call-overload]


def transport_text(asked: str, used: str) -> str:
    """What carried a shared-nothing run's timed statements ("" if not recorded)."""
    if used == "direct":
        return (
            "transport: timed statements (with the empty statement of overhead_s and the "
            "update's prepare/commit/abort) and the reset, eviction and verification around "
            "them went over a direct socket per partition (--transport direct); Dask started "
            "the workers and opened, closed and recovered the tables"
        )
    if used == "dask" and asked == "direct":
        return (
            "transport: timed statements went as pinned Dask tasks: the cluster is TLS and "
            "the direct socket is not encrypted"
        )
    if used == "dask":
        return "transport: timed statements went as pinned Dask tasks (--transport dask)"
    return ""


# --------------------------------------------------------------------------- the stop


class StopRule(enum.StrEnum):
    """Why the rounds stopped (Run.stop.rule)."""

    MAX_REPS = "max-reps"
    TIME_BUDGET = "time-budget"
    MIN_REPS = "min-reps"  # --min-reps reached with no headline ratio to narrow
    TARGET_CI = "target-ci"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    WORDED = "worded"  # an older file's stop reason in words this version does not write


HEADLINE_NONE = (
    "no headline ratio to narrow (every ratio has a harness-dominated point, or one P per kind)"
)


def _count(x) -> str:
    """A setting recorded as a number, as the user typed it (5, not 5.0)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def stop_text(stop) -> str | None:
    """A Stop in the words of a stop reason; "" for no stop; None when a figure the words
    need is not recorded."""
    if stop is None:
        return ""
    n, rule, limit = stop.rounds, stop.rule, stop.limit
    try:
        if rule == StopRule.MAX_REPS:
            return f"max reps: {n:d} rounds ({stop.flag or '--max-reps'} {_count(limit)})"
        if rule == StopRule.TIME_BUDGET:
            short = f" (fewer than --min-reps {stop.short_of:d})" if stop.short_of else ""
            return (
                f"time budget: {n:d} rounds in {stop.elapsed_s:.0f} s; another "
                f"(~{stop.next_round_s:.0f} s) would pass --time-budget {limit:.0f} s{short}"
            )
        if rule == StopRule.MIN_REPS:
            return f"min reps: {n:d} rounds (--min-reps {_count(limit)}); {HEADLINE_NONE}"
        if rule == StopRule.TARGET_CI:
            return (
                f"target CI met: all {stop.headlines:d} headline ratios within "
                f"+-{limit:.0%} after {n:d} rounds"
            )
    except (TypeError, ValueError, ArithmeticError):  # a figure not recorded (or absurd)
        return None
    if rule == StopRule.INTERRUPTED:
        return "interrupted (^C)"
    if rule == StopRule.FAILED:
        return f"failed: {stop.text}"
    return stop.text


def stated(stop) -> bool:
    """Whether a run says why it stopped (not: nothing, or older words that are blank)."""
    return stop is not None and (stop.rule != StopRule.WORDED or bool(stop.text.strip()))
