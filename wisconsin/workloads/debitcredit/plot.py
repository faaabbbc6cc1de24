"""DebitCredit figures: the response-time curve per P and the OLTP scaleup (PNG and SVG)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from wisconsin import WisconsinError
from wisconsin.oltp import plots
from wisconsin.reports.figures import RC, write_figures
from wisconsin.workloads.debitcredit import metrics
from wisconsin.workloads.debitcredit.runfile import DebitCreditRun, load
from wisconsin.workloads.debitcredit.tandem import tandem_scaleup


def _curve(run: DebitCreditRun, fig: Figure) -> None:
    """Response time (the rule's percentile) against offered load, one line per P."""
    cfg = run.config
    pct = round(cfg.rule_share * 100)
    ax = fig.add_subplot()
    for res in run.results:
        steps = [s for s in res.steps if s.mode == "open"]
        rates = sorted({s.offered_tps for s in steps})
        ys = []
        for rate in rates:
            vals = [
                s.latency.p95 if pct == 95 else s.latency.p90
                for s in steps
                if s.offered_tps == rate
            ]
            ys.append(sorted(vals)[len(vals) // 2])
        label = f"P={res.partitions}" + (" (oversubscribed)" if res.oversubscribed else "")
        ax.plot(rates, ys, marker="o", label=label)
    ax.axhline(cfg.rule_limit_s, color="grey", linestyle="--", linewidth=0.8)
    ax.text(
        0.01,
        cfg.rule_limit_s,
        f" {pct}% within {cfg.rule_limit_s:g} s",
        va="bottom",
        transform=ax.get_yaxis_transform(),
        fontsize=7,
        color="grey",
    )
    ax.set_yscale("log")
    ax.set_xlabel("offered load (tps, Poisson arrivals)")
    ax.set_ylabel(f"{pct}th percentile response time (s)")
    ax.set_title("DebitCredit response-time curve")
    ax.legend(fontsize=7)


def _scaleup(run: DebitCreditRun, fig: Figure) -> None:
    cfg = run.config
    ax = fig.add_subplot()
    ps = [r.partitions for r in run.results]
    for name, fn, marker in (
        ("tps by the rule", lambda r: metrics.rule_tps(r, cfg.rule_share, cfg.rule_limit_s), "o"),
        ("peak tps (closed)", metrics.peak_tps, "s"),
    ):
        iv = [fn(r) for r in run.results]
        med = [i.median if i.n else float("nan") for i in iv]  # nothing steady: no point
        err = [
            [m - i.low if i.n else 0.0 for m, i in zip(med, iv, strict=True)],
            [i.high - m if i.n else 0.0 for m, i in zip(med, iv, strict=True)],
        ]
        ax.errorbar(ps, med, yerr=err, marker=marker, capsize=3, label=name)
        if name.startswith("tps by"):
            base = med[0] / ps[0] if med and ps[0] else 0
            ax.plot(ps, [base * p for p in ps], color="grey", linestyle=":", label="linear")
            cores = run.environment.get("usable_cores") or max(ps)
            ax.plot(
                ps,
                [base * min(p, cores) for p in ps],
                color="black",
                linestyle="-.",
                linewidth=0.8,
                label=f"ceiling: {cores} cores",
            )
            ts = tandem_scaleup()
            tx = [ps[0] * k for k in sorted(ts)]
            ax.plot(
                tx,
                [med[0] * ts[k] for k in sorted(ts)],
                marker="^",
                color="#b08040",
                linestyle="--",
                label="Tandem 1987 slope (8-32 VLX)",
            )
    over = [r.partitions for r in run.results if r.oversubscribed]
    if over:
        ax.axvspan(
            min(over) - 0.5, max(over) + 0.5, color="#eeeeee", zorder=0, label="oversubscribed"
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(ps, [str(p) for p in ps])
    ax.set_xlabel("partitions P (database and terminals scale with P)")
    ax.set_ylabel("transactions per second")
    ax.set_title("DebitCredit OLTP scaleup")
    ax.legend(fontsize=7)


def figures(run: DebitCreditRun) -> list[tuple[str, Figure]]:
    """(name, figure): the response-time curves and the OLTP scaleup."""
    if not run.results:
        raise WisconsinError("DebitCredit run has no results to plot")
    return plots.draw(run, (("response-time", _curve), ("oltp-scaleup", _scaleup)))


def plot_run(
    run: DebitCreditRun, out_dir: str | os.PathLike, stem: str = "run", *, force: bool = False
) -> list[Path]:
    out = Path(out_dir)
    with matplotlib.rc_context(RC):
        return write_figures([(out / f"{stem}-{n}", f) for n, f in figures(run)], force=force)


def plot_files(
    paths: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike | None = None,
    *,
    force: bool = False,
) -> list[Path]:
    """Every run's figures are drawn before any is written."""
    return plots.plot_files(paths, out_dir, lambda p: figures(load(p)), force=force)
