"""Dense-unique Wisconsin-schema generator (numpy + pyarrow only).

Every column of row k (k = unique2, the clustering key) is a pure function of
(seed, n, k): any key range can be generated alone, so a partition never depends
on how many partitions the table has.

Public API (stable; wisconsin.store relies on it):

- COLUMNS: the 16 column names, in the spec's order.
- GENERATOR_VERSION: bumped whenever the rows for a given (seed, n) change.
- MAX_ROWS: the largest n supported.
- arrow_schema() -> pa.Schema
- partition_range(n, part, parts) -> (lo, hi): unique2 range [lo, hi) of a partition.
- generate(n, seed, lo, hi, batch_rows=...) -> Iterator[pa.RecordBatch]: rows with
  unique2 in [lo, hi), in key order, in batches of at most batch_rows rows.
"""

from wisconsin.generator.core import (
    COLUMNS,
    GENERATOR_VERSION,
    MAX_ROWS,
    arrow_schema,
    generate,
    partition_range,
)

__all__ = [
    "COLUMNS",
    "GENERATOR_VERSION",
    "MAX_ROWS",
    "arrow_schema",
    "generate",
    "partition_range",
]
