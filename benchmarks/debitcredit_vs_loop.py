"""DebitCredit through the harness against a plain DuckDB loop, over steady steps (issue 31).

Usage: python benchmarks/debitcredit_vs_loop.py [--seconds 30] [--rounds 3] [--branches 100]
       [--dir D]

One P = 1 database (default 1,000,000 accounts), built once; per round, in rotated order:
  plain     this process, one connection, a loop of transaction.run_local (the same
            transaction: account + read back, teller, branch, history, COMMIT)
  plain8    the same loop on 8 cursors (threads) of one DuckDB instance, conflicts retried
  harness1  the partition server (server.py) with one closed stream: terminal, driver log
            (fsynced acknowledgements), histogram, retries
  harness8  the same with 8 closed streams (the bench's default)
each after a 2 s warm-up, then a --seconds window counted second by second, with the
engine's memory (duckdb_memory() total) sampled each second; then a 3 s fsync probe
(100-byte appends + fdatasync in the same directory: durable commits per second if each
forces the log once). Printed per round: delivered tps, drift first -> last third, engine
memory first -> last; then medians [min-max] and the paired ratios harness / plain.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]  # no shadowing

from wisconsin.workloads.debitcredit import metrics, pipeline, schema, transaction  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import PartitionServers  # noqa: E402
from wisconsin.workloads.debitcredit.driver import Load  # noqa: E402
from wisconsin.workloads.debitcredit.server import ENGINE_MEMORY  # noqa: E402

MB = 2**20
WARM_S = 2.0
WAL: list[int] = []  # the last plain step's WAL bytes per second


def checkpoints(series, wal) -> str:
    """Seconds where the WAL shrank (a checkpoint), with that second's tps against the
    step's median: do the dips of the per-second series fall on checkpoints?"""
    med = statistics.median(series) or 1.0
    at = [i for i in range(1, min(len(wal), len(series))) if wal[i] < wal[i - 1]]
    return ", ".join(f"s{i} {series[i] / med:.2f}x" for i in at) or "none"


