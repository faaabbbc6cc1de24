"""The page every workload's `report --format html` is: one self-contained HTML file (no
script, no external file, no network). Its shell and style, tables, collapsible sections,
the verdict block, the audit table and figures as inline SVG."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from wisconsin.reports.document import Section, Table
from wisconsin.reports.figures import render

CSS = """
:root{color-scheme:light dark;--fg:#222;--muted:#555;--line:#ccc;--cell:#ddd;--box:#f4f6f8}
@media (prefers-color-scheme:dark){:root{--fg:#ddd;--muted:#aaa;--line:#555;--cell:#444;
--box:#1e2328}body{background:#121212}figure svg{background:#fff}}
body{font-family:system-ui,sans-serif;margin:1em auto;padding:0 .8em;max-width:1200px;
color:var(--fg)}
h1{font-size:1.4em;margin:.3em 0}h2{font-size:1.2em;border-bottom:1px solid var(--line);
margin-top:1.2em;display:inline}
summary{cursor:pointer;margin-top:1.2em}details>summary{list-style-position:outside}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid var(--cell);padding:2px 6px;text-align:right;white-space:nowrap}
td:first-child,th:first-child{text-align:left}tr.tandem td{color:var(--muted)}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;font-size:.9em}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
p.note{font-size:.85em;color:var(--muted);overflow-wrap:anywhere}
.pass{color:#1a7f37}.fail{color:#c03030;font-weight:600}
figure{display:inline-block;margin:.5em;max-width:100%}figure svg{max-width:100%;height:auto}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,360px),1fr));gap:.4em}
.figs figure{margin:0}.figs figure svg{width:100%}
.wrap{overflow-x:auto;max-width:100%}td.detail{white-space:normal;text-align:left;min-width:20em}
.verdict{background:var(--box);border-radius:6px;padding:.4em .8em;margin:.5em 0}
.verdict h2{display:none}.verdict p{margin:.25em 0;overflow-wrap:anywhere}
.verdict table{font-size:.8em}
@media (max-width:600px){body{font-size:14px}.verdict table{font-size:.72em}
td,th{padding:1px 3px}}
@media print{details{display:block}details::details-content{content-visibility:visible;
display:block}summary{list-style:none}.wrap{overflow:visible}}
"""


def anchor(title: str) -> str:
    """An id made of a title."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def table(t: Table) -> str:
    """A table in a box that scrolls sideways; a row of Tandem's published figures muted."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    rows = []
    for r in t.rows:
        cls = ' class="tandem"' if r and r[0].strip().startswith("Tandem") else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>")
    return f'<div class="wrap"><table><tr>{head}</tr>{"".join(rows)}</table></div>'


def _text(item: str) -> str:
    """A paragraph, its lines kept apart."""
    return "<br>".join(html.escape(line) for line in item.split("\n"))


def verdict(sec: Section) -> str:
    """The verdict block: the answer at the top of the page, the audit line coloured."""
    out = ['<section id="verdict" class="verdict"><h2>Verdict</h2>']
    for item in sec.items:
        if isinstance(item, Table):
            out.append(table(item))
            continue
        text = str(item)
        cls = (
            "audit pass"
            if text.startswith("audit: pass")
            else "audit fail"
            if text.startswith(("audit: fail", "audit: incomplete"))
            else ""
        )
        out.append(f'<p class="{cls}">{_text(text)}</p>' if cls else f"<p>{_text(text)}</p>")
    out.append("</section>")
    return "\n".join(out)


def section(
    sec: Section, sid: str, figures: str = "", *, fold: bool = False, title: str = ""
) -> str:
    """A collapsible section (open unless fold: a reader folds what they do not need;
    print shows everything), with its figures after its tables."""
    out = [
        f"<details{'' if fold else ' open'}><summary><h2>{html.escape(title or sec.title)}"
        f'</h2></summary><section id="{sid}">'
    ]
    for item in sec.items:
        if isinstance(item, Table):
            out.append(table(item))
        elif isinstance(item, list):
            out.append(
                "<dl>"
                + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in item)
                + "</dl>"
            )
        else:
            out.append(f'<p class="note">{_text(item)}</p>')
    if figures:
        out.append(f'<div class="figs">{figures}</div>')
    out.append("</section></details>")
    return "\n".join(out)


def svg(fig) -> str:
    """A matplotlib figure as an inline <svg> element (no XML prolog, no date)."""
    return inline(render(fig, "svg").decode())


def inline(svg_text: str) -> str:
    """An SVG file's text as an inline <svg> element: its XML prolog and doctype dropped."""
    return svg_text[svg_text.index("<svg") :]


def figure(name: str, fig) -> str:
    """A <figure> holding fig inline, its id fig-<name>."""
    return figure_svg(name, svg(fig))


def figure_svg(name: str, svg_text: str) -> str:
    """A <figure> holding an already drawn SVG inline, its id fig-<name>."""
    return f'<figure id="fig-{name}">{inline(svg_text)}</figure>'


def audit_table(rows: Sequence[tuple[str, bool, str]]) -> str:
    """One row per audit rule: its name, pass or FAIL, and what it found."""
    out = ['<div class="wrap"><table>', "<tr><th>Rule</th><th>Result</th><th>Detail</th></tr>"]
    for name, ok, detail in rows:
        cls, word = ("pass", "pass") if ok else ("fail", "FAIL")
        out.append(
            f"<tr><td>{html.escape(name)}</td><td class='{cls}'>{word}</td>"
            f"<td class='detail'>{html.escape(detail)}</td></tr>"
        )
    out.append("</table></div>")
    return "\n".join(out)


def _suffix_ids(body: str, i: int) -> str:
    """Ids unique on a page holding several reports (the first report keeps plain ids)."""
    # Only the page's own elements: ids inside the SVGs are referenced by url(#...).
    return body if i == 0 else re.sub(r'<(section|figure) id="([^"]+)"', rf'<\1 id="\2-{i}"', body)


def page(title: str, bodies: Sequence[str]) -> str:
    """The page: the reports' bodies one after another, a rule between them."""
    body = "\n<hr>\n".join(_suffix_ids(b, i) for i, b in enumerate(bodies))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
