"""A workload's report in every format `wisconsin report` offers: text, markdown, csv, json
and html. The workload says what goes in a Report; this module sets it out in each format.

Text, markdown and the page show the sections; json is the report's data, csv its rows; the
page opens with the verdict and adds the audit and the figures (computed for the page only).
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from wisconsin import WisconsinError
from wisconsin.reports import html as shell
from wisconsin.reports.document import COMPACT, Layout, Section, render_document

FORMATS = ("text", "markdown", "csv", "json", "html")


@dataclass
class Page:
    """What only the page shows."""

    verdict: Section  # first, above the fold: the answer
    audit: list[tuple[str, bool, str]] | None  # (rule, passed, detail); None: not available
    figures: dict = field(default_factory=dict)  # name -> matplotlib Figure (Section.figures)


@dataclass
class Report:
    """One report: its sections (the first one's title heads it), its data for json, its
    rows for csv, and how to make its page's parts."""

    title: str  # the page's <title>
    sections: list[Section]
    data: object  # json: dumped as it is
    columns: list[str]  # csv: the header row ...
    rows: list[list]  # ... and the rows, values as the csv module writes them
    page: Callable[[], Page]
    layout: Layout = COMPACT


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown report format {fmt!r} (choose {', '.join(FORMATS)})")


def render(reports: Sequence[Report], fmt: str) -> str:
    """The reports in fmt: one page holding them all, or each in turn, a blank line between."""
    check_format(fmt)
    if fmt == "html":
        return shell.page(reports[0].title, [_body(r) for r in reports])
    return "\n".join(_render(r, fmt) for r in reports)


def _render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report.data, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)  # RFC 4180: CRLF line ends
        writer.writerow(report.columns)
        writer.writerows(report.rows)
        return buf.getvalue()
    return render_document(report.sections, fmt, report.layout)


def _body(report: Report) -> str:
    """One report on the page: its title, the verdict, each section with the figures it
    names, the audit, and any figure no section named."""
    page = report.page()
    parts = [f"<h1>{html.escape(report.sections[0].title)}</h1>", shell.verdict(page.verdict)]
    placed: set[str] = set()
    for i, sec in enumerate(report.sections):
        names = [n for n in sec.figures if n in page.figures]
        placed.update(names)
        figs = "".join(shell.figure(n, page.figures[n]) for n in names)
        sid = sec.anchor or shell.anchor(sec.title)
        # the first section's title heads the page: below it, the section is the metadata
        title = "Run metadata" if i == 0 else sec.title
        parts.append(shell.section(sec, sid, figs, fold=sec.folded, title=title))
    parts.append('<section id="audit"><h2>Audit</h2>')
    if page.audit is None:
        parts.append(
            '<p class="note">audit: not available here; run '
            "<code>wisconsin audit RUN.json</code></p>"
        )
    else:
        parts.append(shell.audit_table(page.audit))
    parts.append("</section>")
    rest = [shell.figure(n, f) for n, f in page.figures.items() if n not in placed]
    if rest:
        parts.append('<section id="figures"><h2>Figures</h2>' + "".join(rest) + "</section>")
    return "\n".join(parts)
