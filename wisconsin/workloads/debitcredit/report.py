"""The DebitCredit report: OLTP scaleup beside Tandem 1987, response-time curves, the audit.

What goes in it (a reports.Report: its sections, json data, csv rows, and the page's
verdict, audit and figures); wisconsin.reports sets it out in every format."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from wisconsin.analysis.audit import Rule, overall, summary
from wisconsin.reports.document import SPACED, Section, Table
from wisconsin.reports.report import Page, Report, check_format
from wisconsin.reports.report import render as render_reports
from wisconsin.workloads.debitcredit import interconnect, metrics
from wisconsin.workloads.debitcredit.runfile import (
    DebitCreditRun,
    Step,
    durability_text,
    load,
    missing,
)
from wisconsin.workloads.debitcredit.tandem import TANDEM_TPS, tandem_scaleup

# audit(path) -> its rules: the audit of a run file (workload.audit_file)
Audit = Callable[[str | os.PathLike], list[Rule]]


def summary_rows(run: DebitCreditRun) -> list[dict]:
    cfg = run.config
    base = run.results[0] if run.results else None
    base_rule = metrics.rule_tps(base, cfg.rule_share, cfg.rule_limit_s) if base else None
    base_peak = metrics.peak_tps(base) if base else None
    cores = run.environment.get("usable_cores") or max(
        (r.partitions for r in run.results), default=1
    )
    rows = []
    for r in run.results:
        rule = metrics.rule_tps(r, cfg.rule_share, cfg.rule_limit_s)
        peak = metrics.peak_tps(r)
        closed = [s for s in r.steps if s.mode == "closed"]
        committed = sum(s.committed for s in r.steps)
        scaled, verdict = metrics.scaled_verdict(run, r)
        rows.append(
            {
                "P": r.partitions,
                "oversubscribed": r.oversubscribed,
                "accounts": r.accounts,
                "tps_rule": rule,
                "tps_peak": peak,
                "steady_steps": sum(bool(metrics.steadiness(s).steady) for s in r.steps),
                "steps": len(r.steps),
                "scaleup_rule": metrics.scaleup(base_rule, rule),
                "scaleup_peak": metrics.scaleup(base_peak, peak),
                "ideal": r.partitions / base.partitions,
                "ceiling": min(r.partitions, cores) / min(base.partitions, cores),
                "p95_closed_s": max((s.latency.p95 for s in closed), default=0.0),
                "remote_observed": metrics.observed_remote(r),
                "remote_expected": metrics.expected_remote(cfg.sizing, r.partitions),
                "retries_per_txn": sum(s.retries for s in r.steps) / committed if committed else 0,
                "cpu_ms_per_txn": 1e3 * sum(s.cpu_s for s in r.steps) / committed
                if committed
                else 0,
                "audit_ok": r.audit.ok,
                "scaled": scaled,
                "verdict": verdict,
            }
        )
    return rows


def _csv(iv: metrics.Interval, which: str):
    return getattr(iv, which) if iv.n else ""  # empty: nothing steady sets it


def _steady_cell(v: metrics.Steadiness) -> str:
    if v.steady:
        if v.drift_allowed > metrics.DRIFT_LIMIT:  # slow or noisy: only a big drift shows
            return f"yes ({v.drift:+.0%}, noise {v.drift_allowed:.0%})"
        return "yes"
    return ("no: " if v.steady is False else "not judged: ") + v.why


def _pinning(run: DebitCreditRun) -> str:
    """Where each P's partitions ran (PartitionResult.pinned_cores)."""
    parts = []
    for r in run.results:
        if r.pinned_cores:
            parts.append(f"P={r.partitions} on cores {','.join(map(str, r.pinned_cores))}")
        else:
            parts.append(
                f"P={r.partitions} "
                + ("oversubscribed, not pinned" if r.oversubscribed else "not pinned")
            )
    return (
        "; ".join(parts)
        + " (a pinned partition's server, terminals and DuckDB threads share its one core)"
    )


def _status(run: DebitCreditRun) -> str:
    """What the run lacks of its configuration, and whether it was scaled by the rules."""
    return "\n".join([*(f"incomplete: {gap}" for gap in missing(run)), metrics.scale_label(run)])


