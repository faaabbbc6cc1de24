"""The TPC-C generator: a pure function of (warehouse, seed), whose rows obey the population
rules of clause 4.3.3.1, at the specification's cardinalities by default."""

from __future__ import annotations

import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wisconsin import WisconsinError
from wisconsin.workloads.tpcc import generate, rules
from wisconsin.workloads.tpcc.schema import DISTRICTS, SPEC_SCALE, TABLES, Scale

SMALL = Scale(customers_per_district=30, items=1000)
scales = st.sampled_from([Scale(10, 100), SMALL, Scale(1200, 500)])
warehouses = st.integers(1, 10_000)
seeds = st.integers(0, 2**32 - 1)


def col(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False)


def lengths(table: pa.Table, name: str) -> np.ndarray:
    return pc.utf8_length(table.column(name)).to_numpy()


def in_range(values, lo, hi) -> bool:
    return bool(np.all((values >= lo) & (values <= hi)))


def all_match(table: pa.Table, name: str, pattern: str) -> bool:
    return bool(pc.all(pc.match_substring_regex(table.column(name), pattern)).as_py())


def originals(table: pa.Table, name: str) -> int:
    return pc.sum(pc.match_substring(table.column(name), "ORIGINAL")).as_py()


# --- the rules, one table at a time --------------------------------------------------------


def check_warehouse_and_districts(t: dict, w: int, scale: Scale) -> None:
    wh, di = t["warehouse"], t["district"]
    per = scale.customers_per_district
    assert wh.num_rows == 1 and col(wh, "w_id").tolist() == [w]
    assert wh.column("w_ytd")[0].as_py() == Decimal(10 * per) * 10  # 300,000.00 at spec
    assert in_range(col(wh, "w_tax"), 0, Decimal("0.2"))
    assert in_range(lengths(wh, "w_name"), 6, 10)
    assert all_match(wh, "w_zip", r"^[0-9]{4}11111$") and all_match(wh, "w_state", r"^[A-Z]{2}$")
    assert col(di, "d_id").tolist() == list(range(1, DISTRICTS + 1))
    assert set(col(di, "d_w_id")) == {w}
    assert set(col(di, "d_next_o_id")) == {per + 1}
    assert set(col(di, "d_ytd")) == {Decimal(per) * 10}  # 30,000.00 at spec
    assert in_range(col(di, "d_tax"), 0, Decimal("0.2"))
    for street in ("d_street_1", "d_street_2", "d_city"):
        assert in_range(lengths(di, street), 10, 20)


def check_customers(t: dict, w: int, scale: Scale, c_load: int) -> None:
    cu, hi = t["customer"], t["history"]
    per, names = scale.customers_per_district, scale.last_names
    n = DISTRICTS * per
    assert cu.num_rows == hi.num_rows == n
    assert col(cu, "c_id").tolist() == list(range(1, per + 1)) * DISTRICTS
    assert set(col(cu, "c_w_id")) == {w}
    last = col(cu, "c_last").reshape(DISTRICTS, per)
    for d in range(DISTRICTS):  # the first `names` customers by number, then NURand's
        assert list(last[d, :names]) == [rules.last_name(i) for i in range(names)]
        assert set(last[d, names:]) <= {rules.last_name(i) for i in range(names)}
    assert set(col(cu, "c_middle")) == {"OE"}
    assert sorted(col(cu, "c_credit")).count("BC") == n // 10  # exactly 10%
    assert in_range(col(cu, "c_discount"), 0, Decimal("0.5"))
    assert set(col(cu, "c_balance")) == {Decimal("-10.00")}
    assert set(col(cu, "c_ytd_payment")) == {Decimal("10.00")}
    assert set(col(cu, "c_credit_lim")) == {Decimal("50000.00")}
    assert set(col(cu, "c_payment_cnt")) == {1} and set(col(cu, "c_delivery_cnt")) == {0}
    assert in_range(lengths(cu, "c_data"), 300, 500) and in_range(lengths(cu, "c_first"), 8, 16)
    assert all_match(cu, "c_phone", r"^[0-9]{16}$")
    assert set(col(hi, "h_amount")) == {Decimal("10.00")}
    assert in_range(lengths(hi, "h_data"), 12, 24)
    keys = ("c_id", "c_d_id", "c_w_id")
    assert all(np.array_equal(col(hi, "h_" + k), col(cu, k)) for k in keys)


