"""Friction a first-time user meets: help, -h, --version, running what is there, where bench
writes and how much, progress when output is redirected."""

import os
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.exits import completed
from wisconsin.builds import build_tables
from wisconsin.cli import DEFAULT_OUT, cli
from wisconsin.store import TableSpec
from wisconsin.workloads.wisconsin.pipeline import disk_plan, preset_specs
from wisconsin.workloads.wisconsin.presets import Preset

EXE = shutil.which("wisconsin") or os.path.join(os.path.dirname(sys.executable), "wisconsin")
ROOT = Path(__file__).resolve().parent.parent


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_line_error(result, *fragments) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert all(f in lines[0] for f in fragments), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def f_only(tmp_path_factory):
    d = tmp_path_factory.mktemp("f_only")
    build_tables(d, [TableSpec("F", 2000, p, 7) for p in (1, 2)], jobs=2)
    return d


def test_no_arguments_prints_help_and_exits_0():
    out = subprocess.run([EXE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: wisconsin") and "Commands:" in out.stdout
    assert out.stderr == ""


def test_dash_h_is_help_everywhere():
    for args in (["-h"], ["run", "-h"], ["generate", "-h"]):
        r = invoke(*args)
        assert r.exit_code == 0 and r.output.startswith("Usage: "), args
        assert "Show this message and exit" in r.output


def test_version_names_the_git_commit():
    out = subprocess.run([EXE, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert out.stdout.startswith("wisconsin 0.")
    if head:  # a checkout: the commit itself (an installed wheel carries its stamped one)
        assert f"(commit {head}" in out.stdout


def test_run_on_a_directory_of_f_tables_runs_them(f_only, tmp_path):
    r = invoke(
        "run", "--data", f_only, "--mode", "shared-memory", "--repeat", 1, "--warmup", 0,
        "--queries", "average", "--out", tmp_path, "--quiet",
    )  # fmt: skip
    assert completed(r), r.output  # 1 round: its audit fails (exit 1)
    assert [ln.split()[0] for ln in r.output.splitlines() if ln.startswith("  ")] == ["F1", "F2"]


def test_run_says_exactly_what_is_missing(f_only, tmp_path):
    one_line_error(
        invoke("run", "--data", f_only, "--tables", "F,G", "--quiet"),
        "no G tables in",
        "it holds F1, F2",
        "choose --tables F",
    )
    one_line_error(invoke("run", "--data", tmp_path, "--quiet"), "no tables in", "generate")
    mixed = tmp_path / "mixed"
    build_tables(mixed, [TableSpec("F", 2000, 1, 7), TableSpec("G", 500, 2, 7)], jobs=2)
    one_line_error(
        invoke("run", "--data", mixed, "--quiet"),
        "no partition count has every one of F, G",
        "F at P = 1; G at P = 2",
    )


def test_run_measures_g_at_its_own_counts_when_they_are_some_of_fs(tmp_path):
    # a calibrated bench's layout: F over every count, G only up to the cores
    data = tmp_path / "d"
    build_tables(
        data, [TableSpec("F", 2000, 1, 7), TableSpec("F", 2000, 2, 7), TableSpec("G", 500, 1, 7)],
        jobs=2,
    )  # fmt: skip
    r = invoke(
        "run", "--data", data, "--mode", "shared-memory", "--repeat", 1, "--warmup", 0,
        "--queries", "average", "--out", tmp_path / "runs", "--quiet",
    )  # fmt: skip
    assert completed(r), r.output  # 1 round: its audit fails (exit 1)
    names = [ln.split()[0] for ln in r.output.splitlines() if ln.startswith("  ")]
    assert sorted(names) == ["F1", "F2", "G1"]
    (path,) = (tmp_path / "runs").glob("*.json")
    from wisconsin.runfiles import runfile
    from wisconsin.workloads.wisconsin.audit import rule_complete

    run = runfile.load(path)
    assert (run.config.partitions, run.config.g_partitions) == ((1, 2), (1,))
    assert run.config.tables() == [("F", 1), ("F", 2), ("G", 1)]
    assert rule_complete(run).ok, rule_complete(run).detail
    # the G2 the config does not name is not asked for; one it names and lacks fails
    import dataclasses

    wider = dataclasses.replace(run, config=dataclasses.replace(run.config, g_partitions=(1, 2)))
    assert not rule_complete(wider).ok and "G2/average" in rule_complete(wider).detail


def test_progress_lines_when_output_is_not_a_terminal(f_only, tmp_path):
    r = CliRunner().invoke(
        cli,
        ["run", "--data", str(f_only), "--mode", "shared-memory", "--repeat", "1",
         "--queries", "average,scan", "--out", str(tmp_path)],
    )  # fmt: skip
    assert completed(r), r.output  # 1 round: its audit fails (exit 1)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[")]
    assert lines, r.stderr
    # a line as the run starts, then at most one every LOG_EVERY_S seconds; the last line
    # says the rounds are done (the whole job then too)
    assert lines[0].split("] ")[1].startswith("shared-memory: checking the tables"), lines
    last = lines[-1].split("] ")[1]
    assert last.startswith("shared-memory rounds: done: ") and " (100%); job 100%" in last, lines
    assert "median ms per query" in r.stdout and "[" not in r.stdout.splitlines()[0]


def test_bench_disk_estimate_is_close_to_what_generate_writes(tmp_path):
    small = Preset("small", 20_000, 5_000, (2,), "a test's")  # tiny's sizes before issue 45
    specs = preset_specs(small, 7, ("F", "G"), (2,))
    plan = disk_plan(specs, str(tmp_path / "d"))
    assert plan.reused == () and plan.free_bytes > 0
    build_tables(tmp_path / "d", specs, jobs=2)
    written = sum(f.stat().st_size for f in (tmp_path / "d").rglob("*.duckdb"))
    assert 0.7 < plan.new_bytes / written < 1.5, (plan.new_bytes, written)
    again = disk_plan(specs, str(tmp_path / "d"))
    assert again.new_bytes == 0 and again.reused == ("F2", "G2")


def test_bench_says_where_and_how_much_and_refuses_a_full_disk(tmp_path, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 10**6, 10**6))
    line = one_line_error(
        invoke("bench", "--preset", "laptop", "--data", tmp_path / "d", "--out", tmp_path / "o"),
        "bench needs about 6.1 GB",  # the files plus 1.5 MiB each grows in a run (F1 too)
        "only 1.0 MB are free",
    )
    assert str(tmp_path / "d") in line
    assert not (tmp_path / "d").exists() and not (tmp_path / "o").exists()


def test_default_output_is_git_ignored_and_not_runs():
    assert DEFAULT_OUT != "runs"
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    probe = f"{DEFAULT_OUT}/x.json"
    out = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", probe])
    assert out.returncode == 0, f"{probe} is not git-ignored"


def test_a_refused_cluster_connection_fails_in_seconds(f_only):
    import time

    t0 = time.monotonic()
    line = one_line_error(
        invoke("run", "--data", f_only, "--cluster", "tcp://127.0.0.1:1", "--quiet"),
        "cannot connect to the scheduler at tcp://127.0.0.1:1: connection refused",
    )
    assert time.monotonic() - t0 < 8, line


def test_bench_announces_where_and_how_much_before_writing(tmp_path, monkeypatch):
    import wisconsin.workloads.wisconsin.pipeline
    from wisconsin import WisconsinError

    def stop(*a, **k):
        raise WisconsinError("stopped before generating")

    monkeypatch.setattr(wisconsin.workloads.wisconsin.pipeline, "bench", stop)
    r = invoke("bench", "--preset", "tiny", "--data", tmp_path / "d", "--out", tmp_path / "o")
    first = r.output.splitlines()[0]
    assert first.startswith("bench: about 2.3 GB of tables to generate in ")  # F1, F2, G1, G2
    assert str(tmp_path / "d") in first and f"go to {tmp_path / 'o'}" in first
    assert "free there" in first
