"""Two runs on one Dask cluster's workers at once, N times (issue 29's trial).

Starts a scheduler and two workers named part0 and part1 (a local cluster of separate
processes, as `dask worker --name part0` would be), generates F2 in two data directories
through it (each partition on its owner's disk), then per trial runs `wisconsin run
--cluster` on both data directories at the same time. Each must finish with every answer
verified (`wisconsin audit` reports it). Then the same table twice: the second run is
refused in one line (the table's lock).

    python benchmarks/shared_cluster_runs.py --trials 5 --rows 100000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
# run as a script, this file's directory is sys.path[0] and its name shadows the package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def wisconsin(*args) -> list[str]:
    return [sys.executable, "-m", "wisconsin", *map(str, args)]


def run_args(address: str, data: Path, out: Path, repeat: int = 1) -> list[str]:
    return wisconsin("run", "--cluster", address, "--data", data, "--tables", "F",
                     "--partitions", 2, "--repeat", repeat, "--quiet", "--out", out)  # fmt: skip


def verified(run_file: Path) -> bool:
    data = json.loads(run_file.read_text())
    reps = [r for m in data["measurements"] for r in m["repetitions"]]
    return data["status"] == "complete" and bool(reps) and all(r["verified"] for r in reps)


def trials(work: Path, args) -> None:
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {
        f"part{p}": {"cls": Nanny, "options": {"nthreads": 1, "name": f"part{p}",
                                                "host": "127.0.0.1", "dashboard": False,
                                                "local_directory": str(work / "scratch")}}
        for p in range(2)
    }  # fmt: skip
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "port": 0,
                                               "dashboard_address": "127.0.0.1:0"}}  # fmt: skip
    with SpecCluster(scheduler=scheduler, workers=workers, silence_logs=logging.ERROR) as cluster:
        address = cluster.scheduler_address
        for name in ("a", "b"):
            subprocess.run(
                wisconsin("generate", "--cluster", address, "--data", work / name, "--kind", "F",
                          "--rows", args.rows, "--partitions", 2, "--seed", 7, "--quiet",
                          "--worker-data", work / f"workers-{name}"),
                check=True,
            )  # fmt: skip
        print(f"cluster {address}: workers part0, part1; F2 of {args.rows:,} rows in a and b")
        both_ok = 0
        for i in range(args.trials):
            t0 = time.monotonic()
            procs = {
                name: subprocess.Popen(
                    run_args(address, work / name, work / f"runs-{name}-{i}"),
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                )
                for name in ("a", "b")
            }  # fmt: skip
            said = {name: p.communicate(timeout=900)[1].strip() for name, p in procs.items()}
            results = {name: p.returncode for name, p in procs.items()}
            files = {n: next((work / f"runs-{n}-{i}").glob("*.json"), None) for n in procs}
            ok = {n: results[n] == 0 and files[n] is not None and verified(files[n]) for n in procs}
            both_ok += all(ok.values())
            print(
                f"trial {i + 1}: a exit {results['a']}, b exit {results['b']}; every answer "
                f"verified: a {ok['a']}, b {ok['b']} ({time.monotonic() - t0:.1f} s)"
                + "".join(f"; {n} said: {said[n][-300:]}" for n in procs if results[n])
            )
        first = subprocess.Popen(
            run_args(address, work / "a", work / "same-1", repeat=30),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        lock = work / "a" / "F2" / ".wisconsin.lock"
        while first.poll() is None and not (lock.is_file() and lock.read_text().strip()):
            time.sleep(0.05)
        second = subprocess.run(
            run_args(address, work / "a", work / "same-2"), capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        first.kill()
        first.wait()
        lines = second.stderr.strip().splitlines()
        print(f"\nboth runs complete with every answer verified: {both_ok} of {args.trials}")
        print(f"same table twice: second exit {second.returncode}, {len(lines)} line(s): "
              f"{lines[0] if lines else ''}")  # fmt: skip
        met = both_ok == args.trials and second.returncode == 2 and len(lines) == 1
        print(f"goal: every trial both complete and verified, the same table refused in one "
              f"line: {'met' if met else 'NOT met'}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="shared-cluster-runs-"))
    try:
        trials(work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    # Here, not at the top: the workers' processes re-import this file without its directory.
    sys.path.insert(0, _here)
    from _results import recorded  # benchmarks/_results.py

    with recorded("shared-cluster-runs"):
        main()
