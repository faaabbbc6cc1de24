"""The verdict block and the one-screen report (`wisconsin report RUN`), --full and --out."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import run_from_times  # noqa: E402

from wisconsin.analysis.metrics import compute_points  # noqa: E402
from wisconsin.cli import cli  # noqa: E402
from wisconsin.workloads.wisconsin import verdict  # noqa: E402
from wisconsin.workloads.wisconsin.audit import audit_file  # noqa: E402
from wisconsin.workloads.wisconsin.report import SHORT_LINES, SHORT_WIDTH  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent
REFERENCE = next((ROOT / "runs").glob("*-shared-nothing.json"))  # a calibrated 1..16 bench
INTERVAL = re.compile(r"\d+\.\d\d \[\d+\.\d\d-\d+\.\d\d\]")


def _cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("run", [REFERENCE, FIX / "run_v2.json", FIX / "run_a.json"])
def test_report_is_one_screen_with_the_verdict_first(run):
    res = _cli("report", run)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) <= SHORT_LINES == 40
    assert max(map(len, lines)) <= SHORT_WIDTH == 100
    head = "\n".join(lines[:12])
    assert INTERVAL.search(head), head  # a speedup with its interval
    assert re.search(r"^audit: (pass|fail)", head, re.M), head
    assert "why it bends" in res.output and f"report --full {run}" in res.output


def test_audit_line_is_the_workloads_audit():
    ref = _cli("report", REFERENCE).output
    assert all(r.ok for r in audit_file(REFERENCE))
    assert re.search(rf"^audit: pass \({len(audit_file(REFERENCE))} rules\)$", ref, re.M)
    failed = [r.name for r in audit_file(FIX / "run_a.json") if not r.ok]
    assert failed
    text = _cli("report", FIX / "run_a.json").output.replace("\n  ", " ")  # wrapped lines
    assert f"\naudit: fail ({', '.join(failed)})\n" in text


def test_verdict_lines_say_bound_and_cache():
    text = _cli("report", FIX / "run_v2.json").output
    # run_v2 is calibrated: the bound is a share of what the machine allows
    assert re.search(
        r"^bound: at P = 8 the queries run at \d+%-\d+% of what this machine", text, re.M
    )
    assert "cache: cold (every partition evicted" in text
    # Tandem's number at the same P is beside ours (VLX scan speedup at 8: 3.86)
    row = next(ln for ln in text.splitlines() if ln.startswith("Table Scan"))
    assert "3.86" in row.split() and "3.70" in row.split()
    uncal = _cli("report", FIX / "run_a.json").output
    assert "bound: not available: run file lacks calibration" in uncal


def test_full_is_the_verdict_then_every_section():
    full = _cli("report", "--full", FIX / "run_v2.json").output
    short = _cli("report", FIX / "run_v2.json").output
    assert full.startswith("Verdict\n=======\n")
    for title in ("Measured bound", "Machine profile", "Scalability card", "Causes of bending"):
        assert title in full and title not in short


def _bend(times, cores, engine=None):
    run = run_from_times(times, cores=cores, engine=engine)
    return verdict.bend_sentence(compute_points(run), cores)


def test_bend_sentence_names_the_largest_cause():
    t = {("F", 1, "scan"): [2.0, 2.0, 2.1], ("F", 4, "scan"): [1.0, 1.0, 1.05]}
    # per-partition engine time at P=4 is 2x what a quarter of P=1's work took: interference
    eng = {("F", 1, "scan"): [1.9], ("F", 4, "scan"): [0.95] * 4}
    s = _bend(t, 8, eng)
    assert s.startswith("why it bends (speedup efficiency 0.50 at P = 4): interference: ")
    assert "2.0x slower than the same work at P = 1" in s and "sharing" not in s
    # on 2 cores, 2x of it is from sharing cores
    assert "(2.0x from 4 partitions sharing 2 cores)" in _bend(t, 2, eng)
    # one partition slower than the others: skew
    eng = {("F", 1, "scan"): [1.9], ("F", 4, "scan"): [0.95, 0.3, 0.3, 0.3]}
    assert "skew: the slowest partition takes 2.05x the mean" in _bend(t, 8, eng)


def test_bend_sentence_without_a_bend_or_without_samples():
    t = {("F", 1, "scan"): [2.0, 2.0], ("F", 2, "scan"): [1.0, 1.02]}
    assert "it hardly does: median speedup efficiency 0.99 at P = 2" in _bend(t, 8)
    t[("F", 2, "scan")] = [1.6, 1.6]
    assert "not measured at P = 2 (no per-partition samples)" in _bend(t, 8)


def test_report_out_writes_refuses_and_forces(tmp_path):
    out = tmp_path / "r.md"
    res = _cli("report", "--format", "markdown", "--out", out, FIX / "run_v2.json")
    assert res.exit_code == 0 and res.output == f"report: {out}\n"
    assert out.read_text().startswith("# Verdict")
    out.write_text("mine")
    res = _cli("report", "--out", out, FIX / "run_v2.json")
    assert res.exit_code == 2 and out.read_text() == "mine"
    assert res.output.strip().splitlines() == [
        f"Error: {out} already exists: give --force to replace it"
    ]
    res = _cli("report", "--out", out, "--force", FIX / "run_v2.json")
    assert res.exit_code == 0 and "Measured bound" in out.read_text()  # a file: every section
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]  # no temporary file left


def test_html_on_a_terminal_says_how_to_write_it(monkeypatch):
    from wisconsin.cli import reading

    monkeypatch.setattr(reading, "_on_terminal", lambda: True)
    res = _cli("report", "--format", "html", FIX / "run_v2.json")
    assert res.exit_code == 0
    assert res.output.splitlines() == [
        "an HTML page is not printed on a terminal: write it with "
        f"`wisconsin report --format html --out report.html {FIX / 'run_v2.json'}`"
    ]
    monkeypatch.setattr(reading, "_on_terminal", lambda: False)  # redirected: the page
    assert _cli("report", "--format", "html", FIX / "run_v2.json").output.startswith("<!DOCTYPE")


def test_a_bench_with_g_to_the_cores_says_so_and_scales_up_at_its_own_largest_p(tmp_path):
    import dataclasses

    from wisconsin.runfiles import runfile
    from wisconsin.workloads.wisconsin.audit import rule_complete

    run = runfile.load(REFERENCE)  # G at 1..16: keep G1 and G2, as a calibrated bench now does
    cut = dataclasses.replace(
        run,
        measurements=tuple(m for m in run.measurements if m.kind == "F" or m.partitions <= 2),
        tables=tuple(t for t in run.tables if t.kind == "F" or t.partitions <= 2),
        config=dataclasses.replace(run.config, g_partitions=(1, 2)),
    )
    assert rule_complete(cut).ok, rule_complete(cut).detail
    text = _cli("report", runfile.save(cut, tmp_path / "cut.json")).output
    assert "; P = 1,2,4,8,16 (G at 1,2)" in text
    assert "Speedup at P=16" in text and "Scaleup at P=2" in text, text
