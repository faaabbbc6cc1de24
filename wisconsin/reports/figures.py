"""Writing figures for every workload: each as PNG and SVG, all or none."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from wisconsin.outputs import write_all

FORMATS = ("png", "svg")
# Every workload's figures: a fixed SVG id salt and no date, so re-plotting the same run
# gives the same SVG.
RC = {"svg.hashsalt": "wisconsin", "font.size": 9}
# one resolution for files and pages: the constrained layout depends on it
DPI = 110


def render(fig: Figure, ext: str) -> bytes:
    """One figure drawn in one format, as the file's bytes (no date, no software tag)."""
    FigureCanvasAgg(fig)
    meta = {"Date": None} if ext == "svg" else {"Software": None}
    buf = io.BytesIO()
    with matplotlib.rc_context(RC):  # tick labels and ids are made as it draws
        fig.savefig(buf, format=ext, metadata=meta, dpi=DPI)
    return buf.getvalue()


def write_figures(figs: Sequence[tuple[Path, Figure]], *, force: bool = False) -> list[Path]:
    """Write each (path without suffix, figure) as PNG and SVG, all or none (outputs.write_all);
    an existing file is refused unless force. Return the paths."""
    todo = [
        (fig, base.with_name(f"{base.name}.{ext}"), ext) for base, fig in figs for ext in FORMATS
    ]
    return write_drawn(
        [final for _, final, _ in todo], lambda i: render(todo[i][0], todo[i][2]), force=force
    )


def write_drawn(
    targets: Sequence[Path], drawn: Callable[[int], bytes], *, force: bool = False
) -> list[Path]:
    """Write targets[i] with the bytes drawn(i) returns, all or none (outputs.write_all)."""
    return write_all(
        targets, lambda i, tmp: tmp.write_bytes(drawn(i)), force=force,
        hint=" (plot --force replaces it)",
    )  # fmt: skip
