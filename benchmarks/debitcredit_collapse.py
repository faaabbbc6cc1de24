"""The DebitCredit collapse (issue 31, finding 2), through the real partition server.

Usage: python benchmarks/debitcredit_collapse.py [--seconds 15] [--rounds 2] [--branches 10]
       [--streams 8] [--dir D]

Per round, in rotated order, on a freshly built P = 1 database:
  open   the old start-up: the partition process reads max(txid) from HISTORY with
         fetchone() and leaves the result unexhausted (server.last_txid(leave_open=True)),
         so its connection keeps a transaction open for the process's life
  fixed  today's start-up: the result is read to its end
then one closed step of --seconds (8 streams, no think time) through PartitionServers, as
`wisconsin bench` runs it. Printed per second: delivered tps, p95 response time, and the
partition's engine memory (duckdb_memory() total and its TRANSACTION tag) and temp-file
bytes, sampled by the server itself; then per variant the tps of the first and last thirds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]  # no shadowing

from wisconsin.oltp.series import per_second  # noqa: E402
from wisconsin.workloads.debitcredit import schema  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import PartitionServers  # noqa: E402
from wisconsin.workloads.debitcredit.driver import Load  # noqa: E402

MB = 2**20


def one(work: Path, sizing: schema.Sizing, seconds: float, streams: int, leave_open: bool):
    data = work / ("open" if leave_open else "fixed")
    shutil.rmtree(data, ignore_errors=True)
    schema.build(data, 1, sizing)
    with PartitionServers(data, 1, sizing, data / "log", leave_open=leave_open) as servers:
        (tally,) = servers.run(Load("closed", seconds, streams=streams, seed=31))
    shutil.rmtree(data, ignore_errors=True)
    tps, p95 = per_second(tally["done"], seconds)
    return tps, p95, tally["engine"], tally


def show(name: str, tps, p95, engine) -> None:
    print(f"\n{name}: second, delivered tps, p95 ms, engine MB, TRANSACTION MB, temp MB")
    for i, (t, p) in enumerate(zip(tps, p95, strict=True)):
        mem, txn, temp = engine[min(i + 1, len(engine) - 1)]  # the sample at the second's end
        print(
            f"  {i + 1:3d}  {t:7.1f}  {p * 1e3:7.0f}  {mem / MB:7.1f}  {txn / MB:7.1f}  {temp / MB:6.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--branches", type=int, default=10)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--dir", type=Path, default=None)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dc-collapse-", dir=a.dir))
    sizing = schema.Sizing(branches_per_partition=a.branches)
    print(
        f"P = 1, {sizing.accounts(1):,} accounts, closed {a.streams} streams, "
        f"{a.seconds:g} s per step, {a.rounds} rounds (order rotated)"
    )
    thirds: dict[str, list[tuple[float, float, float]]] = {"open": [], "fixed": []}
    try:
        for r in range(a.rounds):
            order = [True, False] if r % 2 == 0 else [False, True]
            for leave_open in order:
                name = "open" if leave_open else "fixed"
                tps, p95, engine, tally = one(work, sizing, a.seconds, a.streams, leave_open)
                show(
                    f"round {r + 1} {name} (first error: {tally['error'] or '-'})", tps, p95, engine
                )
                k = max(1, len(tps) // 3)
                thirds[name].append(
                    (statistics.mean(tps[:k]), statistics.mean(tps[-k:]), engine[-1][0] / MB)
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\nper variant, each round: tps first third -> last third (drift), engine MB at end")
    for name, rows in thirds.items():
        cells = [
            f"{f:.0f} -> {last:.0f} ({(last - f) / f:+.0%}), {m:.0f} MB" for f, last, m in rows
        ]
        print(f"  {name:5s}  " + "; ".join(cells))


if __name__ == "__main__":
    # Imported here: spawned partition processes re-import this file without its directory
    # on sys.path. benchmarks/_results.py is in it when this runs as a script.
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("debitcredit-collapse"):
        main()
