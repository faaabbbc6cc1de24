"""What a TPC-C run means: new orders per minute, efficiency with its interval, the response
times against their limit, deferred deliveries, the mix and the input audit's ranges.

Every figure is computed from what the run file holds (the per-second New-Order series, the
histograms, the delivery times, the counts), so the audit and the report derive the same
numbers, and a forged field that disagrees with its evidence fails.
"""

from __future__ import annotations

import math
import statistics

from wisconsin.analysis.stats import t_quantile
from wisconsin.oltp import histogram
from wisconsin.oltp.series import Interval, batch_means
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc.runfile import KindResult, Result, TpccRun

# The most new orders per minute a warehouse's ten terminals can place: with zero response
# times, a terminal's mean cycle is 0.45 x (18 + 12) + 0.43 x (3 + 12) + 0.04 x (2 + 10)
# + 0.04 x (2 + 5) x 2 = 20.99 s, so 10 x 60 x 0.45 / 20.99 = 12.86.
MAX_TPMC_PER_WAREHOUSE = 12.86
LIMIT_S = 5.0  # 90th-percentile response time, every type (reference 003's Table 1)
DELIVERY_LIMIT_S = 80.0  # a deferred delivery completes within this of its queueing ...
DELIVERY_SHARE = 0.90  # ... at least this often
# clause 5.2.3's minimum shares (New-Order takes the rest: it is the measured one)
MIX_MIN = {ins.PAYMENT: 0.43, ins.ORDER_STATUS: 0.04, ins.DELIVERY: 0.04, ins.STOCK_LEVEL: 0.04}
# clause 9.2.2.5's ranges for the inputs: (name, low, high, expected)
SHARE_RANGES = {
    "rolled-back New-Orders": (0.009, 0.011, 0.01),
    "remote order lines": (0.0095, 0.0105, 0.01),
    "remote Payments": (0.14, 0.16, 0.15),
    "by last name (Payment, Order-Status)": (0.57, 0.63, 0.60),
}
LINES_RANGE = (9.5, 10.5)
LINES_SD = math.sqrt((11**2 - 1) / 12)  # O_OL_CNT uniform in 5..15
# A short run counts few events: a share outside its range by less than this many standard
# errors at the run's count (two-sided 99.9%) is chance, not a wrong input; by more, it fails.
Z = 3.29
BATCH_S = 30  # the tpmC interval: batch means of the per-second series, 30 s batches
MIN_BATCHES = 4


def tpmc(result: Result, window_s: float) -> float:
    """New orders committed per minute inside the window."""
    return sum(result.no_series) * 60.0 / window_s


def tpmc_interval(result: Result, window_s: float) -> Interval:
    """tpmC with a 95% interval from batch means (n = 1 when too few batches)."""
    point = tpmc(result, window_s)
    means = [m * 60.0 for m in batch_means(list(result.no_series), BATCH_S)]
    if len(means) < MIN_BATCHES:
        return Interval(point, point, point, 1)
    half = float(t_quantile(len(means) - 1)) * statistics.stdev(means) / math.sqrt(len(means))
    return Interval(point, max(0.0, point - half), point + half, len(means))


def efficiency(run: TpccRun) -> Interval:
    """tpmC against 12.86 per warehouse, as a fraction, with its interval."""
    t = tpmc_interval(run.result, run.config.window_s)
    most = MAX_TPMC_PER_WAREHOUSE * run.config.warehouses
    return Interval(t.median / most, t.low / most, t.high / most, t.n)


def latency(k: KindResult) -> histogram.Latency:
    """The type's percentiles, from its histogram."""
    return histogram.summarize(histogram.decode(k.hist)) if k.hist else k.latency


def kind(result: Result, name: str) -> KindResult:
    return next(k for k in result.kinds if k.kind == name)


def completed(result: Result) -> int:
    return sum(k.count for k in result.kinds)


def tolerance(p: float, n: int) -> float:
    """Z standard errors of a share p at n events (inf when nothing was counted)."""
    return math.inf if n <= 0 else Z * math.sqrt(p * (1 - p) / n)


def shares(result: Result) -> dict[str, tuple[float, int]]:
    """Each input share of the window: (observed, the count it is a share of)."""
    no, pay, os_ = (kind(result, k).count for k in (ins.NEW_ORDER, ins.PAYMENT, ins.ORDER_STATUS))
    out = {
        "rolled-back New-Orders": (result.rolled_back, no),
        "remote order lines": (result.remote_lines, result.lines),
        "remote Payments": (result.remote_payments, pay),
        "by last name (Payment, Order-Status)": (result.by_name, pay + os_),
    }
    return {name: (x / n if n else 0.0, n) for name, (x, n) in out.items()}


