"""Writing figures for every workload: each as PNG and SVG, all or none."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from wisconsin.outputs import write_all

FORMATS = ("png", "svg")
# Every workload's figures: a fixed SVG id salt and no date, so re-plotting the same run
# gives the same SVG.
RC = {"svg.hashsalt": "wisconsin", "font.size": 9}


def write_figures(figs: Sequence[tuple[Path, Figure]], *, force: bool = False) -> list[Path]:
    """Write each (path without suffix, figure) as PNG and SVG, all or none (outputs.write_all);
    an existing file is refused unless force. Return the paths."""
    todo = [
        (fig, base.with_name(f"{base.name}.{ext}"), ext) for base, fig in figs for ext in FORMATS
    ]

    def draw(i: int, tmp: Path) -> None:
        fig, _, ext = todo[i]
        FigureCanvasAgg(fig)
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(tmp, format=ext, metadata=meta, dpi=110)

    targets = [final for _, final, _ in todo]
    return write_all(targets, draw, force=force, hint=" (plot --force replaces it)")