def _settings(run: DebitCreditRun) -> str:
    """The machine, the rule, the schedule, durability and pinning: what the run asked."""
    cfg, env = run.config, run.environment
    rule = f"{cfg.rule_share:.0%} within {cfg.rule_limit_s:g} s"
    fractions = ", ".join(f"{f:g}" for f in cfg.load_fractions)
    return "\n".join(
        [
            f"Machine: {env.get('cpu_model', '?')}, {env.get('usable_cores', '?')} usable "
            f"cores; DuckDB {env.get('duckdb', '?')}. Rule: {rule}. Windows: closed "
            f"{cfg.closed_s:g} s, open {cfg.step_s:g} s; {cfg.repeats} repeats; closed: "
            f"{cfg.streams} streams per partition; open: {cfg.servers} servers per partition "
            f"at {fractions} x the closed peak.",
            f"Durability: {durability_text(cfg.durability)}.",
            "Processors: " + _pinning(run) + ".",
        ]
    )


def _scaleup_row(r: dict) -> list[str]:
    return [
        f"{r['P']}{' (oversubscribed)' if r['oversubscribed'] else ''}",
        r["tps_rule"].fmt(),
        r["scaleup_rule"].fmt(2),
        r["tps_peak"].fmt(),
        r["scaleup_peak"].fmt(2),
        f"{r['steady_steps']}/{r['steps']}",
        f"{r['ideal']:g}",
        f"{r['ceiling']:g}",
        f"{r['remote_observed']:.1%} / {r['remote_expected']:.1%}",
        f"{r['retries_per_txn']:.2f}",
        f"{r['cpu_ms_per_txn']:.1f}",
        "OK" if r["audit_ok"] else "VOID",
    ]


SCALEUP_HEADER = [
    "P",
    "tps by rule",
    "scaleup",
    "peak tps",
    "scaleup",
    "steady",
    "ideal",
    "ceiling",
    "remote obs/exp",
    "retries/txn",
    "CPU ms/txn",
    "audit",
]


def _scaleup_section(run: DebitCreditRun, rows: list[dict]) -> Section:
    """Throughput by the rule and at the peak per P, their scaleup, and how to read them."""
    cores = run.environment.get("usable_cores") or "?"
    unset = any(r["tps_rule"].n == 0 or r["tps_peak"].n == 0 for r in rows)
    t = tandem_scaleup()
    return Section(
        "OLTP scaleup (one repeat: delivered tps [95% interval of its 5-s batch means]; "
        "several: median [min-max] over repeats; scaleup pairs the extremes)",
        [
            Table(SCALEUP_HEADER, [_scaleup_row(r) for r in rows]),
            f"ideal = P/P0; ceiling = min(P, {cores})/min(P0, {cores}): the best possible "
            f"with {cores} usable cores. Higher is better.",
            "tps = transactions committed per second in the window (delivered, never "
            "offered); only steady steps set tps by rule and peak tps (steady: delivered tps "
            f"within {metrics.DRIFT_LIMIT:.0%} first to last third, or within its noise up to "
            f"{metrics.DRIFT_CAP:.0%}; engine memory flat, no spill)."
            + (
                " - : no steady step sets it (none met the rule, or steadiness could not be"
                f" judged: windows under {metrics.MIN_JUDGED_S} s, or no per-second series"
                " recorded)."
                if unset
                else ""
            ),
            "Tandem 1987 (NonStop SQL, 90% within 2 s): 8, 16, 32 VLX = "
            + ", ".join(f"{TANDEM_TPS[n]} tps" for n in sorted(TANDEM_TPS))
            + "; scaleup "
            + ", ".join(f"{v:.2f} at {k}x" for k, v in sorted(t.items()))
            + " (0.9x linear: distributed transactions cost extra messages).",
        ],
        anchor="oltp-scaleup",
        figures=("oltp-scaleup",),
    )


CURVE_HEADER = [
    "mode",
    "offered tps",
    "tps",
    "p50 ms",
    "p90 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "<=1 s",
    "retries",
    "failed",
    "meets rule",
    "steady",
]


