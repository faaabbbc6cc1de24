"""TPC-C on the OLTP core, end to end on a tiny database: partition servers, terminals,
distributed New-Orders and Payments through two-phase commit, recovery, consistency."""

from __future__ import annotations

import json
from decimal import Decimal

import duckdb
import pytest

from wisconsin.workloads.tpcc import audit, consistency, load, pipeline, remote, report
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc.schema import Placement, Scale, connect

TINY = Scale(customers_per_district=30, items=200)


# One worker builds the module fixtures once (xdist --dist loadgroup), not each worker its own
pytestmark = pytest.mark.xdist_group("tpcc_run")


@pytest.fixture(scope="module")
def nowait_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpcc")
    run, path = pipeline.run_bench(d / "data", d / "out", 2, 1, "nowait", 6.0, 1.0, 5, TINY)
    return run, path


def test_a_nowait_run_commits_across_partitions_and_stays_consistent(nowait_run):
    run, _ = nowait_run
    r = run.result
    assert r.new_orders_all > 0 and r.new_orders_all == r.d_next_o_id_delta
    assert not r.consistency_failed and len(r.consistency) == 12 and r.independent_ok
    # 15% of payments are by a customer of the other warehouse, which is the other partition
    assert sum(k.distributed for k in r.kinds) > 0
    rules = {x.name: x for x in audit.audit_run(run)}
    for name in (
        "new orders",
        "consistency",
        "deferred deliveries",
        "checkpoint in the window",
        "acknowledged transactions",
    ):
        assert rules[name].ok, rules[name].detail


def test_the_report_opens_with_the_verdict(nowait_run):
    _, path = nowait_run
    text = report.report_files([path])
    first = text.splitlines()[2]
    assert first.startswith(("UNSCALED", "TPC-C-derived, nowait mode"))
    assert "p90 vs limit" in text and "audit:" in text
    assert json.loads(report.report_files([path], "json"))["p90_s"].keys() == set(ins.KINDS)


def _customer(path, c):
    con = connect(path, read_only=True)
    try:
        return con.execute(
            "SELECT c_balance, c_payment_cnt FROM customer WHERE c_w_id=? AND c_d_id=? AND c_id=?",
            c,
        ).fetchall()[0]
    finally:
        con.close()


def test_recover_redoes_a_decided_remote_half_exactly_once(tmp_path):
    m = load.build(tmp_path / "db", Placement(2, 1), 3, TINY)
    paths = load.partition_paths(tmp_path / "db", m)
    inp = ins.PaymentInput(1, 1, ins.Customer(2, 3, c_id=7), 12_345)
    half = remote.customer_half(99, inp, 7)
    before = _customer(paths[1], [2, 3, 7])
    con = connect(paths[0])
    remote.create(con)
    con.execute("BEGIN")
    remote.decide(con, 1, half)  # the home decided; the remote's half never committed
    con.execute("COMMIT")
    con.close()
    assert remote.recover(paths) == 1
    assert remote.recover(paths) == 0  # the marker makes it exactly once
    balance, count = _customer(paths[1], [2, 3, 7])
    assert (before[0] - balance, count - before[1]) == (Decimal("123.45"), 1)


def test_prepare_leaves_the_half_open_and_a_conflict_is_refused(tmp_path):
    m = load.build(tmp_path / "db", Placement(1, 1), 3, TINY)
    (path,) = load.partition_paths(tmp_path / "db", m)
    con = duckdb.connect(str(path))
    remote.create(con)
    a, b = con.cursor(), con.cursor()
    line = ins.Line(5, 1, 3)
    msg = remote.stock_half(1, 2, 4, [line])
    (dist,) = remote.prepare(a, msg)
    assert dist.strip()  # S_DIST_04 of the item
    with pytest.raises(duckdb.TransactionException):
        remote.prepare(b, remote.stock_half(2, 2, 4, [line]))  # the same STOCK row
    a.execute("ROLLBACK")
    assert remote.redo(b, msg) and not remote.redo(b, msg)
    verdicts = consistency.check_partition(con.cursor(), TINY, numbers=(1, 2, 3, 4))
    assert all(v.ok for v in verdicts)
    con.close()


