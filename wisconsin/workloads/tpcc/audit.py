"""`wisconsin audit` of a TPC-C run file: each rule re-derives its figure from the run's
evidence (the per-second series, the histograms, the delivery times, the counts) and fails a
run just past its threshold."""

from __future__ import annotations

import os

from wisconsin.analysis.audit import Rule
from wisconsin.oltp.series import growth_of
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc import metrics as m
from wisconsin.workloads.tpcc.runfile import TpccRun, load

TPMC_SLACK = 1e-6  # the recorded series and the commits it counts agree exactly


def audit_file(path: str | os.PathLike) -> list[Rule]:
    return audit_run(load(path))


def audit_run(run: TpccRun) -> list[Rule]:
    return [
        rule_new_orders(run),
        rule_efficiency(run),
        rule_response_times(run),
        rule_deliveries(run),
        rule_mix(run),
        *rule_inputs(run),
        rule_consistency(run),
        rule_acknowledged(run),
        rule_checkpoint(run),
        rule_memory(run),
        rule_errors(run),
        m.rule_cpu(run),
    ]


def rule_new_orders(run: TpccRun) -> Rule:
    """The window's series covers the window, and the run's committed New-Orders are what
    the districts' D_NEXT_O_ID moved by (HammerDB's cross-check)."""
    r, cfg = run.result, run.config
    bad = []
    if len(r.no_series) != round(cfg.window_s):
        bad.append(f"{len(r.no_series)} seconds in the series, the window is {cfg.window_s:g} s")
    if r.new_orders_all != r.d_next_o_id_delta:
        bad.append(
            f"{r.new_orders_all:,} New-Orders committed but D_NEXT_O_ID moved by "
            f"{r.d_next_o_id_delta:,}"
        )
    if sum(r.no_series) > r.new_orders_all:
        bad.append(f"{sum(r.no_series):,} in the window > {r.new_orders_all:,} in the run")
    t = m.tpmc(r, cfg.window_s)
    return Rule(
        "new orders",
        not bad,
        "; ".join(bad)
        or f"{sum(r.no_series):,} committed in the {cfg.window_s:g} s window ({t:.1f} per "
        f"minute); {r.new_orders_all:,} in the run = the change of D_NEXT_O_ID",
        (("tpmc", t), ("d_next_o_id_delta", r.d_next_o_id_delta)),
    )


def rule_efficiency(run: TpccRun) -> Rule:
    """Efficiency above 100% is impossible with the specification's keying and think times:
    in spec mode, an interval wholly above 100% fails (a wrong warehouse count, a clock)."""
    e = m.efficiency(run)
    if run.config.mode != "spec":
        return Rule("efficiency", True, f"{e.median:.1%}: no-wait mode has no 12.86 ceiling")
    ok = e.low <= 1.0
    return Rule(
        "efficiency",
        ok,
        f"{e.median:.1%} [{e.low:.1%}-{e.high:.1%}] of 12.86 x {run.config.warehouses} "
        + ("" if ok else "is above 100% beyond its interval: impossible at spec keying and think"),
        (("efficiency", e.median), ("efficiency_low", e.low)),
    )


def rule_response_times(run: TpccRun) -> Rule:
    """Every type's 90th percentile (from its histogram) within the limit; each type ran."""
    bad, shown = [], []
    for k in run.result.kinds:
        lat = m.latency(k)
        shown.append(f"{k.kind} {lat.p90:.3f} s")
        if k.count == 0:
            bad.append(f"no {k.kind} completed in the window")
        elif lat.p90 > run.config.limit_s:
            bad.append(f"{k.kind} p90 {lat.p90:.3f} s > {run.config.limit_s:g} s")
    return Rule("p90 response times", not bad, "; ".join(bad) or ", ".join(shown))


def rule_deliveries(run: TpccRun) -> Rule:
    """Spec mode: at least 90% of the window's queued deliveries completed within 80 s."""
    if run.config.mode != "spec":
        return Rule("deferred deliveries", True, "no-wait mode runs Delivery inline")
    share, n = m.delivered_within(run.result)
    if run.result.kinds and m.kind(run.result, ins.DELIVERY).count and not n:
        return Rule("deferred deliveries", False, "deliveries were queued, none completed")
    ok = share >= m.DELIVERY_SHARE
    return Rule(
        "deferred deliveries",
        ok,
        f"{share:.1%} of {n} within {m.DELIVERY_LIMIT_S:g} s (at least "
        f"{m.DELIVERY_SHARE:.0%}); p90 {m.delivery_p90(run.result):.2f} s, "
        f"{run.result.deliveries_unfinished} unfinished",
        (("within_80s", share),),
    )


def rule_mix(run: TpccRun) -> Rule:
    """Each type's share of the window at least clause 5.2.3's minimum, but for chance at
    the window's count."""
    n = m.completed(run.result)
    bad, shown = [], []
    for name, least in m.MIX_MIN.items():
        share = m.kind(run.result, name).count / n if n else 0.0
        allowed = least - m.tolerance(least, n)
        shown.append(f"{name} {share:.1%}")
        if share < allowed:
            bad.append(f"{name} {share:.2%} < {least:.0%} (less than {allowed:.2%} at n={n})")
    return Rule("mix", not bad, "; ".join(bad) or ", ".join(shown) + f" of {n:,}")


