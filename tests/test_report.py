import csv
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import run_from_times  # noqa: E402

from wisconsin import WisconsinError  # noqa: E402
from wisconsin.workloads.wisconsin.report import load_runs, render_report, report_files  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"
# WISCONSIN_REGEN_GOLDEN=1 rewrites the golden files after an intended layout change.
REGEN = os.environ.get("WISCONSIN_REGEN_GOLDEN") == "1"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("fmt,name", [("text", "run_a.txt"), ("markdown", "run_a.md")])
def test_golden_run_a(fmt, name):
    _golden(name, report_files([FIX / "run_a.json"], fmt))


def test_golden_shared_memory_text():
    _golden("run_shm.txt", report_files([FIX / "run_shm.json"], "text"))


def test_text_report_says_what_is_needed():
    text = report_files([FIX / "run_a.json"], "text")
    for needle in (
        "shared-nothing",
        "DuckDB 2.0.0",
        "Fixture CPU",
        "Seed:",
        "Scan variant: full-row",
        "Durability:",
        "Table Scan",
        "Select & Insert",
        "Tandem VLX",
        "Tandem CLX",
        "7.21",  # VLX scan speedup at 16, as published
        "bound not available: run file lacks calibration",  # schema 1: no ceiling guessed
        "Cache:        not recorded",
        "Scalability card",
    ):
        assert needle in text, needle
    assert "0.96 [0.96-0.97]*" in text  # P=4 on 2 cores is marked oversubscribed
    assert "Hardware ceiling" not in text  # the min(P, cores) ceiling is gone (issue 9)


def test_shared_memory_shows_missing_causes_as_dash():
    text = report_files([FIX / "run_shm.json"], "text")
    assert "~" in text  # 3 noisy repetitions give wide intervals
    line = next(ln for ln in text.splitlines() if ln.startswith("Table Scan") and " F4 " in ln)
    # one engine sample per repetition: skew and interference cannot be measured
    assert line.split()[-3:-1] == ["-", "-"]


def test_csv_and_json_parse():
    rows = list(csv.DictReader(io.StringIO(report_files([FIX / "run_a.json"], "csv"))))
    assert len(rows) == 40  # 5 queries x 8 tables
    f16 = next(r for r in rows if r["table"] == "F16" and r["query"] == "scan")
    assert f16["oversubscribed"] == "True" and float(f16["ratio_lo"]) <= float(f16["ratio"])
    data = json.loads(report_files([FIX / "run_a.json", FIX / "run_shm.json"], "json"))
    assert len(data["runs"]) == 2
    pts = data["runs"][1]["points"]
    assert all(p["skew"] is None for p in pts)
    assert data["runs"][0]["run"]["cores"] == 2


def test_runs_of_one_configuration_are_pooled_others_apart():
    # Changed deliberately (issue 9): files of one configuration are replicates of it.
    text = report_files([FIX / "run_a.json", FIX / "run_b.json"], "text")
    assert text.count("Wisconsin speedup and scaleup report") == 1
    assert "Pooled:" in text and "2 runs of one configuration" in text
    text = report_files([FIX / "run_a.json", FIX / "run_shm.json"], "text")
    assert text.count("Wisconsin speedup and scaleup report") == 2


def test_schema2_report_bound_profile_card_harness():
    text = report_files([FIX / "run_v2.json"], "text")
    for needle in (
        "Measured bound",
        "Binding",
        "Machine profile",
        "Storage read: 1.50 GB/s",
        "Scalability card",
        "COST",
        "P = 2",
        "(0.92 [0.88-0.95])h*",  # AVG at P=8: harness-dominated, in parentheses
        "not a headline number: average P=8",
        "Cache:        cold",
        "interleaved: 6 rounds",
    ):
        assert needle in text, needle
    table2 = text.split("Speedup (F tables)")[1]
    row = next(ln for ln in table2.splitlines() if ln.startswith("Table Scan") and " 1.00 " in ln)
    assert row.split()[2] == "1.00"  # no interval at P0


def test_no_oversubscription_marker_with_enough_cores():
    run = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]}, cores=8)
    text = render_report([run], "text")
    assert "*" not in text.split("Partitions")[1].split("\nIdeal")[0]


