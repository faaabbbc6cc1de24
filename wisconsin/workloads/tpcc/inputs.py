"""The five transactions' inputs, drawn as clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1 and 2.8.1
say, and the deck that deals the mix (clause 5.2.4.2).

A terminal has a home warehouse (and, for Stock-Level, a district). Remote warehouses
(1% of order lines, 15% of payments) are drawn from all the database's warehouses but the
home one, on any partition: each input says which partitions it touches
(`partitions(placement)`), so the caller knows whether it is a plain local transaction (all
on the home partition) or a distributed one (later work).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from wisconsin.workloads.tpcc import rules
from wisconsin.workloads.tpcc.schema import (
    DISTRICTS,
    MAX_ORDER_LINES,
    MIN_ORDER_LINES,
    SPEC_SCALE,
    Placement,
    Scale,
)

NEW_ORDER, PAYMENT, ORDER_STATUS, DELIVERY, STOCK_LEVEL = (
    "new_order", "payment", "order_status", "delivery", "stock_level",
)  # fmt: skip
KINDS = (NEW_ORDER, PAYMENT, ORDER_STATUS, DELIVERY, STOCK_LEVEL)
# Cards per deck: Payment, Order-Status, Delivery and Stock-Level at the minimum
# percentages of clause 5.2.3, New-Order the rest (the measured one).
DECK = {NEW_ORDER: 45, PAYMENT: 43, ORDER_STATUS: 4, DELIVERY: 4, STOCK_LEVEL: 4}


@dataclass(frozen=True)
class Line:
    i_id: int
    supply_w_id: int
    quantity: int

    def partition(self, placement: Placement) -> int:
        """The partition whose STOCK this line updates."""
        return placement.partition_of(self.supply_w_id)


@dataclass(frozen=True)
class NewOrderInput:
    w_id: int
    d_id: int
    c_id: int
    lines: tuple[Line, ...]
    rollback: bool  # the last line's item is unused (1%): the transaction rolls back

    def partitions(self, placement: Placement) -> set[int]:
        return {placement.partition_of(self.w_id)} | {x.partition(placement) for x in self.lines}

    @property
    def supply_warehouses(self) -> set[int]:
        return {line.supply_w_id for line in self.lines}

    @property
    def all_local(self) -> bool:
        return self.supply_warehouses == {self.w_id}


@dataclass(frozen=True)
class Customer:
    """A customer chosen by number (c_id) or by last name (c_last), never both."""

    w_id: int
    d_id: int
    c_id: int | None = None
    c_last: str | None = None


@dataclass(frozen=True)
class PaymentInput:
    w_id: int
    d_id: int
    customer: Customer  # its warehouse is remote in 15% of payments
    amount_cents: int  # H_AMOUNT in [1.00 .. 5,000.00]

    def partitions(self, placement: Placement) -> set[int]:
        return {placement.partition_of(x) for x in (self.w_id, self.customer.w_id)}


@dataclass(frozen=True)
class OrderStatusInput:
    customer: Customer

    def partitions(self, placement: Placement) -> set[int]:
        return {placement.partition_of(self.customer.w_id)}


@dataclass(frozen=True)
class DeliveryInput:
    w_id: int
    carrier_id: int

    def partitions(self, placement: Placement) -> set[int]:
        return {placement.partition_of(self.w_id)}


@dataclass(frozen=True)
class StockLevelInput:
    w_id: int
    d_id: int
    threshold: int

    def partitions(self, placement: Placement) -> set[int]:
        return {placement.partition_of(self.w_id)}


class Inputs:
    """Draws inputs for terminals of one database: placement says which warehouses exist,
    constants are the run's NURand constants (rules.run_constants), rng the stream.
    local: a remote warehouse is drawn among the home partition's own (no transaction spans
    partitions: the benchmarks' local-only runs; the specification draws over all)."""

    def __init__(
        self,
        placement: Placement,
        constants: rules.NURandC,
        rng: np.random.Generator,
        scale: Scale = SPEC_SCALE,
        local: bool = False,
    ):
        self.placement, self.c, self.rng, self.scale = placement, constants, rng, scale
        self.local = local

    def _uniform(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi, endpoint=True))

    def _remote(self, w_id: int) -> int:
        """Another warehouse, uniformly; the home one when it is the only one."""
        pl = self.placement
        first, n = 1, pl.warehouses
        if self.local:
            first, n = pl.warehouses_of(pl.partition_of(w_id))[0], pl.warehouses_per_partition
        if n == 1:
            return w_id
        other = first - 1 + self._uniform(1, n - 1)
        return other + (other >= w_id)

    def _c_id(self) -> int:
        return int(
            rules.nurand(self.rng, rules.A_C_ID, 1, self.scale.customers_per_district, self.c.c_id)
        )

    def _customer(self, w_id: int, d_id: int) -> Customer:
        """60% by last name (NURand(255, 0, 999) with C_RUN), 40% by number."""
        if self._uniform(1, 100) <= 60:
            names = self.scale.last_names
            n = int(rules.nurand(self.rng, rules.A_C_LAST, 0, names - 1, self.c.c_last))
            return Customer(w_id, d_id, c_last=rules.last_name(n))
        return Customer(w_id, d_id, c_id=self._c_id())

    def new_order(self, w_id: int) -> NewOrderInput:
        d_id = self._uniform(1, DISTRICTS)
        c_id = self._c_id()
        count = self._uniform(MIN_ORDER_LINES, MAX_ORDER_LINES)
        rollback = self._uniform(1, 100) == 1
        lines = []
        for k in range(count):
            i_id = int(rules.nurand(self.rng, rules.A_OL_I_ID, 1, self.scale.items, self.c.ol_i_id))
            if rollback and k == count - 1:
                i_id = self.scale.items + 1  # an unused item number (clause 2.4.1.4)
            supply = w_id if self._uniform(1, 100) > 1 else self._remote(w_id)
            lines.append(Line(i_id, supply, self._uniform(1, 10)))
        return NewOrderInput(w_id, d_id, c_id, tuple(lines), rollback)

    def payment(self, w_id: int) -> PaymentInput:
        d_id = self._uniform(1, DISTRICTS)
        if self._uniform(1, 100) <= 85:
            c_w_id, c_d_id = w_id, d_id
        else:
            c_w_id, c_d_id = self._remote(w_id), self._uniform(1, DISTRICTS)
        customer = self._customer(c_w_id, c_d_id)
        return PaymentInput(w_id, d_id, customer, self._uniform(100, 500_000))

    def order_status(self, w_id: int) -> OrderStatusInput:
        return OrderStatusInput(self._customer(w_id, self._uniform(1, DISTRICTS)))

    def delivery(self, w_id: int) -> DeliveryInput:
        return DeliveryInput(w_id, self._uniform(1, 10))

    def stock_level(self, w_id: int, d_id: int) -> StockLevelInput:
        """d_id: the terminal's own district (clause 2.8.1.1)."""
        return StockLevelInput(w_id, d_id, self._uniform(10, 20))

    def draw(self, kind: str, w_id: int, d_id: int = 1):
        if kind == STOCK_LEVEL:
            return self.stock_level(w_id, d_id)
        return getattr(self, kind)(w_id)


def deck(rng: np.random.Generator, cards: dict[str, int] = DECK) -> Iterator[str]:
    """Transaction kinds, endlessly: each deck holds cards[kind] cards of each kind,
    shuffled; a new deck is shuffled when one is dealt out (clause 5.2.4.2)."""
    pack = np.array([k for k, n in cards.items() for _ in range(n)])
    while True:
        yield from (str(k) for k in rng.permutation(pack))
