"""The OLTP workloads on a Dask cluster: partition servers on the workers (oltp.hosted),
their links (oltp.links, oltp.probe), built, served and audited on each host."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.hosted import server_pid
from wisconsin.cli import cli
from wisconsin.oltp import hosted, links, probe
from wisconsin.workloads.debitcredit import check, interconnect
from wisconsin.workloads.debitcredit.runfile import load


class _Node:
    def __init__(self, part, peers, authkey=b"k" * 16):
        self.part, self.peers, self.authkey = part, peers, authkey


def _tls(tmp_path):
    from harness.netns import TlsUnavailable, make_tls_files

    try:
        files = make_tls_files(tmp_path / "tls")
    except TlsUnavailable as exc:
        pytest.skip(str(exc))
    return files, links.Tls(str(files.ca), str(files.cert), str(files.key))


def _echo_server(listener, count=1):
    import threading

    def serve():
        for _ in range(count):
            try:
                conn = listener.accept()
            except OSError:
                continue
            try:
                while True:
                    msg = conn.recv()
                    conn.send_bytes(msg[1])
            except (EOFError, OSError):
                conn.close()

    threading.Thread(target=serve, daemon=True).start()


def test_tls_link_authenticates_encrypts_and_is_measured(tmp_path, monkeypatch):
    _, tls = _tls(tmp_path)
    monkeypatch.setattr(links, "_net", links.Net("127.0.0.1", tls))
    listener = links.listen(b"k" * 16, 8)
    assert isinstance(listener, links.SocketListener)
    _echo_server(listener, count=4)
    state, figures = probe.peers(_Node(0, {1: listener.address}), {0: "a", 1: "b"})
    assert state == "ok" and set(figures) == {1}
    f = figures[1]
    assert 0 < f["rtt_min_s"] <= f["rtt_s"] <= f["rtt_max_s"] and f["bandwidth_bps"] > 1e6
    with pytest.raises(OSError, match="refused the link"):  # the wrong key: refused
        links.dial(listener.address, b"x" * 16, tls, 2.0)
    monkeypatch.setattr(links, "HANDSHAKE_TIMEOUT_S", 1.0)
    with pytest.raises(OSError, match="refused the link"):  # a client without TLS: refused
        links.dial(listener.address, b"k" * 16, None, 2.0)
    listener.close()


def test_a_link_that_cannot_connect_is_one_line_naming_both_hosts(monkeypatch):
    monkeypatch.setattr(links, "_net", links.Net("127.0.0.1", None))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    names = {0: "host0 (10.0.0.1, worker part0)", 1: "host1 (10.0.0.2, worker part1)"}
    t0 = time.monotonic()
    state, line = probe.peers(_Node(0, {0: ("127.0.0.1", 1), 1: ("127.0.0.1", port)}), names)
    assert time.monotonic() - t0 < links.CONNECT_TIMEOUT_S + 1
    assert state == "failed" and "\n" not in line
    assert line.startswith(f"partition 0 on {names[0]} cannot connect to partition 1 on {names[1]}")
    assert f"127.0.0.1:{port}: connection refused" in line


def test_the_local_default_is_loopback_multiprocessing():
    from multiprocessing.connection import Listener

    assert links.current() == links.Net() and not links.on_cluster()
    listener = links.listen(b"k" * 16, 4)
    assert isinstance(listener, Listener) and listener.address[0] == "127.0.0.1"
    listener.close()


def test_independent_check_over_hosts_is_the_check_over_all_files(tmp_path):
    from wisconsin.workloads.debitcredit import schema

    paths = schema.build(tmp_path, 2, schema.Sizing(1, 2, 10))
    whole = check.independent_check(str(paths[0].parent))
    each = [check.host_report([str(p)]) for p in paths]
    assert check.combine(each, str(paths[0].parent)) == whole and whole[0]


@pytest.mark.cluster
def test_bench_debitcredit_on_a_tls_cluster_at_p2(netns_cluster_factory, tmp_path):
    files, _ = _tls(tmp_path)
    cluster = netns_cluster_factory(2, tls=files)
    out, data = tmp_path / "runs", tmp_path / "coordinator"
    args = ["bench", "--workload", "debitcredit", "--partitions", "2", "--branches", "2",
            "--step-seconds", "0.5", "--repeat", "1", "--data", str(data), "--out", str(out),
            "--cluster", cluster.scheduler_address, "--tls-ca", str(files.ca),
            "--tls-cert", str(files.cert), "--tls-key", str(files.key)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    # the bench completes; `audit` fails only the steadiness of 0.5 s windows
    assert res.exit_code == 1 and "audit: fail (P=2 steady)" in res.output, res.output
    assert "P=2 audit: OK" in res.output
    (path,) = out.glob("debitcredit-*.json")
    (r,) = load(path).results
    assert r.audit.ok and r.audit.independent_ok and r.audit.history_rows == r.audit.acknowledged
    assert r.audit.distributed_rows > 0  # remote halves crossed hosts
    c = r.cluster
    assert c.tls and c.scheduler == cluster.scheduler_address
    assert [(h.part, h.worker, h.host) for h in c.hosts] == [
        (0, "part0", "host0"),
        (1, "part1", "host1"),
    ]
    for h in c.hosts:  # each partition under its own host's data directory, on its address
        assert h.path.startswith(str(cluster.data_dirs[h.worker]))
        assert h.address.split(":")[0] == cluster.hosts[h.worker].ip
    assert not list(data.rglob("*.duckdb"))  # nothing built on the coordinator
    assert {(link.source, link.target) for link in c.links} == {(0, 1), (1, 0)}
    assert all(0 < link.rtt_s < 0.1 and link.bandwidth_bps > 1e6 for link in c.links)
    # an independent check of each host's own files, combined: it agrees with the audit
    reports = [check.host_report([h.path]) for h in c.hosts]
    ok, lines = check.combine(reports, "hosts")
    assert ok, lines
    total = sum(rep["sums"]["account"] for rep in reports)
    assert total == r.audit.account_sum == r.audit.history_sum
    assert sum(rep["rows"] for rep in reports) == r.audit.history_rows
    # the report sets the links beside the remote transactions' extra latency
    closed = next(s for s in r.steps if s.mode == "closed")
    cost = interconnect.remote_cost(closed)
    assert cost.share == closed.distributed / closed.latency.count > 0
    assert cost.remote_mean_s > 0 and cost.local_mean_s > 0
    assert "Interconnect (cluster)" in res.output and "host0 -> host1" in res.output
    # its disk line's remove command removes it, on the hosts too (without --cluster: refused)
    db = data / "debitcredit" / "dc2"
    tls = ["--tls-ca", str(files.ca), "--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    said = f"`wisconsin remove {db} --cluster {cluster.scheduler_address} {' '.join(tls)}`"
    disk = next(line for line in res.output.splitlines() if line.startswith("disk: "))
    assert said in disk, disk
    refused = CliRunner().invoke(cli, ["remove", str(db)])
    assert refused.exit_code == 2 and "give --cluster ADDR" in refused.output
    assert db.is_dir() and all(Path(h.path).is_file() for h in c.hosts)
    removed = CliRunner().invoke(
        cli, ["remove", str(db), "--cluster", cluster.scheduler_address, *tls]
    )
    assert removed.exit_code == 0, removed.output
    assert "and its partitions on the hosts (host0:" in removed.output
    assert not db.exists() and not any(Path(h.path).parent.exists() for h in c.hosts)


@pytest.mark.cluster
def test_tpcc_on_a_tls_cluster_at_p2_keeps_every_condition(netns_cluster_factory, tmp_path):
    from wisconsin.workloads.tpcc import audit, pipeline
    from wisconsin.workloads.tpcc import check as tpcc_check
    from wisconsin.workloads.tpcc.schema import Scale

    files, _ = _tls(tmp_path)
    cluster = netns_cluster_factory(2, tls=files)
    target = hosted.target(cluster.scheduler_address, (files.ca, files.cert, files.key))
    data = tmp_path / "coordinator"
    tiny = Scale(customers_per_district=30, items=200)
    run, _ = pipeline.run_bench(data, tmp_path / "out", 2, 1, "nowait", 6.0, 1.0, 5, tiny,
                                cluster=target)  # fmt: skip
    r, c = run.result, run.config.cluster
    assert r.new_orders_all > 0 and r.new_orders_all == r.d_next_o_id_delta
    assert not r.consistency_failed and len(r.consistency) == 12 and r.independent_ok
    assert sum(k.distributed for k in r.kinds) > 0  # 2PC across the hosts
    assert [(h.worker, h.host) for h in c.hosts] == [("part0", "host0"), ("part1", "host1")]
    assert not list(data.rglob("*.duckdb"))  # built on the hosts, not here
    rules = {x.name: x for x in audit.audit_run(run)}
    assert rules["consistency"].ok and rules["new orders"].ok, rules
    for h in c.hosts:  # the independent check run here, host by host, on its files
        assert h.path.startswith(str(cluster.data_dirs[h.worker]))
        ok, lines = tpcc_check.independent_check(str(Path(h.path).parent))
        assert ok and lines[0].startswith("files: 1 in "), lines
    # the report says where it ran and how its links measured, as DebitCredit's does
    from wisconsin.workloads.tpcc import report

    text = report.render(run, "text")
    assert "Interconnect (cluster)" in text and "link host0 -> host1: round trip" in text
    assert "partition 0 on host0 (part0, " in text and "built in" in text and "host1:" in text
    # `remove DIR --cluster`: the hosts' partitions and the note here
    note = Path(run.config.data_dir)
    tls = ["--tls-ca", str(files.ca), "--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    res = CliRunner().invoke(cli, ["remove", str(note), "--cluster", target.address, *tls])
    assert res.exit_code == 0, res.output
    assert not note.exists() and not any(Path(h.path).parent.exists() for h in c.hosts)


@pytest.mark.cluster
def test_kill_9_of_a_hosts_server_then_repair_on_the_cluster(netns_cluster_factory, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    files, _ = _tls(tmp_path)
    cluster = netns_cluster_factory(2, tls=files)
    tls = ["--tls-ca", str(files.ca), "--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    data = tmp_path / "coordinator"
    bench = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", "bench", "--workload", "debitcredit",
         "--partitions", "2", "--branches", "2", "--step-seconds", "30", "--data", str(data),
         "--out", str(tmp_path / "runs"), "--cluster", cluster.scheduler_address, *tls],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    key = hosted.database_key(data / "debitcredit")
    log = cluster.data_dirs["part0"] / "debitcredit" / key / "dc2" / "_acklog" / "driver-p000.log"
    deadline = time.monotonic() + 90
    while not (log.exists() and log.stat().st_size > 2000) and time.monotonic() < deadline:
        assert bench.poll() is None, bench.communicate()[0]
        time.sleep(0.2)
    pid = server_pid(cluster, "part0")
    assert pid is not None and log.exists()
    os.kill(pid, signal.SIGKILL)  # mid-run: transactions in flight, some decided
    out, _ = bench.communicate(timeout=60)
    last = out.strip().splitlines()[-1]
    assert bench.returncode != 0 and "Traceback" not in out, out
    assert "DebitCredit partition 0 on host0" in last and "signal 9 (SIGKILL)" in last, last
    db = data / "debitcredit" / "dc2"
    assert f"`wisconsin repair {db} --cluster {cluster.scheduler_address}" in last, last

    res = CliRunner().invoke(cli, ["repair", str(db)])  # the files are not here
    assert res.exit_code == 2 and "give --cluster" in res.output, res.output
    res = CliRunner().invoke(cli, ["info", str(db)])
    assert res.exit_code == 2 and "partitions are on a cluster's workers" in res.output
    res = CliRunner().invoke(cli, ["repair", str(db), "--cluster", cluster.scheduler_address, *tls])
    assert res.exit_code == 0, res.output
    assert "verified on every host" in res.output and "independent check: OK" in res.output
    assert "acknowledged transactions all in history" in res.output, res.output
    again = CliRunner().invoke(
        cli, ["repair", str(db), "--cluster", cluster.scheduler_address, *tls]
    )
    assert again.exit_code == 0 and "nothing pending on the hosts" in again.output, again.output


def test_compare_of_a_local_and_a_cluster_run_names_what_else_differs_first():
    import dataclasses

    from wisconsin.oltp.runfile import ClusterRecord, Link, PartitionHost
    from wisconsin.workloads.debitcredit.compare import compare_runs

    local = load("tests/fixtures/mainline/debitcredit-run.json")
    res = local.results[-1]
    p = res.partitions
    hosts = tuple(
        PartitionHost(i, f"part{i}", f"host{i}", f"10.0.0.{i}:5000", f"/d/{i}", 2, "m")
        for i in range(p)
    )  # p simulated hosts on one 2-core machine
    links = tuple(Link(i, j, 4e-5, 3e-5, 1e-3, 2e8) for i in range(p) for j in range(p) if i != j)
    record = ClusterRecord("tls://10.0.0.9:8786", True, hosts, links)
    cluster_res = dataclasses.replace(res, cluster=record, pinned_cores=())
    cluster = dataclasses.replace(
        local, results=(*local.results[:-1], cluster_res), started_utc="2099-01-01T00:00:00Z"
    )
    text = compare_runs(local, cluster)
    lines = text.splitlines()
    assert lines[1] == "what else differs, A -> B:"
    assert lines[2].startswith("  where: this machine (") and "-> a Dask cluster" in lines[2]
    assert f"{p} hosts host0" in lines[2] and "on 1 machine(s)" in lines[2]
    assert any("links: loopback, not measured -> round trip 0.040 ms, 200 MB/s" in x for x in lines)
    assert any(x.startswith("  pinning: ") and "-> one worker each" in x for x in lines)
    verdict = next(x for x in lines if x.startswith("verdict at P="))
    assert lines.index(verdict) == 5  # right after what differs
    assert verdict == f"verdict at P={p}: no steady closed window on both sides, no ratio"
    from wisconsin.oltp.series import Interval

    slower = interconnect.verdict([{"P": 2, "peak_ratio": Interval(0.8, 0.7, 0.9, 2)}])
    assert slower == "verdict at P=2: B's peak tps is 0.80 [0.70-0.90] x A's (B slower)"
    alike = interconnect.verdict([{"P": 2, "peak_ratio": Interval(1.0, 0.9, 1.2, 2)}])
    assert alike.endswith("(the interval holds 1: no difference shown)")
    single = interconnect.verdict([{"P": 2, "peak_ratio": Interval(1.7, 1.7, 1.7, 1)}])
    assert single.endswith("(one closed window a side: no interval, no direction claimed)")
    assert "peak tps per partition and per core" in text
    assert compare_runs(local, local).splitlines()[1] == ""  # alike: nothing named


def test_two_data_directories_never_share_a_hosts_files(tmp_path):
    """A new user's second bench with another --data on the same workers rebuilt the first's
    files on the hosts (both went to root/debitcredit/dc<P>), and the first's repair then
    verified a database that was no longer its own. Each client directory has its own key."""
    from wisconsin.workloads.debitcredit import hosts, schema

    a, b = tmp_path / "a" / "debitcredit", tmp_path / "b" / "debitcredit"
    keys = hosted.database_key(a), hosted.database_key(b)
    assert keys[0] != keys[1] and keys[0] == hosted.database_key(a)
    assert hosted.database_key(tmp_path / "a" / "." / "debitcredit") == keys[0]
    sizing = schema.Sizing(branches_per_partition=1, tellers_per_branch=2, accounts_per_branch=20)
    root = tmp_path / "worker-data"
    first = hosts.task_build(str(root), keys[0], 0, 1, sizing)
    second = hosts.task_build(str(root), keys[1], 0, 1, sizing)
    assert first["path"] != second["path"] and Path(first["path"]).is_file()
    assert Path(first["path"]).parent == root / "debitcredit" / keys[0] / "dc1"


def test_remove_on_a_host_takes_only_an_oltp_partitions_directory(tmp_path):
    """task_remove deletes a partition file's directory only when both are named as the OLTP
    workloads name them: a cluster note edited to name another path removes nothing."""
    db = tmp_path / "debitcredit" / "k" / "dc2"
    db.mkdir(parents=True)
    (db / "part-000.duckdb").write_bytes(b"x" * 10)
    (db / "_acklog").mkdir()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "part-000.duckdb").write_bytes(b"keep")
    with pytest.raises(OSError, match="not a partition file of an OLTP database"):
        hosted.task_remove(str(other / "part-000.duckdb"))
    with pytest.raises(OSError, match="not a partition file"):
        hosted.task_remove(str(db / "notes.txt"))
    assert hosted.task_remove(str(db / "part-000.duckdb")) == 10 and not db.exists()
    assert hosted.task_remove(str(db / "part-000.duckdb")) == 0  # another worker removed it
    assert (other / "part-000.duckdb").read_bytes() == b"keep"


def test_remove_refuses_tls_files_without_cluster_and_a_cluster_note_without_it(tmp_path):
    from wisconsin.oltp import runfile as oltp_runfile

    note = tmp_path / "debitcredit" / "dc2"
    record = oltp_runfile.ClusterRecord("tls://10.0.0.1:8786", True, (), ())
    hosted.note_where(note, "debitcredit", record)
    res = CliRunner().invoke(cli, ["remove", str(note), "--tls-ca", str(tmp_path / "x")])
    assert res.exit_code == 2 and "need --cluster" in res.output
    res = CliRunner().invoke(cli, ["remove", str(note)])
    assert res.exit_code == 2 and "its partitions are on a cluster's hosts" in res.output
    (note / "mine.txt").write_text("x")
    res = CliRunner().invoke(cli, ["remove", str(note)])
    assert res.exit_code == 2 and "which wisconsin did not build" in res.output
    assert sorted(p.name for p in note.iterdir()) == ["cluster.json", "mine.txt"]
