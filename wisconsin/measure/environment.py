"""What a run file records about the machine and the software, to reproduce and judge it."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path

import psutil

from wisconsin import __version__
from wisconsin.runfiles.runfile import Environment


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:
        return "not installed"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def git_commit() -> str:
    """The source checkout's commit, with -dirty if it has changes; 'unknown' if installed."""
    root = Path(__file__).resolve().parents[2]  # wisconsin/measure/environment.py
    if not (root / ".git").exists():
        try:
            from wisconsin._build_info import GIT_COMMIT  # stamped into wheels

            return GIT_COMMIT
        except ImportError:
            return "unknown"
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # never take index.lock from others' git
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            env=env,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            env=env,
        ).stdout.strip()
        return (head + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


PAGE_REPORTING = "/sys/module/page_reporting/parameters/reported_kib"


def free_page_reporting() -> bool | None:
    """Whether this (virtual) machine has handed freed memory to its host: Linux's free page
    reporting counter is above zero. False when the kernel has no page reporting; None off
    Linux."""
    if platform.system() != "Linux":
        return None
    try:
        return int(Path(PAGE_REPORTING).read_text().strip() or 0) > 0
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return None


DAMON_KDAMONDS = "/sys/kernel/mm/damon/admin/kdamonds"
DAMON_RECLAIM = "/sys/module/damon_reclaim/parameters/enabled"


def proactive_reclaim() -> bool | None:
    """Whether the kernel pages out memory that has sat idle, unasked: a running DAMON
    monitor with a `pageout` scheme (as this project's Firecracker VMs have: page cache idle
    for seconds to minutes is dropped) or the damon_reclaim module. False when the kernel has
    neither; None off Linux or when it cannot be read."""
    if platform.system() != "Linux":
        return None
    try:
        if Path(DAMON_RECLAIM).read_text().strip() in ("Y", "1"):
            return True
    except FileNotFoundError:
        pass
    except OSError:
        return None
    root = Path(DAMON_KDAMONDS)
    try:
        for kdamond in root.iterdir():
            state = kdamond / "state"
            if not kdamond.is_dir() or not state.exists() or state.read_text().strip() != "on":
                continue
            for action in kdamond.glob("contexts/*/schemes/*/action"):
                if action.read_text().strip() == "pageout":
                    return True
    except FileNotFoundError:
        return False
    except OSError:
        return None
    return False


def capture() -> Environment:
    from wisconsin.measure import preflight

    return Environment(
        tool_version=__version__,
        git_commit=git_commit(),
        python=platform.python_version(),
        duckdb=_version("duckdb"),
        pyarrow=_version("pyarrow"),
        numpy=_version("numpy"),
        dask=_version("dask"),
        distributed=_version("distributed"),
        os=f"{platform.system()} {platform.release()}",
        hostname=socket.gethostname(),
        cpu_model=cpu_model(),
        usable_cores=usable_cores(),
        memory_bytes=psutil.virtual_memory().total,
        free_page_reporting=free_page_reporting(),
        proactive_reclaim=proactive_reclaim(),
        preflight=preflight.check(usable_cores()),
    )
