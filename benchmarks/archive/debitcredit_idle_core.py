"""Does one pinned plain DebitCredit loop run faster when the other core is busy, not idle?
(issue 31: two pinned loops deliver more than twice one; a suspect was the idle core.)

Usage: python benchmarks/archive/debitcredit_idle_core.py [ROUNDS]   (needs 2 usable cores)

One 1,000,000-account database; per round, in alternating order, 30 s of
benchmarks/debitcredit_vs_loop.py's plain loop (8 cursors) pinned to core 0, once with core 1
idle and once with a spinning process pinned to core 1. Prints each rate and busy/idle.
"""

import importlib.util
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from wisconsin.workloads.debitcredit import schema


def vs_loop():
    spec = importlib.util.spec_from_file_location(
        "vl",
        os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "debitcredit_vs_loop.py"
        ),
    )
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def child(path, sizing, seconds, seed, out):
    os.sched_setaffinity(0, {0})
    series, _ = vs_loop().plain(Path(path), sizing, seconds, seed, 8)
    out.put(sum(series) / len(series))


def spin():
    os.sched_setaffinity(0, {1})
    while True:
        pass


def main():
    root = Path(tempfile.mkdtemp(prefix="idlecore-", dir=None))
    sizing = schema.Sizing(branches_per_partition=100)
    path = schema.build(root / "l0", 1, sizing)[0]
    ctx = mp.get_context("spawn")
    res = {"idle": [], "busy": []}
    try:
        for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
            for side in ("idle", "busy") if r % 2 == 0 else ("busy", "idle"):
                sp = ctx.Process(target=spin) if side == "busy" else None
                if sp:
                    sp.start()
                q = ctx.Queue()
                p = ctx.Process(target=child, args=(str(path), sizing, 30.0, 100 + r, q))
                p.start()
                tps = q.get(timeout=300)
                p.join()
                if sp:
                    sp.terminate()
                    sp.join()
                res[side].append(tps)
                print(f"round {r + 1} core 1 {side}: loop on core 0 {tps:.1f} tps", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ratios = [b / i for i, b in zip(res["idle"], res["busy"], strict=True)]
    print(
        "busy/idle per round",
        [f"{x:.3f}" for x in ratios],
        "median",
        f"{statistics.median(ratios):.3f}",
    )


if __name__ == "__main__":
    main()
