"""Harness overhead: the shared-memory engine vs bare DuckDB, and shared-nothing dispatch.

Usage: python benchmarks/overhead.py [--rows 1000000] [--repeat 25] [--only a|b]

(a) Shared-memory: an F table with --rows rows in --partitions partitions is built with
    wisconsin.builds.build_tables into a temp dir. Per query, interleaved (order rotated
    every repetition), each side's wall time around one statement:
      engine       SharedMemoryEngine.execute(statements), as the runner calls it for a
                   timed repetition (SET/RESET of the statement's settings, peak RSS,
                   result rows fetched; profiling + profile JSON only for the scan, as
                   the runner does since 58228ab)
      raw          a bare duckdb.connect(':memory:', threads=P, same memory_limit) with the
                   same ATTACHes, UNION ALL views and result database, executing the same
                   SQL string (settings SET before, RESET after, untimed) and fetching
                   all rows. DuckDB refuses to attach one file to two instances in one
                   process, so it reads a byte copy of the partition files.
      raw+prof     the same bare instance, on a cursor with PRAGMA enable_profiling=
                   'no_output' and profiling_mode='detailed' (what PartitionSession sets)
      raw+std      the same with profiling_mode='standard' (DuckDB 2.0 still reports
                   rows_scanned and Projections per TABLE_SCAN in this mode)
      same-inst    a plain cursor on the engine's own instance (same buffer pool), no
                   profiling
    select/join reset their result table before every side (untimed). The update is
    not here: it goes through the two-phase commit protocol, which has no raw twin.
    Goal: engine / raw <= 1.05x (median of the per-round ratios).
(b) Shared-nothing dispatch: F tables of --sn-rows rows at each of --sn-partitions, run
    through wisconsin.measure.runner.run (local Dask cluster, repeat --sn-repeat, timed statements
    over --sn-transport: direct, the default, or dask, the path before the channel); per
    repetition, dispatch = coordinator wall_s - the slowest partition's engine_s.
    The runner starts one cluster of max(P) workers for the whole run and a table of P
    partitions uses the first P. Goal: <= 50 ms at P = 2. Also printed: the time to open
    a table's partitions (Measurement.startup_s) and worker start-up per P, timed as
    SharedNothingEngine.start(P) on a fresh local cluster of P workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
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

from wisconsin import store  # noqa: E402
from wisconsin.builds import build_tables  # noqa: E402
from wisconsin.engines import default_memory_limit  # noqa: E402
from wisconsin.engines.base import EngineConfig  # noqa: E402
from wisconsin.engines.duckdb_session import _result_ddl, peak_rss_bytes, reset_peak_rss  # noqa: E402
from wisconsin.engines.shared_memory import WHOLE, SharedMemoryEngine  # noqa: E402
from wisconsin.engines.shared_nothing import SharedNothingEngine  # noqa: E402
from wisconsin.measure.runner import RunOptions, run  # noqa: E402
from wisconsin.store import TableSpec  # noqa: E402
from wisconsin.workloads.wisconsin import queries  # noqa: E402
from wisconsin.workloads.wisconsin.queries import CATALOG  # noqa: E402

GOAL_HARNESS = 1.05
GOAL_DISPATCH_S = 0.050
QUERIES_A = ("scan", "average", "select", "join")


def spread(xs: list[float]) -> tuple[float, float, float]:
    return statistics.median(xs), min(xs), max(xs)


# --------------------------------------------------------------------------- (a)


class Raw:
    """Bare DuckDB with the engine's ATTACHes, views and result database."""

    def __init__(self, manifest: store.Manifest, table_dir: Path, threads: int, memory: str):
        self.con = duckdb.connect(":memory:", config={"threads": threads, "memory_limit": memory})
        for p in manifest.parts:
            self.con.execute(f"ATTACH '{table_dir / p.file}' AS p{p.index}")
        self.con.execute(f"ATTACH '{table_dir / 'raw-results.duckdb'}' AS results")
        for name in (manifest.table, manifest.copy_table):
            union = " UNION ALL ".join(f"SELECT * FROM p{p.index}.{name}" for p in manifest.parts)
            self.con.execute(f"CREATE VIEW all_{name} AS {union}")
        self.plain = self.con.cursor()
        self.prof = self.con.cursor()
        self.prof.execute("PRAGMA enable_profiling='no_output'")
        self.prof.execute("SET profiling_mode='detailed'")
        self.std = self.con.cursor()
        self.std.execute("PRAGMA enable_profiling='no_output'")
        self.std.execute("SET profiling_mode='standard'")

    def close(self) -> None:
        for c in (self.plain, self.prof, self.std, self.con):
            c.close()


def timed_sql(cur, stmt) -> float:
    for name, value in stmt.settings:
        cur.execute(f"SET {name} = '{value}'")
    t0 = time.perf_counter()
    cur.execute(stmt.sql).fetchall()
    dt = time.perf_counter() - t0
    for name, _ in stmt.settings:
        cur.execute(f"RESET {name}")
    return dt


