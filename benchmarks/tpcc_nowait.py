"""TPC-C no-wait mode: the harness against a plain DuckDB loop, interleaved; goal >= 0.9x.

Usage: python benchmarks/tpcc_nowait.py [--rounds 3] [--window 20] [--warehouses 2]

One spec-sized database of one partition (Wp warehouses) is built once. Each round runs,
in ABBA order across rounds, (a) the harness: the partition server pinned to core 0, its
no-wait terminals (4 workers on one DuckDB instance of one thread, each with its cursor),
the acknowledgement log fsynced per commit, the deferred-free no-wait Delivery inline; and
(b) a plain loop in one spawned process pinned to the same core: the same file opened the
same way, the same 4 terminals' inputs (the driver's own streams and decks), the same
transaction functions, retried on conflicts, and nothing else. Both ramp 2 s, then count
committed New-Orders in the window. Per side: new orders per minute (per core: one core),
CPU ms per New-Order (the process's CPU over ramp and window / the New-Orders it committed:
the whole mix's cost per New-Order). Ratio harness / loop per round; medians and spread.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here] + [_here]

from wisconsin.oltp import twophase  # noqa: E402
from wisconsin.workloads.tpcc import driver, load, rules  # noqa: E402
from wisconsin.workloads.tpcc import inputs as ins  # noqa: E402
from wisconsin.workloads.tpcc import transactions as tx  # noqa: E402
from wisconsin.workloads.tpcc.schema import Placement, connect  # noqa: E402
from wisconsin.workloads.tpcc.server import MEMORY_LIMIT, PartitionServers  # noqa: E402

SEED = 5
RAMP_S = 2.0
GOAL = 0.9


def _load(m, window: float, seed: int, local_only: bool = False) -> driver.Load:
    c = rules.run_constants(m.constants, seed)
    return driver.Load("nowait", RAMP_S, window, seed, (c.c_last, c.c_id, c.ol_i_id),
                       workers=4, checkpoint_at_s=None, deferred_delivery=False,
                       local_only=local_only)  # fmt: skip


def harness(db: Path, m, window: float, seed: int) -> tuple[float, float]:
    """(new orders per minute in the window, CPU ms per New-Order) of the harness."""
    with PartitionServers(db, m, db / "logs", pin=True) as s:
        (t,) = s.run(_load(m, window, seed))
    return len(t["no_done"]) * 60 / window, t["cpu_s"] * 1e3 / max(1, t["new_orders_all"])


def _loop_worker(con, term, t_start, t_end, out, lock) -> None:
    cur = con.cursor()
    while (now := time.perf_counter()) < t_end:
        kind = next(term.deck)
        inp = term.inputs.draw(kind, term.w_id, term.d_id)
        for _ in range(100):
            try:
                if kind == ins.DELIVERY:  # as the harness's no-wait Delivery: per district
                    for d in range(1, 11):
                        with tx.transaction(cur):
                            tx.deliver_one(cur, inp.w_id, d, inp.carrier_id)
                    result = None
                else:
                    result = tx.RUNNERS[type(inp)](cur, inp)
                break
            except Exception as exc:
                if not twophase.is_conflict(exc):
                    raise
        done = time.perf_counter()
        if kind == ins.NEW_ORDER and not result.rolled_back:
            with lock:
                out["all"] += 1
                out["window"] += t_start <= done <= t_end
        del now
    cur.close()


def plain_loop(path: str, m, window: float, seed: int, core: int, q, part: int = 0) -> None:
    """The spawned plain loop: the harness's terminals of partition `part` without the
    harness (their inputs drawn local-only: a loop reaches no other partition)."""
    os.sched_setaffinity(0, {core})
    con = connect(path, memory_limit=MEMORY_LIMIT)
    load_ = _load(m, window, seed, local_only=True)
    node = SimpleNamespace(placement=m.placement, scale=m.scale, part=part)
    terms = driver.Step(node, load_).terminals()
    cpu0, t0 = time.process_time(), time.perf_counter()
    out, lock = {"all": 0, "window": 0}, threading.Lock()
    t_start, t_end = t0 + RAMP_S, t0 + RAMP_S + window
    threads = [threading.Thread(target=_loop_worker, args=(con, t, t_start, t_end, out, lock))
               for t in terms]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu = time.process_time() - cpu0
    con.close()
    q.put((out["window"] * 60 / window, cpu * 1e3 / max(1, out["all"])))


def loop(db: Path, m, window: float, seed: int) -> tuple[float, float]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    path = str(load.partition_paths(db, m)[0])
    core = sorted(os.sched_getaffinity(0))[0]
    p = ctx.Process(target=plain_loop, args=(path, m, window, seed, core, q))
    p.start()
    got = q.get(timeout=window + 300)
    p.join()
    return got


def _spread(xs) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--warehouses", type=int, default=2)
    ap.add_argument("--dir", default=None, help="where to build (default: the temp dir)")
    args = ap.parse_args()
    print(f"tpcc no-wait: harness vs plain loop, 1 partition of {args.warehouses} warehouses, "
          f"{args.rounds} rounds (ABBA) of {RAMP_S:g} s ramp + {args.window:g} s window; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    tmp = Path(tempfile.mkdtemp(dir=args.dir, prefix="tpcc-nowait-"))
    try:
        t0 = time.perf_counter()
        m = load.build(tmp / "db", Placement(1, args.warehouses), SEED)
        print(f"  built in {time.perf_counter() - t0:.0f} s")
        ratios, sides = [], {"harness": [], "loop": []}
        for r in range(args.rounds):
            order = ("harness", "loop") if r % 2 == 0 else ("loop", "harness")
            got = {}
            for side in order:
                fn = harness if side == "harness" else loop
                got[side] = fn(tmp / "db", m, args.window, SEED + r)
                sides[side].append(got[side])
                print(f"  round {r + 1} {side:7}: {got[side][0]:7.1f} new orders/min, "
                      f"{got[side][1]:6.1f} CPU ms per New-Order  "
                      f"(load average {os.getloadavg()[0]:.1f})")  # fmt: skip
            ratios.append(got["harness"][0] / got["loop"][0] if got["loop"][0] else 0.0)
        print("\n  side     new orders/min per core   CPU ms per New-Order   (median, min-max)")
        for side, xs in sides.items():
            print(
                f"  {side:7}  {_spread([x[0] for x in xs]):>24}   {_spread([x[1] for x in xs]):>20}"
            )
        med = statistics.median(ratios)
        print(
            f"  harness / loop, paired per round: {_spread(ratios)} -> goal >= {GOAL} "
            + ("met" if med >= GOAL else "NOT met")
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    with recorded("tpcc-nowait-vs-loop"):
        main()
