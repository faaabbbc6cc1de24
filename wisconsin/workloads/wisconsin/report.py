"""Reports of run files, laid out as Table 2 of the Tandem report, in text/markdown/csv/json.

Text and markdown are built from one neutral document (sections of key/value lines,
tables and notes) so both say the same thing; csv and json are the computed points.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from wisconsin import WisconsinError
from wisconsin.analysis import scalability
from wisconsin.analysis.metrics import Point, as_runs, compute_points, machine_cores
from wisconsin.reports.document import (  # noqa: F401  (re-exported: compare and html use them)
    Section,
    Table,
    fnum,
    interval_text,
    render_document,
)
from wisconsin.runfiles import facts
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin import tandem
from wisconsin.workloads.wisconsin.analysis_sections import (
    MARK_BEATS,
    bound_section,
    card_section,
    profile_section,
)
from wisconsin.workloads.wisconsin.header import calibration_notes, header_lines
from wisconsin.workloads.wisconsin.queries import QUERIES
from wisconsin.workloads.wisconsin.runs import (  # noqa: F401  (re-exported)
    configuration,
    group_runs,
    load_runs,
)
from wisconsin.workloads.wisconsin.verdict import verdict_section

FORMATS = ("text", "markdown", "csv", "json", "html")
SHORT_LINES = 40  # the default terminal report: one screen
SHORT_WIDTH = 100
MARK_WIDE = "~"
MARK_OVER = "*"
MARK_UNVERIFIED = "?"
MARK_HARNESS = "h"
MARK_BASE = "b"  # the point is fine, its base (P0) is harness-dominated: not a headline
KIND_TITLE = {
    "F": "Speedup (F tables): T(F_P0) / T(F_P), higher is better",
    "G": "Scaleup (G tables): T(G_P) / T(G_P0), lower is better",
}


def ratio_cell(p: Point) -> str:
    """'1.93 [1.85-2.01]' plus markers: wide CI, oversubscribed, unverified, beats its bound;
    a harness-dominated point, or a ratio against a harness-dominated base, is shown in
    parentheses (not a headline ratio)."""
    r = p.ratio
    s = interval_text(r.value, r.lo, r.hi)
    if p.harness:
        s = f"({s}){MARK_HARNESS}"
    elif p.base_harness:
        s = f"({s}){MARK_BASE}"
    marks = (
        (MARK_WIDE if r.wide else "")
        + (MARK_OVER if p.oversubscribed else "")
        + ("" if p.verified else MARK_UNVERIFIED)
        + (MARK_BEATS if p.beats_bound else "")
    )
    return s + marks


def _plist(ps: Iterable[int]) -> str:
    return ",".join(str(p) for p in sorted(set(ps)))


def _ratio_section(kind: str, points: list[Point]) -> Section | None:
    pts = [p for p in points if p.kind == kind]
    if not pts:
        return None
    ours = {(p.query, p.P): p for p in pts}
    queries = [q for q in QUERIES if any(p.query == q for p in pts)]
    queries += sorted({p.query for p in pts} - set(queries))
    # Tandem's partition counts are included so every published number has a column.
    cols = sorted({p.P for p in pts} | set(tandem.PARTITIONS))
    header = ["Partitions", *[str(c) for c in cols]]
    rows = []
    for q in queries:
        label = tandem.QUERY_LABELS.get(q, q)
        rows.append([label, *[ratio_cell(ours[(q, c)]) if (q, c) in ours else "-" for c in cols]])
        for system in tandem.SYSTEMS:
            pub = tandem.published(system, kind, q)
            if pub:
                rows.append(
                    [f"  Tandem {system}", *[fnum(pub[c]) if c in pub else "-" for c in cols]]
                )
    # Ideal depends on P0 only; with a per-query P0 it is in the csv/json.
    if len({p.P0 for p in pts}) == 1:
        by_p = {p.P: p for p in pts}
        rows.append(["Ideal", *[fnum(by_p[c].ideal) if c in by_p else "-" for c in cols]])
    p0s = _plist(p.P0 for p in pts)
    notes = [
        f"Ours: P0 = {p0s} (the smallest partition count measured), 95% interval in brackets "
        "(t-interval on log times; none at P0, where the ratio is 1 by definition). Tandem "
        "rows: Table 2 as published, relative to P = 2. The measured bound per point is in "
        "'Measured bound' below.",
        f"{MARK_WIDE} interval wider than 10% of the ratio; {MARK_OVER} more DuckDB threads "
        f"than usable cores (oversubscribed); {MARK_UNVERIFIED} an answer failed verification; "
        f"{MARK_BEATS} faster than its measured bound beyond its interval (a measuring error).",
    ]
    harness = [p for p in pts if p.harness]
    if harness:
        notes.append(
            f"({MARK_HARNESS}): harness-dominated (engine share < 80% or median < 20x the "
            "harness overhead): the ratio measures the harness more than the database and is "
            "not a headline number: " + ", ".join(f"{p.query} P={p.P}" for p in harness) + "."
        )
    based = [p for p in pts if p.base_harness and not p.harness]
    if based:
        notes.append(
            f"({MARK_BASE}): measured against a harness-dominated base (its P0 point is marked "
            f"{MARK_HARNESS}): a ratio is only as good as both its points, so it is not a "
            "headline number either: "
            + ", ".join(f"{p.query} P={p.P} (base P={p.P0})" for p in based)
            + "."
        )
    if not harness and all(p.harness is None for p in pts):
        notes.append("Engine share and harness overhead: not recorded (harness share unknown).")
    if any(p.P0 != 2 for p in pts):
        notes.append(
            "Our base differs from Tandem's (P = 2): compare shapes, or divide our ratio at P "
            "by ours at P = 2."
        )
    return Section(KIND_TITLE[kind], [Table(header, rows), *notes])


def _times_section(run: Run, points: list[Point]) -> Section:
    queries = [q for q in QUERIES if any(p.query == q for p in points)]
    tables = sorted({(p.kind, p.P, p.table) for p in points})
    cell = {(p.table, p.query): p for p in points}
    rows = []
    for _kind, P, name in tables:
        rows.append(
            [name, str(P)]
            + [fnum(cell[(name, q)].time_median, 4) if (name, q) in cell else "-" for q in queries]
        )
    header = ["Table", "P", *[tandem.QUERY_LABELS.get(q, q) for q in queries]]
    return Section(
        "Median elapsed time (seconds)",
        [Table(header, rows), "Coordinator wall time, dispatch to last answer; warm-up excluded."],
    )


def _causes_section(points: list[Point]) -> Section:
    header = [
        "Query",
        "Table",
        "P",
        "Efficiency",
        "Of bound",
        "Karp-Flatt",
        "Start delay s",
        "Open s",
        "Skew",
        "Interference",
        "CPU util",
    ]
    rows = [
        [
            tandem.QUERY_LABELS.get(p.query, p.query),
            p.table,
            str(p.P),
            fnum(p.efficiency),
            fnum(p.of_bound),
            fnum(p.karp_flatt, 3),
            fnum(p.startup, 4),
            fnum(p.worker_startup, 3),
            fnum(p.skew),
            fnum(p.interference),
            fnum(p.cpu_util),
        ]
        for p in points
    ]
    notes = [
        "Efficiency: speedup / (P/P0), or 1 / scaleup; of bound: measured bound time / median "
        "time (1 = as fast as this machine allows). Karp-Flatt: serial fraction "
        "(1/S - 1/p)/(1 - 1/p), p = P/P0, speedup only.",
        "Start delay: mean partition dispatch-to-start; open: opening fresh connections to the "
        "P partitions, outside the timed query (worker start-up is in the run's notes). "
        "Skew: slowest / mean partition engine time.",
        "Interference: mean partition engine time at P over the same per-partition work at P0 "
        "(F: scaled by P0/P); above 1 the partitions slow each other down, including by "
        "sharing cores. CPU util: sum CPU / (wall x min(P, cores)). '-': not measured.",
    ]
    return Section("Causes of bending (startup, skew, interference)", [Table(header, rows), *notes])


def build_document(runs: Run | Sequence[Run]) -> list[Section]:
    """The sections of one report: header, ratios, times, causes, bound, profile, card.

    Several runs are pooled as replicates of one configuration."""
    runs = as_runs(runs)
    run = runs[0]
    points = compute_points(runs)
    cores = machine_cores(run)
    secs = [Section("Wisconsin speedup and scaleup report", [header_lines(runs, cores)])]
    secs += [s for k in ("F", "G") if (s := _ratio_section(k, points)) is not None]
    if points:
        secs += [_times_section(run, points), _causes_section(points)]
        secs += [bound_section(points), profile_section(run)]
        secs.append(card_section(scalability.cards(points, runs)))
    else:
        secs.append(Section("No measurements", ["The run file holds no timed repetitions."]))
    return secs


def point_dict(p: Point) -> dict:
    """A point as a flat JSON/CSV-friendly dict (None where not measured or not recorded)."""
    d = dataclasses.asdict(p)
    r, t, b = d.pop("ratio"), d.pop("time"), d.pop("bound")
    d.update(ratio=r["value"], ratio_lo=r["lo"], ratio_hi=r["hi"], wide=r["wide"])
    d.update(time_lo=t["lo"], time_hi=t["hi"], headline=p.headline)
    b = b or {}
    d.update(
        bound_s=b.get("time_s"),
        bound_overhead_s=b.get("overhead_s"),
        bound_compute_s=b.get("compute_s"),
        bound_bytes_s=b.get("bytes_s"),
        binding=b.get("resource"),
        bound_notes="; ".join(b.get("notes", ())),
    )
    return d


def _run_meta(run: Run) -> dict:
    return {
        "started_utc": run.started_utc,
        "mode": run.config.mode,
        "cluster": run.config.cluster,
        "cores": machine_cores(run),
        "cpu_model": run.environment.cpu_model,
        "duckdb": run.environment.duckdb,
        "seed": run.config.seed,
        "scan_variant": run.config.scan_variant,
        "cache": run.config.cache or None,
        "repeat": run.config.repeat,
        "warmup": run.config.warmup,
        "durability": facts.durability_text(run.config.durability),
        "calibration": _calibration_meta(run),
        "tables": [dataclasses.asdict(t) for t in run.tables],
    }


def _calibration_meta(run: Run) -> dict | None:
    """The calibration as the json report has said it: its figures, and where they came from
    in words."""
    cal = run.calibration
    if cal is None:
        return None
    keep = ("measured_utc", "cores", "storage_read_bytes_per_s", "memory_read_bytes_per_s")
    out = {k: getattr(cal, k) for k in keep}
    out |= {"scan_rows_per_s": cal.scan_rows_per_s, "dispatch_s": cal.dispatch_s}
    return out | {"notes": calibration_notes(run, cal)}


def short_text(runs: Sequence[Run], paths: Sequence[str | os.PathLike] = ()) -> str:
    """One screen (at most SHORT_LINES lines of at most SHORT_WIDTH columns): the verdict
    block of one configuration and how to see the rest."""
    runs = as_runs(runs)
    verdict = verdict_section(runs, compute_points(runs), ratio_cell)
    where = " ".join(str(p) for p in paths) or "RUN.json"
    verdict.items += [
        "Every section (run details, every P, times, causes, bound, profile, scalability card):",
        f"  wisconsin report --full {where}",
    ]
    return _fit(render_document([verdict], "text"), SHORT_WIDTH)


def _fit(text: str, width: int) -> str:
    """Lines wider than width wrapped with a two-space hanging indent (tables are built to
    fit; prose wraps; a command, or a path longer than the line, stays whole, to be
    copied)."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width or line.startswith("  wisconsin "):  # a command stays whole
            out.append(line)
        else:
            out += textwrap.wrap(
                line,
                width,
                subsequent_indent="  ",
                break_on_hyphens=False,
                break_long_words=False,
            ) or [line]
    return "\n".join(out)


