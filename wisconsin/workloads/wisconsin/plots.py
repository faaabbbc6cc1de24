"""Speedup and scaleup figures of a run (matplotlib, Agg canvas: no display needed).

Our ratios are relative to P0, the smallest partition count measured (1.00 at P0). The
Tandem points are Table 2 as published, relative to P = 2 (the report's graphs double the
speedups; we do not). Files are PNG and SVG, written under a temporary name and renamed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wisconsin import WisconsinError
from wisconsin.analysis.metrics import Point, as_runs, compute_points, machine_cores
from wisconsin.reports.figures import FORMATS, write_figures  # noqa: F401  (FORMATS: read here)
from wisconsin.reports.figures import RC as _RC
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin import tandem
from wisconsin.workloads.wisconsin.queries import QUERIES
from wisconsin.workloads.wisconsin.runs import group_runs, load_runs

KIND_NAME = {"F": "speedup", "G": "scaleup"}
TANDEM_STYLE = {"VLX": ("s", "#777777"), "CLX": ("^", "#b08040")}


def _draw_tandem(ax: Axes, kind: str, query: str) -> set[int]:
    """Tandem's published ratios of this query (dotted); returns their partition counts."""
    xs_all: set[int] = set()
    for system in tandem.SYSTEMS:
        pub = tandem.published(system, kind, query)
        if pub:
            marker, color = TANDEM_STYLE[system]
            xs = sorted(pub)
            xs_all |= set(xs)
            ax.plot(
                xs,
                [pub[x] for x in xs],
                linestyle=":",
                marker=marker,
                color=color,
                markersize=4,
                label=f"Tandem {system} 1989 (rel. P=2)",
            )
    return xs_all


def _draw_ideal_and_bound(ax: Axes, kind: str, pts: list[Point], xs_all: set[int]) -> list[str]:
    """The ideal line over every partition count shown and the measured bound; returns why
    there is no bound, for the caption."""
    P0 = pts[0].P0
    xs = sorted(xs_all | {P0})
    ideal = [x / P0 if kind == "F" else 1.0 for x in xs]
    ax.plot(xs, ideal, color="black", linewidth=0.8, linestyle="--", label="ideal")
    bounded = [p for p in pts if p.bound_ratio is not None]
    if not bounded:
        return sorted({p.bound_note for p in pts if p.bound_note}) or ["bound not available"]
    ax.plot(
        [p.P for p in bounded],
        [p.bound_ratio for p in bounded],
        color="#c03030",
        linewidth=1.2,
        linestyle="-.",
        label="measured bound (best possible here)",
    )
    return []


def _draw_measured(ax: Axes, pts: list[Point]) -> None:
    """Our ratios with their intervals, harness-dominated and oversubscribed points marked."""
    ys = [p.ratio.value for p in pts]
    # Points without an interval (one repetition) get a zero-length bar, not a fake one.
    lo = [p.ratio.value - (p.ratio.lo if p.ratio.lo is not None else p.ratio.value) for p in pts]
    hi = [(p.ratio.hi if p.ratio.hi is not None else p.ratio.value) - p.ratio.value for p in pts]
    ax.errorbar(
        [p.P for p in pts],
        ys,
        yerr=[lo, hi],
        marker="o",
        color="#1f5fbf",
        capsize=3,
        label=f"measured (rel. P0={pts[0].P0}, 95% CI)",
    )
    # marked: harness-dominated points (a grey x), oversubscribed ones (a red ring)
    harness = [p for p in pts if p.harness or p.base_harness]
    over = [p for p in pts if p.oversubscribed]
    cross = {"marker": "x", "color": "#808080", "zorder": 6}
    ring = {"facecolors": "none", "edgecolors": "#c03030", "linewidths": 1.2, "zorder": 5}
    for marked, label, style in (
        (harness, "harness-dominated point or base (not headline)", cross),
        (over, "P > usable cores", ring),
    ):
        if marked:
            xs, ys = [p.P for p in marked], [p.ratio.value for p in marked]
            ax.scatter(xs, ys, s=90, label=label, **style)


def _draw(ax: Axes, kind: str, query: str, pts: list[Point]) -> list[str]:
    """One panel: our ratios with CIs, ideal, measured bound, Tandem's published ratios.
    Returns its notes, for the caption (nothing is written over the data)."""
    notes: list[str] = []
    pts = sorted(pts, key=lambda p: p.P)
    label = tandem.QUERY_LABELS.get(query, query)
    xs_all = {p.P for p in pts} | _draw_tandem(ax, kind, query)
    if pts:
        notes += _draw_ideal_and_bound(ax, kind, pts, xs_all)
        _draw_measured(ax, pts)
    ax.set_xscale("log", base=2)
    ticks = sorted(xs_all)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlabel("partitions")
    better = "higher" if kind == "F" else "lower"
    ax.set_ylabel(f"{KIND_NAME[kind]} ratio ({better} is better)")
    ax.set_title(f"{label} {KIND_NAME[kind]}")
    ax.grid(True, linewidth=0.3)
    return notes