def _curve_row(s: Step, cfg) -> list[str]:
    opened = s.mode == "open"
    passes = metrics.step_passes(s, cfg.rule_share, cfg.rule_limit_s) if opened else None
    return [
        s.mode,
        f"{s.offered_tps:.1f}" if opened else f"{s.threads} streams",
        f"{s.throughput_tps:.1f}",
        *(f"{getattr(s.latency, q) * 1e3:.0f}" for q in ("p50", "p90", "p95", "p99", "max")),
        f"{s.latency.within_1s:.1%}",
        f"{s.retries}",
        f"{s.failed + s.unfinished}",
        "" if passes is None else ("yes" if passes else "no"),
        _steady_cell(metrics.steadiness(s)),
    ]


def _audit_text(a) -> str:
    """The invariants the bench checked after measuring this P, and the independent check."""
    return (
        f"Audit: {'OK' if a.ok else 'VOID'}; sums account {a.account_sum}, teller "
        f"{a.teller_sum}, branch {a.branch_sum}, history {a.history_sum}; history rows "
        f"{a.history_rows} = committed {a.acknowledged + a.in_doubt_committed}; "
        f"distributed {a.distributed_rows}; remote halves redone {a.recovered}"
        + (f"; problems: {'; '.join(a.problems)}" if a.problems else "")
        + "\nIndependent check (duckdb only): "
        + (a.independent[-1] if a.independent else "-")
    )


def _curves_section(run: DebitCreditRun) -> Section:
    """Per P, every window measured (open arrivals by offered load), then its audit."""
    items: list = []
    for res in run.results:
        items.append(f"P = {res.partitions}{' (oversubscribed)' if res.oversubscribed else ''}:")
        steps = sorted(res.steps, key=lambda s: (s.mode, s.offered_tps, s.repeat))
        items.append(Table(CURVE_HEADER, [_curve_row(s, run.config) for s in steps]))
        errors = sorted({s.first_error for s in res.steps if s.first_error})
        if errors:
            items.append("Unexpected errors (transactions counted as failed): " + "; ".join(errors))
        items.append(_audit_text(res.audit))
        cost = interconnect.cost_line(res)  # None: a run file from before the CPU split
        if cost is not None:
            items.append(cost)
    return Section(
        "Response-time curves (open arrivals)",
        items,
        anchor="response-time",
        figures=("response-time",),
    )


def document(run: DebitCreditRun, rows: list[dict]) -> list[Section]:
    """The report's sections: the run and its settings, the OLTP scaleup, whether the
    database was scaled by the rules, the response-time curves, the notes."""
    doc = [
        Section(
            f"DebitCredit OLTP scaleup, run {run.started_utc}",
            [_status(run), _settings(run)],
            anchor="run-metadata",
        ),
        _scaleup_section(run, rows),
        Section(
            "Scaled by the rules (100,000 accounts per tps)?",
            ["\n".join(f"- P={r['P']}: {r['verdict']}" for r in rows)] if rows else [],
            anchor="scaled",
        ),
        _curves_section(run),
    ]
    cluster = interconnect.section(run)  # only a P measured on a cluster has one
    if cluster is not None:
        doc.append(cluster)
    if run.notes:
        doc.append(Section("Notes", ["\n".join(f"- {n}" for n in run.notes)], anchor="notes"))
    return doc


CSV_COLUMNS = [
    "P",
    "tps_rule",
    "tps_rule_low",
    "tps_rule_high",
    "tps_peak",
    "scaleup_rule",
    "remote_observed",
    "remote_expected",
    "audit_ok",
    "scaled",
]


def _csv_row(r: dict) -> list:
    return [
        r["P"],
        _csv(r["tps_rule"], "median"),
        _csv(r["tps_rule"], "low"),
        _csv(r["tps_rule"], "high"),
        _csv(r["tps_peak"], "median"),
        _csv(r["scaleup_rule"], "median"),
        round(r["remote_observed"], 4),
        round(r["remote_expected"], 4),
        r["audit_ok"],
        r["scaled"],
    ]


def build(
    run: DebitCreditRun, path: str | os.PathLike | None = None, audit: Audit | None = None
) -> Report:
    """The run's report; its page holds audit(path), the audit of its run file."""
    rows = summary_rows(run)
    return Report(
        title="DebitCredit OLTP scaleup report",
        sections=document(run, rows),
        data=[{k: metrics.as_json(v) for k, v in row.items()} for row in rows],
        columns=CSV_COLUMNS,
        rows=[_csv_row(r) for r in rows],
        page=lambda: page(run, rows, audit(path) if audit and path is not None else None),
        layout=SPACED,
    )


