"""Durability: kill -9 a partition process and the coordinator mid-run, recover, audit."""

from __future__ import annotations

from wisconsin.workloads.debitcredit.crash import crash_test


def test_kill_partition_and_coordinator_mid_run(tmp_path):
    r = crash_test(tmp_path, partitions=2, min_acked=30)
    a = r.audit
    assert r.acknowledged_before_kill >= 30
    # every transaction the driver saw commit is there, on every partition it touched
    assert a.acknowledged >= r.acknowledged_before_kill and a.acknowledged_missing == 0
    assert a.half_committed == 0  # after recovery, none is on one partition only
    assert a.aborted_present == 0 and a.unknown_present == 0  # none other is
    assert a.history_rows == a.acknowledged + a.in_doubt_committed
    assert a.ok, a.problems
    assert r.independent_ok, r.independent
