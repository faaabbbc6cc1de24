"""The partition writer: generator batches -> one DuckDB file (both tables), its content
digest and its expected answers, then a resume marker. Runs inside a builder process (the
local pool or a Dask worker) and depends only on its arguments, so any partition can be
(re)built alone; wisconsin.builds.plan decides which ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

from wisconsin import WisconsinError, atomic, generator, jsonfields
from wisconsin.builds import leftovers
from wisconsin.sqltext import db_path
from wisconsin.store import (
    COPY_TABLE,
    RANGES,
    STORAGE,
    TABLE,
    ContentDigest,
    PartitionInfo,
    StoreError,
    TableSpec,
    pagecache,
    part_file,
    write_json_atomic,
)

# Rows per generated Arrow batch: 16 Ki rows (~3.4 MB of 208-byte rows) rather than 64 Ki.
# Measured on whole builds, together with the 64 MB block pool (cost.build_memory_mb): page
# faults -35%, system time -20%, same wall time; smaller buffers are recycled by the
# allocators rather than faulted in afresh (docs/performance.md, "Build system time").
# Content and digest do not depend on it.
BATCH_ROWS = 16384


def marker_file(part: int) -> str:
    """A finished partition's entry, written once its file is complete (the resume marker)."""
    return f"part-{part:03d}.json"


def ddl(name: str, primary_key: bool = True) -> str:
    ints = ", ".join(f"{c} INTEGER NOT NULL" for c in generator.COLUMNS[:13])
    strs = ", ".join(f"{c} VARCHAR NOT NULL" for c in generator.COLUMNS[13:])
    key = ", PRIMARY KEY (unique2)" if primary_key else ""
    return f"CREATE TABLE {name} ({ints}, {strs}{key})"


def build_config(memory_limit: str) -> dict:
    """DuckDB settings of a build worker's instance (docs/performance.md, "Build system time").

    `block_allocator_memory` makes DuckDB reuse one pool of block memory instead of
    allocating, touching and returning 256 KiB blocks over and over: without it the copy
    table's INSERT..SELECT alone took ~120 k minor page faults per 1 M rows, and system time
    was 50-70% of user time. The pool is freed when the connection closes.
    """
    return {
        "threads": 1,
        "memory_limit": memory_limit,
        "block_allocator_memory": memory_limit,
    }


def _holds_generated_rows(path: Path, entry: dict, checksum: str) -> bool:
    """Both tables of the file read back in full equal the generator's rows (entry's
    checksum was computed from the generated batches, never taken from a manifest)."""
    from wisconsin.store.check import verify_partition

    return all(not verify_partition(str(path), entry, t, checksum) for t in (TABLE, COPY_TABLE))


def _publish_verified(
    tmp: Path, final: Path, part: int, lo: int, hi: int, generated: str, checksum: str
) -> None:
    """Repair's publish: prove the rebuilt file, then replace only a file that is not
    already correct."""
    entry = dataclasses.asdict(PartitionInfo(part, final.name, lo, hi, hi - lo, generated))
    if not _holds_generated_rows(tmp, entry, checksum):
        tmp.unlink(missing_ok=True)
        raise StoreError(
            f"partition {part}: the rebuilt file does not read back as the generated rows; "
            f"{final.name} was left as it was"
        )
    if final.exists() and _holds_generated_rows(final, entry, checksum):
        tmp.unlink()  # it already holds the generated rows: never replace a correct file
        return
    _replace(tmp, final)


def _replace(tmp: Path, final: Path) -> None:
    """Rename a finished partition file over final. A WAL left beside final (a killed
    update) holds changes to the old file: beside the new one DuckDB would refuse to open
    it ("WAL does not match database file"), so it goes first. Dying in between leaves the
    old file without its changes: still not the generated rows, so rebuilt again."""
    Path(f"{final}.wal").unlink(missing_ok=True)
    atomic.publish(tmp, final, overwrite=True)


def build_partition(
    table_dir: str,
    n: int,
    seed: int,
    part: int,
    parts: int,
    memory_limit: str = "2GB",
    progress: Callable[[int], None] | None = None,
    batch_rows: int = BATCH_ROWS,
    keep_selected: bool = False,
    config: dict | None = None,
    drop_pages: bool = True,
    checksum: str = STORAGE["checksum"],
    verify: bool = False,
) -> dict:
    """Generate one partition into its DuckDB file; return its PartitionInfo as a dict.

    Runs inside a worker process (local pool or a Dask worker); depends only on its
    arguments, so any partition can be (re)built alone. The expected answers are derived
    from the same rows on the way (PartitionInfo.answers). keep_selected also writes the
    selected rows to part-NNN.selected.arrow, from which the local build derives the
    whole table's digest before removing them. config replaces build_config(memory_limit)
    (benchmarks compare settings with it). checksum names the digests' hash (a repair
    passes its manifest's). verify (repair): the rebuilt file is read back in full and must
    hold the generated rows before it replaces anything, and a file already holding them is
    never replaced (the manifest may be what is wrong).
    """
    from wisconsin.store import expect

    lo, hi = generator.partition_range(n, part, parts)
    tdir = Path(table_dir)
    final = tdir / part_file(part)
    tmp = tdir / (part_file(part) + ".tmp")
    selected = expect.selected_file(tdir, part)
    selected_tmp = selected.with_name(selected.name + ".tmp")
    # what a killed build of this partition left (its WAL, DuckDB's temporary directory..)
    leftovers.clear(tdir, part=part, verb="the build")
    digest = ContentDigest(checksum)
    answers = expect.PartAnswers(n, checksum)
    chosen_out = (
        pa.ipc.new_stream(str(selected_tmp), generator.arrow_schema()) if keep_selected else None
    )
    rows = _generated(n, seed, (lo, hi), batch_rows, digest, answers, chosen_out, progress)
    _write_file(tmp, config or build_config(memory_limit), rows, chosen_out, drop_pages)
    _publish(tmp, final, part, (lo, hi), digest, checksum, verify)
    if chosen_out is not None:
        # before the marker: a finished partition has it
        atomic.publish(selected_tmp, selected, overwrite=True)
    info = PartitionInfo(
        index=part,
        file=final.name,
        lo=lo,
        hi=hi,
        rows=hi - lo,
        checksum=digest.hexdigest(),
        answers=answers.as_dict(),
    )
    _write_marker(tdir, info, n, seed, parts, checksum)
    return dataclasses.asdict(info)


