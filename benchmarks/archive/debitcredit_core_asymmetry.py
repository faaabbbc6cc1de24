"""Is the second core faster than the first for a P = 1 DebitCredit step? (issue 31: two
pinned plain loops deliver more than twice one, and P = 1 always runs on the first core.)

Usage: python benchmarks/archive/debitcredit_core_asymmetry.py [--seconds 20] [--rounds 3] [--dir D]
       (needs 2 usable cores)

On this VM the first core takes most inter-processor interrupts and the second all of the
disk's (/proc/interrupts). Per round, in a palindrome (the first side rotated each round),
one --seconds window of:
  loop@A, loop@B     debitcredit_scaleup.py's plain loop (8 cursors) pinned to the first /
                     the second core, the other core idle
  loop2              two loops at once, one per core, each one's rate printed
  harness@A, harness@B  the bench's partition server at P = 1 on the first / second core
Prints each rate and, per round (each side: the mean of its two steps): B/A for the loop
and the harness, and loop2 / (2 x loop@A) against loop2 / (loop@A + loop@B): how much of
the loops' superlinear scaleup is the P = 1 side's choice of core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(_here)  # last: the sibling script imports, nothing installed is shadowed

from debitcredit_scaleup import harness, loop_runs  # noqa: E402

from wisconsin.workloads.debitcredit import schema  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import pinned_cores  # noqa: E402


def loops_on(paths: list[Path], cores, sizing, seconds: float, seed: int) -> dict[int, float]:
    """Delivered tps of loop i pinned to cores[i], all at once."""
    got = loop_runs(paths, cores, sizing, seconds, seed)
    return {core: statistics.fmean(series) for core, (series, _memory) in got.items()}


def harness_on(core: int, root: Path, sizing, seconds: float, seed: int) -> float:
    """A P = 1 harness step with its server pinned to `core` (the usable set narrowed)."""
    usable = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        return harness(root, 1, sizing, seconds, 0.15, seed)[0]
    finally:
        os.sched_setaffinity(0, usable)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None)
    a = ap.parse_args()
    cores = pinned_cores(2)
    if len(cores) < 2:
        sys.exit("needs 2 usable cores")
    core_a, core_b = cores
    root = Path(tempfile.mkdtemp(prefix="dc-asym-", dir=a.dir))
    sizing = schema.Sizing(branches_per_partition=100)
    sides = ["loop@A", "loop@B", "loop2", "harness@A", "harness@B"]
    res: dict[str, list[float]] = {s: [] for s in sides + ["loop2@A", "loop2@B"]}
    try:
        schema.build(root / "h1", 1, sizing)
        files = [schema.build(root / f"l{i}", 1, sizing)[0] for i in range(2)]
        print(f"{sizing.accounts(1):,} accounts per file; A = core {core_a}, B = core {core_b}; "
              f"{a.rounds} rounds x 10 steps of {a.seconds:g} s, palindromic", flush=True)  # fmt: skip
        for r in range(a.rounds):
            base = sides[r % len(sides) :] + sides[: r % len(sides)]
            for i, side in enumerate(base + base[::-1]):
                seed = 1000 * (r + 1) + 10 * i + sides.index(side)
                core = core_b if side.endswith("@B") else core_a
                extra = ""
                if side == "loop2":
                    got = loops_on(files, cores, sizing, a.seconds, seed)
                    res["loop2@A"].append(got[core_a])
                    res["loop2@B"].append(got[core_b])
                    rate = got[core_a] + got[core_b]
                    extra = f"  (A {got[core_a]:.1f}, B {got[core_b]:.1f})"
                elif side.startswith("loop"):
                    rate = loops_on(files[:1], [core], sizing, a.seconds, seed)[core]
                else:
                    rate = harness_on(core, root / "h1", sizing, a.seconds, seed)
                res[side].append(rate)
                print(f"round {r + 1} {side:10s} {rate:6.1f} tps{extra}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def per_round(side: str) -> list[float]:
        v = res[side]
        return [statistics.fmean(v[2 * k : 2 * k + 2]) for k in range(a.rounds)]

    def show(name: str, ratios: list[float]) -> None:
        print(f"  {name:34s} {' '.join(f'{x:.3f}' for x in ratios)}  "
              f"median {statistics.median(ratios):.3f}")  # fmt: skip

    la, lb, l2 = per_round("loop@A"), per_round("loop@B"), per_round("loop2")
    ha, hb = per_round("harness@A"), per_round("harness@B")
    l2a, l2b = per_round("loop2@A"), per_round("loop2@B")
    print("\nper round")
    show("loop B/A", [b / x for x, b in zip(la, lb, strict=True)])
    show("harness B/A", [b / x for x, b in zip(ha, hb, strict=True)])
    show("loop2 / (2 x loop@A)", [y / (2 * x) for x, y in zip(la, l2, strict=True)])
    show("loop2 / (loop@A + loop@B)", [y / (x + b) for x, b, y in zip(la, lb, l2, strict=True)])
    show("in loop2: B/A", [b / x for x, b in zip(l2a, l2b, strict=True)])


if __name__ == "__main__":
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("debitcredit-core-asymmetry"):
        main()
