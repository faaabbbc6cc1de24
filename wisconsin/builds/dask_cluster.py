"""The Dask executor: each partition generated in place, on its owner's own disk.

Where a worker writes: ``$WISCONSIN_DATA_DIR`` in the worker's own environment if set,
else the ``worker_data`` directory given to the coordinator (``--worker-data``), else the
coordinator's ``--data`` path (absolute) - the same path on every host. Under it, the
table's files go to a directory named by the table's identity, e.g.
``F4-n1000000-seed1989-gen1-<table id>``: the id is made when a build starts (kept in
``<data>/<table>/table-id.json`` so an interrupted build resumes into the same directory)
and recorded in the manifest, so two data directories never share a worker-side file. The
manifest and the update decision log stay on the coordinator, in ``<data>/<table>/``. No
table data crosses the network. Connecting, placement and waiting are wisconsin.cluster's.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from wisconsin import WisconsinError, atomic, store
from wisconsin.builds import writer
from wisconsin.cluster import ClusterError, choose_placement, list_workers, wait_pinned
from wisconsin.store import Manifest, PartitionInfo, StoreError, TableSpec
from wisconsin.store import check as store_check

DATA_DIR_ENV = "WISCONSIN_DATA_DIR"
TABLE_ID_FILE = "table-id.json"


def worker_root(fallback: str) -> str:
    """The data root on this worker: $WISCONSIN_DATA_DIR, else the coordinator's choice."""
    return os.environ.get(DATA_DIR_ENV) or fallback


def worker_table_dir(spec: TableSpec, table_id: str) -> str:
    """The table's directory under a worker's data root: its whole identity, not its name."""
    return store.identity_dir(spec.name, spec.n, spec.seed, table_id)


def build_table_id(table_dir: Path, spec: TableSpec) -> str:
    """The id of the table being built in table_dir: the one an interrupted build of the
    same table recorded, else a new one, recorded (before any worker writes under it)."""
    ident = {
        "kind": spec.kind,
        "n": spec.n,
        "partitions": spec.partitions,
        "seed": spec.seed,
        "generator_version": store.generator.GENERATOR_VERSION,
    }
    path = table_dir / TABLE_ID_FILE
    with contextlib.suppress(WisconsinError, TypeError, AttributeError):
        data = atomic.read_json(path, "table id file")
        if {k: data.get(k) for k in ident} == ident and data.get("table_id"):
            return str(data["table_id"])
    table_id = store.new_table_id()
    store.write_json_atomic(path, ident | {"table_id": table_id})
    return table_id


# --------------------------------------------------------------------------- worker tasks


def _where(tdir: Path | str, file: str) -> dict:
    """What the manifest records of a partition on this worker: owner, host, path."""
    import socket

    from distributed import get_worker

    return {
        "worker": str(get_worker().name),
        "host": socket.gethostname(),
        "path": os.path.join(tdir, file),
    }


def task_partition_status(
    fallback_root: str, spec: TableSpec, dirname: str, part: int
) -> dict | None:
    """On the owner: the partition's entry if an earlier build completed it, else None."""
    tdir = Path(worker_root(fallback_root)) / dirname
    info = writer.finished_partition(tdir, spec, part)
    return None if info is None else dict(info.__dict__, **_where(tdir, info.file))


def task_build(fallback_root: str, spec: TableSpec, dirname: str, part: int) -> dict:
    """On the owner: generate the partition into its own disk, in place."""
    import psutil
    from distributed import get_worker

    limit = get_worker().memory_manager.memory_limit or (
        psutil.virtual_memory().total // max(1, os.cpu_count() or 1)
    )
    mem = f"{max(256, int(limit * 0.6) // 2**20)}MB"
    tdir = os.path.join(worker_root(fallback_root), dirname)
    return task_build_partition(tdir, spec.n, spec.seed, part, spec.partitions, mem)


def task_build_partition(
    table_dir: str,
    n: int,
    seed: int,
    part: int,
    parts: int,
    mem: str,
    checksum: str = store.STORAGE["checksum"],
    verify: bool = False,
):
    """On the owner: generate a partition into table_dir (cluster generate and repair;
    verify: repair's read-back before replacing, writer.build_partition)."""
    os.makedirs(table_dir, exist_ok=True)
    info = writer.build_partition(
        table_dir, n, seed, part, parts, memory_limit=mem, checksum=checksum, verify=verify
    )
    return info | _where(table_dir, info["file"])


# --------------------------------------------------------------------------- the executor


def _submit(client, fn, owner: str, *args):
    return client.submit(
        fn,
        *args,
        workers=[owner],
        allow_other_workers=False,
        pure=False,
        key=f"{fn.__name__}-{args[-1]}-{time.time_ns()}",
    )


def _failure_lines(failed: Mapping, owners: Mapping) -> str:
    return "; ".join(
        f"{name} partition {p} on {owners[(name, p)]}: {type(e).__name__}: {e}"
        for (name, p), e in sorted(failed.items())
    )


