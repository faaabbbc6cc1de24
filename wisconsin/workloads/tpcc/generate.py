"""The initial database (clause 4.3.3.1), one warehouse at a time, as Arrow tables.

`warehouse_tables(w_id, seed, scale)` is a pure function of its arguments (as the Wisconsin
generator is of (size, part, seed)): every table of the warehouse draws from its own stream
(rules.stream(seed, table tag, w_id)), so any warehouse can be built alone, on any
partition, in any order, and comes out the same. `item_table(seed, scale)` is ITEM, the same
in every partition. NURand's C_LOAD comes from the seed (rules.load_constants).

One deviation: the "current date and time" of C_SINCE, H_DATE and O_ENTRY_D is the fixed
LOAD_TIME, not the clock, so that the rows are a function of (warehouse, seed).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

from wisconsin.workloads.tpcc import rules
from wisconsin.workloads.tpcc.schema import (
    DISTRICTS,
    MAX_ORDER_LINES,
    MIN_ORDER_LINES,
    SPEC_SCALE,
    TABLES,
    Scale,
)

GENERATOR_VERSION = 1  # bump when any row changes for the same (warehouse, seed, scale)
LOAD_TIME = dt.datetime(2026, 1, 1)
_LOAD_US = int((LOAD_TIME - dt.datetime(1970, 1, 1)).total_seconds() * 1_000_000)

# the stream tag of each table's draws
_TAG = {"warehouse": 1, "district": 2, "customer": 3, "history": 4, "orders": 5, "stock": 6}
ITEM_TAG = 7

H_AMOUNT_AT_LOAD = 1000  # cents: every history row's 10.00
W_YTD_AT_LOAD_PER_CUSTOMER = H_AMOUNT_AT_LOAD  # W_YTD = D_YTD sums = H_AMOUNT sums


# --- typed columns ---------------------------------------------------------------------------


def _decimal(units: np.ndarray, precision: int, scale: int) -> pa.Array:
    """Integers in units of 10^-scale as DECIMAL(precision, scale), exactly."""
    units = np.asarray(units, dtype=np.int64)
    wide = np.empty((len(units), 2), dtype="<i8")
    wide[:, 0] = units
    wide[:, 1] = units >> 63  # the high word: the sign extended
    return pa.Array.from_buffers(
        pa.decimal128(precision, scale), len(units), [None, pa.py_buffer(wide)]
    )


def _const_decimal(n: int, units: int, precision: int, scale: int) -> pa.Array:
    return _decimal(np.full(n, units, dtype=np.int64), precision, scale)


def _int(values) -> pa.Array:
    return pa.array(np.asarray(values, dtype=np.int32), pa.int32())


def _timestamps(n: int, null: np.ndarray | None = None) -> pa.Array:
    return pa.array(np.full(n, _LOAD_US, dtype=np.int64), pa.timestamp("us"), mask=null)


def _table(name: str, columns: dict[str, pa.Array]) -> pa.Table:
    """columns in the schema's order (a missing or extra one is a bug here)."""
    names = [c for c, _ in TABLES[name]]
    assert list(columns) == names, (name, list(columns))
    return pa.table(columns)


def _address(rng, n: int, prefix: str) -> dict[str, pa.Array]:
    """Street 1 and 2, city: a-strings [10 .. 20]; state: 2 letters; zip (clause 4.3.2.7)."""
    return {
        f"{prefix}_street_1": rules.a_strings(rng, n, 10, 20),
        f"{prefix}_street_2": rules.a_strings(rng, n, 10, 20),
        f"{prefix}_city": rules.a_strings(rng, n, 10, 20),
        f"{prefix}_state": rules.states(rng, n),
        f"{prefix}_zip": rules.zips(rng, n),
    }


# --- the tables ----------------------------------------------------------------------------


def item_table(seed: int, scale: Scale = SPEC_SCALE) -> pa.Table:
    rng = rules.stream(seed, ITEM_TAG)
    n = scale.items
    return _table(
        "item",
        {
            "i_id": _int(np.arange(1, n + 1)),
            "i_im_id": _int(rng.integers(1, 10_000, n, endpoint=True)),
            "i_name": rules.a_strings(rng, n, 14, 24),
            "i_price": _decimal(rng.integers(100, 10_000, n, endpoint=True), 5, 2),
            "i_data": rules.a_strings(rng, n, 26, 50, original=0.1),
        },
    )


