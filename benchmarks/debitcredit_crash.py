"""DebitCredit durability demonstration: kill -9 a partition and the coordinator mid-run.

Usage: python benchmarks/debitcredit_crash.py [--partitions 2] [--branches 4] [--acked 200]
       [--rounds 3] [--dir D]

Each round builds a fresh P-partition database, runs closed load from a coordinator child
process, and once the drivers have acknowledged --acked commits kills partition P-1's process
and the coordinator with SIGKILL. Then: recovery (remote halves redone), the audit against
the drivers' logs, and the independent duckdb-only check. Prints one block per round; exits 1
if any round breaks an invariant.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin.workloads.debitcredit import schema  # noqa: E402
from wisconsin.workloads.debitcredit.crash import crash_test  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--branches", type=int, default=4)
    ap.add_argument("--acked", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="dc-crash-"))
    sizing = schema.Sizing(branches_per_partition=args.branches, accounts_per_branch=1000)
    bad = 0
    for r in range(args.rounds):
        res = crash_test(
            root / f"round{r}", args.partitions, sizing, args.acked, victim=args.partitions - 1
        )
        a = res.audit
        print(f"round {r + 1}: killed partition {args.partitions - 1} and the coordinator "
              f"after {res.acknowledged_before_kill} acknowledged commits")  # fmt: skip
        print(f"  recovery: {res.recovered} decided remote halves redone")
        print(
            f"  audit: begun {a.begun}, acknowledged {a.acknowledged}, given up {a.aborted}, "
            f"in doubt and committed {a.in_doubt_committed}; history rows {a.history_rows} "
            f"(distributed {a.distributed_rows}); acknowledged but missing "
            f"{a.acknowledged_missing}; given up but present {a.aborted_present}; never begun "
            f"{a.unknown_present}; half-committed {a.half_committed}; row mismatches "
            f"{a.bad_accounts + a.bad_tellers + a.bad_branches} -> "
            + ("OK" if a.ok else "VOID: " + "; ".join(a.problems))
        )
        print("  " + "\n  ".join(res.independent))
        bad += not (a.ok and res.independent_ok)
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    with recorded("debitcredit-crash"):
        sys.exit(main())
