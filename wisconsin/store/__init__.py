"""The partitioned store: one DuckDB database file per partition and a manifest written last.

Layout of a table directory (DATA/F4, DATA/G8, ...)::

    part-000.duckdb   partition 0: unique2 in [lo, hi), tables `wisconsin` and `wisconsin_copy`
    part-000.json     that partition's entry, written once its file is complete (resume marker)
    ...
    manifest.json     written last; a directory without it is never used as a table

See docs/storage.md for the contract.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import xxhash

from wisconsin import DamagedData, WisconsinError, atomic, generator, jsonfields
from wisconsin.jsonfields import utc_now

MANIFEST_VERSION = 1
TABLE = "wisconsin"
COPY_TABLE = "wisconsin_copy"  # the join's "copy of itself": a real second table, same rows
MANIFEST = "manifest.json"
# What the benchmark's update adds to `four` (its undo subtracts it): the one definition;
# the queries bind it, and the check before timing tolerates it while an update is pending.
UPDATE_DELTA = 117
KINDS = ("F", "G")
TABLE_NAME = re.compile(rf"[{''.join(KINDS)}][0-9]+")  # F4, G16: a table's directory
# Random 52-char strings do not compress; DuckDB's compression analysis only costs load time
# (measured ~5x slower loads). Uncompressed storage also keeps the scan honest: 200-byte rows.
STORAGE = {
    "compression": "uncompressed",
    "primary_key": "unique2",
    "sorted_by": "unique2",
    "checksum": "xxh3-128 of canonical column streams",
}
# A partition's checksum (PartitionInfo.checksum, the expected answers' digests) is the hash
# Manifest.storage["checksum"] names. xxh3-128 since 2026-11-23: 14x SHA-256's speed here,
# 0.12 s less per 1 M rows built or verified. A checksum guards against damage, not forgery:
# whoever can rewrite a partition file can rewrite the manifest beside it.
CHECKSUMS = {
    "xxh3-128 of canonical column streams": xxhash.xxh3_128,
    "sha256/128 of canonical column streams": hashlib.sha256,  # tables built before it
}


class StoreError(WisconsinError):
    """A table directory that is missing, incomplete, corrupt or of another table."""


class TableDamaged(StoreError, DamagedData):
    """A table or DebitCredit database whose check fails: damaged data, not bad input."""


@dataclass(frozen=True)
class PartitionInfo:
    index: int
    file: str  # relative to the table directory
    lo: int  # unique2 range [lo, hi)
    hi: int
    rows: int
    checksum: str  # content_digest of the rows in key order
    worker: str = ""  # cluster placement: the worker that owns the file ("" = local)
    host: str = ""
    path: str = ""  # absolute path on that worker's host
    # Expected answers derived by the builder from the rows it wrote (wisconsin.store.expect);
    # None in manifests written before they were stored.
    answers: dict | None = dataclasses.field(default=None, hash=False)


@dataclass(frozen=True)
class Manifest:
    schema_version: int
    name: str  # "F4"
    kind: str  # "F" | "G"
    rows: int  # n, the table size (?tablesize)
    partitions: int
    seed: int
    generator_version: str
    table: str
    copy_table: str
    storage: dict
    created_utc: str
    parts: tuple[PartitionInfo, ...]
    # Made when the table is built (a manifest without one gets derived_table_id): cluster
    # workers keep their files under the table's identity, so two data directories never
    # share one (wisconsin.builds.dask_cluster.worker_table_dir).
    table_id: str = ""
    # Whole-table expected answers (the selected rows' digest, key order); None if unknown.
    answers: dict | None = None

    @property
    def rows_per_partition(self) -> tuple[int, ...]:
        return tuple(p.rows for p in self.parts)


# Checked on read with the JSON types; the sums are checked after (read_manifest).
RANGES: jsonfields.Ranges = {
    Manifest: {"partitions": jsonfields.ONE},
    PartitionInfo: {"rows": jsonfields.COUNT},
}


@dataclass(frozen=True)
class TableSpec:
    """What to build: kind F (rows = table size) or G (rows = rows per partition)."""

    kind: str
    rows: int
    partitions: int
    seed: int

    @property
    def name(self) -> str:
        return f"{self.kind}{self.partitions}"

    @property
    def n(self) -> int:
        return self.rows if self.kind == "F" else self.rows * self.partitions


def validate_spec(spec: TableSpec) -> None:
    if spec.kind not in KINDS:
        raise StoreError(f"unknown table kind {spec.kind!r}: use F (speedup) or G (scaleup)")
    if spec.rows <= 0:
        raise StoreError(f"rows must be positive, got {spec.rows}")
    if spec.partitions <= 0:
        raise StoreError(f"partitions must be positive, got {spec.partitions}")
    if spec.partitions > spec.n:
        raise StoreError(f"{spec.name}: more partitions ({spec.partitions}) than rows ({spec.n})")
    if spec.n > generator.MAX_ROWS:
        raise StoreError(f"{spec.name}: {spec.n} rows exceeds the generator's {generator.MAX_ROWS}")
    if not 0 <= spec.seed < 2**63:
        raise StoreError(f"seed must be in [0, 2**63), got {spec.seed}")


# --------------------------------------------------------------------------- checksums


def checksum_of(m: Manifest) -> str:
    """The checksum a table's digests were made with (its manifest says; see CHECKSUMS)."""
    name = m.storage.get("checksum", "none recorded (built before 2026-11-22)")
    if name not in CHECKSUMS:
        raise StoreError(
            f"{m.name}: its checksum ({name}) is not one this version of wisconsin computes; "
            "remove its directory and generate it again"
        )
    return name


