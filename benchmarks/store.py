"""Generate + store of one partition vs the raw DuckDB write of the same Arrow data.

Usage: python benchmarks/store.py [--rows 1000000] [--repeat 3] [--cores 1] [--no-variants]
                                  [--no-build] [--bandwidth-mb 1024] [--dir DIR]

Both sides run in this process, interleaved, each into a fresh file in a fresh temp dir,
with the same DuckDB settings as wisconsin.builds.writer.build_partition (writer.build_config:
threads=1, the build's memory_limit and block_allocator_memory; PRAGMA
force_compression='uncompressed', both tables with the same DDL,
copy table via INSERT..SELECT, PRIMARY KEY unique2 added by ALTER TABLE after the load,
CHECKPOINT, close, fsync):

  generate+store  writer.build_partition(dir, n, seed, 0, 1): generate the rows (setup
                  included), content digest, DuckDB write of both tables, fsync, rename,
                  JSON marker.
  raw writer      the same rows already generated into memory (an Arrow table, not
                  timed), read through a RecordBatchReader as build_partition does; then
                  connect, the same DDL and INSERTs, CHECKPOINT, close, fsync. No digest,
                  no rename, no marker.
  generator -> raw writer
                  the raw writer fed by the generator as it generates (no digest, no
                  expected answers, no marker): what generating the rows alone adds.
  PK up front     generate+store as build_partition did before 86f902a: PRIMARY KEY
                  declared in CREATE TABLE, maintained during the load.
  overlapped      generate+store with generation + digest in a producer thread feeding
                  a bounded queue that DuckDB reads from (the candidate for build_partition).
  old settings    generate+store with the DuckDB settings before the system-time fix:
                  memory_limit 60% of RAM / 2 workers, no block_allocator_memory.
  SHA-256         generate+store with the checksum before xxh3-128 (tables built until
                  2026-11-23 name it).

Every side also reports its user and system CPU time and minor page faults (getrusage).

Then (unless --no-build) the machine's sequential write bandwidth (write --bandwidth-mb in
8 MiB blocks, fsync, as dd conv=fsync does), and a whole build as `wisconsin generate` runs
it (builds.build_tables, F table of 2 x --rows at P = 2, 2 spawned workers), interleaved over
--repeat rounds: wall, user and system time of the build's processes, and its write
throughput (bytes of the partition files / wall) against that bandwidth.

Storage variants (raw writer, same data, ratios to the baseline raw writer): default
compression, PRIMARY KEY declared in CREATE TABLE (maintained during the load), no PRIMARY KEY, no copy table, copy table written from Arrow again, the
Arrow table registered directly instead of through a reader.
Goals: generate+store >= 0.8x the raw writer's rows/s; build system time < 25% of user time.
"""

from __future__ import annotations

import argparse
import os
import queue
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402

from wisconsin import builds, generator, store  # noqa: E402
from wisconsin.builds import (  # noqa: E402
    cost,
    writer,  # noqa: E402
)
from wisconsin.generator.permutation import permutation  # noqa: E402
from wisconsin.store import pagecache  # noqa: E402

GOAL = 0.8
SYS_GOAL = 0.25
MEMORY_LIMIT = "2GB"  # set in main() to what a build worker gets for --rows
OLD_CONFIG: dict = {}  # set in main(): the settings before the system-time fix
SHA256 = "sha256/128 of canonical column streams"  # the checksum before xxh3-128


