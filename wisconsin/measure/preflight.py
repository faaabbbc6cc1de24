"""The noise preflight (as pyperf's system check): what on this machine may disturb the
timings, checked right before a run and recorded in its run file, so the report can name it.

Checked: the CPU frequency governor (anything but `performance` lets clocks move under
load), other load (cores already busy before the run, sampled for half a second), swap in
use, and a cgroup CPU quota below the usable cores. Nothing here refuses a run: a shared
machine is a fact to state, and blocks are what make the verdicts hold under it.
"""

from __future__ import annotations

import glob
import time
from pathlib import Path

import psutil

from wisconsin.runfiles.runfile import Preflight

SAMPLE_S = 0.5
BUSY_CORES = 0.5  # other work above this many cores' worth is named
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"


def governors() -> tuple[str, ...]:
    """The distinct cpufreq governors, () where the kernel exposes none (most VMs)."""
    found = set()
    for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
        try:
            found.add(Path(path).read_text().strip())
        except OSError:
            continue
    return tuple(sorted(found))


def cpu_quota(path: str = CGROUP_CPU_MAX) -> float | None:
    """The cgroup v2 CPU quota in cores (quota / period); None when there is none."""
    try:
        quota, period = Path(path).read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None


def busy_cores(sample_s: float = SAMPLE_S) -> float:
    """Cores' worth of CPU used by other processes over sample_s (this one idles)."""
    before = psutil.cpu_times()
    time.sleep(sample_s)
    after = psutil.cpu_times()
    idle = (after.idle + getattr(after, "iowait", 0)) - (before.idle + getattr(before, "iowait", 0))
    total = sum(after) - sum(before)
    cores = psutil.cpu_count() or 1
    return max(0.0, (1 - idle / total) * cores) if total > 0 else 0.0


def findings(p: Preflight, usable: int) -> tuple[str, ...]:
    """What the report names, in words."""
    out = []
    moving = [g for g in p.governors if g != "performance"]
    if moving:
        out.append(
            f"CPU frequency governor {', '.join(moving)}: clocks may change under load "
            "(set `performance` for steadier times)"
        )
    if p.busy_cores >= BUSY_CORES:
        out.append(f"other load: {p.busy_cores:.1f} of {usable} cores busy right before the run")
    if p.swap_used_bytes > 0:
        out.append(f"swap in use: {p.swap_used_bytes / 2**20:,.0f} MiB")
    if p.cpu_quota is not None and p.cpu_quota < usable:
        out.append(f"cgroup CPU quota of {p.cpu_quota:g} cores, below the {usable} usable")
    return tuple(out)


def check(usable: int) -> Preflight:
    p = Preflight(
        governors=governors(),
        busy_cores=round(busy_cores(), 2),
        load_1m=round(psutil.getloadavg()[0], 2),
        swap_used_bytes=psutil.swap_memory().used,
        cpu_quota=cpu_quota(),
        findings=(),
    )
    return Preflight(**{**p.__dict__, "findings": findings(p, usable)})
