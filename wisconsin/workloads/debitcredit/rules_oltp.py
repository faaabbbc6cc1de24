"""DebitCredit's OLTP rules on the run file, per partition count: re-derived from its
per-second series and counts, never from a verdict it records. Each is registered once,
under its name (`P=<P> <title>`), by @per_partition; audit.audit_run runs them beside the
balance invariants."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from wisconsin.analysis.audit import Rule, checked, summary
from wisconsin.oltp import cpu
from wisconsin.workloads.debitcredit import metrics

# (title, rule(run, result) -> Rule) in the order the audit reports them
OLTP_RULES: list[tuple[str, Callable]] = []


def per_partition(title: str):
    """Register a rule judged at each partition count, named `P=<P> <title>`: the rule gets
    its name as its third argument."""

    def register(fn):
        @functools.wraps(fn)
        def rule(run, result) -> Rule:
            return fn(run, result, f"P={result.partitions} {title}")

        OLTP_RULES.append((title, rule))
        return rule

    return register


def _where(s) -> str:
    return f"{s.mode} r{s.repeat}" + (f" {s.offered_tps:.1f}" if s.mode == "open" else "")


def _steps_named(result, steps) -> str:
    return ", ".join(f"{_where(s)}: {metrics.steadiness(s).why}" for s in steps)


def _retry_problems(run, attempts: dict) -> list[str]:
    """A closed window is measured again only after an unsteady one, at most
    Config.closed_retries times: no picking the best of several."""
    allowed = 1 + run.config.closed_retries
    out = []
    for rep, steps in attempts.items():
        if len(steps) > allowed:
            out.append(f"closed r{rep}: measured {len(steps)} times, the run allows {allowed}")
        for before in steps[:-1]:
            if metrics.steadiness(before).steady is not False:
                out.append(f"closed r{rep}: measured again after a window not judged unsteady")
    return out


@per_partition("steady")
def rule_steady(run, result, name: str) -> Rule:
    """Most closed windows (the peak's repeats, each its last attempt) are steady; a window
    measured again followed an unsteady one; the unsteady steps are named."""
    verdicts = [(s, metrics.steadiness(s)) for s in result.steps]
    attempts = metrics.closed_attempts(result)
    steady = sum(bool(v.steady) for _, v in verdicts)
    if not attempts:
        return Rule(name, False, "no closed step measured the peak")
    retried = _retry_problems(run, attempts)
    if retried:
        return Rule(
            name, False, "closed steps measured again against the rule: " + summary(retried)
        )
    closed_bad = [s[-1] for s in attempts.values() if not metrics.steadiness(s[-1]).steady]
    if 2 * len(closed_bad) > len(attempts):  # the peak would rest on a minority of its repeats
        again = sum(len(s) - 1 for s in attempts.values())
        return Rule(
            name,
            False,
            f"{len(closed_bad)} of {len(attempts)} closed (peak) steps not steady"
            + (f" ({again} measured again)" if again else "")
            + ": "
            + _steps_named(result, closed_bad),
        )
    other = [s for s, v in verdicts if not v.steady]
    return Rule(
        name,
        True,
        f"{steady} of {len(verdicts)} steps steady (delivered tps within "
        f"{metrics.DRIFT_LIMIT:.0%} first to last third, or its noise up to "
        f"{metrics.DRIFT_CAP:.0%}; memory flat, no spill)"
        + (f"; unsteady, kept off the headline: {_steps_named(result, other)}" if other else ""),
    )


@per_partition("delivered, not offered")
def rule_delivered(run, result, name: str) -> Rule:
    """Throughput is what committed in the window, and the headline was delivered."""
    bad = []
    for s in result.steps:
        where = _where(s)
        if s.duration_s <= 0 or abs(s.throughput_tps - s.in_window / s.duration_s) > 1e-6:
            bad.append(
                f"{where}: tps {s.throughput_tps:.1f} is not {s.in_window} committed "
                f"in {s.duration_s:g} s"
            )
        if s.tps_series:
            widths = [min(1.0, s.duration_s - i) for i in range(len(s.tps_series))]
            counted = sum(t * w for t, w in zip(s.tps_series, widths, strict=True))
            if abs(counted - s.in_window) > 0.5:
                bad.append(
                    f"{where}: the per-second series add up to {counted:.0f}, "
                    f"not {s.in_window} committed"
                )
    cfg = run.config
    short = 1 - metrics.DELIVERY_SHORTFALL
    for s in metrics.headline_steps(result, cfg.rule_share, cfg.rule_limit_s).values():
        offered = s.arrivals / s.duration_s if s.duration_s > 0 else 0.0
        if not metrics.steadiness(s).steady:
            bad.append(f"{_where(s)}: sets the rule's tps but is not steady")
        if s.mode == "open" and s.throughput_tps < short * offered:
            bad.append(
                f"{_where(s)}: sets the rule's tps with {s.throughput_tps:.1f} delivered "
                f"of {offered:.1f} offered (< {short:.0%})"
            )
    if bad:
        return Rule(name, False, summary(bad))
    rule = metrics.rule_tps(result, cfg.rule_share, cfg.rule_limit_s)
    return Rule(
        name,
        True,
        f"every step's tps is its commits in the window; tps by the rule {rule.fmt()} "
        + (
            "delivered by steady steps" if rule.n else "(no steady step met the rule: none printed)"
        ),
    )


@per_partition("engine memory and spill")
def rule_memory(run, result, name: str) -> Rule:
    """No partition's engine memory kept growing in a step, and nothing spilled."""
    unrecorded = [s for s in result.steps if not s.memory_bytes]
    if unrecorded:
        return Rule(
            name,
            False,
            f"engine memory not recorded in {len(unrecorded)} of {len(result.steps)} steps",
        )
    # one sampled series per partition, none empty, the three of a step sampled together
    shape = [[len(x) for x in s.memory_bytes] for s in result.steps]
    bad = [
        f"{_where(s)}: memory series of lengths {n}, not one non-empty per partition like "
        "its transaction-memory and temp-file series"
        for s, n in zip(result.steps, shape, strict=True)
        if len(n) != result.partitions
        or 0 in n
        or any(k and [len(x) for x in k] != n for k in (s.txn_memory_bytes, s.temp_bytes))
    ]
    if bad:
        return Rule(name, False, summary(bad))
    most, top = 0, 0
    for s in result.steps:
        v = metrics.steadiness(s)
        where = _where(s)
        if v.memory_growth > v.memory_allowed:
            bad.append(f"{where}: memory grew {v.memory_growth / 2**20:.0f} MB")
        if v.spilled > 0:
            bad.append(f"{where}: spilled {v.spilled / 2**20:.1f} MB to temp files")
        most = max(most, v.memory_growth)
        top = max([top, *(max(m, default=0) for m in s.memory_bytes)])
    if bad:
        return Rule(name, False, summary(bad))
    return Rule(
        name,
        True,
        f"engine memory at most {top / 2**20:.0f} MB, growth within a step at most "
        f"{most / 2**20:+.0f} MB; no temp files",
    )


REMOTE_SIGMAS = 4.0  # the distributed share may differ from its expectation by this much


@per_partition("remote share")
def rule_remote(run, result, name: str) -> Rule:
    """The tables hold the distributed share the sizing implies: each transaction picks
    another branch with probability 15%, remote when that branch lives on another partition
    (metrics.expected_remote); history's share is binomial about it, within 4 sigma. A driver
    that kept its transactions local, or a run file whose sizing is not its tables', fails."""
    expected = metrics.expected_remote(run.config.sizing, result.partitions)
    rows, distributed = result.audit.history_rows, result.audit.distributed_rows
    if rows <= 0:
        return Rule(name, False, "no transaction in history: the share cannot be judged")
    observed = distributed / rows
    allowed = REMOTE_SIGMAS * math.sqrt(expected * (1 - expected) / rows)
    steps = sum(s.distributed for s in result.steps)
    detail = (
        f"{observed:.2%} of {rows:,} history rows distributed, {expected:.2%} expected "
        f"(+-{allowed:.2%}, {REMOTE_SIGMAS:g} sigma)"
    )
    if steps > distributed:
        return Rule(name, False, f"the steps count {steps:,} distributed, history {distributed:,}")
    return Rule(name, abs(observed - expected) <= allowed, detail)


# Bytes on disk an account row takes at least with the varying filler (measured 55 bytes:
# 1,000,000 accounts in 55 MB); a constant filler compressed to about 10.
MIN_DISK_BYTES_PER_ACCOUNT = 40


@per_partition("CPU split")
def rule_cpu(run, result, name: str) -> Rule:
    """No partition charged more CPU to its transactions and remote halves than its process
    spent; the recorded CPU per transaction and per remote half are what the steps give;
    each step's split counts its commits and sums to its cpu_s."""
    bad = []
    for i, s in enumerate(result.steps):
        if not s.cpu:
            continue
        counted = sum(k.local + k.distributed for p in s.cpu for k in p.kinds)
        if counted != s.committed:
            bad.append(
                f"step {i + 1}: the CPU split counts {counted:,} commits, the step {s.committed:,}"
            )
        total = sum(p.total_s for p in s.cpu)
        if not math.isclose(total, s.cpu_s, rel_tol=1e-9, abs_tol=1e-9):
            bad.append(
                f"step {i + 1}: the partitions' CPU sums to {total:.6f} s, cpu_s {s.cpu_s:.6f}"
            )
    return cpu.rule(name, [s.cpu for s in result.steps], result.remote_cpu, bad)


@per_partition("scale label")
def rule_scale(run, result, name: str) -> Rule:
    """The scale label holds: the recorded database is the one its sizing makes (branches,
    tellers, accounts re-derived), and its bytes on disk are those of that many rows."""
    s, P = run.config.sizing, result.partitions
    want = (s.branches(P), s.tellers(P), s.accounts(P))
    have = (result.branches, result.tellers, result.accounts)
    if have != want:
        return Rule(
            name,
            False,
            f"recorded branches/tellers/accounts {have} are not the sizing's {want}: the label "
            "would rest on a database that was not built",
        )
    if result.db_bytes is not None and result.db_bytes < MIN_DISK_BYTES_PER_ACCOUNT * want[2]:
        return Rule(
            name,
            False,
            f"{result.db_bytes:,} bytes on disk for {want[2]:,} accounts: under "
            f"{MIN_DISK_BYTES_PER_ACCOUNT} bytes an account, not rows of the standard's size",
        )
    scaled, verdict = metrics.scaled_verdict(run, result)
    return Rule(name, True, verdict)


@per_partition("pinned")
def rule_pinned(run, result, name: str) -> Rule:
    """Processors as Tandem counted them: at P up to the machine's usable cores (re-derived
    from the run's environment) each partition ran on a core of its own; beyond them the
    point is oversubscribed and must say so."""
    parts, cores = result.partitions, run.environment.get("usable_cores")
    if getattr(result, "cluster", None) is not None:
        return _on_workers(result, name)
    if not isinstance(cores, int) or cores < 1:
        return Rule(name, False, "usable cores not recorded: pinning cannot be judged")
    if parts > cores:
        if not result.oversubscribed or result.pinned_cores:
            return Rule(name, False, f"P={parts} > {cores} cores must be oversubscribed, unpinned")
        return Rule(name, True, f"P={parts} > {cores} cores: oversubscribed, not pinned")
    pins = result.pinned_cores
    if len(pins) != parts or len(set(pins)) != parts:
        return Rule(
            name,
            False,
            f"P={parts} <= {cores} cores but partitions pinned to {list(pins) or 'none'}: "
            "the scaleup would not measure added processors",
        )
    return Rule(name, True, f"partition p on core {list(pins)} (one core each)")


def _on_workers(result, name: str) -> Rule:
    """On a cluster a processor is a worker: each partition on a worker of its own."""
    hosts = result.cluster.hosts
    workers = [h.worker for h in hosts]
    if len(workers) != result.partitions or len(set(workers)) != result.partitions:
        return Rule(name, False, f"P={result.partitions} on workers {workers}: not one each")
    where = ", ".join(f"{h.part} on {h.host}" for h in hosts)
    share = "; the hosts share one machine's cores" if result.oversubscribed else ""
    return Rule(name, True, f"one worker each, not pinned to cores: partition {where}{share}")


def oltp_rules(run) -> list[Rule]:
    """Every registered rule at every partition count; a rule whose evidence is malformed
    fails in one line, under its name."""
    out = []
    for result in run.results:
        for title, rule in OLTP_RULES:
            name = f"P={result.partitions} {title}"
            out.append(checked(lambda _run, rule=rule, res=result: rule(_run, res), run, name))
    return out