def test_errors_are_wisconsin_errors(tmp_path):
    with pytest.raises(WisconsinError, match="version 99"):
        load_runs([FIX / "bad_version.json"])
    with pytest.raises(WisconsinError, match="no such run file"):
        load_runs([tmp_path / "missing.json"])
    with pytest.raises(WisconsinError, match="unknown report format"):
        render_report([], "pdf")


def _cli(*args):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    return CliRunner().invoke(cli, list(args))


def test_cli_report_formats():
    res = _cli("report", "--full", str(FIX / "run_a.json"))
    assert res.exit_code == 0
    assert res.output == (GOLDEN / "run_a.txt").read_text()
    res = _cli("report", "--format", "json", str(FIX / "run_a.json"), str(FIX / "run_shm.json"))
    assert res.exit_code == 0 and len(json.loads(res.output)["runs"]) == 2


@pytest.mark.parametrize("name", ["bad_version.json", "does-not-exist.json"])
def test_cli_report_bad_file_is_one_line_exit_2(name):
    res = _cli("report", str(FIX / name))
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert res.output.startswith("Error: ")


def test_base_note_and_unverified_marker():
    import dataclasses

    run = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]}, cores=8)
    m = run.measurements[1]
    bad = dataclasses.replace(
        m, repetitions=(dataclasses.replace(m.repetitions[0], verified=False), m.repetitions[1])
    )
    run = dataclasses.replace(run, measurements=(run.measurements[0], bad))
    text = render_report([run], "text")
    assert "Our base differs from Tandem's (P = 2)" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("Table Scan"))
    assert re.search(r"1\.95 \[[0-9.]+-[0-9.]+\]~?\?", row), row


def test_as_written_scan_is_labelled_not_a_scan():
    from dataclasses import replace

    from wisconsin.runfiles import runfile
    from wisconsin.workloads.wisconsin.report import render_report

    run = runfile.load(FIX / "run_a.json")
    run = replace(run, config=replace(run.config, scan_variant="as-written"))
    assert "reads no rows: NOT a scan" in render_report([run], "text")


def test_json_is_strict_and_carries_bound_card_and_pooling():
    text = report_files([FIX / "run_v2.json", FIX / "run_v2_b.json"], "json")
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    (group,) = data["runs"]
    assert len(group["pooled"]) == 2 and group["run"]["calibration"]["cores"] == 2
    f8 = next(p for p in group["points"] if p["table"] == "F8" and p["query"] == "scan")
    assert f8["binding"] == "cores" and f8["bound_s"] > 0 and f8["runs"] == 2
    avg8 = next(p for p in group["points"] if p["table"] == "F8" and p["query"] == "average")
    assert avg8["harness"] is True and avg8["headline"] is False
    p0 = next(p for p in group["points"] if p["table"] == "F1" and p["query"] == "scan")
    assert p0["ratio_lo"] is None
    assert {c["query"] for c in group["cards"]} == {"scan", "select", "average", "update", "join"}


def test_header_says_when_the_machine_hands_freed_memory_to_its_host(tmp_path):
    import dataclasses

    from wisconsin.runfiles import runfile

    run = runfile.load(FIX / "run_a.json")
    assert run.environment.free_page_reporting is None  # older run files: not recorded
    assert "free page reporting" not in render_report([run], "text")
    env = dataclasses.replace(run.environment, free_page_reporting=True)
    vm = dataclasses.replace(run, environment=env)
    path = tmp_path / "vm.json"
    runfile.save(vm, path)
    text = report_files([path], "text")
    assert "Memory" in text and "free page reporting" in text


def test_header_says_when_the_kernel_pages_out_idle_memory(tmp_path):
    import dataclasses

    from wisconsin.runfiles import runfile

    run = runfile.load(FIX / "run_a.json")
    assert run.environment.proactive_reclaim is None  # older run files: not recorded
    assert "DAMON" not in render_report([run], "text")
    env = dataclasses.replace(run.environment, proactive_reclaim=True)
    path = tmp_path / "damon.json"
    runfile.save(dataclasses.replace(run, environment=env), path)
    text = report_files([path], "text")
    assert "Memory" in text and "DAMON pageout" in text


def _dominated_base_run():
    """run_v2 with the G1 scan (the scaleup base) harness-dominated: engine share 50%."""
    import dataclasses

    from wisconsin.runfiles import runfile

    run = runfile.load(FIX / "run_v2.json")

    def dominate(m):
        if (m.table, m.query) != ("G1", "scan"):
            return m
        reps = tuple(dataclasses.replace(r, engine_share=0.5) for r in m.repetitions)
        return dataclasses.replace(m, repetitions=reps)

    return dataclasses.replace(run, measurements=tuple(dominate(m) for m in run.measurements))


