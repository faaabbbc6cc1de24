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
from matplotlib.figure import Figure

from wisconsin.metrics import as_runs, series
from wisconsin.runfile import Measurement, Repetition, Run

_RC = {"svg.hashsalt": "wisconsin", "font.size": 8}
KIND_COLOR = {"F": "#1f5fbf", "G": "#2f8f4f"}


def _reps(ms: Sequence[Measurement]) -> list[Repetition]:
    reps = [r for m in ms for r in m.repetitions]
    if all(r.dispatched_unix is not None for r in reps):
        return sorted(reps, key=lambda r: r.dispatched_unix)
    return reps


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
                yy = base + 0.1 + k * h
                ax.broken_barh([(0.0, s.start_delay_s)], (yy, h * 0.9), color="#bbbbbb")
                ax.broken_barh(
                    [(s.start_delay_s, s.engine_s)], (yy, h * 0.9), color=KIND_COLOR[m.kind]
                )
                if lane == nparts - 1:
                    ax.plot([r.wall_s, r.wall_s], [y, base + 1.0], color="black", lw=0.5)
            ticks.append(base + 0.5)
            labels.append(f"{m.table} p{lane}" if nparts > 1 else m.table)
        y += nparts + 0.6
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
