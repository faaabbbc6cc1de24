"""`wisconsin report --format html` loads in a real headless browser with every section."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

from wisconsin.runfiles.runfile import load  # noqa: E402
from wisconsin.workloads.wisconsin import html as whtml

FIX = Path(__file__).parent / "fixtures"
CHROMIUM = next((c for c in ("chromium", "chromium-browser") if shutil.which(c)), None)
SECTIONS = (
    "run-metadata",
    "table2-speedup",
    "table2-scaleup",
    "measured-bound",
    "machine-profile",
    "scalability-card",
    "audit",
    "figures",
    "timeline",
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    res = CliRunner().invoke(cli, ["report", "--format", "html", str(FIX / "run_v2.json")])
    assert res.exit_code == 0, res.output
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(res.output)
    return path


def test_page_is_self_contained_with_every_section(page):
    text = page.read_text()
    for sid in SECTIONS:
        assert f'id="{sid}"' in text, sid
    assert "Tandem VLX" in text and "USL sigma" in text and "COST" in text
    assert text.count("<svg") >= 11  # 10 ratio figures + overview (+ timelines)
    assert 'id="fig-timeline-scan"' in text
    # nothing fetched from elsewhere
    assert not re.search(r'(src|href)=["\']?(https?:|//)', text)
    assert "<script" not in text


def _chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_headless_chromium_loads_without_console_errors(page, tmp_path):
    # The check itself works: a page that logs an error is caught.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>console.error('boom')</script></body></html>")
    assert "boom" in _chromium(bad.as_uri(), "--dump-dom").stderr
    res = _chromium(page.as_uri(), "--dump-dom")
    assert res.returncode == 0
    console = [ln for ln in res.stderr.splitlines() if "CONSOLE" in ln]
    assert console == []
    dom = res.stdout
    for sid in SECTIONS:
        assert f'id="{sid}"' in dom, sid
    assert "Table Scan" in dom and "Tandem CLX" in dom


def test_audit_section_without_audit_module(monkeypatch):
    run = load(FIX / "run_v2.json")
    monkeypatch.setitem(sys.modules, "wisconsin.workloads.wisconsin.audit", None)  # import fails
    assert whtml.audit_rows(run) is None
    assert "audit: not available" in whtml._audit_section([run])


def test_audit_section_renders_a_check_function(monkeypatch):
    import types

    fake = types.ModuleType("wisconsin.workloads.wisconsin.audit")
    fake.check = lambda run: {"full scan proven": True, "cold proven": False}
    monkeypatch.setitem(sys.modules, "wisconsin.workloads.wisconsin.audit", fake)
    run = load(FIX / "run_v2.json")
    assert whtml.audit_rows(run) == [("full scan proven", True, ""), ("cold proven", False, "")]
    assert "FAIL" in whtml._audit_section([run])


def test_schema1_html_says_what_is_missing():
    from make_fixture_runs import run_from_times

    from wisconsin.workloads.wisconsin.report import render_report

    run = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]})
    text = render_report([run], "html")
    assert "bound not available: run file lacks calibration" in text
    assert 'id="scalability-card"' in text


def test_several_reports_on_one_page_keep_ids_unique():
    from make_fixture_runs import run_from_times

    from wisconsin.workloads.wisconsin.report import render_report

    a = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]})
    b = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]}, seed=7)
    text = render_report([a, b], "html")
    ids = re.findall(r'<(?:section|figure) id="([^"]+)"', text)
    assert len(ids) == len(set(ids)) and "audit" in ids and "audit-1" in ids


def test_audit_section_renders_rules_of_an_audit_function(monkeypatch):
    # The shape helper m2's wisconsin/audit.py has: audit(run) -> [Rule(name, ok, detail)].
    import types
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Rule:
        name: str
        ok: bool
        detail: str

    fake = types.ModuleType("wisconsin.workloads.wisconsin.audit")
    fake.audit = lambda run: [Rule("engine share", True, "all >= 80%"), Rule("cold", False, "x")]
    monkeypatch.setitem(sys.modules, "wisconsin.workloads.wisconsin.audit", fake)
    run = load(FIX / "run_v2.json")
    assert whtml.audit_rows(run) == [("engine share", True, "all >= 80%"), ("cold", False, "x")]
    page = whtml._audit_section([run])
    assert "all &gt;= 80%" in page and "FAIL" in page