def render(run: DebitCreditRun, fmt: str = "text") -> str:
    return render_reports([build(run)], fmt)


def report_files(
    paths: Sequence[str | os.PathLike], fmt: str = "text", audit: Audit | None = None
) -> str:
    """Each run file's report, in fmt (a page: one, audit giving each run's rules)."""
    check_format(fmt)
    runs = [load(p) for p in paths]
    reports = [build(run, p, audit) for run, p in zip(runs, paths, strict=True)]
    section = capacity_section(runs)
    if section is not None:  # three P or more measured: after the last run's report
        reports[-1].sections.append(section)
    return render_reports(reports, fmt)


def capacity_section(runs: list[DebitCreditRun]) -> Section | None:
    """The capacity model over the runs' P (analysis.capacity); None under three P."""
    from wisconsin.analysis import capacity

    if len({r.partitions for run in runs for r in run.results}) < capacity.MIN_FITTED_P:
        return None
    points, differ = metrics.capacity_points(runs)
    where = sorted(
        {(r.partitions, "a cluster" if r.cluster else "this machine") for run in runs
         for r in run.results}
    )  # fmt: skip
    items = (
        [f"not fitted: {differ}"]
        if differ
        else capacity.lines(capacity.model(points), "tps")
        + [
            "each point is one steady closed (peak) window; measured at P = "
            + ", ".join(f"{p} on {w}" for p, w in where)
            + "; a P without a steady closed window is left out"
        ]
    )
    return Section("Capacity model across P (peak tps)", items, anchor="capacity")


def _headline(run: DebitCreditRun, rows: list[dict]) -> str:
    """The answer: throughput at the response-time limit at the largest P, and how much of
    the possible scaleup over the smallest it reached."""
    cfg = run.config
    rule = f"{cfg.rule_share:.0%} within {cfg.rule_limit_s:g} s"
    if not rows:
        return f"Throughput with {rule}: no partition count measured."
    base, top = rows[0], max(rows, key=lambda r: r["P"])
    tps, up = top["tps_rule"], top["scaleup_rule"]
    if tps.n:
        text = f"P={top['P']}: {tps.fmt()} tps with {rule}"
    else:
        text = f"P={top['P']}: no tps with {rule} (no steady step met it)"
    if top is base:
        return text + "; one partition count: no scaleup."
    if not up.n:
        return text + f"; no scaleup over P={base['P']} (a side has no tps by the rule)."
    ratio = top["P"] / base["P"]
    tandem = tandem_scaleup().get(ratio)
    return (
        text + f"; scaleup {up.fmt(2)} over P={base['P']}, {up.median / top['ceiling']:.0%} of "
        f"the {top['ceiling']:g} this machine allows (ideal {top['ideal']:g})"
        + (f"; Tandem 1987: {tandem:.2f} at {ratio:g}x." if tandem else ".")
    )


def _audit_line(rules: list | None) -> str:
    if rules is None:
        return "audit: not run here (wisconsin audit RUN.json)"
    word = overall(rules)
    bad = [r.name for r in rules if not r.ok]
    if not bad:
        return f"audit: {word} ({len(rules)} rules)"
    verb = "fail" if word == "fail" else "do not pass"  # incomplete: nothing passes
    return f"audit: {word} ({len(bad)} of {len(rules)} rules {verb}: {summary(bad)})"


def verdict(run: DebitCreditRun, rows: list[dict], rules: list | None) -> Section:
    """The page's verdict block: throughput at the limit and its scaleup, per P, whether
    the database was scaled by the rules, and the audit."""
    table = Table(
        ["P", "tps by rule", "scaleup", "peak tps", "ideal", "ceiling"],
        [[c for i, c in enumerate(_scaleup_row(r)) if i in (0, 1, 2, 3, 6, 7)] for r in rows],
    )
    tables = [table] if rows else []
    return Section("Verdict", [_headline(run, rows), *tables, _status(run), _audit_line(rules)])


def page(run: DebitCreditRun, rows: list[dict], rules: list[Rule] | None) -> Page:
    """What the page adds: the verdict, every audit rule (None: not run), the figures."""
    from wisconsin.workloads.debitcredit.plot import figures

    return Page(
        verdict(run, rows, rules),
        None if rules is None else [(r.name, r.ok, r.detail) for r in rules],
        dict(figures(run)) if run.results else {},
    )
