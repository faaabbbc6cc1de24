"""Repeatability: `bench` twice back to back on the same tables; for every headline ratio
(speedup on F, scaleup on G, against P0; harness-dominated points are not headlines) the
two medians must be within 10% of each other and their 95% intervals must overlap.

Usage: python benchmarks/repeatability.py [--preset tiny] [--data DIR] [--out DIR]
       [--mode shared-nothing] [--partitions 1,2,4] [--min-reps 5] [--max-reps 10]
       [--time-budget SECONDS per bench] [--cache cold] [--sizes F_ROWS,G_ROWS]

Without --preset or --sizes the first bench calibrates the table sizes (as `wisconsin bench`
does) and the second reuses exactly those sizes. --sizes fixes them (F total rows, G rows per
partition), e.g. the sizes a default bench chose, to repeat it with other rounds or P. Run anything bigger than tiny under
`nice -n 19 ionice -c3`; the published figure needs a quiet machine.
Exit status: 0 if every headline ratio repeats, 1 if one does not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin import WisconsinError  # noqa: E402
from wisconsin.analysis.schedule import headline_ratios  # noqa: E402
from wisconsin.engines import default_memory_limit  # noqa: E402
from wisconsin.engines.base import EngineConfig  # noqa: E402
from wisconsin.measure.runner import RunOptions  # noqa: E402
from wisconsin.workloads.wisconsin.pipeline import (  # noqa: E402
    BENCH_PARTITIONS,
    DEFAULT_DISK_BUDGET,
    bench,
    plan_sizes,
)
from wisconsin.workloads.wisconsin.presets import Preset, get_preset  # noqa: E402
from wisconsin.workloads.wisconsin.queries import CATALOG  # noqa: E402

MEDIAN_TOLERANCE = 0.10


def compare(run_a, run_b) -> tuple[list[str], bool]:
    a = {(h.kind, h.query, h.P): h for h in headline_ratios(run_a.measurements)}
    b = {(h.kind, h.query, h.P): h for h in headline_ratios(run_b.measurements)}
    lines = [
        f"{'ratio':<22} {'run A [95% CI]':>22} {'run B [95% CI]':>22} {'B/A':>6} {'overlap':>8}  ok"
    ]
    ok_all = True
    for key in sorted(set(a) | set(b)):
        kind, query, p = key
        name = f"{'speedup' if kind == 'F' else 'scaleup'} {query} P{p}"
        if key not in a or key not in b:
            where = "A" if key not in a else "B"
            lines.append(f"{name:<22} not a headline in run {where} (harness-dominated)    NO")
            ok_all = False
            continue
        ha, hb = a[key], b[key]
        ratio = hb.value / ha.value
        overlap = None not in (ha.lo, ha.hi, hb.lo, hb.hi) and ha.lo <= hb.hi and hb.lo <= ha.hi
        ok = abs(ratio - 1) <= MEDIAN_TOLERANCE and overlap
        ok_all &= ok

        def cell(h):
            return f"{h.value:.2f} [{h.lo or float('nan'):.2f}-{h.hi or float('nan'):.2f}]"

        lines.append(
            f"{name:<22} {cell(ha):>22} {cell(hb):>22} {ratio:>6.3f} {str(overlap):>8}  "
            f"{'yes' if ok else 'NO'}"
        )
    if not (set(a) | set(b)):
        lines.append("no headline ratios: every point was harness-dominated")
        ok_all = False
    return lines, ok_all


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default=None)
    ap.add_argument("--data", default="/tmp/wisconsin-repeatability")
    ap.add_argument("--out", default=None, help="run files (default: DATA/runs)")
    ap.add_argument("--mode", default="shared-nothing")
    ap.add_argument("--partitions", default=None)
    ap.add_argument("--cache", default="cold")
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=10)
    ap.add_argument("--time-budget", type=float, default=780.0, help="per bench, seconds")
    ap.add_argument("--disk-budget", type=int, default=DEFAULT_DISK_BUDGET)
    ap.add_argument("--sizes", default=None, help="F_ROWS,G_ROWS (skips the calibration)")
    args = ap.parse_args()
    parts = (
        tuple(int(x) for x in args.partitions.split(","))
        if args.partitions
        else (get_preset(args.preset).partitions if args.preset else BENCH_PARTITIONS)
    )
    if args.preset:
        preset = get_preset(args.preset)
    elif args.sizes:
        try:
            f_rows, g_rows = (int(x) for x in args.sizes.split(","))
        except ValueError:
            raise WisconsinError(f"--sizes wants F_ROWS,G_ROWS, got {args.sizes!r}") from None
        preset = Preset("sizes", f_rows, g_rows, parts, "fixed by --sizes")
    else:
        from wisconsin.measure.calibrate import probe
        from wisconsin.measure.environment import usable_cores

        found = probe(
            Path(args.data) / "_probe",
            max_partitions=min(usable_cores(), max(parts)),
            scan=CATALOG.get("scan"),
        )
        plan = plan_sizes(
            found, disk_budget=args.disk_budget, time_budget_s=args.time_budget, partitions=parts
        )
        preset = plan.preset
        print(f"calibrated sizes: F {plan.f_rows:,} rows, G {plan.g_rows:,} per partition")
    out = args.out or str(Path(args.data) / "runs")
    engine = EngineConfig(memory_limit=default_memory_limit(args.mode, parts))
    opts = RunOptions(
        catalog=CATALOG,
        data_dir=args.data,
        mode=args.mode,
        partitions=parts,
        out=out,
        engine=engine,
        cache=args.cache,
        min_reps=args.min_reps,
        max_reps=args.max_reps,
    )
    runs = []
    for label in ("A", "B"):
        t0 = time.monotonic()
        res = bench(preset, args.data, 1989, opts, deadline=t0 + args.time_budget)
        print(
            f"bench {label}: {res.run_path} in {time.monotonic() - t0:.0f} s ({res.run.stop_reason})"
        )
        runs.append(res.run)
    lines, ok = compare(*runs)
    print(
        f"\nrepeatability ({args.mode}, {args.cache} cache, F {preset.f_rows:,} rows, "
        f"G {preset.g_rows_per_partition:,}/partition, P = {','.join(map(str, parts))}): "
        f"medians within {MEDIAN_TOLERANCE:.0%} and 95% intervals overlapping"
    )
    print("\n".join(lines))
    print("REPEATABLE" if ok else "NOT REPEATABLE")
    return 0 if ok else 1


if __name__ == "__main__":
    with recorded("repeatability"):
        try:
            sys.exit(main())
        except WisconsinError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            sys.exit(2)
