"""TPC-C's distributed transactions on the OLTP core's two-phase commit (oltp.twophase).

A New-Order line supplied by a warehouse of another partition updates that partition's
STOCK; a Payment by a customer of another partition pays that partition's CUSTOMER. The
remote partition prepares its half (and its marker, tpcc_applied, in the same transaction);
the home partition writes the decision (tpcc_decided: the remote half as it must be redone,
with the customer's number resolved) in its own transaction and commits: that commit is the
decision. recover() redoes every decided half whose marker is missing (after a kill -9 of a
partition between the home's commit and its own), exactly once.
"""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal

import duckdb

from wisconsin.oltp.twophase import rollback
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc import transactions as tx
from wisconsin.workloads.tpcc.schema import connect

DDL = (
    "CREATE TABLE IF NOT EXISTS tpcc_decided (txid BIGINT, remote INTEGER, half VARCHAR NOT NULL, "
    "PRIMARY KEY (txid, remote))",
    "CREATE TABLE IF NOT EXISTS tpcc_applied (txid BIGINT PRIMARY KEY)",
)
DECIDE = "INSERT INTO tpcc_decided VALUES ($1, $2, $3)"
APPLIED = "INSERT INTO tpcc_applied VALUES ($1)"


def create(con) -> None:
    for ddl in DDL:
        con.execute(ddl)


def stock_half(txid: int, home_w: int, d_id: int, lines: list[ins.Line]) -> tuple:
    """The prepare message of New-Order lines supplied from another partition."""
    return ("prepare", txid, "stock", home_w, d_id,
            [(x.i_id, x.supply_w_id, x.quantity) for x in lines])  # fmt: skip


def customer_half(txid: int, inp: ins.PaymentInput, c_id: int | None = None) -> tuple:
    """The prepare message of a Payment's customer on another partition; with c_id, the
    decided form (by number, as the prepare resolved it)."""
    c = inp.customer
    number, name = (c_id, None) if c_id is not None else (c.c_id, c.c_last)
    return ("prepare", txid, "customer", c.w_id, c.d_id, number, name, inp.w_id, inp.d_id,
            inp.amount_cents)  # fmt: skip


def _payment(msg) -> ins.PaymentInput:
    _, _, _, c_w, c_d, c_id, c_last, w_id, d_id, cents = msg
    return ins.PaymentInput(w_id, d_id, ins.Customer(c_w, c_d, c_id, c_last), cents)


def _apply(cur, msg):
    """Do a half inside the open transaction; what the home needs back."""
    if msg[2] == "stock":
        lines = [ins.Line(i, w, q) for i, w, q in msg[5]]
        return tx.stock_lines(cur, msg[3], msg[4], lines)
    c_id, balance = tx.pay_customer(cur, _payment(msg))
    return (c_id, str(balance))


def prepare(cur, msg):
    """Begin, do the half and its marker, leave it open (the peer session's prepare)."""
    cur.execute("BEGIN")
    try:
        value = _apply(cur, msg)
        cur.execute(APPLIED, [msg[1]])
    except BaseException:
        rollback(cur)
        raise
    return value


def redo(cur, msg) -> bool:
    """Apply a decided half that did not commit; False if it already had."""
    cur.execute("BEGIN")
    try:
        if cur.execute("SELECT 1 FROM tpcc_applied WHERE txid = $1", [msg[1]]).fetchall():
            cur.execute("ROLLBACK")
            return False
        _apply(cur, msg)
        cur.execute(APPLIED, [msg[1]])
        cur.execute("COMMIT")
    except BaseException:
        rollback(cur)
        raise
    return True


def decide(cur, remote: int, msg) -> None:
    """The decision record, in the home transaction (before its COMMIT)."""
    cur.execute(DECIDE, [msg[1], remote, json.dumps(msg)])


def balance_of(value) -> tuple[int, Decimal]:
    return int(value[0]), Decimal(value[1])


def recover(paths) -> int:
    """Redo every decided remote half whose marker is missing; how many were redone."""
    cons = [connect(p) for p in paths]
    redone = 0
    try:
        for con in cons:
            create(con)
        for con in cons:
            decided = con.execute("SELECT txid, remote, half FROM tpcc_decided").fetchall()
            for txid, remote, half in decided:
                target = cons[remote]
                if target.execute("SELECT 1 FROM tpcc_applied WHERE txid = $1", [txid]).fetchall():
                    continue
                redone += redo(target.cursor(), tuple(json.loads(half)))
    finally:
        for con in cons:
            with contextlib.suppress(duckdb.Error):
                con.close()
    return redone
