"""`wisconsin history`: each point's median time and each headline ratio across runs, in
commit and date order with its interval, a change between neighbours flagged only where
`compare`'s own statistics find one (computed in wisconsin.analysis.history; set out here).

Runs are grouped first, by machine and configuration; each group is its own series, and the
page says how the runs were split. Text and HTML are one document (the same sections and
tables); JSON is every series as computed; the page adds a figure per query."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.analysis.history import Entry, Figure, Series, group_series
from wisconsin.reports.document import Section, Table, interval_text, render_document
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin.queries import QUERIES
from wisconsin.workloads.wisconsin.runs import load_runs

FORMATS = ("text", "json", "html")
TITLE = "Wisconsin history"
SHOWN = 4  # flagged changes named per step; the rest counted


def run_paths(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Run files given, or found directly in directories given (the tool's JSON run files)."""
    from wisconsin.workloads.inventory import file_kind

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += [f for f in sorted(p.glob("*.json")) if file_kind(f) == "wisconsin run"]
        else:
            out.append(p)
    if not out:
        raise WisconsinError("no Wisconsin run files among the paths given")
    return out


def _audit(run: Run) -> str:
    from wisconsin.workloads.wisconsin.verdict import audit_verdict

    return audit_verdict([run]).text


def history(paths: Iterable[str | os.PathLike]) -> list[Series]:
    """The run files given (or found in the directories given) as series
    (wisconsin.analysis.history), comparisons in the paper's query order, each run audited."""
    files = run_paths(paths)
    return group_series(files, load_runs(files), order=tuple(QUERIES), audit=_audit)


# ------------------------------------------------------------------ the document


def _ms(f: Figure) -> str:
    """A median time in ms with its interval."""
    lo, hi = (None, None) if f.lo is None or f.hi is None else (1e3 * f.lo, 1e3 * f.hi)
    return interval_text(1e3 * f.value, lo, hi)


def _ratio(f: Figure | None) -> str:
    return "-" if f is None else interval_text(f.value, f.lo, f.hi)


def _change(c: Figure) -> str:
    return f"{c.name} {_ratio(c)}"


def _changes(e: Entry, shown: int | None = None) -> str:
    """The flagged changes of a step, the largest first (`shown` of them, the rest counted)."""
    big = sorted(e.changes, key=lambda c: -abs(c.value - 1))
    more = len(big) - (shown or len(big))
    return "; ".join(map(_change, big[:shown])) + (f" (+{more} more below)" if more > 0 else "")


def _mark(e: Entry, name: str) -> str:
    """' ^' (slower) or ' v' (faster) after a figure whose change from the run before is
    flagged."""
    c = next((c for c in e.changes if c.name == name), None)
    return "" if c is None else " ^" if c.value > 1 else " v"


def _run_label(i: int, e: Entry) -> str:
    return f"{i + 1}: {e.commit[:7] or '?'}"


def _step_word(e: Entry) -> str:
    if not e.verdict:
        return "first"
    return f"FLAGGED: {e.verdict}" if e.changes else e.verdict


def _audit_word(audit: str) -> str:
    """'pass', 'fail (N rules)' or '-': the audit column (the rules are said below it)."""
    if not audit:
        return "-"
    if audit.startswith("audit: pass"):
        return "pass"
    n = len(_failed_rules(audit))
    return f"fail ({n} rule{'s' * (n != 1)})"


