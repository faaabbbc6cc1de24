"""TPC-C no-wait scaleup P = 1 -> 2, pinned, against two pinned plain DuckDB loops; goal 0.9x.

Usage: python benchmarks/tpcc_scaleup.py [--rounds 3] [--window 12] [--warehouses 2] [--quick]

Warehouses per partition are fixed (Wp, default 2): a database of 1 partition (Wp
warehouses) and one of 2 (2 x Wp) are built once. Each round runs, in an order reversed on
every other round (interleaved), on the same cores:

- P1 harness: the partition server pinned to core 0, its 4 no-wait terminals (the harness of
  benchmarks/tpcc_nowait.py);
- P1 loop: tpcc_nowait's plain loop pinned to core 0 (the same file, terminals, inputs and
  transaction functions, nothing else);
- P2 harness, local-only: 2 partition servers pinned to cores 0 and 1, a remote warehouse
  drawn within the home partition (no transaction spans the two);
- P2 harness, remote: the specification's draw over all warehouses (1% of order lines, 15%
  of payments remote): those on the other partition go through two-phase commit;
- P2 loops: two plain loops at once, one per partition file pinned to its core, local-only
  (a plain loop reaches no other partition: the no-coordination ceiling).

Per round: new orders per minute in the window (New-Orders committed in it) for each;
paired ratios P2 harness / P2 loops (local-only and remote apart: goal >= 0.9) and the
scaleups P2 / P1 of the harness and of the loops; medians and spread (min-max) over rounds.
Then the tool's USL fit (wisconsin.analysis.scalability.fit_usl) on C(N) = X(N) / X(1).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here] + [_here]

from tpcc_nowait import _load, plain_loop  # noqa: E402  (the plain loop, reused)

from wisconsin.analysis.scalability import fit_usl, usl  # noqa: E402
from wisconsin.workloads.tpcc import load  # noqa: E402
from wisconsin.workloads.tpcc.schema import Placement, Scale  # noqa: E402
from wisconsin.workloads.tpcc.server import PartitionServers  # noqa: E402

SEED = 7
GOAL = 0.9
QUICK_SCALE = Scale(customers_per_district=30, items=200)  # --quick: a tiny database
SIDES = ("P1 harness", "P1 loop", "P2 harness local", "P2 harness remote", "P2 loops")


def harness(db: Path, m, window: float, seed: int, local_only: bool) -> float:
    """New orders per minute in the window, the partition servers pinned one per core."""
    with PartitionServers(db, m, load.ack_log_dir(db), pin=True) as s:
        tallies = s.run(_load(m, window, seed, local_only))
    return sum(len(t["no_done"]) for t in tallies) * 60 / window


def loops(db: Path, m, window: float, seed: int) -> float:
    """P plain loops at once, partition p's on the p-th usable core: their sum."""
    ctx = mp.get_context("spawn")
    cores = sorted(os.sched_getaffinity(0))
    q = ctx.Queue()
    procs = [
        ctx.Process(target=plain_loop, args=(str(path), m, window, seed, cores[p], q, p))
        for p, path in enumerate(load.partition_paths(db, m))
    ]
    for p in procs:
        p.start()
    got = [q.get(timeout=window + 300) for _ in procs]
    for p in procs:
        p.join()
    return sum(x[0] for x in got)