def rule_inputs(run: TpccRun) -> list[Rule]:
    """Clause 9.2.2.5's ranges, each widened by chance at the run's count."""
    rules = []
    for name, (share, n) in m.shares(run.result).items():
        low, high, _ = m.SHARE_RANGES[name]
        if name == "remote order lines" and run.config.warehouses == 1:
            rules.append(Rule(f"input: {name}", share == 0, f"{share:.2%}: one warehouse"))
            continue
        lo, hi = low - m.tolerance(low, n), high + m.tolerance(high, n)
        ok = n > 0 and lo <= share <= hi
        rules.append(
            Rule(
                f"input: {name}",
                ok,
                f"{share:.2%} of {n:,} (range {low:.1%}-{high:.1%}; at this count "
                f"{max(0.0, lo):.2%}-{min(1.0, hi):.2%})",
                ((name, share),),
            )
        )
    no = m.kind(run.result, ins.NEW_ORDER).count
    mean = run.result.lines / no if no else 0.0
    slack = m.Z * m.LINES_SD / no**0.5 if no else 0.0
    lo, hi = m.LINES_RANGE[0] - slack, m.LINES_RANGE[1] + slack
    rules.append(
        Rule(
            "input: lines per order",
            no > 0 and lo <= mean <= hi,
            f"{mean:.2f} over {no:,} orders (range 9.5-10.5; at this count {lo:.2f}-{hi:.2f})",
            (("lines_per_order", mean),),
        )
    )
    return rules


def rule_consistency(run: TpccRun) -> Rule:
    r = run.result
    ok = not r.consistency_failed and r.independent_ok and len(r.consistency) == 12
    return Rule(
        "consistency",
        ok,
        (
            f"conditions 3.3.2.1-12 hold across the partitions, the independent check's "
            f"1-4 too; {r.recovered} decided remote half(s) redone"
        )
        if ok
        else f"failed: {list(r.consistency_failed)}; independent check "
        + ("ok" if r.independent_ok else "FAILED")
        + ("" if len(r.consistency) == 12 else f"; {len(r.consistency)} conditions checked"),
    )


def rule_checkpoint(run: TpccRun) -> Rule:
    """At least one checkpoint completed inside the window on every partition (DuckDB skips
    automatic ones while transactions are open: the WAL would grow for the whole run)."""
    cfg, cps = run.config, run.result.checkpoints
    inside = {c.partition for c in cps if not c.error and 0 <= c.at_s <= cfg.window_s}
    missing = sorted(set(range(cfg.partitions)) - inside)
    worst = max((c.seconds for c in cps), default=0.0)
    return Rule(
        "checkpoint in the window",
        not missing,
        f"partition(s) {missing} had no completed checkpoint in the window"
        if missing
        else f"every partition checkpointed in the window; the longest took {worst:.2f} s",
        (("checkpoint_s", worst),),
    )


def rule_acknowledged(run: TpccRun) -> Rule:
    """No acknowledged transaction lost: every receipt of the log found in the database by
    its keys, every decided remote half applied and none applied undecided; and the log
    holds at least the window's completions the terminals counted (each counted only after
    its C line; Delivery aside, whose spec-mode response is its queueing)."""
    a = run.result.receipts
    if a is None:
        return Rule("acknowledged transactions", False, "the run file has no receipts check")
    counted = sum(k.count for k in run.result.kinds if k.kind != ins.DELIVERY)
    bad = []
    if not a.ok:
        bad.append(a.line())
    if a.found + a.lost_count != a.with_keys or a.with_keys > a.acknowledged:
        bad.append(f"{a.found:,} found + {a.lost_count:,} lost != {a.with_keys:,} with keys "
                   f"(of {a.acknowledged:,} acknowledged)")  # fmt: skip
    if a.acknowledged < counted:
        bad.append(f"the log acknowledges {a.acknowledged:,}, fewer than the {counted:,} "
                   "the terminals counted in the window")  # fmt: skip
    return Rule(
        "acknowledged transactions",
        not bad,
        "; ".join(bad)
        or f"{a.found:,} of {a.with_keys:,} acknowledged with rows to find are in the "
        f"database ({a.acknowledged:,} acknowledged, >= {counted:,} counted in the window); "
        f"{a.in_doubt} in doubt; every decided remote half applied",
        (("acknowledged_lost", a.lost_count),),
    )


def rule_memory(run: TpccRun) -> Rule:
    """Each engine's undo (memory tagged TRANSACTION) stays bounded -- its last third of
    samples grew at most 10% (or 16 MB) over its first, the core's rule -- and nothing
    spilled to temporary files. The whole engine's memory is the buffer pool filling with
    the database's pages as terminals touch them: shown, not judged."""
    bad = []
    for p, series in enumerate(run.result.txn_memory_bytes):
        if len(series) >= 3:
            grew, allowed = growth_of(series)
            if grew > allowed:
                bad.append(f"partition {p}'s undo grew {grew / 2**20:.0f} MB > "
                           f"{allowed / 2**20:.0f} MB")  # fmt: skip
    spilled = max((max(s, default=0) for s in run.result.temp_bytes), default=0)
    if spilled:
        bad.append(f"{spilled:,} B spilled to temporary files")
    wal = max((max(s, default=0) for s in run.result.wal_bytes), default=0)
    mem = max((max(s, default=0) for s in run.result.memory_bytes), default=0)
    return Rule(
        "engine memory bounded",
        not bad,
        "; ".join(bad)
        or f"undo bounded, nothing spilled; engine at most {mem / 2**20:.0f} MB, WAL at most "
        f"{wal / 2**20:.1f} MB",
        (("spilled_bytes", spilled),),
    )


def rule_errors(run: TpccRun) -> Rule:
    failed = sum(k.failed for k in run.result.kinds)
    n = m.completed(run.result)
    ok = failed <= 0.01 * max(n, 1) and not (run.result.first_error and not n)
    return Rule(
        "failed transactions",
        ok,
        f"{failed} failed of {n + failed:,} (at most 1%)"
        + (f"; first error: {run.result.first_error}" if run.result.first_error else ""),
    )