def _series_sections(k: int, s: Series) -> list[Section]:
    runs = Table(
        [
            "run: commit",
            "started (UTC)",
            "file",
            "before it: busy cores, load",
            "audit",
            "vs the run before",
        ],
        [
            [
                _run_label(i, e),
                e.started_utc,
                Path(e.path).name,
                "-" if e.busy_cores is None else f"{e.busy_cores:.1f}, {e.load_1m:.1f}",
                _audit_word(e.audit),
                _step_word(e),
            ]
            for i, e in enumerate(s.entries)
        ],
    )
    said: dict[str, list[str]] = {}  # each audit verdict -> the runs it is of
    for i, e in enumerate(s.entries):
        if e.audit:
            said.setdefault(e.audit, []).append(str(i + 1))
    audits = [f"{a}: run{'s' * (len(r) > 1)} {', '.join(r)}" for a, r in said.items()]
    steps = [
        f"run {_run_label(i, e)} ({Path(e.path).name}) against run {i}: {e.verdict}: {_changes(e)}"
        for i, e in enumerate(s.entries)
        if e.changes
    ]
    cols = [_run_label(i, e) for i, e in enumerate(s.entries)]

    def table(first: str, attr: str, cell) -> Table:
        names = list(dict.fromkeys(f.name for e in s.entries for f in getattr(e, attr)))
        rows = []
        for name in names:
            got = [next((f for f in getattr(e, attr) if f.name == name), None) for e in s.entries]
            rows.append([name] + [
                "-" if f is None else cell(f) + _mark(e, name)
                for f, e in zip(got, s.entries, strict=True)
            ])  # fmt: skip
        return Table([first, *cols], rows)

    title = f"Series {k}: {s.machine} | {s.configuration}"
    commits = len({e.commit for e in s.entries})
    return [
        Section(
            title,
            [
                f"{len(s.entries)} runs of {commits} commit{'s' * (commits != 1)}, in commit "
                f"and date order; {s.flagged} of {len(s.entries) - 1} steps flagged "
                "(compare's test: points and whole curves, Holm-adjusted). ^ slower, v faster "
                "than the run before, flagged.",
                runs,
                *audits,
                *steps,
                "Each table against the run before: T ratio over its queries [95% CI] "
                "(compare's whole curve of the table):",
                table("curve", "tables", _ratio),
            ],
            anchor=f"series-{k}",
        ),
        Section(
            f"Series {k}: median ms per point [95% CI], run by run",
            [table("point", "times", _ms)],
            anchor=f"series-{k}-times",
        ),
        Section(
            f"Series {k}: speedup and scaleup at the largest P [95% CI], run by run",
            [table("ratio", "ratios", _ratio)],
            anchor=f"series-{k}-ratios",
            folded=True,
        ),
    ]


def _verdict(series: Sequence[Series]) -> Section:
    entries = [e for s in series for e in s.entries]
    commits = list(dict.fromkeys(e.commit for e in entries))
    items: list = [
        f"{len(entries)} runs of {len(commits)} commit{'s' * (len(commits) != 1)} "
        f"({', '.join(c[:7] or '?' for c in commits)}), in commit and date order"
    ]
    if len(series) > 1:
        items.append(
            f"{len(series)} series: runs of different machines or configurations are kept "
            "apart, never compared with each other"
        )
    rows = []
    for k, s in enumerate(series, 1):
        last = s.entries[-1]
        items.append(
            f"series {k}: {s.machine.split(',')[0]}, {s.configuration.split(',')[0]}: "
            f"{len(s.entries)} runs, {s.flagged} of {len(s.entries) - 1} steps flagged"
        )
        rows += [[str(k), t.name.removeprefix("curve ") if t else "-", _ratio(t),
                  _step_word(last)] for t in last.tables or [None]]  # fmt: skip
    items.append(Table(["series", "table", "last step: T ratio [95% CI]", "its verdict"], rows))
    if any(len(s.entries) > 1 and not s.entries[-1].tables for s in series):
        items.append(
            "-: no whole curve of a table: a run measured in one block (written before blocks) "
            "gives none; its points are compared on repetitions (below)"
        )
    flagged = [
        (k, i, e) for k, s in enumerate(series, 1) for i, e in enumerate(s.entries) if e.changes
    ]
    for k, i, e in flagged[:SHOWN]:
        items.append(
            f"flagged: series {k}, run {_run_label(i, e)} ({Path(e.path).name}): {e.verdict}: "
            f"{_changes(e, SHOWN)}"
        )
    if len(flagged) > SHOWN:
        items.append(f"flagged: {len(flagged) - SHOWN} more steps, below")
    if not flagged:
        items.append("flagged: nothing: no step between neighbours differs by compare's test")
    noisy = [e for e in entries if e.noise]
    if noisy:
        kinds = sorted({f.split(":")[0] for e in noisy for f in e.noise})
        items.append(
            f"noise before {len(noisy)} of {len(entries)} runs ({'; '.join(kinds)}): a flagged "
            "step may be the machine's, not the code's"
        )
    failed = [e for e in entries if not e.audit.startswith("audit: pass")]
    rules = sorted({r for e in failed for r in _failed_rules(e.audit)})
    items.append(
        f"audit: pass in all {len(entries)} runs"
        if not failed
        else f"audit: fail in {len(failed)} of {len(entries)} runs ({', '.join(rules)})"
    )
    return Section("Verdict", items)


