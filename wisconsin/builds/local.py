"""The local executor: partitions built in spawned processes on this machine.

Processes are started with spawn (DuckDB is not fork-safe). A partition is written to a
temporary name and renamed (wisconsin.builds.writer); on ^C or a failed partition every
builder is stopped and its half-written files removed, finished partitions are kept.
"""

from __future__ import annotations

import ctypes
import errno
import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import NamedTuple

from wisconsin import interrupts, store
from wisconsin.builds import leftovers, writer
from wisconsin.builds.cost import memory_per_job
from wisconsin.store import STORAGE, Manifest, PartitionInfo, StoreError, TableSpec, expect


class Task(NamedTuple):
    """One partition to build."""

    table_dir: Path
    table: str  # its name, for messages
    n: int
    seed: int
    part: int
    parts: int
    memory_limit: str
    checksum: str = STORAGE["checksum"]  # a repair rebuilds with its manifest's
    # repair: read the rebuilt file back before it replaces anything, and never replace a
    # file that already holds the generated rows (writer.build_partition's verify)
    verify: bool = False


_progress_queue = None  # in a builder process: where it reports generated rows


def _init_builder(progress_queue) -> None:
    """Builder process start: ^C is the coordinator's to handle (it stops the builders),
    so a builder neither prints a traceback nor dies half-way on its own."""
    global _progress_queue
    interrupts.child_ignores_sigint()  # spawned under interrupts.deferred()
    _die_with_parent()
    _progress_queue = progress_queue
    _keep_freed_memory()


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """Linux: the kernel kills this builder when the generate that started it dies, even by
    SIGKILL. An orphaned builder would go on writing, and removing its half-written files,
    in a data directory a later generate is building in (seen: an orphan removed the next
    generate's part-000.duckdb.tmp)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return  # not Linux/glibc: an orphan is still possible there
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _keep_freed_memory() -> None:
    """glibc malloc: keep freed memory in this builder process instead of returning it to
    the OS after every batch (the generator's ~5 MB arrays were mapped, faulted in and
    unmapped per batch: ~15 k page faults per 1 M rows). A builder only builds."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to tune
    libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD: allocations below 64 MB from the heap
    libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD: keep up to 256 MB of freed heap


def _build_task(table_dir, n, seed, part, parts, memory_limit, checksum, verify, key):
    def report(rows: int) -> None:
        _progress_queue.put((key, rows))

    return key, writer.build_partition(
        table_dir,
        n,
        seed,
        part,
        parts,
        memory_limit=memory_limit,
        progress=report,
        keep_selected=True,  # for the whole table's expected digest (wisconsin.store.expect)
        checksum=checksum,
        verify=verify,
    )


