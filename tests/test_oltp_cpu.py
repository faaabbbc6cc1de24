"""CPU of an OLTP step split by what it served (oltp.cpu): local transactions, the home side
of distributed ones, remote halves; the run files' records, the report's line and the audit
rule that re-derives them, failing a run just past each threshold."""

from __future__ import annotations

import dataclasses
import threading
import time
from types import SimpleNamespace

import pytest

from wisconsin.oltp import cpu, twophase
from wisconsin.oltp.runfile import KindCpu, PartitionCpu
from wisconsin.workloads.debitcredit import rules_oltp, schema
from wisconsin.workloads.debitcredit.coordinator import PartitionServers
from wisconsin.workloads.debitcredit.driver import Load

TINY = schema.Sizing(branches_per_partition=2, tellers_per_branch=3, accounts_per_branch=50)


def part(total=1.0, local_s=0.5, local=100, home_s=0.08, dist=20, sent=20, hs=0.06, h=20):
    return PartitionCpu(total, (KindCpu("transaction", local_s, local, home_s, dist, sent),), hs, h)


def test_extra_cpu_per_remote_half_is_what_distributing_adds():
    # local 5 ms each; a distributed one's home side 4 ms; its remote half 3 ms:
    # 4 + 3 - 5 = 2 ms more than the same transaction run locally
    p = part()
    assert cpu.local_per(p) == pytest.approx(0.005)
    assert cpu.extra_per_half(p) == pytest.approx(0.002)
    assert cpu.attributed(p) == pytest.approx(0.64)
    # a New-Order deciding three halves divides its home extra among them
    three = part(home_s=0.16, sent=60, hs=0.18, h=60)
    assert cpu.extra_per_half(three) == pytest.approx((0.16 - 0.1) / 60 + 0.003)
    # a type distributed but never local has nothing to take its extra from
    assert cpu.extra_per_half(part(local=0, local_s=0.0)) is None
    assert cpu.extra_per_half(part(dist=0, home_s=0.0, sent=0, hs=0.0, h=0)) is None


def test_summary_pools_and_spreads_over_partition_steps():
    steps = [(part(), part(home_s=0.1, hs=0.08)), (part(local=5, local_s=0.05),)]
    s = cpu.summary(steps)
    assert s.halves == 60 and s.total_s == pytest.approx(3.0)
    assert s.local_s == pytest.approx(1.05 / 205)
    assert s.local_spread.n == 2  # the partition-step of 5 local transactions says nothing
    assert s.extra_spread.n == 3 and s.extra_spread.low < s.extra_spread.high
    assert cpu.summary([]) is None and cpu.summary([()]) is None
    assert not cpu.problems(steps, s)


def test_charged_more_than_the_process_spent_fails_just_past_the_allowance():
    total = 1.0
    at = cpu.allowed(total) - 0.5 - 0.08  # the halves' CPU that reaches the allowance
    ok = [(part(total=total, hs=at),)]
    assert not cpu.problems(ok, cpu.summary(ok))
    bad = [(part(total=total, hs=at + 1e-4),)]
    (why,) = cpu.problems(bad, cpu.summary(bad))
    assert why.startswith("step 1 partition 0: ") and "its process spent 1000.0 ms" in why


def test_a_recorded_summary_its_steps_do_not_give_fails():
    steps = [(part(), part())]
    good = cpu.summary(steps)
    assert not cpu.problems(steps, good)
    forged = dataclasses.replace(good, extra_s=good.extra_s * (1 + 1e-6))
    (why,) = cpu.problems(steps, forged)
    assert "extra_s not what its steps give" in why
    assert cpu.problems(steps, None) == ["the CPU summary is missing"]
    assert cpu.problems([], good) == ["the CPU summary is recorded without steps"]


def test_extra_cpu_times_the_halves_past_the_total_fails():
    steps = [(part(),)]
    good = cpu.summary(steps)
    limit = cpu.allowed(good.total_s) / good.halves  # the most a half may cost
    just = dataclasses.replace(good, extra_s=limit * 0.999)
    past = dataclasses.replace(good, extra_s=limit * 1.001)
    assert not any("past the processes'" in w for w in cpu.problems(steps, just))
    assert any("past the processes'" in w for w in cpu.problems(steps, past))


def _result(steps, recorded, partitions=2):
    return SimpleNamespace(partitions=partitions, steps=steps, remote_cpu=recorded)