def raw_write(
    path: Path,
    data: pa.Table,
    *,
    compression: str = "uncompressed",
    primary_key: str = "after",  # "after" the load (as build_partition) | "upfront" | "none"
    copy: str = "insert-select",  # "insert-select" | "arrow" | "none"
    source: str = "reader",  # "reader" (as build_partition) | "table"
) -> float:
    """Seconds to write data into a fresh DuckDB file the way build_partition does."""
    t0 = time.perf_counter()
    # written pages dropped as build_partition drops them (pagecache.WrittenPagesDropper)
    with pagecache.WrittenPagesDropper([path, Path(f"{path}.wal")]):
        con = duckdb.connect(str(path), config=writer.build_config(MEMORY_LIMIT))
        try:
            if compression != "default":
                con.execute(f"PRAGMA force_compression='{compression}'")
            tables = (store.TABLE,) if copy == "none" else (store.TABLE, store.COPY_TABLE)
            for name in tables:
                con.execute(writer.ddl(name, primary_key=primary_key == "upfront"))
            for target in (store.TABLE, store.COPY_TABLE):
                if target == store.COPY_TABLE and copy != "arrow":
                    continue
                rows = data if source == "table" else data.to_reader()
                con.register("generated_rows", rows)
                con.execute(f"INSERT INTO {target} SELECT * FROM generated_rows")
                con.unregister("generated_rows")
            if copy == "insert-select":
                con.execute(f"INSERT INTO {store.COPY_TABLE} SELECT * FROM {store.TABLE}")
            if primary_key == "after":
                for name in tables:
                    con.execute(f"ALTER TABLE {name} ADD PRIMARY KEY (unique2)")
            con.execute("CHECKPOINT")
        finally:
            con.close()
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())
    return time.perf_counter() - t0


class _Generated:
    """The generator's rows as raw_write takes a table: to_reader() reads them as generated."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed = n, seed

    def to_reader(self) -> pa.RecordBatchReader:
        rows = generator.generate(self.n, self.seed, 0, self.n, batch_rows=writer.BATCH_ROWS)
        return pa.RecordBatchReader.from_batches(generator.arrow_schema(), rows)


def gen_raw_write(tdir: Path, n: int, seed: int) -> float:
    permutation.cache_clear()  # per-(n, seed) setup counts, as in gen_store
    return raw_write(tdir / "g.duckdb", _Generated(n, seed))


def gen_store(tdir: Path, n: int, seed: int, config: dict | None = None, **kw) -> float:
    permutation.cache_clear()  # per-(n, seed) setup counts, as in a fresh build worker
    t0 = time.perf_counter()
    writer.build_partition(
        str(tdir), n, seed, 0, 1, memory_limit=MEMORY_LIMIT, keep_selected=True, config=config, **kw
    )
    return time.perf_counter() - t0


def gen_store_pk_upfront(tdir: Path, n: int, seed: int) -> float:
    """build_partition's steps before 86f902a: PRIMARY KEY declared in CREATE TABLE."""
    permutation.cache_clear()
    t0 = time.perf_counter()
    digest = store.ContentDigest()

    def batches():
        for b in generator.generate(n, seed, 0, n, batch_rows=writer.BATCH_ROWS):
            digest.update(b)
            yield b

    path = tdir / "upfront.duckdb"
    con = duckdb.connect(str(path), config=writer.build_config(MEMORY_LIMIT))
    try:
        con.execute("PRAGMA force_compression='uncompressed'")
        con.execute(writer.ddl(store.TABLE))
        con.execute(writer.ddl(store.COPY_TABLE))
        con.register(
            "generated_rows", pa.RecordBatchReader.from_batches(generator.arrow_schema(), batches())
        )
        con.execute(f"INSERT INTO {store.TABLE} SELECT * FROM generated_rows")
        con.unregister("generated_rows")
        con.execute(f"INSERT INTO {store.COPY_TABLE} SELECT * FROM {store.TABLE}")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    assert digest.rows == n
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())
    return time.perf_counter() - t0


