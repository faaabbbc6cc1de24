"""The neutral report document (sections of key/value lines, tables and notes) and its
text and markdown renderers, shared by report, compare and the html page. A Layout says
how text and markdown set it out: compact (Wisconsin's) or spaced (DebitCredit's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# ---------------------------------------------------------------- neutral document


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    items: list[str | Table | list[tuple[str, str]]] = field(default_factory=list)
    # the page only: its id (else made of the title), folded, the figures shown after it
    anchor: str = ""
    folded: bool = False
    figures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layout:
    """How text and markdown set a document out."""

    # text: a title bare and a blank line after it and after each item (else: the title
    # underlined with '=', the items line after line, a blank line after the section)
    spaced: bool = False
    # tables: every column right-aligned under one rule; in markdown, no alignment marks
    # (else: the first column left-aligned, a rule per column)
    ruled: bool = False
    escape: bool = True  # markdown: |, * and ~ escaped, the text stripped


COMPACT = Layout()
SPACED = Layout(spaced=True, ruled=True, escape=False)


def fnum(x: float | None, digits: int = 2) -> str:
    """A number for a table cell; '-' for missing data."""
    return "-" if x is None else f"{x:.{digits}f}"


def interval_text(value: float, lo: float | None, hi: float | None, digits: int = 2) -> str:
    """'1.93 [1.85-2.01]', or the value alone without an interval."""
    if lo is None or hi is None:
        return fnum(value, digits)
    return f"{value:.{digits}f} [{lo:.{digits}f}-{hi:.{digits}f}]"


# ---------------------------------------------------------------- renderers


def _text_table(t: Table, ruled: bool) -> list[str]:
    widths = [max(len(r[i]) for r in [t.header, *t.rows]) for i in range(len(t.header))]

    def line(cells: Sequence[str]) -> str:
        if ruled:
            return "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    rule = "-" * len(line(t.header)) if ruled else "  ".join("-" * w for w in widths)
    return [line(t.header), rule, *[line(r) for r in t.rows]]


def _render_text(doc: list[Section], layout: Layout) -> str:
    out: list[str] = []
    for sec in doc:
        out += [sec.title, "" if layout.spaced else "=" * len(sec.title)]
        for item in sec.items:
            if isinstance(item, Table):
                out += _text_table(item, layout.ruled)
            elif isinstance(item, list):
                w = max(len(k) for k, _ in item)
                out += [f"{k + ':':<{w + 1}} {v}" for k, v in item]
            else:
                out.append(item)
            if layout.spaced:
                out.append("")
        if not layout.spaced:
            out.append("")
    return "\n".join(out)


def _md_escape(s: str) -> str:
    return s.strip().replace("|", "\\|").replace("*", "\\*").replace("~", "\\~")


def _md_table(t: Table, layout: Layout) -> list[str]:
    cell = _md_escape if layout.escape else str
    n = len(t.header)
    rule = "|" + ("---|" * n if layout.ruled else "|".join([":---"] + ["---:"] * (n - 1)) + "|")
    return [
        "| " + " | ".join(cell(h) for h in t.header) + " |",
        rule,
        *["| " + " | ".join(cell(c) for c in r) + " |" for r in t.rows],
    ]


def _render_markdown(doc: list[Section], layout: Layout) -> str:
    text = _md_escape if layout.escape else str
    out: list[str] = []
    for i, sec in enumerate(doc):
        out += [("# " if i == 0 else "## ") + sec.title, ""]
        for item in sec.items:
            if isinstance(item, Table):
                out += _md_table(item, layout)
            elif isinstance(item, list):
                out += [f"- **{k}**: {text(v)}" for k, v in item]
            else:
                out.append(text(item))
            out.append("")
    return "\n".join(out)


def render_document(doc: list[Section], fmt: str, layout: Layout = COMPACT) -> str:
    """Render sections as plain text or markdown (shared with compare)."""
    return _render_text(doc, layout) if fmt == "text" else _render_markdown(doc, layout)
