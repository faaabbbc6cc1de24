"""Engine parity (issue 8 item 5): is DuckDB inside a shared-nothing worker as fast as in
process, on the same file and thread count?

Usage: python benchmarks/engine_parity.py [--rows 2000000]
           [--rounds 9] [--inner 7] [--queries noop,scan,average,select,join,update]
           [--cache warm,cold] [--data DIR] [--threads 1] [--memory-limit 1GB]
           [--as-run MAXP] [--seed 0]

One F1 table (one partition file) of --rows rows is built in --data (kept and reused) or
in a temporary directory on disk (removed at the end; /var/tmp, not a tmpfs /tmp). It is
copied once per further arm, to DIR/parity-copy-<k>/ (kept with --data; --clean removes them).
The arms time the same statement (wisconsin.workloads.wisconsin.queries, full-row scan variant) on that file
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

Why statement-by-statement alternation (measured 2026-11-22, docs/performance.md): this
2-core KVM guest has a host-level speed state that changes every few seconds and affects
every process at once. The same warm scan takes ~38-40 ms or ~50-55 ms (select ~55 or
~80 ms, average ~2.5 or ~3.6 ms) in either arm, on either core, often for a whole turn, and it
flips mid-turn. Arms that take turns a second or more apart (the earlier design: one arm's
turn, then another's) compare statements in different states; their paired ratios
spread 0.7-1.5 and 7 rounds gave medians of 1.05-1.3 from noise alone. Longer statements
do not help against a ~25% multiplicative swing. Statements a few ms apart do.

So every arm opens its own byte-identical copy of the table (a DuckDB file can be open in one
process only), all arms stay open for the turn, and the arms run alternately, one statement
each, in a fresh random order per step. The copies rotate over the arms every round, so
where a copy sits on the disk and how its layout drifts through the updates and result
tables even out. Warm: one untimed run per arm, then --inner steps of one timed run per arm.
Cold: each step runs make_cold (evict, reopen, evict again) and then one timed run, per arm
in turn. Bytes read from storage are printed. select/join empty their result table first,
and each update is undone after its run (untimed).

The turns themselves run in a seeded shuffled order of (query, cache) per round. Printed per
(query, cache): each arm's median engine time over all runs, and the ratios arm/inproc of the
paired runs (same step) of engine time and CPU time: median [interquartile range; min-max]
over rounds x inner pairs. Also given: the median of the per-round medians, with min-max.
Goal: worker/inproc median within 1.05x.

The empty statement ("noop", SELECT 1, not profiled) is timed too. Its paired difference
is the fixed per-statement cost, if any, inside the timed window of a worker.
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

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin import store  # noqa: E402
from wisconsin.builds import build_tables  # noqa: E402
from wisconsin.engines import (  # noqa: E402
    default_memory_limit,  # noqa: E402
    worker,
)
from wisconsin.engines.base import NOOP, EngineConfig  # noqa: E402
from wisconsin.engines.shared_memory import WHOLE, SharedMemoryEngine  # noqa: E402
from wisconsin.engines.shared_nothing import SharedNothingEngine  # noqa: E402
from wisconsin.workloads.wisconsin import queries  # noqa: E402

ARMS = ("worker", "inproc", "shm")  # + "worker-old" with --as-run
COPY_DIR = "parity-copy-{}"


class InProcess:
    """A PartitionSession in this process, opened and evicted the way a worker does."""

    def __init__(self, m, config):
        self.m, self.path = m, ""
        self.sessions = worker.PartitionSessions(config.threads_per_worker, config.memory_limit)

    def place(self, tdir):
        self.path = str(store.partition_path(tdir, self.m.parts[0]))

    def open(self):
        self.sessions.session(self.path)

    def close(self):
        self.sessions.close(self.path)

    def make_cold(self):
        return {0: worker.make_cold(self.sessions, self.path)}

    def run(self, query):
        s = self.sessions.session(self.path)
        if query == "noop":
            return s.run(NOOP), None
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

    def __init__(self, engine, m):
        self.e, self.m, self.tdir = engine, m, ""
        engine.start(1)

    def place(self, tdir):
        self.tdir = tdir

    def open(self):
        self.e.open_table(self.m, self.tdir)

    def close(self):
        self.e.close_table()

    def make_cold(self):
        return self.e.make_cold()

    def run(self, query):
        if query == "noop":
            step = self.e.execute(self.e.noop_statements())
            return next(iter(step.units.values())), None
        stmts = self.e.statements(queries.get(query), self.m, "full-row")
        if query in ("select", "join"):
            self.e.reset_result(f"{query}_result")
        if query == "update":
            step = self.e.update(f"e{uuid.uuid4().hex[:12]}", stmts)
            undo = self.e.statements(
                queries.get(query), self.m, "full-row", delta=-queries.UPDATE_DELTA
            )
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


def turn(impl, query, cache, inner, rng):
    """All arms open (each on its own copy); warm up each (warm); then inner steps of one
    timed run per arm, in a fresh random order per step, so paired runs are ms apart.
    Returns {arm: [PartitionReport] * inner}."""
    opened = []
    out = {arm: [] for arm in impl}
    try:
        for arm in impl.values():
            arm.open()
            opened.append(arm)
            if cache == "warm":
                _unit, undo = arm.run(query)
                if undo:
                    undo()
        names = list(impl)
        for _ in range(inner):
            rng.shuffle(names)
            for name in names:
                arm = impl[name]
                if cache == "cold":
                    arm.make_cold()
                unit, undo = arm.run(query)
                if undo:
                    undo()
                out[name].append(unit)
    finally:
        for arm in opened:
            arm.close()
    return out


def spread(xs, fmt="{:.3f}"):
    """median [interquartile range; min-max]"""
    xs = sorted(xs)
    n = len(xs)
    f = fmt.format
    q1, q3 = xs[n // 4], xs[(3 * n) // 4]
    return f"{f(statistics.median(xs))} [{f(q1)}-{f(q3)}; {f(xs[0])}-{f(xs[-1])}]"


def copies(data, tdir, m, n):
    """Table directories: the built one and n - 1 byte-identical copies (made once, kept)."""
    out = [tdir]
    for k in range(1, n):
        dst = Path(data) / COPY_DIR.format(k) / m.name
        src_file = store.partition_path(tdir, m.parts[0])
        dst_file = store.partition_path(str(dst), m.parts[0])
        if not dst_file.is_file() or dst_file.stat().st_size != src_file.stat().st_size:
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(tdir, dst)
        out.append(str(dst))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--inner", type=int, default=7, help="timed runs per arm per turn")
    ap.add_argument("--as-run", type=int, default=0, metavar="MAXP")
    ap.add_argument("--queries", default="noop,scan,average,select,join,update")
    ap.add_argument("--cache", default="warm,cold")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--data", help="keep (and reuse) the table here; default: a temp dir")
    ap.add_argument("--clean", action="store_true", help="remove the copies at the end")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    qs = ["noop" if q.strip() == "noop" else q for q in a.queries.split(",") if q.strip()]
    queries.parse_queries(",".join(q for q in qs if q != "noop") or "scan")  # names checked
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
        elif a.clean:
            for k in range(1, len(arms)):
                shutil.rmtree(Path(a.data) / COPY_DIR.format(k), ignore_errors=True)


def run(a, qs, caches, arms, configs):
    memory = f"as a run with max P {a.as_run}" if a.as_run else f"memory_limit={a.memory_limit}"
    t0 = time.perf_counter()
    (m,) = build_tables(a.data, [store.TableSpec("F", a.rows, 1, 1)]).manifests
    tdir = str(Path(a.data) / m.name)
    path = str(store.partition_path(tdir, m.parts[0]))
    dirs = copies(a.data, tdir, m, len(arms))
    print(
        f"table F1: {m.rows} rows, {os.path.getsize(path) / 1e6:.0f} MB file "
        f"(x{len(dirs)} copies), ready in {time.perf_counter() - t0:.1f} s; threads={a.threads}, "
        f"{memory}, {a.rounds} rounds x {a.inner} paired runs per turn, seed {a.seed}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    impl = {}
    for arm in arms:
        if arm.startswith("worker"):
            impl[arm] = ViaEngine(SharedNothingEngine(configs[arm]), m)
        elif arm == "inproc":
            impl[arm] = InProcess(m, configs[arm])
        elif arm == "shm":
            impl[arm] = ViaEngine(SharedMemoryEngine(configs[arm]), m)
    rng = random.Random(a.seed)
    cells = [(q, c) for q in qs for c in caches if not (q == "noop" and c == "cold")]
    runs = {(q, c, arm): [] for q, c in cells for arm in impl}  # per round: [reports]
    loads = []
    try:
        for r in range(a.rounds):
            for k, arm in enumerate(impl.values()):  # rotate the copies over the arms
                arm.place(dirs[(k + r) % len(dirs)])
            order = cells[:]
            rng.shuffle(order)
            for q, c in order:
                for arm, units in turn(impl, q, c, a.inner, rng).items():
                    runs[(q, c, arm)].append(units)
            loads.append(os.getloadavg()[0])
            print(
                f"round {r + 1}/{a.rounds} done at {time.perf_counter() - t0:.0f} s, "
                f"load average {loads[-1]:.2f}",
                flush=True,
            )
    finally:
        for name, arm in impl.items():
            if isinstance(arm, ViaEngine):
                print(f"  {name}: DuckDB memory_limit {arm.e.memory_limits}")
                arm.e.stop()
            else:
                print(f"  {name}: DuckDB memory_limit {arm.sessions.memory_limit}")
    print(f"load average (1 min) after each round: max {max(loads):.2f}")
    print()
    print(
        "engine time per arm: median over all runs (ms); ratios arm/inproc of paired runs:\n"
        "median [interquartile range; min-max] over rounds x inner pairs; 'rounds' is the\n"
        "median [min-max] of the per-round medians; diff: arm - inproc, ms"
    )
    for q, c in cells:
        allv = {arm: [u.engine_s for t in runs[(q, c, arm)] for u in t] for arm in impl}
        print(
            f"{q:8s} {c:4s} "
            + "  ".join(f"{arm} {statistics.median(v) * 1e3:.3f} ms" for arm, v in allv.items())
        )
        for arm in impl:
            if arm == "inproc" or "inproc" not in impl:
                continue
            pairs = [
                list(zip(x, y, strict=True))
                for x, y in zip(runs[(q, c, arm)], runs[(q, c, "inproc")], strict=True)
            ]
            wall = [x.engine_s / y.engine_s for t in pairs for x, y in t]
            cpu = [x.cpu_s / y.cpu_s for t in pairs for x, y in t if y.cpu_s > 0]
            diff = [(x.engine_s - y.engine_s) * 1e3 for t in pairs for x, y in t]
            per_round = [statistics.median(x.engine_s / y.engine_s for x, y in t) for t in pairs]
            print(
                f"          {arm + '/inproc':17s} engine time {spread(wall)}  "
                f"rounds {statistics.median(per_round):.3f} "
                f"[{min(per_round):.3f}-{max(per_round):.3f}]"
            )
            print(f"          {'':17s} cpu {spread(cpu)}  diff {spread(diff, '{:+.3f}')} ms")
        if c == "cold":
            mb = {
                arm: [u.bytes_read / 1e6 for t in runs[(q, c, arm)] for u in t if u.bytes_read]
                for arm in impl
            }
            print(
                "          cold MB read from storage: "
                + "  ".join(f"{arm} {statistics.median(v):.0f}" for arm, v in mb.items() if v)
            )


if __name__ == "__main__":
    with recorded("engine-parity"):
        main()
