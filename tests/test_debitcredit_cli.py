"""DebitCredit end to end: bench --workload debitcredit, its run file, report and plot."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket

import pytest
from click.testing import CliRunner

from harness.exits import completed
from harness.signals import sigint_default
from wisconsin.cli import cli
from wisconsin.workloads.debitcredit import metrics, pipeline
from wisconsin.workloads.debitcredit.runfile import load, save


def test_bench_debitcredit_end_to_end(tmp_path, monkeypatch):
    # P=2's first closed window taken as unsteady: the bench measures it again, and the
    # audit, judging the recorded windows itself (0.8 s: too short, not unsteady), fails it
    judged = []
    monkeypatch.setattr(pipeline, "_measure_again", lambda s: judged.append(s) or len(judged) == 2)
    out = tmp_path / "runs"
    args = ["bench", "--workload", "debitcredit", "--partitions", "1,2", "--branches", "4",
            "--step-seconds", "0.4", "--repeat", "1", "--data", str(tmp_path / "d"),
            "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output  # the audit fails P=2's short windows: files kept
    assert res.output.splitlines()[-1].startswith("audit: fail (")
    assert "OLTP scaleup" in res.output and "not scaled" in res.output
    (path,) = out.glob("debitcredit-*.json")
    run = load(path)
    assert run.workload == "debitcredit" and [r.partitions for r in run.results] == [1, 2]
    for r in run.results:
        assert r.audit.ok, r.audit.problems
        assert r.audit.history_rows == r.audit.acknowledged > 0
        closed = [s for s in r.steps if s.mode == "closed"]
        opened = [s for s in r.steps if s.mode == "open"]
        assert len(closed) == {1: 1, 2: 2}[r.partitions] and len(opened) == 5  # P=2: again
        assert [s.latency.count for s in r.steps] == [s.committed for s in r.steps]
        assert r.warmup_committed + sum(s.committed for s in r.steps) == r.audit.history_rows
    two = run.result(2)
    assert two.audit.distributed_rows >= sum(s.distributed for s in two.steps) > 0  # + warm-up
    assert metrics.expected_remote(run.config.sizing, 2) == 0.15 * 4 / 7
    assert list(out.glob("*-response-time.png")) and list(out.glob("*-oltp-scaleup.svg"))
    dc = tmp_path / "d" / "debitcredit"  # the disk line: its databases and files, their disk
    assert res.output.splitlines()[-2].startswith("disk: tables ")  # before the audit's line
    assert f"MB in {dc}, run file, " in res.output and f"`wisconsin remove {dc}`" in res.output
    assert f"`rm {path.with_suffix('')}*`" in res.output

    rep = CliRunner().invoke(cli, ["report", str(path), "--format", "json"])
    assert rep.exit_code == 0, rep.output
    assert [row["P"] for row in json.loads(rep.output)] == [1, 2]
    figs = CliRunner().invoke(cli, ["plot", str(path), "--out-dir", str(tmp_path / "figs")])
    assert figs.exit_code == 0 and len(figs.output.split()) == 4
    copy = shutil.copy(path, tmp_path / "copy.json")  # the same run, whatever its name
    cmp = CliRunner().invoke(cli, ["compare", str(path), str(copy)])
    assert cmp.exit_code == 2 and "are the same run" in cmp.output, cmp.output
    twin = tmp_path / "twin.json"  # another run with the same figures: started later
    twin.write_text(
        json.dumps(json.loads(path.read_text()) | {"started_utc": "2099-01-01T00:00:00Z"})
    )
    cmp = CliRunner().invoke(cli, ["compare", str(path), str(twin), "--format", "json"])
    assert cmp.exit_code == 0, cmp.output
    # 0.4 s windows are too short to judge steadiness: no headline, so no ratio of them
    assert [(r["P"], r["peak_ratio"]) for r in json.loads(cmp.output)] == [(1, None), (2, None)]

    # audit re-derives the invariants from the recorded figures: an edited sum fails it
    # ... and fails the steadiness of 0.4 s windows, too short to judge (the OLTP rules)
    aud = CliRunner().invoke(cli, ["audit", str(path)])
    assert aud.exit_code == 1 and "20 of 22 rules pass; 2 FAIL" in aud.output, aud.output
    fails = [line for line in aud.output.splitlines() if line.startswith("FAIL")]
    assert fails == [
        "FAIL  P=1 steady: 1 of 1 closed (peak) steps not steady: closed r0: 0.8 s: too short",
        "FAIL  P=2 steady: closed steps measured again against the rule: closed r0: measured "
        "again after a window not judged unsteady",
    ]  # the closed window: 2 x 0.4 s
    data = json.loads(path.read_text())
    data["results"][1]["audit"]["account_sum"] += 1
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    aud = CliRunner().invoke(cli, ["audit", str(edited)])
    assert aud.exit_code == 1, aud.output
    assert "FAIL  P=2 invariants: balances differ" in aud.output
    assert "FAIL  P=2 verdict matches" in aud.output and "PASS  P=1 invariants" in aud.output

    try:
        save(run, path)
        raise AssertionError("overwrote a run file")
    except Exception as exc:
        assert "never overwritten" in str(exc)


def test_report_of_a_bad_debitcredit_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"workload": "debitcredit", "schema_version": 99}))
    res = CliRunner().invoke(cli, ["report", str(bad)])
    assert res.exit_code == 2 and "version 99 is not supported" in res.output
    bad.unlink()
    bad.write_text(json.dumps({"workload": "debitcredit", "schema_version": 1}))
    res = CliRunner().invoke(cli, ["plot", str(bad)])
    assert (
        res.exit_code == 2
        and "not a valid DebitCredit run file: started_utc is missing" in res.output
    )


def test_bench_debitcredit_on_a_cluster_that_does_not_answer_is_one_line(tmp_path):
    # the partitions run on the cluster's workers (tests/test_oltp_cluster.py); a scheduler
    # that is not there fails within seconds, in one line, before anything is built
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tmp_path / "d"
    res = CliRunner().invoke(
        cli, ["bench", "--workload", "debitcredit", "--cluster", f"tcp://127.0.0.1:{port}",
              "--data", str(data), "--out", str(tmp_path / "runs")],
    )  # fmt: skip
    lines = res.output.strip().splitlines()
    assert res.exit_code != 0 and "Traceback" not in res.output, res.output
    assert f"cannot connect to the scheduler at tcp://127.0.0.1:{port}" in lines[-1]
    assert not list(data.rglob("*.duckdb"))
    res = CliRunner().invoke(cli, ["bench", "--workload", "debitcredit", "--tls-ca", "x"])
    assert res.exit_code == 2 and "need --cluster" in res.output, res.output


def test_debitcredit_options_are_refused_elsewhere_and_scaled_excludes_branches():
    for extra in (["--scaled", "5"], ["--branches", "3"], ["--rule", "90/2"]):
        res = CliRunner().invoke(cli, ["bench", *extra])
        assert res.exit_code == 2 and "DebitCredit options" in res.output, res.output
    res = CliRunner().invoke(
        cli, ["bench", "--workload", "debitcredit", "--scaled", "5", "--branches", "3"]
    )
    assert res.exit_code == 2 and "--scaled sets the branches: drop --branches" in res.output


def test_scaled_sizes_branches_by_the_rule():
    from wisconsin.workloads.debitcredit.pipeline import scaled_branches

    assert scaled_branches(450) == 4500  # 45 M accounts per partition
    assert scaled_branches(0.15) == 2 and scaled_branches(0.1) == 1 and scaled_branches(0.11) == 2


def test_compare_of_a_debitcredit_and_a_batch_file_is_one_line(tmp_path):
    dc = tmp_path / "dc.json"
    dc.write_text(json.dumps({"workload": "debitcredit", "schema_version": 1}))
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"schema_version": 1}))
    res = CliRunner().invoke(cli, ["compare", str(batch), str(dc)])
    assert res.exit_code == 2 and "run files of different workloads" in res.output


def test_ctrl_c_after_the_debitcredit_run_file_was_saved_names_it(tmp_path, monkeypatch):
    """A ^C once the DebitCredit run file is saved (while reports and figures are written, or
    raised again by interrupts.check after the command) names the files already written: it
    once said "no run file was written" of a complete file."""
    from harness.signals import ctrl_c_once_written

    out = tmp_path / "runs"
    ctrl_c_once_written(monkeypatch, out, "debitcredit-*.json")  # the run file is written
    args = ["bench", "--workload", "debitcredit", "--partitions", "1", "--branches", "2",
            "--step-seconds", "0.3", "--repeat", "1", "--data", str(tmp_path / "d"),
            "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 130, res.output
    (path,) = out.glob("debitcredit-*.json")
    last = res.output.splitlines()[-1]
    assert last.startswith("interrupted; finished partitions are kept; already written: "), last
    assert str(path) in last


def test_ctrl_c_during_debitcredit_bench_is_one_line(tmp_path):
    """^C to the whole process group, partition processes starting or running: one line, 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", "bench", "--workload", "debitcredit",
         "--partitions", "2", "--branches", "2", "--step-seconds", "2", "--repeat", "1",
         "--data", str(tmp_path / "d"), "--out", str(tmp_path / "runs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=sigint_default,
    )  # fmt: skip
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    # the schedule line first, then the one line of the interruption
    lines = err.strip().splitlines()
    assert lines[-1] == "interrupted; finished partitions are kept; no run file was written", err
    # before it: the schedule, the step lines and piped progress lines ("[hh:mm:ss] ...")
    assert all(
        x.startswith(("schedule:", "P=2")) or re.match(r"\[\d\d:\d\d:\d\d\] ", x)
        for x in lines[:-1]
    ), err
    assert not list(tmp_path.glob("runs/*.json"))


