"""Screenshots of a report's HTML page at a laptop's and a phone's viewport, for docs/.

Usage: python docs/make_screenshots.py REPORT.html [--out docs]

Headless Chromium shows the page in an iframe of the exact viewport (a headless window is at
least 500 px wide, wider than a phone), as tests/test_html.py measures it; writes
report-1280x800.png and report-390x844.png.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import tempfile
from pathlib import Path

SIZES = ((1280, 800), (390, 844))


def screenshot(page: Path, width: int, height: int, out: Path) -> None:
    chromium = next(c for c in ("chromium", "chromium-browser") if shutil.which(c))
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "wrapper.html"
        wrapper.write_text(
            "<!DOCTYPE html><html><body style='margin:0'>"
            f"<iframe style='width:{width}px;height:{height}px;border:0' "
            f'srcdoc="{html.escape(page.read_text())}"></iframe></body></html>'
        )
        subprocess.run(
            [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
             f"--window-size={max(width, 500)},{height}", "--virtual-time-budget=10000",
             f"--screenshot={out}", wrapper.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    if width < 500:  # the window was wider than the phone: keep the iframe's part
        from PIL import Image

        with Image.open(out) as im:
            im.crop((0, 0, width, height)).save(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent)
    a = ap.parse_args()
    for w, h in SIZES:
        path = a.out / f"report-{w}x{h}.png"
        screenshot(a.page, w, h, path)
        print(path)


if __name__ == "__main__":
    main()
