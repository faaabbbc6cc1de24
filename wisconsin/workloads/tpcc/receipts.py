"""No acknowledged transaction lost: each C line of the acknowledgement log, found again in
the database by the transaction's own keys (with the specification's columns only).

A terminal's C line (oltp.acklog, fsynced before the terminal is told) carries a receipt:

- ``N w d c o n``: New-Order (w, d, o) of customer c with n lines: its ORDER row (O_C_ID = c,
  O_OL_CNT = n), n ORDER-LINE rows, and its NEW-ORDER row unless Delivery has since given
  it a carrier;
- ``R w d``: a New-Order rolled back (the unused item): nothing to find (its O_ID is reused);
- ``P w d cw cd c cents us``: Payment: a HISTORY row with those H_W_ID, H_D_ID, H_C_W_ID,
  H_C_D_ID, H_C_ID, H_AMOUNT and H_DATE (to the microsecond, as the insert returned it).
  No key column is added: acknowledged payments are matched to rows as multisets, so two
  alike would need two rows;
- ``D w carrier d:o,...`` (``-`` when no district had an order): Delivery: each order has
  O_CARRIER_ID = carrier, no NEW-ORDER row, and every line an OL_DELIVERY_D;
- ``O``, ``S``: Order-Status, Stock-Level (read-only: nothing to find).

Distributed halves are checked too: every decided half (tpcc_decided) applied on its
partition (tpcc_applied), and no half applied that no partition decided (presumed abort:
an undecided half never commits).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import duckdb
import pyarrow as pa

from wisconsin.oltp import acklog
from wisconsin.sqltext import db_path
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc.runfile import Receipts

RECORD = re.compile(
    r"B \d+ (?:new_order|payment|order_status|delivery|stock_level)|A \d+|C \d+"
    r"(?: N \d+ \d+ \d+ \d+ \d+| R \d+ \d+| P \d+ \d+ \d+ \d+ \d+ \d+ -?\d+"
    r"| D \d+ \d+ (?:\d+:\d+(?:,\d+:\d+)*|-)| O| S)?"
)
SHOWN = 10  # lost transactions named one by one; the rest counted
_EPOCH = dt.datetime(1970, 1, 1)


def micros(t: dt.datetime) -> int:
    """A TIMESTAMP as DuckDB returns it, in microseconds since the epoch."""
    return (t - _EPOCH) // dt.timedelta(microseconds=1)


def receipt(kind: str, inp, result) -> str:
    """What a committed transaction's C line adds after its txid."""
    if kind == ins.NEW_ORDER:
        if result.rolled_back:
            return f" R {inp.w_id} {inp.d_id}"
        return f" N {inp.w_id} {inp.d_id} {inp.c_id} {result.o_id} {len(inp.lines)}"
    if kind == ins.PAYMENT:
        c = inp.customer
        return (f" P {inp.w_id} {inp.d_id} {c.w_id} {c.d_id} {result.c_id} {inp.amount_cents}"
                f" {micros(result.h_date)}")  # fmt: skip
    if kind == ins.DELIVERY:
        orders = ",".join(f"{d}:{o}" for d, o in result.delivered) or "-"
        return f" D {inp.w_id} {inp.carrier_id} {orders}"
    return " O" if kind == ins.ORDER_STATUS else " S"


def has_log(log_dir: str | os.PathLike) -> bool:
    return any(Path(log_dir).glob(acklog.LOG_GLOB))


