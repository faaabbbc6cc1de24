"""Cluster helpers against an in-process Dask scheduler (no root, no namespaces): the
dashboard link, placement warnings, a port nobody answers."""

import socket
import time

import pytest
from distributed import LocalCluster

from wisconsin import cluster
from wisconsin.store import PartitionInfo, TableSpec, make_manifest


@pytest.fixture
def notices(monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(cluster, "_announced", set())
    cluster.set_reporter(lines.append)
    yield lines
    cluster.set_reporter(None)


def _manifest(owners, host=None):
    host = host or socket.gethostname()
    n = 100 * len(owners)
    parts = [
        PartitionInfo(i, f"part-{i:03d}.duckdb", 100 * i, 100 * (i + 1), 100, "x", w, host, "/p")
        for i, w in enumerate(owners)
    ]
    return make_manifest(TableSpec("F", n, len(owners), 1), parts)


def test_dashboard_link_is_announced_when_the_scheduler_serves_one(notices):
    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as lc:
        client = cluster.connect(lc.scheduler_address, timeout=30)
        try:
            link = cluster.dashboard_link(client)
        finally:
            client.close()
    assert link and link.startswith("http://") and link.endswith("/status")
    assert notices == [f"scheduler {lc.scheduler_address}: dashboard {link}"]


def test_warnings_when_partitions_outnumber_workers_or_threads(notices):
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as lc:
        client = cluster.connect(lc.scheduler_address, timeout=30)
        try:
            client.wait_for_workers(2, timeout=30)
            one_each = cluster.placement_warnings(client, _manifest(["0", "1"]))
            crowded = cluster.placement_warnings(client, _manifest(["0", "1", "0", "1"]))
            said = cluster.check_placement(client, _manifest(["0", "1", "0", "1"]))
            with pytest.raises(cluster.ClusterError) as exc:
                cluster.check_placement(client, _manifest(["0", "1"], host="elsewhere"))
            moved = str(exc.value)
        finally:
            client.close()
    assert one_each == []
    assert crowded == [
        "warning: F4 has 4 partitions on 2 workers (0 holds 2): fewer than P processes, so "
        "its speedup and scaleup are not comparable with P workers",
        "warning: F4: worker 0 has 1 thread(s) for its 2 partitions, so they queue instead "
        "of running in parallel",
    ]
    assert notices[-2:] == crowded == said  # check_placement says them and returns them
    assert "now runs on" in moved and "was written on elsewhere" in moved


def test_a_port_nobody_answers_fails_in_seconds():
    t0 = time.monotonic()
    with pytest.raises(cluster.ClusterError, match="connection refused"):
        cluster.connect("tcp://127.0.0.1:1", timeout=60)
    assert time.monotonic() - t0 < cluster.PROBE_S + 1


def test_a_port_that_is_no_scheduler_fails_in_seconds_not_never():
    """A user's --cluster with the dashboard's port: an HTTP server accepts and waits for a
    request, and distributed's Client waited past 120 s. tcp: a scheduler speaks first."""
    import http.server
    import threading

    httpd = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        t0 = time.monotonic()
        with pytest.raises(cluster.ClusterError, match="no Dask scheduler: it said nothing"):
            cluster.connect(f"tcp://127.0.0.1:{httpd.server_address[1]}", timeout=60)
        assert time.monotonic() - t0 < cluster.PROBE_S + 2
    finally:
        httpd.shutdown()


def test_a_client_start_that_never_ends_is_bounded(monkeypatch):
    """What the probe cannot see (a TLS port that accepts and stays silent) is bounded by
    _start_within: one line after the timeout and its grace, never a hang."""
    import threading

    hang = threading.Event()

    class Stuck:
        def __init__(self, *args, **kwargs):
            hang.wait(30)

    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="no Dask scheduler answered within 1 s"):
        cluster._start_within(Stuck.__new__(Stuck), 1.0)
    assert time.monotonic() - t0 < 3
    hang.set()


def test_worker_addresses_never_misses_a_connected_worker():
    """Client.scheduler_info() could return no workers (its cached copy overwritten by the
    client's periodic worker-less refresh): ~1% of calls with a 10 ms refresh, and a run
    then took every partition's worker for lost. Asked of the scheduler, never."""
    import dask

    with (
        dask.config.set({"distributed.client.scheduler-info-interval": "10ms"}),
        LocalCluster(n_workers=2, processes=False, dashboard_address=None) as lc,
        lc.get_client() as client,
    ):
        seen = [len(cluster.worker_addresses(client)) for _ in range(1500)]
    assert min(seen) == 2


def test_a_workers_port_is_named_as_not_a_scheduler():
    """A worker speaks Dask (the probe sees its handshake) but refuses a scheduler's calls:
    one line saying so, not "TypeError: Server.identity() got an unexpected keyword"."""
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as lc:
        (worker,) = lc.scheduler_info["workers"]
        with pytest.raises(cluster.ClusterError, match="not as a scheduler \\(a worker's port"):
            cluster.connect(worker, timeout=10)


def test_swapped_tls_files_are_named_before_connecting(tmp_path):
    from harness.netns import TlsUnavailable, make_tls_files

    try:
        tls = make_tls_files(tmp_path / "tls")
    except TlsUnavailable as exc:
        pytest.skip(str(exc))
    address = "tls://127.0.0.1:1"
    with pytest.raises(cluster.ClusterError, match="swapped, or not a pair"):
        cluster.resolve_target(address, tls.ca, tls.key, tls.cert)
    with pytest.raises(cluster.ClusterError, match="--tls-ca .*: not a CA certificate"):
        cluster.resolve_target(address, tls.key, tls.cert, tls.key)
    assert cluster.resolve_target(address, tls.ca, tls.cert, tls.key)[0] == address