def overlapped_store(tdir: Path, n: int, seed: int, depth: int = 4) -> float:
    """build_partition's steps with generation + digest in a producer thread."""
    permutation.cache_clear()
    t0 = time.perf_counter()
    digest = store.ContentDigest()
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for b in generator.generate(n, seed, 0, n, batch_rows=writer.BATCH_ROWS):
                digest.update(b)
                while not stop.is_set():
                    try:
                        q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        pass
                if stop.is_set():
                    return
            q.put(done)
        except BaseException as exc:  # handed to the consumer
            q.put(exc)

    def consume():
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    path = tdir / "overlapped.duckdb"
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    con = duckdb.connect(str(path), config=writer.build_config(MEMORY_LIMIT))
    try:
        con.execute("PRAGMA force_compression='uncompressed'")
        con.execute(writer.ddl(store.TABLE, primary_key=False))
        con.execute(writer.ddl(store.COPY_TABLE, primary_key=False))
        con.register(
            "generated_rows",
            pa.RecordBatchReader.from_batches(generator.arrow_schema(), consume()),
        )
        con.execute(f"INSERT INTO {store.TABLE} SELECT * FROM generated_rows")
        con.unregister("generated_rows")
        con.execute(f"INSERT INTO {store.COPY_TABLE} SELECT * FROM {store.TABLE}")
        for name in (store.TABLE, store.COPY_TABLE):
            con.execute(f"ALTER TABLE {name} ADD PRIMARY KEY (unique2)")
        con.execute("CHECKPOINT")
    finally:
        stop.set()
        con.close()
        producer.join()
    assert digest.rows == n
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())
    return time.perf_counter() - t0


def gen_only(n: int, seed: int) -> float:
    permutation.cache_clear()
    t0 = time.perf_counter()
    d = store.ContentDigest()
    for b in generator.generate(n, seed, 0, n, batch_rows=writer.BATCH_ROWS):
        d.update(b)
    return time.perf_counter() - t0


def fresh(root: Path, fn, *args, **kw) -> float:
    d = Path(tempfile.mkdtemp(dir=root))
    try:
        return fn(d, *args, **kw)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def summary(times: list[float]) -> tuple[float, float, float]:
    return statistics.median(times), min(times), max(times)


def rusage(who=resource.RUSAGE_SELF) -> tuple[float, float, float, int]:
    r = resource.getrusage(who)
    return time.perf_counter(), r.ru_utime, r.ru_stime, r.ru_minflt


def measured(fn) -> tuple[float, float, float, int]:
    """(seconds as fn reports them, user s, system s, minor faults) of one call in-process."""
    a = rusage()
    secs = fn()
    b = rusage()
    return secs, b[1] - a[1], b[2] - a[2], b[3] - a[3]


