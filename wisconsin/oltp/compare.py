"""What comparing two OLTP runs (or two sets of runs) shares: a ratio of throughputs with the
interval that pairs extremes, one side's runs pooled into one interval, what else differs
between the sides (the machine first), the verdict word, and the side-by-side table in text,
markdown or JSON. A workload brings its figures (DebitCredit per P, TPC-C per type)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence

from wisconsin import WisconsinError
from wisconsin.oltp.series import Interval, as_json

FORMATS = ("text", "markdown", "json")
MACHINE = (("host", "hostname"), ("CPU", "cpu_model"), ("usable cores", "usable_cores"),
           ("DuckDB", "duckdb"), ("git commit", "git_commit"))  # fmt: skip


def ratio(base: Interval, new: Interval) -> Interval:
    """NewThroughput / OldThroughput; the interval pairs the extremes (worst and best case).
    Unset ("-") when either side is: a rate no steady step set is not a scaleup of 0."""
    if base.n == 0 or new.n == 0 or base.median <= 0 or base.low <= 0:
        return Interval(0.0, 0.0, 0.0, 0)
    n = max(base.n, new.n)  # spread on either side makes an interval
    return Interval(new.median / base.median, new.low / base.high, new.high / base.low, n)


def pooled(per_run: Sequence[Interval]) -> Interval:
    """One side's figure: a single run's own interval; several runs' median, from the lowest
    run to the highest (run-to-run spread, which a single run's interval does not show)."""
    runs = [i for i in per_run if i.n]
    if len(runs) <= 1:
        return runs[0] if runs else Interval(0.0, 0.0, 0.0, 0)
    points = [i.median for i in runs]
    return Interval(statistics.median(points), min(points), max(points), len(points))


def differences(
    env_a: Sequence[dict], env_b: Sequence[dict], facts_a: dict, facts_b: dict
) -> list[str]:
    """What else differs between the sides, the machine first: each fact whose values
    (over a side's runs) are not the same on both sides, as 'name: x in A, y in B'."""

    def values(items) -> str:
        seen = sorted({str(v) for v in items})
        return ", ".join(seen) if seen else "-"

    out = []
    for name, key in MACHINE:
        a, b = values(e.get(key) for e in env_a), values(e.get(key) for e in env_b)
        if a != b:
            out.append(f"machine {name}: {a} in A, {b} in B")
    for name in facts_a:
        a, b = values(facts_a[name]), values(facts_b.get(name, ()))
        if a != b:
            out.append(f"{name}: {a} in A, {b} in B")
    return out


def verdict_word(r: Interval) -> str:
    """B against A from the ratio's interval: only an interval clear of 1 says which."""
    if r.n == 0:
        return "nothing to compare"
    if r.low > 1.0:
        return "B higher"
    if r.high < 1.0:
        return "B lower"
    return "no difference this can tell (the interval spans 1)"


def render(title: str, head: list[str], rows: list[dict], fmt: str) -> str:
    """The header lines, then one row per figure: A, B and B/A side by side. rows: name,
    a, b, ratio (Intervals; ratio None where a ratio means nothing), digits."""
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown compare format {fmt!r}")
    if fmt == "json":
        keep = ("name", "a", "b", "ratio")
        body = {"title": title, "header": head,
                "rows": [{k: as_json(r[k]) for k in keep} for r in rows]}  # fmt: skip
        return json.dumps(body, indent=1) + "\n"
    table = [["", "A", "B", "B/A"]] + [
        [r["name"], r["a"].fmt(r["digits"]), r["b"].fmt(r["digits"]),
         r["ratio"].fmt(2) if r["ratio"] is not None else ""]
        for r in rows
    ]  # fmt: skip
    if fmt == "markdown":
        out = [f"# {title}", "", *(f"- {x}" for x in head), ""]
        out += ["| " + " | ".join(table[0]) + " |", "|---|---:|---:|---:|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in table[1:]]) + "\n"
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    out = [title, *head, ""]
    out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                      enumerate(zip(r, widths, strict=True))).rstrip() for r in table]  # fmt: skip
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- laptop against cluster


def cluster_lines(cluster) -> list[str]:
    """Where a P ran on a cluster (oltp.runfile.ClusterRecord), for a report: the scheduler
    and each partition's host in one line, then each link's round trip and bandwidth."""
    hosts = ", ".join(f"{h.part} on {h.host} ({h.worker}, {h.address})" for h in cluster.hosts)
    names = {h.part: h.host for h in cluster.hosts}
    out = [
        f"on a Dask cluster ({cluster.scheduler}, {'TLS' if cluster.tls else 'plain TCP'}): "
        f"partition {hosts}"
    ]
    out += [
        f"link {names[k.source]} -> {names[k.target]}: round trip {k.rtt_s * 1e3:.3f} ms (min "
        f"{k.rtt_min_s * 1e3:.3f}, max {k.rtt_max_s * 1e3:.3f}), {k.bandwidth_bps / 1e6:.0f} MB/s"
        for k in cluster.links
    ]
    return out


def link_rtt_s(cluster) -> float | None:
    """The median round trip over a run's links (None: no link, P = 1)."""
    rtts = [link.rtt_s for link in cluster.links]
    return statistics.median(rtts) if rtts else None


def where(environment: dict, cluster, pinned_cores) -> dict:
    """Where a run's partitions ran: its place in words, its cores, its links and its
    pinning (cluster: its oltp.runfile.ClusterRecord, None on this machine)."""
    if cluster is None:
        return {
            "where": f"this machine ({environment.get('hostname', '?')})",
            "cores": int(environment.get("usable_cores") or 0),
            "links": "loopback, not measured",
            "pinning": f"pinned to cores {list(pinned_cores)}" if pinned_cores else "not pinned",
        }
    machines = {h.machine or h.host: h.cores for h in cluster.hosts}
    # 0: a run file from before hosts recorded their cores
    cores = sum(machines.values()) if all(machines.values()) else "not recorded"
    shared = f", on {len(machines)} machine(s)" if len(machines) < len(cluster.hosts) else ""
    rtt = link_rtt_s(cluster)
    bw = statistics.median(x.bandwidth_bps for x in cluster.links) if cluster.links else None
    return {
        "where": f"a Dask cluster ({cluster.scheduler}, "
        f"{'TLS' if cluster.tls else 'plain TCP'}): {len(cluster.hosts)} hosts "
        f"{', '.join(h.host for h in cluster.hosts)}{shared}",
        "cores": cores,
        "links": "none" if rtt is None else f"round trip {rtt * 1e3:.3f} ms, {bw / 1e6:.0f} MB/s",
        "pinning": "one worker each, not pinned to cores",
    }


PLACE = ("where", "cores", "links", "pinning")


def scaled(iv: Interval, k: float) -> Interval:
    return Interval(iv.median * k, iv.low * k, iv.high * k, iv.n)


def cores_used(place: dict, partitions: int) -> int | None:
    """The cores P partitions ran on (a partition uses one), None when not recorded."""
    cores = place["cores"]
    return min(partitions, cores) if isinstance(cores, int) and cores >= 1 else None
