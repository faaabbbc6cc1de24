"""The OLTP core: what DebitCredit and TPC-C share, below the workloads.

Partition servers, one process per partition owning its DuckDB file (`node`, `servers`);
presumed-abort two-phase commit whose durable decision is the home partition's own commit
(`twophase`); terminals in closed and open modes with retries and the acknowledgement log
(`terminals`, `acklog`); response-time histograms (`histogram`); per-second series,
steadiness and intervals (`series`); failures said in one line (`failures`). A workload
brings its transactions, its decision and redo records, and its run file.
"""
