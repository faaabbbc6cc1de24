"""Repair: rebuild exactly the damaged partitions of a table, by the same partition writer
and the same executors as a build (local pool here, each owner on a cluster)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wisconsin import store
from wisconsin.builds import leftovers, writer
from wisconsin.builds.cost import memory_per_job
from wisconsin.builds.plan import Progress, counter, default_jobs, prepare_table_dir
from wisconsin.store import Manifest, StoreError, expect, lock
from wisconsin.store import check as store_check
from wisconsin.store.updates import DecisionLog


@dataclass(frozen=True)
class RepairResult:
    manifest: Manifest
    damaged: dict[int, list[str]]  # partition -> what was wrong with it (before repair)
    seconds: float


def plan_repair(table_dir: str | os.PathLike, m: Manifest) -> dict[int, list[str]]:
    """The partitions to rebuild: every local one that fails the deep check (file,
    blocks, sample rows, drift, and the full digest of both tables)."""
    found = store_check.check_partitions(table_dir, m, deep=True)
    return {i: problems for i, problems in sorted(found.items()) if problems}


@lock.locked("table_dir", table=True)  # it rewrites partitions a run may have open
def repair_table(
    table_dir: str | os.PathLike,
    jobs: int | None = None,
    progress: Progress | None = None,
    client=None,
    timeout: float = 3600.0,
    announce: Callable[[str], None] | None = None,
) -> RepairResult:
    """Rebuild exactly the damaged partitions of a table from the generator, then check
    them again; an interrupted update's records are dropped once every partition is
    back to its generated content. Partitions on cluster workers are checked and rebuilt
    by their owners, through `client`. announce (if given) receives one line naming what
    an interrupted build or repair left in the table directory, removed first."""
    t0 = time.perf_counter()
    tdir = Path(table_dir)
    m = store.read_manifest(tdir)
    removed = leftovers.clear(tdir, complete=True, verb="repair")  # the table's lock is ours
    if removed and announce:
        announce(leftovers.said(tdir, removed, "repair"))
    remote = [p.index for p in m.parts if p.worker]
    if remote and client is None:
        raise StoreError(
            f"{m.name}: partitions {', '.join(map(str, remote))} live on cluster workers; "
            "give --cluster to repair them there"
        )
    if remote:
        from wisconsin.builds import dask_cluster

    def check() -> dict[int, list[str]]:
        found = plan_repair(tdir, m)
        if remote:
            drift = DecisionLog(tdir).is_empty()
            found |= dask_cluster.remote_check(client, m, drift, timeout)
        return found

    damaged = check()
    todo = sorted(damaged)
    rows_total = sum(m.parts[i].rows for i in todo)
    label = f"repair {m.name}"
    progress = progress if todo else None  # a healthy table: one line, no "0/0"
    if progress:
        progress(label, 0, rows_total)
    local = [i for i in todo if not m.parts[i].worker]
    if local:
        prepare_table_dir(tdir)
        _rebuild_local(tdir, m, local, jobs or default_jobs(), progress, label, rows_total)
    if len(local) < len(todo):
        mem_of = lambda rows: memory_per_job(default_jobs(), rows)  # noqa: E731
        parts = [i for i in todo if m.parts[i].worker]
        dask_cluster.remote_rebuild(client, m, parts, mem_of, timeout)
    still = {i: ps for i, ps in check().items() if ps}
    if still:
        first = min(still)
        raise StoreError(f"{m.name}: repair did not restore it: {still[first][0]}")
    # Every partition now holds its generated rows: no pending record may touch them again.
    DecisionLog(tdir).clear()
    if progress:
        progress(label, rows_total, rows_total)
    return RepairResult(manifest=m, damaged=damaged, seconds=time.perf_counter() - t0)


def _rebuild_local(tdir: Path, m: Manifest, todo, jobs, progress, label, rows_total) -> None:
    """Rebuild partitions `todo` of m in the local pool; each must reproduce its digest."""
    from wisconsin.builds.local import Task, run_pool

    for i in todo:  # a damaged file is replaced by the rename; a stale marker goes first
        (tdir / writer.marker_file(i)).unlink(missing_ok=True)
    widest = max(
        hi - lo
        for lo, hi in (
            store.generator.partition_range(m.rows, i, m.partitions) for i in range(m.partitions)
        )
    )
    mem = memory_per_job(jobs, widest)

    def on_done(key: int, info: dict) -> None:
        i = todo[key]
        if info["checksum"] != m.parts[i].checksum:
            raise StoreError(
                f"{m.name} partition {i}: the generator's rows have digest "
                f"{info['checksum']}, but the manifest says {m.parts[i].checksum}: the "
                "manifest is damaged (a file holding the generated rows is never replaced)"
            )

    try:
        tasks = [
            Task(tdir, m.name, m.rows, m.seed, i, m.partitions, mem, store.checksum_of(m), True)
            for i in todo
        ]
        run_pool(tasks, jobs, counter(progress, label, rows_total), on_done, "repair", tdir)
    finally:
        expect.remove_selected_files(tdir)  # the manifest already holds the table's answers
