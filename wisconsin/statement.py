"""A statement as plain data: what a workload hands an engine, and what the update journal
records for a pending update. Imports nothing of wisconsin: every layer may use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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


class BindableQuery(Protocol):
    """What an engine needs of a workload's query to make its statements: the query binds
    itself to the table references the engine names (its SQL is the workload's)."""

    name: str
    transactional: bool  # the cross-partition update: one statement per partition, 2PC

    @property
    def result_table(self) -> str: ...

    def bind(
        self, n: int, table: str, copy: str = "", result: str = "", scan_variant: str = "",
        delta: int | None = None,
    ) -> Statement: ...  # fmt: skip