class DaskBuilds:
    """The cluster executor of wisconsin.builds.plan: partition i on its placed owner.

    Failed partitions do not stop the others; the tables that did complete get their
    manifests, then finish() raises one ClusterError naming every failure."""

    def __init__(self, data: Path, client, worker_data: str | None, timeout: float) -> None:
        self.data = data
        self.client = client
        self.timeout = timeout
        self.fallback = str(Path(worker_data).absolute()) if worker_data else str(data)
        self.names = [w.name for w in list_workers(client)]
        self.owners: dict[tuple[str, int], str] = {}
        self.ids: dict[str, str] = {}
        self.failed: dict = {}

    def start_table(self, tdir: Path, spec: TableSpec) -> None:
        self.ids[spec.name] = build_table_id(tdir, spec)
        for p, w in choose_placement(self.names, spec.partitions).items():
            self.owners[(spec.name, p)] = w

    def _dirname(self, spec: TableSpec) -> str:
        return worker_table_dir(spec, self.ids[spec.name])

    def finished(self, specs: Sequence[TableSpec]) -> dict[tuple[str, int], PartitionInfo]:
        """Which partitions did an earlier build already finish? Ask each owner."""
        by_name = {s.name: s for s in specs}
        futures = {
            k: _submit(
                self.client,
                task_partition_status,
                w,
                self.fallback,
                by_name[k[0]],
                self._dirname(by_name[k[0]]),
                k[1],
            )
            for k, w in self.owners.items()
        }
        status, failed = wait_pinned(self.client, futures, self.owners, min(self.timeout, 120.0))
        if failed:
            lines = _failure_lines(failed, self.owners)
            raise ClusterError(f"cannot reach partition owners: {lines}")
        return {k: PartitionInfo(**v) for k, v in status.items() if v is not None}

    def build(self, todo, rows_of, on_rows) -> dict[tuple[str, int], PartitionInfo]:
        """Progress per finished partition; the overall wait is bounded by the timeout."""
        remaining = {
            (s.name, p): _submit(
                self.client,
                task_build,
                self.owners[s.name, p],
                self.fallback,
                s,
                self._dirname(s),
                p,
            )
            for s, p in todo
        }
        spec_of = {s.name: s for s, _ in todo}
        built: dict = {}
        deadline = time.monotonic() + self.timeout
        while remaining:
            got, bad = wait_pinned(
                self.client,
                {k: remaining[k] for k in list(remaining)[:1]},
                self.owners,
                max(0.0, deadline - time.monotonic()),
            )
            for k in list(got) + list(bad):
                del remaining[k]
            built |= got
            self.failed |= bad
            on_rows(sum(rows_of(spec_of[name], p) for name, p in got))
        return {k: PartitionInfo(**v) for k, v in built.items()}

    def write_manifest(self, tdir: Path, spec: TableSpec, parts) -> Manifest:
        m = store.make_manifest(spec, parts, self.ids[spec.name])
        store.write_manifest(tdir, m)
        return m

    def finish(self) -> None:
        if self.failed:
            raise ClusterError(
                f"generate failed: {_failure_lines(self.failed, self.owners)}; finished "
                "partitions are kept and the next generate resumes"
            )


# --------------------------------------------------------------------------- repair


def _remote_map(client, m: Manifest, fn, args_of, parts, timeout: float) -> dict[int, object]:
    owners = {i: m.parts[i].worker for i in parts}
    futures = {i: _submit(client, fn, owners[i], *args_of(i), i) for i in parts}
    out, failed = wait_pinned(client, futures, owners, timeout)
    if failed:
        detail = "; ".join(
            f"partition {i} on {owners[i]}: {type(e).__name__}: {e}"
            for i, e in sorted(failed.items())
        )
        raise ClusterError(f"{m.name} repair: {' '.join(detail.split())}")
    return out


def _close_session(path: str, _part: int) -> None:
    """On the owner: release a query session on path, if this worker holds one."""
    from wisconsin.cluster import release_sessions

    release_sessions(path)


def _check(path: str, part: dict, m: Manifest, deep: bool, drift: bool, _part: int) -> list[str]:
    return store_check.check_one(path, part, m, deep, drift)


def _rebuild(
    table_dir: str, n: int, seed: int, parts: int, mem: str, checksum: str, part: int
) -> dict:
    # repair: proven aside before it replaces anything, never over a correct file
    return task_build_partition(table_dir, n, seed, part, parts, mem, checksum, verify=True)


def remote_check(client, m: Manifest, drift: bool, timeout: float) -> dict[int, list[str]]:
    """The deep check of the partitions on cluster workers, run by their owners."""
    import dataclasses

    parts = [p.index for p in m.parts if p.worker]
    # a session a crashed run left open would keep DuckDB from opening the file read-only
    _remote_map(client, m, _close_session, lambda i: (m.parts[i].path,), parts, timeout)
    found = _remote_map(
        client,
        m,
        _check,
        lambda i: (m.parts[i].path, dataclasses.asdict(m.parts[i]), m, True, drift),
        parts,
        timeout,
    )
    return {i: ps for i, ps in found.items() if ps}


def remote_rebuild(client, m: Manifest, parts: list[int], mem_of, timeout: float) -> None:
    """Rebuild partitions in place on their owners, where the manifest says they live."""
    built = _remote_map(
        client,
        m,
        _rebuild,
        lambda i: (
            os.path.dirname(m.parts[i].path),
            m.rows,
            m.seed,
            m.partitions,
            mem_of(m.parts[i].rows),
            store.checksum_of(m),
        ),
        parts,
        timeout,
    )
    for i, info in built.items():
        if (info["checksum"], info["path"]) != (m.parts[i].checksum, m.parts[i].path):
            raise StoreError(
                f"{m.name} partition {i}: rebuilt on {m.parts[i].worker} as {info['path']} "
                f"with digest {info['checksum']}, but the manifest says {m.parts[i].path} "
                f"with {m.parts[i].checksum}"
            )
