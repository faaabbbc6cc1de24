"""No acknowledged TPC-C transaction lost: kill -9 of the coordinator (and of a partition
server) mid-run, `wisconsin repair`, every receipt of the log found in the database; and a
forged log whose one acknowledged transaction the database lacks fails, naming it."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from wisconsin import DAMAGED
from wisconsin.workloads.tpcc import generate, load, receipts, workload
from wisconsin.workloads.tpcc.crash import TINY, crash_test
from wisconsin.workloads.tpcc.schema import Placement, connect


@pytest.mark.parametrize("victims", [(), (1,)], ids=["coordinator", "partition+coordinator"])
def test_kill_9_mid_run_then_repair_loses_no_acknowledged_transaction(tmp_path, victims):
    r = crash_test(tmp_path / "db", min_acked=60, victims=victims)
    a = r.receipts
    assert r.acknowledged_before_kill >= 60 and a.acknowledged >= r.acknowledged_before_kill
    assert a.with_keys > 0 and a.found == a.with_keys and a.lost_count == 0, a.line()
    assert a.halves_missing == 0 and a.halves_orphaned == 0  # redone / presumed aborted
    assert "no acknowledged transaction lost" in r.repair[0], r.repair
    assert any(line.startswith("acknowledged transactions:") for line in r.repair)
    assert r.failed == (), r.failed


def _order(path, w, d, o):
    con = connect(path, read_only=True)
    try:
        return con.execute(
            "SELECT o_c_id, o_ol_cnt, o_carrier_id FROM orders WHERE o_w_id=? AND o_d_id=? "
            "AND o_id=?",
            [w, d, o],
        ).fetchall()[0]
    finally:
        con.close()


def _log(log_dir, *receipt_lines: str) -> None:
    log_dir.mkdir(exist_ok=True)
    lines = [f"B {t} new_order\n" for t in range(1, len(receipt_lines) + 1)]
    lines += [f"C {t} {x}\n" for t, x in enumerate(receipt_lines, 1)]
    (log_dir / "driver-p000.log").write_text("".join(lines))


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("tpcc") / "db"
    m = load.build(db, Placement(1, 1), 3, TINY)
    return db, load.partition_paths(db, m)


def test_a_forged_log_with_one_acknowledged_transaction_missing_fails_naming_it(tiny_db):
    db, paths = tiny_db
    c, n, carrier = _order(paths[0], 1, 2, 10)  # delivered at load (TINY: 30 orders a district)
    c2, n2, _ = _order(paths[0], 1, 2, 30)  # undelivered at load (the last 30%)
    us = receipts.micros(generate.LOAD_TIME)
    cents = generate.H_AMOUNT_AT_LOAD
    con = connect(paths[0], read_only=True)
    ((hw, hd, hcw, hcd, hc),) = con.execute(
        "SELECT h_w_id, h_d_id, h_c_w_id, h_c_d_id, h_c_id FROM history LIMIT 1"
    ).fetchall()
    con.close()
    payment = f"P {hw} {hd} {hcw} {hcd} {hc} {cents} {us}"
    present = [f"N 1 2 {c} 10 {n}", f"N 1 2 {c2} 30 {n2}", payment,
               f"D 1 {carrier} 2:10", "R 1 2", "O", "S"]  # fmt: skip
    log_dir = load.ack_log_dir(db)
    _log(log_dir, *present)
    a = receipts.check(paths, log_dir)
    assert a.ok and (a.acknowledged, a.with_keys, a.found) == (7, 4, 4), a.line()
    # one past each: the next order id, a second like payment, an undelivered order
    for extra, named in (
        (f"N 1 2 {c} 31 5", "New-Order txid 8 (w 1, d 2, o 31): no ORDER row"),
        (f"N 1 2 {c} 10 {n + 1}", "New-Order txid 8 (w 1, d 2, o 10): no ORDER row"),
        (payment, "Payment txid 3 (w 1"),  # the multiset: two receipts, one row
        (f"D 1 {carrier} 2:30", "Delivery txid 8 (w 1, d 2, o 30): O_CARRIER_ID null"),
    ):
        _log(log_dir, *present, extra)
        a = receipts.check(paths, log_dir)
        assert not a.ok and a.lost_count == 1 and a.found == a.with_keys - 1, a.line()
        assert named in a.line(), (named, a.line())
        lines, problem = workload.repair_table(db)
        assert "acknowledged LOST" in lines[0] and any(named in x for x in lines), lines
        assert problem == DAMAGED  # `wisconsin repair` exits 3


def test_micros_is_the_timestamp_duckdb_compares():
    t = dt.datetime(2026, 11, 27, 18, 30, 1, 123456)
    ((us,),) = duckdb.connect().execute("SELECT epoch_us(?::TIMESTAMP)", [t]).fetchall()
    assert receipts.micros(t) == us


def test_a_decided_half_unapplied_fails_until_repair_and_an_undecided_one_fails(tmp_path):
    """Presumed abort, checked: a decision whose half is missing fails the check until
    `repair` redoes it; a half applied that no partition decided fails it."""
    from wisconsin.workloads.tpcc import inputs as ins
    from wisconsin.workloads.tpcc import remote

    db = tmp_path / "db"
    m = load.build(db, Placement(2, 1), 3, TINY)
    paths = load.partition_paths(db, m)
    _log(load.ack_log_dir(db), "O")
    con = connect(paths[0])
    remote.create(con)
    half = remote.customer_half(99, ins.PaymentInput(1, 1, ins.Customer(2, 3, c_id=7), 500), 7)
    remote.decide(con, 1, half)  # partition 0 decided; partition 1 never applied it
    con.close()
    a = receipts.check(paths, load.ack_log_dir(db))
    assert not a.ok and (a.halves_missing, a.halves_orphaned) == (1, 0), a.line()
    lines, problem = workload.repair_table(db)
    assert "1 decided remote half(s) applied" in lines[0] and "no acknowledged" in lines[0]
    assert problem is None
    con = connect(paths[1])
    con.execute("INSERT INTO tpcc_applied VALUES (100)")  # a half nobody decided
    con.close()
    a = receipts.check(paths, load.ack_log_dir(db))
    assert not a.ok and (a.halves_missing, a.halves_orphaned) == (0, 1), a.line()
