"""DebitCredit: build, the transaction and its distributed commit, recovery, audit, metrics."""

from __future__ import annotations

import duckdb
import pytest

from wisconsin.oltp import histogram
from wisconsin.workloads.debitcredit import audit, metrics, schema, transaction
from wisconsin.workloads.debitcredit.check import independent_check
from wisconsin.workloads.debitcredit.runfile import Step

TINY = schema.Sizing(branches_per_partition=2, tellers_per_branch=3, accounts_per_branch=50)


@pytest.fixture
def db2(tmp_path):
    return schema.build(tmp_path, 2, TINY)


def test_build_sizes_ownership_and_zero_start(db2):
    for part, path in enumerate(db2):
        con = duckdb.connect(str(path), read_only=True)
        counts = con.execute(
            "SELECT (SELECT count(*) FROM branch), (SELECT count(*) FROM teller), "
            "(SELECT count(*) FROM account), (SELECT count(*) FROM history), "
            "(SELECT sum(abalance) + sum(abalance) FROM account)"
        ).fetchone()
        assert counts == (2, 6, 100, 0, 0)
        bids = {b for (b,) in con.execute("SELECT DISTINCT bid FROM account").fetchall()}
        assert {TINY.partition_of_branch(b) for b in bids} == {part}
        (width,) = con.execute("SELECT max(length(filler)) FROM account").fetchone()
        assert 4 + 4 + 8 + width == 100  # the standard's 100-byte record
        con.close()
        assert schema.read_sizing(path) == (part, 2, TINY)
    assert TINY.rated_tps_per_partition == pytest.approx(0.001)
    assert not TINY.by_the_rules and schema.Sizing().by_the_rules


def _open(paths):
    return [schema.connect(p) for p in paths]


def test_local_transaction_and_conflict(db2):
    (c0, c1) = _open(db2)
    try:
        assert transaction.run_local(c0, 1, 7, 0, 0, 500) == 500
        assert transaction.run_local(c0, 2, 7, 1, 0, -200) == 300
        a, b = c0.cursor(), c0.cursor()
        a.execute("BEGIN")
        a.execute(transaction.UPDATE_BRANCH, [1, 0])
        with pytest.raises(duckdb.Error) as err:  # the hot branch row: optimistic conflict
            transaction.run_local(b, 3, 8, 0, 0, 5)
        assert transaction.is_conflict(err.value)
        a.execute("ROLLBACK")
    finally:
        c0.close(), c1.close()
    result = audit.check(db2)
    assert result.ok and result.history_rows == 2 and result.account_sum == 300


def test_distributed_commit_abort_and_redo_after_lost_remote(db2):
    """The home commit is the decision: before it nothing stays; after it, recover redoes."""
    remote_aid = 2 * 50 + 3  # branch 2, partition 1
    (c0, c1) = _open(db2)
    try:
        # committed: prepare remote, home half, decide, commit remote
        transaction.prepare_remote(c1, 10, 0, remote_aid, 40)
        transaction.home_half(c0, 10, remote_aid, 0, 0, 40, 1)
        c0.execute("COMMIT")
        c1.execute("COMMIT")
        # aborted before the decision: both roll back
        transaction.prepare_remote(c1, 11, 0, remote_aid, 1000)
        transaction.home_half(c0, 11, remote_aid, 0, 0, 1000, 1)
        c0.execute("ROLLBACK")
        c1.execute("ROLLBACK")
        # decided, then the remote partition "dies" with its half open
        transaction.prepare_remote(c1, 12, 0, remote_aid, 7)
        transaction.home_half(c0, 12, remote_aid, 1, 0, 7, 1)
        c0.execute("COMMIT")
    finally:
        c0.close()
        c1.close()  # closing rolls the open half back, as a crash would
    before = audit.check(db2)
    assert before.half_committed == 1 and before.bad_accounts == 1 and not before.ok
    assert audit.recover(db2) == 1
    assert audit.recover(db2) == 0  # exactly once
    after = audit.check(db2)
    assert after.ok, after.problems
    assert (after.history_rows, after.distributed_rows, after.account_sum) == (2, 2, 47)
    assert independent_check(str(db2[0].parent))[0]


def test_audit_and_independent_check_catch_a_tampered_balance(db2):
    (c0, c1) = _open(db2)
    transaction.run_local(c0, 1, 7, 0, 0, 500)
    c1.execute("UPDATE account SET abalance = abalance + 1 WHERE aid = 150")
    c0.close(), c1.close()
    result = audit.check(db2)
    assert result.bad_accounts == 1 and "balances differ" in result.problems[0]
    ok, lines = independent_check(str(db2[0].parent))
    assert not ok and lines[-1].endswith("FAILED")


