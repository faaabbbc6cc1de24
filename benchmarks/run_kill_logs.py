"""kill -9 of `run` after its workers start, again and again in one output directory: every
log directory a killed run leaves must be named and removed by the next command there, and
the directory of a run still going never.

A long shared-nothing run A (its own data directory) keeps going in the output directory
throughout. Then, --kills times: a shared-nothing run B on another data directory starts in the
same output directory, is SIGKILLed a moment after its log directory appears (its workers have
started), and what it left is listed. A last run C must end with exit 0. Counted: log
directories named and removed by the runs that followed, those left at the end (must be
0 besides A's), and whether A's directory was there all along. Issue 43 item 7: before the
fix, 9 kills left 9 directories that nothing named.

    python benchmarks/run_kill_logs.py --kills 9
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded

PREFIX = ".wisconsin-logs-"


def wisconsin(*args: str) -> list[str]:
    return [sys.executable, "-m", "wisconsin", *args]


def run_args(data: Path, out: Path, repeat: int) -> list[str]:
    return wisconsin("run", "--data", str(data), "--tables", "F", "--mode", "shared-nothing",
                     "--repeat", str(repeat), "--out", str(out), "--quiet")  # fmt: skip


def log_dirs(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if p.name.startswith(PREFIX)} if out.is_dir() else set()


def wait_for_new_dir(out: Path, before: set[str], proc, limit: float = 60.0) -> str | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit and proc.poll() is None:
        new = log_dirs(out) - before
        if new:
            return new.pop()
        time.sleep(0.01)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=9)
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wisconsin-run-kill-") as where:
        w = Path(where)
        out = w / "runs"
        for d in ("a", "b"):
            subprocess.run(wisconsin("generate", "--kind", "F", "--rows", str(args.rows),
                                     "--partitions", "2", "--data", str(w / d), "--quiet"),
                           check=True, capture_output=True)  # fmt: skip
        a = subprocess.Popen(run_args(w / "a", out, 1000), stderr=subprocess.PIPE, text=True)
        a_dir = wait_for_new_dir(out, set(), a)
        print(f"run A (pid {a.pid}) is going, its log directory {a_dir}")
        named, a_always = 0, True
        for i in range(args.kills):
            before = log_dirs(out)
            b = subprocess.Popen(run_args(w / "b", out, 50), stderr=subprocess.PIPE, text=True)
            mine = wait_for_new_dir(out, before, b)
            time.sleep(0.5 + 0.25 * (i % 5))  # a little after its workers started
            b.kill()
            _, err = b.communicate()
            said = [ln for ln in err.splitlines() if ln.startswith("removed ") and PREFIX in ln]
            named += len(said)
            a_always &= a_dir in log_dirs(out)
            print(f"kill {i + 1}: its directory {mine}; it had named and removed "
                  f"{len(said)} before; now {len(log_dirs(out) - {a_dir})} left besides A's")  # fmt: skip
        c = subprocess.run(run_args(w / "b", out, 1), capture_output=True, text=True)
        said = [ln for ln in c.stderr.splitlines() if ln.startswith("removed ") and PREFIX in ln]
        named += len(said)
        left = log_dirs(out) - {a_dir}
        a_always &= a_dir in log_dirs(out) and a.poll() is None
        print(f"run C: exit {c.returncode}, named and removed {len(said)}")
        a.send_signal(signal.SIGINT)  # A's ^C: it ends as a user would stop it
        a.communicate(timeout=120)
        print(
            f"{args.kills} kills: {named} log directories named and removed by the next run, "
            f"{len(left)} left at the end; run A's kept while it ran: {a_always}"
        )
        ok = c.returncode == 0 and named == args.kills and not left and a_always
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with recorded("run-kill-logs"):
        main()
