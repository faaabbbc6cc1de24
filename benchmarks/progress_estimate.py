"""How far the progress display's time-left estimate at half a bench was off (issue 45).

Usage: python benchmarks/progress_estimate.py [--only wisconsin|debitcredit] [--dir DIR]

Runs, through the CLI with stderr piped, `wisconsin bench --preset tiny` and the quickest
documented DebitCredit bench (`--partitions 1,2 --repeat 1 --step-seconds 2`), one after
the other, and reads from each run file what the bench recorded: when the estimate at half
the job was made, the time left it said, the job's actual time, the signed error (estimated
total / actual - 1; the goal: within 25%). Also counts the piped progress lines and their
gaps (at most one every LOG_EVERY_S, but a phase's start and end). The load average (`uptime`) is printed before and after each bench: the
machine is shared. Deletes its working directory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

BENCHES = {
    "wisconsin": ["bench", "--preset", "tiny"],
    "debitcredit": ["bench", "--workload", "debitcredit", "--partitions", "1,2", "--repeat",
                    "1", "--step-seconds", "2"],
}  # fmt: skip
GOAL = 0.25
LOG_EVERY_S = 5.0  # wisconsin.cli.options.LOG_EVERY_S (not imported: the CLI's module)
LINE = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] .*; job (\d+)%", re.M)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _gaps(stderr: str) -> tuple[int, float | None, int]:
    """(progress lines, the median gap in seconds between two consecutive ones, the gaps
    under LOG_EVERY_S: a phase's start or end)."""
    import statistics

    stamps = [int(h) * 3600 + int(m) * 60 + int(s) for h, m, s, _ in LINE.findall(stderr)]
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    median = statistics.median(gaps) if gaps else None
    return len(stamps), median, sum(g < LOG_EVERY_S for g in gaps)


def bench(name: str, root: Path) -> float | None:
    """Run one bench; print what it recorded; its error (None if it recorded none)."""
    data, out = root / f"{name}-data", root / f"{name}-runs"
    cmd = [sys.executable, "-m", "wisconsin", *BENCHES[name], "--data", str(data)]
    cmd += ["--out", str(out)]
    print(f"\n## {name}: {' '.join(cmd[2:])}")
    print(f"before: {_uptime()}")
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    print(f"after:  {_uptime()}")
    print(f"exit {done.returncode} after {wall:.0f} s")
    said = [
        line for line in done.stdout.splitlines() if line.startswith(("estimate:", "bench took"))
    ]
    print("\n".join(said))
    lines, gap, short = _gaps(done.stderr)
    print(
        f"piped progress lines: {lines}, {gap} s apart (median); {short} less than "
        f"{LOG_EVERY_S:g} s after the one before (a phase's start or end)"
    )
    runs = sorted(p for p in out.glob("*.json") if ".report" not in p.name)
    if done.returncode not in (0, 1) or not runs:
        print(done.stderr[-3000:])
        return None
    doc = json.loads(runs[-1].read_text())
    e = doc.get("estimate")
    print(f"run file: schema {doc['schema_version']}, estimate {json.dumps(e)}")
    if e is None:
        return None
    verdict = "within" if abs(e["error"]) <= GOAL else "OVER"
    print(
        f"=> {name}: at {e['at_s']:.0f} s of {e['job_s']:.0f} s it said {e['left_s']:.0f} s "
        f"left: error {e['error']:+.1%} ({verdict} {GOAL:.0%}), from {e['measured_steps']} "
        "measured steps"
    )
    return e["error"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(BENCHES))
    ap.add_argument("--dir", default=None, help="working directory (default: a temporary one)")
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="wisconsin-progress-"))
    print(f"{datetime.now():%Y-%m-%d %H:%M:%S}; {os.cpu_count()} cores; working in {root}")
    errors = {}
    try:
        for name in [args.only] if args.only else list(BENCHES):
            errors[name] = bench(name, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n## summary")
    for name, err in errors.items():
        print(f"{name}: " + ("not recorded" if err is None else f"{err:+.1%}"))
    if any(err is None or abs(err) > GOAL for err in errors.values()):
        sys.exit(1)


if __name__ == "__main__":
    with recorded("progress-estimate"):
        main()
