"""How build and run costs grow with table size: F and G at n, 2n, 4n, 8n.

Usage: python benchmarks/scale.py [--rows 1000000] [--factors 1,2,4,8] [--partitions 2]
                                  [--repeat 3] [--rounds 1] [--dir DIR] [--mode shared-nothing]

For each size k*n (k in --factors), in a fresh child process (so peak RSS is per size):
builds F (k*n rows) and G (k*n / P rows per partition: the same total) at P = --partitions
with builds.build_tables (as `wisconsin generate` does), then runs all five queries on both
with wisconsin.measure.runner.run (warm-up + --repeat timed repetitions, answers verified), and
deletes the tables. Prints per size:

  build s        wall time of the build (both tables); est = wisconsin.builds.cost's estimate
  build peak     peak RSS of any build worker (getrusage of the reaped workers)
  disk           bytes of the two tables' directories after the run (files + result tables)
  start-up s     the run's start-up: time from calling run() until its first statement was
                 dispatched (the earliest `dispatched_unix` in the run file, warm-ups
                 included): engine start, expected answers, the check before timing, the
                 first step's reset and eviction
  1st step s     the previous definition: until the first step finished, minus its statement's
                 wall time; it also counts that step's verification and undo, which grow with
                 the data (1% of the rows), so it is not start-up
  answers s      expected_answers() for both tables (read from the manifests); regen s:
                 what regenerating the rows took (the run's start-up before this change)
  run peak       peak RSS of the run (coordinator and every partition's worker)
  query s        median timed wall time per query, F and G summed

and each value's ratio to the first size (linear growth = 2x per doubling). With --rounds
> 1 the sizes are interleaved per round and medians are printed. Data goes under --dir
(default: the system temp dir); 8n at the default n needs ~8 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

QUERIES = ("scan", "select", "average", "update", "join")


def _dir_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def one_size(data: Path, rows: int, parts: int, repeat: int, mode: str, seed: int) -> dict:
    """Build, run and measure one size in this process; return the measurements."""
    from wisconsin import store
    from wisconsin.builds import build_tables, cost, default_jobs
    from wisconsin.engines import default_memory_limit
    from wisconsin.engines.base import EngineConfig
    from wisconsin.measure.runner import RunOptions, run
    from wisconsin.store import expect
    from wisconsin.workloads.wisconsin.queries import CATALOG

    specs = [
        store.TableSpec("F", rows, parts, seed),
        store.TableSpec("G", rows // parts, parts, seed),
    ]
    jobs = default_jobs()
    est = cost.estimate_tables(data, specs, jobs)
    t0 = time.perf_counter()
    built = build_tables(data, specs, jobs=jobs)
    build_s = time.perf_counter() - t0
    build_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024

    manifests = built.manifests
    t0 = time.perf_counter()
    for m in manifests:
        expect.expected_answers(m)
    answers_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for m in manifests:
        expect.regenerate_answers(m)
    regen_s = time.perf_counter() - t0

    engine = EngineConfig(memory_limit=default_memory_limit(mode, (parts,)))
    opts = RunOptions(
        catalog=CATALOG,
        data_dir=str(data),
        mode=mode,
        kinds=("F", "G"),
        partitions=(parts,),
        repeat=repeat,
        warmup=1,
        out=str(data / "run.json"),
        engine=engine,
    )
    first_done: list[float] = []

    def progress(label: str, done: int, total: int) -> None:
        if done >= 1 and not first_done:
            first_done.append(time.perf_counter())

    t0, t0_unix = time.perf_counter(), time.time()
    result, _path = run(opts, progress=progress)
    run_s = time.perf_counter() - t0
    first = result.measurements[0]
    first_step = first_done[0] - t0 - first.warmup.wall_s
    dispatched = [
        r.dispatched_unix
        for m in (*result.measurements, *result.baseline)
        for r in (m.warmup, *m.repetitions)
        if r.dispatched_unix is not None
    ]
    startup = min(dispatched) - t0_unix
    per_query = {
        q: sum(statistics.median(m.times) for m in result.measurements if m.query == q)
        for q in QUERIES
    }
    run_peak = max(
        [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024]
        + [
            s.peak_rss_bytes
            for m in result.measurements
            for r in (m.warmup, *m.repetitions)
            for s in r.partitions
        ]
    )
    disk = sum(_dir_bytes(data / s.name) for s in specs)
    return {
        "rows": rows,
        "build_s": build_s,
        "build_est_s": est.seconds,
        "disk_est": est.disk_bytes,
        "build_peak": build_peak,
        "disk": disk,
        "startup_s": startup,
        "first_step_s": first_step,
        "answers_s": answers_s,
        "regen_s": regen_s,
        "run_s": run_s,
        "run_peak": run_peak,
        "query_s": per_query,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="n: F rows at the first size")
    ap.add_argument("--factors", default="1,2,4,8")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--mode", default="shared-nothing")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=None, help="parent of the data (default: system temp)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # child: data dir
    args = ap.parse_args()
    if args.one:
        out = one_size(
            Path(args.one), args.rows, args.partitions, args.repeat, args.mode, args.seed
        )
        print("RESULT " + json.dumps(out))
        return

    factors = [int(f) for f in args.factors.split(",")]
    results: dict[int, list[dict]] = {f: [] for f in factors}
    for _ in range(args.rounds):
        for f in factors:
            data = Path(tempfile.mkdtemp(prefix="wisc-scale-", dir=args.dir))
            try:
                cmd = [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--one",
                    str(data),
                    "--rows",
                    str(args.rows * f),
                    "--partitions",
                    str(args.partitions),
                    "--repeat",
                    str(args.repeat),
                    "--mode",
                    args.mode,
                    "--seed",
                    str(args.seed),
                ]
                done = subprocess.run(cmd, capture_output=True, text=True)
                line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
                if done.returncode != 0 or line is None:
                    sys.exit(f"size {f}n failed:\n{done.stdout}\n{done.stderr}")
                results[f].append(json.loads(line[len("RESULT ") :]))
            finally:
                shutil.rmtree(data, ignore_errors=True)

    def med(f: int, key: str, q: str | None = None) -> float:
        vals = [r[key][q] if q else r[key] for r in results[f]]
        return statistics.median(vals)

    base = factors[0]
    print(
        f"scale benchmark: F and G at P = {args.partitions}, n = {args.rows:,} F rows, "
        f"sizes {', '.join(f'{f}n' for f in factors)}, {args.mode}, {args.repeat} timed "
        f"repetitions, {args.rounds} round(s), load average {os.getloadavg()[0]:.1f}"
    )
    print("  value (ratio to the first size; linear growth = the size ratio)")
    cols = [
        ("build s", "build_s", 1.0, "{:.1f}"),
        ("est s", "build_est_s", 1.0, "{:.1f}"),
        ("build peak MB", "build_peak", 1e6, "{:.0f}"),
        ("disk GB", "disk", 1e9, "{:.2f}"),
        ("est GB", "disk_est", 1e9, "{:.2f}"),
        ("start-up s", "startup_s", 1.0, "{:.2f}"),
        ("1st step s", "first_step_s", 1.0, "{:.2f}"),
        ("answers s", "answers_s", 1.0, "{:.3f}"),
        ("regen s", "regen_s", 1.0, "{:.1f}"),
        ("run peak MB", "run_peak", 1e6, "{:.0f}"),
    ]
    for f in factors:
        rows = args.rows * f
        print(f"  size {f}n: F {rows:,} rows, G {rows // args.partitions:,} rows per partition")
        for label, key, scale, fmt in cols:
            v, b = med(f, key), med(base, key)
            ratio = f"{v / b:5.2f}x" if b else "  -  "
            print(f"    {label:15s} {fmt.format(v / scale):>10s}  ({ratio})")
        for q in QUERIES:
            v, b = med(f, "query_s", q), med(base, "query_s", q)
            print(f"    {q + ' s':15s} {v:10.4f}  ({v / b:5.2f}x)")
    last = factors[-1]
    su = med(last, "startup_s") / med(base, "startup_s")
    print(
        f"  goal: run start-up independent of table size within 2x from {base}n to {last}n: "
        f"{su:.2f}x -> {'met' if su <= 2 else 'NOT met'}"
    )


if __name__ == "__main__":
    with recorded("scale", enabled="--one" not in sys.argv):  # not in its --one children
        main()
