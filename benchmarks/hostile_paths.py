"""Issue 43's injection, replayed: every table verb on data paths that hold SQL quotes.

For each hostile data path (the issue's injection string, a plain `it's`, one with `"`, `;`,
a newline and a space, one with a backslash), in a fresh scratch directory that is also the
commands' working directory, run generate, info, info --deep, repair, export, run in both
modes and report; print each command's exit status and last stderr line; then list every
file the commands created outside the data, export and output directories (a `pwned.csv`
or a stray DuckDB file is an injection that ran).

    python benchmarks/hostile_paths.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
# run as a script, this file's directory is sys.path[0] and its name shadows the package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

INJECTION = "P/inj/q' AS p9; COPY (SELECT 42 AS x) TO 'pwned.csv'; ATTACH 'z"
PATHS = {
    "injection": INJECTION,
    "apostrophe": "it's",
    "mixed": 'a "b"; c\ne f',
    "backslash": "c\\d",  # DuckDB reads it as c/d: refused in one line, naming c\d
}


def wisconsin(*args) -> list[str]:
    return [sys.executable, "-m", "wisconsin", *map(str, args)]


def verbs(data: str, rows: int) -> list[tuple[str, list[str]]]:
    table = os.path.join(data, "F1")
    out = os.path.join(data, "runs")
    tiny = ["--queries", "select", "--repeat", "1", "--blocks", "1", "--out", out]
    return [
        (
            "generate",
            ["generate", "--kind", "F", "--rows", rows, "--partitions", 1, "--data", data],
        ),
        ("info", ["info", table]),
        ("info --deep", ["info", table, "--deep"]),
        ("repair", ["repair", table]),
        ("export", ["export", table, "--out", os.path.join(data, "parquet")]),
        ("run shared-memory", ["run", "--data", data, "--mode", "shared-memory", *tiny]),
        ("run shared-nothing", ["run", "--data", data, "--mode", "shared-nothing", *tiny]),
    ]


def trial(name: str, data: str, rows: int) -> tuple[int, list[str]]:
    """Run every verb on data; return (commands failed, files created outside data)."""
    failed = 0
    with tempfile.TemporaryDirectory(prefix="wisconsin-hostile-") as scratch:
        env = dict(os.environ, PYTHONPATH=os.getcwd())
        for verb, args in verbs(data, rows):
            p = subprocess.run(
                wisconsin(*args), cwd=scratch, env=env, capture_output=True, text=True
            )
            last = (p.stderr.strip().splitlines() or [""])[-1]
            failed += p.returncode != 0
            print(f"  {verb:<20} exit {p.returncode}  {last[:150]!r}")
        runs = sorted((Path(scratch) / data / "runs").glob("*.json"))
        if runs:
            p = subprocess.run(
                wisconsin("report", runs[-1]), cwd=scratch, env=env, capture_output=True, text=True
            )
            failed += p.returncode != 0
            print(f"  {'report':<20} exit {p.returncode}")
        root = Path(scratch)
        inside = root / data
        stray = sorted(
            str(f.relative_to(root))
            for f in root.rglob("*")
            if f.is_file() and inside not in f.parents
        )
        pwned = root / "pwned.csv"
        if pwned.exists():
            print(f"  pwned.csv holds {pwned.read_text()!r}")
    return failed, stray


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    args = ap.parse_args()
    total_stray = 0
    for name, data in PATHS.items():
        print(f"{name}: --data {data!r}")
        failed, stray = trial(name, data, args.rows)
        total_stray += len(stray)
        print(f"  {failed} commands failed; {len(stray)} files outside the data directory")
        for f in stray:
            print(f"    {f!r}")
    print(f"files written outside the data directories: {total_stray}")
    return 1 if total_stray else 0


if __name__ == "__main__":
    with recorded("hostile-paths"):
        sys.exit(main())
