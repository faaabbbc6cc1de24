"""Both OLTP workloads on the tests' namespace cluster at P = 2 and P = 4 (issue 47).

Usage: python benchmarks/oltp_cluster_sizes.py [--sizes 2,4] [--dc-step-seconds 4]
       [--tpcc-window 20] [--dir D]

Starts the tests' namespace cluster with TLS (a scheduler and four workers, each on a
simulated host of its own, all on this machine), then for each P runs, as a user would:

- `wisconsin bench --workload debitcredit --cluster ADDR --partitions P` (small: 2 branches
  a partition, short steps, one repeat);
- `wisconsin bench --workload tpcc --cluster ADDR --partitions P`, with one warehouse a
  partition at a tiny scale (30 customers a district, 200 items), no-wait terminals, a 2 s
  ramp-up: the CLI's own TPC-C sizes are the specification's, minutes to build per host;

and after each `wisconsin audit RUN.json` (its rule count and exit status) and, here, the
independent check of every host's own partition files (DebitCredit: balances, combined over
the hosts; TPC-C: conditions 3.3.2.1-4 on each host). Prints one table: each run's audit,
its independent check, throughput (DebitCredit: peak tps; TPC-C: new orders a minute) and
the load average before and after it. The simulated hosts share this machine's cores: the
throughputs are not a cluster's, they show the runs complete and check at each P.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(_here)
# run as a script, this file's directory is sys.path[0]; the namespace harness is the tests'
sys.path.append(os.path.join(ROOT, "tests"))

from harness.netns import NetnsCluster, cleanup_stale, make_tls_files  # noqa: E402

WORKERS = 4
# `bench --workload tpcc` with tiny tables (its options size a specification database)
TPCC_BENCH = """
import functools, sys
from wisconsin.cli import main
from wisconsin.workloads.tpcc import pipeline
from wisconsin.workloads.tpcc.schema import Scale
pipeline.run_bench = functools.partial(pipeline.run_bench, warehouses_per_partition=1,
    mode="nowait", ramp_s=2.0, scale=Scale(customers_per_district=30, items=200))
