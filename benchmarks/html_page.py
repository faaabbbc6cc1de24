"""The HTML report's page height and clipped cells at a laptop's and a phone's viewport.

Usage: python benchmarks/html_page.py [RUN.json ...]   (default: the reference run in runs/)

Renders the report page, then measures it in headless Chromium with the probe of
tests/test_html.py (an iframe of the exact viewport): page height, where the verdict's first
interval and the audit line end, and how many table cells are clipped.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import test_html  # noqa: E402  (its probe and layout(): one definition of the measurement)

from wisconsin.workloads.wisconsin.report import report_files  # noqa: E402


def main() -> None:
    runs = [Path(a) for a in sys.argv[1:]] or sorted(ROOT.glob("runs/*-shared-nothing.json"))
    test_html.PROBE = test_html.PROBE.replace(
        "const pre =", "out.height = doc.documentElement.scrollHeight;\n  const pre =", 1
    ) if "out.height" not in test_html.PROBE else test_html.PROBE  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(report_files(runs, "html"))
        print(f"page: {page.stat().st_size:,} bytes for {', '.join(r.name for r in runs)}")
        for w, h in ((1280, 800), (390, 844)):
            got = test_html.layout(page, w, h, Path(tmp))
            print(f"{w}x{h}: height {got['height']} px, verdict interval ends at "
                  f"{got['interval'] and round(got['interval'][1])} px, audit line at "
                  f"{got['audit'] and round(got['audit'][1])} px, clipped cells "
                  f"{len(got['clipped'])}")  # fmt: skip


if __name__ == "__main__":
    main()
