"""The twelve consistency conditions (clause 3.3.2.1 - 3.3.2.12) as SQL on one snapshot.

`check_partition(cur, scale)` checks one partition on an open connection, all twelve in one
read transaction (one snapshot). `check_database(paths, scale)` checks closed partition
files together: every condition per partition, and condition 10, the one whose rows can
span partitions (a payment's HISTORY row lives with the paying warehouse, H_W_ID, its
customer may live on another partition), with H_AMOUNT summed over every partition's
HISTORY.

Each check returns (ok, detail): how many rows break it and the first of them.

Condition 11, as written, holds for the initial database only: every Delivery removes a
NEW-ORDER row and keeps its ORDER, so count(ORDER) - count(NEW-ORDER) grows by one per
delivered order. Given `delivered` (orders delivered per (w_id, d_id) since the load, as the
Delivery transactions reported them) it checks 2,100 + delivered instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from wisconsin.sqltext import db_path
from wisconsin.workloads.tpcc.schema import Scale

SHOWN = 3  # violating rows quoted in a detail

# Delivered order lines' amounts per customer (conditions 10 and 12).
_DELIVERED = (
    "SELECT o_w_id w, o_d_id d, o_c_id c, sum(ol_amount) s FROM orders JOIN order_line "
    "ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
    "WHERE ol_delivery_d IS NOT NULL GROUP BY ALL"
)
LOCAL_PAID = "SELECT h_c_w_id w, h_c_d_id d, h_c_id c, sum(h_amount) s FROM history GROUP BY ALL"

SQL = {
    1: (
        "W_YTD = sum(D_YTD) per warehouse",
        "SELECT w_id, w_ytd, s FROM warehouse LEFT JOIN (SELECT d_w_id, sum(d_ytd) s "
        "FROM district GROUP BY ALL) ON d_w_id = w_id WHERE s IS DISTINCT FROM w_ytd",
    ),
    2: (
        "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district",
        "SELECT d_w_id, d_id, d_next_o_id - 1, o.m, n.m FROM district "
        "LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) m FROM orders GROUP BY ALL) o "
        "ON o_w_id = d_w_id AND o_d_id = d_id "
        "LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) m FROM new_order GROUP BY ALL) n "
        "ON no_w_id = d_w_id AND no_d_id = d_id "
        "WHERE o.m IS DISTINCT FROM d_next_o_id - 1 OR n.m <> d_next_o_id - 1",
    ),  # n.m is NULL for a district without new orders: the clause does not apply
    3: (
        "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER per district",
        "SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1, count(*) FROM new_order "
        "GROUP BY ALL HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*)",
    ),
    4: (
        "sum(O_OL_CNT) = rows in ORDER-LINE per district",
        "SELECT d_w_id, d_id, o.s, l.n FROM district "
        "LEFT JOIN (SELECT o_w_id, o_d_id, sum(o_ol_cnt) s FROM orders GROUP BY ALL) o "
        "ON o_w_id = d_w_id AND o_d_id = d_id "
        "LEFT JOIN (SELECT ol_w_id, ol_d_id, count(*) n FROM order_line GROUP BY ALL) l "
        "ON ol_w_id = d_w_id AND ol_d_id = d_id WHERE o.s IS DISTINCT FROM l.n",
    ),
    5: (
        "O_CARRIER_ID is null iff the order is in NEW-ORDER",
        "SELECT o_w_id, o_d_id, o_id, o_carrier_id, no_o_id FROM orders LEFT JOIN new_order "
        "ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id "
        "WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)",
    ),
    6: (
        "O_OL_CNT = the order's rows in ORDER-LINE",
        "SELECT o_w_id, o_d_id, o_id, o_ol_cnt, coalesce(n, 0) FROM orders LEFT JOIN "
        "(SELECT ol_w_id, ol_d_id, ol_o_id, count(*) n FROM order_line GROUP BY ALL) "
        "ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
        "WHERE o_ol_cnt <> coalesce(n, 0)",
    ),
    7: (
        "OL_DELIVERY_D is null iff its order's O_CARRIER_ID is null",
        "SELECT ol_w_id, ol_d_id, ol_o_id, ol_number, ol_delivery_d, o_carrier_id "
        "FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id "
        "AND o_id = ol_o_id WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL)",
    ),
    8: (
        "W_YTD = sum(H_AMOUNT) per warehouse (H_W_ID)",
        "SELECT w_id, w_ytd, s FROM warehouse LEFT JOIN (SELECT h_w_id, sum(h_amount) s "
        "FROM history GROUP BY ALL) ON h_w_id = w_id WHERE s IS DISTINCT FROM w_ytd",
    ),
    9: (
        "D_YTD = sum(H_AMOUNT) per district (H_W_ID, H_D_ID)",
        "SELECT d_w_id, d_id, d_ytd, s FROM district LEFT JOIN (SELECT h_w_id, h_d_id, "
        "sum(h_amount) s FROM history GROUP BY ALL) ON h_w_id = d_w_id AND h_d_id = d_id "
        "WHERE s IS DISTINCT FROM d_ytd",
    ),
    10: (
        "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) per customer",
        f"WITH got AS ({_DELIVERED}), paid AS ({{paid}}) "
        "SELECT c_w_id, c_d_id, c_id, c_balance, coalesce(got.s, 0) - coalesce(paid.s, 0) "
        "FROM customer LEFT JOIN got ON got.w = c_w_id AND got.d = c_d_id AND got.c = c_id "
        "LEFT JOIN paid ON paid.w = c_w_id AND paid.d = c_d_id AND paid.c = c_id "
        "WHERE c_balance <> coalesce(got.s, 0) - coalesce(paid.s, 0)",
    ),
    12: (
        "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) per customer",
        f"WITH got AS ({_DELIVERED}) "
        "SELECT c_w_id, c_d_id, c_id, c_balance + c_ytd_payment, coalesce(got.s, 0) "
        "FROM customer LEFT JOIN got ON got.w = c_w_id AND got.d = c_d_id AND got.c = c_id "
        "WHERE c_balance + c_ytd_payment <> coalesce(got.s, 0)",
    ),
}
COND_11 = "count(ORDER) - count(NEW-ORDER) = 2,100 (+ orders delivered since) per district"
ORDERS_LESS_NEW = (
    "SELECT d_w_id, d_id, coalesce(o.n, 0) - coalesce(n.n, 0) FROM district "
    "LEFT JOIN (SELECT o_w_id, o_d_id, count(*) n FROM orders GROUP BY ALL) o "
    "ON o_w_id = d_w_id AND o_d_id = d_id "
    "LEFT JOIN (SELECT no_w_id, no_d_id, count(*) n FROM new_order GROUP BY ALL) n "
    "ON no_w_id = d_w_id AND no_d_id = d_id ORDER BY d_w_id, d_id"
)
CONDITIONS = tuple(range(1, 13))
TEXT = {n: text for n, (text, _) in SQL.items()} | {11: COND_11}


@dataclass(frozen=True)
class Verdict:
    number: int
    ok: bool
    detail: str


@dataclass
class Context:
    scale: Scale
    delivered: dict[tuple[int, int], int] | None = None  # (w_id, d_id) -> since the load
    paid: str = LOCAL_PAID  # condition 10's H_AMOUNT per customer


def _violations(number: int, rows: list[tuple]) -> Verdict:
    if not rows:
        return Verdict(number, True, "holds")
    shown = "; ".join(str(r) for r in rows[:SHOWN])
    return Verdict(number, False, f"{len(rows)} row(s) break it, e.g. {shown}")


def _condition_11(cur, ctx: Context) -> Verdict:
    bad = []
    for w, d, diff in cur.execute(ORDERS_LESS_NEW).fetchall():
        since = (ctx.delivered or {}).get((w, d), 0)
        want = ctx.scale.delivered_per_district + since
        if diff != want:
            bad.append((w, d, diff, want))
    return _violations(11, bad)


def _check(cur, number: int, ctx: Context) -> Verdict:
    if number == 11:
        return _condition_11(cur, ctx)
    sql = SQL[number][1]
    rows = cur.execute(sql.format(paid=ctx.paid) if number == 10 else sql).fetchall()
    return _violations(number, rows)


def check_partition(
    cur: duckdb.DuckDBPyConnection,
    scale: Scale,
    delivered: dict[tuple[int, int], int] | None = None,
    numbers: Sequence[int] = CONDITIONS,
    paid: str = LOCAL_PAID,
) -> list[Verdict]:
    """The conditions on the partition open on cur, in one read transaction. Condition 10
    counts this partition's HISTORY only (right while no payment crossed partitions)."""
    ctx = Context(scale, delivered, paid)
    cur.execute("BEGIN TRANSACTION READ ONLY")
    try:
        return [_check(cur, n, ctx) for n in numbers]
    finally:
        cur.execute("COMMIT")


