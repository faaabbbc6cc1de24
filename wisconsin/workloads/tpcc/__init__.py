"""TPC-C-derived OLTP workload (issue 46): the nine tables partitioned by warehouse, each
partition its own DuckDB file, the five transactions and the twelve consistency conditions.
Not an audited TPC-C (no tpmC): docs/tpcc.md lists what is implemented and the deviations.
Not yet in the workloads registry."""
