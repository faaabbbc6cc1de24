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
from wisconsin.report import load_runs, render_report, report_files  # noqa: E402

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
        "This machine has 2 usable cores: ideal speedup beyond P=2 is 1.00",
    ):
        assert needle in text, needle
    assert "0.96 [0.96-0.97]*" in text  # P=4 on 2 cores is marked oversubscribed


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


def test_several_runs_one_block_each():
    text = report_files([FIX / "run_a.json", FIX / "run_b.json"], "text")
    assert text.count("Wisconsin speedup and scaleup report") == 2


def test_no_ceiling_note_with_enough_cores():
    run = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]}, cores=8)
    text = render_report([run], "text")
    assert "*" not in text.split("Hardware ceiling\n")[0].split("Partitions")[1].split("\n~")[0]
    assert "every speedup point has a core per partition" in text


def test_errors_are_wisconsin_errors(tmp_path):
    with pytest.raises(WisconsinError, match="version 99"):
        load_runs([FIX / "bad_version.json"])
    with pytest.raises(WisconsinError, match="no such run file"):
        load_runs([tmp_path / "missing.json"])
    with pytest.raises(WisconsinError, match="unknown report format"):
        render_report([], "html")


def _cli(*args):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    return CliRunner().invoke(cli, list(args))


def test_cli_report_formats():
    res = _cli("report", str(FIX / "run_a.json"))
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

    from wisconsin import runfile
    from wisconsin.report import render_report

    run = runfile.load(FIX / "run_a.json")
    run = replace(run, config=replace(run.config, scan_variant="as-written"))
    assert "reads no rows: NOT a scan" in render_report([run], "text")
