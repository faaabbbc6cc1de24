"""The direct channel (wisconsin.engines.channel) alone, and behind SharedNothingEngine: answers,
worker exceptions, timeouts and lost connections become the errors the Dask path gives."""

from __future__ import annotations

import os
import threading
import time
from multiprocessing import AuthenticationError

import pytest

from wisconsin import store
from wisconsin.builds import build_tables
from wisconsin.engines import channel, commit, worker
from wisconsin.engines.base import EngineConfig, Fault
from wisconsin.engines.shared_nothing import SharedNothingEngine
from wisconsin.workloads.wisconsin import queries

KEY = b"k" * 32


def _boom(msg):
    raise ValueError(msg)


FUNCTIONS = {"add": lambda a, b: a + b, "sleep": time.sleep, "boom": _boom, "pid": os.getpid}


@pytest.fixture
def server():
    s = channel.Server("127.0.0.1", KEY, FUNCTIONS)
    yield s
    s.close()


def _links(server, n=2):
    return {p: channel.Link(server.address, KEY, 5) for p in range(n)}


def test_round_trip_sends_to_all_then_collects(server):
    links = _links(server)
    out, failed = channel.call_all(links, {0: ("add", (1, 2)), 1: ("add", ("a", "b"))}, 5)
    assert (out, failed) == ({0: 3, 1: "ab"}, {})
    # in parallel: two 0.3 s calls on two connections take ~0.3 s, not 0.6 s
    t0 = time.perf_counter()
    out, failed = channel.call_all(links, {0: ("sleep", (0.3,)), 1: ("sleep", (0.3,))}, 5)
    assert not failed and time.perf_counter() - t0 < 0.55
    # and they ran in the serving process (here: this one)
    assert channel.call_all(links, {0: ("pid", ())}, 5)[0] == {0: os.getpid()}


def test_a_worker_exception_comes_back_as_itself(server):
    links = _links(server)
    out, failed = channel.call_all(links, {0: ("boom", ("bad input",)), 1: ("add", (2, 2))}, 5)
    assert out == {1: 4}
    assert isinstance(failed[0], ValueError) and str(failed[0]) == "bad input"
    assert not links[0].broken  # the connection is fine: the next call works
    assert channel.call_all(links, {0: ("add", (1, 1))}, 5)[0] == {0: 2}


def test_timeout_fails_the_partition_and_closes_its_link(server):
    links = _links(server)
    t0 = time.perf_counter()
    out, failed = channel.call_all(links, {0: ("sleep", (3,)), 1: ("add", (1, 1))}, 0.5)
    assert time.perf_counter() - t0 < 2
    assert out == {1: 2} and isinstance(failed[0], TimeoutError)
    assert "no answer within" in str(failed[0])
    assert links[0].broken  # its late answer must never be read as another call's


def test_a_lost_connection_fails_at_once(server):
    links = _links(server)
    threading.Timer(0.3, server.close).start()
    t0 = time.perf_counter()
    out, failed = channel.call_all(links, {0: ("sleep", (5,)), 1: ("sleep", (5,))}, 30)
    assert time.perf_counter() - t0 < 3
    assert out == {} and set(failed) == {0, 1}
    assert all(isinstance(e, channel.ChannelLost) for e in failed.values())
    # a broken link fails without waiting; the listener is gone, so no reconnecting
    assert isinstance(channel.call_all(links, {0: ("add", (1, 1))}, 5)[1][0], channel.ChannelLost)
    with pytest.raises(OSError):
        channel.Link(server.address, KEY, 2)


def test_check_fails_a_slow_partition_whose_worker_is_gone(server):
    links = _links(server)
    seen = []

    def check(pending):
        seen.append(pending)
        return {0: RuntimeError("worker part0 left the scheduler")}

    out, failed = channel.call_all(
        links, {0: ("sleep", (5,)), 1: ("sleep", (0.1,))}, 30, check, poll_s=0.2
    )
    assert out == {1: None} and "left the scheduler" in str(failed[0]) and seen[0] == [0]


def test_a_wrong_authkey_is_refused(server):
    with pytest.raises(AuthenticationError):
        channel.Link(server.address, b"x" * 32, 5)
    assert channel.call_all(_links(server, 1), {0: ("add", (1, 1))}, 5)[0] == {0: 2}


# ------------------------------------------------------------------ behind the engine


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    data = tmp_path_factory.mktemp("channel")
    (m,) = build_tables(data, [store.TableSpec("F", 2000, 2, 5)], jobs=2).manifests
    return m, str(data / m.name)


def _engine(table, **config):
    m, tdir = table
    eng = SharedNothingEngine(EngineConfig(memory_limit="128MB", **config))
    eng.start(m.partitions)
    eng.open_table(m, tdir)
    return eng, m


def test_engine_times_statements_over_the_channel(table):
    eng, m = _engine(table)
    try:
        assert eng.transport == "direct" and set(eng._links) == {0, 1}
        assert "direct socket" in eng.transport_note
        step = eng.execute(eng.statements(queries.get("average"), m, "full-row"))
        assert set(step.units) == {0, 1} and all(u.rows for u in step.units.values())
        # the listener is on the worker's own address, and the worker ran the statement
        assert {link.address[0] for link in eng._links.values()} == {"127.0.0.1"}
        pids = {u.pid for u in step.units.values()}
        assert len(pids) == 2 and os.getpid() not in pids
    finally:
        eng.stop()


