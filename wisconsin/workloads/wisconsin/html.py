"""`wisconsin report --format html`: one self-contained page per report.

The page holds the same sections as the text report (built by wisconsin.workloads.wisconsin.report), the audit
result, and every figure as inline SVG; its shell and style are every workload's
(wisconsin.reports.html).
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Mapping, Sequence

from wisconsin.reports import html as shell
from wisconsin.reports.document import Section
from wisconsin.runfiles.runfile import Run
from wisconsin.workloads.wisconsin.verdict import TITLE as VERDICT_TITLE


def _section(sec: Section, sid: str | None = None, figures: str = "") -> str:
    """A section of the page; the long per-point tables folded."""
    title = "Run metadata" if sid == "run-metadata" else sec.title
    # the long per-point tables explain the answer; folded, they keep the page short
    fold = sid in FOLDED or sec.title.startswith("Causes of bending")
    return shell.section(sec, sid or shell.anchor(sec.title), figures, fold=fold, title=title)


def audit_rows(run: Run) -> list[tuple[str, bool, str]] | None:
    """Per-rule (rule, passed, detail) from wisconsin.workloads.wisconsin.audit's check function; None if absent."""
    try:
        # Written by the runner side (issue 8); may not exist. import_module, not `from
        # wisconsin import audit`, so sys.modules decides (tests stand in for it).
        audit = importlib.import_module("wisconsin.workloads.wisconsin.audit")
    except ImportError:
        return None
    # HOOK(audit): the per-rule pass/fail function (helper m2 names it audit(run) -> [Rule]).
    check = getattr(audit, "check", None) or getattr(audit, "audit", None)
    if check is None:
        return None
    result = check(run)
    items = result.items() if isinstance(result, dict) else result
    rows = []
    for item in items:
        if isinstance(item, tuple):
            name, ok, *rest = (*item, "")
            rows.append((str(name), bool(ok), str(rest[0] if rest else "")))
            continue
        name = next((getattr(item, a) for a in ("rule", "name") if hasattr(item, a)), item)
        ok = next((getattr(item, a) for a in ("passed", "ok", "pass_") if hasattr(item, a)), False)
        detail = next(
            (getattr(item, a) for a in ("detail", "message", "why") if hasattr(item, a)), ""
        )
        rows.append((str(name), bool(ok), str(detail)))
    return rows


def _audit_section(runs: Sequence[Run]) -> str:
    out = ['<section id="audit"><h2>Audit</h2>']
    for run in runs:
        rows = audit_rows(run)
        if rows is None:
            out.append(
                '<p class="note">audit: not available (this wisconsin has no '
                "wisconsin.workloads.wisconsin.audit; run <code>wisconsin audit RUN.json</code> where it "
                "exists)</p>"
            )
            break
        out.append(f"<h3>Run {html.escape(run.started_utc)}</h3>" + shell.audit_table(rows))
    out.append("</section>")
    return "\n".join(out)


def _figures(runs: list[Run], svgs: Mapping[str, str] | None) -> dict[str, str]:
    """Figure name (plots.figures: speedup-<query>, scaleup-<query>, overview,
    timeline-<query>) -> its <figure> element; svgs: those figures already drawn (bench
    draws each once, for its SVG file and this page)."""
    if svgs is not None:
        return {name: shell.figure_svg(name, text) for name, text in svgs.items()}
    from wisconsin.workloads.wisconsin.plots import figures

    return {name: shell.figure(name, fig) for name, fig in figures(runs)}


def _of(figs: dict[str, str], prefix: str) -> str:
    return "".join(v for k, v in figs.items() if k.startswith(prefix))


FOLDED = {"measured-bound", "scalability-card"}
SECTION_IDS = {
    "Wisconsin speedup and scaleup report": "run-metadata",
    "Speedup (F tables): T(F_P0) / T(F_P), higher is better": "table2-speedup",
    "Scaleup (G tables): T(G_P) / T(G_P0), lower is better": "table2-scaleup",
    "Machine profile": "machine-profile",
    "Scalability card": "scalability-card",
    "Measured bound": "measured-bound",
}


def _page_body(runs: list[Run], doc: list[Section], svgs: Mapping[str, str] | None) -> str:
    verdict = [s for s in doc if s.title == VERDICT_TITLE]
    doc = [s for s in doc if s.title != VERDICT_TITLE]
    parts = [f"<h1>{html.escape(doc[0].title)}</h1>"]
    parts += [shell.verdict(s) for s in verdict]  # the answer first, above the fold
    measured = len(doc) > 1 and doc[1].title != "No measurements"
    figs = _figures(runs, svgs) if measured else {}
    # each query's figure beside its Table 2 (speedup with F, scaleup with G)
    beside = {"table2-speedup": "speedup-", "table2-scaleup": "scaleup-"}
    for s in doc:
        sid = SECTION_IDS.get(s.title)
        parts.append(_section(s, sid, _of(figs, beside[sid]) if sid in beside else ""))
    parts.append(_audit_section(runs))
    if measured:
        parts.append(
            '<section id="figures"><h2>Figures</h2>' + (figs.get("overview") or "") + "</section>"
        )
        tl = _of(figs, "timeline-") or '<p class="note">No partition samples: no timeline.</p>'
        # folded: the timelines explain a bend, they are not the answer (print opens them)
        parts.append(
            "<details><summary><h2>Timeline (per partition: dispatch, start, end)</h2></summary>"
            f'<section id="timeline"><div class="figs">{tl}</div></section></details>'
        )
    return "\n".join(parts)


def render_html(
    groups: Sequence[Sequence[Run]],
    docs: Sequence[list[Section]],
    svgs: Mapping[str, str] | None = None,
) -> str:
    """One page holding a report per group of pooled runs (docs: each group's document);
    svgs: the one group's figures already drawn, by name (None: drawn here)."""
    if svgs is not None and len(groups) != 1:
        raise ValueError("drawn figures belong to one group of runs")
    bodies = [_page_body(list(g), doc, svgs) for g, doc in zip(groups, docs, strict=True)]
    return shell.page("Wisconsin speedup and scaleup report", bodies)
