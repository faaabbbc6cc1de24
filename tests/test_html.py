"""`wisconsin report --format html` loads in a real headless browser with every section,
for every workload, and so does `wisconsin history --format html` (the pages' shell is
wisconsin.reports.html)."""

import json
import os
import random
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


# One worker builds the module fixtures once (xdist --dist loadgroup), not each worker its own
pytestmark = pytest.mark.xdist_group("html")


def _history_args(tmp: Path) -> list[str]:
    from test_history import six_runs

    return ["history", "--format", "html", str(six_runs(tmp))]


# Per page (a workload's report, or the history): the command line that prints it (of a
# scratch directory), its sections, what its text holds, its least figures.
PAGES = {
    "wisconsin": (
        lambda tmp: ["report", "--format", "html", str(FIX / "run_v2.json")],
        (
            "verdict",
            "run-metadata",
            "table2-speedup",
            "table2-scaleup",
            "measured-bound",
            "machine-profile",
            "scalability-card",
            "audit",
            "figures",
            "timeline",
        ),
        ("Tandem VLX", "USL sigma", "COST", 'id="fig-timeline-scan"', "Table Scan", "Tandem CLX"),
        11,  # 10 ratio figures + overview (+ timelines)
    ),
    "debitcredit": (
        lambda tmp: ["report", "--format", "html", str(FIX / "debitcredit_run.json")],
        ("verdict", "run-metadata", "oltp-scaleup", "scaled", "response-time", "notes", "audit"),
        ("Tandem 1987", "not scaled", "P=2 invariants", "meets rule", "Independent check"),
        2,  # the response-time curves and the OLTP scaleup
    ),
    "history": (
        _history_args,  # six runs of two commits, the fourth 25% slower
        ("verdict", "series-1", "series-1-times", "series-1-ratios"),
        (
            "FLAGGED: B slower",
            "run 4: bbbbbbb (r3.json) against run 3: B slower",
            "curve F2",
            "audit: fail in 6 of 6 runs",
            'id="fig-history-1-scan"',
        ),  # fmt: skip
        2,  # the medians of scan and of update across runs
    ),
}


@pytest.fixture(scope="module", params=sorted(PAGES))
def page(request, tmp_path_factory):
    """(page, what `wisconsin report --format html` prints for the workload's run file, or
    `wisconsin history --format html` for its runs)."""
    from click.testing import CliRunner

    from wisconsin.cli import cli

    tmp = tmp_path_factory.mktemp("html")
    res = CliRunner().invoke(cli, PAGES[request.param][0](tmp))
    assert res.exit_code == 0, res.output
    path = tmp / "report.html"
    path.write_text(res.output)
    return request.param, path


def test_page_is_self_contained_with_every_section(page):
    name, path = page
    _, sections, holds, figures = PAGES[name]
    text = path.read_text()
    for sid in sections:
        assert f'id="{sid}"' in text, sid
    for words in holds:
        assert words in text, words
    assert text.count("<svg") >= figures
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


# CI (.ci/run) sets WISCONSIN_REQUIRE_BROWSER=1: there a missing chromium fails the browser
# tests instead of skipping them.
REQUIRE_BROWSER = os.environ.get("WISCONSIN_REQUIRE_BROWSER") == "1"


def _need_chromium() -> None:
    if CHROMIUM is None:
        why = "no chromium installed (apt-get install chromium)"
        if REQUIRE_BROWSER:
            pytest.fail(why + ": WISCONSIN_REQUIRE_BROWSER=1 requires the browser tests")
        pytest.skip(why)


