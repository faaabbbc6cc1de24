"""Build a TPC-C database: one DuckDB file per partition, built in parallel, and its manifest.

A database is a directory of ``part-NNN.duckdb`` files and a ``manifest.json`` written last
(atomically), so a directory without one was never completely built. Each partition is
built by its own spawned process (DuckDB is not fork-safe) under a temporary name and
renamed into place (wisconsin.atomic.writing): a half-built file is never read as a
partition. The database's lock (store.lock) is held throughout.

The builds executor (wisconsin.builds) writes Wisconsin tables (its writer digests and
derives answers of the Wisconsin generator's rows), so a TPC-C partition is built here, with
the same DuckDB settings (builds.writer.build_config) and the same rules: uncompressed
storage while loading, primary keys added after the rows are in.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import duckdb

from wisconsin import WisconsinError, atomic
from wisconsin.builds import default_jobs
from wisconsin.builds.writer import build_config
from wisconsin.jsonfields import utc_now
from wisconsin.sqltext import db_path
from wisconsin.store import StoreError, lock, read_typed_manifest
from wisconsin.workloads.tpcc import generate, rules
from wisconsin.workloads.tpcc.schema import (
    META_DDL,
    PRIMARY_KEYS,
    SPEC_SCALE,
    TABLES,
    Placement,
    Scale,
    add_primary_key,
    create_table,
    partition_file,
)

WORKLOAD = "tpcc"
MANIFEST = "manifest.json"
ACK_LOG = "logs"  # the drivers' acknowledgement logs: evidence about these tables
MANIFEST_VERSION = 1
BUILD_MEMORY = "2GB"  # per builder; two warehouses' rows and keys take a few hundred MB


@dataclass(frozen=True)
class TpccManifest:
    """What a TPC-C database's manifest.json holds."""

    workload: str
    schema_version: int
    partitions: int
    warehouses_per_partition: int
    customers_per_district: int
    items: int
    seed: int
    c_last: int  # C_LOAD of C_LAST (clause 2.1.6.1: a run's C_RUN is chosen against it)
    c_id: int
    ol_i_id: int
    generator_version: int
    files: tuple[str, ...]
    created_utc: str

    @property
    def placement(self) -> Placement:
        return Placement(self.partitions, self.warehouses_per_partition)

    @property
    def scale(self) -> Scale:
        return Scale(self.customers_per_district, self.items)

    @property
    def constants(self) -> rules.NURandC:
        return rules.NURandC(self.c_last, self.c_id, self.ol_i_id)


def new_manifest(placement: Placement, seed: int, scale: Scale) -> TpccManifest:
    c = rules.load_constants(seed)
    return TpccManifest(
        workload=WORKLOAD,
        schema_version=MANIFEST_VERSION,
        partitions=placement.partitions,
        warehouses_per_partition=placement.warehouses_per_partition,
        customers_per_district=scale.customers_per_district,
        items=scale.items,
        seed=seed,
        c_last=c.c_last,
        c_id=c.c_id,
        ol_i_id=c.ol_i_id,
        generator_version=generate.GENERATOR_VERSION,
        files=tuple(partition_file(".", p).name for p in range(placement.partitions)),
        created_utc=utc_now(),
    )


_RANGES = {
    TpccManifest: {
        "partitions": (lambda v: 1 <= v <= 1024, "1 to 1,024"),
        "warehouses_per_partition": (lambda v: 1 <= v <= 10_000, "1 to 10,000"),
        "customers_per_district": (lambda v: 10 <= v <= 3000, "10 to 3,000"),
        "items": (lambda v: 100 <= v <= 100_000, "100 to 100,000"),
        "seed": (lambda v: v >= 0, "a seed >= 0"),
    }
}


def read_manifest(db_dir: str | os.PathLike) -> TpccManifest:
    """The validated manifest, or StoreError in one line."""
    path = Path(db_dir) / MANIFEST
    m = read_typed_manifest(path, TpccManifest, MANIFEST_VERSION, _RANGES)
    want = tuple(partition_file(".", p).name for p in range(m.partitions))
    if m.workload != WORKLOAD or m.files != want:
        raise StoreError(f"{path}: not a valid TPC-C manifest (workload or files)")
    return m


def _insert(con: duckdb.DuckDBPyConnection, name: str, rows) -> None:
    con.register("tpcc_rows", rows)
    try:
        con.execute(f"INSERT INTO {name} SELECT * FROM tpcc_rows")
    finally:
        con.unregister("tpcc_rows")


