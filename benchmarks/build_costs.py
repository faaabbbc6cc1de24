"""Where one partition build's CPU goes: the generator's parts, the checksum's hashes, and
the user / system time of each step of the DuckDB write.

Usage: python benchmarks/build_costs.py [--rows 1000000] [--phase-rows 4000000] [--repeat 5]
                                        [--dir DIR]

Pinned to one core (a build worker has about one). Generator and hashes: median process CPU
seconds over --repeat runs. Write phases: one partition of --phase-rows rows built step by
step as builds.writer.build_partition does (its settings and WrittenPagesDropper), with
getrusage around each statement, --repeat times, medians.
"""

from __future__ import annotations

import argparse
import os
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

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from wisconsin import generator, store  # noqa: E402
from wisconsin.builds import (  # noqa: E402
    cost,
    writer,  # noqa: E402
)
from wisconsin.generator import core  # noqa: E402
from wisconsin.generator.permutation import permutation  # noqa: E402
from wisconsin.store import pagecache  # noqa: E402


def cpu(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def generator_parts(n: int, repeat: int) -> dict[str, float]:
    b = writer.BATCH_ROWS
    states = core._streams(1)
    perm = permutation(n, 1)
    sizes = np.array(list(core.column_sizes(n).values()), dtype=np.uint64)

    def perm_values():
        for k0 in range(0, n, b):
            perm.values(k0, min(b, n - k0), b + perm.skipped.size)

    def strings():
        for k0 in range(0, n, b):
            for i in (1, 2, 3):
                core._string_column(states[i], k0, min(b, n - k0))

    def string_words():
        for k0 in range(0, n, b):
            rows = min(b, n - k0)
            for i in (1, 2, 3):
                core._stream_at(states[i], k0 * core.STRING_LEN // 8).random_raw(
                    rows * core.STRING_LEN // 8 + 1
                )

    def ints():
        stream = core._stream_at(states[0], 0)
        for k0 in range(0, n, b):
            rows = min(b, n - k0)
            out = np.empty((13, rows), dtype=np.int32)
            raw = stream.random_raw(rows * core.INT_WORDS_PER_ROW)
            core._int_columns(raw.reshape(rows, core.INT_WORDS_PER_ROW), sizes, out[2:12])

    batches = list(generator.generate(n, 1, 0, n, batch_rows=b))
    out = {
        "generator, whole": cpu(lambda: list(generator.generate(n, 1, 0, n, batch_rows=b)), repeat),
        "  permutation": cpu(perm_values, repeat),
        "  strings": cpu(strings, repeat),
        "    of which random words": cpu(string_words, repeat),
        "  integers": cpu(ints, repeat),
    }
    for name in store.CHECKSUMS:
        out[f"checksum {name.split()[0]}"] = cpu(
            lambda name=name: store.content_digest(batches, name), repeat
        )
    return out


def ru() -> tuple[float, float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, time.perf_counter()


def write_phases(root: Path, n: int) -> dict[str, tuple[float, float, float]]:
    """(user, sys, wall) seconds of each step of one partition build."""
    d = Path(tempfile.mkdtemp(dir=root))
    tmp = d / "part.duckdb"
    steps: dict[str, tuple[float, float, float]] = {}
    last = ru()

    def mark(name: str) -> None:
        nonlocal last
        now = ru()
        steps[name] = tuple(b - a for a, b in zip(last, now, strict=True))
        last = now

    try:
        with pagecache.WrittenPagesDropper([tmp, Path(str(tmp) + ".wal")]):
            con = duckdb.connect(
                str(tmp), config=writer.build_config(f"{cost.build_memory_mb(n, 2)}MB")
            )
            con.execute("SET enable_progress_bar = false")
            con.execute("PRAGMA force_compression='uncompressed'")
            for name in (store.TABLE, store.COPY_TABLE):
                con.execute(writer.ddl(name, primary_key=False))
            rows = generator.generate(n, 1, 0, n, batch_rows=writer.BATCH_ROWS)
            con.register("g", pa.RecordBatchReader.from_batches(generator.arrow_schema(), rows))
            mark("setup")
            con.execute(f"INSERT INTO {store.TABLE} SELECT * FROM g")
            mark("table (with generation)")
            con.execute(f"INSERT INTO {store.COPY_TABLE} SELECT * FROM {store.TABLE}")
            mark("copy table")
            for name in (store.TABLE, store.COPY_TABLE):
                con.execute(f"ALTER TABLE {name} ADD PRIMARY KEY (unique2)")
            mark("primary keys")
            con.execute("CHECKPOINT")
            con.close()
            mark("checkpoint, close")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        mark("fsync")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--phase-rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where the phase builds write (default: tmp)")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    print(f"build costs: {args.rows:,} rows, {args.repeat} runs, 1 core, median CPU seconds")
    for name, s in generator_parts(args.rows, args.repeat).items():
        print(f"  {name:32s} {s:7.3f}")
    root = Path(args.dir or tempfile.gettempdir())
    runs = [write_phases(root, args.phase_rows) for _ in range(args.repeat)]
    print(f"one partition of {args.phase_rows:,} rows, step by step (medians of {args.repeat}):")
    print(f"  {'step':26s} {'user s':>7s} {'sys s':>7s} {'wall s':>7s}")
    for step in runs[0]:
        u, s, w = (statistics.median(r[step][k] for r in runs) for k in range(3))
        print(f"  {step:26s} {u:7.2f} {s:7.2f} {w:7.2f}")
    tu, ts = (statistics.median(sum(v[k] for v in r.values()) for r in runs) for k in (0, 1))
    print(f"  {'total':26s} {tu:7.2f} {ts:7.2f}   sys/user {ts / tu:.0%}")


if __name__ == "__main__":
    with recorded("build-costs"):
        main()
