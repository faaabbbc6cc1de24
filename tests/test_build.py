"""Building tables when things go wrong: a full disk."""

import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from wisconsin.cli import cli
from wisconsin.lock import LOCK_FILE


@pytest.fixture
def small_disk(tmp_path):
    """An 8 MB tmpfs: an honest full disk (needs root and mount)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk is simulated with a tmpfs mount, which needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_size_that_does_not_fit_is_refused_before_anything_is_written(small_disk):
    data = small_disk / "data"
    result = CliRunner().invoke(
        cli,
        ["generate", "--kind", "F", "--rows", "100000", "--partitions", "2"]
        + ["--data", str(data), "--quiet"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs ~" in lines[0] and "free" in lines[0], result.output
    assert not [p for p in data.rglob("*") if p.name != LOCK_FILE]


def test_disk_full_during_generate_is_one_line_and_leaves_no_temp_files(small_disk, monkeypatch):
    # The cost estimate would refuse this size up front (test above); make it believe the
    # disk is large so the build really runs out of space while writing.
    from collections import namedtuple

    from wisconsin import cost

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(cost.shutil, "disk_usage", lambda _p: usage(2**40, 0, 2**40))
    data = small_disk / "data"
    result = CliRunner().invoke(
        cli,
        ["generate", "--kind", "F", "--rows", "100000", "--partitions", "2"]
        + ["--data", str(data), "--quiet"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "no space left on the device" in lines[0] and "F2 partition" in lines[0]
    # the data directory's lock file is the only other thing (it stays, unlocked: lock.py)
    left = sorted(p.name for p in data.rglob("*") if p.name != LOCK_FILE)
    assert left == ["F2"], left  # no half-written partition, WAL or temp JSON file


def test_builders_die_with_a_killed_generate(tmp_path):
    """SIGKILL of generate (no cleanup runs): its builder processes die too, instead of
    writing on, as orphans, into a directory the next generate builds in."""
    import sys
    import time

    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", "generate", "--kind", "F", "--rows", "4000000",
         "--partitions", "2", "--jobs", "2", "--data", str(tmp_path), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "F2").glob("*.tmp")):  # builders are writing
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        builders = psutil.Process(proc.pid).children(recursive=True)
        assert builders
    finally:
        proc.kill()
        proc.wait()
    _gone, alive = psutil.wait_procs(builders, timeout=10)
    for p in alive:
        p.kill()
    assert alive == []