def _spread(xs) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def _usl_lines(x1: float, x2: float) -> list[str]:
    """What the tool's USL fit says from the measured points, and what it cannot."""
    c2 = x2 / x1 if x1 else 0.0
    out = [f"  USL on C(N) = X(N) / X(1): C(1) = 1 by definition, C(2) = {c2:.2f} measured"]
    fit = fit_usl([2.0], [c2])
    out.append(f"  the tool's fit_usl on P = 1, 2: {fit.note or 'fitted'}")
    out.append(
        "  from P = 1 alone the USL predicts nothing of P = 2 but its bound: C(2) <= 2 (linear, "
        f"sigma = kappa = 0), i.e. X(2) <= {2 * x1:.1f}; measured {x2:.1f} ({c2 / 2:.0%} of it)"
    )
    if c2 <= 0:
        return out
    # one point beyond P0 fixes one parameter: C(2) = 2 / (1 + sigma + 2 kappa)
    if c2 >= 1.0:
        sigma, kappa, fixed = 2.0 / c2 - 1.0, 0.0, "with kappa = 0, sigma"
        bound = "an upper bound (any coherency cost kappa > 0 lowers it)"
    else:  # retrograde: sigma <= 1 cannot explain C(2) < 1; only kappa can
        sigma, kappa, fixed = 1.0, 1.0 / c2 - 1.0, "retrograde: with sigma = 1, kappa"
        bound = "falling further as kappa says"
    pred = {n: float(usl(n, sigma, kappa)) for n in (3, 4)}
    value = kappa if kappa else sigma
    out.append(
        f"  one point beyond P0 fixes one parameter: {fixed} = {value:.3f}; then "
        + ", ".join(f"X({n}) ~ {x1 * c:.1f} (C = {c:.2f})" for n, c in pred.items())
        + f": {bound}; P > 2 on this machine's cores would be unpinned; sigma and kappa "
        "apart need 3 points beyond P0"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=12.0)
    ap.add_argument(
        "--warehouses", type=int, default=None, help="warehouses per partition (2; --quick 1)"
    )
    ap.add_argument(
        "--quick", action="store_true", help="1 round of 1.5 s on a tiny 1-warehouse database"
    )
    ap.add_argument("--dir", default=None, help="where to build (default: the temp dir)")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("tpcc_scaleup: needs 2 usable cores (P = 2 pinned one per core)")
    rounds, window, scale = args.rounds, args.window, None
    if args.quick:
        rounds, window, scale = 1, 1.5, QUICK_SCALE
    wp = args.warehouses or (1 if args.quick else 2)
    print(f"tpcc scaleup P = 1 -> 2, no-wait, {wp} warehouse(s) per partition, pinned; "
          f"{rounds} round(s) of 2 s ramp + {window:g} s window per side, order reversed "
          f"every other round; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          "cores" + (" (--quick: tiny database)" if args.quick else ""))  # fmt: skip
    tmp = Path(tempfile.mkdtemp(dir=args.dir, prefix="tpcc-scaleup-"))
    try:
        t0 = time.perf_counter()
        extra = {"scale": scale} if scale else {}
        dbs = {p: tmp / f"p{p}" for p in (1, 2)}
        ms = {p: load.build(dbs[p], Placement(p, wp), SEED, **extra) for p in (1, 2)}
        print(f"  built both databases in {time.perf_counter() - t0:.0f} s")
        runs = {
            "P1 harness": lambda s: harness(dbs[1], ms[1], window, s, False),
            "P1 loop": lambda s: loops(dbs[1], ms[1], window, s),
            "P2 harness local": lambda s: harness(dbs[2], ms[2], window, s, True),
            "P2 harness remote": lambda s: harness(dbs[2], ms[2], window, s, False),
            "P2 loops": lambda s: loops(dbs[2], ms[2], window, s),
        }
        got: dict[str, list[float]] = {k: [] for k in SIDES}
        for r in range(rounds):
            order = SIDES if r % 2 == 0 else SIDES[::-1]
            for side in order:
                got[side].append(runs[side](SEED + r))
                print(f"  round {r + 1} {side:18}: {got[side][-1]:8.1f} new orders/min  "
                      f"(load average {os.getloadavg()[0]:.1f})")  # fmt: skip
        _summary(got, rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _summary(got: dict[str, list[float]], rounds: int) -> None:
    def paired(a: str, b: str) -> list[float]:
        return [x / y if y else 0.0 for x, y in zip(got[a], got[b], strict=True)]

    print("\n  side                new orders/min (median, min-max over rounds)")
    for side in SIDES:
        print(f"  {side:18}  {_spread(got[side])}")
    print("\n  paired per round (median, min-max):")
    for name, a, b, goal in (
        ("P2 harness local-only / P2 loops", "P2 harness local", "P2 loops", True),
        ("P2 harness remote / P2 loops", "P2 harness remote", "P2 loops", True),
        ("scaleup harness local-only P2 / P1", "P2 harness local", "P1 harness", False),
        ("scaleup harness remote P2 / P1", "P2 harness remote", "P1 harness", False),
        ("scaleup loops P2 / P1", "P2 loops", "P1 loop", False),
        ("P1 harness / P1 loop", "P1 harness", "P1 loop", False),
    ):
        r = paired(a, b)
        tail = ""
        if goal:
            tail = f"  -> goal >= {GOAL} " + ("met" if statistics.median(r) >= GOAL else "NOT met")
        print(f"  {name:36} {_spread(r)}{tail}")
    print()
    x1 = statistics.median(got["P1 harness"])
    for label, side in (("local-only", "P2 harness local"), ("remote", "P2 harness remote")):
        print(f"  harness, {label}:")
        for line in _usl_lines(x1, statistics.median(got[side])):
            print(line)


if __name__ == "__main__":
    with recorded("tpcc-scaleup"):
        main()
