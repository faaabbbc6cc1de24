"""The five transactions (clauses 2.4-2.8) as SQL on one partition's DuckDB connection.

Every value is a bound parameter (no SQL text is built from one). Each business transaction
is one database transaction (Delivery: one per district, as clause 2.7.4.2 allows, or one
for the batch), with BEGIN and COMMIT on the cursor given, rolled back on any error; a
write-write conflict surfaces as DuckDB's TransactionException for the caller to retry.

`run(cur, inp, placement, part)` refuses an input that touches a warehouse of another
partition (CrossPartition): a remote warehouse on the same partition is a plain local
transaction here; one across partitions is the driver's, through the OLTP core's two-phase
commit (remote.py holds the remote halves; new_order_home and payment_home the home's).
"""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import dataclass
from decimal import Decimal

import duckdb

from wisconsin import WisconsinError
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc.schema import DISTRICTS, Placement

STOCK_LEVEL_ORDERS = 20  # Stock-Level looks at the district's last 20 orders
C_DATA_MAX = 500


class CrossPartition(WisconsinError):
    """An input touches a warehouse this partition does not hold."""


@contextlib.contextmanager
def transaction(cur: duckdb.DuckDBPyConnection):
    cur.execute("BEGIN")
    try:
        yield
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # DuckDB may have ended it already
            cur.execute("ROLLBACK")
        raise
    cur.execute("COMMIT")


