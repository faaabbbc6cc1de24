"""The network-namespace cluster harness: real hosts-apart Dask processes on one machine."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness import netns
from harness.netns import NetnsCluster
from wisconsin.cluster import scheduler_identity

GATHER_TIMEOUT = 20  # every result()/gather() gets a timeout: a lost task must not hang CI


def _gather(futures: list, timeout: float = GATHER_TIMEOUT) -> list:
    """Results under one deadline. Client.gather() takes no timeout (distributed
    2026.8.0) and distributed.wait() needs a default client, so use Future.result()."""
    deadline = time.monotonic() + timeout
    return [f.result(timeout=max(0.0, deadline - time.monotonic())) for f in futures]


def _probe_task():
    """Runs on a worker: what host/namespace/disk does it see? (nested: pickled by value)"""

    def probe(scheduler_ip: str) -> dict:
        import os
        import socket

        from distributed import get_worker

        # The source address the kernel picks towards the scheduler = this host's IP.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((scheduler_ip, 9))
            ip = s.getsockname()[0]
        data_dir = os.environ["WISCONSIN_DATA_DIR"]
        path = os.path.join(data_dir, f"written-by-{os.getpid()}")
        with open(path, "w") as fh:
            fh.write(socket.gethostname())
        return {
            "hostname": socket.gethostname(),
            "ip": ip,
            "worker_address": get_worker().address,
            "netns_inode": os.stat("/proc/self/ns/net").st_ino,
            "pid": os.getpid(),
            "written": path,
        }

    return probe


def _address_of(client, name: str) -> str | None:
    workers = scheduler_identity(client)["workers"]
    return next((a for a, w in workers.items() if w["name"] == name), None)


def _assert_no_leftovers(instance_id: str) -> None:
    left = netns.leftovers(instance_id)
    assert left == {"netns": [], "links": []}, left
    assert instance_id not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    assert not (netns.STATE_DIR / f"{instance_id}.json").exists()


@pytest.mark.cluster
def test_two_hosts_pinned_tasks_and_dead_worker(netns_cluster_factory):
    cluster = netns_cluster_factory(2)
    assert cluster.worker_names == ["part0", "part1"]
    assert set(cluster.hosts) == {"part0", "part1"}
    ips = {h.ip for h in cluster.hosts.values()} | {cluster.scheduler_host.ip, cluster.client_ip}
    assert len(ips) == 4
    probe = _probe_task()
    sched_ip = cluster.scheduler_host.ip

    with cluster.client() as client:
        futs = {
            name: client.submit(
                probe, sched_ip, workers=[name], allow_other_workers=False, pure=False
            )
            for name in cluster.worker_names
        }
        got = dict(zip(futs, _gather(list(futs.values())), strict=True))

        for name, r in got.items():
            host = cluster.hosts[name]
            assert r["hostname"] == host.host  # own UTS namespace per simulated host
            assert r["ip"] == host.ip
            assert r["worker_address"].startswith(f"tcp://{host.ip}:")
            assert r["netns_inode"] == os.stat(f"/run/netns/{host.netns}").st_ino
            assert r["pid"] in cluster.worker_pids(name)
            written = Path(r["written"])
            assert written.parent == cluster.data_dirs[name]
            assert written.read_text() == host.host
        a, b = got.values()
        assert a["netns_inode"] != b["netns_inode"]
        assert a["ip"] != b["ip"]
        assert a["netns_inode"] != os.stat("/proc/self/ns/net").st_ino  # not the client's

        # Pinning by resource reaches the same worker as pinning by name.
        fut = client.submit(probe, sched_ip, resources={"part1": 1}, pure=False)
        assert fut.result(timeout=GATHER_TIMEOUT)["ip"] == cluster.hosts["part1"].ip

        # A crashed worker process is restarted by its nanny under a new address:
        # pinning by name follows it, pinning by the old address waits forever.
        old_addr = _address_of(client, "part0")
        old_pid = cluster.crash_worker_process("part0")
        deadline = time.monotonic() + GATHER_TIMEOUT
        while _address_of(client, "part0") in (None, old_addr):
            assert time.monotonic() < deadline, "nanny did not restart part0"
            time.sleep(0.1)
        fut = client.submit(
            probe, sched_ip, workers=["part0"], allow_other_workers=False, pure=False
        )
        assert fut.result(timeout=GATHER_TIMEOUT)["pid"] not in (old_pid, got["part0"]["pid"])
        stuck = client.submit(
            probe, sched_ip, workers=[old_addr], allow_other_workers=False, pure=False
        )
        with pytest.raises(TimeoutError):
            stuck.result(timeout=2)
        stuck.cancel()

        # A task running on part1 when its machine dies, and one submitted afterwards,
        # must neither run elsewhere nor hang the caller: both time out.
        running = client.submit(time.sleep, 60, workers=["part1"], allow_other_workers=False)
        addr1 = _address_of(client, "part1")
        deadline = time.monotonic() + GATHER_TIMEOUT
        while not client.processing(workers=[addr1])[addr1]:
            assert time.monotonic() < deadline, "sleep task never started"
            time.sleep(0.05)
        cluster.kill_worker("part1")
        assert cluster.worker_pids("part1") == []
        deadline = time.monotonic() + GATHER_TIMEOUT
        while "part1" in {w["name"] for w in scheduler_identity(client)["workers"].values()}:
            assert time.monotonic() < deadline, "scheduler did not notice the dead worker"
            time.sleep(0.1)
        late = client.submit(
            probe, sched_ip, workers=["part1"], allow_other_workers=False, pure=False
        )
        t0 = time.monotonic()
        for fut in (running, late):
            with pytest.raises(TimeoutError):
                fut.result(timeout=2)
            assert fut.status == "pending"
        assert time.monotonic() - t0 < 6
        # The surviving host is unaffected.
        fut = client.submit(
            probe, sched_ip, workers=["part0"], allow_other_workers=False, pure=False
        )
        assert fut.result(timeout=GATHER_TIMEOUT)["ip"] == cluster.hosts["part0"].ip

    iid = cluster.instance_id
    cluster.stop()
    _assert_no_leftovers(iid)


@pytest.mark.cluster
# A refused async Client still runs close() from __del__ after its loop is gone.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_tls_refuses_clients_without_certificates(netns_cluster_factory, tmp_path):
    from distributed import Client
    from distributed.security import Security

    tls = netns.make_tls_files(tmp_path / "tls")
    stranger = netns.make_tls_files(tmp_path / "other-ca")  # valid certs, wrong CA
    cluster = netns_cluster_factory(1, tls=tls)
    address = cluster.scheduler_address
    assert address.startswith("tls://")

    def connect(addr, security):
        # Asynchronous clients in a private event loop: a failed synchronous Client
        # is closed later from __del__ and can race the shared loop thread of the
        # next Client (AssertionError in LoopRunner, distributed 2026.8.0).
        async def attempt():
            async with Client(addr, security=security, timeout=3, asynchronous=True):
                pass

        asyncio.run(attempt())

    # No certificates at all: the client cannot even speak TLS...
    with pytest.raises(TypeError, match="ssl_context"):
        connect(address, None)
    # ...and a plain-TCP client is cut off by the server's TLS listener.
    t0 = time.monotonic()
    with pytest.raises(OSError):
        connect(address.replace("tls://", "tcp://"), None)
    # The client trusts the server, but its own certificate is from a foreign CA.
    foreign_client = Security(
        tls_ca_file=str(tls.ca),
        tls_client_cert=str(stranger.cert),
        tls_client_key=str(stranger.key),
        require_encryption=True,
    )
    with pytest.raises(OSError):
        connect(address, foreign_client)
    assert time.monotonic() - t0 < 10
    assert "TLS handshake failed" in cluster.log_path("sched").read_text()

    with cluster.client() as client:
        probe = _probe_task()
        r = client.submit(
            probe, cluster.scheduler_host.ip, workers=["part0"], allow_other_workers=False
        ).result(timeout=GATHER_TIMEOUT)
        assert r["worker_address"].startswith(f"tls://{cluster.hosts['part0'].ip}:")


@pytest.mark.cluster
def test_interrupt_inside_context_cleans_up(netns_cluster_factory, tmp_path):
    # The factory only checks availability; this test drives the context manager itself.
    with pytest.raises(KeyboardInterrupt), NetnsCluster(1, tmp_path / "c") as cluster:
        iid = cluster.instance_id
        pids = cluster.worker_pids("part0") + [cluster._procs["sched"].pid]
        assert netns.leftovers(iid)["netns"]
        raise KeyboardInterrupt
    _assert_no_leftovers(iid)
    assert not any(_alive(p) for p in pids)


@pytest.mark.cluster
def test_failed_start_reports_log_and_cleans_up(netns_cluster_factory, tmp_path):
    cluster = NetnsCluster(1, tmp_path / "c", extra_worker_args=["--no-such-option"], timeout=20)
    with pytest.raises(RuntimeError, match="no-such-option"):
        cluster.start()
    _assert_no_leftovers(cluster.instance_id)


@pytest.mark.cluster
def test_killed_owner_processes_die_and_stale_cleanup(netns_cluster_factory, tmp_path):
    # A test run that is SIGKILLed cannot run stop(): its dask processes die with it
    # (parent-death signal) and cleanup_stale() removes the namespaces it left.
    script = textwrap.dedent(
        f"""
        import sys, time
        from harness.netns import NetnsCluster
        c = NetnsCluster(1, {str(tmp_path / "c")!r}).start()
        print(c.instance_id, c._procs["sched"].pid, *c.worker_pids("part0"), flush=True)
        time.sleep(120)
        """
    )
    tests = Path(__file__).resolve().parent  # the harness lives here, not in the wheel
    owner = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tests)},
    )
    try:
        line = owner.stdout.readline().split()
        assert line, "owner process failed to start its cluster"
        iid, pids = line[0], [int(p) for p in line[1:]]
        assert netns.leftovers(iid)["netns"]
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        owner.stdout.close()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, "dask processes outlived their owner"
        time.sleep(0.05)
    assert netns.leftovers(iid)["netns"]  # still there: nobody ran stop()
    assert iid in netns.cleanup_stale()
    _assert_no_leftovers(iid)


def test_constructor_validates_without_touching_the_system(tmp_path):
    with pytest.raises(ValueError, match="distinct"):
        NetnsCluster(2, tmp_path, worker_names=["a", "a"])
    with pytest.raises(ValueError, match="distinct"):
        NetnsCluster(2, tmp_path, worker_names=["a"])
    with pytest.raises(ValueError):
        NetnsCluster(0, tmp_path)
    c = NetnsCluster(3, tmp_path)
    assert c.worker_names == ["part0", "part1", "part2"]
    c.stop()  # never started: a no-op


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
