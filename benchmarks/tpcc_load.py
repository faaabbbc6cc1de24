"""CPU seconds per warehouse of a TPC-C load (generate + write to DuckDB); goal <= 5.

Usage: python benchmarks/tpcc_load.py [--repeat 3] [--partitions 1,2] [--warehouses 1,2]

Each configuration (P partitions x Wp warehouses per partition, the specification's
cardinalities) is built afresh by wisconsin.workloads.tpcc.load.build, as a load runs: one
spawned builder per partition, files renamed into place, the manifest. The configurations
are built in rounds, each round every configuration once in a shuffled (seeded) order, so
that a slow spell of the shared machine falls on all of them. CPU = the builders' user +
system time (RUSAGE_CHILDREN, counted when the pool has joined them: spawn and imports
included) + this process's during the build; per warehouse = CPU / (P * Wp). Medians and
min-max over the rounds. Also: the generator alone (no DuckDB) per warehouse, in this
process, and the database's bytes per warehouse.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages by
# moving it last (not removing it: the spawned builders import this script, and _results)
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here] + [_here]

from wisconsin.workloads.tpcc import generate, load  # noqa: E402
from wisconsin.workloads.tpcc.schema import Placement  # noqa: E402

GOAL_CPU_S_PER_WAREHOUSE = 5.0
SEED = 1


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def one_build(where: Path, placement: Placement) -> tuple[float, float, int]:
    """(CPU s, wall s, bytes) of building one database afresh."""
    db = where / f"tpcc-{placement.partitions}x{placement.warehouses_per_partition}"
    c0, s0, t0 = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF), time.perf_counter()
    load.build(db, placement, SEED, jobs=placement.partitions)
    wall = time.perf_counter() - t0
    cpu = _cpu(resource.RUSAGE_CHILDREN) - c0 + _cpu(resource.RUSAGE_SELF) - s0
    size = sum(p.stat().st_size for p in db.iterdir())
    shutil.rmtree(db)
    return cpu, wall, size


def generator_only(repeat: int) -> list[float]:
    """CPU s of generating one warehouse and ITEM, in this process (imports done)."""
    out = []
    for w in range(1, repeat + 1):
        t0 = time.process_time()
        generate.warehouse_tables(w, SEED)
        generate.item_table(SEED)
        out.append(time.process_time() - t0)
    return out


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):6.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--partitions", default="1,2")
    ap.add_argument("--warehouses", default="1,2", help="warehouses per partition")
    ap.add_argument("--dir", default=None, help="where to build (default: a temp dir)")
    args = ap.parse_args()
    configs = [
        Placement(int(p), int(w))
        for p in args.partitions.split(",")
        for w in args.warehouses.split(",")
    ]
    order = random.Random(SEED)
    runs: dict[Placement, list[tuple[float, float, int]]] = {c: [] for c in configs}
    print(f"tpcc load: {len(configs)} configurations x {args.repeat} rounds, seed {SEED}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="tpcc-load-") as tmp:
        for r in range(args.repeat):
            for c in order.sample(configs, len(configs)):
                runs[c].append(one_build(Path(tmp), c))
                cpu, wall, _ = runs[c][-1]
                print(f"  round {r + 1}: P={c.partitions} Wp={c.warehouses_per_partition}: "
                      f"{cpu:.2f} CPU s, {wall:.2f} s wall")  # fmt: skip
    print("\n  P  Wp  warehouses   CPU s/warehouse (min-max)   wall s (min-max)  MB/warehouse")
    worst = 0.0
    for c, rs in runs.items():
        n = c.warehouses
        per = [cpu / n for cpu, _, _ in rs]
        worst = max(worst, statistics.median(per))
        mb = statistics.median(size for _, _, size in rs) / n / 1e6
        print(f"  {c.partitions}  {c.warehouses_per_partition:2d}  {n:10d}   {_spread(per):>24}"
              f"   {_spread([w for _, w, _ in rs]):>16}  {mb:12.1f}")  # fmt: skip
    gen = generator_only(args.repeat)
    print(f"\n  generator alone (one warehouse + ITEM, no DuckDB): {_spread(gen)} CPU s")
    verdict = "met" if worst <= GOAL_CPU_S_PER_WAREHOUSE else "NOT met"
    print(f"  goal: <= {GOAL_CPU_S_PER_WAREHOUSE:.0f} CPU s per warehouse (worst median "
          f"{worst:.2f}) -> {verdict}")  # fmt: skip


if __name__ == "__main__":
    with recorded("tpcc-load"):
        main()
