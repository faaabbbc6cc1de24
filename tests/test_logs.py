"""Where diagnostic logs go: a private directory in the command's output directory, removed
when nothing was logged, never a guessable path in $TMPDIR (issue 29, 'Where logs go')."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from harness.exits import completed
from wisconsin.cluster.logs import LOG_DIR_PREFIX, OWNER, DaskLogs, sweep
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
    assert completed(res), res.stderr  # 1 round: its audit fails (exit 1)
    assert [p.name for p in out.iterdir() if p.name.startswith(LOG_DIR_PREFIX)] == []
    leftovers = [p.name for p in tmp.iterdir() if "wisconsin" in p.name or "dask" in p.name]
    assert leftovers == []


def test_a_successful_command_discards_even_a_non_empty_log(tmp_path):
    logs = DaskLogs(directory=tmp_path)
    logs.start()
    logs.path.write_text("a warning Dask printed\n")
    logs.stop()
    assert logs.path.is_file()  # kept by stop(): the command may still fail
    logs.discard()
    assert not any(p.name.startswith(LOG_DIR_PREFIX) for p in tmp_path.iterdir())


def test_a_failed_command_names_the_logs_it_kept_in_its_last_line(tmp_path):
    from wisconsin.cli.app import _naming_kept_logs
    from wisconsin.cluster.logs import forget

    forget()  # as the CLI does when a command starts
    logs = DaskLogs(directory=tmp_path)
    logs.start()
    logs.path.write_text("distributed.worker ERROR something\n")
    logs.stop()
    try:
        line = _naming_kept_logs("Error: the run failed")
        assert line == f"Error: the run failed; logs kept in {logs.path}"
        # a line that already names them is left as it is
        assert _naming_kept_logs(f"x; Dask logs: {logs.path}") == f"x; Dask logs: {logs.path}"
    finally:
        logs.discard()
    assert _naming_kept_logs("Error: the run failed") == "Error: the run failed"


def test_cluster_clients_keep_their_logs_in_the_data_directory_not_tmpdir(tmp_path):
    """generate, info and repair --cluster are clients of a cluster: their Dask logging goes
    to a private directory in the data directory, removed unless something was logged."""
    data, tmp = tmp_path / "data", tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    for args in (
        ["generate", "--kind", "F", "--rows", "1000", "--partitions", "2", "--data", str(data)],
        ["info", str(data / "F2")],
        ["repair", str(data / "F2")],
    ):
        res = subprocess.run(
            [sys.executable, "-m", "wisconsin", *args, "--cluster", "127.0.0.1:9"],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert res.returncode == 2, (args, res.stderr)
        assert "Traceback" not in res.stderr and res.stderr.strip().count("\n") == 0
        leftovers = [p for p in data.rglob(f"{LOG_DIR_PREFIX}*")] if data.exists() else []
        assert leftovers == [], args
        assert list(tmp.iterdir()) == [], args


def test_a_restart_keeps_one_log_directory_and_success_removes_it(tmp_path):
    """Fresh workers per block restart the engine: a log kept by one block's stop() is
    written on by the next start() and removed with it when the run succeeds."""
    logs = DaskLogs(directory=tmp_path)
    logs.start()
    logs.path.write_text("block 1 said something\n")
    logs.stop()
    first = logs.path
    logs.start()
    assert logs.path == first
    logs.stop()
    logs.discard()
    assert not any(p.name.startswith(LOG_DIR_PREFIX) for p in tmp_path.iterdir())


# --------------------------------------------------------------------------- killed commands


def _log_dir(where, name, owner):
    """A log directory as a command left it: dask.log, scratch space, and its owner record
    (None: none, as in a kept log)."""
    import json

    d = where / f"{LOG_DIR_PREFIX}20261127T000000-{name}"
    (d / "scratch" / "worker-1").mkdir(parents=True)
    (d / "dask.log").write_text("distributed.nanny INFO started\n")
    if owner is not None:
        (d / OWNER).write_text(json.dumps(owner))
    return d


def _dead_process():
    """(pid, start time) of a process that has exited and been reaped."""
    import psutil

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    started = psutil.Process(proc.pid).create_time()
    proc.kill()
    proc.wait()
    return proc.pid, started


def _owner(pid, started, host=None):
    import socket

    return {"pid": pid, "host": host or socket.gethostname(), "process_started": started,
            "command": "wisconsin run --data D", "created_utc": "2026-11-27T00:00:00Z"}  # fmt: skip


def test_a_log_directory_records_its_owner_until_it_is_kept(tmp_path):
    import json

    import psutil

    logs = DaskLogs(directory=tmp_path)
    logs.start()
    owner = json.loads((logs.path.parent / OWNER).read_text())
    me = psutil.Process()
    assert (owner["pid"], owner["process_started"]) == (me.pid, me.create_time())
    assert sweep(tmp_path) == [] and logs.path.parent.is_dir()  # its maker still runs
    logs.path.write_text("something to keep\n")
    logs.stop()
    assert not (logs.path.parent / OWNER).exists()  # kept for the user: never swept
    logs.start()  # a restart uses it again
    assert (logs.path.parent / OWNER).exists()
    logs.stop()
    logs.discard()


def test_sweep_removes_only_directories_whose_owner_is_provably_gone(tmp_path):
    import psutil

    pid, started = _dead_process()
    me = psutil.Process()
    dead = _log_dir(tmp_path, "dead", _owner(pid, started))
    reused = _log_dir(tmp_path, "reused", _owner(me.pid, me.create_time() - 3600))
    live = _log_dir(tmp_path, "live", _owner(me.pid, me.create_time()))
    kept = _log_dir(tmp_path, "kept", None)
    elsewhere = _log_dir(tmp_path, "elsewhere", _owner(pid, started, host="another-host"))
    garbled = _log_dir(tmp_path, "garbled", None)
    (garbled / OWNER).write_text('{"pid": "1"')
    mine = tmp_path / "notes"
    mine.mkdir()
    lines = sweep(tmp_path)
    assert len(lines) == 2, lines
    assert str(dead) in lines[0] and f"pid {pid}" in lines[0] and "wisconsin run" in lines[0]
    assert str(reused) in lines[1]
    assert not dead.exists() and not reused.exists()
    assert all(d.is_dir() for d in (live, kept, elsewhere, garbled, mine))
    assert (live / "dask.log").is_file() and (kept / "scratch" / "worker-1").is_dir()


def test_run_names_and_removes_a_killed_runs_log_directory_and_keeps_a_live_ones(tmp_path):
    import psutil
    from click.testing import CliRunner

    from wisconsin.builds import build_tables
    from wisconsin.cli import cli

    data, out = tmp_path / "data", tmp_path / "runs"
    build_tables(data, [TableSpec("F", 2000, 1, 7)], jobs=1)
    out.mkdir()
    pid, started = _dead_process()
    me = psutil.Process()
    stale = _log_dir(out, "stale", _owner(pid, started))
    live = _log_dir(out, "live", _owner(me.pid, me.create_time()))
    res = CliRunner().invoke(
        cli,
        ["run", "--data", str(data), "--tables", "F", "--partitions", "1", "--mode",
         "shared-memory", "--repeat", "1", "--queries", "average", "--quiet", "--out", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert completed(res), res.output
    said = [line for line in res.stderr.splitlines() if LOG_DIR_PREFIX in line]
    assert (
        said == [line for line in said if line.startswith(f"removed {stale}:")] and len(said) == 1
    )
    assert f"pid {pid}" in said[0]
    assert not stale.exists()
    assert (live / "dask.log").is_file()
