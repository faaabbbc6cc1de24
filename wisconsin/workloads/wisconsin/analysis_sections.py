"""Report sections of the analysis: measured bound, machine profile, scalability card."""

from __future__ import annotations

import numpy as np

from wisconsin.analysis import scalability
from wisconsin.analysis.bound import NO_CALIBRATION
from wisconsin.analysis.metrics import Point
from wisconsin.reports.document import Section, Table, fnum, interval_text
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin import tandem
from wisconsin.workloads.wisconsin.header import calibration_notes

MARK_BEATS = "!"


def _plist(ps) -> str:
    return ",".join(str(p) for p in sorted(set(ps)))


def _gbps(x: float | None) -> str:
    return "not recorded" if x is None else f"{x / 1e9:.2f} GB/s"


def profile_section(run: Run) -> Section:
    """The machine profile the bounds come from (Run.calibration)."""
    cal = run.calibration
    if cal is None:
        return Section("Machine profile", [NO_CALIBRATION + " (schema 1, or not measured)."])
    rates = ", ".join(f"{q} {r / 1e6:.2f}" for q, r in cal.scan_rows_per_s) or "not recorded"
    disp = ", ".join(f"P={P} {s * 1e3:.1f}" for P, s in cal.dispatch_s) or "not recorded"
    lines = [
        ("Measured", cal.measured_utc),
        ("Cores", str(cal.cores)),
        ("Storage read", _gbps(cal.storage_read_bytes_per_s) + " (sequential, evicted file)"),
        ("Memory read", _gbps(cal.memory_read_bytes_per_s) + " (one core, resident)"),
        ("One thread", rates + " M rows/s per query (in-process DuckDB, unpartitioned)"),
        ("Dispatch", disp + " ms (empty statement through the run's engine)"),
    ]
    lines += [("Note", n) for n in calibration_notes(run, cal)]
    return Section("Machine profile", [lines])


def bound_section(points: list[Point]) -> Section:
    """Per point: time with its interval, the measured bound, its terms and what binds."""
    if all(p.bound is None for p in points):
        notes = sorted({p.bound_note for p in points})
        return Section("Measured bound", [*notes, "No point is held against a bound."])
    header = [
        "Query",
        "Table",
        "P",
        "Time s [95% CI]",
        "Bound s",
        "Overhead s",
        "Compute s",
        "Bytes s",
        "Binding",
        "Of bound",
        "Engine share",
    ]
    rows = []
    for p in points:
        b = p.bound
        rows.append(
            [
                tandem.QUERY_LABELS.get(p.query, p.query),
                p.table,
                str(p.P),
                interval_text(p.time.value, p.time.lo, p.time.hi, 4)
                + (MARK_BEATS if p.beats_bound else ""),
                fnum(b.time_s, 4) if b else "-",
                fnum(b.overhead_s, 4) if b else "-",
                fnum(b.compute_s, 4) if b else "-",
                fnum(b.bytes_s, 4) if b else "-",
                b.resource if b else p.bound_note.removeprefix("bound ") or "-",
                fnum(p.of_bound),
                fnum(p.engine_share) if p.engine_share is not None else "not recorded",
            ]
        )
    notes = [
        "Bound = overhead(P) + max(compute / min(threads, cores), bytes / bandwidth): compute "
        "from one in-process thread's rate on the unpartitioned table, bytes read from storage "
        "(cold) or the table's bytes from memory (warm), the harness overhead measured before "
        "each repetition. Binding: the largest term (harness when the overhead is).",
        f"{MARK_BEATS}: the time's 95% interval lies wholly below its bound: the calibration "
        "or the measurement is wrong there.",
    ]
    notes += sorted({n for p in points if p.bound for n in p.bound.notes})
    notes += sorted({p.bound_note for p in points if p.bound is None})
    return Section("Measured bound", [Table(header, rows), *notes])


def _param_text(p: scalability.Param | None, digits: int = 3) -> str:
    if p is None or p.value is None:
        return "-"
    if p.name == "N*" and not np.isfinite(p.value):
        return "none (no coherency term)"
    hi = "inf" if p.hi is not None and not np.isfinite(p.hi) else None
    if p.lo is None or p.hi is None:
        return f"{p.value:.{digits}g}"
    return f"{p.value:.{digits}g} [{p.lo:.{digits}g}-{hi or f'{p.hi:.{digits}g}'}]"


def card_section(cards: list[scalability.Card]) -> Section:
    """The scalability card: Amdahl/Gustafson, USL, Karp-Flatt, COST per query and kind."""
    header = ["Query", "Kind", "Amdahl/Gustafson s", "USL sigma", "USL kappa", "USL peak N*"]
    header += ["Karp-Flatt e by P", "COST"]
    rows, notes = [], []
    for c in cards:
        serial, u = c.fits
        label = tandem.QUERY_LABELS.get(c.query, c.query)
        kf = ", ".join(f"{P}: {e:.3f}" for P, e in c.karp_flatt) or "-"
        rows.append(
            [
                label,
                "speedup" if c.kind == "F" else "scaleup",
                _param_text(serial.param("s")) if not serial.note else "too few points",
                _param_text(u.param("sigma")) if not u.note else "too few points",
                _param_text(u.param("kappa")) if not u.note else "too few points",
                _param_text(u.param("N*")) if not u.note else "too few points",
                kf,
                c.cost.text if c.cost else "- (fixed-size F problem only)",
            ]
        )
        for f in c.fits:
            if f.note:
                notes.append(f"{label} {c.kind}: {f.model}: {f.note}.")
        if c.excluded:
            notes.append(
                f"{label} {c.kind}: P = {_plist(c.excluded)} left out of the fits "
                "(harness-dominated or unverified)."
            )
    head = [
        "Fits (scipy curve_fit, 95% t-intervals; N = P/P0, the P0 point is 1 by definition and "
        "not fitted): Amdahl serial fraction s on the speedups; Gustafson s on the scaled "
        "speedups N / scaleup; Universal Scalability Law contention sigma, coherency kappa and "
        "peak N* = sqrt((1 - sigma)/kappa) (relative to P0) on either. Karp-Flatt: serial "
        "fraction measured per point. COST: smallest P whose median time beats one in-process "
        "DuckDB thread on the unpartitioned table (McSherry et al., HotOS 2015).",
    ]
    over = {P for c in cards for P in c.oversubscribed}
    if over:
        notes.append(
            f"Points at P = {_plist(over)} are fitted with more threads than cores: sharing "
            "cores shows up in the fits as serial fraction and contention."
        )
    return Section("Scalability card", [Table(header, rows), *head, *notes])
