"""kill -9 in the middle of a run: the harness both OLTP workloads' durability tests use.

A child process is the coordinator: it starts the partition servers (they write their pids
and the coordinator's to the log directory's `pids`) and runs load until killed. Once the
drivers have acknowledged enough commits, the chosen partition processes and then the
coordinator are killed with SIGKILL; the surviving partitions notice their coordinator is
gone and stop (node._orphan_watch). What follows is the workload's: repair, then audit the
database against the acknowledgement log.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.oltp.acklog import LOG_GLOB, read_records


def acknowledged(log_dir: Path, record: re.Pattern) -> int:
    """Commits acknowledged so far, over every partition's log."""
    return sum(
        1
        for path in log_dir.glob(LOG_GLOB)
        for kind, _txid in read_records(path, record)
        if kind == "C"
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as dead
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def kill_mid_run(
    cmd: Sequence[str],
    log_dir: Path,
    record: re.Pattern,
    min_acked: int,
    victims: Sequence[int] = (),
    timeout_s: float = 60.0,
) -> int:
    """Start the coordinator (cmd), wait for min_acked acknowledged commits, SIGKILL the
    victim partitions and then the coordinator, and wait until every other partition has
    stopped. Returns the commits acknowledged just before the kill."""
    child = subprocess.Popen(list(cmd))
    deadline = time.monotonic() + timeout_s
    pids_file = log_dir / "pids"
    try:
        while acknowledged(log_dir, record) < min_acked if pids_file.exists() else True:
            if child.poll() is not None:
                raise WisconsinError(f"the coordinator exited early (code {child.returncode})")
            if time.monotonic() > deadline:
                raise WisconsinError("no load reached the partitions before the timeout")
            time.sleep(0.05)
        pids = dict(line.split() for line in pids_file.read_text().splitlines())
        acked = acknowledged(log_dir, record)
        for victim in victims:
            os.kill(int(pids[str(victim)]), signal.SIGKILL)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        survivors = [int(pid) for p, pid in pids.items() if p.isdigit() and int(p) not in victims]
        while any(alive(pid) for pid in survivors):
            if time.monotonic() > deadline:
                raise WisconsinError(
                    "a surviving partition did not stop after the coordinator died"
                )
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return acked
