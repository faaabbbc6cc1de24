"""The published Tandem numbers, as data.

Source: S. Englert, J. Gray, T. Kocher, P. Shah, "A Benchmark of NonStop SQL Release 2
Demonstrating Near-Linear Speedup and Scaleup on Large Databases", Tandem Technical Report
89.4 (1989), section "The SQL Release 2 Benchmark": Table 1 (table sizes) and Table 2
(speedup and scaleup ratios of all audited tests, from the auditor's report [Sawyer]).

Ratios are as published: relative to the two-partition case (1.00 at P = 2). The report's
graphs double the speedups to treat two processors as a speedup of two; Table 2 does not,
and neither does this module. A missing entry means the test was not run or not audited
(Join was only run for CLX speedup; the CLX has at most eight processors).
"""

from __future__ import annotations

from dataclasses import dataclass

from wisconsin.workloads.wisconsin import queries

PARTITIONS = (2, 4, 8, 16)
SYSTEMS = ("VLX", "CLX")


@dataclass(frozen=True)
class TableSizes:
    """Table 1: rows of the F tables and rows per partition of the G tables."""

    f_rows: int
    g_rows_per_partition: int


# Table 1. The example below it says "F8 on the CLX consists of 2,441,400 rows" (305,180
# per partition); the table itself says 2,441,440. We keep the table's figure.
TABLE1: dict[str, TableSizes] = {
    "VLX": TableSizes(f_rows=8_000_000, g_rows_per_partition=1_000_000),
    "CLX": TableSizes(f_rows=2_441_440, g_rows_per_partition=420_000),
}

# Table 2, keyed by system -> kind ("F" speedup, "G" scaleup) -> query -> {P: ratio}.
TABLE2: dict[str, dict[str, dict[str, dict[int, float]]]] = {
    "VLX": {
        "F": {
            "scan": {2: 1.00, 4: 1.99, 8: 3.86, 16: 7.21},
            "select": {2: 1.00, 4: 1.99, 8: 3.87, 16: 7.31},
            "average": {2: 1.00, 4: 2.02, 8: 3.86, 16: 7.51},
            "update": {2: 1.00, 4: 2.00, 8: 3.67, 16: 7.00},
            "join": {},
        },
        "G": {
            "scan": {2: 1.00, 4: 1.00, 8: 1.01, 16: 1.05},
            "select": {2: 1.00, 4: 1.01, 8: 1.02, 16: 1.04},
            "average": {2: 1.00, 4: 1.00, 8: 1.03, 16: 1.05},
            "update": {2: 1.00, 4: 1.03, 8: 1.08, 16: 1.10},
            "join": {},
        },
    },
    "CLX": {
        "F": {
            "scan": {2: 1.00, 4: 1.95, 8: 3.70},
            "select": {2: 1.00, 4: 1.98, 8: 3.67},
            "average": {2: 1.00, 4: 1.97, 8: 3.86},
            "update": {2: 1.00, 4: 1.86, 8: 3.49},
            "join": {2: 1.00, 4: 1.99, 8: 3.82},
        },
        "G": {
            "scan": {2: 1.00, 4: 0.99, 8: 1.02},
            "select": {2: 1.00, 4: 1.01, 8: 1.06},
            "average": {2: 1.00, 4: 1.01, 8: 1.02},
            "update": {2: 1.00, 4: 0.98, 8: 1.04},
            "join": {},
        },
    },
}

# Row labels of Table 2, in its order.
QUERY_LABELS: dict[str, str] = {q.name: q.label for q in queries.REGISTRY.values()}


def published(system: str, kind: str, query: str) -> dict[int, float]:
    """Table 2 ratios for one system, kind and query ({} where not run or not audited)."""
    return dict(TABLE2[system][kind].get(query, {}))