def write_partition(path: Path, part: int, m: TpccManifest, memory_limit: str) -> None:
    """Create partition part's file at path (which must not exist): ITEM, then each of its
    warehouses' rows, the primary keys, its tpcc_meta row, a checkpoint."""
    con = duckdb.connect(db_path(path), config=build_config(memory_limit))
    try:
        con.execute("SET enable_progress_bar = false")
        # random strings: DuckDB's compression analysis doubled the load's CPU (2.4 vs
        # 1.1 s per warehouse, 2026-11-27) for 22% less disk
        con.execute("PRAGMA force_compression='uncompressed'")
        for name in TABLES:
            con.execute(create_table(name))
        con.execute(META_DDL)
        _insert(con, "item", generate.item_table(m.seed, m.scale))
        for w_id in m.placement.warehouses_of(part):
            for name, rows in generate.warehouse_tables(w_id, m.seed, m.scale).items():
                _insert(con, name, rows)
        for name in PRIMARY_KEYS:
            con.execute(add_primary_key(name))
        con.execute(
            "INSERT INTO tpcc_meta VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            [part, m.partitions, m.warehouses_per_partition, m.customers_per_district,
             m.items, m.seed, m.c_last, m.c_id, m.ol_i_id, m.generator_version],
        )  # fmt: skip
        con.execute("CHECKPOINT")
    finally:
        con.close()


def build_partition(db_dir: Path, part: int, m: TpccManifest, memory_limit: str) -> int:
    """Build partition part into its final name through a temporary one; returns part."""
    final = partition_file(db_dir, part)
    with atomic.writing(final, overwrite=True) as tmp:
        wal = Path(f"{tmp}.wal")
        wal.unlink(missing_ok=True)
        try:
            write_partition(tmp, part, m, memory_limit)
        except BaseException:
            wal.unlink(missing_ok=True)  # atomic.writing removes tmp, its side file is ours
            raise
    return part


def _leftovers(db_dir: Path) -> list[Path]:
    """What an earlier build left: partition files, their WALs, temporary names."""
    return sorted(
        p
        for pattern in ("part-*.duckdb", "part-*.duckdb.wal", ".part-*.tmp-*")
        for p in db_dir.glob(pattern)
    )


def build(
    db_dir: str | os.PathLike,
    placement: Placement,
    seed: int,
    scale: Scale = SPEC_SCALE,
    jobs: int | None = None,
    memory_limit: str = BUILD_MEMORY,
) -> TpccManifest:
    """Build every partition of a database afresh, min(jobs, P) at a time (default: the
    usable cores), under the database's lock; the manifest is written last."""
    if seed < 0:
        raise WisconsinError(f"seed must be >= 0, not {seed}")
    db_dir = Path(db_dir)
    m = new_manifest(placement, seed, scale)
    jobs = jobs or default_jobs()
    with lock.hold_tables([db_dir], create=True):
        (db_dir / MANIFEST).unlink(missing_ok=True)
        for old in _leftovers(db_dir):
            old.unlink()
        shutil.rmtree(ack_log_dir(db_dir), ignore_errors=True)  # of the tables it replaces
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(jobs, placement.partitions), mp_context=ctx) as pool:
            futures = [
                pool.submit(build_partition, db_dir, p, m, memory_limit)
                for p in range(placement.partitions)
            ]
            errors = []
            for p, f in enumerate(futures):
                try:
                    f.result()
                except BrokenProcessPool:
                    errors.append(f"partition {p}'s builder died")
                except (WisconsinError, duckdb.Error, OSError) as exc:
                    errors.append(f"partition {p}: " + str(exc).splitlines()[0])
        if errors:
            raise StoreError(f"{db_dir}: a partition's build failed: {errors[0]}")
        atomic.write_text(db_dir / MANIFEST, json.dumps(dataclasses.asdict(m), indent=1) + "\n")
    return m


def ack_log_dir(db_dir: str | os.PathLike) -> Path:
    """Where the partitions' drivers log what they acknowledged (read by receipts.check)."""
    return Path(db_dir) / ACK_LOG


def partition_paths(db_dir: str | os.PathLike, m: TpccManifest) -> list[Path]:
    return [Path(db_dir) / f for f in m.files]
