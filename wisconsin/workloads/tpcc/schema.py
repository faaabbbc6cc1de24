"""The nine TPC-C tables (clause 1.3), their sizes (clause 4.3.3.1) and who owns which
warehouse.

Names are the specification's in lower case, with a hyphen as an underscore: WAREHOUSE,
DISTRICT, CUSTOMER, HISTORY, NEW-ORDER (`new_order`), ORDER, ORDER-LINE (`order_line`), ITEM,
STOCK. ORDER is a reserved word in SQL, so it is the table `orders` (never a quoted
"order"). Columns keep the specification's names and order. Types: identifiers and counts
INTEGER; the specification's signed numerics with a fraction DECIMAL(p, s) (exact, so the
consistency sums are exact); date and time TIMESTAMP; text VARCHAR.

Warehouses are numbered 1..W as in the specification. With `Placement(P, Wp)`, partition p
owns the warehouses whose index w_id - 1 lies in [p*Wp, (p+1)*Wp), in its own DuckDB file,
with every row that hangs off them (districts, customers, history, orders, new orders, order
lines, stock). ITEM is the same 100,000 rows in every partition (read-only, so copying it
costs no coordination).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from wisconsin import WisconsinError
from wisconsin.sqltext import db_path

DISTRICTS = 10  # per warehouse
SPEC_CUSTOMERS = 3_000  # per district; also the orders per district
SPEC_ITEMS = 100_000  # ITEM rows; also STOCK rows per warehouse
SPEC_DELIVERED = 2_100  # per district, orders 1..2,100 are delivered at load
LAST_NAMES = 1_000  # C_LAST is built from a number in [0 .. 999]
MAX_ORDER_LINES = 15  # O_OL_CNT is in [5 .. 15]
MIN_ORDER_LINES = 5


@dataclass(frozen=True)
class Scale:
    """Rows per warehouse. The default is the specification's: 3,000 customers (and orders)
    per district, 100,000 items (and stock rows per warehouse).

    A TEST PARAMETER ONLY otherwise: tests build tiny databases with fewer customers and
    items. Every rule keeps its proportion: 70% of each district's orders are delivered at
    load (2,100 of 3,000), the last 30% are new orders (900), the first
    min(1,000, customers) customers take the last names in number order, the others and the
    transactions draw names in [0, last_names) and customers in [1, customers]. A database
    built at another scale is not TPC-C-sized, and says so (`is_spec`)."""

    customers_per_district: int = SPEC_CUSTOMERS
    items: int = SPEC_ITEMS

    def __post_init__(self):
        if self.customers_per_district < 10 or self.items < 100:
            raise WisconsinError("TPC-C scale: at least 10 customers per district and 100 items")
        if self.customers_per_district > SPEC_CUSTOMERS or self.items > SPEC_ITEMS:
            raise WisconsinError("TPC-C scale: at most the specification's sizes")

    @property
    def is_spec(self) -> bool:
        return (self.customers_per_district, self.items) == (SPEC_CUSTOMERS, SPEC_ITEMS)

    @property
    def orders_per_district(self) -> int:
        return self.customers_per_district

    @property
    def delivered_per_district(self) -> int:
        """Orders 1..this are delivered at load (2,100 at the specification's scale)."""
        return self.customers_per_district * SPEC_DELIVERED // SPEC_CUSTOMERS

    @property
    def new_orders_per_district(self) -> int:
        return self.orders_per_district - self.delivered_per_district

    @property
    def last_names(self) -> int:
        return min(LAST_NAMES, self.customers_per_district)


SPEC_SCALE = Scale()


@dataclass(frozen=True)
class Placement:
    """P partitions of Wp warehouses each: warehouse w_id lives on partition (w_id-1) // Wp."""

    partitions: int
    warehouses_per_partition: int

    def __post_init__(self):
        if self.partitions < 1 or self.warehouses_per_partition < 1:
            raise WisconsinError("TPC-C: at least 1 partition and 1 warehouse per partition")

    @property
    def warehouses(self) -> int:
        return self.partitions * self.warehouses_per_partition

    def partition_of(self, w_id: int) -> int:
        if not 1 <= w_id <= self.warehouses:
            raise WisconsinError(f"warehouse {w_id} is not in 1..{self.warehouses}")
        return (w_id - 1) // self.warehouses_per_partition

    def warehouses_of(self, part: int) -> range:
        first = part * self.warehouses_per_partition + 1
        return range(first, first + self.warehouses_per_partition)


_D = "DECIMAL"
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "warehouse": (
        ("w_id", "INTEGER"), ("w_name", "VARCHAR"), ("w_street_1", "VARCHAR"),
        ("w_street_2", "VARCHAR"), ("w_city", "VARCHAR"), ("w_state", "VARCHAR"),
        ("w_zip", "VARCHAR"), ("w_tax", f"{_D}(4,4)"), ("w_ytd", f"{_D}(12,2)"),
    ),
    "district": (
        ("d_id", "INTEGER"), ("d_w_id", "INTEGER"), ("d_name", "VARCHAR"),
        ("d_street_1", "VARCHAR"), ("d_street_2", "VARCHAR"), ("d_city", "VARCHAR"),
        ("d_state", "VARCHAR"), ("d_zip", "VARCHAR"), ("d_tax", f"{_D}(4,4)"),
        ("d_ytd", f"{_D}(12,2)"), ("d_next_o_id", "INTEGER"),
    ),
    "customer": (
        ("c_id", "INTEGER"), ("c_d_id", "INTEGER"), ("c_w_id", "INTEGER"),
        ("c_first", "VARCHAR"), ("c_middle", "VARCHAR"), ("c_last", "VARCHAR"),
        ("c_street_1", "VARCHAR"), ("c_street_2", "VARCHAR"), ("c_city", "VARCHAR"),
        ("c_state", "VARCHAR"), ("c_zip", "VARCHAR"), ("c_phone", "VARCHAR"),
        ("c_since", "TIMESTAMP"), ("c_credit", "VARCHAR"), ("c_credit_lim", f"{_D}(12,2)"),
        ("c_discount", f"{_D}(4,4)"), ("c_balance", f"{_D}(12,2)"),
        ("c_ytd_payment", f"{_D}(12,2)"), ("c_payment_cnt", "INTEGER"),
        ("c_delivery_cnt", "INTEGER"), ("c_data", "VARCHAR"),
    ),
    "history": (
        ("h_c_id", "INTEGER"), ("h_c_d_id", "INTEGER"), ("h_c_w_id", "INTEGER"),
        ("h_d_id", "INTEGER"), ("h_w_id", "INTEGER"), ("h_date", "TIMESTAMP"),
        ("h_amount", f"{_D}(6,2)"), ("h_data", "VARCHAR"),
    ),
    "new_order": (("no_o_id", "INTEGER"), ("no_d_id", "INTEGER"), ("no_w_id", "INTEGER")),
    "orders": (
        ("o_id", "INTEGER"), ("o_d_id", "INTEGER"), ("o_w_id", "INTEGER"),
        ("o_c_id", "INTEGER"), ("o_entry_d", "TIMESTAMP"), ("o_carrier_id", "INTEGER"),
        ("o_ol_cnt", "INTEGER"), ("o_all_local", "INTEGER"),
    ),
    "order_line": (
        ("ol_o_id", "INTEGER"), ("ol_d_id", "INTEGER"), ("ol_w_id", "INTEGER"),
        ("ol_number", "INTEGER"), ("ol_i_id", "INTEGER"), ("ol_supply_w_id", "INTEGER"),
        ("ol_delivery_d", "TIMESTAMP"), ("ol_quantity", "INTEGER"),
        ("ol_amount", f"{_D}(6,2)"), ("ol_dist_info", "VARCHAR"),
    ),
    "item": (
        ("i_id", "INTEGER"), ("i_im_id", "INTEGER"), ("i_name", "VARCHAR"),
        ("i_price", f"{_D}(5,2)"), ("i_data", "VARCHAR"),
    ),
    "stock": (
        ("s_i_id", "INTEGER"), ("s_w_id", "INTEGER"), ("s_quantity", "INTEGER"),
        *((f"s_dist_{d:02d}", "VARCHAR") for d in range(1, DISTRICTS + 1)),
        ("s_ytd", "INTEGER"), ("s_order_cnt", "INTEGER"), ("s_remote_cnt", "INTEGER"),
        ("s_data", "VARCHAR"),
    ),
}  # fmt: skip