def _generated(
    n: int,
    seed: int,
    span: tuple[int, int],
    batch_rows: int,
    digest: ContentDigest,
    answers,
    chosen_out,
    progress: Callable[[int], None] | None,
) -> Iterator[pa.RecordBatch]:
    """The partition's rows (span: lo, hi) in batches, digested and answered on the way;
    the selected rows also go to chosen_out when they are kept."""
    for b in generator.generate(n, seed, *span, batch_rows=batch_rows):
        digest.update(b)
        chosen = answers.update(b)
        if chosen_out is not None:
            chosen_out.write_batch(chosen)
        if progress is not None:
            progress(b.num_rows)
        yield b


def _write_file(tmp: Path, config: dict, rows, chosen_out, drop_pages: bool) -> None:
    """Both tables into a fresh DuckDB file at tmp; chosen_out (the selected rows, when
    kept) is closed with it."""
    import duckdb  # imported here: workers are spawned, and the coordinator may not need it

    # Keep the file's written pages from piling up in the page cache while DuckDB writes
    # (pagecache.WrittenPagesDropper says why); drop_pages=False for benchmarks only.
    dropping = pagecache.WrittenPagesDropper([tmp, Path(str(tmp) + ".wal")])
    with dropping if drop_pages else contextlib.nullcontext():
        con = duckdb.connect(db_path(tmp), config=config)
        try:
            _load_tables(con, rows)
        finally:
            con.close()
            if chosen_out is not None:
                chosen_out.close()


def _publish(tmp, final, part, span, digest: ContentDigest, checksum: str, verify) -> None:
    """The written file into place once it holds every generated row; verify (repair):
    read back first, and a file already holding the rows is never replaced."""
    lo, hi = span
    if digest.rows != hi - lo:
        raise StoreError(f"partition {part}: generated {digest.rows} rows, expected {hi - lo}")
    if not verify:
        _replace(tmp, final)  # fsynced, renamed, directory fsynced
    else:
        _publish_verified(tmp, final, part, lo, hi, digest.hexdigest(), checksum)


def _load_tables(con, rows: Iterator[pa.RecordBatch]) -> None:
    """Both tables of a fresh file: the generated rows, then their copy, then the keys."""
    con.execute("SET enable_progress_bar = false")  # workers must not draw on the terminal
    con.execute("PRAGMA force_compression='uncompressed'")
    # The PRIMARY KEY is added after the load: building its index over the loaded rows is
    # faster than maintaining it row by row (docs/performance.md). A duplicate key still
    # fails the build, at the ALTER instead of the INSERT.
    con.execute(ddl(TABLE, primary_key=False))
    con.execute(ddl(COPY_TABLE, primary_key=False))
    con.register(
        "generated_rows", pa.RecordBatchReader.from_batches(generator.arrow_schema(), rows)
    )
    con.execute(f"INSERT INTO {TABLE} SELECT * FROM generated_rows")
    con.unregister("generated_rows")
    con.execute(f"INSERT INTO {COPY_TABLE} SELECT * FROM {TABLE}")
    for name in (TABLE, COPY_TABLE):
        con.execute(f"ALTER TABLE {name} ADD PRIMARY KEY ({STORAGE['primary_key']})")
    con.execute("CHECKPOINT")


def _write_marker(
    tdir: Path, info: PartitionInfo, n: int, seed: int, parts: int, checksum: str
) -> None:
    """The resume marker: the partition's entry and what it was built from."""
    marker = dataclasses.asdict(info) | {
        "n": n,
        "seed": seed,
        "parts": parts,
        "generator_version": generator.GENERATOR_VERSION,
        "checksum_of": checksum,
    }
    write_json_atomic(tdir / marker_file(info.index), marker)


def finished_partition(table_dir: Path, spec: TableSpec, part: int) -> PartitionInfo | None:
    """The partition's entry if a previous build completed it for this very table."""
    marker = table_dir / marker_file(part)
    try:
        data = atomic.read_json(marker, "partition marker")
    except WisconsinError:
        return None
    if not isinstance(data, dict):
        return None  # damaged: the partition is rebuilt
    same = (
        data.get("n") == spec.n
        and data.get("seed") == spec.seed
        and data.get("parts") == spec.partitions
        and data.get("generator_version") == generator.GENERATOR_VERSION
        and data.get("checksum_of") == STORAGE["checksum"]  # else rebuilt: one hash per table
    )
    if not same or not (table_dir / part_file(part)).is_file():
        return None
    try:  # a damaged or hand-edited marker means "not finished", never a bad manifest entry
        info = jsonfields.read(PartitionInfo, data, ranges=RANGES)
    except jsonfields.FieldError:
        return None
    if (info.index, info.file) != (part, part_file(part)) or info.rows != info.hi - info.lo:
        return None
    return info
