"""The verdict block every Wisconsin report opens with: the answer before the evidence.

Speedup and scaleup per query at the largest P with their intervals beside Tandem's, what
share of this machine's measured bound they reach, the audit verdict (the workload's own
rules, run here, not restated), the cache state and one sentence on why the curve bends
(from the startup / skew / interference split of wisconsin.analysis.metrics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wisconsin.analysis.metrics import Point, machine_cores
from wisconsin.analysis.verdict import bound_shares, top_points, why_it_bends
from wisconsin.reports.document import Section, Table, fnum
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin import tandem
from wisconsin.workloads.wisconsin.queries import QUERIES

TITLE = "Verdict"
KIND_WORD = {"F": "Speedup", "G": "Scaleup"}
# Below this parallel efficiency a curve is said to bend.
BENDS_BELOW = 0.9


@dataclass(frozen=True)
class AuditVerdict:
    ok: bool
    failed: tuple[str, ...]  # the names of the rules that failed, in the audit's order
    rules: int

    @property
    def text(self) -> str:
        if self.ok:
            return f"audit: pass ({self.rules} rules)"
        return f"audit: fail ({', '.join(self.failed)})"


def audit_verdict(runs: Sequence[Run]) -> AuditVerdict:
    """The workload's audit of every pooled run: pass only if every rule of every run does."""
    from wisconsin.workloads.wisconsin.audit import audit

    failed: dict[str, None] = {}
    rules = 0
    for run in runs:
        found = audit(run)
        rules = max(rules, len(found))
        failed.update((r.name, None) for r in found if not r.ok)
    return AuditVerdict(not failed, tuple(failed), rules)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _ratio_table(kind: str, pts: list[Point], ratio_cell) -> Table:
    top = top_points(pts)
    P, at = top[0].P, {p.query: p for p in top}
    queries = [q for q in QUERIES if q in at] + sorted(set(at) - set(QUERIES))
    header = [f"{KIND_WORD[kind]} at P={P}", "ours [95% CI]", "ideal"]
    header += [f"Tandem {s}" for s in tandem.SYSTEMS] + ["of bound"]
    rows = []
    for q in queries:
        p = at[q]
        pub = [tandem.published(s, kind, q).get(P) for s in tandem.SYSTEMS]
        rows.append(
            [tandem.QUERY_LABELS.get(q, q), ratio_cell(p), fnum(p.ideal), *map(fnum, pub)]
            + [_pct(p.of_bound)]
        )
    return Table(header, rows)


def _bound_line(top: list[Point], note: str) -> str:
    shares = bound_shares(top)
    if shares is None:
        return f"bound: {note.removeprefix('bound ') or 'not available'}"
    lo, hi = shares.lo, shares.hi
    span = _pct(lo) if shares.points == 1 else f"{_pct(lo)}-{_pct(hi)}"
    return (
        f"bound: at P = {top[0].P} the queries run at {span} of what this machine allows "
        f"(median {_pct(shares.median)})"
    )


def _cache_line(runs: Sequence[Run]) -> str:
    states = sorted({r.config.cache or "not recorded" for r in runs})
    why = {
        "cold": "every partition evicted before each timed execution",
        "warm": "the statement ran untimed right before, data resident",
    }
    return "cache: " + "; ".join(f"{s} ({why[s]})" if s in why else s for s in states)


def _blocks_line(top: list[Point], cfg) -> str:
    """What the intervals rest on: blocks (run-to-run variation in them) or one block."""
    n = max((p.blocks for p in top), default=1)
    fresh = cfg.mode == "shared-nothing" and not cfg.cluster
    if n >= 2 and fresh:
        return f"intervals: over {n} blocks (fresh worker processes each): run-to-run variation in them"
    if n >= 2:
        return (
            f"intervals: over {n} blocks (one set of processes: only the variation between "
            "blocks in time is in them)"
        )
    return "intervals: one block: run-to-run variation unknown (use more --blocks or --min-reps)"


def bend_sentence(points: list[Point], cores: int) -> str:
    """Why the curve bends at the largest P, from the causes split (one sentence)."""
    bend = why_it_bends(points, cores)
    P, P0 = bend.P, bend.P0
    if P == P0:
        return "why it bends: one partition count only: no curve"
    curve = "speedup" if bend.kind == "F" else "scaleup"
    if bend.harness_only:
        return (
            f"why it bends: at P = {P} every query is harness-dominated (engine share < 80% or "
            "time < 20x the harness overhead): the ratios measure dispatch more than DuckDB"
        )
    eff = bend.efficiency
    if eff is not None and eff >= BENDS_BELOW:
        return f"why it bends: it hardly does: median {curve} efficiency {eff:.2f} at P = {P}"
    cause = bend.cause
    if cause is None:
        return f"why it bends: not measured at P = {P} (no per-partition samples)"
    sharing = bend.sharing
    shared = f" ({sharing:.1f}x from {P} partitions sharing {cores} cores)" if sharing > 1 else ""
    said = {
        "interference": f"each partition runs {bend.interference or 0:.1f}x slower than the "
        f"same work at P = {P0}{shared}",
        "skew": f"the slowest partition takes {bend.skew or 0:.2f}x the mean",
        "start-up": f"partitions wait {100 * (bend.startup or 0):.0f}% of the time to start",
    }
    rest = [k for k, _ in bend.losses if k != cause]
    tail = f"; {' and '.join(rest)} cost less" if rest else ""
    eff_text = f"efficiency {eff:.2f}" if eff is not None else "efficiency not measured"
    return f"why it bends ({curve} {eff_text} at P = {P}): {cause}: {said[cause]}{tail}"


def verdict_section(runs: Sequence[Run], points: list[Point], ratio_cell) -> Section:
    """The verdict block of one configuration (runs pooled as replicates)."""
    run = runs[0]
    cfg = run.config
    cores = machine_cores(run)
    where = f"cluster {cfg.cluster}" if cfg.cluster else f"{cores} cores"
    parts = ",".join(str(p) for p in sorted({t.partitions for t in run.tables}))
    if cfg.g_partitions is not None and "G" in cfg.kinds:  # a calibrated bench's layout
        parts += f" (G at {','.join(map(str, cfg.g_partitions))})"
    pooled = f"; {len(runs)} runs pooled" if len(runs) > 1 else ""
    items: list = [f"{cfg.mode} on {where}; P = {parts}{pooled}"]
    items.append(audit_verdict(runs).text)
    if not points:
        items.append("no timed repetitions: nothing to judge")
        return Section(TITLE, items)
    top = top_points(points)
    note = next((p.bound_note for p in top if p.bound_note), "")
    items.append(_bound_line(top, note))
    items.append(_cache_line(runs))
    items.append(_blocks_line(top, cfg))
    noise = dict.fromkeys(
        f for r in runs if r.environment.preflight for f in r.environment.preflight.findings
    )
    if noise:
        items.append("noise before the run: " + "; ".join(noise))
    for r in runs:
        if r.status != "complete":
            items.append(f"status: {r.status}: {r.stop_reason or '-'}")
    for kind in ("F", "G"):
        pts = [p for p in points if p.kind == kind]
        if pts:
            items.append(_ratio_table(kind, pts, ratio_cell))
    p0 = sorted({p.P0 for p in points})
    base = "" if p0 == [2] else f" (ours: relative to P = {','.join(map(str, p0))})"
    items.append(
        f"Tandem: Table 2, relative to P = 2{base}. Marks: (..)h harness-dominated, "
        "~ wide interval, * more threads than cores, ? unverified, ! beats its bound."
    )
    items.append(bend_sentence(points, cores))
    return Section(TITLE, items)