def test_audit_against_driver_log(db2, tmp_path):
    (c0, c1) = _open(db2)
    transaction.run_local(c0, 1, 7, 0, 0, 5)
    transaction.run_local(c0, 2, 7, 0, 0, 5)
    c0.close(), c1.close()
    log = tmp_path / "log"
    log.mkdir()
    # 1 acknowledged, 2 in doubt (answer lost) but committed, 3 aborted, 4 cut by kill -9
    (log / "driver-p000.log").write_text("B 1 7 0 5 -1\nC 1\nB 2 7 0 5 -1\nB 3 7 0 5 -1\nA 3\nB")
    result = audit.check(db2, log)
    assert result.ok and (result.acknowledged, result.in_doubt_committed) == (1, 1)
    (log / "driver-p000.log").write_text(
        "B 1 7 0 5 -1\nC 1\nB 2 7 0 5 -1\nA 2\nB 9 7 0 5 -1\nC 9\n"
    )
    bad = audit.check(db2, log)
    assert (bad.aborted_present, bad.acknowledged_missing) == (1, 1) and not bad.ok


def test_histogram_percentiles_and_merge():
    a, b = histogram.new(), histogram.new()
    for ms in range(1, 101):
        histogram.record(a, ms / 1000)
    histogram.record(b, 2.5)
    merged = histogram.merge([histogram.encode(a), histogram.encode(b)])
    s = histogram.summarize(merged)
    assert s.count == 101
    assert s.p50 == pytest.approx(0.051, rel=0.01)
    assert s.p95 == pytest.approx(0.096, rel=0.01)
    assert s.max == pytest.approx(2.5, rel=0.001)
    assert s.within_1s == pytest.approx(100 / 101)
    assert histogram.summarize(histogram.new()).count == 0


def _step(repeat, offered, fast, slow, in_window, failed=0):
    h = histogram.new()
    for _ in range(fast):
        histogram.record(h, 0.05)
    for _ in range(slow):
        histogram.record(h, 1.5)
    n = fast + slow + failed
    return Step(
        "open", repeat, offered, 8, 3.0, n, fast + slow, in_window, 0, 0, failed, 0,
        in_window / 3.0, histogram.summarize(h), 0.0, (fast + slow,), histogram.encode(h),
        tps_series=(in_window / 3.0,) * 3, memory_bytes=((2**20,) * 4,),
    )  # fmt: skip


def test_rule_tps_is_delivered_and_needs_95_percent_within_1s_and_no_backlog():
    from wisconsin.workloads.debitcredit.runfile import AuditRecord, PartitionResult

    steps = (
        _step(0, 10.0, 30, 0, 30),
        _step(0, 20.0, 58, 2, 59),  # 96.7% within 1 s: passes
        _step(0, 30.0, 80, 10, 90),  # 88.9%: fails
        _step(1, 10.0, 30, 0, 30),
        _step(1, 20.0, 60, 0, 35),  # all fast, but 25 still unanswered > 20 tps x 1 s
    )
    res = PartitionResult(1, False, 1, 1, 1, 0.0, 0, steps, AuditRecord(*[0] * 17, (), 0, (), True))
    iv = metrics.rule_tps(res, 0.95, 1.0)  # delivered: 59 committed in 3 s, not 20 offered
    assert (iv.median, iv.low, iv.high, iv.n) == ((10 + 59 / 3) / 2, 10.0, 59 / 3, 2)
    assert metrics.rule_tps(res, 0.85, 2.0).high == 30.0  # Tandem's 90%/2 s variant is laxer
    up = metrics.scaleup(metrics.Interval(10, 8, 12, 2), metrics.Interval(18, 16, 20, 2))
    assert (up.median, up.low, up.high) == (1.8, 16 / 12, 20 / 8)
    # P = 2's peak step unsteady (bench of 2026-11-26 08:50): its scaleup was "0.00 [0.00-0.00]"
    unset = metrics.interval([])
    assert metrics.scaleup(metrics.Interval(10, 8, 12, 2), unset).fmt(2) == "-"
    assert metrics.scaleup(unset, metrics.Interval(18, 16, 20, 2)).n == 0


def test_expected_remote_share():
    s = schema.Sizing(branches_per_partition=100)
    assert metrics.expected_remote(s, 1) == 0.0
    assert metrics.expected_remote(s, 2) == pytest.approx(0.15 * 100 / 199)
    assert metrics.expected_remote(s, 4) == pytest.approx(0.15 * 3 / 4, abs=0.001)
