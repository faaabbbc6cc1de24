"""Where does each core's time go in pinned DebitCredit steps, harness against plain loops?
(issue 31: the harness scales P = 1 -> 2 about 10% less well than two plain loops; an
earlier note blamed the unpinned coordinator process.)

Usage: python benchmarks/archive/debitcredit_core_split.py [--rounds 5] [--seconds 20]

One 1,000,000-account database per partition. Per round, in turn: the bench's partition
servers at P = 1 and P = 2 (pinned, 8 closed streams each, 0% remote), then
benchmarks/debitcredit_scaleup.py's plain loops on one and on two cores. For each side:
delivered tps, and per core the shares of user, system, interrupt (irq + softirq), idle and
iowait time from /proc/stat. Harness sides also give each server's CPU seconds over its wall
seconds (from the step's tally) and this coordinating process's own CPU share (getrusage)
during the measured window. Loop sides' core split spans the loop processes' start-up too.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]  # no shadowing
sys.path.append(_here)  # last: the sibling scripts import, nothing installed is shadowed

import debitcredit_scaleup as scaleup  # noqa: E402  (its pinned loops)

from wisconsin.workloads.debitcredit import schema  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import PartitionServers  # noqa: E402
from wisconsin.workloads.debitcredit.driver import Load  # noqa: E402


def per_core() -> dict[str, list[int]]:
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                fields = line.split()
                out[fields[0]] = [int(x) for x in fields[1:9]]
    return out


def split(before, after) -> dict[str, str]:
    res = {}
    for core in before:
        d = [b - a for a, b in zip(before[core], after[core], strict=True)]
        t = sum(d) or 1
        res[core] = (
            f"user {(d[0] + d[1]) / t:4.0%}  system {d[2] / t:4.0%}  "
            f"irq {(d[5] + d[6]) / t:4.0%}  idle {d[3] / t:4.0%}  iowait {d[4] / t:4.0%}"
        )
    return res


def harness(root: Path, parts: int, sizing, seconds: float, seed: int):
    with PartitionServers(root, parts, sizing, root / f"log-{seed}", pin=True) as servers:
        for i in range(2):
            servers.run(Load("closed", 2.0, streams=8, seed=seed + 1 + i))
        r0, c0 = resource.getrusage(resource.RUSAGE_SELF), per_core()
        tallies = servers.run(Load("closed", seconds, streams=8, seed=seed, remote_share=0.0))
        c1, r1 = per_core(), resource.getrusage(resource.RUSAGE_SELF)
    tps = sum(t["committed"] for t in tallies) / seconds
    shares = [t["cpu_s"] / t["wall_s"] for t in tallies]
    mine = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / seconds
    return tps, shares, mine, split(c0, c1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dc-core-split-"))
    sizing = schema.Sizing(branches_per_partition=100)
    ups: dict[str, list[float]] = {"harness": [], "loops": []}
    try:
        schema.build(root / "h1", 1, sizing)
        schema.build(root / "h2", 2, sizing)
        loop_files = [schema.build(root / f"l{i}", 1, sizing)[0] for i in range(2)]
        for r in range(a.rounds):
            got = {}
            for side in ("harness1", "harness2", "loop1", "loop2"):
                n = int(side[-1])
                if side.startswith("harness"):
                    tps, shares, mine, cores = harness(
                        root / f"h{n}", n, sizing, a.seconds, 100 * r + n
                    )
                    extra = (f"; server CPU/wall {', '.join(f'{s:.2f}' for s in shares)}; "
                             f"this process {mine:.1%} of a core")  # fmt: skip
                else:
                    c0 = per_core()
                    tps, _ok = scaleup.loops(loop_files[:n], sizing, a.seconds, 100 * r + n)
                    cores, extra = split(c0, per_core()), " (core split includes start-up)"
                got[side] = tps
                print(f"round {r + 1} {side:8s} {tps:6.1f} tps{extra}")
                for core, text in cores.items():
                    print(f"    {core}: {text}")
                sys.stdout.flush()
            ups["harness"].append(got["harness2"] / got["harness1"])
            ups["loops"].append(got["loop2"] / got["loop1"])
            print(f"round {r + 1} scaleup: harness {ups['harness'][-1]:.2f}, "
                  f"loops {ups['loops'][-1]:.2f}", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rel = [h / lp for h, lp in zip(ups["harness"], ups["loops"], strict=True)]
    print(f"\nscaleup P = 1 -> 2, median over {a.rounds} rounds: harness "
          f"{statistics.median(ups['harness']):.2f}, loops {statistics.median(ups['loops']):.2f}, "
          f"ratio {statistics.median(rel):.2f} [{min(rel):.2f}-{max(rel):.2f}]")  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("debitcredit-core-split"):
        main()