def check_orders(t: dict, w: int, scale: Scale) -> None:
    o, ol, no = t["orders"], t["order_line"], t["new_order"]
    per, done = scale.orders_per_district, scale.delivered_per_district
    o_id = col(o, "o_id")
    for d in range(DISTRICTS):  # customers in a random permutation, per district
        assert sorted(col(o, "o_c_id")[d * per : (d + 1) * per]) == list(range(1, per + 1))
    carrier = o.column("o_carrier_id")
    assert np.array_equal(carrier.is_null().to_numpy(zero_copy_only=False), o_id > done)
    assert in_range(col(o, "o_carrier_id")[o_id <= done], 1, 10)
    cnt = col(o, "o_ol_cnt")
    assert in_range(cnt, 5, 15) and set(col(o, "o_all_local")) == {1}
    assert ol.num_rows == cnt.sum()
    assert np.array_equal(col(ol, "ol_number"), np.concatenate([np.arange(1, c + 1) for c in cnt]))
    undelivered = np.repeat(o_id > done, cnt)
    assert np.array_equal(ol.column("ol_delivery_d").is_null().to_numpy(False), undelivered)
    amount = col(ol, "ol_amount")
    assert set(amount[~undelivered]) == {Decimal(0)}
    assert in_range(amount[undelivered], Decimal("0.01"), Decimal("9999.99"))
    assert set(col(ol, "ol_quantity")) == {5} and set(col(ol, "ol_supply_w_id")) == {w}
    assert in_range(col(ol, "ol_i_id"), 1, scale.items)
    assert set(lengths(ol, "ol_dist_info")) == {24}
    assert no.num_rows == DISTRICTS * (per - done)
    assert sorted(set(col(no, "no_o_id"))) == list(range(done + 1, per + 1))


def check_stock_and_items(t: dict, item: pa.Table, w: int, scale: Scale) -> None:
    s = t["stock"]
    assert col(s, "s_i_id").tolist() == list(range(1, scale.items + 1))
    assert set(col(s, "s_w_id")) == {w}
    assert in_range(col(s, "s_quantity"), 10, 100)
    for k in range(1, DISTRICTS + 1):
        assert set(lengths(s, f"s_dist_{k:02d}")) == {24}
    assert all(set(col(s, c)) == {0} for c in ("s_ytd", "s_order_cnt", "s_remote_cnt"))
    assert in_range(lengths(s, "s_data"), 26, 50)
    assert originals(s, "s_data") == scale.items // 10  # exactly 10%
    assert col(item, "i_id").tolist() == list(range(1, scale.items + 1))
    assert in_range(col(item, "i_im_id"), 1, 10_000)
    assert in_range(col(item, "i_price"), Decimal("1.00"), Decimal("100.00"))
    assert in_range(lengths(item, "i_name"), 14, 24) and in_range(lengths(item, "i_data"), 26, 50)
    assert originals(item, "i_data") == scale.items // 10


