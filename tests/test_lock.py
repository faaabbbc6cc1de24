"""One run per data directory: real second processes, a SIGKILLed holder, re-entrancy."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.exits import completed
from wisconsin.builds import build_tables
from wisconsin.store import TableSpec, lock

HOLDER = """
import sys, time
from wisconsin.store import lock
with lock.hold(sys.argv[1], shared=len(sys.argv) > 2):
    print("held", flush=True)
    time.sleep(120)
"""


def _wisconsin(*args: str) -> list[str]:
    return [sys.executable, "-m", "wisconsin", *map(str, args)]


def _wait_for_holder(path: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        if path.is_file() and path.read_text().strip():
            return
        time.sleep(0.05)
    raise TimeoutError(f"nobody took {path}")


def _start_holder(data: Path, shared: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-c", HOLDER, str(data), *(["shared"] if shared else [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"held"
    return proc


def test_a_second_concurrent_run_is_refused_with_one_line_naming_the_first(tmp_path):
    data = tmp_path / "data"
    build_tables(data, [TableSpec("F", 2000, 2, 7)], jobs=1)
    first = subprocess.Popen(
        _wisconsin(
            "run",
            "--data",
            data,
            "--tables",
            "F",
            "--mode",
            "shared-memory",
            "--repeat",
            400,
            "--quiet",
            "--out",
            tmp_path / "a.json",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_holder(data / lock.LOCK_FILE, first)
        second = subprocess.run(
            _wisconsin("run", "--data", data, "--out", tmp_path / "b.json"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert first.poll() is None, first.stderr.read()  # it was still running
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert "is in use by another wisconsin process" in lines[0]
    assert f"pid {first.pid} " in lines[0]
    assert "wisconsin run --data" in lines[0] or "__main__.py run --data" in lines[0]
    assert "started 20" in lines[0]
    assert not (tmp_path / "b.json").exists()
    # The first run was SIGKILLed (first.kill()): its lock went with it.
    third = subprocess.run(
        _wisconsin("run", "--data", data, "--tables", "F", "--mode", "shared-memory",
                   "--repeat", 1, "--queries", "average", "--quiet", "--out", tmp_path / "c.json"),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert completed(third), third.stderr  # 1 round: its audit fails (exit 1)
    assert (tmp_path / "c.json").is_file()


def test_generate_is_refused_too_and_the_lock_frees_when_the_holder_exits(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    holder = _start_holder(data)
    try:
        res = subprocess.run(
            _wisconsin("generate", "--data", data, "--preset", "tiny", "--quiet"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert f"pid {holder.pid} " in res.stderr
        assert not any(p.name.startswith(("F", "G")) for p in data.iterdir())  # nothing built
    finally:
        holder.terminate()
        holder.wait()
    with lock.hold(data):
        pass


def test_a_sigkilled_holder_does_not_leave_the_lock_stuck(tmp_path):
    holder = _start_holder(tmp_path)
    with pytest.raises(lock.DataDirBusy, match=f"pid {holder.pid} on "), lock.hold(tmp_path):
        pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert (tmp_path / lock.LOCK_FILE).read_text().strip()  # its description is left behind
    with lock.hold(tmp_path):  # ... but not its lock
        assert str(os.getpid()) in (tmp_path / lock.LOCK_FILE).read_text()
    assert not (tmp_path / lock.LOCK_FILE).exists()  # released: the file goes with the lock


def test_reentrant_in_one_process_and_released_after_an_error(tmp_path):
    calls = []

    @lock.locked("data_dir")
    def inner(data_dir):
        calls.append("inner")

    @lock.locked("data_dir", create=True)
    def outer(data_dir, fail=False):
        inner(data_dir)  # bench: generate then run, in one process
        if fail:
            raise RuntimeError("boom")

    outer(tmp_path / "d")
    with pytest.raises(RuntimeError):
        outer(tmp_path / "d", fail=True)
    assert calls == ["inner", "inner"]
    proc = subprocess.run(
        [sys.executable, "-c", HOLDER.replace("time.sleep(120)", "pass"), tmp_path / "d"],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0 and b"held" in proc.stdout  # another process gets it now


def test_a_missing_directory_is_not_created_by_a_run(tmp_path):
    with lock.hold(tmp_path / "nope"):
        pass
    assert not (tmp_path / "nope").exists()


SHARED_HOLDER = HOLDER.replace("shared=len(sys.argv) > 2", "shared=True")


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    data = tmp_path_factory.mktemp("locked") / "data"
    build_tables(data, [TableSpec("F", 2000, 2, 7)], jobs=1)
    return data


@pytest.mark.parametrize(
    "args",
    [("repair", "{t}", "--quiet"), ("info", "{t}"), ("info", "--deep", "{t}"), ("export", "{t}")],
)
def test_repair_info_and_export_are_refused_while_a_run_holds_the_data(small_data, args):
    # A repair (or a reader's read-only connection) would make the run's update fail to
    # open its partition: "IO Error: Could not set lock on file".
    from click.testing import CliRunner

    from wisconsin.cli import cli

    holder = _start_holder(small_data)
    try:
        argv = [a.format(t=small_data / "F2") for a in args]
        if argv[0] == "export":
            argv += ["--out", str(small_data.parent / "parquet")]
        res = CliRunner().invoke(cli, argv)
    finally:
        holder.terminate()
        holder.wait()
    assert res.exit_code == 2, res.output
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "is in use by another wisconsin process" in res.stderr
    assert f"pid {holder.pid} " in res.stderr
    assert not (small_data.parent / "parquet").exists()


def test_readers_share_the_lock_but_keep_writers_out(small_data):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    proc = subprocess.Popen(
        [sys.executable, "-c", SHARED_HOLDER, str(small_data)], stdout=subprocess.PIPE
    )
    assert proc.stdout.readline().strip() == b"held"
    try:
        info = CliRunner().invoke(cli, ["info", str(small_data / "F2")])
        repair = CliRunner().invoke(cli, ["repair", str(small_data / "F2"), "--quiet"])
        with pytest.raises(lock.DataDirBusy, match="reading its tables"), lock.hold(small_data):
            pass
    finally:
        proc.terminate()
        proc.wait()
    assert info.exit_code == 0, info.output
    assert repair.exit_code == 2 and "in use by another wisconsin process" in repair.stderr
    assert CliRunner().invoke(cli, ["repair", str(small_data / "F2"), "--quiet"]).exit_code == 0


def test_a_table_shared_through_a_symlink_is_held_by_one_run(tmp_path):
    """The lock was per data directory: `run --data A` and `run --data B` with B/F2 -> A/F2
    ran at once and corrupted both partitions. A table's own lock lives in its real
    directory, so the second run is refused in one line, naming the real path."""
    a, b = tmp_path / "a", tmp_path / "b"
    build_tables(a, [TableSpec("F", 2000, 2, 7)], jobs=1)
    b.mkdir()
    (b / "F2").symlink_to(a / "F2")
    first = subprocess.Popen(
        _wisconsin("run", "--data", a, "--tables", "F", "--mode", "shared-memory",
                   "--repeat", 400, "--quiet", "--out", tmp_path / "a.json"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait_for_holder(a / "F2" / lock.LOCK_FILE, first)
        refused = [
            subprocess.run(_wisconsin(*args), capture_output=True, text=True, timeout=120)
            for args in (
                ("run", "--data", b, "--tables", "F", "--mode", "shared-memory", "--repeat", 1,
                 "--out", tmp_path / "b.json"),
                ("repair", b / "F2"),
                ("info", b / "F2", "--deep"),
                ("generate", "--data", b, "--kind", "F", "--rows", 2000, "--partitions", 2,
                 "--seed", 7),
            )
        ]  # fmt: skip
        assert first.poll() is None, first.stderr.read()  # it was still running
    finally:
        first.kill()
        first.wait()
    for second in refused:
        assert second.returncode == 2, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert f"{(a / 'F2').resolve()} is in use by another wisconsin process" in line
        assert f"pid {first.pid} " in line
    assert not (tmp_path / "b.json").exists()
    # The first run was killed, possibly inside its 1% update: `repair` settles that (a
    # no-op otherwise), and then the table must be exactly as generated.
    repair = subprocess.run(_wisconsin("repair", b / "F2"), capture_output=True, text=True)
    assert repair.returncode == 0, repair.stdout + repair.stderr
    info = subprocess.run(_wisconsin("info", b / "F2", "--deep"), capture_output=True, text=True)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "update pending" not in info.stdout


def test_the_lock_file_exists_only_while_held(tmp_path):
    """Released, the lock file is removed (a refused `info docs` or `run --data EMPTY` once
    left one behind); a directory the hold created and nothing wrote to goes too."""
    with lock.hold(tmp_path, shared=True), lock.hold(tmp_path / "x", create=True):
        assert (tmp_path / lock.LOCK_FILE).exists()
        assert (tmp_path / "x" / lock.LOCK_FILE).exists()
    assert os.listdir(tmp_path) == []
    with lock.hold(tmp_path / "a" / "b", create=True):
        (tmp_path / "a" / "b" / "table").mkdir()  # the command wrote something: kept
    assert os.listdir(tmp_path / "a" / "b") == ["table"]


def test_a_reader_leaves_the_file_to_the_last_holder(tmp_path):
    holder = _start_holder(tmp_path, shared=True)
    with lock.hold(tmp_path, shared=True):
        pass
    assert (tmp_path / lock.LOCK_FILE).exists()  # the other reader still holds it
    with pytest.raises(lock.DataDirBusy), lock.hold(tmp_path):
        pass
    holder.kill()
    holder.wait()


def test_a_lock_taken_on_a_file_removed_meanwhile_is_taken_again(tmp_path, monkeypatch):
    """Open, then flock: a holder releasing between the two removes the file we opened. The
    flock on that orphan would lock nothing a later command sees: the hold retries."""
    real_flock, removed = lock.fcntl.flock, []

    def flock(fd, op):
        if not removed:
            removed.append(1)
            os.unlink(tmp_path / lock.LOCK_FILE)  # as a releasing holder does
        return real_flock(fd, op)

    monkeypatch.setattr(lock.fcntl, "flock", flock)
    with lock.hold(tmp_path):
        fd = os.open(tmp_path / lock.LOCK_FILE, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # the file on disk is the one we hold
                real_flock(fd, lock.fcntl.LOCK_SH | lock.fcntl.LOCK_NB)
        finally:
            os.close(fd)