# Run in the page a wrapper holds in an iframe of the viewport's exact size (a headless
# window is at least 500 px wide): where the verdict lies, and every clipped table cell.
PROBE = r"""
<script>
window.addEventListener('load', function () {
  const doc = document.getElementById('report').contentDocument;
  const win = doc.defaultView;
  const out = {width: doc.documentElement.clientWidth, clipped: []};
  const y = (el) => el ? el.getBoundingClientRect().bottom + win.scrollY : null;
  const v = doc.getElementById('verdict');
  const interval = /\d+\.\d\d \[\d+\.\d\d-\d+\.\d\d\]/;
  const cell = v && [...v.querySelectorAll('td')].find((td) => interval.test(td.textContent));
  out.interval = cell ? [cell.textContent, y(cell), cell.getBoundingClientRect().right] : null;
  const audit = v && v.querySelector('p.audit');
  out.audit = audit ? [audit.textContent, y(audit)] : null;
  out.verdict = y(v);
  for (const c of doc.querySelectorAll('td, th')) {
    const text = c.textContent.slice(0, 60);
    if (c.scrollWidth > c.clientWidth + 1) out.clipped.push(['wider than its cell', text]);
    let box = c.parentElement, scrolls = false;
    for (; box && box !== doc.body; box = box.parentElement) {
      const ox = win.getComputedStyle(box).overflowX;
      if (ox === 'auto' || ox === 'scroll') { scrolls = true; break; }
    }
    if (!scrolls && c.getBoundingClientRect().right > out.width + 1)
      out.clipped.push(['past the page and not in a scrolling box', text]);
  }
  out.height = doc.documentElement.scrollHeight;
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def layout(page: Path, width: int, height: int, tmp: Path) -> dict:
    """What the probe measures in page shown at width x height."""
    import html as stdhtml
    import json

    wrapper = tmp / f"probe-{width}.html"
    wrapper.write_text(
        "<!DOCTYPE html><html><body style='margin:0'>"
        f"<iframe id='report' style='width:{width}px;height:{height}px;border:0' "
        f'srcdoc="{stdhtml.escape(page.read_text())}"></iframe>{PROBE}</body></html>'
    )
    res = _chromium(
        wrapper.as_uri(),
        f"--window-size={width + 40},{height + 40}",
        "--virtual-time-budget=10000",
        "--dump-dom",
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S)
    assert found, res.stderr[-2000:]
    return json.loads(stdhtml.unescape(found.group(1)))


def steady_debitcredit(path: Path) -> None:
    """The DebitCredit fixture with 30 s windows and steady per-second series: every tps and
    scaleup cell then holds an interval, the widest the tables get."""
    data = json.loads((FIX / "debitcredit_run.json").read_text())
    rnd = random.Random(1)
    for r in data["results"]:
        for s in r["steps"]:
            tps = s["throughput_tps"] or 10.0
            s["duration_s"], s["in_window"] = 30.0, round(tps * 30)
            s["throughput_tps"] = s["in_window"] / 30
            s["tps_series"] = [max(0, round(rnd.gauss(tps, 0.03 * tps))) for _ in range(30)]
            memory = [
                [10**8 + rnd.randrange(1000) for _ in range(30)]
                for _ in s["committed_by_partition"]
            ]
            s["memory_bytes"], s["temp_bytes"] = memory, [[0] * 30 for _ in memory]
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module", params=sorted(PAGES))
def bench_page(request, tmp_path_factory):
    """A page at its widest: Wisconsin's of the reference run in runs/ (a default bench:
    calibrated, P = 1..16), DebitCredit's of its fixture made steady (steady_debitcredit),
    the history of three copies of the reference run, the last 25% slower (another commit)."""
    from wisconsin import workloads

    tmp = tmp_path_factory.mktemp("bench-html")
    (ref,) = Path(__file__).parent.parent.glob("runs/*-shared-nothing.json")
    path = tmp / "report.html"
    if request.param == "history":
        from test_history import slowed_copy

        from wisconsin.workloads.wisconsin.history import history, render

        # each round its own block, as runs are measured now (15 blocks by default): the
        # page then shows each table's whole curve against the run before, with its interval
        blocked = tmp / "ref.json"
        data = json.loads(ref.read_text())
        for r in data["rounds"]:
            r["block"] = max(1, r["index"])
        blocked.write_text(json.dumps(data))
        runs = [slowed_copy(blocked, tmp / "a.json"),
                slowed_copy(blocked, tmp / "b.json", minutes=1),
                slowed_copy(blocked, tmp / "c.json", slower=1.25, minutes=2, commit="c" * 40)]  # fmt: skip
        path.write_text(render(history(runs), "html"))
        return request.param, path
    run = ref
    if request.param == "debitcredit":
        run = tmp / "debitcredit-steady.json"
        steady_debitcredit(run)
    path.write_text(workloads.get(request.param).report_files([run], "html"))
    return request.param, path


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])  # a laptop, a phone
def test_the_verdict_is_above_the_fold_and_no_cell_is_clipped(bench_page, tmp_path, width, height):
    _need_chromium()
    name, path = bench_page
    got = layout(path, width, height, tmp_path)
    assert width - 20 <= got["width"] <= width  # the viewport, less a vertical scrollbar
    text, bottom, right = got["interval"]  # a speedup or scaleup with its interval
    assert re.fullmatch(r"\(?\d+\.\d\d \[\d+\.\d\d-\d+\.\d\d\]\)?h?[~*?!]*", text), text
    assert bottom <= 800 and right <= got["width"], got
    audit, bottom = got["audit"]  # the verdict's last line
    assert re.match(r"audit: (pass|fail)", audit) and bottom <= 800, got
    assert got["verdict"] <= 800, got
    assert got["clipped"] == []
    # figures beside their tables, long tables folded: the reference run's page was 17,837 px
    # tall at 1280 (13,205 at 390) when every figure stood alone below the tables
    assert got["height"] <= 6000 if width == 1280 else got["height"] <= 8000, got["height"]
    if name == "debitcredit":  # what the verdict says
        assert "P=2: 48.0 [47.5-48.5] tps with 95% within 1 s; scaleup 1.30" in path.read_text()


def test_each_figure_sits_in_the_section_of_its_table(page):
    name, path = page
    text = path.read_text()
    beside = {
        "wisconsin": (("table2-speedup", "speedup-scan"), ("table2-scaleup", "scaleup-scan")),
        "debitcredit": (("oltp-scaleup", "oltp-scaleup"), ("response-time", "response-time")),
        "history": (("series-1", "history-1-scan"), ("series-1", "history-1-update")),
    }
    for sid, fig in beside[name]:
        start = text.index(f'<section id="{sid}">')
        end = text.index("</section>", start)
        assert f'id="fig-{fig}"' in text[start:end] and 'class="figs"' in text[start:end]
    if name == "wisconsin":  # the long per-point sections are folded, Table 2 is open
        assert re.search(r"<details><summary><h2>Measured bound", text)
        assert re.search(r"<details open><summary><h2>Speedup \(F tables\)", text)


def test_the_probe_sees_a_clipped_cell_and_a_low_verdict(tmp_path):
    """The check itself works: a wide table outside a scrolling box and a verdict pushed
    below the fold are caught."""
    _need_chromium()
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><div style='height:900px'></div><section id='verdict'>"
        "<p class='audit'>audit: pass (9 rules)</p><table><tr>"
        "<td style='white-space:nowrap'>1.07 [0.97-1.16] " + "x" * 200 + "</td></tr></table>"
        "</section></body></html>"
    )
    got = layout(bad, 390, 844, tmp_path)
    assert got["interval"][1] > 800 and got["audit"][1] > 800 and got["verdict"] > 800
    assert got["clipped"] and got["clipped"][0][0] == "past the page and not in a scrolling box"


def test_headless_chromium_loads_without_console_errors(page, tmp_path):
    _need_chromium()
    name, path = page
    # The check itself works: a page that logs an error is caught.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>console.error('boom')</script></body></html>")
    assert "boom" in _chromium(bad.as_uri(), "--dump-dom").stderr
    res = _chromium(path.as_uri(), "--dump-dom")
    assert res.returncode == 0
    console = [ln for ln in res.stderr.splitlines() if "CONSOLE" in ln]
    assert console == []
    dom = res.stdout
    _, sections, holds, _ = PAGES[name]
    for sid in sections:
        assert f'id="{sid}"' in dom, sid
    for words in holds:
        assert words in dom, words


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
