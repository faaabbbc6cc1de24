"""Reports of run files, laid out as Table 2 of the Tandem report, in text/markdown/csv/json.

Text and markdown are built from one neutral document (sections of key/value lines,
tables and notes) so both say the same thing; csv and json are the computed points.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from wisconsin import WisconsinError, tandem
from wisconsin.metrics import Point, compute_points, machine_cores
from wisconsin.runfile import QUERIES, Run, RunFileError, load

FORMATS = ("text", "markdown", "csv", "json")
MARK_WIDE = "~"
MARK_OVER = "*"
MARK_UNVERIFIED = "?"
SCAN_NOTE = {
    "full-row": "full-row (every row of every column read, proven from DuckDB's profile)",
    "predicate-column": "predicate-column (every row of hundpct read; other columns not)",
    "as-written": "as-written (DuckDB answers from statistics and reads no rows: NOT a scan)",
}

KIND_TITLE = {
    "F": "Speedup (F tables): T(F_P0) / T(F_P), higher is better",
    "G": "Scaleup (G tables): T(G_P) / T(G_P0), lower is better",
}


def load_runs(paths: Iterable[str | os.PathLike]) -> list[Run]:
    """Load run files; a missing, malformed or unknown-version file raises WisconsinError."""
    runs = []
    for p in paths:
        try:
            runs.append(load(p))
        except RunFileError as exc:
            raise WisconsinError(str(exc)) from None
        if runs[-1].status != "complete":  # a failed or interrupted run: not a result
            raise WisconsinError(
                f"{p}: an incomplete run ({runs[-1].stop_reason or 'stopped'}); continue "
                f"it with `wisconsin run --resume {p}`"
            )
    return runs


# ---------------------------------------------------------------- neutral document


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    items: list[str | Table | list[tuple[str, str]]] = field(default_factory=list)


def fnum(x: float | None, digits: int = 2) -> str:
    """A number for a table cell; '-' for missing data."""
    return "-" if x is None else f"{x:.{digits}f}"


def ratio_cell(p: Point) -> str:
    """'1.93 [1.85-2.01]' plus markers for a wide CI, oversubscription, unverified answers."""
    r = p.ratio
    s = fnum(r.value) if r.lo is None else f"{r.value:.2f} [{r.lo:.2f}-{r.hi:.2f}]"
    marks = (
        (MARK_WIDE if r.wide else "")
        + (MARK_OVER if p.oversubscribed else "")
        + ("" if p.verified else MARK_UNVERIFIED)
    )
    return s + marks


def _gib(b: int) -> str:
    return f"{b / 2**30:.1f} GiB"


def _plist(ps: Iterable[int]) -> str:
    return ",".join(str(p) for p in sorted(set(ps)))


def _header(run: Run, cores: int) -> list[tuple[str, str]]:
    env, cfg, topo = run.environment, run.config, run.topology
    hosts = "; ".join(
        f"{h.host} ({h.cores} cores, {_gib(h.memory_bytes)}"
        + (f", workers {','.join(h.workers)})" if h.workers else ")")
        for h in topo.hosts
    )
    where = (
        f"cluster {cfg.cluster}"
        if cfg.cluster
        else ("local Dask cluster" if topo.scheduler == "local" else "local, one process")
    )
    if cfg.cluster:
        core_src = f"{cores} (sum over {len(topo.hosts)} hosts)"
    else:
        core_src = f"{cores} usable on {env.hostname}"
    sizes = []
    for kind in ("F", "G"):
        ts = [t for t in run.tables if t.kind == kind]
        if not ts:
            continue
        parts = _plist(t.partitions for t in ts)
        if kind == "F":
            rows = ",".join(f"{n:,}" for n in sorted({t.rows for t in ts}))
            sizes.append(f"F: {rows} rows over {parts} partitions")
        else:
            per = ",".join(f"{n:,}" for n in sorted({t.rows // t.partitions for t in ts}))
            sizes.append(f"G: {per} rows/partition over {parts} partitions")
    gens = ",".join(sorted({t.generator_version for t in run.tables}))
    seeds = sorted({cfg.seed, *(t.seed for t in run.tables)})
    lines = [
        ("Run", f"{run.started_utc} .. {run.finished_utc}"),
        ("Mode", f"{cfg.mode}, {where}"),
        ("Hosts", hosts or "-"),
        ("Cores", core_src),
        ("CPU", env.cpu_model),
        (
            "Versions",
            f"wisconsin {env.tool_version} (git {env.git_commit}), DuckDB {env.duckdb}, "
            f"Python {env.python}, pyarrow {env.pyarrow}, numpy {env.numpy}, "
            f"dask {env.dask}",
        ),
        ("OS", env.os),
        ("Tables", "; ".join(sizes) + f" (generator {gens})"),
        ("Seed", ",".join(str(s) for s in seeds)),
        ("Scan variant", SCAN_NOTE.get(cfg.scan_variant, cfg.scan_variant or "-")),
        (
            "Repetitions",
            f"{cfg.repeat} timed per table and query (median reported), "
            f"{cfg.warmup} untimed warm-up",
        ),
        (
            ("Workers", f"{cfg.threads_per_worker} thread(s) each, memory limit {cfg.memory_limit}")
            if cfg.mode != "shared-memory"
            else (
                "Engine",
                f"one DuckDB, threads = P of each table, memory limit {cfg.memory_limit}",
            )
        ),
        ("Durability", cfg.durability),
    ]
    if topo.rtt_s is not None:
        lines.append(("Round trip", f"{topo.rtt_s * 1e3:.2f} ms coordinator <-> worker"))
    for note in run.notes:
        lines.append(("Note", note))
    return lines


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
    # Ideal and ceiling depend on P0 only; with a per-query P0 they are in the csv/json.
    if len({p.P0 for p in pts}) == 1:
        by_p = {p.P: p for p in pts}
        rows.append(["Ideal", *[fnum(by_p[c].ideal) if c in by_p else "-" for c in cols]])
        bound = "Hardware ceiling" if kind == "F" else "Best possible (hw)"
        rows.append([bound, *[fnum(by_p[c].ceiling) if c in by_p else "-" for c in cols]])
    p0s = _plist(p.P0 for p in pts)
    notes = [
        f"Ours: P0 = {p0s} (the smallest partition count measured), 95% bootstrap CI in "
        "brackets. Tandem rows: Table 2 as published, relative to P = 2.",
        f"{MARK_WIDE} CI wider than 10% of the ratio; {MARK_OVER} P exceeds the usable cores "
        f"(oversubscribed); {MARK_UNVERIFIED} an answer failed verification.",
    ]
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
        "Of ceiling",
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
            fnum(p.of_ceiling),
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
        "Efficiency: speedup / (P/P0), or 1 / scaleup; of ceiling: the same against the "
        "hardware ceiling. Karp-Flatt: serial fraction "
        "(1/S - 1/p)/(1 - 1/p), p = P/P0, speedup only.",
        "Start delay: mean partition dispatch-to-start; open: opening fresh connections to the "
        "P partitions, outside the timed query (worker start-up is in the run's notes). "
        "Skew: slowest / mean partition engine time.",
        "Interference: mean partition engine time at P over the same per-partition work at P0 "
        "(F: scaled by P0/P); above 1 the partitions slow each other down, including by "
        "sharing cores. CPU util: sum CPU / (wall x min(P, cores)). '-': not measured.",
    ]
    return Section("Causes of bending (startup, skew, interference)", [Table(header, rows), *notes])


def _footer(cores: int, points: list[Point], cluster: bool) -> Section:
    what = "this cluster has" if cluster else "this machine has"
    lines = []
    for kind in ("F", "G"):
        pts = [p for p in points if p.kind == kind]
        over = sorted({p.P for p in pts if p.oversubscribed})
        if not pts:
            continue
        P0 = min(p.P0 for p in pts)
        if kind == "F":
            if over:
                lines.append(
                    f"{what.capitalize()} {cores} usable cores: ideal speedup beyond "
                    f"P={cores} is {min(cores, over[0]) / min(P0, cores):.2f} "
                    f"(min(P, cores) / min(P0, cores) with P0={P0}); "
                    f"P={_plist(over)} cannot speed up further, only show overhead."
                )
            else:
                lines.append(
                    f"{what.capitalize()} {cores} usable cores: every speedup point has a "
                    "core per partition; the ceiling equals the ideal."
                )
        elif over:
            ceil = {p.P: p.ceiling for p in pts if p.oversubscribed}
            lines.append(
                "With more partitions than cores the G tables' growing work shares the same "
                "cores: the best scaleup is (P/P0) / ceiling = "
                + ", ".join(f"{ceil[P]:.2f} at P={P}" for P in sorted(ceil))
                + " rather than the ideal 1.00."
            )
    return Section("Hardware ceiling", lines)


def build_document(run: Run) -> list[Section]:
    """The sections of one run's report (header, ratios, times, causes, ceiling)."""
    points = compute_points(run)
    cores = machine_cores(run)
    secs = [Section("Wisconsin speedup and scaleup report", [_header(run, cores)])]
    secs += [s for k in ("F", "G") if (s := _ratio_section(k, points)) is not None]
    if points:
        secs += [_times_section(run, points), _causes_section(points)]
        secs.append(_footer(cores, points, run.config.cluster is not None))
    else:
        secs.append(Section("No measurements", ["The run file holds no timed repetitions."]))
    return secs