def delivered_within(result: Result) -> tuple[float, int]:
    """(share of the window's deliveries completed within 80 s, how many were queued); an
    unfinished one is late."""
    n = len(result.delivery_s) + result.deliveries_unfinished
    ok = sum(s <= DELIVERY_LIMIT_S for s in result.delivery_s)
    return (ok / n if n else 1.0), n


def delivery_p90(result: Result) -> float:
    times = sorted(result.delivery_s)
    return times[max(0, math.ceil(0.9 * len(times)) - 1)] if times else 0.0


def scale_label(run: TpccRun) -> str:
    """Whether the database is large enough for the throughput it delivered (by its
    interval), and sized as the specification says (first line of the verdict when not)."""
    cfg = run.config
    interval = tpmc_interval(run.result, cfg.window_s)
    t = interval.median
    # by the interval's low end: a spec-mode run at its ceiling lands above it half the time
    need = math.ceil(interval.low / MAX_TPMC_PER_WAREHOUSE - 1e-9)
    size = (
        "spec-sized"
        if (cfg.customers_per_district, cfg.items) == (3000, 100_000)
        else f"NOT spec-sized ({cfg.customers_per_district} customers per district, "
        f"{cfg.items:,} items)"
    )
    if need > cfg.warehouses:
        return (
            f"UNSCALED: {t:.1f} new orders per minute needs at least {need} warehouses, "
            f"the database has {cfg.warehouses} ({cfg.mode} mode); {size}"
        )
    return f"scaled: {cfg.warehouses} warehouses for {t:.1f} new orders per minute; {size}"


def rule_cpu(run: TpccRun):
    """The CPU split (oltp.cpu): no partition charged more to its transactions and remote
    halves than its process spent, the recorded figures are what the partitions give, and
    each partition's split sums to its recorded cpu_s."""
    from wisconsin.oltp import cpu

    r = run.result
    bad = [
        f"partition {p}: its split's total {part.total_s:.6f} s, cpu_s {total:.6f} s"
        for p, (part, total) in enumerate(zip(r.cpu, r.cpu_s, strict=False))
        if not math.isclose(part.total_s, total, rel_tol=1e-9, abs_tol=1e-9)
    ]
    if r.cpu and len(r.cpu) != len(r.cpu_s):
        bad.append(f"{len(r.cpu)} partitions' CPU split for {len(r.cpu_s)} partitions")
    return cpu.rule("CPU split", [r.cpu] if r.cpu else [], r.remote_cpu, bad)


def remote_line(run: TpccRun) -> str:
    """The remote share of the types that can span partitions, beside CPU per local
    transaction and extra CPU per remote half (oltp.cpu; per type, local against local)."""
    from wisconsin.oltp import cpu

    two = [k for k in run.result.kinds if k.kind in (ins.NEW_ORDER, ins.PAYMENT)]
    n, d = sum(k.count for k in two), sum(k.distributed for k in two)
    share = f"{d / n:.1%} of New-Orders and Payments distributed ({d:,} of {n:,})" if n else "-"
    return f"Remote transactions: {share}; {cpu.line(run.result.remote_cpu)}"


def capacity_points(runs: list[TpccRun]) -> tuple[list, str]:
    """Each P's tpmC, one window per run, pooled over runs of one mode and one size per
    partition, as analysis.capacity.Measured; and why they cannot be pooled ("": they can)."""
    from wisconsin.analysis.capacity import Measured

    def shape(c) -> tuple:
        return (c.mode, c.warehouses_per_partition, c.customers_per_district, c.items)

    shapes = {shape(r.config) for r in runs}
    if len(shapes) > 1:
        return [], "the runs differ in mode or size per partition (" + "; ".join(
            f"{m} mode, {w} warehouses of {c} customers, {i} items per partition"
            for m, w, c, i in sorted(shapes)
        ) + ")"
    values: dict[int, list[float]] = {}
    for r in runs:
        values.setdefault(r.config.partitions, []).append(tpmc(r.result, r.config.window_s))
    return [Measured(p, tuple(v)) for p, v in sorted(values.items())], ""