def reset_result(cur, name: str) -> None:
    cur.execute(f"DROP TABLE IF EXISTS results.{name}")
    cur.execute(_result_ddl(f"results.{name}"))
    cur.execute("CHECKPOINT")  # as PartitionSession.reset_result


def harness_pieces(engine: SharedMemoryEngine, raw: Raw, m: store.Manifest) -> dict[str, float]:
    """Milliseconds of each step PartitionSession.run adds around the SQL itself."""
    stmt = engine.statements(queries.get("scan"), m, "full-row")[WHOLE]
    raw.prof.execute(engine.statements(queries.get("average"), m, "full-row")[WHOLE].sql).fetchall()
    cur = engine.whole.con

    def ms(fn) -> float:
        ts = []
        for _ in range(50):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts) * 1e3

    def set_reset() -> None:
        for name, value in stmt.settings:
            cur.execute(f"SET {name} = '{value}'")
        for name, _ in stmt.settings:
            cur.execute(f"RESET {name}")

    return {
        "reset_peak_rss (write /proc/self/clear_refs)": ms(reset_peak_rss),
        "peak_rss_bytes (read /proc/self/status)": ms(peak_rss_bytes),
        "get_profiling_information + json.loads": ms(
            lambda: json.loads(raw.prof.get_profiling_information())
        ),
        "scan's SET + RESET disabled_optimizers": ms(set_reset),
        "time.process_time": ms(time.process_time),
    }


def harness(rows: int, partitions: int, repeat: int, seed: int, root: Path) -> None:
    t0 = time.perf_counter()
    build_tables(root / "data", [TableSpec("F", rows, partitions, seed)])
    built = time.perf_counter() - t0
    tdir = root / "data" / f"F{partitions}"
    m = store.read_manifest(tdir)
    raw_dir = root / "raw"
    raw_dir.mkdir()
    for p in m.parts:
        shutil.copyfile(tdir / p.file, raw_dir / p.file)
    memory = default_memory_limit("shared-memory", (partitions,))
    engine = SharedMemoryEngine(EngineConfig(memory_limit=memory))
    engine.start(partitions)
    engine.open_table(m, str(tdir))
    raw = Raw(m, raw_dir, partitions, memory)
    same = engine.con.cursor()
    sides = ("engine", "raw", "raw+prof", "raw+std", "same-inst")
    times = {(q, s): [] for q in QUERIES_A for s in sides}
    try:
        for q in QUERIES_A:
            stmt = engine.statements(queries.get(q), m, "full-row")[WHOLE]
            # As the runner does for timed repetitions: only the scan is profiled.
            stmt = dataclasses.replace(stmt, profile=q == "scan")

            def one(side: str, q=q, stmt=stmt) -> float:
                result = f"{q}_result"
                if side == "engine":
                    if q in ("select", "join"):
                        engine.reset_result(result)
                    # The time the run file records for this statement.
                    return engine.execute({WHOLE: stmt}).wall_s
                cur = {
                    "raw": raw.plain,
                    "raw+prof": raw.prof,
                    "raw+std": raw.std,
                    "same-inst": same,
                }[side]
                if q in ("select", "join"):
                    reset_result(cur, result)
                return timed_sql(cur, stmt)

            for s in sides:  # warm-up, untimed
                one(s)
            for i in range(repeat):
                k = i % len(sides)
                for s in sides[k:] + sides[:k]:
                    times[(q, s)].append(one(s))
        pieces = harness_pieces(engine, raw, m)
    finally:
        same.close()
        raw.close()
        engine.stop()

    print(
        f"(a) shared-memory harness vs bare DuckDB: F{partitions}, {rows:,} rows, "
        f"threads={partitions}, memory_limit={memory}, {repeat} reps interleaved "
        f"(+1 warm-up), table built in {built:.1f} s"
    )
    print("  paired = median over repetitions of (side / raw) within the same round")
    print(
        f"  {'query':8s} {'side':10s} {'median ms':>10s} {'min-max ms':>17s} "
        f"{'vs raw':>7s} {'paired':>7s} {'paired diff ms':>14s}"
    )
    worst = 0.0
    for q in QUERIES_A:
        raw_t = times[(q, "raw")]
        raw_med = spread(raw_t)[0]
        for s in sides:
            ts = times[(q, s)]
            med, lo, hi = spread(ts)
            paired = statistics.median(a / b for a, b in zip(ts, raw_t, strict=True))
            diff = statistics.median(a - b for a, b in zip(ts, raw_t, strict=True))
            print(
                f"  {q:8s} {s:10s} {med * 1e3:10.1f} {lo * 1e3:8.1f}-{hi * 1e3:<8.1f} "
                f"{med / raw_med:6.3f}x {paired:6.3f}x {diff * 1e3:+14.2f}"
            )
            if s == "engine":
                worst = max(worst, paired)
    print("  harness pieces outside the SQL (median of 50 calls; profile read after an AVG):")
    for name, ms in pieces.items():
        print(f"    {name:44s} {ms:7.3f} ms")
    print(
        f"  goal: engine <= {GOAL_HARNESS}x raw (paired) for every query: worst {worst:.3f}x "
        f"-> {'met' if worst <= GOAL_HARNESS else 'NOT met'}"
    )


