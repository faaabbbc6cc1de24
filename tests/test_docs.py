"""The docs' shape: prose wrapped at 100 columns, table cells that hold figures and short words.

A table row may be as long as its cells make it; each cell holds at most CELL characters as
rendered, so explanations go to prose or notes below the table. Code fences are not prose; a
line is excepted only when a link's target or a URL alone makes it long (neither can wrap).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

WIDTH = 100  # a prose line's longest
CELL = 60  # a table cell's longest, as rendered: a link's text, no `, ** or __ marks

URL = re.compile(r"\]\([^)\s]*\)|<?\b[a-z][a-z0-9+.-]*://[^\s)>]*>?")  # a link's target, a URL
LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
MARKS = re.compile(r"`|\*\*|__")


def _lines(path: Path):
    """(number, line) of every line outside code fences."""
    fence = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        mark = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence is None and mark:
            fence = mark.group(1)
        elif fence is not None:
            if mark and mark.group(1).startswith(fence) and not line.strip(fence[0]).strip():
                fence = None
        else:
            yield number, line


def _is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _cells(row: str) -> list[str]:
    """A table row's cells: split at pipes outside code spans, `\\|` kept."""
    cells, cell, code = [], "", False
    for part in re.split(r"(\\\||`+|\|)", row.strip().strip("|")):
        if part.startswith("`"):
            code = not code
        if part == "|" and not code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += part
    return cells + [cell.strip()]


def _shown(cell: str) -> int:
    """A cell's length as rendered."""
    return len(MARKS.sub("", LINK.sub(r"\1", cell)))


def _too_long(line: str) -> bool:
    """Over the width, unless a link's target or a URL alone makes it so."""
    return len(line) > WIDTH and len(URL.sub("", line)) > WIDTH


def _long_prose(path: Path) -> list[str]:
    return [f"{n}: {len(s)}" for n, s in _lines(path) if not _is_row(s) and _too_long(s)]


def _long_cells(path: Path) -> list[str]:
    return [
        f"{n}: {cell[:40]}..."
        for n, row in _lines(path)
        if _is_row(row)
        for cell in _cells(row)
        if _shown(cell) > CELL
    ]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_prose_is_wrapped(path):
    assert _long_prose(path) == [], f"{path.name}: prose lines over {WIDTH} (line: length)"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_table_cells_hold_figures_and_short_words(path):
    assert _long_cells(path) == [], f"{path.name}: cells over {CELL}: move words below the table"


def test_the_checks_find_long_prose_and_cells_and_nothing_else(tmp_path):
    url = "https://example.org/" + "x" * 100
    linked = f"{'w' * 95} [page]({url})"  # long without the link's target too
    doc = tmp_path / "d.md"
    doc.write_text(
        "\n".join(
            [
                "p" * 101,  # 1: prose over the width
                "p" * 100,
                "```",
                "c" * 200,  # code
                "```",
                "  ~~~~",
                "c" * 200,  # code, in a tilde fence
                "  ~~~~",
                f"see [the page]({url})",  # long only by its link's target
                url,  # a bare URL
                linked,  # 11
                "| " + "r" * 200 + " |",  # 12: a long row of a long cell
                "| a | `x | y` | [short](" + "t" * 80 + ") |",
                "| **" + "b" * 60 + "** | `" + "b" * 60 + "` |",  # 60 shown
                "| " + "w" * 61 + " | b |",  # 15
            ]
        )
    )
    assert _long_prose(doc) == ["1: 101", f"11: {len(linked)}"]
    assert _cells("| a | `x | y` | [short](t) |") == ["a", "`x | y`", "[short](t)"]
    assert [c.split(":")[0] for c in _long_cells(doc)] == ["12", "15"]


def test_every_doc_is_checked():
    names = {p.name for p in DOCS}
    assert {"README.md", "methodology.md", "performance.md", "cli.md", "architecture.md"} <= names
    assert len(names) == 1 + len(list((ROOT / "docs").glob("*.md")))
