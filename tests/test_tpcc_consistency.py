"""The twelve consistency conditions: a row broken just past each one fails it (and the
independent check agrees on conditions 1-4); condition 10 summed across partitions."""

from __future__ import annotations

import shutil
from decimal import Decimal

import pytest

from wisconsin.workloads.tpcc import consistency, inputs, load, schema, transactions
from wisconsin.workloads.tpcc.check import independent_check, main
from wisconsin.workloads.tpcc.schema import Placement, Scale

SCALE = Scale(customers_per_district=30, items=200)  # orders 1-21 delivered, 22-30 new

# warehouse 2, district 7: one row changed by the least that breaks the condition. The
# conditions tie rows together, so some changes break a neighbour too: each names all.
W, D = "w_id = 2", "d_w_id = 2 AND d_id = 7"
FIRST_HISTORY = "rowid = (SELECT min(rowid) FROM history WHERE h_w_id = 2 AND h_d_id = 7)"
BREAKS = {
    1: (f"UPDATE warehouse SET w_ytd = w_ytd + 0.01 WHERE {W}", {1, 8}),
    2: (f"UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE {D}", {2}),
    3: ("DELETE FROM new_order WHERE no_w_id = 2 AND no_d_id = 7 AND no_o_id = 29", {3, 5, 11}),
    4: (
        "DELETE FROM order_line WHERE ol_w_id = 2 AND ol_d_id = 7 AND ol_o_id = 5 "
        "AND ol_number = 1",
        {4, 6},
    ),
    5: (
        "UPDATE orders SET o_carrier_id = NULL WHERE o_w_id = 2 AND o_d_id = 7 AND o_id = 21",
        {5, 7},
    ),
    6: (
        "UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 2 AND o_d_id = 7 AND o_id = 5",
        {4, 6},
    ),
    7: (
        "UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 2 AND ol_d_id = 7 "
        "AND ol_o_id = 21 AND ol_number = 1",
        {7},
    ),
    8: (f"UPDATE history SET h_w_id = 1 WHERE {FIRST_HISTORY}", {8, 9}),
    9: (f"UPDATE district SET d_ytd = d_ytd + 0.01 WHERE {D}", {1, 9}),
    10: (f"UPDATE history SET h_c_id = h_c_id % 30 + 1 WHERE {FIRST_HISTORY}", {10}),
    11: ("DELETE FROM new_order WHERE no_w_id = 2 AND no_d_id = 7 AND no_o_id = 22", {5, 11}),
    12: (
        "UPDATE customer SET c_ytd_payment = c_ytd_payment + 0.01 "
        "WHERE c_w_id = 2 AND c_d_id = 7 AND c_id = 5",
        {12},
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpcc") / "db"
    load.build(d, Placement(1, 2), seed=3, scale=SCALE)
    return d


@pytest.fixture(scope="module")
def built2(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpcc") / "db2"
    load.build(d, Placement(2, 1), seed=4, scale=SCALE)
    return d


def _broken(built, tmp_path, sql: str):
    db = tmp_path / "db"
    shutil.copytree(built, db)
    con = schema.connect(db / "part-000.duckdb")
    try:
        con.execute(sql)
        return db, consistency.check_partition(con, SCALE)
    finally:
        con.close()


@pytest.mark.parametrize("number", sorted(BREAKS))
def test_a_row_broken_just_past_a_condition_fails_it(built, tmp_path, number):
    sql, fails = BREAKS[number]
    db, verdicts = _broken(built, tmp_path, sql)
    assert set(consistency.failed(verdicts)) == fails
    detail = {v.number: v.detail for v in verdicts}[number]
    assert ("(2, " if number in (1, 8) else "(2, 7, ") in detail  # names the broken key
    ok, lines = independent_check(str(db))
    found = {n for n in (1, 2, 3, 4) if f"condition 3.3.2.{n}: FAILED" in "\n".join(lines)}
    assert found == fails & {1, 2, 3, 4} and ok == (not found)


def test_the_delivered_counts_make_condition_11_hold_after_deliveries(built, tmp_path):
    db = tmp_path / "db"
    shutil.copytree(built, db)
    con = schema.connect(db / "part-000.duckdb")
    try:
        result = transactions.delivery(con, inputs.DeliveryInput(2, 4))
        delivered = {(2, d): 1 for d, _ in result.delivered}
        assert len(delivered) == 10
        assert consistency.failed(consistency.check_partition(con, SCALE)) == [11]
        assert consistency.failed(consistency.check_partition(con, SCALE, delivered)) == []
        one_short = delivered | {(2, 7): 0}
        assert consistency.failed(consistency.check_partition(con, SCALE, one_short)) == [11]
    finally:
        con.close()


def _cross_partition_payment(db, history_cents: int, moved_cents: int) -> None:
    """By hand, what a payment at warehouse 1 (partition 0) by customer (2, 2, 3) of
    warehouse 2 (partition 1) leaves: HISTORY with the paying warehouse, the balance with
    the customer."""
    amount, paid = Decimal(history_cents).scaleb(-2), Decimal(moved_cents).scaleb(-2)
    con = schema.connect(db / "part-000.duckdb")
    try:
        con.execute("UPDATE warehouse SET w_ytd = w_ytd + $1", [paid])
        con.execute("UPDATE district SET d_ytd = d_ytd + $1 WHERE d_id = 1", [paid])
        con.execute("INSERT INTO history VALUES (3, 2, 2, 1, 1, now(), $1, 'x')", [amount])
    finally:
        con.close()
    con = schema.connect(db / "part-001.duckdb")
    try:
        con.execute(
            "UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1 "
            "WHERE c_d_id = 2 AND c_id = 3",
            [paid],
        )
    finally:
        con.close()


def test_condition_10_sums_history_over_every_partition(built2, tmp_path):
    db = tmp_path / "db"
    shutil.copytree(built2, db)
    _cross_partition_payment(db, 500, 500)
    paths = [db / "part-000.duckdb", db / "part-001.duckdb"]
    assert consistency.failed(consistency.check_database(paths, SCALE)) == []
    alone = schema.connect(paths[1], read_only=True)
    try:  # partition 1 alone does not see the payment's HISTORY row
        assert consistency.failed(consistency.check_partition(alone, SCALE)) == [10]
    finally:
        alone.close()


def test_condition_10_across_partitions_fails_just_past(built2, tmp_path):
    db = tmp_path / "db"
    shutil.copytree(built2, db)
    _cross_partition_payment(db, 501, 500)  # HISTORY says 5.01, the balance moved 5.00
    paths = [db / "part-000.duckdb", db / "part-001.duckdb"]
    verdicts = consistency.check_database(paths, SCALE)
    assert consistency.failed(verdicts) == [8, 9, 10]
    assert [v.detail.split(":")[0] for v in verdicts if v.number == 10] == ["partition 1"]


def test_the_independent_check_reads_the_files_alone(built, capsys):
    assert main([str(built)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "independent check: OK"
    assert main([]) == 2
    assert main([str(built / "nowhere")]) == 1


def test_info_exits_0_on_a_sound_database_and_3_on_a_broken_one(built, tmp_path):
    """`wisconsin info` of a TPC-C database ended in a KeyError traceback whatever it found
    (its check's 0/1 was taken for an exit-code kind): sound is 0, a failed condition 3."""
    from click.testing import CliRunner

    from wisconsin.cli import cli

    res = CliRunner().invoke(cli, ["info", str(built)])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "TPC-C database" in res.output and "3.3.2.1 ok" in res.output
    db, _ = _broken(built, tmp_path, "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
    res = CliRunner().invoke(cli, ["info", str(db)])
    assert res.exit_code == 3 and isinstance(res.exception, SystemExit), res.output
    assert "3.3.2.1 FAIL" in res.output.replace("FAILED", "FAIL"), res.output
