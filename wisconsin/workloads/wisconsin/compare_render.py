"""A comparison (wisconsin.analysis.comparison) as text, markdown or JSON: it formats what
the Comparison holds and computes no statistic of its own."""

from __future__ import annotations

import dataclasses
import json

from wisconsin import WisconsinError
from wisconsin.analysis.comparison import ALPHA, Comparison
from wisconsin.analysis.metrics import Ratio
from wisconsin.analysis.significance import RUN_TO_RUN_LOG_SD
from wisconsin.reports.document import Section, Table, fnum, interval_text, render_document
from wisconsin.workloads.wisconsin import tandem

FORMATS = ("text", "markdown", "json")
# Past this, a "smallest slowdown" is no figure a reader can use (2 blocks a side, df = 1 at
# Holm's strictest level, once printed 1784397320.19x): say the blocks are too few instead.
DETECTABLE_SHOWN_MAX = 10.0
POINT_HEADER = [
    "Query",
    "Table",
    "P",
    "T_A s",
    "T_B s",
    "T_B/T_A [95% CI]",
    "p (Holm)",
    "Verdict",
    "Ratio A",
    "Ratio B",
]
CURVE_HEADER = ["Curve", "Points", "Blocks A/B", "geomean T_B/T_A [95% CI]", "p (Holm)", "Verdict"]


def render_comparison(c: Comparison, fmt: str = "text") -> str:
    """Render a comparison as text, markdown or json."""
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown compare format {fmt!r} (choose {', '.join(FORMATS)})")
    if fmt == "json":
        return json.dumps(dataclasses.asdict(c), indent=1) + "\n"
    return render_document(_document(c), fmt)


def ratio_text(r: Ratio | None) -> str:
    """'1.30 [1.25-1.35]', or '-' for no ratio."""
    if r is None:
        return "-"
    return interval_text(r.value, r.lo, r.hi)


def _document(c: Comparison) -> list[Section]:
    return [
        Section(
            "Wisconsin run comparison",
            [_head(c), _points_table(c), *_notes(c), *_curve_tables(c)],
        )
    ]


def _head(c: Comparison) -> list[tuple[str, str]]:
    head = [("A", c.a), ("B", c.b)]
    head += [("FORCED", d) for d in c.differences]
    head += [("Differs", d) for d in c.context]
    head.append(
        (
            "Verdict",
            f"{c.verdict} ({c.significant_points} of {len(c.rows)} points and "
            f"{c.significant_curves} of {len(c.curves)} curves differ after Holm's correction"
            + (f"; geometric mean T_B/T_A {c.geomean.value:.3f}" if c.geomean else "")
            + ")",
        )
    )
    return head


def _points_table(c: Comparison) -> Table:
    rows = [
        [
            tandem.QUERY_LABELS.get(r.query, r.query),
            r.table,
            str(r.P),
            fnum(r.time_a, 4),
            fnum(r.time_b, 4),
            ratio_text(r.time_ratio),
            f"{r.p_value:.3f} ({r.p_holm:.3f})",
            r.verdict,
            ratio_text(r.ratio_a),
            ratio_text(r.ratio_b),
        ]
        for r in c.rows
    ]
    return Table(POINT_HEADER, rows)


def _notes(c: Comparison) -> list[str]:
    """What the verdicts rest on: the family, blocks or repetitions, what to do next."""
    notes = [
        "T: median seconds. Ratio: speedup (F) or scaleup (G) of each side against its own "
        f"P0. Family-wise error: each p is adjusted for all {len(c.rows)} points and "
        f"{len(c.curves)} whole curves (Holm); a point or curve differs only if its adjusted "
        f"p is below {ALPHA}, so the chance that any of identical runs is called different "
        f"is at most {ALPHA}.",
    ]
    blocked = len(c.blocked_rows)
    if blocked:
        notes.append(_blocks_note(c))
    if blocked < len(c.rows):
        notes.append(
            f"{len(c.rows) - blocked} points have one block on a side (files written "
            "before blocks, or too few rounds): tested by permutation on repetitions, which "
            "treats repetitions of one run as independent: run-to-run variation unknown. "
            "For a verdict that holds, measure both in blocks (run --blocks), or A and B "
            "alternately in one session (`wisconsin ab`)."
        )
        if c.repetitions_too_few:
            notes.append(
                "Some rows have too few repetitions for any split to reach p < "
                f"{ALPHA}: add repetitions to detect a difference there."
            )
    if c.verdict == "cannot tell apart" and not c.paired:
        notes.append(
            "Cannot tell apart: separate runs also differ by the drift between them. To "
            "resolve a smaller difference, measure A and B in one invocation, blocks in turn: "
            '`wisconsin ab --data DIR --a "A\'s options" --b "B\'s options"`.'
        )
    return notes


def _blocks_note(c: Comparison) -> str:
    return (
        f"{len(c.blocked_rows)} points are tested on blocks (Welch t on the blocks' log median "
        "times; T_B/T_A's 95% interval likewise), so run-to-run variation is in the test"
        + (
            "; A and B alternated block by block in one session (an A/B file)"
            if c.paired
            else f"; separate runs: each side's whole level may also shift by "
            f"{RUN_TO_RUN_LOG_SD:.0%} (SD) from one run to the next (measured, "
            "docs/methodology.md), and the tests allow for it"
        )
        + _detectable_note(c.detectable_spread, c.fewest_blocks)
        + "."
    )


def _detectable_note(spread: tuple[float, float, float] | None, fewest_blocks: int) -> str:
    """spread: Comparison.detectable_spread (middle, smallest, largest)."""
    if spread is None:
        return ""
    mid, lo, hi = spread
    if mid > DETECTABLE_SHOWN_MAX:
        return (
            f"; with {fewest_blocks} blocks on a side these points cannot show a slowdown "
            f"smaller than {DETECTABLE_SHOWN_MAX:.0f}x (median over points): give each run "
            "more blocks (--blocks) for a test that can"
        )
    return (
        f"; the smallest slowdown these blocks could show is about {mid:.2f}x (median over "
        f"points, {lo:.2f}x-" + (f"{hi:.2f}x)" if hi <= DETECTABLE_SHOWN_MAX else "more than 10x)")
    )


def _curve_tables(c: Comparison) -> list:
    """The whole-curve tables (analysis.curves), with what they rest on."""
    out: list = []
    if c.curves:
        rows = [
            [
                r.label,
                str(r.points),
                f"{r.blocks_a}/{r.blocks_b}",
                ratio_text(r.time_ratio),
                f"{r.p_value:.3f} ({r.p_holm:.3f})",
                r.verdict,
            ]
            for r in c.curves
        ]
        out.append(Table(CURVE_HEADER, rows))
        out.append(
            "Whole curves: per query, the geometric mean of T_B/T_A over every P (e.g. 'F "
            "scan'); per table, over its queries (e.g. 'F2'); tested on each block's mean "
            f"log time (Welch t). Holm adjusts the {len(c.rows)} points and {len(c.curves)} "
            "curves as one family."
        )
    if c.speedup_ratios:
        rows = [
            [
                tandem.QUERY_LABELS.get(r.query, r.query),
                r.table,
                str(r.P),
                ratio_text(r.ratio),
                f"{r.p_value:.3f}",
            ]
            for r in c.speedup_ratios
        ]
        out.append(Table(["Query", "Table", "P", "B's ratio / A's [95% CI]", "p"], rows))
        out.append(
            "Ratio of speedups (F) or scaleups (G): B's over A's at each P above P0, from each "
            "block's log time at P0 minus at P (Welch t); p is the point's own, not adjusted."
        )
    return out
