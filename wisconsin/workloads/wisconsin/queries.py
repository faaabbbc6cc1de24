"""The queries: one registry entry each (SQL, what it writes, how its answer is checked),
bound to one table's size. The runner and the engines ask the entry, never the name.

Adding a query: its SQL (sql/<name>.sql or inline) and one `register(Query(...))`.
Parameters are integers computed here (never user text), substituted into the SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from wisconsin import WisconsinError
from wisconsin.statement import Statement
from wisconsin.store.expect import UPDATE_DELTA, TableExpect, onepct_bound
from wisconsin.workloads.wisconsin import verify

SCAN_VARIANTS = ("full-row", "predicate-column", "as-written")
DEFAULT_SCAN_VARIANT = "full-row"
__all__ = ["UPDATE_DELTA", "onepct_bound"]  # re-exported: long-standing import paths


def _sql_dir():
    return resources.files(__package__) / "sql"  # one SQL file per query, beside this module


@dataclass(frozen=True)
class Query:
    """Everything the tool knows about one query."""

    name: str
    label: str  # as the spec's figures name it
    # (query, engine, manifest, expect, step, scan_variant) -> (rows, answer); raises
    # verify.VerificationError on a wrong answer
    check: Callable
    expected_rows: Callable[[TableExpect], int]  # the rows its answer counts
    sql: str = ""  # inline SQL; default: sql/<name>.sql
    writes_result: bool = False  # inserts into <name>_result, emptied before each execution
    # the cross-partition update: two-phase commit, then an untimed undo (delta negated);
    # check_state(engine, manifest, expect, applied) verifies the table after each
    transactional: bool = False
    check_state: Callable | None = None
    # the full scan: --scan-variant applies, and every timed execution is profiled (the
    # proof it read every row and column; a cold full-row one must read its data)
    scan: bool = False

    @property
    def result_table(self) -> str:
        return f"{self.name}_result" if self.writes_result else ""

    def text(self) -> str:
        return self.sql or _file_sql(self.name)

    def bind(
        self,
        n: int,
        table: str,
        copy: str = "",
        result: str = "",
        scan_variant: str = "",
        delta: int | None = None,
    ) -> Statement:
        """This query bound to a table of n rows (table/copy/result: SQL table references)."""
        return statement(
            self.name,
            n,
            table=table,
            copy=copy,
            result=result,
            scan_variant=scan_variant or DEFAULT_SCAN_VARIANT,
            delta=UPDATE_DELTA if delta is None else delta,
        )


REGISTRY: dict[str, Query] = {}


def register(q: Query) -> Query:
    if q.name in REGISTRY:
        raise WisconsinError(f"query {q.name!r} is already registered")
    REGISTRY[q.name] = q
    return q


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def get(name: str) -> Query:
    try:
        return REGISTRY[name]
    except KeyError:
        raise WisconsinError(f"unknown query {name!r}; choose from {', '.join(REGISTRY)}") from None


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


@cache
def _file_sql(query: str) -> str:
    return (_sql_dir() / f"{query}.sql").read_text()


def sql_text(query: str) -> str:
    return get(query).text()


for _q in (
    Query("scan", "Table Scan", verify.check_scan, lambda e: 0, scan=True),
    Query("select", "Select & Insert", verify.check_inserted, lambda e: e.selected,
          writes_result=True),
    Query("average", "Average", verify.check_average, lambda e: e.rows),
    Query("update", "Update", verify.check_update, lambda e: e.selected, transactional=True,
          check_state=verify.verify_update_state),
    Query("join", "Join", verify.check_inserted, lambda e: e.selected, writes_result=True),
):  # fmt: skip
    register(_q)
QUERIES = names()  # the paper's five, in its order (run files, CLI default, reports)


def scan_settings(scan_variant: str) -> tuple[tuple[str, str], ...]:
    """The DuckDB settings (SET name = value, for the scan statement only) of a scan variant:
    full-row disables the optimizers that would answer its always-false predicate from
    statistics or push it into the scan. Recorded in the run file (RunConfig.scan_settings)."""
    if scan_variant == "full-row":
        return (("disabled_optimizers", "statistics_propagation,filter_pushdown"),)
    return ()


def statement(
    query: str,
    n: int,
    table: str,
    copy: str = "",
    result: str = "",
    scan_variant: str = DEFAULT_SCAN_VARIANT,
    delta: int = UPDATE_DELTA,
) -> Statement:
    """Bind query to a table of n rows. table/copy/result are SQL table references."""
    params = {
        "table": table,
        "copy": copy,
        "result": result,
        "onepct_bound": onepct_bound(n),
        "delta": delta,
        "predicate": "",
    }
    settings: tuple[tuple[str, str], ...] = ()
    if get(query).scan:
        if scan_variant not in SCAN_VARIANTS:
            raise WisconsinError(
                f"unknown scan variant {scan_variant!r}; choose from {', '.join(SCAN_VARIANTS)}"
            )
        if scan_variant == "as-written":
            params["predicate"] = f"hundpct > {n}"
        elif scan_variant == "predicate-column":
            # random() makes the predicate opaque to statistics and zone maps; it is always
            # false because hundpct + 0 <= n - 1.
            params["predicate"] = f"hundpct + floor(random())::INTEGER > {n}"
        else:
            params["predicate"] = f"hundpct > {n}"
        settings = scan_settings(scan_variant)
    sql = "\n".join(
        line for line in sql_text(query).format(**params).splitlines() if not line.startswith("--")
    ).strip()
    return Statement(query=query, sql=sql, settings=settings, result_table=result)


def parse_queries(text: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(q.strip().lower() for q in text.split(",") if q.strip()))
    if not items:  # '' is not "every query": that is the option left out
        raise WisconsinError(
            f"--queries {text!r} names no query; choose from {', '.join(REGISTRY)}"
        )
    bad = [q for q in items if q not in REGISTRY]
    if bad:
        raise WisconsinError(f"unknown query {', '.join(bad)}; choose from {', '.join(REGISTRY)}")
    return items


class Catalog:
    """The Wisconsin queries as the runner sees them (measure's QueryCatalog): the runner and
    the engines are handed this object, and never import a workload."""

    scan_variants = SCAN_VARIANTS
    default_scan_variant = DEFAULT_SCAN_VARIANT
    update_delta = UPDATE_DELTA

    @property
    def default(self) -> tuple[str, ...]:
        return QUERIES

    def names(self) -> tuple[str, ...]:
        return names()  # registered now (a test may add one)

    def get(self, name: str) -> Query:
        return get(name)

    def scan_settings(self, scan_variant: str) -> tuple[tuple[str, str], ...]:
        return scan_settings(scan_variant)


CATALOG = Catalog()