def test_bench_debitcredit_without_repeat_uses_the_documented_default(tmp_path):
    """The no-`--repeat` path once crashed in range(None): it runs DEFAULT_REPEATS passes.
    --scaled 0.2 builds 2 branches per partition (20,000 accounts: rated 0.2 tps)."""
    from wisconsin.workloads.debitcredit.pipeline import DEFAULT_REPEATS

    out = tmp_path / "runs"
    args = ["bench", "--workload", "debitcredit", "--partitions", "1", "--scaled", "0.2",
            "--step-seconds", "0.2", "--data", str(tmp_path / "d"), "--out", str(out),
            "--quiet"]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert completed(res), res.output
    (path,) = out.glob("debitcredit-*.json")
    run = load(path)
    (result,) = run.results
    assert [s.mode for s in result.steps].count("closed") == DEFAULT_REPEATS == 1
    assert run.config.sizing.branches_per_partition == 2 and result.accounts == 20_000


def test_the_no_flags_bench_says_its_schedule_and_starts_its_first_measured_step(tmp_path):
    """`wisconsin bench --workload debitcredit` with no schedule flag (only where its files
    go): the schedule and the time left first, then the build, the warm-up and the start of
    the first (60 s) closed step; stopped there (its result lines are tested at small sizes in
    test_bench_debitcredit_end_to_end; the whole default runs in benchmarks/, its result
    committed)."""
    import os
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", "bench", "--workload", "debitcredit",
         "--data", str(tmp_path / "d"), "--out", str(tmp_path / "runs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=sigint_default,
    )  # fmt: skip
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line.rstrip())
            if re.match(r"\[[\d:]+\] P=1 closed 1/1; job ", line):
                break
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=120)
    schedule = next(x for x in lines if x.startswith("schedule:"))
    assert "per P 1 x (1 closed step of 60 s + 5 open of 30 s)" in schedule, schedule
    # the time left is the progress display's (piped: its lines), of the whole bench
    assert all(re.search(r"; job \d+%, ~[\d.]+ (s|min) left$", x) for x in lines[1:]), lines
    said = "\n".join(lines)
    assert "P=1: building the database" in said and "P=1: warming up" in said, lines
    assert lines[-1].split("] ", 1)[1].startswith("P=1 closed 1/1; job "), lines
    assert proc.returncode == 130