def _legend_and_caption(fig: Figure, subtitle: str, notes: Sequence[str]) -> None:
    """One legend for every panel, right of them, and the notes as the caption below them:
    both outside the axes (the constrained layout makes room), never over a curve."""
    seen: dict[str, object] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    fig.legend(
        list(seen.values()),
        list(seen),
        loc="outside right upper",
        fontsize=7,
        frameon=False,
    )
    # the run it shows and the notes: a caption, under the panels (a title above them would
    # share its row with the legend)
    caption = "\n".join([subtitle, *(["; ".join(dict.fromkeys(notes))] if notes else [])])
    fig.supxlabel(caption, fontsize=7)


def _subtitle(runs: list[Run]) -> str:
    run = runs[0]
    cfg = run.config
    where = f"cluster {cfg.cluster}" if cfg.cluster else run.environment.hostname
    when = f"run {run.started_utc}" if len(runs) == 1 else f"{len(runs)} runs pooled"
    cache = f", {cfg.cache}" if cfg.cache else ""
    return (
        f"{cfg.mode}, {where}, {machine_cores(run)} usable cores, DuckDB "
        f"{run.environment.duckdb}{cache}, {cfg.repeat} reps, {when}"
    )


def figures(runs: Run | Sequence[Run]) -> list[tuple[str, Figure]]:
    """(name, figure) per query and kind, the overview grid, and a timeline per query."""
    from wisconsin.reports.timeline import timeline_figures

    runs = as_runs(runs)
    points = compute_points(runs)
    if not points:
        raise WisconsinError("run has no timed measurements to plot")
    queries = [q for q in QUERIES if any(p.query == q for p in points)]
    kinds = [k for k in ("F", "G") if any(p.kind == k for p in points)]
    out: list[tuple[str, Figure]] = []
    with matplotlib.rc_context(_RC):
        for kind in kinds:
            for q in queries:
                pts = [p for p in points if p.kind == kind and p.query == q]
                if not pts:
                    continue
                fig = Figure(figsize=(7.5, 4.2), layout="constrained")
                ax = fig.add_subplot()
                notes = _draw(ax, kind, q, pts)
                _legend_and_caption(fig, _subtitle(runs), notes)
                out.append((f"{KIND_NAME[kind]}-{q}", fig))
        fig = Figure(
            figsize=(3.2 * len(queries) + 2.2, 3.0 * len(kinds) + 0.4), layout="constrained"
        )
        axes = fig.subplots(len(kinds), len(queries), squeeze=False)
        notes = []
        for i, kind in enumerate(kinds):
            for j, q in enumerate(queries):
                pts = [p for p in points if p.kind == kind and p.query == q]
                notes += _draw(axes[i][j], kind, q, pts)
        _legend_and_caption(fig, _subtitle(runs), notes)
        out.append(("overview", fig))
        out += timeline_figures(runs)
    return out


def plot_run(
    runs: Run | Sequence[Run],
    out_dir: str | os.PathLike,
    stem: str = "run",
    *,
    force: bool = False,
) -> list[Path]:
    """Write per-query speedup/scaleup figures, an overview grid and per-query timelines."""
    out = Path(out_dir)
    with matplotlib.rc_context(_RC):
        return write_figures([(out / f"{stem}-{n}", f) for n, f in figures(runs)], force=force)


def plot_files(
    paths: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike | None = None,
    *,
    force: bool = False,
) -> list[Path]:
    """Plot run files next to the first of each configuration (or into out_dir), prefixed
    with its file's stem; files of one configuration are pooled into one set of figures.
    Every figure of every configuration is drawn before any is written."""
    runs = load_runs(paths)
    first = {id(r): Path(p) for p, r in zip(paths, runs, strict=True)}
    figs: list[tuple[Path, Figure]] = []
    for group in group_runs(runs):
        p = first[id(group[0])]
        stem = p.stem if len(group) == 1 else f"{p.stem}-pooled{len(group)}"
        out = Path(out_dir) if out_dir is not None else p.parent
        figs += [(out / f"{stem}-{name}", fig) for name, fig in figures(group)]
    with matplotlib.rc_context(_RC):
        return write_figures(figs, force=force)