# --------------------------------------------------------------------------- (b)


def dispatch(
    rows: int,
    partitions: tuple[int, ...],
    repeat: int,
    seed: int,
    root: Path,
    transport: str = "direct",
) -> None:
    specs = [TableSpec("F", rows, p, seed) for p in partitions]
    build_tables(root / "data", specs)
    memory = default_memory_limit("shared-nothing", partitions)
    opts = RunOptions(
        catalog=CATALOG,
        data_dir=str(root / "data"),
        mode="shared-nothing",
        kinds=("F",),
        partitions=partitions,
        queries=("average", "scan"),
        repeat=repeat,
        out=str(root / "run.json"),
        engine=EngineConfig(memory_limit=memory, transport=transport),
    )
    result, _path = run(opts)
    print(
        f"(b) shared-nothing dispatch overhead: F tables of {rows:,} rows, local Dask "
        f"cluster, 1 thread/worker, memory_limit={memory}, {repeat} reps (+1 warm-up), "
        f"--transport {transport}"
    )
    print("  dispatch = coordinator wall_s - slowest partition engine_s, per repetition")
    print(
        f"  {'P':>3s} {'query':8s} {'wall ms':>9s} {'engine ms':>10s} {'dispatch ms':>12s} "
        f"{'min-max ms':>17s} {'start delay ms':>15s} {'open s':>7s}"
    )
    at_p2 = None
    for meas in result.measurements:
        walls = [r.wall_s for r in meas.repetitions]
        slowest = [max(s.engine_s for s in r.partitions) for r in meas.repetitions]
        delays = [max(s.start_delay_s for s in r.partitions) for r in meas.repetitions]
        d = [w - e for w, e in zip(walls, slowest, strict=True)]
        med, lo, hi = spread(d)
        if meas.partitions == 2 and meas.query == "average":
            at_p2 = med
        print(
            f"  {meas.partitions:3d} {meas.query:8s} {statistics.median(walls) * 1e3:9.1f} "
            f"{statistics.median(slowest) * 1e3:10.1f} {med * 1e3:12.1f} "
            f"{lo * 1e3:8.1f}-{hi * 1e3:<8.1f} {statistics.median(delays) * 1e3:15.1f} "
            f"{meas.startup_s:7.2f}"
        )
    if at_p2 is not None:
        print(
            f"  goal: dispatch <= {GOAL_DISPATCH_S * 1e3:.0f} ms at P = 2 (average): "
            f"{at_p2 * 1e3:.1f} ms -> {'met' if at_p2 <= GOAL_DISPATCH_S else 'NOT met'}"
        )
    print("  start delay = dispatch to the slowest partition starting work (median)")
    print("  open s = Measurement.startup_s: opening the P partitions, workers already running")
    for note in getattr(result, "notes", ()):
        print(f"  run note: {note}")
    print("  worker start-up per P (SharedNothingEngine.start(P) on a fresh local cluster):")
    for p in partitions:
        engine = SharedNothingEngine(EngineConfig(memory_limit=memory))
        try:
            print(f"  {p:3d} workers: {engine.start(p):6.2f} s")
        finally:
            engine.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="(a) table rows")
    ap.add_argument("--partitions", type=int, default=2, help="(a) P = threads")
    ap.add_argument("--repeat", type=int, default=25, help="(a) timed repetitions")
    ap.add_argument("--sn-rows", type=int, default=20_000, help="(b) F table rows")
    ap.add_argument("--sn-partitions", default="2,4,8,16", help="(b) partition counts")
    ap.add_argument("--sn-repeat", type=int, default=5, help="(b) timed repetitions")
    ap.add_argument(
        "--sn-transport",
        choices=("direct", "dask"),
        default="direct",
        help="(b) how timed statements travel (dask: the path measured before the channel)",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=("a", "b"), default=None)
    ap.add_argument("--dir", default=None, help="temp dir parent (default: system temp)")
    args = ap.parse_args()
    print(f"duckdb {duckdb.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    if args.only in (None, "a"):
        root = Path(tempfile.mkdtemp(prefix="wisc-overhead-a-", dir=args.dir))
        try:
            harness(args.rows, args.partitions, args.repeat, args.seed, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if args.only in (None, "b"):
        parts = tuple(int(x) for x in args.sn_partitions.split(","))
        root = Path(tempfile.mkdtemp(prefix="wisc-overhead-b-", dir=args.dir))
        try:
            dispatch(args.sn_rows, parts, args.sn_repeat, args.seed, root, args.sn_transport)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with recorded("overhead"):
        main()