def _paid_everywhere(aliases: list[str]) -> str:
    """Condition 10's H_AMOUNT per customer over every attached partition's HISTORY."""
    union = " UNION ALL ".join(
        f"SELECT h_c_w_id, h_c_d_id, h_c_id, h_amount FROM {a}.history" for a in aliases
    )
    return f"SELECT h_c_w_id w, h_c_d_id d, h_c_id c, sum(h_amount) s FROM ({union}) GROUP BY ALL"


def check_database(
    paths: Sequence[str | os.PathLike],
    scale: Scale,
    delivered: dict[tuple[int, int], int] | None = None,
    numbers: Sequence[int] = CONDITIONS,
) -> list[Verdict]:
    """The conditions over closed partition files, read-only, summed: a condition holds
    when it holds on every partition, with condition 10's H_AMOUNT summed over all."""
    con = duckdb.connect(config={"threads": 1})
    try:
        aliases = [f"p{i}" for i in range(len(paths))]
        for alias, path in zip(aliases, paths, strict=True):
            con.execute(f"ATTACH ? AS {alias} (READ_ONLY)", [db_path(path)])
        paid = _paid_everywhere(aliases)
        per_part = []
        for alias in aliases:
            con.execute(f"USE {alias}")
            per_part.append(check_partition(con, scale, delivered, numbers, paid))
    finally:
        con.close()
    return [_summed(n, [v[i] for v in per_part]) for i, n in enumerate(numbers)]


def _summed(number: int, verdicts: list[Verdict]) -> Verdict:
    bad = [(p, v) for p, v in enumerate(verdicts) if not v.ok]
    if not bad:
        return Verdict(number, True, f"holds on all {len(verdicts)} partition(s)")
    return Verdict(number, False, "; ".join(f"partition {p}: {v.detail}" for p, v in bad))


def failed(verdicts: Sequence[Verdict]) -> list[int]:
    return [v.number for v in verdicts if not v.ok]


def lines(verdicts: Sequence[Verdict]) -> list[str]:
    return [
        f"3.3.2.{v.number} {'ok    ' if v.ok else 'FAILED'} {TEXT[v.number]}: {v.detail}"
        for v in verdicts
    ]
