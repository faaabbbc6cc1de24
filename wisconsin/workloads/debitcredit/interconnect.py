"""A cluster run's interconnect beside what remote transactions cost.

Each P on a cluster records its links (round trip, bandwidth, measured by the partition
servers at their start: oltp.probe) and each step the response times of its distributed
transactions apart (Step.remote_hist). A DebitCredit transaction has at most one remote
half, so the extra latency per remote half is the mean response time of the distributed
transactions less that of the local ones; its two round trips on the link (prepare, then
commit after the decision) bound it from below by one round trip when the prepare overlaps
the home half, two when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from wisconsin.oltp import cpu, histogram
from wisconsin.oltp.compare import cluster_lines, cores_used, link_rtt_s, scaled
from wisconsin.oltp.compare import where as place_of
from wisconsin.reports.document import Section, Table


@dataclass(frozen=True)
class RemoteCost:
    share: float  # distributed / committed transactions
    local_mean_s: float | None
    remote_mean_s: float | None

    @property
    def extra_s(self) -> float | None:
        if self.local_mean_s is None or self.remote_mean_s is None:
            return None
        return self.remote_mean_s - self.local_mean_s


def remote_cost(step) -> RemoteCost | None:
    """The step's remote share and mean response times, local and distributed apart;
    None when its distributed response times were not recorded."""
    if not step.remote_hist:
        return None
    every, remote = histogram.decode(step.hist), histogram.decode(step.remote_hist)
    n, nr = every.get_total_count(), remote.get_total_count()
    if not n:
        return RemoteCost(0.0, None, None)
    total_s = every.get_mean_value() * n / 1e6
    remote_s = remote.get_mean_value() * nr / 1e6 if nr else 0.0
    return RemoteCost(
        share=nr / n,
        local_mean_s=(total_s - remote_s) / (n - nr) if n > nr else None,
        remote_mean_s=remote_s / nr if nr else None,
    )


def cost_line(res) -> str | None:
    """One line for a P: its remote share and extra latency per remote half (its closed
    steps pooled), beside CPU per local transaction and extra CPU per remote half (oltp.cpu);
    None for a run file from before the CPU split."""
    if res.remote_cpu is None:
        return None
    closed = [s for s in res.steps if s.mode == "closed" and s.remote_hist]
    latency = "remote share and extra latency not recorded"
    if closed:
        every = histogram.merge([s.hist for s in closed])
        remote = histogram.merge([s.remote_hist for s in closed])

        class _Pooled:
            hist, remote_hist = histogram.encode(every), histogram.encode(remote)

        cost = remote_cost(_Pooled)
        latency = (
            f"remote share {cost.share:.1%}, extra latency per remote half {_ms(cost.extra_s)} ms"
        )
    return f"Remote transactions (closed steps): {latency}; {cpu.line(res.remote_cpu)}"


LINK_HEADER = ["link", "round trip ms (median)", "min", "max", "bandwidth MB/s"]
COST_HEADER = [
    "mode", "load", "remote share", "local ms", "remote ms", "extra per remote half ms",
    "link RTT ms", "extra / RTT",
]  # fmt: skip


def _ms(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x * 1e3:.{digits}f}"


def section(run) -> Section | None:
    """The interconnect of every P measured on a cluster; None if none was."""
    items: list = []
    for res in run.results:
        c = getattr(res, "cluster", None)
        if c is None:
            continue
        items.append(f"P = {res.partitions} {cluster_lines(c)[0]}")
        names = {h.part: h.host for h in c.hosts}
        rows = [
            [f"{names[link.source]} -> {names[link.target]}", _ms(link.rtt_s, 3),
             _ms(link.rtt_min_s, 3), _ms(link.rtt_max_s, 3), f"{link.bandwidth_bps / 1e6:.0f}"]
            for link in c.links
        ]  # fmt: skip
        if rows:
            items.append(Table(LINK_HEADER, rows))
        rtt = link_rtt_s(c)
        cost_rows = []
        for s in sorted(res.steps, key=lambda s: (s.mode, s.offered_tps, s.repeat)):
            cost = remote_cost(s)
            if cost is None:
                continue
            extra = cost.extra_s
            cost_rows.append(
                [s.mode, f"{s.offered_tps:.1f} tps" if s.mode == "open" else f"{s.threads} streams",
                 f"{cost.share:.1%}", _ms(cost.local_mean_s), _ms(cost.remote_mean_s),
                 _ms(extra), _ms(rtt, 3),
                 "-" if extra is None or not rtt else f"{extra / rtt:.1f}"]
            )  # fmt: skip
        if cost_rows:
            items.append(Table(COST_HEADER, cost_rows))
    if not items:
        return None
    items.append(
        "extra per remote half = mean response time of the distributed transactions less the "
        "local ones' (one remote half each); its link round trips: 1 (the prepare overlaps "
        "the home half) to 2 (prepare, then commit), plus the remote partition's own work"
    )
    return Section("Interconnect (cluster)", items, anchor="interconnect")


# --------------------------------------------------------------------------- compare


def where(run, partitions: int) -> dict:
    """Where P ran: its place in words, its cores, its links and its pinning."""
    res = run.result(partitions)
    return place_of(run.environment, getattr(res, "cluster", None), res.pinned_cores)


def differences(a, b) -> list[str]:
    """What else differs between two runs' common P, A -> B, the place first ([]: nothing:
    both ran alike, here or on the same kind of cluster)."""
    common = [r.partitions for r in a.results if b.result(r.partitions) is not None]
    if not common:
        return []
    p = common[-1]
    wa, wb = where(a, p), where(b, p)
    out = [
        f"{k}: {wa[k]} -> {wb[k]}" for k in ("where", "cores", "links", "pinning") if wa[k] != wb[k]
    ]
    ha, hb = a.environment.get("hostname"), b.environment.get("hostname")
    if out and ha != hb:
        out.append(f"coordinator: {ha} -> {hb}")
    return out


def per_core_lines(a, b, partitions: list[int]) -> list[str]:
    """Peak tps per partition and per core, A and B side by side (intervals as measured)."""
    from wisconsin.workloads.debitcredit import metrics

    lines = ["peak tps per partition and per core (cores: where each ran, as above):"]
    for p in partitions:
        cells = []
        for side, run in (("A", a), ("B", b)):
            peak = metrics.peak_tps(run.result(p))
            cores = cores_used(where(run, p), p)
            per_part = scaled(peak, 1 / p).fmt()
            if cores is None:
                cells.append(f"{side} {per_part} per partition, - per core (cores not recorded)")
                continue
            per_core = scaled(peak, 1 / cores).fmt()
            cells.append(f"{side} {per_part} per partition, {per_core} per core (of {cores})")
        lines.append(f"  P={p}: " + "; ".join(cells))
    return lines


def verdict(rows: list[dict]) -> str:
    """One line: B's peak against A's at the largest P both measured."""
    r = rows[-1]
    ratio = r["peak_ratio"]
    if not ratio.n:
        return f"verdict at P={r['P']}: no steady closed window on both sides, no ratio"
    if ratio.n < 2:
        how = "one closed window a side: no interval, no direction claimed"
    elif ratio.low <= 1 <= ratio.high:
        how = "the interval holds 1: no difference shown"
    else:
        how = "B faster" if ratio.low > 1 else "B slower"
    return f"verdict at P={r['P']}: B's peak tps is {ratio.fmt(2)} x A's ({how})"