def test_tables_opened_one_after_another_keep_their_channels(table):
    eng, m = _engine(table)
    tdir = table[1]
    try:
        links = dict(eng._links)
        eng.close_table()  # closed over the channel, which stays open
        assert eng._links == links and not any(link.broken for link in links.values())
        eng.open_table(m, tdir)
        assert eng._links == links  # the same worker processes: the same sockets
        assert eng.execute(eng.noop_statements()).units[0].rows == [(1,)]
        eng.start(m.partitions)  # fresh workers: new listeners, new sockets
        eng.open_table(m, tdir)
        assert set(eng._links) == {0, 1} and all(eng._links[p] is not links[p] for p in links)
        assert all(link.broken for link in links.values())
    finally:
        eng.stop()


def test_engine_worker_exception_and_timeout_are_partition_failures(table):
    eng, m = _engine(table, timeout_s=1.5, fault=Fault(part=1, phase="run"))
    try:
        with pytest.raises(commit.PartitionFailure, match="partition 1 on part1: RuntimeError: "):
            eng.execute(eng.statements(queries.get("average"), m, "full-row"))
        eng.config = EngineConfig(
            memory_limit="128MB", timeout_s=1.5, fault=Fault(1, "run", "sleep", 3.0)
        )
        with pytest.raises(commit.PartitionFailure, match="TimeoutError: no answer") as err:
            eng.execute(eng.statements(queries.get("average"), m, "full-row"))
        assert err.value.parts == (1,) and "Dask logs" in str(err.value)
        # the timed-out link is replaced; the new call waits for the sleeping one (the
        # worker's lock) and then answers itself, not with the late answer
        eng.config = EngineConfig(memory_limit="128MB", timeout_s=30)
        step = eng.execute(eng.noop_statements())
        assert {p: u.rows for p, u in step.units.items()} == {0: [(1,)], 1: [(1,)]}
    finally:
        eng.stop()


def test_engine_lost_channel_is_a_partition_failure(table):
    eng, m = _engine(table)
    try:
        # the worker's end goes away (as when its process dies): fails at once, named
        eng.client.run(_close_channel, workers=[eng._known["part0"]])
        with pytest.raises(commit.PartitionFailure, match="partition 0 on part0: WorkerLost"):
            eng.execute(eng.noop_statements())
        # its running calls are visible, as Client.processing shows Dask tasks
        eng.config = EngineConfig(memory_limit="128MB", fault=Fault(1, "run", "sleep", 1.0))
        seen = []
        watch = threading.Thread(
            target=lambda: (
                time.sleep(0.5),
                seen.append(eng.client.run(worker.direct_calls, workers=[eng._known["part1"]])),
            )
        )
        watch.start()
        eng.execute({1: eng.noop_statements()[1]})
        watch.join()
        assert list(seen[0].values()) == [["task_run"]]
    finally:
        eng.stop()


def _close_channel(dask_worker=None):
    from wisconsin.engines import worker

    for plugin in dask_worker.plugins.values():
        if isinstance(plugin, worker.PartitionSessions):
            plugin.server.close()


def test_dask_transport_and_tls_keep_the_dask_path(table):
    eng, m = _engine(table, transport="dask")
    try:
        assert eng.transport == "dask" and not eng._links
        assert eng.transport_note.endswith("(--transport dask)")
        assert eng.execute(eng.noop_statements()).units[1].rows == [(1,)]
    finally:
        eng.stop()
    tls = SharedNothingEngine(EngineConfig(cluster="tls://10.0.0.1:8786"))
    assert tls.transport == "dask" and "TLS" in tls.transport_note


@pytest.mark.parametrize("transport", ["direct", "dask"])
def test_two_runs_sharing_one_clusters_workers_keep_their_own_sessions(table, tmp_path, transport):
    """Every run's worker plugin had one fixed name: a second run on the same cluster
    replaced the first's plugin (closing its sessions and channel), and the first failed
    7 of 7 times. Now each engine's plugin has its own name, and stop() removes only its
    own from the workers."""
    (m2,) = build_tables(tmp_path, [store.TableSpec("F", 3000, 2, 9)], jobs=2).manifests
    first, m1 = _engine(table, transport=transport)
    second = SharedNothingEngine(
        EngineConfig(memory_limit="128MB", cluster=first.cluster.scheduler_address,
                     transport=transport)
    )  # fmt: skip
    try:
        second.start(2, placement=first.placement)
        second.open_table(m2, str(tmp_path / m2.name))
        assert second.plugin_name != first.plugin_name
        errors: list[BaseException] = []

        def work(eng, m, rows):
            try:
                for _ in range(5):
                    step = eng.execute(eng.statements(queries.get("average"), m, "full-row"))
                    assert sum(u.rows[0][1] for u in step.units.values()) == rows
            except BaseException as exc:  # noqa: BLE001  (reported below)
                errors.append(exc)

        threads = [
            threading.Thread(target=work, args=(first, m1, 2000)),
            threading.Thread(target=work, args=(second, m2, 3000)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        second.close_table()
        second.stop()  # its plugin leaves the shared workers; the first's stays
        step = first.execute(first.statements(queries.get("average"), m1, "full-row"))
        assert sum(u.rows[0][1] for u in step.units.values()) == 2000
    finally:
        second.stop()
        first.stop()