def test_an_interrupted_bench_resumes_at_the_partition_count_it_reached(tmp_path, monkeypatch):
    from wisconsin.workloads.debitcredit import pipeline

    real = pipeline.measure_partitions

    def stop_at_two(cfg, partitions, *args, **kw):
        if partitions == 2:
            raise KeyboardInterrupt
        return real(cfg, partitions, *args, **kw)

    monkeypatch.setattr(pipeline, "measure_partitions", stop_at_two)
    out = tmp_path / "runs"
    args = ["bench", "--workload", "debitcredit", "--partitions", "1,2", "--branches", "2",
            "--step-seconds", "0.3", "--data", str(tmp_path / "d"), "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 130, res.output
    (partial,) = out.glob("debitcredit-*.json.partial")
    assert not list(out.glob("*.json"))  # nothing reads the progress file as a run
    last = res.output.strip().splitlines()[-1]
    assert f"--workload debitcredit --resume {partial}" in last, last
    # a progress file's settings are its own; the Wisconsin bench has no --resume
    r = CliRunner().invoke(cli, ["bench", "--workload", "debitcredit", "--resume",
                                 str(partial), "--partitions", "4"])  # fmt: skip
    assert r.exit_code == 2 and "drop --partitions" in r.output
    r = CliRunner().invoke(cli, ["bench", "--resume", str(partial)])
    assert r.exit_code == 2 and "wisconsin run --resume" in r.output
    r = CliRunner().invoke(cli, ["bench", "--workload", "debitcredit", "--resume",
                                 str(out / "x.json")])  # fmt: skip
    assert r.exit_code != 0 and "not a DebitCredit progress file" in r.output

    monkeypatch.setattr(pipeline, "measure_partitions", real)
    res = CliRunner().invoke(cli, ["bench", "--workload", "debitcredit", "--resume", str(partial)])
    assert completed(res), res.output
    assert "resuming at P=2" in res.output
    (path,) = out.glob("debitcredit-*.json")
    assert path.name + ".partial" == partial.name and not partial.exists()
    run = load(path)
    assert [r.partitions for r in run.results] == [1, 2]
    assert all(r.audit.ok for r in run.results)


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "json"])
def test_report_formats_are_their_goldens_byte_for_byte(fmt):
    """The report of a real bench's run file in each format. The goldens were printed by
    the report before its layout moved into wisconsin.reports (issue 44): the move changed
    no byte. WISCONSIN_REGEN_GOLDEN=1 rewrites them (only after an intended change)."""
    from pathlib import Path

    from wisconsin.workloads.debitcredit.report import report_files

    here = Path(__file__).parent
    golden = here / "golden" / f"debitcredit_run.{GOLDEN_SUFFIX[fmt]}"
    got = report_files([here / "fixtures" / "debitcredit_run.json"], fmt).encode()
    if os.environ.get("WISCONSIN_REGEN_GOLDEN") == "1":
        golden.write_bytes(got)
    assert got == golden.read_bytes()


GOLDEN_SUFFIX = {"text": "txt", "markdown": "md", "csv": "csv", "json": "json"}


def test_report_html_is_one_page_per_call_with_every_run(tmp_path):
    """Two run files: one page, the second report's ids suffixed; an unknown format is
    refused before any file is read."""
    from pathlib import Path

    from wisconsin import WisconsinError
    from wisconsin.workloads.debitcredit.workload import report_files

    run = Path(__file__).parent / "fixtures" / "debitcredit_run.json"
    page = report_files([run, run], "html")
    assert page.count("<!DOCTYPE html>") == 1 and page.count("<h1>DebitCredit OLTP") == 2
    assert 'id="verdict"' in page and 'id="verdict-1"' in page
    assert page.count("audit: fail (") == 2  # the audit re-checked from each file
    with pytest.raises(WisconsinError, match="unknown report format 'pdf'"):
        report_files([tmp_path / "absent.json"], "pdf")
