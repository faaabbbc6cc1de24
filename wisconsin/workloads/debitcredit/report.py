"""The DebitCredit report: OLTP scaleup beside Tandem 1987, response-time curves, the audit."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence

from wisconsin import WisconsinError
from wisconsin.workloads.debitcredit import metrics
from wisconsin.workloads.debitcredit.runfile import DebitCreditRun, load, missing

# Tandem 1987 (TR 88.2), NonStop SQL, tps at 90% within 2 s: 8, 16, 32 VLX processors.
TANDEM_TPS = {8: 58, 16: 106, 32: 208}


def tandem_scaleup() -> dict[int, float]:
    """Tandem's OLTP scaleup relative to its smallest (8-processor) system, by size factor."""
    return {n // 8: tps / TANDEM_TPS[8] for n, tps in TANDEM_TPS.items()}


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


def _table(headers: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        return out + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))
    return [line, "-" * len(line)] + [
        "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows
    ]


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


def render(run: DebitCreditRun, fmt: str = "text") -> str:
    rows = summary_rows(run)
    cores = run.environment.get("usable_cores") or "?"
    if fmt == "json":
        return (
            json.dumps(
                [{k: metrics.as_json(v) for k, v in row.items()} for row in rows],
                indent=1,
            )
            + "\n"
        )
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(
            [
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
        )
        for r in rows:
            w.writerow(
                [
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
            )
        return buf.getvalue()
    md = fmt == "markdown"
    cfg = run.config
    rule = f"{cfg.rule_share:.0%} within {cfg.rule_limit_s:g} s"
    env = run.environment
    out = [
        ("# " if md else "") + f"DebitCredit OLTP scaleup, run {run.started_utc}",
        "",
        *(f"incomplete: {gap}" for gap in missing(run)),
        metrics.scale_label(run),
        "",
        f"Machine: {env.get('cpu_model', '?')}, {env.get('usable_cores', '?')} usable cores; "
        f"DuckDB {env.get('duckdb', '?')}. Rule: {rule}. Windows: closed {cfg.closed_s:g} s, open "
        f"{cfg.step_s:g} s; "
        f"{cfg.repeats} repeats; closed: {cfg.streams} streams per partition; open: "
        f"{cfg.servers} servers per partition at {', '.join(f'{f:g}' for f in cfg.load_fractions)}"
        " x the closed peak.",
        f"Durability: {cfg.durability}.",
        "Processors: " + _pinning(run) + ".",
        "",
        ("## " if md else "")
        + "OLTP scaleup (one repeat: delivered tps [95% interval of its 5-s batch means]; "
        "several: median [min-max] over repeats; scaleup pairs the extremes)",
        "",
    ]
    headers = [
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
    body = []
    for r in rows:
        label = f"{r['P']}{' (oversubscribed)' if r['oversubscribed'] else ''}"
        body.append(
            [
                label,
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
        )
    out += _table(headers, body, md)
    out += [
        "",
        f"ideal = P/P0; ceiling = min(P, {cores})/min(P0, {cores}): the best possible with "
        f"{cores} usable cores. Higher is better.",
    ]
    t = tandem_scaleup()
    out += [
        "",
        "tps = transactions committed per second in the window (delivered, never offered); "
        "only steady steps set tps by rule and peak tps (steady: delivered tps within "
        f"{metrics.DRIFT_LIMIT:.0%} first to last third, or within its noise up to "
        f"{metrics.DRIFT_CAP:.0%}; engine memory flat, no spill)."
        + (
            " - : no steady step sets it (none met the rule, or steadiness could not be judged:"
            f" windows under {metrics.MIN_JUDGED_S} s, or no per-second series recorded)."
            if any(r["tps_rule"].n == 0 or r["tps_peak"].n == 0 for r in rows)
            else ""
        ),
    ]
    out += [
        "",
        "Tandem 1987 (NonStop SQL, 90% within 2 s): 8, 16, 32 VLX = "
        + ", ".join(f"{TANDEM_TPS[n]} tps" for n in sorted(TANDEM_TPS))
        + "; scaleup "
        + ", ".join(f"{v:.2f} at {k}x" for k, v in sorted(t.items()))
        + " (0.9x linear: distributed transactions cost extra messages).",
        "",
        ("## " if md else "") + "Scaled by the rules (100,000 accounts per tps)?",
        "",
    ]
    out += [f"- P={r['P']}: {r['verdict']}" for r in rows]
    out += ["", ("## " if md else "") + "Response-time curves (open arrivals)", ""]
    for res in run.results:
        out.append(f"P = {res.partitions}{' (oversubscribed)' if res.oversubscribed else ''}:")
        out.append("")
        body = []
        for s in sorted(res.steps, key=lambda s: (s.mode, s.offered_tps, s.repeat)):
            passes = (
                metrics.step_passes(s, cfg.rule_share, cfg.rule_limit_s)
                if s.mode == "open"
                else None
            )
            body.append(
                [
                    s.mode,
                    f"{s.offered_tps:.1f}" if s.mode == "open" else f"{s.threads} streams",
                    f"{s.throughput_tps:.1f}",
                    *(
                        f"{getattr(s.latency, q) * 1e3:.0f}"
                        for q in ("p50", "p90", "p95", "p99", "max")
                    ),
                    f"{s.latency.within_1s:.1%}",
                    f"{s.retries}",
                    f"{s.failed + s.unfinished}",
                    "" if passes is None else ("yes" if passes else "no"),
                    _steady_cell(metrics.steadiness(s)),
                ]
            )
        out += _table(
            [
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
            ],
            body,
            md,
        )
        errors = sorted({s.first_error for s in res.steps if s.first_error})
        if errors:
            out += ["", "Unexpected errors (transactions counted as failed): " + "; ".join(errors)]
        a = res.audit
        out += [
            "",
            f"Audit: {'OK' if a.ok else 'VOID'}; sums account {a.account_sum}, teller "
            f"{a.teller_sum}, branch {a.branch_sum}, history {a.history_sum}; history rows "
            f"{a.history_rows} = committed {a.acknowledged + a.in_doubt_committed}; "
            f"distributed {a.distributed_rows}; remote halves redone {a.recovered}"
            + (f"; problems: {'; '.join(a.problems)}" if a.problems else ""),
            "Independent check (duckdb only): " + (a.independent[-1] if a.independent else "-"),
            "",
        ]
    if run.notes:
        out += [("## " if md else "") + "Notes", ""] + [f"- {n}" for n in run.notes] + [""]
    return "\n".join(out)


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text") -> str:
    if fmt not in ("text", "markdown", "csv", "json"):
        raise WisconsinError(f"unknown report format {fmt!r}")
    return "\n".join(render(load(p), fmt) for p in paths)
