"""Compare two sets of TPC-C runs (`wisconsin compare A.json B.json`, or --with-a/--with-b):
what else differs between the sides first (where: this machine or a cluster, its hosts,
cores, link round trip and pinning; then the machine, warehouses, partitions, mode, the
window), then one verdict on new orders per minute, then tpmC, per partition and per core,
efficiency and every type's p90 side by side with their intervals and B / A (oltp.compare:
the ratio pairs extremes).

A side of one run shows that run's intervals (tpmC: batch means; a p90: the order
statistics' distribution-free 95% interval); a side of several shows their median and the
lowest to the highest run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from wisconsin import WisconsinError
from wisconsin.oltp import compare as core
from wisconsin.oltp import histogram
from wisconsin.oltp.series import Interval
from wisconsin.workloads.tpcc import audit
from wisconsin.workloads.tpcc import metrics as m
from wisconsin.workloads.tpcc.report import NAMES
from wisconsin.workloads.tpcc.runfile import TpccRun, load


def p90(run: TpccRun, kind: str) -> Interval:
    point, low, high, n = histogram.percentile_interval(
        histogram.decode(m.kind(run.result, kind).hist), 90.0
    )
    return Interval(point, low, high, n)


def _facts(runs: Sequence[TpccRun]) -> dict:
    cfg = [r.config for r in runs]
    return {
        "warehouses": [c.warehouses for c in cfg],
        "partitions": [c.partitions for c in cfg],
        "mode": [c.mode for c in cfg],
        "window s": [f"{c.window_s:g}" for c in cfg],
        "customers/items": [f"{c.customers_per_district}/{c.items}" for c in cfg],
    }


def _side(runs: Sequence[TpccRun]) -> str:
    first = min(r.started_utc for r in runs)
    return f"{len(runs)} run(s) from {first}" if len(runs) > 1 else f"run of {first}"


def _rows(a: Sequence[TpccRun], b: Sequence[TpccRun]) -> list[dict]:
    def row(name, fig, digits):
        x, y = core.pooled([fig(r) for r in a]), core.pooled([fig(r) for r in b])
        return {"name": name, "a": x, "b": y, "ratio": core.ratio(x, y), "digits": digits}

    rows = [
        row("new orders per minute", _tpm, 1),
        row("  per partition", lambda r: core.scaled(_tpm(r), 1 / r.config.partitions), 1),
        row("  per core", _per_core, 1),
        row("efficiency %", lambda r: _percent(m.efficiency(r)), 1),
    ]
    kinds = [k.kind for k in a[0].result.kinds]
    rows += [row(f"p90 {NAMES[k]} s", lambda r, k=k: p90(r, k), 3) for k in kinds]
    return rows


def _tpm(r: TpccRun) -> Interval:
    return m.tpmc_interval(r.result, r.config.window_s)


def _place(r: TpccRun) -> dict:
    return core.where(r.environment, r.config.cluster, r.config.pinned_cores)


def _per_core(r: TpccRun) -> Interval:
    """New orders per minute per core its partitions ran on (unset: cores not recorded)."""
    cores = core.cores_used(_place(r), r.config.partitions)
    return core.scaled(_tpm(r), 1 / cores) if cores else Interval(0.0, 0.0, 0.0, 0)


def _percent(i: Interval) -> Interval:
    return Interval(100 * i.median, 100 * i.low, 100 * i.high, i.n)


def compare_runs(a: Sequence[TpccRun], b: Sequence[TpccRun], fmt: str = "text") -> str:
    if not a or not b:
        raise WisconsinError("compare needs at least one TPC-C run on each side")
    # runs all on this machine: its host and cores are named with the machine's facts
    local = all(r.config.cluster is None for r in (*a, *b))
    keys = [k for k in core.PLACE if not (local and k in ("where", "cores"))]
    places = [{k: [str(_place(r)[k]) for r in side] for k in keys} for side in (a, b)]
    diffs = core.differences([], [], *places) + core.differences(
        [r.environment for r in a], [r.environment for r in b], _facts(a), _facts(b)
    )
    rows = _rows(a, b)
    tpmc = rows[0]["ratio"]
    head = [
        ("differs: " + "; ".join(diffs))
        if diffs
        else "same machine, warehouses, partitions, mode, window and scale on both sides",
        f"verdict: new orders per minute B / A = {tpmc.fmt(2)}: {core.verdict_word(tpmc)}"
        + (" -- between unlike runs (above)" if diffs else ""),
        "audits: A " + ", ".join(_audit(r) for r in a) + "; B " + ", ".join(_audit(r) for r in b),
    ]
    title = f"TPC-C-derived: B ({_side(b)}) / A ({_side(a)}); p90 B / A > 1 means B slower"
    return core.render(title, head, rows, fmt)


def _audit(run: TpccRun) -> str:
    failed = [x.name for x in audit.audit_run(run) if not x.ok]
    return "PASS" if not failed else "FAIL (" + ", ".join(failed) + ")"


def compare_files(
    a: Sequence[str | os.PathLike], b: Sequence[str | os.PathLike], fmt: str = "text"
) -> str:
    if fmt not in core.FORMATS:
        raise WisconsinError(f"unknown compare format {fmt!r}")
    return compare_runs([load(p) for p in a], [load(p) for p in b], fmt)
