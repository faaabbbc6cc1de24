"""The check every run makes before timing (store.check_table), reading blocks through the
page cache vs around it (pagecache.read_blocks), on a cold and on a warm cache.

Usage: python benchmarks/table_check.py [--rows 8000000] [--partitions 2] [--repeat 3]
                                        [--data DIR] [--dir DIR]

Builds an F table of --rows rows at --partitions (in a temp dir under --dir, deleted after)
unless --data names an existing table directory. Then, per round, interleaved: for each cache
state (cold: every file evicted first; warm: every file read into the cache first) and each
read mode (through the cache, as before; around it, as the tool now reads), one
store.check_table: wall, user and system CPU seconds (this process: the check runs in
threads), and how much of the table is in the page cache after the check (mincore).
The check is the same in both modes (same blocks, checksums, sampled rows, drift scan);
only the raw block reads differ.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin import builds, pagecache, store  # noqa: E402

READ_AROUND = pagecache.read_blocks
READ_THROUGH = functools.partial(pagecache.read_blocks, direct=False)


def warm(files: list[Path]) -> None:
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(8 << 20):
                pass


def one_check(table_dir: Path, files: list[Path], state: str, mode: str) -> dict:
    if state == "cold":
        for f in files:
            pagecache.evict(f)
    else:
        warm(files)
    pagecache.read_blocks = READ_AROUND if mode == "around the cache" else READ_THROUGH
    try:
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        store.check_table(table_dir)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        pagecache.read_blocks = READ_AROUND
    resident = [pagecache.resident_bytes(f) for f in files]
    return {
        "wall": wall,
        "user": r1.ru_utime - r0.ru_utime,
        "sys": r1.ru_stime - r0.ru_stime,
        "resident": None if None in resident else sum(resident),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1989)
    ap.add_argument("--data", default=None, help="an existing table directory to check")
    ap.add_argument("--dir", default=None, help="where to build the table (default: tmp)")
    args = ap.parse_args()
    tmp = None
    if args.data:
        table_dir = Path(args.data)
    else:
        tmp = Path(tempfile.mkdtemp(dir=args.dir))
        spec = store.TableSpec("F", args.rows, args.partitions, args.seed)
        builds.build_tables(tmp, [spec], jobs=min(args.partitions, os.cpu_count() or 1))
        table_dir = tmp / spec.name
    try:
        files = sorted(table_dir.glob("*.duckdb"))
        size = sum(f.stat().st_size for f in files)
        m = store.read_manifest(table_dir)
        print(
            f"check before timing: {m.name}, {m.rows:,} rows, {m.partitions} partitions, "
            f"{size / 1e9:.2f} GB, {args.repeat} round(s), load average {os.getloadavg()[0]:.1f}"
        )
        print(
            f"  {'cache':6s} {'blocks read':18s} {'wall s':>7s} {'user s':>7s} {'sys s':>7s}"
            f" {'cached after':>12s}"
        )
        results: dict[tuple[str, str], list[dict]] = {}
        for _ in range(args.repeat):
            for state in ("cold", "warm"):
                for mode in ("through the cache", "around the cache"):
                    r = one_check(table_dir, files, state, mode)
                    results.setdefault((state, mode), []).append(r)
                    cached = "-" if r["resident"] is None else f"{r['resident'] / size:.0%}"
                    print(
                        f"  {state:6s} {mode:18s} {r['wall']:7.2f} {r['user']:7.2f}"
                        f" {r['sys']:7.2f} {cached:>12s}",
                        flush=True,
                    )
        print("  medians:")
        for (state, mode), rs in results.items():
            w, u, s = (statistics.median(r[k] for r in rs) for k in ("wall", "user", "sys"))
            print(
                f"  {state:6s} {mode:18s} {w:7.2f} {u:7.2f} {s:7.2f}"
                f"   {size / w / 1e9:.2f} GB/s of table"
            )
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
