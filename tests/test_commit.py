"""The cross-partition update is all-or-nothing: injected failures and a killed worker."""

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from wisconsin.builds import build_tables
from wisconsin.cluster import scheduler_identity
from wisconsin.engines import commit
from wisconsin.engines.base import EngineConfig, Fault
from wisconsin.measure.runner import make_engine
from wisconsin.store import TableSpec, read_manifest
from wisconsin.store.check import verify_partition
from wisconsin.store.expect import expected_answers
from wisconsin.workloads.wisconsin import queries

N = 2000


@pytest.fixture
def table(tmp_path):
    build_tables(tmp_path, [TableSpec("F", N, 3, 11)], jobs=2)
    return tmp_path / "F3"


def _four_sums(engine):
    got = engine.query("SELECT sum(four)::BIGINT FROM wisconsin")
    return {p: rows[0][0] for p, rows in got.items()}


def _open(mode, table, fault=None):
    engine = make_engine(mode, EngineConfig(fault=fault, timeout_s=60))
    m = read_manifest(table)
    engine.start(m.partitions)
    engine.open_table(m, str(table))
    return engine, m


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_failure_in_prepare_leaves_every_partition_unchanged(table, mode):
    exp = expected_answers(read_manifest(table))
    engine, m = _open(mode, table, Fault(part=1, phase="prepare"))
    try:
        with pytest.raises(commit.CommitAborted, match="rolled back on every partition"):
            engine.update("t1", engine.statements(queries.get("update"), m, "full-row"))
        assert _four_sums(engine) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}
        assert commit.DecisionLog(table).pending() == []
    finally:
        engine.stop()


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_failure_in_commit_is_settled_before_the_table_is_used(table, mode):
    """The update is decided but partition 2 fails to commit: the next open undoes it
    where it committed (partitions 0, 1), exactly once, and prunes the markers."""
    exp = expected_answers(read_manifest(table))
    generated = {p: pe.sum_four for p, pe in enumerate(exp.parts)}
    engine, m = _open(mode, table, Fault(part=2, phase="commit"))
    undo = engine.statements(queries.get("update"), m, "full-row", delta=-117)
    try:
        with (
            pytest.raises(commit.CommitIncomplete),
            commit.update_pair(table, "t2", "t2undo", undo),
        ):
            engine.update("t2", engine.statements(queries.get("update"), m, "full-row"))
        assert [t for t, _ in commit.DecisionLog(table).pending()] == ["t2"]
    finally:
        engine.stop()
    engine, m = _open(mode, table)
    try:
        assert _four_sums(engine) == generated
        assert commit.DecisionLog(table).is_empty()
        engine.close_table()
        engine.open_table(m, str(table))
        assert _four_sums(engine) == generated
        # once recovered, commit markers are pruned: they do not pile up run after run
        markers = engine.query("SELECT count(*) FROM wisconsin_txn")
        assert {p: rows[0][0] for p, rows in markers.items()} == dict.fromkeys(range(3), 0)
    finally:
        engine.stop()


def test_killed_worker_during_update_changes_nothing(table, capfd):
    exp = expected_answers(read_manifest(table))
    engine, m = _open(
        "shared-nothing", table, Fault(part=1, phase="prepare", action="sleep", seconds=30)
    )
    pids = engine.client.run(os.getpid)
    victim = next(
        pid
        for addr, pid in pids.items()
        if scheduler_identity(engine.client)["workers"][addr]["name"] == "part1"
    )

    def kill():
        time.sleep(1.5)  # partitions 0 and 2 have prepared; part1 is inside its sleep
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(commit.CommitAborted, match="partition 1") as lost:
            engine.update("t3", engine.statements(queries.get("update"), m, "full-row"))
        assert time.monotonic() - t0 < 25, "a dead worker must fail the update promptly"
    finally:
        killer.join()
        engine.stop()
    # one line naming the log file; Dask's own lines went there, not to the terminal
    message = str(lost.value)
    assert "\n" not in message and f"Dask logs: {engine.logs.path}" in message
    out, err = capfd.readouterr()
    assert "distributed" not in out + err and "Traceback" not in out + err, out + err
    engine, m = _open("shared-nothing", table)
    try:
        assert _four_sums(engine) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}
    finally:
        engine.stop()


