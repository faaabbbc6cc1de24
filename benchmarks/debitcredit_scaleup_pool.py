"""Pool the rounds of several debitcredit_scaleup.py result files into one estimate.

Usage: python benchmarks/debitcredit_scaleup_pool.py RESULT.md [RESULT.md ...]

Reads each file's "round N <side> <tps> tps" lines (the raw output it recorded), takes each
side's mean per round as debitcredit_scaleup.py does, and prints the harness / loop scaleup
ratio over all rounds: median and the t-interval of the mean log ratio (its scaleup_lines);
over the -busy P = 1 baseline too when every file has it.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
from collections import defaultdict

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.append(_here)  # last: the sibling script imports, nothing installed is shadowed

from debitcredit_scaleup import scaleup_lines  # noqa: E402

ROUND = re.compile(r"round (\d+) (\S+)\s+([\d.]+) tps")


def rounds(path: str) -> list[dict[str, float]]:
    """Per round of one file: each side's mean tps."""
    got: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(path) as f:
        for line in f:
            if m := ROUND.match(line):
                got[int(m[1])][m[2]].append(float(m[3]))
    return [{s: statistics.fmean(v) for s, v in got[r].items()} for r in sorted(got)]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__.splitlines()[2])
    every = [r for path in sys.argv[1:] for r in rounds(path)]
    print(f"{len(every)} rounds from {len(sys.argv) - 1} files")
    sides = set.intersection(*(set(r) for r in every))
    tps = {side: [r[side] for r in every] for side in sides}
    for base, label in (("", "second core idle"), ("-busy", "second core busy")):
        if "harness1" + base in sides:
            print(f"P = 1 with the {label}")
            for line in scaleup_lines(tps, base):
                print(line)


if __name__ == "__main__":
    sys.path.insert(0, _here)  # the sibling import above dropped it
    from _results import recorded

    with recorded("debitcredit-scaleup-pool"):
        main()
