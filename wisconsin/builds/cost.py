"""What building a set of tables will cost, said before it starts: rows, disk, time, memory.

The constants are measurements on the reference machine (docs/performance.md, "Build cost
model"); `benchmarks/scale.py` prints the measured values next to these estimates, so a
drifting constant shows up there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wisconsin import store

# One partition file holds the table and its copy (the join's second table), uncompressed:
# 466 B per row for both (1 M and 2 M rows per partition: 465.8 B/row), plus DuckDB's
# header and metadata blocks (~0.9 MB per file at 10 k rows).
FILE_BYTES_PER_ROW = 466
FILE_BYTES_FIXED = 1 << 20
# After a bench's rounds a partition file has grown by the select and join results and the
# update's rewritten blocks (DuckDB does not return freed blocks to the file system):
# measured +1.3 MB per partition of 5 k and 10 k rows after one round, +2.1 MB at 20 k; a
# 1 M-row partition after 60 rounds had grown by less than 0.4 MB (its build left free blocks).
RUN_GROWTH_BYTES = 3 << 19  # 1.5 MiB
# While building: the builder's selected rows (1% of the rows, 230 B each) until the
# manifest is written.
BUILD_EXTRA_BYTES_PER_ROW = 3
# While running: the select and join result tables (1% of the rows each) and the WAL of
# the update (1% of the rows changed, checkpointed at 16 MB) live in the partition file.
# A budget, not a measurement: 10% of the file plus one WAL checkpoint threshold.
RUN_HEADROOM_FRACTION = 0.10
RUN_HEADROOM_FIXED = 16 << 20
# generate+store per build worker, rows/s on one core (benchmarks/store.py, median of
# 1 M-row partitions on the reference machine, quiet).
BUILD_ROWS_PER_S_PER_CORE = 400_000
# Fixed costs: starting the spawned build workers (Python, DuckDB, Arrow imports), and per
# partition (a DuckDB file created, checkpointed, fsynced; the marker). Measured: the tiny
# preset's 30 F partitions (80 k rows) took 8.8 s with 2 workers.
WORKER_START_SECONDS = 1.5
PARTITION_SECONDS = 0.5
# Sequential write bandwidth of the reference machine's disk (benchmarks/store.py measures
# it with fsync); a build is never faster than writing its files.
WRITE_BYTES_PER_S = 400e6
# Peak RSS of one build worker beyond its DuckDB memory limit (Python, Arrow batches).
WORKER_RSS_EXTRA = 300 << 20


@dataclass(frozen=True)
class Estimate:
    tables: tuple[str, ...]  # tables to build (complete ones are reused and cost nothing)
    rows: int
    partitions: int
    disk_bytes: int  # files + build-time extras + run headroom
    seconds: float
    peak_rss_bytes: int  # per build worker
    jobs: int
    free_bytes: int
    where: str  # the filesystem the free space was measured on
    files_bytes: int = 0  # the finished partition files: what the tables keep on disk

    @property
    def fits(self) -> bool:
        return self.disk_bytes <= self.free_bytes


def partition_bytes(rows: int) -> int:
    """Disk a partition of `rows` rows needs: file, build extras and run headroom."""
    file = file_bytes(rows)
    return int(
        file + BUILD_EXTRA_BYTES_PER_ROW * rows + RUN_HEADROOM_FRACTION * file + RUN_HEADROOM_FIXED
    )


def file_bytes(rows: int) -> int:
    """Size of a finished partition file of `rows` rows (table and copy)."""
    return FILE_BYTES_FIXED + FILE_BYTES_PER_ROW * rows


def run_file_bytes(rows: int) -> int:
    """Size of a partition file of `rows` rows after a bench's rounds (what a bench uses)."""
    return file_bytes(rows) + RUN_GROWTH_BYTES


def build_seconds(rows: int, partitions: int, written: int, jobs: int, cores: int) -> float:
    """CPU-bound (one core per build worker) or bound by writing `written` bytes, whichever
    is slower."""
    workers = max(1, min(jobs, cores, partitions))
    cpu = (rows / BUILD_ROWS_PER_S_PER_CORE + partitions * PARTITION_SECONDS) / workers
    return WORKER_START_SECONDS + max(cpu, written / WRITE_BYTES_PER_S)