def test_every_table_is_updated_in_one_form():
    """DuckDB 2.0.1 lets an UPDATE ... RETURNING and a plain UPDATE of the same row (a table
    with a primary key) both commit, losing one: each table's updates share one form."""
    import re

    from wisconsin.workloads.tpcc import transactions as tx

    forms: dict[str, set[bool]] = {}
    texts = [v for v in vars(tx).values() if isinstance(v, str)]
    texts += [v for d in vars(tx).values() if isinstance(d, dict) for v in d.values()
              if isinstance(v, str)]  # fmt: skip
    for sql in texts:
        if found := re.match(r"UPDATE (\w+) ", sql):
            forms.setdefault(found.group(1), set()).add("RETURNING" in sql)
    assert {"customer", "district", "stock", "warehouse"} <= forms.keys()
    assert all(len(f) == 1 for f in forms.values()), forms


def test_the_cli_reports_and_audits_a_tpcc_run_through_the_registry(nowait_run, tmp_path):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    _, path = nowait_run
    rep = CliRunner().invoke(cli, ["report", str(path)])
    assert rep.exit_code == 0 and "new orders per minute" in rep.output
    aud = CliRunner().invoke(cli, ["audit", str(path)])
    assert "consistency" in aud.output and "p90 response times" in aud.output
    refused = CliRunner().invoke(cli, ["bench", "--workload", "tpcc", "--branches", "3",
                                       "--data", str(tmp_path)])  # fmt: skip
    assert refused.exit_code == 2 and "--workload tpcc" in refused.output
    assert "Traceback" not in refused.output


def test_kill_9_mid_run_then_repair_keeps_the_conditions(tmp_path):
    """A partition server killed with SIGKILL mid-step (the coordinator then kills the
    other): `repair` redoes what was decided, and the conditions hold (11 aside: the
    deliveries it counts died with the tallies)."""
    import os
    import signal
    import threading

    from wisconsin.oltp.failures import PartitionLost
    from wisconsin.workloads.tpcc import workload
    from wisconsin.workloads.tpcc.driver import Load
    from wisconsin.workloads.tpcc.server import PartitionServers

    db = tmp_path / "db"
    m = load.build(db, Placement(2, 1), 3, TINY)
    step = Load("nowait", 0.5, 20.0, 3, (1, 2, 3), workers=3, deferred_delivery=False)
    lost = pytest.raises(PartitionLost, match="partition 1 .*signal 9")
    with lost, PartitionServers(db, m, db / "logs", pin=False) as s:
        threading.Timer(3.0, os.kill, (s.pids[1], signal.SIGKILL)).start()
        s.run(step)
    lines, problem = workload.repair_table(db)
    assert "conditions 3.3.2.1-4 hold" in lines[0]
    assert "no acknowledged transaction lost" in lines[0] and problem is None, lines
    numbers = [n for n in consistency.CONDITIONS if n != 11]
    verdicts = consistency.check_database(load.partition_paths(db, m), TINY, None, numbers)
    assert not consistency.failed(verdicts), consistency.lines(verdicts)


def test_a_checkpoint_held_by_an_open_write_is_interrupted_and_frees_the_writers(
    tmp_path, monkeypatch
):
    """FORCE CHECKPOINT waits for an open write (a remote half waiting for its home's
    decision) and blocks every other writer meanwhile: two partitions checkpointing at once
    deadlocked a cluster test. It gives up after CHECKPOINT_WAIT_S, and the writers go on."""
    import time

    import duckdb

    from wisconsin.workloads.tpcc import driver

    monkeypatch.setattr(driver, "CHECKPOINT_WAIT_S", 0.3)
    con = duckdb.connect(str(tmp_path / "p.duckdb"))
    con.execute("CREATE TABLE t AS SELECT range i, 0 v FROM range(10)")
    half, ck, other = con.cursor(), con.cursor(), con.cursor()
    half.execute("BEGIN")
    half.execute("UPDATE t SET v = 1 WHERE i = 1")  # open, as a prepared half is
    t0 = time.perf_counter()
    assert driver._checkpoint(ck) == driver.INTERRUPTED
    assert 0.25 < time.perf_counter() - t0 < 2.0
    other.execute("UPDATE t SET v = 2 WHERE i = 2")  # not blocked any more
    half.execute("COMMIT")
    assert driver._checkpoint(ck) == ""  # nothing open: done
    assert con.execute("SELECT sum(v) FROM t").fetchone() == (3,)
