"""Refusals name their cause and a fix that works; options are echoed as typed; nothing is
written before it is announced (issue 32)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from harness.exits import completed
from wisconsin.analysis import schedule
from wisconsin.cli import cli, options
from wisconsin.runfiles import runfile
from wisconsin.store import tables_in


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("messages") / "data"
    for kind, rows in (("F", "3000"), ("G", "1000")):
        args = ["generate", "--kind", kind, "--rows", rows, "--partitions", "1,2", "--data", d]
        r = invoke(*args, "--quiet")
        assert r.exit_code == 0, r.output
    return d


def test_run_on_a_table_directory_advises_its_data_directory(data):
    line = one_line(invoke("run", "--data", data / "F2", "--quiet"))
    assert line == (
        f"Error: {data / 'F2'} is a table, not a data directory: give the directory that holds "
        f"it, --data {data} (with --tables F --partitions 2 for this table alone)"
    )
    assert "F2" in tables_in(data)  # the advice works: the table is found there


def test_run_while_a_build_holds_the_data_directory_names_the_build(tmp_path):
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from wisconsin.store import lock\n"
            "with lock.hold(sys.argv[1], create=True):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(60)\n",
            str(data),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        line = one_line(invoke("run", "--data", data, "--quiet"))
    finally:
        holder.kill()
        holder.wait()
    assert line.startswith(f"Error: no complete tables in {data} yet: {data} is in use by ")
    assert f"pid {holder.pid} on " in line and ", started 20" in line
    assert "wait for it to finish" in line and "run `wisconsin generate" not in line
    # nothing holds it now: the old advice is right again
    assert one_line(invoke("run", "--data", data, "--quiet")) == (
        f"Error: no tables in {data}: run `wisconsin generate --data {data}` first"
    )


def test_cold_cache_on_a_file_system_in_memory_is_refused_up_front(tmp_path, monkeypatch):
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/vda / ext4 rw 0 0\n"
        f"tmpfs {tmp_path / 'shm'} tmpfs rw 0 0\n"
        f"/dev/vdb {tmp_path / 'shm' / 'disk'} ext4 rw 0 0\n"
    )
    monkeypatch.setattr(options, "MOUNTS", str(mounts))
    assert options.file_system(str(tmp_path / "shm" / "d" / "new")) == "tmpfs"
    assert options.file_system(str(tmp_path / "shm" / "disk" / "d")) == "ext4"  # nested
    assert options.file_system(str(tmp_path / "x")) == "ext4"
    data = tmp_path / "shm" / "data"
    for cmd in (["run"], ["bench", "--preset", "tiny", "--out", tmp_path / "out"]):
        line = one_line(invoke(*cmd, "--data", data, "--quiet"))
        assert line == (
            f"Error: --cache cold needs tables on a disk: {data} is on tmpfs, which keeps files "
            "in memory and cannot evict them, so no read would come from storage; give a "
            "--data on a disk, or --cache warm"
        )
    assert not data.exists() and not (tmp_path / "out").exists()  # refused before any work
    # warm needs no eviction: refused later, for want of tables, not for the file system
    assert "no tables in" in one_line(invoke("run", "--data", data, "--cache", "warm"))


def test_real_tmpfs_is_recognised():
    with open("/proc/self/mounts") as fh:
        shm = [ln.split()[1] for ln in fh if ln.split()[2:3] == ["tmpfs"]]
    if not shm:
        pytest.skip("no tmpfs mounted here")
    assert options.file_system(shm[0] + "/x/y") == "tmpfs"


def test_repeat_is_echoed_as_typed(data, tmp_path):
    out = tmp_path / "runs"
    r = invoke("run", "--data", data, "--mode", "shared-memory", "--repeat", "1", "--out", out)
    assert completed(r), r.output  # 1 round: its audit fails (exit 1)
    (path,) = out.glob("*.json")
    assert runfile.load(path).stop_reason == "max reps: 1 rounds (--repeat 1)"
    args = dict(
        min_reps=1, max_reps=2, target_ci=0.1, elapsed_s=0, next_round_s=0, time_budget_s=None
    )
    assert schedule.stop_reason([], 2, **args) == "max reps: 2 rounds (--max-reps 2)"
