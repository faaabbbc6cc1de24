"""TPC-C figures (PNG and SVG, oltp.plots): new orders per minute second by second through
the window, with the 30 s batch means the interval is built from and the checkpoint marked;
and each type's response-time distribution (its HdrHistogram as a CDF) against the limit."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from wisconsin import WisconsinError
from wisconsin.oltp import histogram, plots
from wisconsin.oltp.series import batch_means
from wisconsin.workloads.tpcc import metrics as m
from wisconsin.workloads.tpcc.report import NAMES
from wisconsin.workloads.tpcc.runfile import TpccRun, load


def _series(run: TpccRun, fig: Figure) -> None:
    r, cfg = run.result, run.config
    ax = fig.add_subplot()
    per_min = [n * 60.0 for n in r.no_series]
    ax.plot(range(len(per_min)), per_min, color="#9ab", linewidth=0.7, label="each second x 60")
    means = batch_means(list(r.no_series), m.BATCH_S)
    for i, mean in enumerate(means):
        x0 = i * m.BATCH_S
        ax.hlines(mean * 60.0, x0, x0 + m.BATCH_S, color="#1f4e79", linewidth=2,
                  label=f"{m.BATCH_S} s batch means" if i == 0 else None)  # fmt: skip
    t = m.tpmc_interval(r, cfg.window_s)
    ax.axhline(t.median, color="black", linestyle="--", linewidth=0.8,
               label=f"window: {t.fmt()} per minute")  # fmt: skip
    if cfg.mode == "spec":
        ceiling = m.MAX_TPMC_PER_WAREHOUSE * cfg.warehouses
        ax.axhline(ceiling, color="#b04040", linestyle=":", linewidth=0.8,
                   label=f"12.86 x {cfg.warehouses} warehouses")  # fmt: skip
    for c in r.checkpoints:
        ax.axvline(c.at_s, color="grey", linewidth=0.6)
    if r.checkpoints:
        ax.text(r.checkpoints[0].at_s, 0.98, " checkpoint", transform=ax.get_xaxis_transform(),
                fontsize=7, color="grey", va="top")  # fmt: skip
    ax.set_xlabel("seconds into the measured window")
    ax.set_ylabel("new orders per minute (TPC-C-derived)")
    ax.set_title(f"New orders per minute, {cfg.mode} mode, {cfg.warehouses} warehouses")
    ax.legend(fontsize=7)


def _distribution(run: TpccRun, fig: Figure) -> None:
    ax = fig.add_subplot()
    for k in run.result.kinds:
        h = histogram.decode(k.hist)
        n = h.get_total_count()
        if not n:
            continue
        xs, ys, below = [], [], 0
        for item in h.get_recorded_iterator():
            below += item.count_added_in_this_iter_step
            xs.append(item.value_iterated_to / 1e6)
            ys.append(below / n)
        ax.step(xs, ys, where="post", label=f"{NAMES[k.kind]} (p90 {m.latency(k).p90:.3f} s)")
    limit = run.config.limit_s
    ax.axvline(limit, color="#b04040", linestyle="--", linewidth=0.8)
    ax.axhline(0.9, color="grey", linestyle=":", linewidth=0.8)
    ax.text(limit, 0.02, f" p90 limit {limit:g} s", fontsize=7, color="#b04040")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("response time (s, from submission; Delivery: its queueing)")
    ax.set_ylabel("share of the window's transactions at most x")
    ax.set_title("Response-time distribution per type")
    ax.legend(fontsize=7, loc="lower right")


def figures(run: TpccRun) -> list[tuple[str, Figure]]:
    """(name, figure): the New-Order series and the response-time distributions."""
    if not run.result.no_series:
        raise WisconsinError("the TPC-C run has no window to plot")
    return plots.draw(run, (("tpmc-series", _series), ("response-times", _distribution)))


def plot_files(
    paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike | None = None, *, force=False
) -> list[Path]:
    """Every run's figures are drawn before any is written."""
    return plots.plot_files(paths, out_dir, lambda p: figures(load(p)), force=force)