def test_a_ratio_against_a_harness_dominated_base_is_not_a_headline():
    # Audit item 3: G1 scan was marked h while G2..G8 scan read as headline scaleups (and
    # were fitted), although the stopping rule already dropped them.
    from wisconsin.analysis import metrics, scalability, schedule

    run = _dominated_base_run()
    pts = {(p.kind, p.query, p.P): p for p in metrics.compute_points(run)}
    base = pts["G", "scan", 1]
    assert base.harness is True and not base.headline
    for P in (2, 4, 8):
        p = pts["G", "scan", P]
        assert p.harness is False and p.base_harness is True and not p.headline
    assert pts["F", "scan", 2].base_harness is False and pts["F", "scan", 2].headline
    # One definition: the report's headline points are the stopping rule's headline ratios.
    report_heads = {(p.kind, p.query, p.P) for p in pts.values() if p.P != p.P0 and p.headline}
    rule_heads = {(h.kind, h.query, h.P) for h in schedule.headline_ratios(run.measurements)}
    assert report_heads == rule_heads and ("G", "scan", 2) not in rule_heads
    card = next(
        c for c in scalability.cards(list(pts.values()), run) if (c.query, c.kind) == ("scan", "G")
    )
    assert card.excluded == (2, 4, 8) and all(f.points == 0 for f in card.fits)

    text = render_report([run], "text")
    row = next(ln for ln in text.splitlines() if ln.startswith("Table Scan") and "(1.00)h" in ln)
    assert row.count(")b") == 3, row
    assert "measured against a harness-dominated base" in text
    assert "scan P=2 (base P=1), scan P=4 (base P=1), scan P=8 (base P=1)" in text
    data = json.loads(render_report([run], "json"))
    g2 = next(p for p in data["runs"][0]["points"] if (p["table"], p["query"]) == ("G2", "scan"))
    assert g2["harness"] is False and g2["base_harness"] is True and g2["headline"] is False


def test_a_report_in_every_format_from_one_document():
    """wisconsin.reports.report sets out what a workload put in a Report: the sections in
    either layout, the data as json, the rows as csv (CRLF), the page with its verdict, the
    audit (or why there is none) and the figures no section placed."""
    from matplotlib.figure import Figure

    from wisconsin.reports.document import SPACED, Section, Table
    from wisconsin.reports.report import FORMATS, Page, Report, render

    fig = Figure()
    fig.add_subplot().plot([1, 2])
    doc = [
        Section("Title", ["a line\nits next line"]),
        Section("Data", [Table(["P", "tps"], [["1", "9.5"], ["16", "10.25"]])], anchor="data"),
    ]
    page = Page(Section("Verdict", ["the answer", "audit: pass (2 rules)"]), None, {"f": fig})
    rep = Report("A report", doc, {"k": [1]}, ["P", "ok"], [[1, True]], lambda: page)
    assert render([rep], "text") == (
        "Title\n=====\na line\nits next line\n\nData\n====\nP     tps\n--  -----\n"
        "1     9.5\n16  10.25\n"
    )
    spaced = Report("A report", doc, {}, [], [], lambda: page, SPACED)
    assert render([spaced], "text") == (
        "Title\n\na line\nits next line\n\nData\n\n P    tps\n---------\n 1    9.5\n16  10.25\n"
    )
    assert "|---|---|" in render([spaced], "markdown")
    assert "|:---|---:|" in render([rep], "markdown")
    assert render([rep], "json") == '{\n "k": [\n  1\n ]\n}\n'
    assert render([rep], "csv") == "P,ok\r\n1,True\r\n"
    html = render([rep, rep], "html")
    assert html.count("<!DOCTYPE html>") == 1 and html.index("the answer") < html.index("Data")
    assert 'class="audit pass"' in html and "a line<br>its next line" in html
    assert "audit: not available here" in html and 'id="fig-f"' in html and 'id="data-1"' in html
    assert set(FORMATS) == {"text", "markdown", "csv", "json", "html"}
    with pytest.raises(WisconsinError, match="unknown report format"):
        render([rep], "pdf")
