"""The per-module table of a mutmut run and its survivors' names, as in
benchmarks/results/2026-11-26-mutmut-full.md.

Run in a mutmut checkout after `mutmut run` (see [tool.mutmut] in pyproject.toml):
    python benchmarks/mutmut_report.py [CHECKOUT]   # default: the current directory
"""

import collections
import re
import subprocess
import sys

cwd = sys.argv[1] if len(sys.argv) > 1 else "."
out = subprocess.run(
    ["mutmut", "results", "--all", "true"], capture_output=True, text=True, cwd=cwd, check=True
).stdout
rows = [line.strip().rsplit(": ", 1) for line in out.splitlines() if "__mutmut_" in line]
by = collections.defaultdict(collections.Counter)
names = collections.defaultdict(list)
for name, st in rows:
    mod = re.sub(r"\.x[_ǁ].*", "", name)
    by[mod][st] += 1
    if st in ("survived", "no tests"):
        names[mod].append(name)
tot = collections.Counter()
print("| module | mutants | run | killed | survived | not run | killed of run |")
print("|---|---:|---:|---:|---:|---:|---:|")
for mod in sorted(by):
    c = by[mod]
    tot.update(c)
    n = sum(c.values())
    run = n - c["not checked"]
    print(
        f"| {mod} | {n} | {run} | {c['killed']} | {c['survived'] + c['no tests']} | {c['not checked']} | {c['killed'] / run:.1%} |"
    )
n = sum(tot.values())
run = n - tot["not checked"]
print(
    f"| all | {n} | {run} | {tot['killed']} | {tot['survived'] + tot['no tests']} | {tot['not checked']} | {tot['killed'] / run:.1%} |"
)
print()
print("Survivors (`mutmut show NAME` in a mutmut checkout shows each):")
print()
print("```text")
for mod in sorted(names):
    for x in names[mod]:
        print(x)
print("```")