class ContentDigest:
    """Order-sensitive digest of table content, independent of batch boundaries and of how
    Arrow laid the buffers out: every column is hashed as a stream of canonical bytes
    (integers as little-endian int32, the schema's type; string columns as two streams,
    int32 lengths and UTF-8 bytes), each stream with the hash `checksum` names, and the
    streams' hashes hashed together, truncated to 128 bits."""

    def __init__(self, checksum: str = STORAGE["checksum"]) -> None:
        self._new = CHECKSUMS[checksum]
        self._h = {name: self._new() for col in generator.COLUMNS for name in (col, col + ".len")}
        self.rows = 0

    def update(self, batch: pa.RecordBatch) -> None:
        for name in generator.COLUMNS:
            col = batch.column(name)
            if pa.types.is_integer(col.type):
                values = col.to_numpy(zero_copy_only=False)
                if values.dtype != np.dtype("<i4"):
                    values = values.astype("<i4")
                self._h[name].update(np.ascontiguousarray(values).data)
                continue
            if col.type not in (pa.string(), pa.large_string()):
                col = col.cast(pa.large_string())  # e.g. string_view; copying is fine here
            if len(col) == 0:
                continue
            width = "<i4" if col.type == pa.string() else "<i8"  # no copy of the characters
            offs = np.frombuffer(col.buffers()[1], dtype=width)[
                col.offset : col.offset + len(col) + 1
            ]
            self._h[name + ".len"].update(np.diff(offs).astype("<i4").data)
            self._h[name].update(memoryview(col.buffers()[2])[offs[0] : offs[-1]])
        self.rows += batch.num_rows

    def hexdigest(self) -> str:
        top = self._new()
        for h in self._h.values():
            top.update(h.digest())
        return top.hexdigest()[:32]


def content_digest(batches: Iterable[pa.RecordBatch], checksum: str = STORAGE["checksum"]) -> str:
    d = ContentDigest(checksum)
    for b in batches:
        d.update(b)
    return d.hexdigest()


# --------------------------------------------------------------------------- building


def write_json_atomic(path: Path, data: dict) -> None:
    """Write JSON to a temporary name, fsync, rename: a reader never sees half a file."""
    atomic.write_text(path, json.dumps(data, indent=1) + "\n")


def part_file(index: int) -> str:
    return f"part-{index:03d}.duckdb"


def new_table_id() -> str:
    import uuid

    return uuid.uuid4().hex[:16]


def derived_table_id(kind: str, n: int, partitions: int, seed: int, generator_version: str) -> str:
    """The id of a table whose manifest predates table ids: deterministic, from its identity."""
    key = f"{kind}/{n}/{partitions}/{seed}/{generator_version}".encode()
    return "d" + hashlib.sha256(key).hexdigest()[:15]


