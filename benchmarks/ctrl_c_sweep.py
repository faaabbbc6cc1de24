"""^C at many moments of a small DebitCredit bench: every one must end in exit 130 (or death
by SIGINT, which a shell also shows as 130) with the one "interrupted" line and no traceback
from the bench or any process it started.

Each trial starts `wisconsin bench --workload debitcredit` (P=2, 2 branches, 2 s steps) in its
own session with SIGINT at the default handler (as in a terminal), sends SIGINT to the whole
process group after a delay from the sweep, and reads the exit status and stderr. The windows
where a ^C once went wrong are narrow (a child still importing, a process half-started), so
the sweep is fine-grained around start-up, the build and the servers' start.

    python benchmarks/ctrl_c_sweep.py --start 0.8 --step 0.025 --trials 64
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

from _results import recorded

LINE = "interrupted; finished partitions are kept; no run file was written"


def trial(delay: float, where: str) -> str | None:
    """None if the ^C after delay seconds ended as it must; otherwise what went wrong."""
    cmd = [sys.executable, "-m", "wisconsin", "bench", "--workload", "debitcredit",
           "--partitions", "2", "--branches", "2", "--step-seconds", "2", "--repeat", "1",
           "--data", f"{where}/d", "--out", f"{where}/runs"]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    if proc.returncode not in (130, -signal.SIGINT):
        return f"exit {proc.returncode}: {' | '.join(lines[-3:])}"
    if "Traceback" in err or not lines or lines[-1] != LINE:
        return f"exit {proc.returncode}, stderr: {' | '.join(lines[-6:])}"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--start", type=float, default=0.8, help="first delay, s")
    ap.add_argument("--step", type=float, default=0.025, help="delay step, s")
    ap.add_argument("--trials", type=int, default=64)
    args = ap.parse_args()
    bad = 0
    for i in range(args.trials):
        delay = round(args.start + i * args.step, 4)
        with tempfile.TemporaryDirectory(prefix="wisconsin-ctrl-c-") as where:
            wrong = trial(delay, where)
        if wrong:
            bad += 1
            print(f"^C at {delay:.3f} s: {wrong}")
    print(
        f"{bad} of {args.trials} trials went wrong (delays {args.start:.3f} s step {args.step} s)"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    with recorded("ctrl-c-sweep"):
        main()
