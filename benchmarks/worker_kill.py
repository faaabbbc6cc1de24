"""kill -9 of one Dask worker at many moments of a small shared-nothing `run`: every kill must
leave a record. Each trial ends one of three ways:

- "failed": the run stopped (a statement was in flight on the dead worker) and wrote an
  incomplete run file saying why; its audit fails `run complete`;
- "recorded": the worker died between statements, its nanny restarted it, the run finished,
  and the run file's topology lists the restart; its audit fails `run complete`;
- "failed before measuring": the kill came before the first timed execution; the run
  ended in one error line and keeps no file (nothing was measured);
- "after the last use": the kill came after the workers' last timed statement (during the
  in-process baseline or the final stop): nothing measured ran on the dead worker;
- "unrecorded": the run finished and its file says nothing of the death (the defect of
  issue 43: 4 of 8 kills before the engine compared worker addresses).

A kill that finds no worker (the run already stopping them) is counted apart ("no worker").
A kill during the final stop of the workers is "recorded" or "unrecorded" by chance; the
delays (from the moment the workers are up, over 0-80% of an unkilled run) avoid the end.

    python benchmarks/worker_kill.py --trials 8
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _results import recorded

WISCONSIN = [sys.executable, "-m", "wisconsin"]


def _workers(pid: int) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for c in kids:
        try:
            if "multiprocessing.spawn" in " ".join(c.cmdline()) or "spawn_main" in " ".join(
                c.cmdline()
            ):
                out.append(c)
        except psutil.Error:
            pass
    return out


def trial(data: Path, out: Path, delay: float) -> tuple[str, str]:
    cmd = [*WISCONSIN, "run", "--data", str(data), "--mode", "shared-nothing", "--tables", "F",
           "--partitions", "1,2", "--queries", "scan,average,update", "--repeat", "3",
           "--blocks", "1", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # the delay counts from when the workers are up
    while not _workers(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(delay)
    victims = _workers(proc.pid)
    what, killed_unix = "no worker", None
    if victims and proc.poll() is None:
        v = random.choice(victims)
        try:
            os.kill(v.pid, signal.SIGKILL)
            killed_unix = time.time()
            what = f"killed pid {v.pid} at {delay:.2f} s"
        except ProcessLookupError:
            what = "no worker"
    _, err = proc.communicate(timeout=600)
    runs = sorted(out.glob("*.json"))
    if "Traceback" in err:
        return "traceback", err.strip().splitlines()[-1]
    if not runs:
        lines = err.strip().splitlines()  # progress lines, then the error (not a terminal)
        if proc.returncode != 0 and lines and lines[-1].startswith("Error: "):
            # nothing was measured yet: the runner keeps no file, the error is its one line
            return "failed before measuring", f"{what}; {lines[-1][:110]}"
        return "no run file", f"exit {proc.returncode}: {lines[-3:]}"
    doc = json.loads(runs[-1].read_text())
    restarts = doc.get("topology", {}).get("worker_restarts", [])
    audit = subprocess.run([*WISCONSIN, "audit", str(runs[-1])], capture_output=True, text=True)
    verdict = (audit.stdout.strip().splitlines() or ["?"])[-1]
    if what == "no worker":
        return "no worker", verdict
    if doc.get("status") == "incomplete":
        why = (doc.get("stop") or {}).get("text", "")  # a failed run's error (schema 3)
        return "failed", f"{what}; failed: {why[:82]}; audit exit {audit.returncode}"
    last_use = max(
        (r["dispatched_unix"] + r["wall_s"] for m in doc["measurements"]
         for r in m["repetitions"] if r.get("dispatched_unix")),
        default=0.0,
    )  # fmt: skip
    if restarts:
        names = ", ".join(r["worker"] for r in restarts)
        return "recorded", f"{what}; restarted: {names}; audit exit {audit.returncode}"
    if killed_unix is not None and killed_unix > last_use:
        # the workers' last timed statement was over: nothing measured ran on the dead one
        return "after the last use", f"{what}, {killed_unix - last_use:.2f} s after; {verdict}"
    return "unrecorded", f"{what}; audit exit {audit.returncode}: {verdict}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--seed", type=int, default=43)
    args = ap.parse_args()
    random.seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="wisconsin-worker-kill-") as tmp:
        data = Path(tmp) / "data"
        subprocess.run([*WISCONSIN, "generate", "--kind", "F", "--rows", "40000",
                        "--partitions", "1,2", "--data", str(data)], check=True,
                       capture_output=True)  # fmt: skip
        # one unkilled run: how long a run lasts, so the kills spread over it
        t0 = time.monotonic()
        subprocess.run([*WISCONSIN, "run", "--data", str(data), "--mode", "shared-nothing",
                        "--tables", "F", "--partitions", "1,2", "--queries",
                        "scan,average,update", "--repeat", "3", "--blocks", "1", "--out",
                        str(Path(tmp) / "base")], check=True, capture_output=True)  # fmt: skip
        length = time.monotonic() - t0
        print(
            f"an unkilled run took {length:.1f} s; kills spread over 0-80% of it after "
            "the workers are up"
        )
        counts: dict[str, int] = {}
        for i in range(args.trials):
            delay = length * 0.8 * i / max(1, args.trials - 1)
            kind, detail = trial(data, Path(tmp) / f"out{i}", delay)
            counts[kind] = counts.get(kind, 0) + 1
            print(f"trial {i + 1}: {kind}: {detail}", flush=True)
        print("counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        bad = sum(counts.get(k, 0) for k in ("unrecorded", "traceback", "no run file"))
        print(f"unrecorded, traceback or unexplained: {bad} of {args.trials}")
        if bad:
            sys.exit(1)


if __name__ == "__main__":
    with recorded("worker-kill"):
        main()
