"""What this machine's memory agents do to cold reads: how fast idle page cache is dropped
unasked (DAMON proactive reclaim), and what a cold read costs when the pages it lands on were
freed long before rather than just now (free page reporting hands freed pages to the host).

Usage: python benchmarks/cold_read_age.py [--mb 300] [--idle 8] [--rounds 6]
                                          [--timeline-mb 512] [--timeline-s 120] [--dir DIR]

1. Timeline: a --timeline-mb file is written, read once, then left alone; its resident bytes
   (mincore) are printed every 15 s for --timeline-s seconds. Without proactive reclaim it stays
   resident.
2. Cold read by page age: a --mb file, one pinned core; per round, in a shuffled order, each
   case reads it whole (8 MiB reads) after
     A  all of it cached, --idle s untouched, evicted right before the read
     B  half of it (every other 2 MiB) dropped, --idle s, the rest evicted right before
     C  as B, then the dropped half read back, then all evicted right before
     D  all of it evicted, then --idle s
   and the median wall and system milliseconds of the read are printed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin.measure import environment  # noqa: E402
from wisconsin.store import pagecache  # noqa: E402

CHUNK = 8 << 20


def write(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        for _ in range(size // CHUNK):
            fh.write(os.urandom(CHUNK))
        fh.flush()
        os.fsync(fh.fileno())


def read_all(path: Path) -> None:
    buf = memoryview(bytearray(CHUNK))
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.readv(fd, [buf]) > 0:
            pass
    finally:
        os.close(fd)


def drop(path: Path, every_other: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if not every_other:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            return
        size = os.fstat(fd).st_size
        for off in range(0, size, 4 << 20):
            os.posix_fadvise(fd, off, 2 << 20, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed_read(path: Path) -> tuple[float, float]:
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    read_all(path)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter() - t0, r1.ru_stime - r0.ru_stime


def timeline(path: Path, size: int, seconds: int) -> None:
    write(path, size)
    read_all(path)
    print(f"1. a {size >> 20} MB file read once, then left alone: resident MB (mincore)")
    for t in range(0, seconds + 1, 15):
        if t:
            time.sleep(15)
        print(f"  {t:4d} s  {(pagecache.resident_bytes(path) or 0) / 2**20:7.0f}")


def case(path: Path, idle: float, drop_half: bool, read_back: bool, evict_before_idle: bool):
    """One case of step 2: read the file, drop some of it, wait, maybe read the dropped part
    back, evict the rest, and time the cold read."""

    def run() -> tuple[float, float]:
        read_all(path)
        if drop_half:
            drop(path, every_other=True)
        if evict_before_idle:
            drop(path)
        time.sleep(idle)
        if read_back:
            read_all(path)
        drop(path)
        return timed_read(path)

    return run


def cases(path: Path, idle: float):
    return {
        "A evicted right before": case(path, idle, False, False, False),
        "B half dropped before": case(path, idle, True, False, False),
        "C B, read back first": case(path, idle, True, True, False),
        "D all dropped before": case(path, idle, False, False, True),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--idle", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--timeline-mb", type=int, default=512)
    ap.add_argument("--timeline-s", type=int, default=120)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    print(
        f"cold read age: proactive reclaim {environment.proactive_reclaim()}, "
        f"free page reporting {environment.free_page_reporting()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    root = Path(tempfile.mkdtemp(prefix="wisc-cold-age-", dir=args.dir))
    try:
        if args.timeline_s > 0:
            timeline(root / "idle.bin", args.timeline_mb << 20, args.timeline_s)
            (root / "idle.bin").unlink()
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
        path = root / "read.bin"
        write(path, args.mb << 20)
        runs = cases(path, args.idle)
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
        rng = random.Random(1)
        for _ in range(args.rounds):
            order = list(runs)
            rng.shuffle(order)
            for name in order:
                got[name].append(runs[name]())
        print(
            f"2. reading a {args.mb} MB file cold, {args.idle:g} s idle, one core, "
            f"{args.rounds} shuffled rounds (medians)"
        )
        print(f"  {'case':26s} {'wall ms':>8s} {'sys ms':>7s}")
        for name, v in got.items():
            wall = statistics.median(x[0] for x in v) * 1e3
            sys_ = statistics.median(x[1] for x in v) * 1e3
            print(f"  {name:26s} {wall:8.0f} {sys_:7.0f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with recorded("cold-read-age"):
        main()