_NO_LOST = """
SELECT a.txid, a.w, a.d, a.o, CASE WHEN o.o_id IS NULL THEN 'no ORDER row'
  WHEN coalesce(l.n, 0) <> a.n THEN 'ORDER-LINE rows ' || coalesce(l.n, 0) || ' of ' || a.n
  ELSE 'neither NEW-ORDER row nor carrier' END
FROM ack_no a
LEFT JOIN all_orders o ON o.o_w_id = a.w AND o.o_d_id = a.d AND o.o_id = a.o
  AND o.o_c_id = a.c AND o.o_ol_cnt = a.n
LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) AS n FROM all_lines
  WHERE (ol_w_id, ol_d_id, ol_o_id) IN (SELECT (w, d, o) FROM ack_no) GROUP BY ALL) l
  ON l.ol_w_id = a.w AND l.ol_d_id = a.d AND l.ol_o_id = a.o
LEFT JOIN all_new n ON n.no_w_id = a.w AND n.no_d_id = a.d AND n.no_o_id = a.o
WHERE o.o_id IS NULL OR coalesce(l.n, 0) <> a.n OR (n.no_o_id IS NULL AND o.o_carrier_id IS NULL)
ORDER BY a.txid"""
_PAY_LOST = """
SELECT a.txid, a.w, a.d, a.c, a.k - coalesce(h.k, 0) FROM
 (SELECT w, d, cw, cd, c, cents, us, count(*) AS k, min(txid) AS txid FROM ack_p GROUP BY ALL) a
LEFT JOIN (SELECT h_w_id, h_d_id, h_c_w_id, h_c_d_id, h_c_id, CAST(h_amount * 100 AS BIGINT)
  AS cents, epoch_us(h_date) AS us, count(*) AS k FROM all_history GROUP BY ALL) h
  ON h.h_w_id = a.w AND h.h_d_id = a.d AND h.h_c_w_id = a.cw AND h.h_c_d_id = a.cd
  AND h.h_c_id = a.c AND h.cents = a.cents AND h.us = a.us
WHERE coalesce(h.k, 0) < a.k ORDER BY a.txid"""
_DL_LOST = """
SELECT a.txid, a.w, a.d, a.o, CASE WHEN o.o_id IS NULL THEN 'no ORDER row'
  WHEN o.o_carrier_id IS DISTINCT FROM a.carrier THEN 'O_CARRIER_ID ' || coalesce(
  CAST(o.o_carrier_id AS VARCHAR), 'null') || ', not ' || a.carrier
  WHEN n.no_o_id IS NOT NULL THEN 'its NEW-ORDER row is still there'
  ELSE 'a line without OL_DELIVERY_D' END
FROM ack_d a
LEFT JOIN all_orders o ON o.o_w_id = a.w AND o.o_d_id = a.d AND o.o_id = a.o
LEFT JOIN all_new n ON n.no_w_id = a.w AND n.no_d_id = a.d AND n.no_o_id = a.o
LEFT JOIN (SELECT DISTINCT ol_w_id, ol_d_id, ol_o_id FROM all_lines WHERE ol_delivery_d IS NULL
  AND (ol_w_id, ol_d_id, ol_o_id) IN (SELECT (w, d, o) FROM ack_d)) u
  ON u.ol_w_id = a.w AND u.ol_d_id = a.d AND u.ol_o_id = a.o
WHERE o.o_id IS NULL OR o.o_carrier_id IS DISTINCT FROM a.carrier OR n.no_o_id IS NOT NULL
  OR u.ol_o_id IS NOT NULL ORDER BY a.txid"""


def _tables(acked: dict[int, tuple]) -> dict[str, pa.Table]:
    """The receipts as three tables of keys (one row per delivered order for Delivery)."""
    cols = {"ack_no": ("txid", "w", "d", "c", "o", "n"),
            "ack_p": ("txid", "w", "d", "cw", "cd", "c", "cents", "us"),
            "ack_d": ("txid", "w", "carrier", "d", "o")}  # fmt: skip
    rows: dict[str, list] = {name: [] for name in cols}
    for txid, fields in acked.items():
        if fields and fields[0] == "N":
            rows["ack_no"].append((txid, *map(int, fields[1:])))
        elif fields and fields[0] == "P":
            rows["ack_p"].append((txid, *map(int, fields[1:])))
        elif fields and fields[0] == "D" and fields[3] != "-":
            w, carrier = int(fields[1]), int(fields[2])
            for pair in fields[3].split(","):
                d, o = pair.split(":")
                rows["ack_d"].append((txid, w, carrier, int(d), int(o)))
    return {
        name: pa.table({c: pa.array([r[i] for r in rows[name]], pa.int64())
                        for i, c in enumerate(cols[name])})
        for name in cols
    }  # fmt: skip


def _lost(con, acked: dict[int, tuple]) -> list[tuple[int, str]]:
    for name, table in _tables(acked).items():
        con.register(name, table)
    out = []
    for txid, w, d, o, why in con.execute(_NO_LOST).fetchall():
        out.append((txid, f"New-Order txid {txid} (w {w}, d {d}, o {o}): {why}"))
    for txid, w, d, c, k in con.execute(_PAY_LOST).fetchall():
        many = f"{k} HISTORY rows" if k > 1 else "its HISTORY row"
        out.append((txid, f"Payment txid {txid} (w {w}, d {d}, customer {c}): {many} missing"))
    for txid, w, d, o, why in con.execute(_DL_LOST).fetchall():
        out.append((txid, f"Delivery txid {txid} (w {w}, d {d}, o {o}): {why}"))
    return out