# The block pool is touched page by page on first use: 128 MB cost ~10 k more page faults
# per build worker than 64 MB, for no gain in speed (docs/performance.md, "Build system time").
BUILD_MEMORY_BASE_MB = 64


def build_memory_mb(rows: int, jobs: int) -> int:
    """DuckDB memory_limit (MB) of one build worker writing a partition of `rows` rows.

    64 MB plus 24 B per row (the primary key's index), capped at 60% of RAM split between
    the concurrent workers. A build streams rows into its file and DuckDB evicts written
    blocks, so more memory is not faster: it only touches more pages (system time) and, for
    partitions larger than RAM, risks the machine (docs/performance.md, "Build system time").
    """
    import psutil

    share = int(psutil.virtual_memory().total * 0.6 / max(jobs, 1)) // 2**20
    return max(BUILD_MEMORY_BASE_MB, min(share, BUILD_MEMORY_BASE_MB + rows * 24 // 2**20))


def _existing_parent(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def estimate(
    data_dir: str | os.PathLike,
    parts: Sequence[tuple[store.TableSpec, int]],
    jobs: int,
    cores: int | None = None,
) -> Estimate:
    """The cost of building these (table, partition) pairs under data_dir."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    sizes = []
    for s, p in parts:
        lo, hi = store.generator.partition_range(s.n, p, s.partitions)
        sizes.append(hi - lo)
    rows = sum(sizes)
    disk = sum(partition_bytes(r) for r in sizes)
    where = _existing_parent(Path(data_dir))
    largest = max(sizes, default=0)
    return Estimate(
        tables=tuple(dict.fromkeys(s.name for s, _ in parts)),
        rows=rows,
        partitions=len(sizes),
        disk_bytes=disk,
        seconds=(
            build_seconds(rows, len(sizes), sum(map(file_bytes, sizes)), jobs, cores)
            if sizes
            else 0.0
        ),
        peak_rss_bytes=(build_memory_mb(largest, jobs) << 20) + WORKER_RSS_EXTRA if sizes else 0,
        jobs=jobs,
        free_bytes=shutil.disk_usage(where).free,
        where=str(where),
        files_bytes=sum(map(file_bytes, sizes)),
    )


def estimate_tables(
    data_dir: str | os.PathLike,
    specs: Sequence[store.TableSpec],
    jobs: int,
    cores: int | None = None,
) -> Estimate:
    """The cost of building every partition of `specs` from scratch."""
    return estimate(data_dir, [(s, p) for s in specs for p in range(s.partitions)], jobs, cores)


def size(b: float) -> str:
    """Bytes in decimal units, e.g. 1.2 GB."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(b) < 1000 or unit == "TB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1000
    raise AssertionError("unreachable")


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def describe(e: Estimate, disk: bool = True) -> str:
    """One line: what the build will cost (disk: with the tables' size on disk)."""
    return (
        f"cost: {', '.join(e.tables)}: {e.rows:,} rows in {e.partitions} "
        f"partition{'s' * (e.partitions != 1)}, "
        + (
            f"~{size(e.files_bytes)} of tables on disk ({size(e.free_bytes)} free), "
            if disk
            else ""
        )
        + f"~{_duration(e.seconds)} to build with {e.jobs} "
        f"worker{'s' * (e.jobs != 1)}, ~{size(e.peak_rss_bytes)} peak memory per worker"
    )


def refusal(e: Estimate) -> str:
    """The one-line refusal of a build that does not fit the free disk."""
    return (
        f"building {', '.join(e.tables)} needs ~{size(e.disk_bytes)} of disk (its "
        f"~{size(e.files_bytes)} of tables, plus room to build and run) but {e.where} has "
        f"{size(e.free_bytes)} free; choose a smaller size or another --data"
    )


def memory_per_job(jobs: int, rows: int) -> str:
    """DuckDB memory_limit of one build worker (build_memory_mb says why)."""
    return f"{build_memory_mb(rows, jobs)}MB"
