"""The cross-partition update is all-or-nothing: injected failures and a killed worker."""

import os
import signal
import threading
import time

import pytest

from wisconsin import commit
from wisconsin.build import build_tables
from wisconsin.engine import EngineConfig, Fault
from wisconsin.expect import expected_answers
from wisconsin.runner import make_engine
from wisconsin.store import TableSpec, read_manifest

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
            engine.update("t1", engine.statements("update", m, "full-row"))
        assert _four_sums(engine) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}
        assert commit.DecisionLog(table).pending() == []
    finally:
        engine.stop()


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_failure_in_commit_is_redone_before_the_table_is_used(table, mode):
    exp = expected_answers(read_manifest(table))
    applied = {p: pe.sum_four + 117 * pe.selected for p, pe in enumerate(exp.parts)}
    engine, m = _open(mode, table, Fault(part=2, phase="commit"))
    try:
        with pytest.raises(commit.CommitIncomplete):
            engine.update("t2", engine.statements("update", m, "full-row"))
        assert [t for t, _ in commit.DecisionLog(table).pending()] == ["t2"]
    finally:
        engine.stop()
    # Reopening runs recovery: partition 2 gets the decided update, exactly once.
    engine, m = _open(mode, table)
    try:
        assert _four_sums(engine) == applied
        assert commit.DecisionLog(table).pending() == []
        engine.close_table()
        engine.open_table(m, str(table))
        assert _four_sums(engine) == applied
        # once recovered, commit markers are pruned: they do not pile up run after run
        markers = engine.query("SELECT count(*) FROM wisconsin_txn")
        assert {p: rows[0][0] for p, rows in markers.items()} == dict.fromkeys(range(3), 0)
    finally:
        engine.stop()


def test_killed_worker_during_update_changes_nothing(table):
    exp = expected_answers(read_manifest(table))
    engine, m = _open(
        "shared-nothing", table, Fault(part=1, phase="prepare", action="sleep", seconds=30)
    )
    pids = engine.client.run(os.getpid)
    victim = next(
        pid
        for addr, pid in pids.items()
        if engine.client.scheduler_info()["workers"][addr]["name"] == "part1"
    )

    def kill():
        time.sleep(1.5)  # partitions 0 and 2 have prepared; part1 is inside its sleep
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(commit.CommitAborted, match="partition 1"):
            engine.update("t3", engine.statements("update", m, "full-row"))
        assert time.monotonic() - t0 < 25, "a dead worker must fail the update promptly"
    finally:
        killer.join()
        engine.stop()
    engine, m = _open("shared-nothing", table)
    try:
        assert _four_sums(engine) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}
    finally:
        engine.stop()
