"""`wisconsin bench --workload tpcc` with no flags: its wall time (goal: within 15 minutes),
its verdict block, its audit, and the machine's load before and after.

Usage: python benchmarks/tpcc_bench.py [--keep DIR]

Runs the CLI as a user would, in a fresh temporary working directory (the default --data and
--out are relative), then `wisconsin audit` of the run file it wrote. Prints the report's
verdict block, the audit's lines, the wall time against 15 minutes and `uptime` before and
after (the machine is shared: read the times with its load).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 15 * 60


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", default=None, help="run in this directory and keep it")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="tpcc-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"before: {_uptime()}")
    t0 = time.perf_counter()
    bench = subprocess.run([sys.executable, "-m", "wisconsin", "bench", "--workload", "tpcc"],
                           cwd=work, env=env, capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - t0
    print(f"after:  {_uptime()}")
    print(
        f"exit status {bench.returncode}; wall {wall / 60:.1f} min (goal <= 15 min: "
        + ("met" if wall <= GOAL_S and bench.returncode == 0 else "NOT met")
        + ")"
    )
    print(bench.stdout)
    print("\n".join("[bench stderr] " + line for line in bench.stderr.splitlines()[-10:]))
    runs = sorted((work / "wisconsin-runs").glob("tpcc-*.json"))
    if runs:
        audit = subprocess.run([sys.executable, "-m", "wisconsin", "audit", str(runs[-1])],
                               cwd=work, env=env, capture_output=True, text=True)  # fmt: skip
        print(f"`wisconsin audit` exit status {audit.returncode}:\n{audit.stdout}{audit.stderr}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    with recorded("tpcc-bench"):
        main()