def _failed_rules(audit: str) -> list[str]:
    """The rule names of an AuditVerdict's text 'audit: fail (a, b)'."""
    inside = audit.partition("(")[2].rstrip(")")
    return [r.strip() for r in inside.split(",") if r.strip()] or [audit]


def document(series: Sequence[Series]) -> list[Section]:
    """The history as sections: the verdict, then per series its runs, times and ratios."""
    out = [_verdict(series)]
    for k, s in enumerate(series, 1):
        out += _series_sections(k, s)
    return out


def render(series: list[Series], fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps([asdict(s) for s in series], indent=1) + "\n"
    if fmt == "html":
        return render_html(series)
    if fmt != "text":
        raise WisconsinError(f"unknown history format {fmt!r}; choose from {', '.join(FORMATS)}")
    return render_document([Section(TITLE, []), *document(series)], "text")


# ------------------------------------------------------------------ the page


def _figures(k: int, s: Series) -> str:
    """Per query, its points' median times with their intervals across the series' runs
    (log scale), a flagged step shaded: inline SVG <figure>s."""
    import matplotlib
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.ticker import FuncFormatter

    from wisconsin.reports import html as shell
    from wisconsin.reports.figures import RC

    x = list(range(1, len(s.entries) + 1))
    names = list(dict.fromkeys(f.name for e in s.entries for f in e.times))
    queries = [q for q in QUERIES if any(n.endswith(f" {q}") for n in names)]
    out = []
    with matplotlib.rc_context(RC):
        for q in queries:
            fig = MplFigure(figsize=(6.4, 3.4), layout="constrained")
            ax = fig.add_subplot()
            for i, e in enumerate(s.entries):
                if e.changes:  # the step into this run is flagged
                    ax.axvspan(i + 0.5, i + 1.5, color="#f3c4c4", lw=0)
            for name in (n for n in names if n.endswith(f" {q}")):
                got = [next((f for f in e.times if f.name == name), None) for e in s.entries]
                xs = [xi for xi, f in zip(x, got, strict=True) if f is not None]
                ys = [1e3 * f.value for f in got if f is not None]
                err = [[1e3 * (f.value - (f.lo or f.value)) for f in got if f is not None],
                       [1e3 * ((f.hi or f.value) - f.value) for f in got if f is not None]]  # fmt: skip
                ax.errorbar(xs, ys, yerr=err, marker="o", ms=3, capsize=3,
                            label=name.split()[0])  # fmt: skip
            ax.set_yscale("log")
            # plain numbers on the log axis (1, 2, 5 of each decade), not powers of ten
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(
                FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "25" else "")
            )
            ax.set_xticks(x, [_run_label(i, e) for i, e in enumerate(s.entries)],
                          rotation=30, ha="right", fontsize=7)  # fmt: skip
            ax.set_ylabel("median ms [95% CI]")
            ax.set_title(f"{q}: series {k}, shaded: a change flagged", fontsize=9)
            ax.legend(fontsize=7, ncol=4)
            out.append(shell.figure(f"history-{k}-{q}", fig))
    return "".join(out)


def render_html(series: Sequence[Series]) -> str:
    """One self-contained page: the verdict, then per series its runs with the figures
    beside them, its times and ratios (the text's sections, wisconsin.reports.html)."""
    import html

    from wisconsin.reports import html as shell

    verdict, *rest = document(series)
    parts = [f"<h1>{html.escape(TITLE)}</h1>", shell.verdict(verdict)]
    for sec in rest:
        k = int(sec.anchor.split("-")[1])
        figs = _figures(k, series[k - 1]) if sec.anchor == f"series-{k}" else ""
        parts.append(shell.section(sec, sec.anchor, figs, fold=sec.folded))
    return shell.page(TITLE, ["\n".join(parts)])
