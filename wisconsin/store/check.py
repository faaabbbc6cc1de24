"""Checking a table's partition files against its manifest: the cheap check before timing
(a spread sample of blocks), the deep check of `info --deep` and repair (every block and the
content digest), and the foreign-or-damaged verdicts repair acts on."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from wisconsin import generator
from wisconsin.sqltext import db_path
from wisconsin.store import (
    STORAGE,
    TABLE,
    UPDATE_DELTA,
    Manifest,
    PartitionInfo,
    TableDamaged,
    checksum_of,
    content_digest,
    lock,
    partition_path,
    read_manifest,
)


def verify_partition(
    path: str, part: dict, table: str = TABLE, checksum: str = STORAGE["checksum"]
) -> list[str]:
    """Re-read one table of a partition file in full and compare its content digest with
    the manifest entry; return problems (the deep check)."""
    import duckdb

    p = PartitionInfo(**part)
    con, problems = _open_checked(path, p)
    if con is None:
        return problems
    try:
        problems = _shape_problems(con, p, table)
        if problems:
            return problems
        reader = con.sql(f"SELECT * FROM {table} ORDER BY unique2").to_arrow_reader(65536)
        if content_digest(reader, checksum) != p.checksum:
            problems.append(f"partition {p.index}: {table} content differs from the manifest")
        return problems
    except duckdb.Error as exc:
        return [f"partition {p.index}: {table} unreadable ({_first_line(exc)})"]
    finally:
        con.close()


def _open_checked(path: str, p: PartitionInfo):
    """(read-only connection, []) to a partition file, or (None, [the one-line problem])."""
    import duckdb

    if not Path(path).is_file():
        return None, [f"partition {p.index}: file {path} is missing"]
    try:
        con = duckdb.connect(db_path(path), read_only=True, config={"threads": 1})
    except duckdb.Error as exc:
        return None, [f"partition {p.index}: cannot open {path} ({_first_line(exc)})"]
    con.execute("SET enable_progress_bar = false")
    return con, []


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _shape_problems(con, p: PartitionInfo, table: str) -> list[str]:
    rows, lo, hi = con.execute(
        f"SELECT count(*), min(unique2), max(unique2) FROM {table}"
    ).fetchall()[0]
    if rows != p.rows or (rows and (lo != p.lo or hi != p.hi - 1)):
        return [
            f"partition {p.index}: {table} holds {rows} rows with keys {lo}..{hi}, "
            f"manifest says {p.rows} rows with keys {p.lo}..{p.hi - 1}"
        ]
    return []


# The database file layout of DuckDB 2.0 (storage format v1.x): three 4 KiB headers, then
# blocks of `block_size` bytes, each a little-endian uint64 checksum of the rest of the block.
_BLOCK_START = 3 * 4096
_CHECKSUM_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)
_SAMPLE_ROWS = 8  # rows compared with the generator at each end and in the middle
# Data blocks of each table of a partition whose checksums the check before timing reads: all
# of a table up to 128 blocks (32 MiB), else 128 spread evenly from its first to its last. So
# a run's start-up does not grow with the table (reading every block was most of its growth,
# 5.26x from 1 M to 8 M rows: docs/storage.md). DuckDB checksums every block it reads anyway,
# so a damaged block outside the sample stops the query that reads it, in one line; `info`
# reads every block.
CHECK_BLOCKS = 128


def _bad_blocks(path: str, block_size: int, blocks: Iterable[int]) -> list[int]:
    """Blocks whose stored checksum differs from DuckDB's checksum of their bytes
    (XOR of every 64-bit word times a constant, seeded with 5381). Reads each block once,
    without decoding it: I/O-bound."""
    bad = []
    with open(path, "rb") as fh:
        for b in sorted(blocks):
            fh.seek(_BLOCK_START + b * block_size)
            buf = fh.read(block_size)
            if len(buf) != block_size:
                bad.append(b)
                continue
            stored = np.frombuffer(buf, "<u8", count=1)[0]
            words = np.frombuffer(buf, "<u8", offset=8)
            with np.errstate(over="ignore"):
                got = np.bitwise_xor.reduce(words * _CHECKSUM_MULTIPLIER) ^ np.uint64(5381)
            if got != stored:
                bad.append(b)
    return bad


def _sample_keys(p: PartitionInfo) -> list[tuple[int, int]]:
    mid = p.lo + p.rows // 2
    ranges = [(p.lo, p.lo + _SAMPLE_ROWS), (mid, mid + _SAMPLE_ROWS), (p.hi - _SAMPLE_ROWS, p.hi)]
    return [(max(lo, p.lo), min(hi, p.hi)) for lo, hi in ranges]


def spread(blocks: list[int], count: int | None) -> list[int]:
    """All of blocks (sorted) if count is None or covers them, else count of them spread
    evenly from the first to the last."""
    ordered = sorted(blocks)
    if count is None or len(ordered) <= count:
        return ordered
    if count <= 1:
        return ordered[:count]
    last = len(ordered) - 1
    return [ordered[round(i * last / (count - 1))] for i in range(count)]


def check_partition(
    path: str,
    part: dict,
    n: int,
    seed: int,
    tables: tuple[str, ...],
    drift: bool = True,
    blocks_per_table: int | None = None,
) -> list[str]:
    """The cheap check (docs/storage.md): the file exists; DuckDB opens it (its headers and
    metadata blocks are checksummed as they are read); each table has the manifest's row
    count and key range; rows at both ends and in the middle equal the generator's (so the
    file belongs to this table: n, seed, P, generator version); each table's data blocks
    (every one, or blocks_per_table of them spread over the table: the check before timing
    passes CHECK_BLOCKS) pass DuckDB's own block checksum, read raw; and, if drift, column
    four is in its generated domain 0..3 (no update left applied or undone twice).
    Returns problems, one line each."""
    import duckdb

    p = PartitionInfo(**part)
    con, problems = _open_checked(path, p)
    if con is None:
        return problems
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0]
        problems: list[str] = []
        for table in tables:
            problems += _shape_problems(con, p, table)
            if problems:
                return problems
            blocks = con.execute(
                "SELECT list_distinct(flatten(list([block_id] || additional_block_ids))) "
                "FROM pragma_storage_info(?) WHERE block_id >= 0",
                [table],
            ).fetchall()[0][0]
            checked = spread(blocks or [], blocks_per_table)
            bad = _bad_blocks(path, block_size, checked)
            if bad:
                return [
                    f"partition {p.index}: {table} is corrupt ({len(bad)} of {len(checked)} "
                    f"blocks checked fail their checksum, first block {bad[0]})"
                ]
            # While an interrupted update is pending, `four` may still hold +-117 (recovery
            # settles it): compare it modulo the update's delta then.
            cols = (
                "*"
                if drift
                else f"* REPLACE (((four % {UPDATE_DELTA}) + {UPDATE_DELTA}) % {UPDATE_DELTA} AS four)"
            )
            for lo, hi in _sample_keys(p):
                want = content_digest(generator.generate(n, seed, lo, hi))
                got = content_digest(
                    con.sql(
                        f"SELECT {cols} FROM {table} WHERE unique2 >= {lo} AND unique2 < {hi} "
                        "ORDER BY unique2"
                    ).to_arrow_reader(65536)
                )
                if got != want:
                    return [
                        f"partition {p.index}: {table} rows {lo}..{hi - 1} are not this table's "
                        "generated rows (a foreign or modified partition)"
                    ]
        if drift:
            out = con.execute(
                f"SELECT count(*) FROM {tables[0]} WHERE four NOT BETWEEN 0 AND 3"
            ).fetchall()[0][0]
            if out:
                problems.append(
                    f"partition {p.index}: {out} rows of {tables[0]} have four outside 0..3 "
                    "(an update was left applied)"
                )
        return problems
    except duckdb.Error as exc:
        return [f"partition {p.index}: unreadable ({_first_line(exc)})"]
    finally:
        con.close()


def _check_args(m: Manifest, table_dir, p: PartitionInfo, deep: bool):
    return str(partition_path(table_dir, p)), dataclasses.asdict(p), m, deep


def check_one(
    path: str,
    part: dict,
    m: Manifest,
    deep: bool,
    drift: bool = True,
    blocks_per_table: int | None = None,
) -> list[str]:
    """Both tables of one partition file: the cheap check, and the deep one if asked."""
    tables = (m.table, m.copy_table)
    problems = check_partition(path, part, m.rows, m.seed, tables, drift, blocks_per_table)
    if deep and not problems:
        for table in tables:
            problems += verify_partition(path, part, table, checksum_of(m))
    return problems


def check_partitions(
    table_dir: str | os.PathLike,
    m: Manifest,
    deep: bool = False,
    jobs: int | None = None,
    blocks_per_table: int | None = None,
) -> dict[int, list[str]]:
    """{partition: problems} for every local partition of the table (in parallel); a
    partition on a cluster worker's disk is not checked here. deep adds the full content
    digest of both tables; blocks_per_table bounds the blocks checksummed (None: all). The
    drift check is left to recovery while an interrupted update is pending in the table's
    _txlog (recovery verifies full digests)."""
    from concurrent.futures import ThreadPoolExecutor

    pending = (Path(table_dir) / "_txlog").is_dir() and any(
        (Path(table_dir) / "_txlog").glob("*.json")
    )
    local = [p for p in m.parts if not p.worker]
    jobs = jobs or min(len(local), os.cpu_count() or 1) or 1
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            p.index: pool.submit(
                check_one, *_check_args(m, table_dir, p, deep), not pending, blocks_per_table
            )
            for p in local
        }
        return {i: f.result() for i, f in futures.items()}


def check_table(table_dir: str | os.PathLike, m: Manifest | None = None) -> Manifest:
    """Before a table is timed: TableDamaged in one line naming the first damaged, missing
    or foreign partition (and how to repair it). Checksums at most CHECK_BLOCKS blocks per
    table per partition, so the check does not grow with the table."""
    m = m or read_manifest(table_dir)
    found = check_partitions(table_dir, m, blocks_per_table=CHECK_BLOCKS)
    problems = {i: ps for i, ps in found.items() if ps}
    if problems:
        first = problems[min(problems)][0]
        more = f" ({len(problems)} partitions damaged)" if len(problems) > 1 else ""
        raise TableDamaged(
            f"{m.name}: {first}{more}; nothing was timed. Repair it with "
            f"`wisconsin repair {table_dir}`"
        )
    return m


# Shared: it opens partitions read-only, which would make a run's update fail to open them.
@lock.locked("table_dir", shared=True, table=True)
def verify_table(table_dir: str | os.PathLike, deep: bool = False) -> tuple[Manifest, list[str]]:
    """Read the manifest and check every local partition file against it (deep: also
    the full content digest of both tables)."""
    m = read_manifest(table_dir)
    found = check_partitions(table_dir, m, deep=deep)
    return m, [line for i in sorted(found) for line in found[i]]