sys.argv = ["wisconsin", *sys.argv[1:]]
main()
"""


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def wisconsin(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def audit(path: Path) -> tuple[str, int]:
    """`wisconsin audit RUN.json`: its count line (N of M rules pass...) and exit status."""
    res = wisconsin(["-m", "wisconsin", "audit", str(path)])
    counts = [x for x in res.stdout.splitlines() if re.search(r"\d+ of \d+ rules? pass", x)]
    failed = [x for x in res.stdout.splitlines() if x.startswith("FAIL")]
    for line in failed:
        print(f"    {line}")
    return (counts[-1] if counts else "no count: " + res.stderr.strip()[-200:]), res.returncode


def _bench(args: list[str], out: Path, pattern: str):
    """(the finished process, its wall seconds, its run file or None)."""
    t0 = time.perf_counter()
    res = wisconsin(args)
    wall = time.perf_counter() - t0
    runs = sorted(out.glob(pattern))
    return res, wall, runs[-1] if runs else None


def _failed(res) -> dict:
    return {"failed": f"exit {res.returncode}: {(res.stdout + res.stderr).strip()[-300:]}"}


def debitcredit(p: int, cluster, tls: list[str], work: Path, step_s: float) -> dict:
    from wisconsin.workloads.debitcredit import check, metrics
    from wisconsin.workloads.debitcredit.runfile import load

    out = work / f"runs-dc-p{p}"
    args = ["-m", "wisconsin", "bench", "--workload", "debitcredit", "--partitions", str(p),
            "--branches", "2", "--step-seconds", f"{step_s:g}", "--repeat", "1",
            "--data", str(work / f"coord-dc-p{p}"), "--out", str(out), "--quiet",
            "--cluster", cluster.scheduler_address, *tls]  # fmt: skip
    res, wall, run_path = _bench(args, out, "debitcredit-*.json")
    if run_path is None:
        return _failed(res)
    (r,) = load(run_path).results
    reports = [check.host_report([h.path]) for h in r.cluster.hosts]
    ok, lines = check.combine(reports, "hosts")
    return {
        "bench_exit": res.returncode,
        "wall_s": round(wall, 1),
        "run": run_path,
        "throughput": f"{metrics.peak_tps(r).fmt()} tps peak",
        "bench_check": "OK" if r.audit.ok and r.audit.independent_ok else "FAILED",
        "here_check": ("OK" if ok else "FAILED")
        + f" ({len(reports)} hosts, {sum(x['rows'] for x in reports):,} history rows)",
    }


def tpcc(p: int, cluster, tls: list[str], work: Path, window_s: float) -> dict:
    from wisconsin.workloads.tpcc import check, metrics
    from wisconsin.workloads.tpcc.runfile import load

    out = work / f"runs-tpcc-p{p}"
    args = ["-c", TPCC_BENCH, "bench", "--workload", "tpcc", "--partitions", str(p),
            "--step-seconds", f"{window_s:g}", "--data", str(work / f"coord-tpcc-p{p}"),
            "--out", str(out), "--quiet", "--cluster", cluster.scheduler_address, *tls]  # fmt: skip
    res, wall, run_path = _bench(args, out, "tpcc-*.json")
    if run_path is None:
        return _failed(res)
    run = load(run_path)
    found = [check.independent_check(str(Path(h.path).parent)) for h in run.config.cluster.hosts]
    ok = all(f[0] for f in found)
    a = run.result.receipts
    return {
        "bench_exit": res.returncode,
        "wall_s": round(wall, 1),
        "run": run_path,
        "throughput": f"{metrics.tpmc_interval(run.result, window_s).fmt()} new orders/min",
        "bench_check": (
            "OK" if run.result.independent_ok and not run.result.consistency_failed else "FAILED"
        )
        + f"; receipts {a.found} of {a.with_keys} found",
        "here_check": ("OK" if ok else "FAILED") + f" ({len(found)} hosts, conditions 1-4)",
    }


def run(args) -> int:
    work = Path(args.dir or tempfile.mkdtemp(prefix="oltp-cluster-sizes-"))
    cleanup_stale()
    files = make_tls_files(work / "tls")
    tls = ["--tls-ca", str(files.ca), "--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    rows = []
    bad = 0
    t0 = time.perf_counter()
    with NetnsCluster(WORKERS, work / "cluster", tls=files) as cluster:
        print(f"cluster: {cluster.scheduler_address}, TLS, workers {cluster.worker_names}")
        for p in args.sizes:
            for name, fn, arg in (("debitcredit", debitcredit, args.dc_step_seconds),
                                  ("tpcc", tpcc, args.tpcc_window)):  # fmt: skip
                before = load_average()
                r = fn(p, cluster, tls, work, arg)
                r.update(workload=name, P=p, load_before=before, load_after=load_average())
                if "failed" not in r:
                    r["audit"], r["audit_exit"] = audit(r["run"])
                    bad += r["audit_exit"] != 0 or "FAILED" in r["bench_check"] + r["here_check"]
                else:
                    bad += 1
                rows.append(r)
                print(f"{name} P={p}: " + ", ".join(
                    f"{k} {v}" for k, v in r.items() if k not in ("workload", "P", "run")))  # fmt: skip
    total = time.perf_counter() - t0
    print()
    print(
        "| workload | P | `wisconsin audit` | exit | bench's check | independent check here "
        "| throughput | wall s | load before -> after |"
    )
    print("|---|---:|---|---:|---|---|---|---:|---|")
    for r in rows:
        if "failed" in r:
            print(f"| {r['workload']} | {r['P']} | FAILED: {r['failed']} | | | | | | |")
            continue
        print(f"| {r['workload']} | {r['P']} | {r['audit']} | {r['audit_exit']} | "
              f"{r['bench_check']} | {r['here_check']} | {r['throughput']} | "
              f"{r['wall_s']:.0f} | {r['load_before']} -> {r['load_after']} |")  # fmt: skip
    print(f"\n{len(rows) - bad} of {len(rows)} runs complete with their audit and checks "
          f"passing; {total:.0f} s in all (cluster start included)")  # fmt: skip
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not bad else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2,4", help="partition counts (default 2,4)")
    ap.add_argument("--dc-step-seconds", type=float, default=4.0)
    ap.add_argument("--tpcc-window", type=float, default=20.0)
    ap.add_argument("--dir", help="keep the cluster's files here (default: a temporary one)")
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",")]
    if max(args.sizes) > WORKERS:
        ap.error(f"at most {WORKERS} partitions (one worker each)")
    if os.geteuid() != 0:
        ap.error("needs root: the cluster is network namespaces")
    return run(args)


if __name__ == "__main__":
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("oltp-cluster-sizes"):
        code = main()
    sys.exit(code)
