"""Writing an OLTP workload's figures for a set of run files: every run's figures drawn
before any is written (all or none, reports.figures), named <run file stem>-<figure>."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from wisconsin.reports.figures import RC, write_figures


def draw(run, drawers: Sequence[tuple[str, Callable]], size=(5.5, 4.0)) -> list:
    """[(name, Figure)]: each drawer(run, fig) on a fresh figure, in the project's style."""
    out = []
    with matplotlib.rc_context(RC):
        for name, drawer in drawers:
            fig = Figure(figsize=size)
            drawer(run, fig)
            fig.tight_layout()
            out.append((name, fig))
    return out


def plot_files(
    paths: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike | None,
    figures_of: Callable[[Path], list],
    *,
    force: bool = False,
) -> list[Path]:
    """figures_of(run file) -> [(name, Figure)]; each lands beside its run file unless
    out_dir is given."""
    figs = []
    for path in paths:
        p = Path(path)
        out = Path(out_dir) if out_dir is not None else p.parent
        figs += [(out / f"{p.stem}-{name}", fig) for name, fig in figures_of(p)]
    with matplotlib.rc_context(RC):
        return write_figures(figs, force=force)