def _warehouse(w_id: int, seed: int, scale: Scale) -> pa.Table:
    rng = rules.stream(seed, _TAG["warehouse"], w_id)
    ytd = DISTRICTS * scale.customers_per_district * W_YTD_AT_LOAD_PER_CUSTOMER
    return _table(
        "warehouse",
        {
            "w_id": _int([w_id]),
            "w_name": rules.a_strings(rng, 1, 6, 10),
            **_address(rng, 1, "w"),
            "w_tax": _decimal(rng.integers(0, 2000, 1, endpoint=True), 4, 4),
            "w_ytd": _const_decimal(1, ytd, 12, 2),
        },
    )


def _district(w_id: int, seed: int, scale: Scale) -> pa.Table:
    rng = rules.stream(seed, _TAG["district"], w_id)
    n = DISTRICTS
    ytd = scale.customers_per_district * H_AMOUNT_AT_LOAD
    return _table(
        "district",
        {
            "d_id": _int(np.arange(1, n + 1)),
            "d_w_id": _int(np.full(n, w_id)),
            "d_name": rules.a_strings(rng, n, 6, 10),
            **_address(rng, n, "d"),
            "d_tax": _decimal(rng.integers(0, 2000, n, endpoint=True), 4, 4),
            "d_ytd": _const_decimal(n, ytd, 12, 2),
            "d_next_o_id": _int(np.full(n, scale.orders_per_district + 1)),
        },
    )


