"""The capacity model across hosts (issue 47): DebitCredit at P = 1, 2, 4, 8 on the tests'
namespace cluster, the USL fitted on the smaller P, the largest predicted and its error.

Usage: python benchmarks/oltp_capacity.py [--partitions 1,2,4,8] [--branches 2]
       [--step-seconds 3] [--repeat 3] [--dir D]

The script starts the tests' namespace cluster with TLS (a scheduler and one worker per
partition of the largest P, each on its own simulated host), runs `wisconsin bench
--workload debitcredit --cluster ADDR` once over every P (one partition server per
worker), then fits the capacity model (analysis.capacity, as `wisconsin report` does on
three P or more) on every P but the largest and predicts it. Each point is one steady
closed (peak) window, so --repeat 3 gives three points per P and intervals. The simulated
hosts share this machine's cores: past the cores, P bends, and the model's error says how
far its fit on the smaller P misses that. The load average is printed before and after
(the result file records it too).
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

_here = os.path.dirname(os.path.abspath(__file__))
from _results import recorded  # noqa: E402

# run as a script, this file's directory is sys.path[0]; the namespace harness is the tests'
sys.path.append(os.path.join(os.path.dirname(_here), "tests"))

from harness.netns import NetnsCluster, cleanup_stale, make_tls_files  # noqa: E402


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run(args) -> int:
    from wisconsin.analysis import capacity
    from wisconsin.oltp import cpu
    from wisconsin.workloads.debitcredit import interconnect, metrics, runfile

    work = Path(args.dir or tempfile.mkdtemp(prefix="oltp-capacity-"))
    cleanup_stale()
    tls = make_tls_files(work / "tls")
    parts = sorted(int(p) for p in args.partitions.split(","))
    print(f"before: {load_average()}", flush=True)
    t0 = time.perf_counter()
    with NetnsCluster(max(parts), work / "cluster", tls=tls) as cluster:
        cmd = [
            sys.executable, "-m", "wisconsin", "bench", "--workload", "debitcredit",
            "--partitions", ",".join(map(str, parts)), "--branches", str(args.branches),
            "--step-seconds", str(args.step_seconds), "--repeat", str(args.repeat),
            "--data", str(work / "coordinator"), "--out", str(work / "runs"),
            "--cluster", cluster.scheduler_address, "--tls-ca", str(tls.ca),
            "--tls-cert", str(tls.cert), "--tls-key", str(tls.key), "--quiet",
        ]  # fmt: skip
        print("$ wisconsin " + " ".join(cmd[3:]), flush=True)
        done = subprocess.run(cmd, capture_output=True, text=True)
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n", flush=True)
    print(f"bench exit {done.returncode} after {time.perf_counter() - t0:.0f} s; "
          f"after: {load_average()}")  # fmt: skip
    files = sorted((work / "runs").glob("debitcredit-*.json"))
    if not files:
        print("no run file written")
        return 1
    r = runfile.load(files[-1])
    print("\nper P: peak tps (steady closed windows), audit, links, remote transactions' cost")
    for res in r.results:
        hosts = len(res.cluster.hosts) if res.cluster else 0
        rtt = interconnect.link_rtt_s(res.cluster) if res.cluster else None
        print(f"P={res.partitions}: peak {metrics.peak_tps(res).fmt()} tps on {hosts} hosts, "
              f"audit {'OK' if res.audit.ok else 'VOID'}, link RTT "
              f"{'-' if rtt is None else f'{rtt * 1e3:.3f} ms'}")  # fmt: skip
        print(f"  {interconnect.cost_line(res) or cpu.line(None)}")
    points, differ = metrics.capacity_points([r])
    print("\n" + (differ or "\n".join(capacity.lines(capacity.model(points), "tps"))))
    if not differ and len(points) > capacity.MIN_FITTED_P:  # every P fitted: the next one
        print(
            "\nwith every P fitted:\n"
            + "\n".join(capacity.lines(capacity.model(points, hold_out=False), "tps"))
        )
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if done.returncode in (0, 1) else done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="1,2,4,8")
    ap.add_argument("--branches", type=int, default=2)
    ap.add_argument("--step-seconds", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="keep the cluster's files and the run here")
    return run(ap.parse_args())


if __name__ == "__main__":
    with recorded("oltp-capacity"):
        sys.exit(main())