def _halves(con, parts: list[int]) -> tuple[list, list]:
    """(decided halves as (txid, remote), applied halves as (txid, partition)) of the
    partitions that have the two-phase commit's tables (one never served has neither)."""
    if not parts:
        return [], []
    decided = " UNION ALL ".join(f"SELECT txid, remote FROM p{i}.tpcc_decided" for i in parts)
    applied = " UNION ALL ".join(f"SELECT txid, {i} FROM p{i}.tpcc_applied" for i in parts)
    return con.execute(decided).fetchall(), con.execute(applied).fetchall()


def look_up(paths: dict[int, str], acked: dict[int, tuple]) -> dict:
    """Read-only, on the machine that holds paths ({partition: file}): which of the
    receipts acked (their rows on these partitions) are lost, and these partitions' decided
    and applied remote halves. What a host reports; summarize() combines the reports."""
    con = duckdb.connect(config={"threads": 1})
    try:
        for i, path in paths.items():
            con.execute(f"ATTACH ? AS p{i} (READ_ONLY)", [db_path(path)])
        served = sorted(
            int(db[1:])
            for (db,) in con.execute(
                "SELECT database_name FROM duckdb_tables() WHERE table_name = 'tpcc_applied'"
            ).fetchall()
            if db.startswith("p")
        )
        for view, table in (("all_orders", "orders"), ("all_lines", "order_line"),
                            ("all_new", "new_order"), ("all_history", "history")):  # fmt: skip
            union = " UNION ALL ".join(f"SELECT * FROM p{i}.{table}" for i in paths)
            con.execute(f"CREATE TEMP VIEW {view} AS {union}")
        lost = _lost(con, acked)
        decided, applied = _halves(con, served)
    finally:
        con.close()
    return {"lost": lost, "decided": decided, "applied": applied}


def route(acked: dict[int, tuple], placement) -> tuple[dict[int, dict], list]:
    """Each receipt with rows to find, to the partition of its warehouse (a New-Order's
    rows, a Payment's HISTORY row and a Delivery's orders are all at the home warehouse):
    ({partition: {txid: fields}}, (txid, line) of receipts naming no partition's warehouse)."""
    out: dict[int, dict] = {p: {} for p in range(placement.partitions)}
    nowhere = []
    for txid, fields in acked.items():
        if fields and fields[0] in "NPD":
            w = int(fields[1])
            if 1 <= w <= placement.warehouses:
                out[placement.partition_of(w)][txid] = fields
            else:
                kind = {"N": "New-Order", "P": "Payment", "D": "Delivery"}[fields[0]]
                nowhere.append(
                    (txid, f"{kind} txid {txid} (w {w}): no partition has warehouse {w}")
                )
    return out, nowhere


def read_log(log_dir: str | os.PathLike) -> acklog.Outcomes:
    """One log directory's records (on a cluster, each host's: merge() them)."""
    return acklog.read_log(log_dir, RECORD)


def merge(logs) -> acklog.Outcomes:
    """The records of several hosts' log directories, as one."""
    acked: dict[int, tuple] = {}
    for log in logs:
        acked.update(log.acknowledged)
    return acklog.Outcomes(
        frozenset().union(*(log.begun for log in logs)),
        acked,
        frozenset().union(*(log.aborted for log in logs)),
    )


def summarize(log: acklog.Outcomes, reports: list[dict], lost_elsewhere=()) -> Receipts:
    """The Receipts of a log against the hosts' reports (look_up's): lost receipts named in
    txid order; a decided half missing when its remote reports no such applied half, an
    applied half orphaned when no partition decided it (presumed abort)."""
    lost = sorted([*lost_elsewhere, *(tuple(x) for r in reports for x in r["lost"])])
    decided = {tuple(x) for r in reports for x in r["decided"]}
    applied = {tuple(x) for r in reports for x in r["applied"]}
    keyed = sum(1 for f in log.acknowledged.values() if f and f[0] in "NPD")
    lost_txids = {txid for txid, _ in lost}
    lines = [text for _, text in lost]
    shown = tuple(lines[:SHOWN]) + (
        (f"and {len(lines) - SHOWN} more",) if len(lines) > SHOWN else ()
    )
    return Receipts(
        acknowledged=len(log.acknowledged), with_keys=keyed, found=keyed - len(lost_txids),
        lost=shown, lost_count=len(lost_txids), in_doubt=len(log.in_doubt),
        aborted=len(log.aborted), halves_missing=len(decided - applied),
        halves_orphaned=len(applied - decided),
    )  # fmt: skip


def check(paths, log_dir: str | os.PathLike) -> Receipts:
    """Read the logs and every partition file (read-only, servers stopped); never writes."""
    log = read_log(log_dir)
    return summarize(log, [look_up(dict(enumerate(map(str, paths))), log.acknowledged)])
