"""Shared-nothing transport: timed statements as pinned Dask tasks vs the direct channel.

Usage: python benchmarks/transport.py [--rows 1000000] [--partitions 1,2,4] [--rounds 10]
                                      [--cache cold|warm] [--data DIR]

F tables of --rows rows per partition (scaleup-shaped, so the engine time is about the same
at every P) at each P, one local cluster of max(P) workers (as the runner: a table of P
partitions uses the first P). One SharedNothingEngine serves both sides: its transport is
switched between "dask" and "direct" on the same workers and sessions, so the pairs differ
only in how the statement travels. Per round, every P in a rotated order (its table opened
once), and within it each side in a rotated order: per side, as the runner times a
repetition, evict (cold; untimed), the empty statement (the runner's overhead_s), then

  average  execute(): coordinator wall vs the slowest partition's engine time
  update   update(): prepare, durable decision, commit (wall) vs prepare + commit engine
           time of the slowest partition; its undo follows untimed

Printed per P and query and side: medians and min-max of wall, engine and wall - engine,
the median engine share (slowest engine / wall; the runner's engine_share) and whether the
point passes the harness rules (share >= 80% and median >= 20x the empty statement), and
the paired ratio direct / dask of the wall times within a round (median and min-max).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin import store  # noqa: E402
from wisconsin.analysis.schedule import ENGINE_SHARE_MIN, OVERHEAD_MULTIPLE_MIN  # noqa: E402
from wisconsin.builds import build_tables  # noqa: E402
from wisconsin.engines import commit  # noqa: E402
from wisconsin.engines.base import EngineConfig  # noqa: E402
from wisconsin.engines.duckdb_session import memory_share  # noqa: E402
from wisconsin.engines.shared_nothing import SharedNothingEngine  # noqa: E402
from wisconsin.workloads.wisconsin import queries  # noqa: E402
from wisconsin.workloads.wisconsin.queries import UPDATE_DELTA  # noqa: E402

SIDES = ("dask", "direct")
QUERIES = ("average", "update")


def _slowest(step) -> float:
    return max(
        u.engine_s + (step.commit[p].engine_s if p in step.commit else 0.0)
        for p, u in step.units.items()
    )


def one(eng: SharedNothingEngine, m: store.Manifest, query: str, cold: bool) -> dict:
    """One repetition as the runner times it: (evict), empty statement, the statement."""
    if cold:
        eng.make_cold()
    noop = eng.execute(eng.noop_statements()).wall_s
    # unprofiled, as the runner times every query but the scan
    stmts = {
        p: replace(s, profile=False)
        for p, s in eng.statements(queries.get(query), m, "full-row").items()
    }
    if query == "update":
        update, undo = (f"u{uuid.uuid4().hex[:16]}" for _ in range(2))
        back = eng.statements(queries.get(query), m, "full-row", delta=-UPDATE_DELTA)
        with commit.update_pair(eng.table_dir, update, undo, back):
            step = eng.update(update, stmts)
            eng.update(undo, back)
    else:
        step = eng.execute(stmts)
    return {"noop": noop, "wall": step.wall_s, "engine": _slowest(step)}


def spread(xs) -> str:
    return f"{statistics.median(xs) * 1e3:8.2f} [{min(xs) * 1e3:7.2f}-{max(xs) * 1e3:7.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per partition")
    ap.add_argument("--partitions", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--cache", choices=("cold", "warm"), default="cold")
    ap.add_argument("--data", default=None, help="table directory (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the tables")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    parts = sorted({int(p) for p in args.partitions.split(",")})
    data = Path(args.data or tempfile.mkdtemp(prefix="wisconsin-transport-"))
    t0 = time.perf_counter()
    specs = [store.TableSpec("F", args.rows * p, p, args.seed) for p in parts]
    manifests = {m.partitions: m for m in build_tables(data, specs, jobs=2).manifests}
    built = time.perf_counter() - t0
    cold = args.cache == "cold"
    # DuckDB gets a share of RAM per instance as the runner's default does (60% over max P)
    eng = SharedNothingEngine(EngineConfig(memory_limit=memory_share(0.6, max(parts))))
    res: dict = {}
    try:
        eng.start(max(parts))
        for r in range(args.rounds + 1):  # round 0: warm-up, not kept
            for i in range(len(parts)):
                p = parts[(i + r) % len(parts)]
                m = manifests[p]
                eng.open_table(m, str(data / m.name))
                try:
                    for j in range(len(SIDES) * len(QUERIES)):
                        k = (j + r) % (len(SIDES) * len(QUERIES))
                        side, query = SIDES[k % 2], QUERIES[k // 2]
                        eng.transport = side  # benchmark-only switch: same workers, same sessions
                        got = one(eng, m, query, cold)
                        if r:
                            res.setdefault((p, query, side), []).append(got)
                finally:
                    eng.transport = "direct"
                    eng.close_table()
    finally:
        eng.stop()
        if not args.keep and args.data is None:
            shutil.rmtree(data, ignore_errors=True)

    load = os.getloadavg()[0]
    print(
        f"shared-nothing transport: F tables of {args.rows:,} rows per partition, P = "
        f"{args.partitions}, {args.cache} cache, {args.rounds} rounds interleaved (+1 warm-up), "
        f"local cluster of {max(parts)} workers x 1 thread; tables built in {built:.0f} s; "
        f"load average {load:.1f} at the end"
    )
    print("  times in ms: median [min-max]; engine = slowest partition; share = engine / wall")
    print(
        f"  ok = share >= {ENGINE_SHARE_MIN:.0%} and wall >= {OVERHEAD_MULTIPLE_MIN:.0f}x the "
        "empty statement (the runner's harness rules)"
    )
    print(
        f"  {'P':>2} {'query':8} {'side':6} {'wall':>27} {'engine':>27} {'wall-engine':>27} "
        f"{'empty stmt':>27} {'share':>6} ok"
    )
    for p in parts:
        for query in QUERIES:
            for side in SIDES:
                reps = res[(p, query, side)]
                wall = [x["wall"] for x in reps]
                eng_s = [x["engine"] for x in reps]
                noop = [x["noop"] for x in reps]
                share = statistics.median(e / w for e, w in zip(eng_s, wall, strict=True))
                ok = share >= ENGINE_SHARE_MIN and statistics.median(
                    wall
                ) >= OVERHEAD_MULTIPLE_MIN * statistics.median(noop)
                print(
                    f"  {p:>2} {query:8} {side:6} {spread(wall)} {spread(eng_s)} "
                    f"{spread([w - e for w, e in zip(wall, eng_s, strict=True)])} "
                    f"{spread(noop)} {share:6.1%} {'yes' if ok else 'NO'}"
                )
    print("  paired direct / dask within a round: median [min-max]")
    for p in parts:
        for query, key in (("empty", "noop"), *((q, "wall") for q in QUERIES)):
            src = "average" if query == "empty" else query
            a = res[(p, src, "dask")]
            b = res[(p, src, "direct")]
            ratio = [y[key] / x[key] for x, y in zip(a, b, strict=True)]
            print(
                f"  {p:>2} {query:8} wall {statistics.median(ratio):6.3f} "
                f"[{min(ratio):.3f}-{max(ratio):.3f}]"
            )


if __name__ == "__main__":
    with recorded("transport"):
        main()