# ------------------------------------------------------------------ update/undo pairs

CRASH_POINTS = [
    "update-before-decision",
    "update-after-decision",
    "update-partial-commit",
    "between-update-and-undo",
    "undo-before-decision",
    "undo-after-decision",
    "undo-partial-commit",
    "after-undo",
]


def _assert_generated(table):
    """Every partition, both tables, holds exactly its generated rows (full digest)."""
    m = read_manifest(table)
    for p in m.parts:
        for name in (m.table, m.copy_table):
            assert verify_partition(str(table / p.file), dataclasses.asdict(p), name) == []
    assert commit.DecisionLog(table).is_empty()


@pytest.mark.parametrize(
    "mode", ["shared-memory", pytest.param("shared-nothing", marks=pytest.mark.slow)]
)
@pytest.mark.parametrize("point", CRASH_POINTS)
def test_kill_9_anywhere_in_update_and_undo_leaves_the_generated_table(table, mode, point):
    """A real SIGKILL of the whole process group (coordinator and workers) at each point
    of the protocol; the next open restores and verifies the generated state."""
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("crash_child.py")), mode, str(table), point],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    guard = threading.Timer(180, os.killpg, (child.pid, signal.SIGKILL))  # never hang
    guard.start()
    try:
        line = child.stdout.readline()
        assert line.strip() == f"HALT {point}", line
        if point.endswith("partial-commit"):
            # wait until the partitions that do not stall have committed
            txid = "uupdate" if point.startswith("update") else "uundo"
            deadline = time.monotonic() + 60
            while not any(table.glob(f"_txlog/{txid}*.json")):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            time.sleep(1.0)
    finally:
        guard.cancel()
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    time.sleep(0.3)  # the killed group's file locks are released with its processes
    if point != "update-before-decision":
        assert not commit.DecisionLog(table).is_empty(), "the crash must leave a record"
    exp = expected_answers(read_manifest(table))
    engine, m = _open(mode, table)  # recovery runs here, and verifies the digests
    try:
        assert _four_sums(engine) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}
    finally:
        engine.stop()
    _assert_generated(table)


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_failed_undo_is_finished_by_the_next_open(table, mode):
    """In-process: the undo fails in its commit on one partition after the update applied."""
    engine, m = _open(mode, table)
    undo = engine.statements(queries.get("update"), m, "full-row", delta=-117)
    try:
        with (
            pytest.raises(commit.CommitIncomplete),
            commit.update_pair(table, "ua", "ub", undo),
        ):
            engine.update("ua", engine.statements(queries.get("update"), m, "full-row"))
            engine.config = dataclasses.replace(engine.config, fault=Fault(part=0, phase="commit"))
            engine.update("ub", undo)
        assert len(commit.DecisionLog(table).pending_pairs()) == 1
    finally:
        engine.stop()
    engine, m = _open(mode, table)
    engine.stop()
    _assert_generated(table)


def test_recovery_that_cannot_reach_the_generated_state_says_so(table):
    """A lone decided update (never left by the runner) is redone, and the digest check
    then refuses the table instead of timing a changed one."""
    engine, m = _open("shared-memory", table, Fault(part=1, phase="commit"))
    try:
        with pytest.raises(commit.CommitIncomplete):
            engine.update("lone", engine.statements(queries.get("update"), m, "full-row"))
    finally:
        engine.stop()
    engine = make_engine("shared-memory", EngineConfig(timeout_s=60))
    engine.start(m.partitions)
    try:
        with pytest.raises(commit.RecoveryMismatch, match="partition 0.*not its generated"):
            engine.open_table(m, str(table))
    finally:
        engine.stop()