def write_bandwidth(root: Path, megabytes: int) -> float:
    """Sequential write bandwidth in bytes/s: 8 MiB blocks, then fsync (dd conv=fsync)."""
    path = root / "bandwidth.bin"
    block = os.urandom(8 << 20)
    count = max(1, megabytes // 8)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(count):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
    secs = time.perf_counter() - t0
    path.unlink()
    return count * len(block) / secs


def whole_build(root: Path, rows: int, seed: int) -> dict:
    """A build as `wisconsin generate` runs it: F table of `rows` rows at P = 2, 2 workers.
    Returns wall, user and system time of all its processes, faults, and bytes written."""
    d = Path(tempfile.mkdtemp(dir=root))
    try:
        s0, c0 = rusage(), rusage(resource.RUSAGE_CHILDREN)
        builds.build_tables(d, [store.TableSpec("F", rows, 2, seed)], jobs=2)
        s1, c1 = rusage(), rusage(resource.RUSAGE_CHILDREN)
        files = sum(f.stat().st_size for f in (d / "F2").glob("*.duckdb"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return {
        "wall": s1[0] - s0[0],
        "user": (s1[1] - s0[1]) + (c1[1] - c0[1]),
        "sys": (s1[2] - s0[2]) + (c1[2] - c0[2]),
        "minflt": (s1[3] - s0[3]) + (c1[3] - c0[3]),
        "bytes": files,
    }


def main() -> None:
    global MEMORY_LIMIT, OLD_CONFIG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--cores", type=int, default=1, help="pin to this many cores (a build worker has ~1)"
    )
    ap.add_argument("--no-variants", action="store_true", help="skip the storage variants")
    ap.add_argument("--no-build", action="store_true", help="skip bandwidth and whole build")
    ap.add_argument("--bandwidth-mb", type=int, default=1024, help="MB written to measure")
    ap.add_argument("--dir", default=None, help="temp dir parent (default: system temp)")
    args = ap.parse_args()
    n = args.rows
    MEMORY_LIMIT = f"{cost.build_memory_mb(n, 2)}MB"  # what a build worker gets for n rows
    import psutil

    OLD_CONFIG = {
        "threads": 1,
        "memory_limit": f"{int(psutil.virtual_memory().total * 0.6 / 2) >> 20}MB",
    }

    all_cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if all_cores:
        os.sched_setaffinity(0, set(all_cores[: max(1, args.cores)]))
    root = Path(tempfile.mkdtemp(prefix="wisc-store-bench-", dir=args.dir))
    builds: list[dict] = []
    bandwidths: list[float] = []
    try:
        # Warm-up (imports, caches, first file creation), untimed.
        small = min(n, 50_000)
        fresh(root, gen_store, small, args.seed)
        data = pa.Table.from_batches(
            list(generator.generate(n, args.seed, 0, n, batch_rows=writer.BATCH_ROWS))
        )
        fresh(root, lambda d: raw_write(d / "w.duckdb", data.slice(0, small)))

        sides = {
            "generate only (+digest)": lambda: gen_only(n, args.seed),
            "raw writer": lambda: fresh(root, lambda d: raw_write(d / "raw.duckdb", data)),
            "generator -> raw writer": lambda: fresh(root, gen_raw_write, n, args.seed),
            "generate+store": lambda: fresh(root, gen_store, n, args.seed),
            "generate+store, old settings": lambda: fresh(
                root, gen_store, n, args.seed, OLD_CONFIG
            ),
            "generate+store, SHA-256 checksum": lambda: fresh(
                root, gen_store, n, args.seed, checksum=SHA256
            ),
            "overlapped generate+store": lambda: fresh(root, overlapped_store, n, args.seed),
            "generate+store, PK up front": lambda: fresh(root, gen_store_pk_upfront, n, args.seed),
        }
        variants = {
            "default compression": {"compression": "default"},
            "PK declared up front": {"primary_key": "upfront"},
            "no PRIMARY KEY": {"primary_key": "none"},
            "no copy table": {"copy": "none"},
            "copy from Arrow": {"copy": "arrow"},
            "Arrow table, not a reader": {"source": "table"},
        }
        if not args.no_variants:
            for name, kw in variants.items():
                sides[f"raw: {name}"] = lambda kw=kw: fresh(
                    root, lambda d: raw_write(d / "v.duckdb", data, **kw)
                )
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[tuple[float, float, int]]] = {k: [] for k in sides}
        for _ in range(args.repeat):  # interleaved: one of each per round
            for name, fn in sides.items():
                secs, user, sys_, flt = measured(fn)
                times[name].append(secs)
                cpu[name].append((user, sys_, flt))
            if not args.no_build:
                if all_cores:
                    os.sched_setaffinity(0, set(all_cores))  # a build uses every core
                bandwidths.append(write_bandwidth(root, args.bandwidth_mb))
                builds.append(whole_build(root, 2 * n, args.seed))
                if all_cores:
                    os.sched_setaffinity(0, set(all_cores[: max(1, args.cores)]))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(
        f"store benchmark: {n:,} rows, {args.repeat} runs each (interleaved), "
        f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} core(s), "
        f"duckdb {duckdb.__version__}, pyarrow {pa.__version__}, generator "
        f"v{generator.GENERATOR_VERSION}, build memory_limit {MEMORY_LIMIT}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  Arrow data {data.nbytes / 1e6:.0f} MB ({data.nbytes / n:.0f} B/row)")
    raw_t = times["raw writer"]
    raw_med = summary(raw_t)[0]

    def paired(name: str) -> float:  # median over rounds of this side's time / raw's time
        return statistics.median(a / b for a, b in zip(times[name], raw_t, strict=True))

    print("  vs raw = raw's median time / this side's (rows/s ratio); paired = the same,")
    print("  as the median of the per-round ratios (robust to load drifting between rounds);")
    print("  user, sys = median CPU seconds; sys/user and minor faults (k) are medians too")
    print(
        f"  {'side':34s} {'median s':>9s} {'min-max s':>15s} {'M rows/s':>9s} {'vs raw':>7s} "
        f"{'paired':>7s} {'user':>6s} {'sys':>6s} {'sys/user':>8s} {'faults k':>8s}"
    )
    for name, ts in times.items():
        med, lo, hi = summary(ts)
        user = statistics.median(c[0] for c in cpu[name])
        sys_ = statistics.median(c[1] for c in cpu[name])
        ratio_su = statistics.median(c[1] / c[0] for c in cpu[name] if c[0] > 0)
        flt = statistics.median(c[2] for c in cpu[name]) / 1000
        print(
            f"  {name:34s} {med:9.3f} {lo:7.3f}-{hi:<7.3f} {n / med / 1e6:9.2f} "
            f"{raw_med / med:6.2f}x {1 / paired(name):6.2f}x {user:6.2f} {sys_:6.2f} "
            f"{ratio_su:7.0%} {flt:8.0f}"
        )
    gs = summary(times["generate+store"])[0]
    ov = summary(times["overlapped generate+store"])[0]
    ratio = raw_med / gs
    pr = 1 / paired("generate+store")
    print(
        f"  goal: generate+store >= {GOAL}x raw writer rows/s: {ratio:.2f}x (paired {pr:.2f}x) "
        f"-> {'met' if min(ratio, pr) >= GOAL else 'NOT met'}"
    )
    cpu_ratio = statistics.median(
        (r[0] + r[1]) / (g[0] + g[1])
        for r, g in zip(cpu["raw writer"], cpu["generate+store"], strict=True)
    )
    print(
        f"  per core (rows per CPU second, user + sys, paired): generate+store / raw writer = "
        f"{cpu_ratio:.2f}x -> {'met' if cpu_ratio >= GOAL else 'NOT met'} "
        "(robust to other load, which stretches wall time but not CPU time)"
    )
    old = statistics.median(
        a / b
        for a, b in zip(times["generate+store, old settings"], times["generate+store"], strict=True)
    )
    print(f"  generate+store vs the old settings: {old:.2f}x rows/s (paired)")
    print(f"  overlapped vs generate+store: {gs / ov:.2f}x rows/s")
    up = statistics.median(
        a / b
        for a, b in zip(times["generate+store, PK up front"], times["generate+store"], strict=True)
    )
    print(f"  generate+store with PK after the load vs PK up front: {up:.2f}x rows/s (paired)")
    if not args.no_variants:
        print("  storage variants, time ratio to the raw writer's baseline (>1 = slower):")
        for name in variants:
            key = f"raw: {name}"
            med = summary(times[key])[0]
            print(
                f"    {name:30s} {med / raw_med:5.2f}x  paired {paired(key):5.2f}x  "
                f"({med:.3f} s vs {raw_med:.3f} s)"
            )
    if builds:
        print(
            f"  whole build (build_tables, F {2 * n:,} rows at P = 2, 2 workers, "
            f"{len(all_cores) or '?'} cores), per round:"
        )
        print(
            f"    {'wall s':>7s} {'user s':>7s} {'sys s':>6s} {'sys/user':>8s} {'faults k':>8s} "
            f"{'written MB/s':>12s} {'disk MB/s':>9s} {'of disk':>7s}"
        )
        for b, bw in zip(builds, bandwidths, strict=True):
            rate = b["bytes"] / b["wall"]
            print(
                f"    {b['wall']:7.2f} {b['user']:7.2f} {b['sys']:6.2f} "
                f"{b['sys'] / b['user']:7.0%} {b['minflt'] / 1000:8.0f} {rate / 1e6:12.0f} "
                f"{bw / 1e6:9.0f} {rate / bw:6.0%}"
            )
        su = statistics.median(b["sys"] / b["user"] for b in builds)
        of = statistics.median(
            b["bytes"] / b["wall"] / bw for b, bw in zip(builds, bandwidths, strict=True)
        )
        print(
            f"  goal: build system time < {SYS_GOAL:.0%} of user time: median {su:.0%} -> "
            f"{'met' if su < SYS_GOAL else 'NOT met'}"
        )
        print(
            f"  build writes at a median {of:.0%} of the sequential write bandwidth "
            f"(median {statistics.median(bandwidths) / 1e6:.0f} MB/s, {args.bandwidth_mb} MB "
            "written + fsync per round)"
        )


if __name__ == "__main__":
    with recorded("store"):
        main()
