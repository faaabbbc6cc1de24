"""Fault drill (issue 43, item 5): kill -9 a DebitCredit partition server during an open step.

Usage: python benchmarks/debitcredit_partition_kill.py [--trials 45] [--dir D] [--seed 43]

Each trial runs `wisconsin bench --workload debitcredit --partitions 2 --branches 2
--step-seconds 0.5 --repeat 1` (about 9 s), waits for its closed step's line (the open steps
start right after it), sleeps a varied 0.05-2.0 s, and kills one partition server (0 and 1
in turn; pid from <data>/debitcredit/dc2/_acklog/pids) with SIGKILL. The ending is classed:
one line naming that partition, its pid and the signal (exit 1) / silent exit / traceback /
finished (the kill came too late) / other. Then `wisconsin repair` on the database, and the
audit against the drivers' logs (`wisconsin info`) and the independent duckdb-only check
must both agree it is whole. Exits 1 unless every trial ended in the one line and agreed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import _dc_faults as dc  # beside _results, in this directory
from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

BENCH = ["--partitions", "2", "--branches", "2", "--step-seconds", "0.5", "--repeat", "1"]


def trial(i: int, rng: random.Random, root: Path) -> tuple[str, bool]:
    data, out = root / f"t{i:02d}" / "data", root / f"t{i:02d}" / "out"
    db = data / "debitcredit" / "dc2"
    victim = i % 2
    bench = dc.Bench([*BENCH, "--data", str(data), "--out", str(out)])
    started = time.monotonic()
    if not bench.wait_for("P=2 closed", 120):
        rc = bench.finish()
        print(f"{i:2d}: no closed step seen (exit {rc}): {dc.last(chr(10).join(bench.err))}")
        return "no open step", False
    delay = rng.uniform(0.05, 2.0)
    time.sleep(delay)
    pids = dict(line.split() for line in (db / "_acklog" / "pids").read_text().splitlines())
    pid = int(pids[str(victim)])
    with contextlib.suppress(ProcessLookupError):  # the bench finished before the kill
        os.kill(pid, signal.SIGKILL)
    rc = bench.finish()
    kind, said = dc.ending(rc, bench)
    named = f"partition {victim} (pid {pid}) was killed by signal 9 (SIGKILL)"
    if kind == "one line" and not (rc == 1 and named in said[0]):
        kind = "other"
    if kind == "one line":
        kind = "signal line"
    after = dc.repair_and_check(db)
    print(
        f"{i:2d}: kill p{victim} pid {pid} {delay:.2f} s after the closed step "
        f"({time.monotonic() - started:.1f} s in): exit {rc}, {kind}"
        + (f": {said[0] if said else '(nothing)'}" if kind != "signal line" or i < 3 else "")
    )
    if kind in ("traceback", "other"):
        for line in said[-12:]:
            print(f"      | {line}")
    print(
        f"      repair: {dc.last(after.repair)} (exit {after.repair_rc}); info exit "
        f"{after.info_rc}: {dc.last(after.info)}; independent check exit {after.check_rc}: "
        f"{dc.last(after.check)}"
    )
    shutil.rmtree(root / f"t{i:02d}", ignore_errors=True)
    return kind, after.agree


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=45)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seed", type=int, default=43)
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="dc-kill-"))
    rng = random.Random(args.seed)
    print(f"bench {' '.join(BENCH)}; {args.trials} trials under {root}")
    kinds, agreed = [], 0
    t0 = time.monotonic()
    for i in range(args.trials):
        kind, agree = trial(i, rng, root)
        kinds.append(kind)
        agreed += agree
    print(
        f"\nendings over {len(kinds)} trials: {dc.tally(kinds)}; after repair the audit and "
        f"the independent check agree (both whole) in {agreed} of {len(kinds)}; "
        f"{time.monotonic() - t0:.0f} s"
    )
    ok = kinds.count("signal line") == len(kinds) and agreed == len(kinds)
    return dc.conclude(ok, root, keep=bool(args.dir))


if __name__ == "__main__":
    with recorded("debitcredit-partition-kill"):
        sys.exit(main())