def plain(path: Path, sizing, seconds: float, seed: int, threads: int = 1):
    """(per-second commits, memory samples) of `threads` cursors of one DuckDB instance,
    each looping the transaction (a write-write conflict is retried, as the terminals do)."""
    con = schema.connect(path)
    mon = con.cursor()
    tellers, accounts = sizing.tellers(1), sizing.accounts(1)
    txids = itertools.count((seed << 40) + int(time.time() * 1e3))
    memory: list[int] = []
    WAL.clear()  # the write-ahead log's size each second: a drop is a checkpoint
    wal = Path(str(path) + ".wal")
    stop = threading.Event()

    def sample(t0):
        while not stop.is_set():
            memory.append(int(mon.execute(ENGINE_MEMORY).fetchall()[0][0] or 0))
            WAL.append(wal.stat().st_size if wal.exists() else 0)
            stop.wait(max(0.0, t0 + len(memory) - time.perf_counter()))

    def loop(index, t_end, counts=None, t0=0.0):
        cur, rng = con.cursor(), random.Random(f"{seed}-{index}")
        while time.perf_counter() < t_end:
            tid, aid = rng.randrange(tellers), rng.randrange(accounts)
            delta = rng.randint(-999_999, 999_999)
            try:
                bid = sizing.branch_of_teller(tid)
                transaction.run_local(cur, next(txids), aid, tid, bid, delta)
            except Exception as exc:
                if not transaction.is_conflict(exc):
                    raise
                continue
            done = time.perf_counter()
            if counts is not None and done <= t_end:
                counts[min(int(done - t0), len(counts) - 1)] += 1  # one list op: GIL-atomic
        cur.close()

    def run(t_end, counts=None, t0=0.0):
        workers = [
            threading.Thread(target=loop, args=(i, t_end, counts, t0)) for i in range(threads)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    try:
        run(time.perf_counter() + WARM_S)
        counts = [0] * int(seconds)
        t0 = time.perf_counter()
        sampler = threading.Thread(target=sample, args=(t0,))
        sampler.start()
        run(t0 + seconds, counts, t0)
        stop.set()
        sampler.join()
    finally:
        mon.close()
        con.close()
    return [float(c) for c in counts], memory


def harness(root: Path, path: Path, sizing, seconds: float, streams: int, seed: int):
    load = Load("closed", seconds, streams=streams, seed=seed)
    wal, stop = Path(str(path) + ".wal"), threading.Event()

    def sample(t0):  # the server's WAL, from here: the same file
        while not stop.is_set():
            WAL.append(wal.stat().st_size if wal.exists() else 0)
            stop.wait(max(0.0, t0 + len(WAL) - time.perf_counter()))

    with PartitionServers(root, 1, sizing, root / f"log-{seed}") as servers:
        servers.run(Load("closed", WARM_S, streams=streams, seed=seed + 1))
        WAL.clear()
        sampler = threading.Thread(target=sample, args=(time.perf_counter(),))
        sampler.start()
        try:
            step = pipeline._step(load, 0, 1, servers.run(load))
        finally:
            stop.set()
            sampler.join()
    return list(step.tps_series), list(step.memory_bytes[0]), step


def fsync_probe(directory: Path, seconds: float) -> float:
    sys.path.insert(0, _here)
    from debitcredit import fsync_rate  # benchmarks/debitcredit.py

    return fsync_rate(directory, seconds)


def thirds(xs) -> tuple[float, float]:
    k = max(1, len(xs) // 3)
    return statistics.mean(xs[:k]), statistics.mean(xs[-k:])


def _iv(xs: list[float], digits: int = 1) -> str:
    return f"{statistics.median(xs):.{digits}f} [{min(xs):.{digits}f}-{max(xs):.{digits}f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--branches", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=None)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dc-vs-loop-", dir=a.dir))
    sizing = schema.Sizing(branches_per_partition=a.branches)
    (path,) = schema.build(root, 1, sizing)
    print(
        f"P = 1, {sizing.accounts(1):,} accounts ({path.stat().st_size / MB:.0f} MB file), "
        f"{a.rounds} rounds x {a.seconds:g} s steps after {WARM_S:g} s warm-up, order rotated"
    )
    sides = ["plain", "harness1", "plain8", "harness8"]
    tps: dict[str, list[float]] = {s: [] for s in sides}
    steady: dict[str, list[bool]] = {s: [] for s in sides}
    fsyncs: list[float] = []
    try:
        for r in range(a.rounds):
            for side in sides[r % 4 :] + sides[: r % 4]:
                if side.startswith("plain"):
                    threads = 1 if side == "plain" else 8
                    series, memory = plain(path, sizing, a.seconds, 100 + r, threads)
                    print(
                        f"  {side} checkpoints (WAL shrank; tps that second / median): "
                        f"{checkpoints(series, WAL)}; WAL max {max(WAL, default=0) / MB:.1f} MB"
                    )
                    drift, allowed = metrics.drift_of(series)  # as the bench judges
                    grew, mem_allowed = metrics.growth_of(memory)
                    ok = drift is not None and abs(drift) <= allowed and grew <= mem_allowed
                else:
                    streams = 1 if side == "harness1" else 8
                    seed = 1000 * (r + 1) + streams
                    series, memory, step = harness(root, path, sizing, a.seconds, streams, seed)
                    print(
                        f"  {side} checkpoints (WAL shrank; tps that second / median): "
                        f"{checkpoints(series, WAL)}; WAL max {max(WAL, default=0) / MB:.1f} MB"
                    )
                    v = metrics.steadiness(step)
                    ok, drift, allowed = bool(v.steady), v.drift, v.drift_allowed
                rate = sum(series) / len(series)
                tps[side].append(rate)
                steady[side].append(ok)
                f, last = thirds(series)
                print(
                    f"round {r + 1} {side:8s} {rate:7.1f} tps, thirds {f:.0f} -> {last:.0f} "
                    f"({(drift or 0):+.0%}, allowed {allowed:.0%}), memory {memory[0] / MB:.0f} -> {memory[-1] / MB:.0f} "
                    f"MB (max {max(memory) / MB:.0f}), {'steady' if ok else 'UNSTEADY'}",
                    flush=True,
                )
            fsyncs.append(fsync_probe(root, 3.0))
            print(f"round {r + 1} fsync    {fsyncs[-1]:7.1f} fdatasync/s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\ndelivered tps, median [min-max] over rounds; steady steps")
    for s in sides:
        print(f"  {s:8s} {_iv(tps[s])}  steady {sum(steady[s])}/{len(steady[s])}")
    print(f"  fsync    {_iv(fsyncs)} fdatasync/s")
    print("paired per round, median [min-max]:")
    for h, pl in (("harness1", "plain"), ("harness8", "plain8"), ("harness8", "plain")):
        ratios = [x / y for x, y in zip(tps[h], tps[pl], strict=True)]
        print(f"  {h} / {pl:6s}  {_iv(ratios, 2)}")
    for s in sides:
        ratios = [t / f for t, f in zip(tps[s], fsyncs, strict=True)]
        print(f"  {s} / fsync  {_iv(ratios, 2)}")


if __name__ == "__main__":
    # Imported here: spawned partition processes re-import this file without its directory
    # on sys.path. benchmarks/_results.py is in it when this runs as a script.
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("debitcredit-vs-loop"):
        main()
