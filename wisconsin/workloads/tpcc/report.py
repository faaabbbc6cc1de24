"""A TPC-C run as text, markdown or JSON: the verdict block first (new orders per minute,
efficiency with its interval, every p90 against its limit, deliveries, the scale label, the
audit), then the types, reference 003's Tables 3-5 beside ours, the inputs, the engine and the consistency conditions."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.workloads.tpcc import audit as tpcc_audit
from wisconsin.workloads.tpcc import metrics as m
from wisconsin.workloads.tpcc import paper
from wisconsin.workloads.tpcc.runfile import TpccRun, load

FORMATS = ("text", "markdown", "json")
NAMES = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status",
         "delivery": "Delivery", "stock_level": "Stock-Level"}  # fmt: skip


def verdict(run: TpccRun) -> list[str]:
    cfg, r = run.config, run.result
    t = m.tpmc_interval(r, cfg.window_s)
    e = m.efficiency(run)
    rules = tpcc_audit.audit_run(run)
    failed = [x.name for x in rules if not x.ok]
    within, n = m.delivered_within(r)
    scale = m.scale_label(run)
    interval = f" [95% CI {t.low:.1f}-{t.high:.1f}]" if t.n > 1 else ""
    e_interval = f" [{e.low:.1%}-{e.high:.1%}]" if e.n > 1 else ""
    lines = [scale] if scale.startswith("UNSCALED") else []
    lines += [
        f"TPC-C-derived, {cfg.mode} mode (not an audited tpmC): {t.median:.1f} new orders per "
        f"minute{interval}, {cfg.warehouses} warehouses on {cfg.partitions} partition(s)",
        f"efficiency {e.median:.1%}{e_interval} of 12.86 x {cfg.warehouses} = "
        f"{m.MAX_TPMC_PER_WAREHOUSE * cfg.warehouses:.1f}"
        + (" (no-wait: no ceiling applies)" if cfg.mode != "spec" else ""),
        "p90 vs limit: "
        + ", ".join(f"{NAMES[k.kind]} {m.latency(k).p90:.3f}/{cfg.limit_s:g} s" for k in r.kinds),
        f"deferred deliveries: {within:.1%} of {n} within {m.DELIVERY_LIMIT_S:g} s "
        f"(p90 {m.delivery_p90(r):.2f} s)"
        if cfg.mode == "spec"
        else "deliveries run inline (no-wait mode)",
    ]
    if not scale.startswith("UNSCALED"):
        lines.append(scale)
    lines.append("audit: " + ("PASS" if not failed else "FAIL (" + ", ".join(failed) + ")"))
    return lines


def _types(run: TpccRun) -> list[list[str]]:
    n = m.completed(run.result)
    rows = [["type", "count", "share", "p50 s", "p90 s", "p95 s", "p99 s", "max s", "keying "
             "min/avg/max s", "think min/avg/max s", "2PC", "retries", "failed"]]  # fmt: skip
    for k in run.result.kinds:
        lat = m.latency(k)
        rows.append(
            [NAMES[k.kind], f"{k.count:,}", f"{k.count / n:.1%}" if n else "-",
             *(f"{v:.3f}" for v in (lat.p50, lat.p90, lat.p95, lat.p99, lat.max)),
             f"{k.keying.min:.1f}/{k.keying.mean:.1f}/{k.keying.max:.1f}",
             f"{k.think.min:.1f}/{k.think.mean:.1f}/{k.think.max:.1f}",
             str(k.distributed), str(k.retries), str(k.failed)]
        )  # fmt: skip
    return rows


def _table(rows: list[list[str]], fmt: str) -> list[str]:
    if fmt == "markdown":
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return out + ["| " + " | ".join(r) + " |" for r in rows[1:]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def render(run: TpccRun, fmt: str = "text") -> str:
    if fmt == "json":
        rules = tpcc_audit.audit_run(run)
        e = m.efficiency(run)
        return json.dumps(
            {
                "tpmc": m.tpmc(run.result, run.config.window_s),
                "efficiency": e.median,
                "efficiency_interval": [e.low, e.high],
                "p90_s": {k.kind: m.latency(k).p90 for k in run.result.kinds},
                "deliveries_within_80s": m.delivered_within(run.result)[0],
                "scale": m.scale_label(run),
                "audit": {x.name: x.verdict for x in rules},
                "paper_tables": {title: table(run) for title, table in paper.TABLES},
            },
            indent=1,
        )
    if fmt not in FORMATS:
        raise WisconsinError(f"a TPC-C report is text, markdown or json, not {fmt}")
    md = fmt == "markdown"
    r, cfg = run.result, run.config
    h = (lambda s: f"\n## {s}\n") if md else (lambda s: f"\n{s}\n" + "-" * len(s))
    out = ["# TPC-C-derived run" if md else "TPC-C-derived run", ""]
    out += [f"- {x}" if md else x for x in verdict(run)]
    out.append(h("Transactions in the window"))
    out += _table(_types(run), fmt)
    if r.remote_cpu is not None:  # a run file from before the CPU split has none
        out += ["", m.remote_line(run)]
    if cfg.cluster is not None:
        from wisconsin.oltp.compare import cluster_lines

        out.append(h("Interconnect (cluster)"))
        out += [f"- {x}" if md else x for x in cluster_lines(cfg.cluster)]
    out.append(h("Reference 003's Tables 3-5, its figures beside ours"))
    out.append(
        f"the paper: 2,592 warehouses on 4 nodes, a 120-minute interval, audited; ours: "
        f"{cfg.warehouses} warehouses on {cfg.partitions} partition(s), a {cfg.window_s:g} s "
        f"window, {cfg.mode} mode, TPC-C-derived (not audited)"
    )
    for title, table in paper.TABLES:
        out += ["", f"**{title}**" if md else title, *([""] if md else [])]
        out += _table(table(run), fmt)
    out.append(h("Inputs (clause 9.2.2.5) and audit"))
    out += [
        f"- {x.name}: {x.verdict} — {x.detail}" if md else f"{x.verdict:5} {x.name}: {x.detail}"
        for x in tpcc_audit.audit_run(run)
    ]
    out.append(h("Engine"))
    for c in r.checkpoints:
        out.append(
            f"checkpoint on partition {c.partition} at {c.at_s:.1f} s into the window: "
            + (f"{c.seconds:.2f} s" if not c.error else f"refused ({c.error})")
        )
    for p, (wal, mem, cpu) in enumerate(zip(r.wal_bytes, r.memory_bytes, r.cpu_s, strict=False)):
        out.append(
            f"partition {p}: WAL max {max(wal, default=0) / 2**20:.1f} MB, engine memory "
            f"max {max(mem, default=0) / 2**20:.0f} MB, process CPU {cpu:.1f} s"
        )
    where = cfg.data_dir
    if cfg.cluster is not None:  # cfg.data_dir holds only the note of where they are
        where = "its hosts: " + ", ".join(
            f"{h.host}:{Path(h.path).parent}" for h in cfg.cluster.hosts
        )
    out.append(f"database built in {r.build_s:.0f} s, {r.db_bytes / 2**20:.0f} MB, in {where}")
    out.append(h("Consistency after the run"))
    out += list(r.consistency) + list(r.independent)
    if r.receipts is not None:
        out.append(r.receipts.line())
    out.append(h("Notes"))
    out += list(run.notes)
    return "\n".join(out) + "\n"


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text") -> str:
    """Each run's report; runs at three P or more: the capacity model after them (text and
    markdown)."""
    runs = [load(p) for p in paths]
    out = "\n".join(render(run, fmt) for run in runs)
    lines = capacity_lines(runs)
    if lines and fmt in ("text", "markdown"):
        title = "Capacity model across P (tpmC, one window per run)"
        head = f"\n## {title}\n" if fmt == "markdown" else f"\n{title}\n" + "-" * len(title)
        out += "\n".join([head, *lines]) + "\n"
    return out


def capacity_lines(runs: list[TpccRun]) -> list[str]:
    """The capacity model over the runs' P (analysis.capacity); [] under three P."""
    from wisconsin.analysis import capacity

    if len({run.config.partitions for run in runs}) < capacity.MIN_FITTED_P:
        return []
    points, differ = m.capacity_points(runs)
    return [f"not fitted: {differ}"] if differ else capacity.lines(capacity.model(points), "tpmC")