def render_report(
    runs: list[Run],
    fmt: str = "text",
    full: bool = True,
    paths: Sequence[str | os.PathLike] = (),
    svgs: Mapping[str, str] | None = None,
) -> str:
    """Render runs in fmt; runs of one configuration are pooled into one block. Text and
    markdown open with the verdict block; full=False: text is the verdict alone (one
    screen; paths name the run files in its pointer to the full report). svgs: html's
    figures already drawn, by name (bench draws each once for its file and the page)."""
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown report format {fmt!r} (choose {', '.join(FORMATS)})")
    groups = group_runs(runs)
    if fmt == "html":
        from wisconsin.workloads.wisconsin.html import render_html

        docs = [
            [verdict_section(g, compute_points(g), ratio_cell), *build_document(g)] for g in groups
        ]
        return render_html(groups, docs, svgs)
    if fmt == "json":
        body = []
        for g in groups:
            pts = compute_points(g)
            body.append(
                {
                    "run": _run_meta(g[0]),
                    "pooled": [r.started_utc for r in g],
                    "points": [point_dict(p) for p in pts],
                    "cards": [dataclasses.asdict(c) for c in scalability.cards(pts, g)],
                }
            )
        return json.dumps(_finite({"runs": body}), indent=1, allow_nan=False) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = None
        for i, g in enumerate(groups):
            for p in compute_points(g):
                started = ";".join(r.started_utc for r in g)
                row = {"run": i, "started_utc": started, **point_dict(p)}
                if writer is None:
                    writer = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
                    writer.writeheader()
                writer.writerow(row)
        return buf.getvalue()
    sep = "\n" + ("-" * 78 if fmt == "text" else "---") + "\n\n"
    if fmt == "text" and not full:
        return sep.join(short_text(g, paths) for g in groups)
    return sep.join(
        render_document(
            [verdict_section(g, compute_points(g), ratio_cell), *build_document(g)], fmt
        )
        for g in groups
    )


def _finite(x):
    """Strict JSON: a non-finite number (USL peak N* without a coherency term: no peak) is
    written as null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text", full: bool = True) -> str:
    """Load run files and render their report (what `wisconsin report` prints)."""
    return render_report(load_runs(paths), fmt, full=full, paths=paths)
