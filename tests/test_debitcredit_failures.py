"""DebitCredit under failure (issue 43, items 5 and 6): a partition server that dies is one
line naming it, its pid and its signal, exit 1; a full disk is one line naming it, the
acknowledgement log keeps whole records only, and no "audit: OK" follows."""

from __future__ import annotations

import errno
import os
import random
import re
import signal
import threading

import pytest
from click.testing import CliRunner

from harness import tmpfs
from wisconsin.atomic import WriteError
from wisconsin.cli import cli, exits
from wisconsin.oltp import acklog, failures, terminals
from wisconsin.workloads.debitcredit import audit, driver, schema, server
from wisconsin.workloads.debitcredit.coordinator import PartitionServers

TINY = schema.Sizing(branches_per_partition=2, tellers_per_branch=3, accounts_per_branch=50)
BENCH = ["bench", "--workload", "debitcredit", "--partitions", "2", "--branches", "2",
         "--step-seconds", "0.5", "--repeat", "1"]  # fmt: skip


PROGRESS = re.compile(r"\[\d\d:\d\d:\d\d\] ")  # a piped progress line


def _error_lines(output: str) -> list[str]:
    """The output without the schedule, the steps' lines and the piped progress lines."""
    return [
        line
        for line in output.splitlines()
        if not line.startswith(("schedule:", "P=")) and not PROGRESS.match(line)
    ]


def test_how_a_partition_ended_is_said_from_its_exit_status():
    assert failures.how_it_ended(-9) == "was killed by signal 9 (SIGKILL)"
    assert failures.how_it_ended(3) == "exited with exit code 3"
    assert failures.how_it_ended(None) == "stopped answering"


def test_kill_9_during_an_open_step_is_one_line_naming_partition_pid_signal(
    tmp_path, monkeypatch, capfd
):
    killed: list[int] = []
    real_run = PartitionServers.run

    def run(self, load):
        if load.mode == "open" and self.partitions == 2 and not killed:  # inside the step
            killed.append(self.pids[1])
            threading.Timer(0.2, os.kill, (self.pids[1], signal.SIGKILL)).start()
        return real_run(self, load)

    monkeypatch.setattr(PartitionServers, "run", run)
    args = [*BENCH, "--data", str(tmp_path / "d"), "--out", str(tmp_path / "out")]
    args[args.index("--partitions") + 1] = "1,2"
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    (line,) = _error_lines(res.output)
    assert line.startswith("Error: DebitCredit partition 1 ")
    assert f"(pid {killed[0]}) was killed by signal 9 (SIGKILL) during an open step" in line
    (partial,) = (tmp_path / "out").glob("*.json.partial")  # P=1, kept and named
    assert line.endswith(
        f"continue it with `wisconsin bench --workload debitcredit --resume {partial}`"
    )
    assert res.output.count("audit: OK") == 1  # P=1's, measured before the kill
    assert not isinstance(res.exception, BrokenPipeError)
    _, err = capfd.readouterr()  # the partition processes write to the real stderr
    assert "Traceback" not in err + res.output
    db = tmp_path / "d" / "debitcredit" / "dc2"
    repaired = CliRunner().invoke(cli, ["repair", str(db)])
    assert repaired.exit_code == 0, repaired.output
    info = CliRunner().invoke(cli, ["info", str(db)])
    assert info.exit_code == 0 and "acknowledged transactions present" in info.output


def test_a_dead_partition_is_named_when_the_next_step_is_sent(tmp_path):
    """Sending to a dead partition's pipe (BrokenPipeError) or reading it (EOFError,
    ConnectionResetError) is the same one line: never click's silent exit 1."""
    schema.build(tmp_path / "d", 1, TINY)
    with PartitionServers(tmp_path / "d", 1, TINY, tmp_path / "log") as servers:
        pid = servers.pids[0]
        os.kill(pid, signal.SIGKILL)
        servers.procs[0].join(10)
        with pytest.raises(failures.PartitionLost) as lost:
            servers.run(driver.Load("closed", 0.5, streams=1))
    assert str(lost.value).startswith(
        f"DebitCredit partition 0 (pid {pid}) was killed by signal 9 (SIGKILL) during a closed step"
    )
    assert exits.code_of(lost.value) == 1 and "\n" not in str(lost.value)  # a failed run


def test_a_partition_that_stops_answering_is_named_and_stopped(tmp_path):
    schema.build(tmp_path / "d", 1, TINY)
    with PartitionServers(tmp_path / "d", 1, TINY, tmp_path / "log") as servers:
        pid = servers.pids[0]
        os.kill(pid, signal.SIGSTOP)
        servers._send_all(("run", driver.Load("closed", 0.2, streams=1)), "a closed step")
        with pytest.raises(failures.PartitionLost) as lost:
            servers._gather(1.0, "a closed step")
        assert not servers.procs[0].is_alive()
    assert str(lost.value).startswith(
        f"DebitCredit partition 0 (pid {pid}) did not answer within 1 s during a closed step "
        "and was stopped with SIGKILL; the run stops"
    )


def _node(tmp_path):
    (path,) = schema.build(tmp_path / "d", 1, TINY)
    log_dir = schema.ack_log_dir(path.parent)
    log_dir.mkdir(exist_ok=True)
    return path, log_dir, server.Node(0, 1, TINY, path, log_dir / "driver-p000.log", b"k")


