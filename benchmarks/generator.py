"""Single-core throughput of the generator: rows/s and MB/s (Arrow nbytes).

Usage: python benchmarks/generator.py [--rows 4000000] [--runs 5] [--batch-rows 65536]

Prints the median of a few runs against the goal (>= 1.5 M rows/s and >= 300 MB/s
per core; tpchgen-rs does ~205-250 MB/s/core).  A script, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0] and its name shadows the package
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin.generator import GENERATOR_VERSION, MAX_ROWS, generate  # noqa: E402
from wisconsin.generator.permutation import permutation  # noqa: E402

GOAL_ROWS_PER_S = 1.5e6
GOAL_MB_PER_S = 300.0


def one_run(n: int, seed: int, batch_rows: int) -> tuple[float, int]:
    """Seconds and Arrow bytes to generate all n rows (setup included)."""
    permutation.cache_clear()  # per-(n, seed) setup counts, as it does in a fresh worker
    t0 = time.perf_counter()
    nbytes = 0
    for batch in generate(n, seed, 0, n, batch_rows):
        nbytes += batch.nbytes
    return time.perf_counter() - t0, nbytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch-rows", type=int, default=65536)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    if hasattr(os, "sched_setaffinity"):  # one core, whatever the machine has
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    one_run(min(args.rows, 200_000), args.seed, args.batch_rows)  # warm-up: imports, caches
    runs = [one_run(args.rows, args.seed, args.batch_rows) for _ in range(args.runs)]
    secs = statistics.median(s for s, _ in runs)
    nbytes = runs[0][1]
    rows_s = args.rows / secs
    mb_s = nbytes / secs / 1e6

    permutation.cache_clear()
    t0 = time.perf_counter()
    permutation(MAX_ROWS, args.seed)
    setup_max = time.perf_counter() - t0

    print(
        f"generator v{GENERATOR_VERSION}: {args.rows:,} rows x {args.runs} runs, "
        f"batch_rows={args.batch_rows}, 1 core"
    )
    print(f"  median time      {secs:.3f} s  (runs: {', '.join(f'{s:.3f}' for s, _ in runs)})")
    print(
        f"  rows/s           {rows_s / 1e6:.2f} M   goal {GOAL_ROWS_PER_S / 1e6:.1f} M "
        f"-> ratio {rows_s / GOAL_ROWS_PER_S:.2f}"
    )
    print(
        f"  MB/s (Arrow)     {mb_s:.0f}      goal {GOAL_MB_PER_S:.0f}   "
        f"-> ratio {mb_s / GOAL_MB_PER_S:.2f}"
    )
    print(f"  bytes/row        {nbytes / args.rows:.1f}")
    print(f"  setup n=MAX_ROWS {setup_max * 1e3:.0f} ms (prime, root, discrete logs)")
    met = rows_s >= GOAL_ROWS_PER_S and mb_s >= GOAL_MB_PER_S
    print(f"  goal met: {'yes' if met else 'NO'}")


if __name__ == "__main__":
    with recorded("generator"):
        main()
