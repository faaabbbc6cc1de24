"""What the runner needs of a workload's queries. The workload hands the runner an object of
this shape (RunOptions.catalog); the runner and the engines never import a workload."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from wisconsin.statement import BindableQuery


class TimedQuery(BindableQuery, Protocol):
    label: str
    scan: bool  # the full scan: --scan-variant applies, every execution profiled
    writes_result: bool
    # (query, engine, manifest, expect, step, scan_variant) -> (rows, answer); raises
    # wisconsin.VerificationError on a wrong answer
    check: Callable
    check_state: Callable | None  # the update: the table's state after it and its undo
    expected_rows: Callable  # (TableExpect) -> the rows its answer counts


class QueryCatalog(Protocol):
    scan_variants: tuple[str, ...]
    default_scan_variant: str
    update_delta: int  # what the update adds; its undo passes it negated

    @property
    def default(self) -> tuple[str, ...]: ...  # the queries a run times unless told

    def names(self) -> tuple[str, ...]: ...

    def get(self, name: str) -> TimedQuery: ...  # an unknown name: WisconsinError

    def scan_settings(self, scan_variant: str) -> tuple[tuple[str, str], ...]: ...
