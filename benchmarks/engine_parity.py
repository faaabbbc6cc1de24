"""Engine parity (issue 8 item 5): is DuckDB inside a shared-nothing worker as fast as in
process, on the same file and thread count?

Usage: nice -n 19 ionice -c3 python benchmarks/engine_parity.py [--rows 2000000]
           [--rounds 7] [--inner 3] [--queries scan,average,select,join,update]
           [--cache warm,cold] [--data DIR] [--threads 1] [--memory-limit 1GB]
           [--as-run MAXP] [--seed 0]

One F1 table (one partition file) of --rows rows is built in --data (kept and reused) or
in a temporary directory on disk (removed at the end; /var/tmp, not a tmpfs /tmp).
The arms time the same statement (wisconsin.queries, full-row scan variant) on that file
with the same DuckDB threads, each its `engine_s` from PartitionSession.run (the clock
around execute + fetch, next to the engine) and `cpu_s` (the process's CPU time meanwhile):
  worker     SharedNothingEngine with one local Dask worker (nanny, as `wisconsin run`)
  inproc     a PartitionSession opened in this process (the same code the worker runs)
  shm        SharedMemoryEngine at P=1 (one DuckDB instance, threads = 1, ATTACH + view)
Memory: by default every arm gets --memory-limit. With --as-run MAXP, arms are sized as
`wisconsin run` sizes them in a run whose largest table has MAXP partitions: inproc and shm
get 60% of RAM (shared-memory's default); worker gets EngineConfig.memory_fraction=0.6
split among the table's instances (the default since the fix: all of it at P=1); and a
fourth arm, worker-old, gets the earlier per-instance default, 60% of RAM / MAXP.

A file can be open in one process only, so each arm opens it, measures, closes it. Warm:
open, one untimed run (fills the buffer pool), --inner timed runs. Cold: open, then
--inner times make_cold (evict, reopen, evict again) + one timed run; bytes read from
storage are printed. A turn's time is the median of its --inner runs. select/join empty
their result table first; update is undone after every run (untimed).

Every round runs every (query, cache, arm) once in a seeded shuffled order, so drift
cannot line up with an arm. Printed per (query, cache): each arm's median engine time
over rounds, and the per-round paired ratios arm/inproc of engine time and of CPU time:
median [min-max]. Goal: worker/inproc within 1.05x.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin import queries, store, worker  # noqa: E402
from wisconsin.builds import build_tables  # noqa: E402
from wisconsin.engine import EngineConfig  # noqa: E402
from wisconsin.engines import default_memory_limit  # noqa: E402
from wisconsin.shared_memory import WHOLE, SharedMemoryEngine  # noqa: E402
from wisconsin.shared_nothing import SharedNothingEngine  # noqa: E402

ARMS = ("worker", "inproc", "shm")  # + "worker-old" with --as-run


class InProcess:
    """A PartitionSession in this process, opened and evicted the way a worker does."""

    def __init__(self, m, path, config):
        self.m, self.path = m, path
        self.sessions = worker.PartitionSessions(config.threads_per_worker, config.memory_limit)

    def open(self):
        self.sessions.session(self.path)

    def close(self):
        self.sessions.close(self.path)

    def make_cold(self):
        return {0: worker.make_cold(self.sessions, self.path)}

    def run(self, query):
        s = self.sessions.session(self.path)
        stmt = statement(query, self.m)
        if query in ("select", "join"):
            s.reset_result(f"{query}_result")
        if query == "update":
            txid = f"p{uuid.uuid4().hex[:12]}"
            unit = s.prepare(txid, stmt)
            s.commit(txid)
            undo = statement(query, self.m, delta=-queries.UPDATE_DELTA)
            return unit, lambda: (s.prepare(txid + "u", undo), s.commit(txid + "u"))
        return s.run(stmt), None


class ViaEngine:
    """One of the wisconsin engines at P = 1 (started once, table opened per turn)."""

    def __init__(self, engine, m, tdir):
        self.e, self.m, self.tdir = engine, m, tdir
        engine.start(1)

    def open(self):
        self.e.open_table(self.m, self.tdir)

    def close(self):
        self.e.close_table()

    def make_cold(self):
        return self.e.make_cold()

    def run(self, query):
        stmts = self.e.statements(query, self.m, "full-row")
        if query in ("select", "join"):
            self.e.reset_result(f"{query}_result")
        if query == "update":
            step = self.e.update(f"e{uuid.uuid4().hex[:12]}", stmts)
            undo = self.e.statements(query, self.m, "full-row", delta=-queries.UPDATE_DELTA)
            return step.units[0], lambda: self.e.update(f"e{uuid.uuid4().hex[:12]}", undo)
        step = self.e.execute(stmts)
        unit = step.units.get(0, step.units.get(WHOLE))
        return dataclasses.replace(unit, bytes_read=step.bytes_read), None


def statement(query, m, delta=queries.UPDATE_DELTA):
    return queries.statement(
        query,
        m.rows,
        table=m.table,
        copy=m.copy_table,
        result=f"{query}_result" if query in ("select", "join") else "",
        scan_variant="full-row",
        delta=delta,
    )


def one(arm, query, cache, inner):
    """Open, warm up or evict, time inner statements, close: median (engine_s, cpu_s),
    and the bytes read from storage by the last one."""
    arm.open()
    out = []
    try:
        if cache == "warm":
            _unit, undo = arm.run(query)
            if undo:
                undo()
        for _ in range(inner):
            if cache == "cold":
                arm.make_cold()
            unit, undo = arm.run(query)
            if undo:
                undo()
            out.append(unit)
    finally:
        arm.close()
    return (
        statistics.median(u.engine_s for u in out),
        statistics.median(u.cpu_s for u in out),
        out[-1].bytes_read,
    )


def spread(xs):
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}-{max(xs):.3f}]"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--inner", type=int, default=3, help="timed runs per turn (median)")
    ap.add_argument("--as-run", type=int, default=0, metavar="MAXP")
    ap.add_argument("--queries", default="scan,average,select,join,update")
    ap.add_argument("--cache", default="warm,cold")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--data", help="keep (and reuse) the table here; default: a temp dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    qs = queries.parse_queries(a.queries)
    caches = [c for c in a.cache.split(",") if c]
    arms = [x for x in a.arms.split(",") if x]
    config = EngineConfig(threads_per_worker=a.threads, memory_limit=a.memory_limit)
    configs = dict.fromkeys(ARMS, config)
    if a.as_run:
        shm_default = default_memory_limit("shared-memory", [a.as_run])
        configs = {
            "worker": EngineConfig(
                threads_per_worker=a.threads, memory_limit="1GB", memory_fraction=0.6
            ),
            "inproc": EngineConfig(threads_per_worker=a.threads, memory_limit=shm_default),
            "shm": EngineConfig(threads_per_worker=a.threads, memory_limit=shm_default),
            "worker-old": EngineConfig(
                threads_per_worker=a.threads,
                memory_limit=default_memory_limit("shared-nothing", [a.as_run]),
            ),
        }
        arms = [*arms, "worker-old"] if "worker-old" not in arms else arms

    tmp = None
    if a.data is None:
        tmp = a.data = tempfile.mkdtemp(prefix="wisconsin-parity-", dir="/var/tmp")
    try:
        run(a, qs, caches, arms, configs)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def run(a, qs, caches, arms, configs):
    memory = f"as a run with max P {a.as_run}" if a.as_run else f"memory_limit={a.memory_limit}"
    t0 = time.perf_counter()
    (m,) = build_tables(a.data, [store.TableSpec("F", a.rows, 1, 1)]).manifests
    tdir = str(Path(a.data) / m.name)
    path = str(store.partition_path(tdir, m.parts[0]))
    print(
        f"table F1: {m.rows} rows, {os.path.getsize(path) / 1e6:.0f} MB file, "
        f"ready in {time.perf_counter() - t0:.1f} s; threads={a.threads}, {memory}, "
        f"{a.rounds} rounds x {a.inner} runs per turn, seed {a.seed}"
    )
    impl = {}
    for arm in arms:
        if arm.startswith("worker"):
            impl[arm] = ViaEngine(SharedNothingEngine(configs[arm]), m, tdir)
        elif arm == "inproc":
            impl[arm] = InProcess(m, path, configs[arm])
        elif arm == "shm":
            impl[arm] = ViaEngine(SharedMemoryEngine(configs[arm]), m, tdir)
    rng = random.Random(a.seed)
    cells = [(q, c, arm) for q in qs for c in caches for arm in impl]
    times = {cell: [] for cell in cells}
    cpus = {cell: [] for cell in cells}
    reads = {cell: [] for cell in cells}
    try:
        for r in range(a.rounds):
            order = cells[:]
            rng.shuffle(order)
            for cell in order:
                s, c, b = one(impl[cell[2]], cell[0], cell[1], a.inner)
                times[cell].append(s)
                cpus[cell].append(c)
                reads[cell].append(b)
            print(f"round {r + 1}/{a.rounds} done at {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        for name, arm in impl.items():
            if isinstance(arm, ViaEngine):
                print(f"  {name}: DuckDB memory_limit {arm.e.memory_limits}")
                arm.e.stop()
            else:
                print(f"  {name}: DuckDB memory_limit {arm.sessions.memory_limit}")
    print()
    print("engine_s per arm: median [min-max] over rounds; ratios arm/inproc paired per round")
    for q in qs:
        for c in caches:
            print(
                f"{q:8s} {c:4s} "
                + "  ".join(f"{arm} {spread(times[(q, c, arm)])} s" for arm in impl)
            )
            for arm in impl:
                if arm == "inproc" or "inproc" not in impl:
                    continue
                base = (q, c, "inproc")
                wall = [x / y for x, y in zip(times[(q, c, arm)], times[base], strict=True)]
                cpu = [x / y for x, y in zip(cpus[(q, c, arm)], cpus[base], strict=True)]
                print(
                    f"          {arm + '/inproc':17s} engine time {spread(wall)}  cpu {spread(cpu)}"
                )
            if c == "cold":
                mb = {arm: [b / 1e6 for b in reads[(q, c, arm)] if b is not None] for arm in impl}
                print(
                    "          cold MB read from storage: "
                    + "  ".join(f"{arm} {statistics.median(v):.0f}" for arm, v in mb.items() if v)
                )


if __name__ == "__main__":
    main()
