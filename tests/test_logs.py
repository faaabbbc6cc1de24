"""Where diagnostic logs go: a private directory in the command's output directory, removed
when nothing was logged, never a guessable path in $TMPDIR (issue 29, 'Where logs go')."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys

import pytest

from wisconsin.cluster.logs import LOG_DIR_PREFIX, DaskLogs
from wisconsin.store import TableSpec


def test_the_log_directory_is_private_fresh_and_removed_when_empty(tmp_path):
    logs = DaskLogs(directory=tmp_path)
    logs.start()
    try:
        d = logs.path.parent
        assert d.parent == tmp_path and d.name.startswith(LOG_DIR_PREFIX)
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    finally:
        logs.stop()
    assert not d.exists()  # nothing logged: nothing left


def test_a_log_named_by_an_error_is_kept_and_a_planted_symlink_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    logs = DaskLogs(directory=tmp_path)
    logs.start()
    try:
        # The old path was $TMPDIR/wisconsin-dask-<stamp>-<pid>.log: guessable, so a symlink
        # planted there was written through. The new directory did not exist a moment ago.
        line = logs.where()
    finally:
        logs.stop()
    assert line == f"Dask logs: {logs.path}" and logs.path.is_file()
    assert victim.read_text() == "mine\n"


def test_a_shared_nothing_run_leaves_nothing_in_tmpdir_or_beside_its_run_file(tmp_path):
    from wisconsin.builds import build_tables

    data, tmp, out = tmp_path / "data", tmp_path / "tmpdir", tmp_path / "runs"
    tmp.mkdir()
    build_tables(data, [TableSpec("F", 2000, 2, 7)], jobs=1)
    res = subprocess.run(
        [sys.executable, "-m", "wisconsin", "run", "--data", str(data), "--tables", "F",
         "--mode", "shared-nothing", "--repeat", "1", "--queries", "average", "--quiet",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp)},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [p.name for p in out.iterdir() if p.name.startswith(LOG_DIR_PREFIX)] == []
    leftovers = [p.name for p in tmp.iterdir() if "wisconsin" in p.name or "dask" in p.name]
    assert leftovers == []


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs filled to the last block (root only: CI runs as root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * 4096)
        finally:
            os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_run_onto_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, full_disk):
    """The journal's first record hit ENOSPC: a traceback and a 0-byte .journal were left."""
    from click.testing import CliRunner

    from wisconsin.builds import build_tables
    from wisconsin.cli import cli

    data = tmp_path / "data"
    build_tables(data, [TableSpec("F", 2000, 2, 7)], jobs=1)
    out = full_disk / "runs"
    res = CliRunner().invoke(cli, [
        "run", "--data", str(data), "--tables", "F", "--mode", "shared-memory", "--repeat", "1",
        "--queries", "average", "--quiet", "--out", str(out),
    ])  # fmt: skip
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert line.startswith(f"Error: cannot write the run's journal {out}/")
    assert line.endswith(": No space left on device")
    assert sorted(p.name for p in full_disk.rglob("*")) in (["filler"], ["filler", "runs"])
    deep = CliRunner().invoke(cli, ["info", str(data / "F2"), "--deep"])
    assert deep.exit_code == 0 and "verified" in deep.output


def test_generate_onto_a_full_disk_is_one_line(full_disk):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    res = CliRunner().invoke(cli, [
        "generate", "--data", str(full_disk / "data"), "--kind", "F", "--rows", "20000",
        "--partitions", "2", "--quiet",
    ])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_a_successful_command_discards_even_a_non_empty_log(tmp_path):
    logs = DaskLogs(directory=tmp_path)
    logs.start()
    logs.path.write_text("a warning Dask printed\n")
    logs.stop()
    assert logs.path.is_file()  # kept by stop(): the command may still fail
    logs.discard()
    assert not any(p.name.startswith(LOG_DIR_PREFIX) for p in tmp_path.iterdir())