def _ids(scale: Scale, w_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c_id, d_id, w_id) of every customer of the warehouse, in key order."""
    per = scale.customers_per_district
    c = np.tile(np.arange(1, per + 1, dtype=np.int32), DISTRICTS)
    d = np.repeat(np.arange(1, DISTRICTS + 1, dtype=np.int32), per)
    return c, d, np.full(len(c), w_id, dtype=np.int32)


def customer_last_numbers(rng, scale: Scale, c_load: int) -> np.ndarray:
    """The number C_LAST is built from, per customer of one district: the first
    `last_names` customers in number order, the rest NURand(255, 0, last_names - 1)."""
    per, names = scale.customers_per_district, scale.last_names
    rest = rules.nurand(rng, rules.A_C_LAST, 0, names - 1, c_load, per - names)
    return np.concatenate([np.arange(names), rest])


def _customer(w_id: int, seed: int, scale: Scale, c_load: int) -> pa.Table:
    rng = rules.stream(seed, _TAG["customer"], w_id)
    c, d, w = _ids(scale, w_id)
    n = len(c)
    last = np.concatenate([customer_last_numbers(rng, scale, c_load) for _ in range(DISTRICTS)])
    bad = rules.exactly(rng, n, 0.1)
    return _table(
        "customer",
        {
            "c_id": _int(c),
            "c_d_id": _int(d),
            "c_w_id": _int(w),
            "c_first": rules.a_strings(rng, n, 8, 16),
            "c_middle": pa.array(["OE"] * n, pa.string()),
            "c_last": rules.last_names(last),
            **_address(rng, n, "c"),
            "c_phone": rules.n_strings(rng, n, 16),
            "c_since": _timestamps(n),
            "c_credit": pa.array(np.where(bad, "BC", "GC"), pa.string()),
            "c_credit_lim": _const_decimal(n, 5_000_000, 12, 2),
            "c_discount": _decimal(rng.integers(0, 5000, n, endpoint=True), 4, 4),
            "c_balance": _const_decimal(n, -H_AMOUNT_AT_LOAD, 12, 2),
            "c_ytd_payment": _const_decimal(n, H_AMOUNT_AT_LOAD, 12, 2),
            "c_payment_cnt": _int(np.ones(n)),
            "c_delivery_cnt": _int(np.zeros(n)),
            "c_data": rules.a_strings(rng, n, 300, 500),
        },
    )


def _history(w_id: int, seed: int, scale: Scale) -> pa.Table:
    rng = rules.stream(seed, _TAG["history"], w_id)
    c, d, w = _ids(scale, w_id)
    n = len(c)
    return _table(
        "history",
        {
            "h_c_id": _int(c),
            "h_c_d_id": _int(d),
            "h_c_w_id": _int(w),
            "h_d_id": _int(d),
            "h_w_id": _int(w),
            "h_date": _timestamps(n),
            "h_amount": _const_decimal(n, H_AMOUNT_AT_LOAD, 6, 2),
            "h_data": rules.a_strings(rng, n, 12, 24),
        },
    )


def _orders(w_id: int, seed: int, scale: Scale) -> dict[str, pa.Table]:
    """ORDER, ORDER-LINE and NEW-ORDER from one stream (the lines follow O_OL_CNT)."""
    rng = rules.stream(seed, _TAG["orders"], w_id)
    per = scale.orders_per_district
    o_id, d, w = _ids(scale, w_id)
    n = len(o_id)
    customers = np.concatenate([rng.permutation(per) + 1 for _ in range(DISTRICTS)])
    undelivered = o_id > scale.delivered_per_district
    carrier = rng.integers(1, 10, n, endpoint=True)
    ol_cnt = rng.integers(MIN_ORDER_LINES, MAX_ORDER_LINES, n, endpoint=True)
    orders = _table(
        "orders",
        {
            "o_id": _int(o_id),
            "o_d_id": _int(d),
            "o_w_id": _int(w),
            "o_c_id": _int(customers),
            "o_entry_d": _timestamps(n),
            "o_carrier_id": pa.array(carrier.astype(np.int32), pa.int32(), mask=undelivered),
            "o_ol_cnt": _int(ol_cnt),
            "o_all_local": _int(np.ones(n)),
        },
    )
    lines = int(ol_cnt.sum())
    first = np.repeat(np.cumsum(ol_cnt) - ol_cnt, ol_cnt)  # each line's order's first line
    line_new = np.repeat(undelivered, ol_cnt)
    amount = np.where(line_new, rng.integers(1, 999_999, lines, endpoint=True), 0)
    order_line = _table(
        "order_line",
        {
            "ol_o_id": _int(np.repeat(o_id, ol_cnt)),
            "ol_d_id": _int(np.repeat(d, ol_cnt)),
            "ol_w_id": _int(np.full(lines, w_id)),
            "ol_number": _int(np.arange(lines) - first + 1),
            "ol_i_id": _int(rng.integers(1, scale.items, lines, endpoint=True)),
            "ol_supply_w_id": _int(np.full(lines, w_id)),
            "ol_delivery_d": _timestamps(lines, null=line_new),
            "ol_quantity": _int(np.full(lines, 5)),
            "ol_amount": _decimal(amount, 6, 2),
            "ol_dist_info": rules.fixed_strings(rules.random_chars(rng, lines, 24)),
        },
    )
    new_order = _table(
        "new_order",
        {"no_o_id": _int(o_id[undelivered]), "no_d_id": _int(d[undelivered]),
         "no_w_id": _int(w[undelivered])},
    )  # fmt: skip
    return {"orders": orders, "order_line": order_line, "new_order": new_order}


def _stock(w_id: int, seed: int, scale: Scale) -> pa.Table:
    rng = rules.stream(seed, _TAG["stock"], w_id)
    n = scale.items
    dists = {
        f"s_dist_{k:02d}": rules.fixed_strings(rules.random_chars(rng, n, 24))
        for k in range(1, DISTRICTS + 1)
    }
    zeros = _int(np.zeros(n))
    return _table(
        "stock",
        {
            "s_i_id": _int(np.arange(1, n + 1)),
            "s_w_id": _int(np.full(n, w_id)),
            "s_quantity": _int(rng.integers(10, 100, n, endpoint=True)),
            **dists,
            "s_ytd": zeros,
            "s_order_cnt": zeros,
            "s_remote_cnt": zeros,
            "s_data": rules.a_strings(rng, n, 26, 50, original=0.1),
        },
    )


def warehouse_tables(w_id: int, seed: int, scale: Scale = SPEC_SCALE) -> dict[str, pa.Table]:
    """Every row of warehouse w_id (all tables but ITEM), by table name."""
    if w_id < 1:
        raise ValueError(f"warehouse numbers start at 1, not {w_id}")
    c_load = rules.load_constants(seed).c_last
    return {
        "warehouse": _warehouse(w_id, seed, scale),
        "district": _district(w_id, seed, scale),
        "customer": _customer(w_id, seed, scale, c_load),
        "history": _history(w_id, seed, scale),
        **_orders(w_id, seed, scale),
        "stock": _stock(w_id, seed, scale),
    }