def _step(parts, committed=None, cpu_s=None):
    n = sum(k.local + k.distributed for p in parts for k in p.kinds)
    total = sum(p.total_s for p in parts)
    return SimpleNamespace(
        cpu=parts, committed=n if committed is None else committed,
        cpu_s=total if cpu_s is None else cpu_s,
    )  # fmt: skip


def test_debitcredit_rule_counts_commits_and_sums_to_cpu_s():
    parts = (part(), part())
    summary = cpu.summary([parts])
    rule = rules_oltp.rule_cpu(None, _result([_step(parts)], summary))
    assert (
        rule.ok
        and rule.name == "P=2 CPU split"
        and "extra CPU per remote half 2.000 ms" in rule.detail
    )
    off = rules_oltp.rule_cpu(None, _result([_step(parts, committed=239)], summary))
    assert not off.ok and "counts 240 commits, the step 239" in off.detail
    cpu_s = rules_oltp.rule_cpu(None, _result([_step(parts, cpu_s=2.001)], summary))
    assert not cpu_s.ok and "cpu_s 2.001000" in cpu_s.detail
    old = rules_oltp.rule_cpu(None, _result([SimpleNamespace(cpu=())], None))
    assert old.ok and "not recorded" in old.detail


def test_tpcc_rule_on_a_forged_run():
    from test_tpcc_audit import forged

    from wisconsin.workloads.tpcc import audit, metrics

    run = forged()
    assert metrics.rule_cpu(run).ok  # before the split: not recorded, passes
    total = run.result.cpu_s or (1.0, 1.0)
    parts = tuple(part(total=t, local_s=t / 4, home_s=t / 20, hs=t / 20) for t in total)
    good = dataclasses.replace(run, result=dataclasses.replace(
        run.result, cpu=parts, remote_cpu=cpu.summary([parts])))  # fmt: skip
    assert {r.name: r.ok for r in audit.audit_run(good)}["CPU split"]
    assert "CPU per local transaction" in metrics.remote_line(good)
    over = tuple(dataclasses.replace(p, halves_s=cpu.allowed(p.total_s)) for p in parts)
    bad = dataclasses.replace(run, result=dataclasses.replace(
        run.result, cpu=over, remote_cpu=cpu.summary([over])))  # fmt: skip
    assert not metrics.rule_cpu(bad).ok


def test_the_account_charges_threads_and_steps_take_differences():
    account = cpu.Account()
    node = SimpleNamespace(cpu=account)
    before = account.snapshot()

    def work(distributed: bool) -> None:
        twophase._sent.n = 5  # a failed transaction's halves: not this one's
        since = cpu.begin()
        t_end = time.thread_time() + 0.02
        while time.thread_time() < t_end:  # 20 ms of this thread's CPU
            pass
        if distributed:
            twophase._sent.n = 1
        cpu.charged(node, "x", since, distributed)

    threads = [threading.Thread(target=work, args=(i % 2 == 1,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    account.half(0.001, committed=True)
    account.half(0.002, committed=False)  # a prepare refused: its CPU, no half
    rec = cpu.record(cpu.step_record(before, account.snapshot(), 1.0))
    (k,) = rec.kinds
    assert (k.local, k.distributed, k.sent, rec.halves) == (2, 2, 2, 1)
    assert 0.039 < k.local_s < 0.2 and 0.039 < k.home_s < 0.2  # thread CPU, not wall
    assert rec.halves_s == pytest.approx(0.003)


def test_a_real_step_charges_within_what_the_processes_spent(tmp_path):
    """Two partition servers, half the transactions remote: the split counts every commit,
    charges most of the processes' CPU and never more, and sees the remote halves."""
    schema.build(tmp_path / "d", 2, TINY)
    with PartitionServers(tmp_path / "d", 2, TINY, tmp_path / "log") as srv:
        tallies = srv.run(Load("closed", 1.5, streams=2, remote_share=0.5))
    parts = [cpu.record(t["cpu"]) for t in tallies]
    committed = sum(t["committed"] for t in tallies)
    assert sum(k.local + k.distributed for p in parts for k in p.kinds) == committed > 0
    assert sum(k.distributed for p in parts for k in p.kinds) == sum(
        t["distributed"] for t in tallies
    )
    for p, t in zip(parts, tallies, strict=True):
        assert p.total_s == t["cpu_s"]
        assert 0.3 * p.total_s < cpu.attributed(p) <= cpu.allowed(p.total_s)
    assert sum(p.halves for p in parts) > 0
    s = cpu.summary([tuple(parts)])
    assert s.local_s > 0 and s.extra_s is not None and not cpu.problems([tuple(parts)], s)