def make_manifest(
    spec: TableSpec,
    parts: Iterable[PartitionInfo],
    table_id: str | None = None,
    answers: dict | None = None,
) -> Manifest:
    return Manifest(
        schema_version=MANIFEST_VERSION,
        name=spec.name,
        kind=spec.kind,
        rows=spec.n,
        partitions=spec.partitions,
        seed=spec.seed,
        generator_version=generator.GENERATOR_VERSION,
        table=TABLE,
        copy_table=COPY_TABLE,
        storage=dict(STORAGE),
        created_utc=utc_now(),
        parts=tuple(sorted(parts, key=lambda p: p.index)),
        table_id=table_id or new_table_id(),
        answers=answers,
    )


def check_writable(directory: str | os.PathLike, said: str) -> None:
    """Refuse (one line, starting with said) a directory no file can be created in, or one
    in a table or database (outputs there are files the tool did not build in it), before
    anything is measured; leaves nothing behind. Creating is the test: root may write where
    os.access says no, and nowhere under /proc."""
    d = Path(directory)
    try:
        refuse_inside_table(d)
    except StoreError as exc:
        raise StoreError(f"{said}: {exc}") from None
    made = [p for p in (d, *d.parents) if not p.exists()]  # innermost first
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=d, prefix=".wisconsin-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StoreError(f"{said}: cannot write to {d} ({exc.strerror or exc})") from None
    finally:
        for p in made:
            try:
                p.rmdir()
            except FileNotFoundError:
                continue  # mkdir stopped short of it
            except OSError:
                break


def write_manifest(table_dir: Path, manifest: Manifest) -> None:
    write_json_atomic(table_dir / MANIFEST, dataclasses.asdict(manifest))


# --------------------------------------------------------------------------- reading


def read_typed_manifest(path: Path, tp: type, version: int, ranges: jsonfields.Ranges):
    """A manifest file of this version read strictly into dataclass tp, or StoreError in
    one line naming the field (any workload's tables)."""
    data = atomic.read_json(path, "corrupt manifest", error=StoreError)
    if _kind(data) != "Wisconsin table" and "workload" not in {
        f.name for f in dataclasses.fields(tp)
    }:
        # another workload's manifest (a DebitCredit database) read as a Wisconsin table's
        raise StoreError(f"{path.parent} is a {_kind(data)}, not a Wisconsin table")
    if not isinstance(data, dict) or data.get("schema_version") != version:
        found = data.get("schema_version") if isinstance(data, dict) else None
        raise StoreError(f"{path}: unknown manifest schema version {found!r}")
    try:
        return jsonfields.read(tp, data, ranges=ranges, strict=True)
    except jsonfields.FieldError as exc:
        raise StoreError(f"{path}: not a valid manifest: {exc}") from None


def read_manifest(table_dir: str | os.PathLike) -> Manifest:
    """Load and validate a table's manifest; StoreError if missing, corrupt or unknown."""
    tdir = Path(table_dir)
    path = tdir / MANIFEST
    if not tdir.is_dir():
        what = "a file, not a table directory" if tdir.exists() else "no such table directory"
        raise StoreError(f"{tdir}: {what}")
    if not path.exists():
        inside = tables_in(tdir)
        if inside:
            raise StoreError(
                f"{tdir} is a data directory holding tables {', '.join(inside)}; "
                f"give one of them, e.g. {tdir / next(iter(inside))}"
            ) from None
        if not TABLE_NAME.fullmatch(tdir.absolute().name):  # not even named as a table is
            raise StoreError(f"{tdir} is not a table: it holds no {MANIFEST}")
        raise StoreError(
            f"{tdir}: no manifest.json (the table was never completely built; "
            "run `wisconsin generate` again to finish it)"
        )
    m = read_typed_manifest(path, Manifest, MANIFEST_VERSION, RANGES)
    problem = manifest_problem(m)
    if problem:
        raise StoreError(f"{path}: not a valid manifest: {problem}")
    checksum_of(m)  # a hash this version cannot compute is said here, once, for every command
    if not m.table_id:
        ident = (m.kind, m.rows, m.partitions, m.seed, m.generator_version)
        m = dataclasses.replace(m, table_id=derived_table_id(*ident))
    return m


def identity_dir(name: str, n: int, seed: int, table_id: str) -> str:
    """A table's directory under a cluster worker's data root: its whole identity."""
    return f"{name}-n{n}-seed{seed}-gen{generator.GENERATOR_VERSION}-{table_id}"


_TABLE_ID = re.compile(r"[0-9a-f]{16}|d[0-9a-f]{15}")


