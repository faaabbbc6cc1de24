"""The five queries: SQL text from queries/*.sql, bound to one table's size.

Parameters are integers computed here (never user text), substituted into the SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from wisconsin import WisconsinError

QUERIES = ("scan", "select", "average", "update", "join")
SCAN_VARIANTS = ("full-row", "predicate-column", "as-written")
DEFAULT_SCAN_VARIANT = "full-row"
UPDATE_DELTA = 117


@dataclass(frozen=True)
class Statement:
    """One SQL statement to run on each partition (or once over all of them)."""

    query: str
    sql: str
    settings: tuple[tuple[str, str], ...] = ()  # SET name = value for this statement only
    result_table: str = ""  # the table it inserts into, if any
    # Read DuckDB's profile (rows scanned, columns read)? It costs ~0.1-0.6 ms inside the
    # engine per statement, so the runner profiles the warm-up and every scan (the scan's
    # proof of reading), not the other timed repetitions.
    profile: bool = True


def _sql_dir():
    installed = resources.files("wisconsin") / "queries"
    if installed.is_dir():
        return installed
    # Editable install / source checkout: queries/ sits at the repository root.
    return Path(__file__).resolve().parent.parent / "queries"


@cache
def sql_text(query: str) -> str:
    if query not in QUERIES:
        raise WisconsinError(f"unknown query {query!r}; choose from {', '.join(QUERIES)}")
    return (_sql_dir() / f"{query}.sql").read_text()


def onepct_bound(n: int) -> int:
    """?tablesize/100 in the spec's integer arithmetic."""
    return n // 100


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
    if query == "scan":
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
            settings = (("disabled_optimizers", "statistics_propagation,filter_pushdown"),)
    sql = "\n".join(
        line for line in sql_text(query).format(**params).splitlines() if not line.startswith("--")
    ).strip()
    return Statement(query=query, sql=sql, settings=settings, result_table=result)


def parse_queries(text: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(q.strip().lower() for q in text.split(",") if q.strip()))
    bad = [q for q in items if q not in QUERIES]
    if bad or not items:
        raise WisconsinError(
            f"unknown query {', '.join(bad) or repr(text)}; choose from {', '.join(QUERIES)}"
        )
    return items
