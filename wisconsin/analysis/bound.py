"""The measured bound: the best time this machine allows for one point, from the run file.

    bound(P) = overhead(P) + max(compute / min(threads, cores), bytes / bandwidth)

compute: the table's rows over the single-thread rate of the query (Calibration.
scan_rows_per_s: one in-process DuckDB thread on the unpartitioned table). bytes: cold, the
bytes the repetitions read from storage (median over repetitions of the partitions' sum),
over the storage bandwidth (Calibration.storage_read_bytes_per_s, one shared device); warm,
the table's bytes over the memory bandwidth of min(threads, cores) cores (one core's measured
bandwidth times the cores: optimistic, as a bound must be). overhead: the harness overhead
measured before each repetition (median), else the calibration's dispatch time at P.

A term that was not recorded is left out and said so: the bound gets looser, never wrong.
Without calibration there is no bound ("bound not available: run file lacks calibration").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wisconsin.analysis.stats import median
from wisconsin.runfiles.runfile import CacheState, Measurement, Run

NO_CALIBRATION = "bound not available: run file lacks calibration"


@dataclass(frozen=True)
class Bound:
    time_s: float  # the best possible time at this point
    overhead_s: float
    compute_s: float  # compute / min(threads, cores)
    bytes_s: float | None  # bytes / bandwidth; None: not recorded
    resource: str  # what binds: "cores", "storage", "memory" or "harness"
    notes: tuple[str, ...] = ()  # terms left out (looser bound)


def threads(run: Run, partitions: int) -> int:
    """DuckDB threads working on one point: P workers x threads each, or P (shared memory)."""
    tpw = run.config.threads_per_worker
    if run.config.mode == "shared-nothing" and tpw > 0:
        return partitions * tpw
    return partitions


def recorded_overhead(ms: Sequence[Measurement]) -> float | None:
    """Median harness overhead over every timed repetition that recorded one."""
    return median([r.overhead_s for m in ms for r in m.repetitions if r.overhead_s is not None])


def bytes_read(ms: Sequence[Measurement]) -> float | None:
    """Median over repetitions of the bytes all partitions read from storage (None: absent)."""
    vals = []
    for m in ms:
        for r in m.repetitions:
            b = [s.bytes_read for s in r.partitions]
            if b and all(x is not None for x in b):
                vals.append(float(sum(b)))
    return median(vals)


def table_bytes(ms: Sequence[Measurement]) -> float | None:
    """On-disk bytes of the queried table: Measurement.table_bytes, else partitions' data."""
    for m in ms:
        if m.table_bytes is not None:
            return float(m.table_bytes)
    for m in ms:
        for r in m.repetitions:
            d = [s.data_bytes for s in r.partitions]
            if d and all(x is not None for x in d):
                return float(sum(d))
    return None


def point_bound(run: Run, ms: Sequence[Measurement]) -> tuple[Bound | None, str]:
    """The bound of one (table, query) measured in ms (one per pooled run), or why not."""
    cal = run.calibration
    if cal is None:
        return None, NO_CALIBRATION
    m = ms[0]
    rate = dict(cal.scan_rows_per_s).get(m.query)
    if not rate or rate <= 0:
        return None, f"bound not available: calibration has no single-thread rate for {m.query}"
    notes = []
    par = min(threads(run, m.partitions), cal.cores)
    compute = m.rows / rate / par
    cache = m.cache or run.config.cache
    bytes_s = None
    if cache == CacheState.COLD:
        b, bw = bytes_read(ms), cal.storage_read_bytes_per_s
        if b is None or not bw:
            notes.append("bytes read or storage bandwidth not recorded: storage term left out")
        else:
            bytes_s = b / bw
    elif cache == CacheState.WARM:
        b, bw = table_bytes(ms), cal.memory_read_bytes_per_s
        if b is None or not bw:
            notes.append("table bytes or memory bandwidth not recorded: memory term left out")
        else:
            bytes_s = b / (bw * par)
    else:
        notes.append("cache state not recorded: bytes term left out")
    overhead = recorded_overhead(ms)
    if overhead is None:
        overhead = dict(cal.dispatch_s).get(m.partitions)
    if overhead is None:
        notes.append("harness overhead not recorded: 0 used")
        overhead = 0.0
    work = max(compute, bytes_s or 0.0)
    if overhead >= work:
        resource = "harness"
    elif bytes_s is not None and bytes_s > compute:
        resource = "storage" if cache == CacheState.COLD else "memory"
    else:
        resource = "cores"
    return Bound(overhead + work, overhead, compute, bytes_s, resource, tuple(notes)), ""
