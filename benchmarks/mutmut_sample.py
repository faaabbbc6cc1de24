"""Mutation testing of the verdict code on a stratified random sample (issue 30).

Usage (from the repository root, with `pip install '.[test,mutation]'` and the package itself
uninstalled so the tests import mutmut's copy):
    python benchmarks/mutmut_sample.py [--per-module 70] [--seed 2026] [--run-file RUN.json]

mutmut 3 with the [tool.mutmut] settings in pyproject.toml generates every mutant of the
audit rules, statistics, stop rule and compare (2,653 on 2026-11-26); a full run takes about
an hour on 2 cores. This draws --per-module mutants per module (seeded), runs mutmut on
them (results are remembered: a rerun only tests what changed), and prints killed /
survived per module and the names of those not killed. --run-file: a run made once by
tests/conftest.py's shm_run (WISCONSIN_TEST_RUN_FILE), so the audit tests do not measure a
run per mutant.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import subprocess
import sys
from pathlib import Path


def results() -> dict[str, str]:
    out = subprocess.run(
        ["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=True
    ).stdout
    rows = (line.strip().rsplit(": ", 1) for line in out.splitlines() if "__mutmut_" in line)
    return {name: status for name, status in rows}


def module(name: str) -> str:
    parts = name.split("__mutmut_")[0].split(".")
    return ".".join(parts[:4] if parts[1] == "workloads" else parts[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-module", type=int, default=70)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--run-file", type=Path, default=None)
    a = ap.parse_args()
    env = dict(os.environ)
    if a.run_file:
        env["WISCONSIN_TEST_RUN_FILE"] = str(a.run_file.resolve())
    if not results():  # nothing generated yet: a run that names no mutant generates them
        subprocess.run(["mutmut", "run", "no-such-mutant"], env=env, check=False)
    by = collections.defaultdict(list)
    for name in results():  # mutmut's order: the seed then draws the same sample
        by[module(name)].append(name)
    rng = random.Random(a.seed)
    sample = []
    for mod in sorted(by):
        sample += rng.sample(by[mod], min(a.per_module, len(by[mod])))
    subprocess.run(["mutmut", "run", "--max-children", "2", *sample], env=env, check=False)
    status = results()
    counts = collections.defaultdict(collections.Counter)
    for name in sample:
        counts[module(name)][status[name]] += 1
    total = collections.Counter(status[n] for n in sample)
    for mod, c in sorted(counts.items()):
        print(f"{mod}: {dict(c)}")
    print(f"sample of {len(sample)}: {dict(total)}; killed {total['killed'] / len(sample):.1%}")
    print("not killed:")
    for name in sample:
        if status[name] != "killed":
            print(f"  {name}: {status[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