def _money(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


# --- New-Order (clause 2.4.2) --------------------------------------------------------------


@dataclass(frozen=True)
class NewOrderResult:
    o_id: int
    total: Decimal  # sum(OL_AMOUNT) * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX)
    rolled_back: bool  # the unused item: "Item number is not valid"


_DISTS = ", ".join(f"s_dist_{d:02d}" for d in range(1, DISTRICTS + 1))
NO_WAREHOUSE = "SELECT w_tax FROM warehouse WHERE w_id = $1"
NO_DISTRICT = (
    "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 "
    "RETURNING d_next_o_id - 1, d_tax"
)
NO_CUSTOMER = (
    "SELECT c_discount, c_last, c_credit FROM customer "
    "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"
)
NO_ORDER = "INSERT INTO orders VALUES ($1, $2, $3, $4, current_localtimestamp(), NULL, $5, $6)"
NO_NEW_ORDER = "INSERT INTO new_order VALUES ($1, $2, $3)"
NO_ITEMS = (
    "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN (SELECT unnest($1::INTEGER[]))"
)
# S_QUANTITY drops by OL_QUANTITY, or by OL_QUANTITY - 91 when fewer than 10 would be left.
# DuckDB takes no parameter in RETURNING to pick the district's S_DIST_xx: one statement per
# district, each returning only its own (returning all ten cost 3x the CPU, measured).
NO_STOCK = {
    d: "UPDATE stock SET s_quantity = CASE WHEN s_quantity - $3 >= 10 THEN s_quantity - $3 "
    "ELSE s_quantity - $3 + 91 END, s_ytd = s_ytd + $3, s_order_cnt = s_order_cnt + 1, "
    "s_remote_cnt = s_remote_cnt + $4 WHERE s_w_id = $1 AND s_i_id = $2 "
    f"RETURNING s_quantity, s_dist_{d:02d}, s_data"
    for d in range(1, DISTRICTS + 1)
}
NO_LINES = (
    "INSERT INTO order_line SELECT $1, $2, $3, unnest($4::INTEGER[]), "
    "unnest($5::INTEGER[]), unnest($6::INTEGER[]), NULL, unnest($7::INTEGER[]), "
    "unnest($8::DECIMAL(6,2)[]), unnest($9::VARCHAR[])"
)


def new_order(cur, inp: ins.NewOrderInput) -> NewOrderResult:
    """Every line's STOCK on this partition: one local transaction."""
    try:
        with transaction(cur):
            result = new_order_home(cur, inp, lambda line: True, dict)
    except UnusedItem as exc:
        return NewOrderResult(exc.o_id, Decimal(0), rolled_back=True)
    return result


def new_order_home(cur, inp: ins.NewOrderInput, mine, remote_dists) -> NewOrderResult:
    """New-Order inside an open transaction, stopping short of COMMIT. mine(line): is this
    line's STOCK here; remote_dists(): {line index: S_DIST_xx} of the other lines, from the
    partitions that updated their STOCK (asked for only when there are such lines).
    UnusedItem: the unused item (1%) after the earlier lines' work: roll back."""
    w, d, lines = inp.w_id, inp.d_id, inp.lines
    ((w_tax,),) = cur.execute(NO_WAREHOUSE, [w]).fetchall()
    ((o_id, d_tax),) = cur.execute(NO_DISTRICT, [w, d]).fetchall()
    ((discount, _, _),) = cur.execute(NO_CUSTOMER, [w, d, inp.c_id]).fetchall()
    cur.execute(NO_ORDER, [o_id, d, w, inp.c_id, len(lines), int(inp.all_local)])
    cur.execute(NO_NEW_ORDER, [o_id, d, w])
    ids = [x.i_id for x in lines]
    items = {row[0]: row for row in cur.execute(NO_ITEMS, [ids]).fetchall()}
    elsewhere = {} if all(mine(x) for x in lines) else remote_dists()
    amounts, dist_info = [], []
    for k, line in enumerate(lines):
        if line.i_id not in items:
            raise UnusedItem(o_id)
        if mine(line):
            dist_info.extend(stock_lines(cur, w, d, [line]))
        else:
            dist_info.append(elsewhere[k])
        amounts.append(line.quantity * items[line.i_id][1])
    cur.execute(
        NO_LINES,
        [o_id, d, w, list(range(1, len(lines) + 1)), ids,
         [x.supply_w_id for x in lines], [x.quantity for x in lines], amounts, dist_info],
    )  # fmt: skip
    total = sum(amounts, Decimal(0)) * (1 - discount) * (1 + w_tax + d_tax)
    return NewOrderResult(o_id, total, rolled_back=False)


def stock_lines(cur, home_w: int, d_id: int, lines) -> list[str]:
    """Update the STOCK of each line (the +91 rule); each line's S_DIST_xx of district d_id."""
    out = []
    for line in lines:
        remote = int(line.supply_w_id != home_w)
        ((_, dist, _),) = cur.execute(
            NO_STOCK[d_id], [line.supply_w_id, line.i_id, line.quantity, remote]
        ).fetchall()
        out.append(dist)
    return out


class UnusedItem(Exception):
    """The order's unused item: New-Order rolls back (clause 2.4.2.3)."""

    def __init__(self, o_id: int):
        self.o_id = o_id


# --- Payment (clause 2.5.2) and the customer by last name ----------------------------------


@dataclass(frozen=True)
class PaymentResult:
    c_id: int
    c_balance: Decimal
    h_date: datetime.datetime  # the HISTORY row's H_DATE: with its keys, finds the row again


# c_id breaks a tie of two equal random first names: the same customer every time
BY_LAST_NAME = (
    "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 "
    "ORDER BY c_first, c_id"
)
PAY_WAREHOUSE = "UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1 RETURNING w_name"
PAY_DISTRICT = (
    "UPDATE district SET d_ytd = d_ytd + $3 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_name"
)
# A bad-credit customer's C_DATA gets the payment's numbers at its left, cut to 500.
PAY_CUSTOMER = (
    "UPDATE customer SET c_balance = c_balance - $4, c_ytd_payment = c_ytd_payment + $4, "
    "c_payment_cnt = c_payment_cnt + 1, c_data = CASE WHEN c_credit = 'BC' THEN "
    "left(concat_ws(' ', c_id, c_d_id, c_w_id, $5, $6, $4, c_data), $7) ELSE c_data END "
    "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 RETURNING c_balance"
)
PAY_HISTORY = (
    "INSERT INTO history VALUES ($1, $2, $3, $4, $5, current_localtimestamp(), $6, $7) "
    "RETURNING h_date"
)


def customer_id(cur, c: ins.Customer) -> int:
    """c's number; by last name, the one at position ceil(n / 2) of those with that name
    in order of C_FIRST (clause 2.5.2.2). LookupError when none has the name."""
    if c.c_id is not None:
        return c.c_id
    ids = cur.execute(BY_LAST_NAME, [c.w_id, c.d_id, c.c_last]).fetchall()
    if not ids:
        raise LookupError(f"no customer named {c.c_last} in district {c.d_id} of {c.w_id}")
    return ids[(len(ids) - 1) // 2][0]


def payment(cur, inp: ins.PaymentInput) -> PaymentResult:
    """The customer on this partition: one local transaction."""
    with transaction(cur):
        return payment_home(cur, inp, lambda: pay_customer(cur, inp))


def payment_home(cur, inp: ins.PaymentInput, customer) -> PaymentResult:
    """Payment inside an open transaction, stopping short of COMMIT; customer() pays the
    customer (here, or on its partition) and returns (C_ID, C_BALANCE)."""
    amount = _money(inp.amount_cents)
    ((w_name,),) = cur.execute(PAY_WAREHOUSE, [inp.w_id, amount]).fetchall()
    ((d_name,),) = cur.execute(PAY_DISTRICT, [inp.w_id, inp.d_id, amount]).fetchall()
    c_id, balance = customer()
    c = inp.customer
    ((h_date,),) = cur.execute(
        PAY_HISTORY,
        [c_id, c.d_id, c.w_id, inp.d_id, inp.w_id, amount, f"{w_name}    {d_name}"],
    ).fetchall()
    return PaymentResult(c_id, balance, h_date)


def pay_customer(cur, inp: ins.PaymentInput) -> tuple[int, Decimal]:
    """The customer's part of a Payment: (C_ID, the new C_BALANCE)."""
    c, amount = inp.customer, _money(inp.amount_cents)
    c_id = customer_id(cur, c)
    ((balance,),) = cur.execute(
        PAY_CUSTOMER, [c.w_id, c.d_id, c_id, amount, inp.d_id, inp.w_id, C_DATA_MAX]
    ).fetchall()
    return c_id, balance


# --- Order-Status (clause 2.6.2) -----------------------------------------------------------


@dataclass(frozen=True)
class OrderStatusResult:
    c_id: int
    o_id: int
    lines: int


OS_LAST_ORDER = (
    "SELECT o_id, o_entry_d, o_carrier_id FROM orders "
    "WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1"
)
OS_LINES = (
    "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
    "WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3"
)
OS_CUSTOMER = (
    "SELECT c_balance, c_first, c_middle, c_last FROM customer "
    "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"
)


def order_status(cur, inp: ins.OrderStatusInput) -> OrderStatusResult:
    c = inp.customer
    with transaction(cur):  # read-only: one snapshot
        c_id = customer_id(cur, c)
        cur.execute(OS_CUSTOMER, [c.w_id, c.d_id, c_id]).fetchall()
        ((o_id, _, _),) = cur.execute(OS_LAST_ORDER, [c.w_id, c.d_id, c_id]).fetchall()
        lines = cur.execute(OS_LINES, [c.w_id, c.d_id, o_id]).fetchall()
    return OrderStatusResult(c_id, o_id, len(lines))


# --- Delivery (clause 2.7.4) ---------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryResult:
    delivered: tuple[tuple[int, int], ...]  # (d_id, o_id)
    skipped: tuple[int, ...]  # districts without an undelivered order


DL_OLDEST = "SELECT min(no_o_id) FROM new_order WHERE no_w_id = $1 AND no_d_id = $2"
DL_NEW_ORDER = (
    "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3 RETURNING no_o_id"
)
DL_ORDER = (
    "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 "
    "RETURNING o_c_id"
)
DL_LINES = (
    "UPDATE order_line SET ol_delivery_d = current_localtimestamp() "
    "WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 RETURNING ol_amount"
)
# RETURNING as Payment's update of CUSTOMER has it: DuckDB 2.0.1 misses the write-write
# conflict between an UPDATE with RETURNING and one without on the same row of a table with
# a primary key, and both commit: one update is lost (measured; tests/test_tpcc_run.py
# holds every table's updates to one form).
DL_CUSTOMER = (
    "UPDATE customer SET c_balance = c_balance + $4, c_delivery_cnt = c_delivery_cnt + 1 "
    "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 RETURNING c_balance"
)


def deliver_one(cur, w: int, d: int, carrier: int) -> int | None:
    """Deliver district d's oldest new order; its O_ID, or None when it has none."""
    ((o_id,),) = cur.execute(DL_OLDEST, [w, d]).fetchall()
    if o_id is None:
        return None
    cur.execute(DL_NEW_ORDER, [w, d, o_id]).fetchall()
    ((c_id,),) = cur.execute(DL_ORDER, [w, d, o_id, carrier]).fetchall()
    amounts = cur.execute(DL_LINES, [w, d, o_id]).fetchall()
    cur.execute(DL_CUSTOMER, [w, d, c_id, sum((a for (a,) in amounts), Decimal(0))]).fetchall()
    return o_id


def delivery(cur, inp: ins.DeliveryInput, one_transaction: bool = False) -> DeliveryResult:
    """The batch: one order per district. one_transaction: all ten in one database
    transaction, else one per district (clause 2.7.4.2 allows either)."""
    delivered, skipped = [], []
    outer = transaction(cur) if one_transaction else contextlib.nullcontext()
    with outer:
        for d in range(1, DISTRICTS + 1):
            inner = contextlib.nullcontext() if one_transaction else transaction(cur)
            with inner:
                o_id = deliver_one(cur, inp.w_id, d, inp.carrier_id)
            if o_id is None:
                skipped.append(d)
            else:
                delivered.append((d, o_id))
    return DeliveryResult(tuple(delivered), tuple(skipped))


# --- Stock-Level (clause 2.8.2) ------------------------------------------------------------


SL_NEXT = "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2"
SL_LOW = (
    "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock "
    "ON s_w_id = ol_w_id AND s_i_id = ol_i_id "
    "WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $3 - $4 "
    "AND s_quantity < $5"
)


def stock_level(cur, inp: ins.StockLevelInput) -> int:
    """How many distinct items of the district's last 20 orders are below the threshold."""
    with transaction(cur):
        ((next_o_id,),) = cur.execute(SL_NEXT, [inp.w_id, inp.d_id]).fetchall()
        ((low,),) = cur.execute(
            SL_LOW, [inp.w_id, inp.d_id, next_o_id, STOCK_LEVEL_ORDERS, inp.threshold]
        ).fetchall()
    return low


RUNNERS = {
    ins.NewOrderInput: new_order,
    ins.PaymentInput: payment,
    ins.OrderStatusInput: order_status,
    ins.DeliveryInput: delivery,
    ins.StockLevelInput: stock_level,
}


def run(cur, inp, placement: Placement, part: int):
    """Run one transaction on partition part; CrossPartition if it needs another."""
    others = inp.partitions(placement) - {part}
    if others:
        raise CrossPartition(
            f"{type(inp).__name__} touches partition(s) {sorted(others)}, not only {part}"
        )
    return RUNNERS[type(inp)](cur, inp)
