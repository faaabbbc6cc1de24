"""Table builds: one planner (wisconsin.builds.plan: reuse / resume / build), two executors
(.local: a process pool on this machine; .dask_cluster: each partition on its cluster
worker) and one partition writer (.writer: generator batches -> DuckDB file, digest and
expected answers). Repair (.repair) rebuilds damaged partitions with the same pieces."""

from wisconsin.builds.plan import BuildResult, Progress, build_tables, default_jobs
from wisconsin.builds.repair import RepairResult, plan_repair, repair_table

__all__ = [
    "BuildResult",
    "Progress",
    "RepairResult",
    "build_tables",
    "default_jobs",
    "plan_repair",
    "repair_table",
]
