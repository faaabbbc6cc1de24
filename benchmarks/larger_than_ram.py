"""One F table larger than this machine's RAM: build it, scan it cold, measure, delete it.

Usage: nice -n 19 ionice -c3 python benchmarks/larger_than_ram.py --dir /work/data/scale/big
           [--rows 60000000] [--partitions 2] [--memory-limit 2GB] [--keep]

Steps, each through the CLI as a user runs it (a child process measured with getrusage of
its reaped descendants):

1. `wisconsin generate --kind F --rows R --partitions P --data DIR`: wall, user and system
   time of all its processes, peak RSS of the largest, disk used (du of the table).
2. Evict the table's files from the OS page cache (fsync, posix_fadvise DONTNEED; the
   table is larger than RAM anyway).
3. `wisconsin run --tables F --partitions P --queries scan --warmup 0 --repeat 1
   --memory-limit M`: the one repetition is cold. Wall, user, system, peak RSS (the run's
   processes and every partition's worker as the run file records it), the scan's wall time,
   and bytes read from the block device during the run (/proc/diskstats, whole device: other
   work on the machine is included).
4. Delete the table (unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def _wisconsin() -> str:
    exe = shutil.which("wisconsin") or os.path.join(os.path.dirname(sys.executable), "wisconsin")
    return exe


def _device_of(path: Path) -> str:
    dev = os.stat(path).st_dev
    return f"{os.major(dev)}:{os.minor(dev)}"


def _sectors_read(majmin: str) -> int:
    major, minor = majmin.split(":")
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[0] == major and f[1] == minor:
            return int(f[5])
    return 0


def measured_child(cmd: list[str]) -> dict:
    """Run cmd; wall, user, sys of it and its reaped descendants, their peak RSS, output."""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return {
        "wall": wall,
        "user": c1.ru_utime - c0.ru_utime,
        "sys": c1.ru_stime - c0.ru_stime,
        "peak_rss": c1.ru_maxrss * 1024,  # max over every reaped descendant so far
        "minflt": c1.ru_minflt - c0.ru_minflt,
        "stdout": done.stdout,
    }


def evict(table_dir: Path) -> int:
    n = 0
    for f in table_dir.glob("*.duckdb"):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        n += f.stat().st_size
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="data directory (created; deleted at the end)")
    ap.add_argument("--rows", type=int, default=60_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--memory-limit", default="2GB", help="DuckDB memory_limit of the run")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    data = Path(args.dir)
    exe = _wisconsin()
    table = data / f"F{args.partitions}"
    print(f"larger-than-RAM table: F {args.rows:,} rows at P = {args.partitions} in {data}")
    print(f"  load average before: {os.getloadavg()[0]:.1f}", flush=True)
    try:
        gen = measured_child(
            [exe, "generate", "--kind", "F", "--rows", str(args.rows)]
            + ["--partitions", str(args.partitions), "--data", str(data), "--quiet"]
        )
        print("  " + gen["stdout"].strip().replace("\n", "\n  "))
        disk = sum(f.stat().st_size for f in table.rglob("*") if f.is_file())
        print(
            f"  build: wall {gen['wall']:.1f} s, user {gen['user']:.1f} s, sys {gen['sys']:.1f} s "
            f"(sys/user {gen['sys'] / gen['user']:.0%}), peak RSS {gen['peak_rss'] / 2**30:.2f} "
            f"GiB, disk {disk / 1e9:.2f} GB, {args.rows / gen['wall'] / 1e6:.2f} M rows/s, "
            f"{disk / gen['wall'] / 1e6:.0f} MB/s written",
            flush=True,
        )
        evicted = evict(table)
        dev = _device_of(table)
        s0 = _sectors_read(dev)
        out = data / "run.json"
        run = measured_child(
            [exe, "run", "--data", str(data), "--tables", "F"]
            + ["--partitions", str(args.partitions), "--queries", "scan", "--warmup", "0"]
            + ["--repeat", "1", "--memory-limit", args.memory_limit, "--out", str(out)]
            + ["--quiet"]
        )
        read = (_sectors_read(dev) - s0) * 512
        doc = json.loads(out.read_text())
        m = doc["measurements"][0]
        rep = m["repetitions"][0]
        worker_peak = max(p["peak_rss_bytes"] for p in rep["partitions"])
        print(
            f"  cold scan ({evicted / 1e9:.1f} GB evicted first): scan wall {rep['wall_s']:.1f} s "
            f"({args.rows / rep['wall_s'] / 1e6:.2f} M rows/s), run wall {run['wall']:.1f} s, "
            f"user {run['user']:.1f} s, sys {run['sys']:.1f} s, peak RSS of the run's processes "
            f"{run['peak_rss'] / 2**30:.2f} GiB, of a partition's worker (run file) "
            f"{worker_peak / 2**30:.2f} GiB, {read / 1e9:.1f} GB read from the device "
            f"({read / rep['wall_s'] / 1e6:.0f} MB/s over the scan)"
        )
        peak = max(gen["peak_rss"], run["peak_rss"], worker_peak)
        print(
            f"  goal: peak RSS < 8 GiB: {peak / 2**30:.2f} GiB -> "
            f"{'met' if peak < 8 * 2**30 else 'NOT met'}"
        )
        print(f"  load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    with recorded("larger-than-ram"):
        main()