# Clause 1.3's primary keys. HISTORY has none (the specification gives it none).
PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "warehouse": ("w_id",),
    "district": ("d_w_id", "d_id"),
    "customer": ("c_w_id", "c_d_id", "c_id"),
    "new_order": ("no_w_id", "no_d_id", "no_o_id"),
    "orders": ("o_w_id", "o_d_id", "o_id"),
    "order_line": ("ol_w_id", "ol_d_id", "ol_o_id", "ol_number"),
    "item": ("i_id",),
    "stock": ("s_w_id", "s_i_id"),
}

# Which columns may be NULL: an undelivered order's carrier and its lines' delivery date.
NULLABLE = {"o_carrier_id", "ol_delivery_d"}

# What a partition file says it is (read by the load's check and the independent check).
META_DDL = (
    "CREATE TABLE tpcc_meta (part INTEGER, partitions INTEGER, warehouses_per_partition "
    "INTEGER, customers_per_district INTEGER, items INTEGER, seed BIGINT, c_last INTEGER, "
    "c_id INTEGER, ol_i_id INTEGER, generator_version INTEGER)"
)


def create_table(name: str) -> str:
    """CREATE TABLE for one of TABLES, without its primary key (added after the load)."""
    cols = ", ".join(f"{c} {t}" + ("" if c in NULLABLE else " NOT NULL") for c, t in TABLES[name])
    return f"CREATE TABLE {name} ({cols})"


def add_primary_key(name: str) -> str:
    return f"ALTER TABLE {name} ADD PRIMARY KEY ({', '.join(PRIMARY_KEYS[name])})"


def partition_file(db_dir: str | os.PathLike, part: int) -> Path:
    return Path(db_dir) / f"part-{part:03d}.duckdb"


def connect(path: str | os.PathLike, read_only: bool = False, memory_limit: str = "1GB"):
    """One DuckDB instance of one thread on a partition file."""
    con = duckdb.connect(
        db_path(path), read_only=read_only, config={"threads": 1, "memory_limit": memory_limit}
    )
    con.execute("SET enable_progress_bar = false")
    return con
