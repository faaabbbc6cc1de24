"""Compare two DebitCredit runs: per P, throughput B / A (peak and by the rule), with intervals.

Runs of different sizing or rule are refused unless forced: their tps do not measure the same
thing. The interval of a ratio pairs extremes (min B / max A to max B / min A).
"""

from __future__ import annotations

import json
import os

from wisconsin import WisconsinError
from wisconsin.workloads.debitcredit import interconnect, metrics
from wisconsin.workloads.debitcredit.runfile import DebitCreditRun, load


def _rows(a: DebitCreditRun, b: DebitCreditRun) -> list[dict]:
    rows = []
    for ra in a.results:
        rb = b.result(ra.partitions)
        if rb is None:
            continue
        rule = [metrics.rule_tps(r, a.config.rule_share, a.config.rule_limit_s) for r in (ra, rb)]
        peak = [metrics.peak_tps(r) for r in (ra, rb)]
        rows.append(
            {
                "P": ra.partitions,
                "peak_a": peak[0],
                "peak_b": peak[1],
                "peak_ratio": metrics.scaleup(*peak),
                "rule_a": rule[0],
                "rule_b": rule[1],
                "rule_ratio": metrics.scaleup(*rule),
                "audits_ok": ra.audit.ok and rb.audit.ok,
            }
        )
    return rows


def compare_runs(
    a: DebitCreditRun, b: DebitCreditRun, force: bool = False, fmt: str = "text"
) -> str:
    same = (a.config.sizing, a.config.rule_share, a.config.rule_limit_s) == (
        b.config.sizing,
        b.config.rule_share,
        b.config.rule_limit_s,
    )
    if not same and not force:
        raise WisconsinError(
            "the runs differ in database size or tps rule; use --force to compare anyway"
        )
    rows = _rows(a, b)
    if not rows:
        raise WisconsinError("the runs have no partition count in common")
    if fmt == "json":
        return (
            json.dumps(
                [{k: metrics.as_json(v) for k, v in r.items()} for r in rows],
                indent=1,
            )
            + "\n"
        )
    differs = interconnect.differences(a, b)
    out = [
        f"DebitCredit: B ({b.started_utc}) / A ({a.started_utc}); > 1 means B is faster",
        *(["what else differs, A -> B:", *(f"  {d}" for d in differs)] if differs else []),
        *([interconnect.verdict(rows)] if differs else []),
        "",
        f"{'P':>3}  {'peak A':>20}  {'peak B':>20}  {'B/A':>18}  {'rule A':>20}  {'rule B':>20}  {'B/A':>18}  audits",
    ]
    for r in rows:
        out.append(
            f"{r['P']:>3}  {r['peak_a'].fmt():>20}  {r['peak_b'].fmt():>20}  "
            f"{r['peak_ratio'].fmt(2):>18}  {r['rule_a'].fmt():>20}  {r['rule_b'].fmt():>20}  "
            f"{r['rule_ratio'].fmt(2):>18}  {'OK' if r['audits_ok'] else 'VOID'}"
        )
    if differs:
        out += ["", *interconnect.per_core_lines(a, b, [r["P"] for r in rows])]
    if not same:
        out += ["", "forced: the runs differ in database size or tps rule"]
    return "\n".join(out) + "\n"


def compare_files(
    path_a: str | os.PathLike, path_b: str | os.PathLike, force: bool = False, fmt: str = "text"
) -> str:
    if fmt not in ("text", "markdown", "json"):
        raise WisconsinError(f"unknown compare format {fmt!r}")
    return compare_runs(load(path_a), load(path_b), force=force, fmt=fmt)