@pytest.mark.parametrize("cut", [3, 4])
def test_enospc_in_the_ack_log_stops_the_partition_and_leaves_whole_records(
    tmp_path, monkeypatch, cut
):
    """Write `cut` (3: the 2nd transaction's B line, not begun; 4: its C line, committed
    but not acknowledged) is short, and the rest of it fails with ENOSPC: the part written
    is cut off, the partition stops (node.fatal names the full disk and the log), the log
    takes nothing more, and the audit reads it consistently."""
    path, log_dir, node = _node(tmp_path)
    term = driver.Terminal(node, random.Random(1), remote_share=0.0)
    real_write, calls = os.write, []

    def write(fd, data):
        if fd != node.log.fd:
            return real_write(fd, data)
        calls.append(bytes(data))
        if len(calls) == cut:
            return real_write(fd, bytes(data[:3]))  # a short write ...
        if len(calls) == cut + 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # ... then the disk is full
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    tally = terminals.Tally()
    try:
        assert term.one(tally)  # B C: acknowledged
        assert not term.one(tally)
        assert node.stopping.is_set() and not term.one(tally)
    finally:
        term.close()
        node.close()
    assert len(calls) == cut + 1  # nothing was written after the failure
    log_path = log_dir / "driver-p000.log"
    assert node.fatal == (
        f"the disk is full: cannot write the acknowledgement log {log_path} "
        "(No space left on device)"
    )
    text = log_path.read_text()
    assert text.endswith("\n") and text.count("\n") == cut - 1  # the 3 bytes were cut off
    result = audit.check([path], log_dir)
    assert result.ok, result.problems
    assert (result.acknowledged, result.in_doubt_committed) == (1, cut - 3)
    assert result.history_rows == 1 + (cut - 3)
    assert tally.failed == 2


def test_a_cut_last_line_is_no_record_and_damage_is_named(tmp_path):
    log = tmp_path / "driver-p000.log"
    log.write_text("B 1 7 0 5 -1\nC 1\nB 2 7 0 5 -1\nC 2")  # "C 2" unfinished: not acknowledged
    assert driver.read_records(log) == [("B", 1), ("C", 1), ("B", 2)]
    log.write_text("B 1 7 0 5 -1\nC 1B 2 7 0 5 -1\nC 2\n")  # a cut record inside: damage
    with pytest.raises(acklog.LogDamaged, match=r"line 2 is not a log record: 'C 1B 2 7"):
        driver.read_records(log)


def test_a_full_disk_is_named_as_such_in_one_line():
    with (
        pytest.raises(failures.RunFailed) as full,
        failures.naming_storage("P=1: building the database in /d"),
    ):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/d/part-000.duckdb")
    assert str(full.value) == (
        "P=1: building the database in /d: the disk is full: cannot write the database "
        "/d/part-000.duckdb (No space left on device)"
    )
    with pytest.raises(failures.RunFailed) as full, failures.naming_storage("saving the run file"):
        raise WriteError("cannot write /o/r.json: No space left on device", "/o/r.json", 28)
    assert str(full.value) == (
        "saving the run file: the disk is full: cannot write /o/r.json: No space left on device"
    )
    inner = failures.RunFailed("partition 0 failed: the disk is full: ...")
    with pytest.raises(failures.RunFailed) as kept, failures.naming_storage("saving"):
        raise inner
    assert kept.value is inner


def test_a_commit_the_disk_refused_is_not_retried_as_a_conflict():
    import duckdb

    full = duckdb.TransactionException(
        'TransactionContext Error: Failed to commit: Could not write file "/x/part-000.duckdb.wal"'
        ": No space left on device"
    )
    assert not driver.transaction.is_conflict(full)
    assert failures.is_storage_failure(full)
    assert failures.storage_line(full, "the database") == (
        "the disk is full: cannot write the database /x/part-000.duckdb.wal "
        "(No space left on device)"
    )
    assert driver.transaction.is_conflict(
        duckdb.TransactionException("TransactionContext Error: Conflict on update!")
    )


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MB tmpfs, the bench's whole disk."""
    with tmpfs.mounted(tmp_path / "small", "64m") as mnt:
        yield mnt


def test_a_disk_filled_during_the_bench_is_one_line_and_no_audit_ok(small_disk, monkeypatch, capfd):
    """The disk fills after the warm-up: the step cannot be measured, the bench says so in
    one line naming the full disk (exit 1), and no audit line follows; freed and repaired,
    every acknowledged transaction is there."""
    from wisconsin.workloads.debitcredit import pipeline

    real = pipeline._warm_up
    filler = small_disk / "filler"

    def warm_up(*args, **kw):
        done = real(*args, **kw)
        tmpfs.fill(filler)
        return done

    monkeypatch.setattr(pipeline, "_warm_up", warm_up)
    args = [*BENCH, "--data", str(small_disk / "d"), "--out", str(small_disk / "out")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    lines = _error_lines(res.output)  # the whole output if not one (it failed so under load)
    assert len(lines) == 1, res.output
    (line,) = lines
    assert "the disk is full: cannot write the " in line and "(pid " in line, line
    assert "audit" not in res.output
    _, err = capfd.readouterr()
    assert "Traceback" not in err + res.output
    filler.unlink()
    db = small_disk / "d" / "debitcredit" / "dc2"
    assert CliRunner().invoke(cli, ["repair", str(db)]).exit_code == 0
    info = CliRunner().invoke(cli, ["info", str(db)])
    assert info.exit_code == 0 and "acknowledged transactions present" in info.output