def manifest_problem(m: Manifest) -> str | None:
    """What makes a parsed manifest unusable, naming the field, or None. The manifest is
    input, not instructions: every name that reaches a path or SQL is one this version
    writes, and every count and key range is the one the generator gives (kind, rows,
    partitions); the content digests are checked against the files, not trusted."""
    if m.kind not in KINDS:
        return f"kind is {m.kind!r}, not one of {', '.join(KINDS)}"
    if m.name != f"{m.kind}{m.partitions}":
        return f"name is {m.name!r}, not {m.kind}{m.partitions} (kind and partitions)"
    if (m.table, m.copy_table) != (TABLE, COPY_TABLE):
        return (
            f"table and copy_table are {m.table!r}, {m.copy_table!r}, not {TABLE!r}, {COPY_TABLE!r}"
        )
    if m.generator_version != generator.GENERATOR_VERSION:
        return (
            f"generator_version is {m.generator_version!r}; this version generates "
            f"{generator.GENERATOR_VERSION!r}: regenerate the table"
        )
    if m.table_id and not _TABLE_ID.fullmatch(m.table_id):
        return f"table_id is {m.table_id!r}, not 16 hex digits"
    if m.partitions > m.rows:
        return f"partitions is {m.partitions}, more than its {m.rows} rows"
    if len(m.parts) != m.partitions or [p.index for p in m.parts] != list(range(m.partitions)):
        return f"parts are not partitions 0 to {m.partitions - 1} in order"
    for p in m.parts:
        where = f"parts[{p.index}]"
        lo, hi = generator.partition_range(m.rows, p.index, m.partitions)
        if (p.lo, p.hi, p.rows) != (lo, hi, hi - lo):
            return (
                f"{where} holds keys [{p.lo}, {p.hi}) and {p.rows} rows; the generator puts "
                f"[{lo}, {hi}) and {hi - lo} rows there"
            )
        if p.file != part_file(p.index):
            return f"{where}.file is {p.file!r}, not {part_file(p.index)!r} in the table directory"
        if p.path:
            want = identity_dir(m.name, m.rows, m.seed, m.table_id)
            q = Path(p.path)
            if (
                not q.is_absolute()
                or ".." in q.parts
                or (q.parent.name, q.name)
                != (
                    want,
                    part_file(p.index),
                )
            ):
                return f"{where}.path is {p.path!r}, not <worker data>/{want}/{part_file(p.index)}"
    return None


def _kind(manifest) -> str:
    """What a manifest's directory is: a Wisconsin table, or another workload's database
    (its manifest names the workload)."""
    workload = manifest.get("workload") if isinstance(manifest, dict) else None
    return f"{workload} database" if isinstance(workload, str) else "Wisconsin table"


def table_holding(path: str | os.PathLike) -> Path | None:
    """The table (or database) directory path is or lies inside: the nearest directory at
    or above it holding a manifest; None where there is none."""
    p = Path(path).absolute()
    return next((d for d in (p, *p.parents) if (d / MANIFEST).is_file()), None)


def refuse_inside_table(path: str | os.PathLike, below: bool = False) -> None:
    """StoreError when path is (below: lies inside) a table or database directory, before
    anything is written there: the tool never builds a table, or writes its outputs,
    inside another."""
    p = Path(path).absolute()
    holder = table_holding(p.parent if below else p)
    if holder is None:
        return
    try:
        kind = _kind(atomic.read_json(holder / MANIFEST, "manifest", error=StoreError))
    except StoreError:
        kind = "table"
    where = "is" if holder == p else f"is inside {holder},"
    raise StoreError(f"{path} {where} a {kind}: give a directory of its own")


def tables_in(data_dir: str | os.PathLike) -> dict[str, tuple[str, int]]:
    """Complete tables under a data directory: {"F4": ("F", 4), ...}, F before G, by P."""
    found = {}
    root = Path(data_dir)
    if root.is_dir():
        for d in root.iterdir():
            kind, count = d.name[:1], d.name[1:]
            if kind in KINDS and count.isdigit() and (d / MANIFEST).is_file():
                found[d.name] = (kind, int(count))
    return dict(sorted(found.items(), key=lambda item: item[1]))


def partition_path(table_dir: str | os.PathLike, part: PartitionInfo) -> Path:
    return Path(part.path) if part.path else Path(table_dir) / part.file
