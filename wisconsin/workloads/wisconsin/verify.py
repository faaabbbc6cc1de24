"""Answer checks: every answer against the one computed independently from the generator
(wisconsin.store.expect). A wrong answer voids the run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wisconsin import VerificationError, store
from wisconsin.store.expect import UPDATE_DELTA, TableExpect

if TYPE_CHECKING:
    from wisconsin.engines.base import StepResult


def _fail(m: store.Manifest, query: str, what: str) -> VerificationError:
    return VerificationError(f"{m.name} {query}: wrong answer: {what}")


def verify_scan(m, variant, step: StepResult) -> int:
    returned = sum(len(u.rows) for u in step.units.values())
    if returned:
        raise _fail(m, "scan", f"returned {returned} rows, expected none")
    scanned = sum(u.rows_scanned for u in step.units.values())
    if variant != "as-written" and scanned != m.rows:
        raise _fail(
            m, "scan", f"the engine read {scanned} of {m.rows} rows: a scan that did not scan"
        )
    if variant == "full-row":
        columns = set(store.generator.COLUMNS)
        for u in step.units.values():
            for projected in u.projections:
                if set(projected) != columns:
                    raise _fail(m, "scan", f"full-row scan read only columns {projected}")
    return 0


def inserted_rows(step: StepResult) -> int:
    """The rows an INSERT statement reports it inserted, over all its units."""
    return sum(r[0] for u in step.units.values() for r in u.rows)


def verify_inserted(engine, m, query, exp: TableExpect, step: StepResult) -> int:
    inserted = inserted_rows(step)
    if inserted != exp.selected:
        raise _fail(m, query, f"inserted {inserted} rows, expected {exp.selected}")
    digests = engine.result_digests(f"{query}_result")
    for part, (rows, digest) in digests.items():
        want = (
            (exp.selected, exp.selected_digest)
            if part < 0
            else (
                exp.parts[part].selected,
                exp.parts[part].selected_digest,
            )
        )
        if (rows, digest) != want:
            where = "the result table" if part < 0 else f"partition {part}'s result"
            raise _fail(m, query, f"{where} holds {rows} rows that differ from the expected rows")
    return inserted


def verify_average(m, exp: TableExpect, step: StepResult) -> tuple[int, float]:
    total = sum(u.rows[0][0] or 0 for u in step.units.values())
    count = sum(u.rows[0][1] for u in step.units.values())
    if (total, count) != (exp.sum_onepct, exp.rows):
        raise _fail(
            m, "average", f"SUM/COUNT {total}/{count}, expected {exp.sum_onepct}/{exp.rows}"
        )
    return count, total / count


def verify_update_state(engine, m, exp: TableExpect, applied: bool) -> None:
    got = engine.query(
        f"SELECT sum(four)::BIGINT, count(*) FILTER (WHERE four >= {UPDATE_DELTA}) FROM {m.table}"
    )
    for part, rows in got.items():
        pe = exp.parts[part]
        want = (
            (pe.sum_four + UPDATE_DELTA * pe.selected, pe.selected) if applied else (pe.sum_four, 0)
        )
        if tuple(rows[0]) != want:
            state = "after the update" if applied else "after undoing the update"
            raise _fail(
                m,
                "update",
                f"partition {part} {state}: sum(four), updated = {rows[0]}, expected {want}",
            )


def verify_update_counts(m, exp: TableExpect, step: StepResult) -> int:
    for part, u in step.units.items():
        if u.rows[0][0] != exp.parts[part].selected:
            raise _fail(
                m,
                "update",
                f"partition {part} updated {u.rows[0][0]} rows, expected {exp.parts[part].selected}",
            )
    return exp.selected


# ---------------------------------------------------------------- one signature for the registry
# check(query, engine, manifest, expect, step, scan_variant) -> (rows, answer)


def check_scan(q, engine, m, exp: TableExpect, step: StepResult, variant: str):
    return verify_scan(m, variant, step), None


def check_average(q, engine, m, exp: TableExpect, step: StepResult, variant: str):
    return verify_average(m, exp, step)


def check_inserted(q, engine, m, exp: TableExpect, step: StepResult, variant: str):
    return verify_inserted(engine, m, q.name, exp, step), None


def check_update(q, engine, m, exp: TableExpect, step: StepResult, variant: str):
    return verify_update_counts(m, exp, step), None
