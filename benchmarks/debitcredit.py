"""DebitCredit single-partition costs: the harness vs a plain DuckDB loop, and the fsync limit.

Usage: python benchmarks/debitcredit.py [--seconds 3] [--rounds 5] [--branches 10] [--dir D]

Per round (order rotated every round, so drifting machine load hits every side alike):
  plain     one process, one connection, a loop of the same transaction (transaction.run_local:
            account + read back, teller, branch, history, COMMIT) on a P = 1 file
  harness   the same file served by a partition process (server.py), one closed stream:
            the terminal, the driver's log, the histogram, the retries
  harness4  the same, 4 closed streams (concurrency inside one DuckDB instance)
  memory    the plain loop on an in-memory copy (no WAL, no fsync): the CPU-only cost
  fsync     a loop of 100-byte appends + fdatasync in the same directory: the physical
            rate of durable commits if each transaction forces the log once
Printed: medians and [min-max] of each rate and of the paired ratios per round:
  harness / plain     the harness's cost per transaction (1.0 = free)
  plain / fsync       the share of the fsync ceiling a commit-per-transaction loop reaches
  plain / memory      what durability costs here; group commit (k transactions per fsync)
                      can at best recover the difference, never exceed `memory`
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import duckdb  # noqa: E402

from wisconsin.workloads.debitcredit import schema, transaction  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import PartitionServers  # noqa: E402
from wisconsin.workloads.debitcredit.driver import Load  # noqa: E402


def plain_loop(con, sizing: schema.Sizing, seconds: float, seed: int) -> float:
    rng = random.Random(seed)
    tellers = sizing.branches_per_partition * sizing.tellers_per_branch
    accounts = sizing.accounts(1)
    n, t_end, t0 = 0, time.perf_counter() + seconds, time.perf_counter()
    txid = seed << 40
    while time.perf_counter() < t_end:
        tid = rng.randrange(tellers)
        aid = rng.randrange(accounts)
        txid += 1
        transaction.run_local(con, txid, aid, tid, sizing.branch_of_teller(tid), rng.randint(-9, 9))
        n += 1
    return n / (time.perf_counter() - t0)


def fsync_rate(directory: Path, seconds: float) -> float:
    path = directory / "fsync.probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        n, t_end, t0 = 0, time.perf_counter() + seconds, time.perf_counter()
        while time.perf_counter() < t_end:
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            n += 1
        return n / (time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()


def harness(data_dir: Path, sizing, seconds: float, streams: int, seed: int) -> float:
    with PartitionServers(data_dir, 1, sizing, data_dir / "log") as servers:
        servers.run(Load("closed", 0.5, streams=streams, seed=seed))  # warm
        (tally,) = servers.run(Load("closed", seconds, streams=streams, seed=seed + 1))
    return tally["in_window"] / seconds


def _iv(xs: list[float]) -> str:
    return f"{statistics.median(xs):8.2f}  [{min(xs):.2f}-{max(xs):.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--branches", type=int, default=10, help="branches in the P=1 database")
    ap.add_argument("--dir", default=None, help="where to build (default: a temp dir)")
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="dc-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    sizing = schema.Sizing(branches_per_partition=args.branches)
    (path,) = schema.build(root, 1, sizing)
    mem = duckdb.connect(":memory:", config={"threads": 1})
    quoted = str(path).replace("'", "''")
    mem.execute(f"ATTACH '{quoted}' AS src (READ_ONLY)")
    for table in ("account", "teller", "branch", "history"):
        mem.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table}")
    mem.execute("DETACH src")
    print(
        f"P=1 database: {sizing.accounts(1):,} accounts, {args.rounds} rounds x {args.seconds:g} s"
    )
    sides = ["plain", "harness", "harness4", "memory", "fsync"]
    rates: dict[str, list[float]] = {s: [] for s in sides}
    for r in range(args.rounds):
        order = sides[r % len(sides) :] + sides[: r % len(sides)]
        for side in order:
            if side == "plain":
                con = schema.connect(path)
                rates[side].append(plain_loop(con, sizing, args.seconds, 100 + r))
                con.close()
            elif side == "harness":
                rates[side].append(harness(root, sizing, args.seconds, 1, 200 + r))
            elif side == "harness4":
                rates[side].append(harness(root, sizing, args.seconds, 4, 300 + r))
            elif side == "memory":
                rates[side].append(plain_loop(mem, sizing, args.seconds, 400 + r))
            else:
                rates[side].append(fsync_rate(path.parent, args.seconds))
        print(
            f"round {r + 1}: " + ", ".join(f"{s} {rates[s][-1]:.1f}/s" for s in sides), flush=True
        )
    print("\nrates (per second), median [min-max]:")
    for s in sides:
        print(f"  {s:10s} {_iv(rates[s])}")
    print("paired ratios per round, median [min-max]:")
    pairs = {
        "harness / plain": ("harness", "plain"),
        "harness4 / plain": ("harness4", "plain"),
        "plain / fsync": ("plain", "fsync"),
        "plain / memory": ("plain", "memory"),
    }
    for name, (a, b) in pairs.items():
        print(f"  {name:17s} {_iv([x / y for x, y in zip(rates[a], rates[b], strict=True)])}")
    per_txn = [1e3 / x - 1e3 / y for x, y in zip(rates["harness"], rates["plain"], strict=True)]
    print(f"harness cost per transaction: {statistics.median(per_txn):.2f} ms (median)")
    mem.close()
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with recorded("debitcredit"):
        main()
