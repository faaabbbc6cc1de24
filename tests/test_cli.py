"""The CLI through click's CliRunner: what a user types, what they see, the exit code."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.exits import completed
from harness.signals import sigint_default
from wisconsin.cli import cli
from wisconsin.runfiles import runfile
from wisconsin.workloads.wisconsin.queries import CATALOG


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_line_error(result, *fragments, code=2):
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert "Traceback" not in result.output
    assert any(all(f in line for f in fragments) for line in lines), result.output


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    r = invoke(
        "generate", "--kind", "F", "--rows", "3000", "--partitions", "1,2", "--data", d, "--quiet"
    )
    assert r.exit_code == 0, r.output
    r = invoke(
        "generate", "--kind", "G", "--rows", "1000", "--partitions", "1,2", "--data", d, "--quiet"
    )
    assert r.exit_code == 0, r.output
    return d


def test_generate_reports_tables_and_reuses_them(data):
    r = invoke("generate", "--kind", "F", "--rows", "3000", "--partitions", "1,2", "--data", data)
    assert r.exit_code == 0
    assert "F2: 3,000 rows in 2 partitions (already built)" in r.output


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--kind", "F", "--rows", "0"], ["rows must be positive"]),
        (["--kind", "F", "--rows", "-5"], ["rows must be positive"]),
        (["--kind", "F", "--rows", "3", "--partitions", "4"], ["more partitions", "than rows"]),
        (["--kind", "X"], ["unknown table kind"]),
        (["--kind", "F", "--partitions", "2,x"], ["comma-separated integers"]),
        (["--kind", "F", "--partitions", "0"], ["positive integers"]),
        (["--preset", "huge"], ["unknown preset"]),
        (["--rows", "10"], ["give one --kind"]),
    ],
)
def test_generate_bad_input(tmp_path, args, fragments):
    one_line_error(invoke("generate", *args, "--data", tmp_path / "d", "--quiet"), *fragments)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_generate_unwritable_dir_as_user(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    one_line_error(
        invoke("generate", "--kind", "F", "--rows", "10", "--data", ro / "x"), "cannot write"
    )


def test_generate_unwritable_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    one_line_error(
        invoke(
            "generate", "--kind", "F", "--rows", "10", "--partitions", "1", "--data", blocker / "d"
        ),
        "cannot write",
    )


def test_generate_refuses_to_overwrite_another_table(data, tmp_path):
    target = tmp_path / "d"
    shutil.copytree(data / "F2", target / "F2")
    r = invoke("generate", "--kind", "F", "--rows", "4000", "--partitions", "2", "--data", target)
    one_line_error(r, "already holds another table")
    assert json.loads((target / "F2" / "manifest.json").read_text())["rows"] == 3000


def test_interrupted_build_is_resumed(data, tmp_path):
    target = tmp_path / "d"
    shutil.copytree(data / "F2", target / "F2")
    # As after ^C: no manifest, one partition missing, a half-written temporary file.
    (target / "F2" / "manifest.json").unlink()
    (target / "F2" / "part-001.duckdb").unlink()
    (target / "F2" / "part-001.json").unlink()
    (target / "F2" / "part-001.duckdb.tmp").write_bytes(b"half")
    (target / "F2" / "part-000.duckdb.tmp.wal").write_bytes(b"stale, beside a complete part")
    one_line_error(invoke("info", target / "F2"), "no manifest.json")
    r = invoke("generate", "--kind", "F", "--rows", "3000", "--partitions", "2", "--data", target)
    assert r.exit_code == 0, r.output
    assert "1 partition kept from an earlier build" in r.output
    assert not list((target / "F2").glob("*.tmp*"))
    r = invoke("info", target / "F2")
    assert r.exit_code == 0 and "verified" in r.output
    same = json.loads((data / "F2" / "manifest.json").read_text())["parts"]
    assert json.loads((target / "F2" / "manifest.json").read_text())["parts"] == same


def test_info_verifies_and_catches_tampering(data, tmp_path):
    r = invoke("info", data / "F2")
    assert r.exit_code == 0
    assert "verified: every partition matches the manifest" in r.output
    assert json.loads(invoke("info", data / "F2", "--json", "--no-verify").output)["rows"] == 3000
    target = tmp_path / "F2"
    shutil.copytree(data / "F2", target)
    import duckdb

    con = duckdb.connect(str(target / "part-000.duckdb"))
    con.execute("UPDATE wisconsin SET stringu1 = 'x' WHERE unique2 = 7")
    con.close()
    one_line_error(invoke("info", target), "1 problem(s) found", code=3)  # damaged data
    # --json carries what the check found, not only the manifest
    r = CliRunner().invoke(cli, ["info", str(target), "--json", "--deep"])
    found = json.loads(r.stdout)["verification"]
    assert r.exit_code == 3 and found["checked"] == "deep" and found["ok"] is False
    assert len(found["problems"]) == 1 and not found["update_pending"]
    good = json.loads(invoke("info", data / "F2", "--json").output)["verification"]
    assert good == {"checked": "cheap", "ok": True, "problems": [], "update_pending": False,
                    "not_read": []}  # fmt: skip
    unread = json.loads(invoke("info", data / "F2", "--json", "--no-verify").output)
    assert unread["verification"]["checked"] == "none" and unread["verification"]["ok"] is None


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "corrupt manifest"),
        ('{"schema_version": 99}', "unknown manifest schema"),
        ('{"schema_version": 1, "parts": []}', "not a valid manifest: name is missing"),
    ],
)
def test_info_corrupt_manifest(data, tmp_path, content, fragment):
    target = tmp_path / "F2"
    shutil.copytree(data / "F2", target)
    (target / "manifest.json").write_text(content)
    one_line_error(invoke("info", target), fragment)


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda d: d["parts"][0].__setitem__("rows", "x"), 'parts[0].rows is "x", not an integer'),
        (lambda d: d["parts"][1].__setitem__("lo", 1.5), "parts[1].lo is 1.5, not an integer"),
        (lambda d: d.__setitem__("partitions", True), "partitions is true, not an integer"),
        (lambda d: d.__setitem__("kind", 7), "kind is 7, not a string"),
        (lambda d: d.__setitem__("storage", []), "storage is [], not an object"),
        (lambda d: d["parts"][0].__setitem__("checksum", None), "checksum is null, not a string"),
    ],
)
def test_hand_edited_manifest_is_one_line(data, tmp_path, edit, fragment):
    target = tmp_path / "d"
    shutil.copytree(data, target)
    manifest = target / "F2" / "manifest.json"
    m = json.loads(manifest.read_text())
    edit(m)
    manifest.write_text(json.dumps(m))
    for args in (
        ["info", target / "F2"],
        ["info", "--no-verify", target / "F2"],
        ["run", "--data", target, "--tables", "F", "--partitions", "2", "--quiet"],
    ):
        one_line_error(invoke(*args), "not a valid manifest: ", fragment)


def test_info_missing_table(tmp_path):
    one_line_error(invoke("info", tmp_path / "nope"), "no such table directory")


def test_export_writes_parquet_per_partition(data, tmp_path):
    import pyarrow.parquet as pq

    r = invoke("export", data / "F2", "--out", tmp_path / "pq")
    assert r.exit_code == 0, r.output
    files = sorted((tmp_path / "pq").glob("*.parquet"))
    assert [f.name for f in files] == ["part-000.parquet", "part-001.parquet"]
    assert sum(pq.read_metadata(f).num_rows for f in files) == 3000
    assert pq.read_table(files[1]).column("unique2").to_pylist()[0] == 1500
    one_line_error(invoke("export", data / "F2", "--out", tmp_path / "pq"), "already exists")


def test_export_checks_every_file_before_writing_any(data, tmp_path):
    """A user's part-001.parquet is refused before part-000 is written (it once was, leaving a
    half-finished directory after the error)."""
    out = tmp_path / "EX4"
    out.mkdir()
    (out / "part-001.parquet").write_text("p\n")
    one_line_error(invoke("export", data / "F2", "--out", out), "part-001.parquet already exists")
    assert [f.name for f in out.iterdir()] == ["part-001.parquet"]
    assert (out / "part-001.parquet").read_text() == "p\n"


def test_ctrl_c_in_export_leaves_no_part_file(data, tmp_path, monkeypatch):
    real, calls = os.link, []

    def link(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(os, "link", link)
    r = CliRunner().invoke(cli, ["export", str(data / "F2"), "--out", str(tmp_path / "pq")])
    assert r.exit_code == 130, r.output
    assert r.output.strip() == "interrupted; no Parquet file was written"
    assert not (tmp_path / "pq").exists()  # nor the directory it made for them


def test_ctrl_c_after_export_published_names_the_part_files(data, tmp_path, monkeypatch):
    """A ^C raised once every part file is in place (here: a discarded ^C raised again after
    the command) leaves them: the line names them (it said none was written)."""
    from wisconsin import interrupts

    def check():
        raise KeyboardInterrupt

    monkeypatch.setattr(interrupts, "check", check)
    out = tmp_path / "pq"
    r = CliRunner().invoke(cli, ["export", str(data / "F2"), "--out", str(out)])
    assert r.exit_code == 130, r.output
    parts = [out / "part-000.parquet", out / "part-001.parquet"]
    assert sorted(out.iterdir()) == parts
    assert r.output.strip().splitlines()[-1] == (
        f"interrupted; 2 Parquet files were already written: {parts[0]}, {parts[1]}"
    )


def test_run_prints_summary_and_run_file(data, tmp_path):
    r = invoke(
        "run",
        "--data",
        data,
        "--partitions",
        "1,2",
        "--mode",
        "shared-memory",
        "--repeat",
        "1",
        "--out",
        tmp_path / "runs",
        "--quiet",
    )
    assert completed(r), r.output  # 1 round on 3,000 rows: its audit fails, the file is kept
    assert "all answers verified" in r.output
    (path,) = [ln.removeprefix("run file: ") for ln in r.output.splitlines() if "run file: " in ln]
    assert os.path.exists(path) and path.endswith("-shared-memory.json")
    r = invoke("report", path)
    assert r.exit_code == 0 and "Speedup" in r.output


def test_a_budget_spent_before_the_first_timed_round_is_not_a_complete_run(data, tmp_path):
    args = ["--data", data, "--partitions", "1", "--mode", "shared-memory", "--repeat", "1"]
    r = invoke("run", *args, "--queries", "average", "--out", tmp_path, "--time-budget", "0.001")
    one_line_error(r, "time budget (0.001 s) ran out before the first timed round", "--resume")
    (path,) = tmp_path.glob("*.json")  # the cold warm-ups ran: kept, not complete
    run = runfile.load(path)
    assert run.status == "incomplete" and run.config.repeat == 0
    assert run.stop_reason.startswith("time budget: 0 rounds")
    assert not list(tmp_path.glob("*.journal"))
    r = invoke("run", "--resume", path, "--time-budget", "600", "--quiet")
    assert completed(r), r.output
    run = runfile.load(path)
    assert run.status == "complete" and run.config.repeat == 1
    assert run.config.time_budget_s == 600


def test_a_budget_spent_before_anything_ran_writes_nothing(data, tmp_path):
    r = invoke(
        "run",
        "--data",
        data,
        "--partitions",
        "1",
        "--mode",
        "shared-memory",
        "--cache",
        "warm",
        "--out",
        tmp_path / "runs",
        "--time-budget",
        "1e-9",
        "--quiet",
    )  # fmt: skip  (1 ns: spent before the first round can start)
    one_line_error(r, "time budget (1e-09 s) ran out before the first timed round")
    assert not (tmp_path / "runs").exists()


def _unwritable_outs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    outs = [blocker / "runs", blocker / "r.json"]
    # nothing can be created under /proc, even by root
    return outs + ([Path("/proc/x"), Path("/proc/x.json")] if Path("/proc/self").exists() else [])


def test_run_refuses_an_out_it_cannot_write_before_measuring(data, tmp_path):
    for out in _unwritable_outs(tmp_path):
        r = invoke("run", "--data", data, "--partitions", "1", "--out", out, "--quiet")
        one_line_error(r, f"--out {out}: cannot write to")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("workload", ["wisconsin", "debitcredit"])
def test_bench_refuses_an_out_it_cannot_write_before_building(tmp_path, workload):
    for out in _unwritable_outs(tmp_path):
        preset = ["--preset", "tiny"] if workload == "wisconsin" else []  # DC has none
        r = invoke(
            "bench", "--workload", workload, *preset, "--partitions", "1",
            "--data", tmp_path / "data", "--out", out, "--quiet",
        )  # fmt: skip
        one_line_error(r, f"--out {out}: cannot write to")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    "args, fragments",
    [
        (
            ["run", "--min-reps", "5", "--max-reps", "2"],
            ["'--max-reps'", "2 is below --min-reps 5"],
        ),
        (["run", "--queries", ""], ["--queries '' names no query"]),
        (["run", "--queries", " , "], ["names no query"]),
        (["bench", "--preset", "tiny", "--min-reps", "5", "--max-reps", "2"], ["below --min-reps"]),
        (["generate", "--kind", "F", "--rows", "99", "--partitions", "2,,4"], ["empty item"]),
        (["generate", "--kind", "F", "--rows", "99", "--jobs", "0"], ["'--jobs'", "0 is not in"]),
        (["generate", "--kind", "F", "--rows", "99", "--jobs", "-1"], ["'--jobs'", "-1 is not"]),
    ],
)
def test_option_values_that_would_be_silently_changed_are_refused(data, tmp_path, args, fragments):
    more = ["--data", data if args[0] == "run" else tmp_path / "new", "--quiet"]
    more += ["--out", tmp_path / "out"] if args[0] != "generate" else []
    one_line_error(invoke(*args, *more), *fragments)
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_run_options_with_max_reps_below_min_reps_are_refused():
    from wisconsin.measure.runner import RunOptions, validate

    with pytest.raises(Exception, match="--max-reps 2 is below --min-reps 5"):
        validate(
            RunOptions(catalog=CATALOG, data_dir="d", mode="shared-memory", min_reps=5, max_reps=2)
        )


def test_repair_refuses_zero_jobs(data):
    one_line_error(invoke("repair", data / "F1", "--jobs", "0", "--quiet"), "'--jobs'")


def test_run_summary_without_times_prints_no_median(capsys):
    from types import SimpleNamespace

    from wisconsin.cli import print_run_summary

    m = SimpleNamespace(table="F1", query="scan", times=())
    c = SimpleNamespace(mode="shared-memory", cache="cold", repeat=0)
    print_run_summary(SimpleNamespace(measurements=[m], config=c, stop_reason="x"))
    assert "F1  scan -" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--partitions", "4"], "table F4 is not generated"),
        (["--queries", "scan,sort"], "unknown query sort"),
        (["--mode", "cloud"], "Invalid value for '--mode'"),
        (["--repeat", "0"], "Invalid value for '--repeat'"),
        (["--scan-variant", "quick"], "Invalid value for '--scan-variant'"),
    ],
)
def test_run_bad_input(data, tmp_path, args, fragment):
    one_line_error(invoke("run", "--data", data, "--out", tmp_path, "--quiet", *args), fragment)


def test_run_corrupt_manifest(data, tmp_path):
    target = tmp_path / "d"
    shutil.copytree(data, target)
    (target / "F1" / "manifest.json").write_text("[]")
    one_line_error(
        invoke("run", "--data", target, "--partitions", "1", "--quiet"), "unknown manifest schema"
    )


@pytest.fixture
def small_tiny(monkeypatch):
    """--preset tiny at the sizes it had before issue 45 (20,000 and 5,000 rows): these tests
    exercise the command, not the sizes (tiny's own, 4.9 M rows, take a minute)."""
    from wisconsin.workloads.wisconsin import presets

    small = dataclasses.replace(presets.PRESETS["tiny"], f_rows=20_000, g_rows_per_partition=5_000)
    monkeypatch.setitem(presets.PRESETS, "tiny", small)


def test_bench_end_to_end_tiny(tmp_path, small_tiny):
    r = invoke(
        "bench",
        "--preset",
        "tiny",
        "--partitions",
        "1,2",
        "--repeat",
        "1",
        "--data",
        tmp_path / "data",
        "--out",
        tmp_path / "runs",
        "--mode",
        "shared-memory",
    )
    assert completed(r), r.output  # tiny: its audit fails (exit 1, files kept)
    # the terminal gets the verdict; the report file every section after it
    assert "Speedup at P=2" in r.output and "Tandem VLX" in r.output
    assert "Speedup (F tables)" not in r.output
    runs = list((tmp_path / "runs").glob("*.json"))
    assert len(runs) == 1
    pngs = list((tmp_path / "runs").glob("*.png"))
    assert pngs and all(p.stat().st_size > 1000 for p in pngs)
    report = (tmp_path / "runs" / (runs[0].stem + ".report.txt")).read_text()
    assert report.startswith("Verdict") and "Speedup (F tables)" in report
    # the disk line, then (the audit failed) the line naming the failed rules
    *_, disk, last = r.output.splitlines()
    assert disk.startswith("disk: tables ") and f"`wisconsin remove {tmp_path / 'data'}`" in disk
    assert last.startswith("audit: fail (") and r.exit_code == 1
    # A second bench reuses the tables and writes a new run file beside the first.
    r = invoke(
        "bench",
        "--preset",
        "tiny",
        "--partitions",
        "1,2",
        "--repeat",
        "1",
        "--data",
        tmp_path / "data",
        "--out",
        tmp_path / "runs",
        "--mode",
        "shared-memory",
        "--quiet",
    )
    assert completed(r) and "reused F1, F2, G1, G2" in r.output
    assert len(list((tmp_path / "runs").glob("*.report.html"))) == 2
    assert not [p for p in (tmp_path / "runs").iterdir() if ".tmp" in p.name]
    # A page the user has under the report's name is never replaced, and bench says so
    # before it builds or measures anything (not after minutes of measuring).
    mine = tmp_path / "runs" / "mine.report.html"
    mine.write_text("my page")
    before = sorted(p.name for p in (tmp_path / "runs").iterdir())
    r = invoke(
        "bench", "--preset", "tiny", "--partitions", "1,2", "--repeat", "1",
        "--data", tmp_path / "data", "--out", tmp_path / "runs" / "mine.json",
        "--mode", "shared-memory", "--quiet",
    )  # fmt: skip
    one_line_error(r, "mine.report.html already exists; not overwriting it")
    assert mine.read_text() == "my page"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == before
    # the same for a run file already there (its text report absent)
    (tmp_path / "runs" / "old.json").write_text("{}")
    r = invoke(
        "bench", "--preset", "tiny", "--data", tmp_path / "data",
        "--out", tmp_path / "runs" / "old.json", "--quiet",
    )  # fmt: skip
    one_line_error(r, "old.json already exists; not overwriting it")
    assert (tmp_path / "runs" / "old.json").read_text() == "{}"


def test_installed_command_smoke(tmp_path):
    """One real subprocess of the installed entry point, as a user runs it."""
    exe = shutil.which("wisconsin") or os.path.join(os.path.dirname(sys.executable), "wisconsin")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "wisconsin" in out.stdout
    out = subprocess.run(
        [
            exe,
            "generate",
            "--kind",
            "F",
            "--rows",
            "500",
            "--partitions",
            "2",
            "--data",
            str(tmp_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    out = subprocess.run(
        [exe, "info", str(tmp_path / "F2")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and "verified" in out.stdout
    out = subprocess.run(
        [exe, "generate", "--rows", "0", "--kind", "F"], capture_output=True, text=True, timeout=60
    )
    assert (
        out.returncode == 2
        and out.stderr.strip().count("\n") == 0
        and "Traceback" not in out.stderr
    )
    out = subprocess.run(
        [sys.executable, "-m", "wisconsin", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and "generate" in out.stdout


def test_cli_reference_is_current(request):
    """docs/cli.md is generated from --help; regenerate it when options change."""
    doc = (request.config.rootpath / "docs" / "cli.md").read_text()
    r = invoke("cli-reference")
    assert r.exit_code == 0
    assert r.output == doc, "docs/cli.md is stale: run `wisconsin cli-reference > docs/cli.md`"


def test_ctrl_c_during_generate_is_one_line_and_resumable(tmp_path):
    """A real ^C: SIGINT to the whole process group, as a terminal sends it."""
    import signal
    import time

    exe = shutil.which("wisconsin") or os.path.join(os.path.dirname(sys.executable), "wisconsin")
    args = [
        exe,
        "generate",
        "--kind",
        "F",
        "--rows",
        "2000000",
        "--partitions",
        "4",
        "--jobs",
        "1",
        "--data",
        str(tmp_path),
        "--quiet",
    ]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "F4" / "part-000.json").exists():  # one partition finished
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "interrupted; finished partitions are kept and the next generate resumes"
    assert not (tmp_path / "F4" / "manifest.json").exists()
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "kept from an earlier build" in done.stdout
    assert not list((tmp_path / "F4").glob("*.tmp*"))
    assert "verified" in invoke("info", tmp_path / "F4").output


def test_ctrl_c_during_run_stops_workers_quietly(data, tmp_path):
    """^C mid-run: one line, exit 130, no worker tracebacks, no workers left; what was measured
    before it is kept as an incomplete run file (before any execution: no file)."""
    import signal
    import time

    import psutil

    exe = shutil.which("wisconsin") or os.path.join(os.path.dirname(sys.executable), "wisconsin")
    args = [
        exe,
        "run",
        "--data",
        str(data),
        "--partitions",
        "1,2",
        "--repeat",
        "200",
        "--out",
        str(tmp_path / "runs"),
        "--quiet",
    ]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 60
    while len(psutil.Process(proc.pid).children(recursive=True)) < 2:  # workers are up
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # or it holds the shared data directory's lock
        raise
    assert proc.returncode == 130, err
    files = list((tmp_path / "runs").glob("*.json")) if (tmp_path / "runs").exists() else []
    # One line; a Dask log the interrupted workers wrote is kept and named at its end.
    kept = list((tmp_path / "runs").glob(".wisconsin-logs-*/dask.log"))
    tail = f"; logs kept in {kept[0]}" if kept else ""
    if files:  # an incomplete run file, named in the one line, and no journal left
        (path,) = files
        assert err.strip() == (
            f"interrupted; what was measured is in {path} (incomplete): continue it with "
            f"`wisconsin run --resume {path}`{tail}"
        )
        assert runfile.load(path).status == "incomplete"
        assert not list((tmp_path / "runs").glob("*.journal"))
    else:
        assert err.strip() == "interrupted; no run file was written" + tail
    time.sleep(1)
    alive = [
        p
        for p in psutil.process_iter(["status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE and _in_group(p, proc.pid)
    ]
    assert not alive, "worker processes outlived the interrupted run"


def test_ctrl_c_during_an_in_process_query_is_an_interrupt_not_an_error(
    data, tmp_path, monkeypatch
):
    """DuckDB's Python client turns a ^C during a query in the main thread into
    RuntimeError("Query interrupted"): the run still says "interrupted", exits 130 and keeps
    what it measured as an interrupted, incomplete run file (it once said "Error: Query
    interrupted", exit 2)."""
    from wisconsin.engines.shared_memory import SharedMemoryEngine

    real, calls = SharedMemoryEngine.execute, []

    def execute(self, statements):
        calls.append(1)
        if len(calls) == 12:
            raise RuntimeError("Query interrupted")
        return real(self, statements)

    monkeypatch.setattr(SharedMemoryEngine, "execute", execute)
    out = tmp_path / "runs"
    r = invoke("run", "--data", data, "--mode", "shared-memory", "--repeat", "5", "--out", out)
    assert r.exit_code == 130, r.output
    (path,) = out.glob("*.json")
    assert f"interrupted; what was measured is in {path} (incomplete)" in r.output
    assert "Error" not in r.output
    run = runfile.load(path)
    assert (run.status, run.stop_reason) == ("incomplete", "interrupted (^C)")


def test_ctrl_c_after_the_complete_run_file_was_saved_names_it(data, tmp_path, monkeypatch):
    """A ^C once the run has saved its complete file (while the report is printed, or raised
    again by interrupts.check after the command) names that file: it once said "no run file
    was written" of a file that was there, complete."""
    from harness.signals import ctrl_c_once_written

    out = tmp_path / "runs"
    ctrl_c_once_written(monkeypatch, out, "*.json")  # the complete file is written: ^C now
    r = invoke("run", "--data", data, "--mode", "shared-memory", "--repeat", "1", "--out", out)
    assert r.exit_code == 130, r.output
    (path,) = out.glob("*.json")
    assert r.output.splitlines()[-1] == f"interrupted; already written: {path}"
    assert runfile.load(path).status == "complete"


def test_ctrl_c_swallowed_where_python_discards_it_still_interrupts_the_run(
    data, tmp_path, monkeypatch
):
    """A ^C whose KeyboardInterrupt is raised where Python prints and discards it (it was a
    weakref callback of importlib's module lock, during a lazy import mid-run) still stops
    the run: one line, exit 130, an incomplete run file. It once printed "Exception ignored
    in" and a traceback, finished the run as "complete" and exited 0."""
    import signal
    import weakref

    from wisconsin.engines.shared_memory import SharedMemoryEngine

    class Lock:
        pass

    real, calls = SharedMemoryEngine.execute, []

    def execute(self, statements):
        calls.append(1)
        if len(calls) == 6:
            # The referent dies at once: its callback gets the ^C and Python discards it.
            _ref = weakref.ref(
                Lock(), lambda _: signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
            )
        return real(self, statements)

    monkeypatch.setattr(SharedMemoryEngine, "execute", execute)
    out = tmp_path / "runs"
    # As in a terminal: CI may start pytest with SIGINT ignored, which the CLI leaves alone.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        r = invoke("run", "--data", data, "--mode", "shared-memory", "--repeat", "2", "--out", out)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert r.exit_code == 130, r.output
    (path,) = out.glob("*.json")
    assert r.output.splitlines()[-1] == (
        f"interrupted; what was measured is in {path} (incomplete): continue it with "
        f"`wisconsin run --resume {path}`"
    )
    assert "Traceback" not in r.output and "Exception ignored" not in r.output, r.output
    run = runfile.load(path)
    assert (run.status, run.stop_reason) == ("incomplete", "interrupted (^C)")
    assert signal.getsignal(signal.SIGINT) is previous


def _in_group(p, pgid) -> bool:
    try:
        return os.getpgid(p.pid) == pgid
    except (ProcessLookupError, PermissionError):
        return False


def test_run_defaults_to_the_partition_counts_generated(data, tmp_path):
    r = invoke(
        "run",
        "--data",
        data,
        "--mode",
        "shared-memory",
        "--repeat",
        "1",
        "--queries",
        "average",
        "--out",
        tmp_path,
        "--quiet",
    )
    assert completed(r), r.output
    tables = [line.split()[0] for line in r.output.splitlines() if line.startswith("  ")]
    assert tables == ["F1", "G1", "F2", "G2"]


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--memory-limit", "banana"], ["is not a DuckDB memory limit"]),
        (["--out", "results.txt"], ["give a directory, or a file name ending in .json"]),
        (["--cluster", "bogus", "--timeout", "5"], ["'bogus' is not a scheduler address"]),
        (["--cluster", "tcp://127.0.0.1:1", "--timeout", "5"], ["cannot connect to the scheduler"]),
        (["--tables", "G", "--partitions", "3"], ["table G3 is not generated", "it holds F1"]),
    ],
)
def test_run_more_bad_input(data, tmp_path, args, fragments):
    one_line_error(invoke("run", "--data", data, "--quiet", "--partitions", "1", *args), *fragments)


def test_info_on_a_data_directory_names_its_tables(data):
    one_line_error(invoke("info", data), "is a data directory holding tables F1, F2, G1, G2")


def test_usage_errors_are_one_line(tmp_path):
    exe = shutil.which("wisconsin") or os.path.join(os.path.dirname(sys.executable), "wisconsin")
    for args in (
        ["run", "--partiton", "2"],
        ["run", "--mode", "shared-mem"],
        ["nosuch"],
        ["generate", "--kind", "H"],
    ):
        out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, args
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert out.stderr.startswith("Error: ") and "--help" in out.stderr


def _all_walls(value):
    def edit(d):
        for m in d["measurements"] + d["baseline"]:
            for r in [m["warmup"], *m["repetitions"]]:
                r["wall_s"] = value

    return edit


def _first_rep(field, value):
    return lambda d: d["measurements"][0]["repetitions"][0].__setitem__(field, value)


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (_first_rep("wall_s", "x"), 'measurements[0].repetitions[0].wall_s is "x", not a number'),
        (_first_rep("wall_s", None), "measurements[0].repetitions[0].wall_s is null"),
        (_first_rep("wall_s", -0.5), "measurements[0].repetitions[0].wall_s is -0.5"),
        (_all_walls(0), "wall_s is 0, not a number > 0.0"),
        (lambda d: d["measurements"][0].__setitem__("partitions", 0), "partitions is 0"),
        (lambda d: d["measurements"][0].__setitem__("rows", True), "rows is true"),
        (lambda d: d["config"].__setitem__("max_reps", "x"), 'config.max_reps is "x"'),
    ],
)
@pytest.mark.parametrize("command", ["report", "plot", "compare", "audit"])
def test_hand_edited_run_files_are_one_line(tmp_path, request, command, edit, fragment):
    good = request.config.rootpath / "tests/fixtures/run_v2.json"
    data = json.loads(good.read_text())
    edit(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    # compared with another run: beside good, an edited copy of it is refused as good again
    args = [bad, good.with_name("run_v2_b.json")] if command == "compare" else [bad]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. numpy's RuntimeWarning on a negative time
        r = invoke(command, *args)
    one_line_error(r, f"{bad}: not a valid run file: ", fragment)


def test_resume_of_a_hand_edited_run_file_is_one_line(tmp_path, request):
    data = json.loads((request.config.rootpath / "tests/fixtures/run_v2.json").read_text())
    data.update(status="incomplete", stop_reason="interrupted (^C)")
    data["config"]["max_reps"] = "x"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    one_line_error(invoke("run", "--resume", bad), "not a valid run file: config.max_reps")


@pytest.mark.parametrize(
    "tail, fragment",
    [
        (b"[1, 2]\n", "journal line 2 is [1, 2], not an object"),
        (b'{"t": "round", "round": {"index": "1", "seed": 7, "order": []}}\n', "round.index"),
        (b"\xff\xfe\n{}\n", "journal line 2 is damaged (not UTF-8 text)"),
        (b"{not json\n{}\n", "journal line 2 is damaged (not JSON)"),
    ],
)
def test_resume_of_a_damaged_journal_is_one_line(tmp_path, request, tail, fragment):
    from wisconsin.runfiles import runfile

    # a journal's base is in this version's schema (the runner that wrote it)
    data = runfile.to_dict(runfile.load(request.config.rootpath / "tests/fixtures/run_v2.json"))
    data.update(status="incomplete", stop={"rule": "interrupted"})
    journal = tmp_path / "run.json.journal"
    journal.write_bytes(json.dumps({"t": "base", "run": data}).encode() + b"\n" + tail)
    one_line_error(invoke("run", "--resume", tmp_path / "run.json"), f"{journal}: ", fragment)


def test_resume_of_an_empty_journal_is_one_line(tmp_path):
    (tmp_path / "run.json.journal").write_bytes(b"")
    one_line_error(invoke("run", "--resume", tmp_path / "run.json"), "run.json.journal: empty")


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{a}", "{a}"],
        ["report", "{a}", "{b}", "{dot_a}"],
        ["plot", "{a}", "{a}"],
        ["compare", "{a}", "{a}"],
        ["compare", "{a}", "{b}", "--with-b", "{dot_a}"],
    ],
)
def test_one_run_file_given_twice_is_refused(request, tmp_path, monkeypatch, args):
    root = request.config.rootpath
    monkeypatch.chdir(root)
    paths = {
        "a": "tests/fixtures/run_v2.json",
        "b": "tests/fixtures/run_v2_b.json",
        "dot_a": "./tests/fixtures/run_v2.json",
    }
    r = invoke(*[a.format(**paths) for a in args])
    one_line_error(r, "run_v2.json is given twice", "each run file counts once")


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{a}", "{copy}"],
        ["plot", "--out-dir", "{figs}", "{a}", "{b}", "{copy}"],
        ["compare", "{a}", "{copy}"],
        ["compare", "{a}", "{b}", "--with-b", "{copy}"],
    ],
)
@pytest.mark.parametrize("a, b", [("run_v2.json", "run_v2_b.json"), ("run_a.json", "run_b.json")])
def test_a_copy_of_a_run_file_under_another_name_is_refused(request, tmp_path, args, a, b):
    fixtures = request.config.rootpath / "tests/fixtures"
    paths = {"a": fixtures / a, "b": fixtures / b, "figs": tmp_path / "figs"}
    # re-indented, with a note of its own: still what that run measured (schema 1 and 2)
    data = json.loads(paths["a"].read_text())
    data["notes"] = [*data.get("notes", []), "copied for a colleague"]
    paths["copy"] = tmp_path / "renamed.json"
    paths["copy"].write_text(json.dumps(data))
    r = invoke(*[x.format(**paths) for x in args])
    one_line_error(r, f"{paths['a']} and {paths['copy']} are the same run", "counts once")
    assert not paths["figs"].exists()


def test_distinct_runs_are_not_taken_for_copies(request):
    from wisconsin.workloads import identity

    fixtures = request.config.rootpath / "tests/fixtures"
    runs = sorted(fixtures.glob("run_*.json"))
    assert len({identity(p) for p in runs} - {None}) == len(runs) >= 7
    # run_a and run_shm started in the same second on the same host, and are still two runs
    r = invoke("report", "--format", "json", fixtures / "run_a.json", fixtures / "run_shm.json")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["run", "--repeat", "2", "--min-reps", "5"], ["--min-reps:", "--repeat runs exactly"]),
        (["run", "--repeat", "2", "--target-ci", "0.1", "--max-reps", "9"],
         ["--max-reps, --target-ci:", "drop them"]),
        (["bench", "--repeat", "2", "--min-reps", "3"], ["--min-reps:", "--repeat"]),
        (["bench", "--workload", "debitcredit", "--preset", "vlx", "--mode", "shared-memory",
          "--cache", "warm", "--time-budget", "60", "--disk-budget", "1MB"],
         ["--preset, --mode, --cache, --time-budget, --disk-budget:", "not used by"]),
        (["info", "X", "--json", "--no-verify", "--deep"], ["--deep", "--no-verify", "give one"]),
        (["report", "X.json", "--force"], ["--force replaces", "give --out"]),
    ],
)  # fmt: skip
def test_a_flag_that_would_be_ignored_is_refused(tmp_path, args, fragments):
    """Issue 45: these were accepted and silently ignored; each is one line, exit 2, before
    anything is read or written."""
    result = CliRunner().invoke(cli, [*args, "--data", str(tmp_path / "d")] if args[0] in
                                ("run", "bench") else args, catch_exceptions=False)  # fmt: skip
    one_line_error(result, *fragments)
    assert not (tmp_path / "d").exists()


def test_generate_says_when_the_rows_do_not_divide_evenly(tmp_path):
    result = invoke("generate", "--kind", "F", "--rows", 1000, "--partitions", "3,2", "--data",
                    tmp_path, "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"{tmp_path / 'F3'}: 1,000 rows in 3 partitions of 333-334 rows (uneven: 1,000 / 3)" in (
        result.output
    )
    assert f"{tmp_path / 'F2'}: 1,000 rows in 2 partitions\n" in result.output
    last = result.output.splitlines()[-1]  # where the tables are and how to remove them
    assert last.startswith("disk: tables ") and last.endswith(f"`wisconsin remove {tmp_path}`")
