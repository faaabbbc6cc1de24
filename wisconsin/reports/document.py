"""The neutral report document (sections of key/value lines, tables and notes) and its
text and markdown renderers, shared by report, compare and the html page."""

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


def fnum(x: float | None, digits: int = 2) -> str:
    """A number for a table cell; '-' for missing data."""
    return "-" if x is None else f"{x:.{digits}f}"


def interval_text(value: float, lo: float | None, hi: float | None, digits: int = 2) -> str:
    """'1.93 [1.85-2.01]', or the value alone without an interval."""
    if lo is None or hi is None:
        return fnum(value, digits)
    return f"{value:.{digits}f} [{lo:.{digits}f}-{hi:.{digits}f}]"


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
