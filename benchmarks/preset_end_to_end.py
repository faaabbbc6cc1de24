"""A preset end to end through the CLI, as a user runs it: `wisconsin bench --preset P`.

Usage: nice -n 19 ionice -c3 python benchmarks/preset_end_to_end.py --preset vlx
           --dir /work/data/vlx [--keep] [-- extra bench options]

Runs `wisconsin bench --preset P --data DIR/data --out DIR/runs --quiet` as one measured
child (wall, user and system time of it and its reaped descendants, their peak RSS), then
reads its run file: measurements (tables x queries), cache state, the largest peak RSS any
partition's worker recorded, and runs `wisconsin audit` on it. Disk used is the data and
run directories after the run (tables, their copies, result tables, run file, figures).
Deletes DIR unless --keep.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.util.spec_from_file_location("_ltr", os.path.join(_here, "larger_than_ram.py"))
_ltr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ltr)  # one measured_child for both scripts


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="vlx")
    ap.add_argument("--dir", required=True, help="working directory (deleted at the end)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("extra", nargs="*", help="more `wisconsin bench` options, after --")
    args = ap.parse_args()
    root = Path(args.dir)
    data, runs = root / "data", root / "runs"
    exe = _ltr._wisconsin()
    print(f"preset {args.preset} end to end in {root}; load average {os.getloadavg()[0]:.1f}")
    try:
        bench = _ltr.measured_child(
            [exe, "bench", "--preset", args.preset, "--data", str(data), "--out", str(runs)]
            + ["--quiet", *args.extra]
        )
        (run_path,) = sorted(runs.rglob("*.json"))[-1:]
        doc = json.loads(run_path.read_text())
        ms = doc["measurements"]
        tables = sorted({m["table"] for m in ms})
        queries = sorted({m["query"] for m in ms})
        caches = sorted({m.get("cache") for m in ms})
        worker_peak = max(
            (p.get("peak_rss_bytes") or 0)
            for m in ms
            for r in m["repetitions"]
            for p in r["partitions"]
        )
        reps = sum(len(m["repetitions"]) for m in ms)
        audit = subprocess.run([exe, "audit", str(run_path)], capture_output=True, text=True)
        disk = _du(data) + _du(runs)
        peak = max(bench["peak_rss"], worker_peak)
        stop = doc.get("stop") or {}  # why it stopped (run file schema 3: a field)
        said = f"{stop.get('rule')} after {stop.get('rounds')} rounds"
        print(f"  run file {run_path} (status {doc.get('status')}, {said})")
        print(f"  tables {', '.join(tables)}; queries {', '.join(queries)}; cache {caches}")
        print(f"  {len(ms)} measurements, {reps} timed repetitions")
        print(
            f"  wall {bench['wall'] / 60:.1f} min, user {bench['user']:.0f} s, "
            f"sys {bench['sys']:.0f} s; peak RSS {peak / 2**30:.2f} GiB (any process: "
            f"{bench['peak_rss'] / 2**30:.2f}, a partition's worker per the run file: "
            f"{worker_peak / 2**30:.2f}); disk {disk / 1e9:.1f} GB"
        )
        print(f"  goal peak RSS < 8 GiB: {'met' if peak < 8 * 2**30 else 'NOT met'}")
        print(f"  audit exit {audit.returncode}:")
        print("    " + (audit.stdout + audit.stderr).strip().replace("\n", "\n    "))
        print(f"  load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with recorded("preset-end-to-end"):
        main()