def run_pool(
    tasks: Sequence[Task],
    jobs: int,
    on_rows: Callable[[int], None],
    on_done: Callable[[int, dict], None],
    verb: str = "generate",
    where: Path | None = None,
) -> None:
    """Build tasks in min(jobs, len(tasks)) spawned processes. on_rows(rows generated since
    the last call) is called every 0.2 s, on_done(task index, partition entry) per finished
    partition. Any failure stops every builder, removes the half-written files, and
    becomes one StoreError line (where: the directory named in it; default the data dir)."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(tasks)), mp_context=ctx, initializer=_init_builder, initargs=(q,)
    )
    futures = {}
    try:
        # The pool spawns its processes in submit(): a ^C meanwhile waits for the loop.
        with interrupts.deferred():
            futures = {
                pool.submit(
                    _build_task,
                    str(t.table_dir),
                    t.n,
                    t.seed,
                    t.part,
                    t.parts,
                    t.memory_limit,
                    t.checksum,
                    t.verify,
                    i,
                ): i
                for i, t in enumerate(tasks)
            }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            rows = _drain(q)
            for fut in finished:
                on_done(*fut.result())
            on_rows(rows)
    except BaseException as exc:
        # ^C or a failed partition: stop every builder now and remove their unfinished
        # files; finished partitions are kept for the next build to reuse.
        _stop_pool(pool)
        _remove_temp_files({t.table_dir for t in tasks})
        failed = next(
            (futures[f] for f in futures if f.done() and not f.cancelled() and f.exception()),
            None,
        )
        if isinstance(exc, Exception) and not isinstance(exc, StoreError):
            at = (tasks[failed].table, tasks[failed].part) if failed is not None else None
            if where is not None:  # a repair names its table, not a partition
                at = None
            raise StoreError(_failure(exc, where or tasks[0].table_dir.parent, at, verb)) from None
        raise
    pool.shutdown()
    on_rows(_drain(q))


class LocalBuilds:
    """The local executor of wisconsin.builds.plan: every partition in a spawned process."""

    def __init__(self, data: Path, jobs: int) -> None:
        self.data = data
        self.jobs = jobs

    def start_table(self, tdir: Path, spec: TableSpec) -> None:
        """Nothing to prepare: the planner has cleared what an interrupted build left."""

    def finished(self, specs: Sequence[TableSpec]) -> dict[tuple[str, int], PartitionInfo]:
        found = {
            (s.name, p): writer.finished_partition(self.data / s.name, s, p)
            for s in specs
            for p in range(s.partitions)
        }
        return {k: info for k, info in found.items() if info is not None}

    def build(self, todo, rows_of, on_rows) -> dict[tuple[str, int], PartitionInfo]:
        built: dict[tuple[str, int], PartitionInfo] = {}

        def done(i: int, info: dict) -> None:
            built[todo[i][0].name, todo[i][1]] = PartitionInfo(**info)

        tasks = [
            Task(
                self.data / s.name,
                s.name,
                s.n,
                s.seed,
                p,
                s.partitions,
                memory_per_job(self.jobs, rows_of(s, p)),
            )
            for s, p in todo
        ]
        run_pool(tasks, self.jobs, on_rows, done)
        return built

    def write_manifest(self, tdir: Path, spec: TableSpec, parts) -> Manifest:
        answers = expect.table_answers(tdir, parts, spec.n)
        m = store.make_manifest(spec, parts, answers=answers)
        try:
            store.write_manifest(tdir, m)
        except OSError as exc:
            raise StoreError(_failure(exc, self.data, (spec.name, None))) from None
        expect.remove_selected_files(tdir)  # the manifest holds what they were kept for
        return m

    def finish(self) -> None:
        """Failures were raised where they happened."""


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate every builder and wait for it to exit (so its files can be removed)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(timeout=30)
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        # Let it finish closing its wakeup pipe now: at interpreter exit, Python 3.11's
        # concurrent.futures wakes it without a lock, and a pipe it closes meanwhile made
        # "Exception ignored in: <module 'threading'> ... Bad file descriptor" follow the ^C line.
        manager.join(timeout=30)


def _remove_temp_files(table_dirs) -> None:
    """Remove the stopped builders' half-written files (wisconsin.builds.leftovers): a failed
    build leaves only complete partitions behind. Already failing: what cannot be removed
    is left to the next build, which names it."""
    for tdir in table_dirs:
        leftovers.clear(Path(tdir), strict=False)


def _failure(exc: BaseException, data: Path, where, verb: str = "generate") -> str:
    """One line for a failed build: what, where, and that nothing half-written is left."""
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
    what = ""
    if where is not None:
        table, part = where
        what = table + (f" partition {part}" if part is not None else " manifest")
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "No space left" in str(exc):
        head = f"no space left on the device holding {data}"
    else:
        head = f"building {what or 'a partition'} failed"
        what = ""
    return (
        f"{verb} stopped: {head}{f' while writing {what}' if what else ''} ({detail}); "
        "finished partitions are kept, half-written files were removed"
    )


def _drain(q) -> int:
    rows = 0
    while True:
        try:
            _key, n = q.get_nowait()
        except queue.Empty:
            return rows
        rows += n