def check_all(w: int, seed: int, scale: Scale) -> dict:
    t = generate.warehouse_tables(w, seed, scale)
    assert set(t) == set(TABLES) - {"item"}
    for name, table in t.items():  # the schema's columns, in its order
        assert table.column_names == [c for c, _ in TABLES[name]]
    check_warehouse_and_districts(t, w, scale)
    check_customers(t, w, scale, rules.load_constants(seed).c_last)
    check_orders(t, w, scale)
    check_stock_and_items(t, generate.item_table(seed, scale), w, scale)
    return t


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(w=warehouses, seed=seeds, scale=scales)
def test_a_warehouse_is_a_pure_function_of_warehouse_and_seed(w, seed, scale):
    a = generate.warehouse_tables(w, seed, scale)
    b = generate.warehouse_tables(w, seed, scale)
    assert all(a[k].equals(b[k]) for k in a)
    other = generate.warehouse_tables(w + 1, seed, scale)
    assert not other["customer"].equals(a["customer"])
    assert not generate.warehouse_tables(w, seed + 1, scale)["stock"].equals(a["stock"])
    assert generate.item_table(seed, scale).equals(generate.item_table(seed, scale))


@settings(max_examples=15, deadline=None)
@given(w=warehouses, seed=seeds, scale=scales)
def test_rows_obey_the_population_rules(w, seed, scale):
    check_all(w, seed, scale)


def test_the_specification_cardinalities_by_default():
    t = check_all(3, 11, SPEC_SCALE)
    rows = {k: v.num_rows for k, v in t.items()}
    lines = rows.pop("order_line")
    assert rows == {
        "warehouse": 1,
        "district": 10,
        "customer": 30_000,
        "history": 30_000,
        "orders": 30_000,
        "new_order": 9_000,
        "stock": 100_000,
    }
    assert 290_000 <= lines <= 310_000  # 30,000 orders of 5-15 lines: sd ~550
    assert generate.item_table(11).num_rows == 100_000
    # 2,101..3,000 undelivered: the first undelivered order of each district
    assert SPEC_SCALE.delivered_per_district == 2_100 and SPEC_SCALE.last_names == 1_000


# --- the random rules ----------------------------------------------------------------------


def test_last_names_follow_the_syllables():
    assert rules.last_name(371) == "PRICALLYOUGHT"  # the specification's example
    assert rules.last_name(0) == "BARBARBAR" and rules.last_name(999) == "EINGEINGEING"


@given(seed=seeds)
def test_nurand_stays_in_its_range(seed):
    rng = rules.stream(seed, 1)
    for a, x, y in ((255, 0, 999), (1023, 1, 3000), (8191, 1, 100_000)):
        c = int(rng.integers(0, a + 1))
        v = rules.nurand(rng, a, x, y, c, 2000)
        assert v.min() >= x and v.max() <= y


@given(seed=seeds)
def test_c_run_is_chosen_by_the_rule_against_c_load(seed):
    load = rules.load_constants(seed)
    run = rules.run_constants(load, seed)
    assert rules.c_delta_ok(load.c_last, run.c_last) and 0 <= run.c_last <= 255
    assert 0 <= run.c_id <= 1023 and 0 <= run.ol_i_id <= 8191
    assert rules.load_constants(seed) == load  # a function of the seed


def test_the_c_delta_rule_just_past_each_edge():
    assert [rules.c_delta_ok(100, 100 + d) for d in (64, 65, 119, 120)] == [0, 1, 1, 0]
    assert not rules.c_delta_ok(0, 96) and not rules.c_delta_ok(200, 88)  # 96, 112 excluded
    assert rules.c_delta_ok(0, 95) and rules.c_delta_ok(0, 97)


def test_original_is_in_exactly_the_chosen_share():
    s = rules.a_strings(rules.stream(1, 2), 5000, 26, 50, original=0.1)
    assert pc.sum(pc.match_substring(s, "ORIGINAL")).as_py() == 500
    assert pc.min(pc.utf8_length(s)).as_py() >= 26 and pc.max(pc.utf8_length(s)).as_py() <= 50
    assert all(re.fullmatch(r"[A-Za-z0-9]+", x) for x in s.to_pylist()[:50])


@pytest.mark.parametrize("sizes", [(9, 100), (10, 99), (3001, 100), (10, 100_001)])
def test_a_scale_outside_the_test_range_is_refused(sizes):
    with pytest.raises(WisconsinError, match="TPC-C scale"):
        Scale(*sizes)
