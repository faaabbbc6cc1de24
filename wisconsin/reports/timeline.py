"""Timeline (Gantt) figures: when each partition was dispatched, started and finished.

One figure per query. Every table measured for the query gets a band of lanes, one lane
per partition; inside a lane each timed repetition is a thin bar in dispatch order (by
Repetition.dispatched_unix when recorded, else by index): grey from dispatch to start
(PartitionSample.start_delay_s: startup), coloured from start to end (engine_s), and a
black tick where the coordinator had every answer (wall_s). Startup is the grey, skew the
ragged right ends within a repetition, interference the bars growing with P.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from wisconsin.analysis.metrics import as_runs, series
from wisconsin.runfiles.runfile import Measurement, Repetition, Run

_RC = {"svg.hashsalt": "wisconsin", "font.size": 8}
KIND_COLOR = {"F": "#1f5fbf", "G": "#2f8f4f"}


def _reps(ms: Sequence[Measurement]) -> list[Repetition]:
    reps = [r for m in ms for r in m.repetitions]
    if all(r.dispatched_unix is not None for r in reps):
        return sorted(reps, key=lambda r: r.dispatched_unix)
    return reps


def _bars(ys, hs, lefts, widths, colors) -> PolyCollection:
    """Horizontal bars as one collection (one artist, however many bars)."""
    y, h = np.asarray(ys)[:, None], np.asarray(hs)[:, None] / 2
    x0 = np.asarray(lefts, dtype=float)[:, None]
    x1 = x0 + np.asarray(widths, dtype=float)[:, None]
    verts = np.stack(
        [
            np.hstack([x0, y - h]),
            np.hstack([x1, y - h]),
            np.hstack([x1, y + h]),
            np.hstack([x0, y + h]),
        ],
        axis=1,
    )
    return PolyCollection(verts, facecolors=colors, linewidths=0)


def timeline_figure(runs: Run | Sequence[Run], query: str) -> Figure | None:
    """The Gantt figure of one query over every table (None: no partition samples)."""
    runs = as_runs(runs)
    bands = [ms for (kind, q), per_p in series(runs).items() if q == query for ms in per_p]
    bands = [ms for ms in bands if any(r.partitions for m in ms for r in m.repetitions)]
    if not bands:
        return None
    lanes = sum(max(len(r.partitions) for m in ms for r in m.repetitions) for ms in bands)
    fig = Figure(figsize=(7.0, min(1.2 + 0.22 * (lanes + len(bands)), 14.0)))
    ax = fig.add_subplot()
    y, ticks, labels = 0.0, [], []
    # Collected first, drawn in one call per kind of bar: thousands of artists are slow.
    ys, hs, delay, start, engine, colors, walls = [], [], [], [], [], [], []
    for ms in bands:
        m = ms[0]
        reps = _reps(ms)
        nparts = max(len(r.partitions) for r in reps)
        h = 0.8 / max(len(reps), 1)
        for lane in range(nparts):
            base = y + lane
            for k, r in enumerate(reps):
                if lane >= len(r.partitions):
                    continue
                s = sorted(r.partitions, key=lambda s: s.part)[lane]
                ys.append(base + 0.1 + k * h + h * 0.45)
                hs.append(h * 0.9)
                delay.append(s.start_delay_s)
                start.append(s.start_delay_s)
                engine.append(s.engine_s)
                colors.append(KIND_COLOR[m.kind])
                if lane == nparts - 1:
                    walls.append((r.wall_s, y, base + 1.0))
            ticks.append(base + 0.5)
            labels.append(f"{m.table} p{lane}" if nparts > 1 else m.table)
        y += nparts + 0.6
    ax.add_collection(_bars(ys, hs, [0.0] * len(ys), delay, ["#bbbbbb"] * len(ys)))
    ax.add_collection(_bars(ys, hs, start, engine, colors))
    ax.autoscale_view()
    if walls:
        w = list(zip(*walls, strict=True))
        ax.vlines(w[0], w[1], w[2], color="black", lw=0.5)
    ax.set_yticks(ticks, labels)
    ax.invert_yaxis()
    ax.set_xlabel(
        "seconds since dispatch (grey: dispatch to start; colour: engine; "
        "black: coordinator has every answer)"
    )
    nreps = len(_reps(bands[0]))
    order = (
        "dispatch order"
        if all(r.dispatched_unix is not None for r in _reps(bands[0]))
        else "repetition order (dispatch clock not recorded)"
    )
    ax.set_title(
        f"{query}: each partition, {nreps} timed repetitions per lane in {order}", fontsize=7
    )
    ax.grid(True, axis="x", linewidth=0.3)
    fig.tight_layout()
    return fig


def timeline_figures(runs: Run | Sequence[Run]) -> list[tuple[str, Figure]]:
    """('timeline-<query>', figure) for every query with partition samples."""
    runs = as_runs(runs)
    queries = dict.fromkeys(q for (_k, q) in series(runs))
    out = []
    with matplotlib.rc_context(_RC):
        for q in queries:
            fig = timeline_figure(runs, q)
            if fig is not None:
                out.append((f"timeline-{q}", fig))
    return out