# ---------------------------------------------------------------- renderers


def _text_table(t: Table) -> list[str]:
    widths = [max(len(r[i]) for r in [t.header, *t.rows]) for i in range(len(t.header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return [line(t.header), "  ".join("-" * w for w in widths), *[line(r) for r in t.rows]]


def _render_text(doc: list[Section]) -> str:
    out: list[str] = []
    for sec in doc:
        out += [sec.title, "=" * len(sec.title)]
        for item in sec.items:
            if isinstance(item, Table):
                out += _text_table(item)
            elif isinstance(item, list):
                w = max(len(k) for k, _ in item)
                out += [f"{k + ':':<{w + 1}} {v}" for k, v in item]
            else:
                out.append(item)
        out.append("")
    return "\n".join(out)


def _md_escape(s: str) -> str:
    return s.strip().replace("|", "\\|").replace("*", "\\*").replace("~", "\\~")


def _render_markdown(doc: list[Section]) -> str:
    out: list[str] = []
    for i, sec in enumerate(doc):
        out += [("# " if i == 0 else "## ") + sec.title, ""]
        for item in sec.items:
            if isinstance(item, Table):
                out.append("| " + " | ".join(_md_escape(h) for h in item.header) + " |")
                out.append("|" + "|".join([":---"] + ["---:"] * (len(item.header) - 1)) + "|")
                out += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in item.rows]
            elif isinstance(item, list):
                out += [f"- **{k}**: {_md_escape(v)}" for k, v in item]
            else:
                out.append(_md_escape(item))
            out.append("")
    return "\n".join(out)


def render_document(doc: list[Section], fmt: str) -> str:
    """Render sections as plain text or markdown (shared with compare)."""
    return _render_text(doc) if fmt == "text" else _render_markdown(doc)


def point_dict(p: Point) -> dict:
    """A point as a flat JSON/CSV-friendly dict (ratio_lo/ratio_hi None without a CI)."""
    d = dataclasses.asdict(p)
    r = d.pop("ratio")
    d.update(ratio=r["value"], ratio_lo=r["lo"], ratio_hi=r["hi"], wide=r["wide"])
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
        "repeat": run.config.repeat,
        "warmup": run.config.warmup,
        "durability": run.config.durability,
        "tables": [dataclasses.asdict(t) for t in run.tables],
    }


def render_report(runs: list[Run], fmt: str = "text") -> str:
    """Render one block per run in fmt (text, markdown, csv or json)."""
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown report format {fmt!r} (choose {', '.join(FORMATS)})")
    if fmt == "json":
        body = [
            {"run": _run_meta(r), "points": [point_dict(p) for p in compute_points(r)]}
            for r in runs
        ]
        return json.dumps({"runs": body}, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = None
        for i, r in enumerate(runs):
            for p in compute_points(r):
                row = {"run": i, "started_utc": r.started_utc, **point_dict(p)}
                if writer is None:
                    writer = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
                    writer.writeheader()
                writer.writerow(row)
        return buf.getvalue()
    sep = "\n" + ("-" * 78 if fmt == "text" else "---") + "\n\n"
    return sep.join(render_document(build_document(r), fmt) for r in runs)


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text") -> str:
    """Load run files and render their report (what `wisconsin report` prints)."""
    return render_report(load_runs(paths), fmt)
