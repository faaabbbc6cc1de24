"""TPC-C's acknowledged transactions on a cluster: each host looks up the receipts whose rows
it holds (tpcc.receipts.look_up, routed by warehouse), the coordinator merges the counts; and
`wisconsin repair --cluster` after a kill -9 of one host's partition server."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from harness.hosted import server_pid
from wisconsin.cli import cli
from wisconsin.oltp import hosted
from wisconsin.workloads.tpcc import load, receipts
from wisconsin.workloads.tpcc.schema import Placement, Scale

TINY = Scale(customers_per_district=30, items=200)
WINDOW_S = 8.0  # every type completes in it (4 s: sometimes no Stock-Level)
DB = "w2-p2"  # P = 2, one warehouse each: warehouse 2 is on host1


def _log(log_dir: Path, part: int, *lines: str) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"driver-p{part:03d}.log", "a") as f:
        f.write("".join(f"{x}\n" for x in lines))


def test_per_partition_look_ups_routed_by_warehouse_are_the_whole_check(tmp_path):
    """The hosts' reports, combined, say what the check over every file at once says."""
    db = tmp_path / "db"
    placement = Placement(2, 1)
    m = load.build(db, placement, 3, TINY)
    paths = [str(p) for p in load.partition_paths(db, m)]
    log_dir = load.ack_log_dir(db)
    # partition 0's driver acknowledged orders of warehouse 1 and one of warehouse 2 (whose
    # rows are on partition 1): o 10 is there, o 999 is on neither; and a Payment of w 2
    _log(log_dir, 0, "B 1 new_order", "B 2 new_order", "B 3 payment", "B 4 payment",
         "C 1 N 2 1 X 10 Y", "C 2 N 2 1 1 999 5", "C 3 P 2 1 1 1 1 500 0", "A 4")  # fmt: skip
    con = duckdb.connect(paths[1], read_only=True)
    c, n = con.execute(
        "SELECT o_c_id, o_ol_cnt FROM orders WHERE o_w_id = 2 AND o_d_id = 1 AND o_id = 10"
    ).fetchone()
    con.close()
    text = (log_dir / "driver-p000.log").read_text().replace("X 10 Y", f"{c} 10 {n}")
    (log_dir / "driver-p000.log").write_text(text)
    whole = receipts.check(paths, log_dir)
    log = receipts.read_log(log_dir)
    routed, nowhere = receipts.route(log.acknowledged, placement)
    assert set(routed[1]) == {1, 2, 3} and not routed[0] and not nowhere
    hosts = [receipts.look_up({p: paths[p]}, routed[p]) for p in range(2)]
    each = receipts.summarize(receipts.merge([log, log]), hosts)  # a log read twice: alike
    assert each == whole
    assert (each.acknowledged, each.with_keys, each.found, each.lost_count) == (3, 3, 1, 2)
    assert (each.aborted, each.in_doubt) == (1, 0)
    assert "New-Order txid 2 (w 2, d 1, o 999): no ORDER row" in each.line()
    assert "Payment txid 3 (w 2, d 1, customer 1): its HISTORY row missing" in each.line()
    # looked up on the wrong partition, the present order would be lost too: routing matters
    wrong = receipts.summarize(log, [receipts.look_up({0: paths[0]}, log.acknowledged)])
    assert wrong.lost_count == 3
    far = {9: ("N", "7", "1", "1", "1", "5")}  # warehouse 7: on no partition
    assert receipts.route(far, placement)[1] == [
        (9, "New-Order txid 9 (w 7): no partition has warehouse 7")
    ]


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """One TLS namespace cluster of two hosts for the module's tests."""
    from harness.netns import (
        NetnsCluster,
        NetnsUnavailable,
        TlsUnavailable,
        check_available,
        cleanup_stale,
        make_tls_files,
    )

    base = tmp_path_factory.mktemp("tpcc-cluster")
    try:
        check_available()
        files = make_tls_files(base / "tls")
    except (NetnsUnavailable, TlsUnavailable) as exc:
        pytest.skip(f"network namespaces or TLS unavailable: {exc}")
    cleanup_stale()
    cluster = NetnsCluster(2, base / "cluster", tls=files).start()
    tls = ["--tls-ca", str(files.ca), "--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    yield cluster, files, tls
    cluster.stop()


@pytest.mark.cluster
@pytest.mark.xdist_group("netns")
def test_a_cluster_runs_audit_finds_every_acknowledged_transaction(
    tls_cluster, tmp_path, monkeypatch
):
    """...and `compare` of it with a local run at the same P and size."""
    from wisconsin.workloads.tpcc import audit, hosts, metrics, pipeline

    cluster, files, _ = tls_cluster
    target = hosted.target(cluster.scheduler_address, (files.ca, files.cert, files.key))
    run, path = pipeline.run_bench(tmp_path / "coordinator", tmp_path / "out", 2, 1, "nowait",
                                   WINDOW_S, 1.0, 5, TINY, cluster=target)  # fmt: skip
    a = run.result.receipts
    assert a is not None and a.ok and a.acknowledged > 0, a
    assert a.found == a.with_keys > 0 and a.lost_count == 0
    counted = sum(k.count for k in run.result.kinds if k.kind != "delivery")
    assert a.acknowledged >= counted
    rule = {x.name: x for x in audit.audit_run(run)}["acknowledged transactions"]
    assert rule.ok, rule
    res = CliRunner().invoke(cli, ["audit", str(path)])
    assert res.exit_code == 0, res.output
    assert "PASS  acknowledged transactions" in res.output and "FAIL" not in res.output

    # host0's log forged with a New-Order of warehouse 2 (host1's) that is not there: the
    # hosts' check finds it lost there, and the rule fails naming it
    places, paths, m = hosts.noted(Path(run.config.data_dir))
    log_dir = load.ack_log_dir(Path(paths[0]).parent)
    _log(log_dir, 0, "B 999997 new_order", "C 999997 N 2 3 4 99999 5")
    with hosted.Session(target) as on:
        forged = hosts.receipts_on_hosts(on, places, paths, m.placement)
    assert (forged.lost_count, forged.found, forged.with_keys) == (1, a.found, a.with_keys + 1)
    bad = dataclasses.replace(run, result=dataclasses.replace(run.result, receipts=forged))
    rule = {x.name: x for x in audit.audit_run(bad)}["acknowledged transactions"]
    assert not rule.ok, rule
    assert "New-Order txid 999997 (w 2, d 3, o 99999): no ORDER row" in rule.detail, rule

    # the same P and size on this machine, then `compare` laptop against cluster
    _, here = pipeline.run_bench(tmp_path / "local", tmp_path / "out-local", 2, 1, "nowait",
                                 WINDOW_S, 1.0, 5, TINY)  # fmt: skip
    monkeypatch.setattr(metrics, "BATCH_S", 1)  # intervals from a short window's seconds
    res = CliRunner().invoke(cli, ["compare", str(here), str(path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    differs = lines[1]
    assert differs.startswith("differs: where: this machine ("), differs  # named first
    assert "in A, a Dask cluster (tls://" in differs and "2 hosts host0, host1" in differs
    assert "links: loopback, not measured in A, round trip " in differs, differs
    assert "pinning: pinned to cores [" in differs and "one worker each" in differs
    assert lines[2].startswith("verdict: new orders per minute B / A = "), lines[2]
    assert lines[3] == "audits: A PASS; B PASS", lines[3]
    rows = {x.strip().split("  ")[0]: x for x in lines[5:]}
    for name in ("new orders per minute", "per partition", "per core"):  # A, B and B / A
        assert name in rows and rows[name].count("[") == 3, (name, res.output)


# `bench --workload tpcc` as the CLI runs it, with tiny tables and a 1 s ramp-up (its own
# options size a spec database: minutes to build)
_BENCH = """
import functools, sys
from wisconsin.cli import main
from wisconsin.workloads.tpcc import pipeline
from wisconsin.workloads.tpcc.schema import Scale
pipeline.run_bench = functools.partial(pipeline.run_bench, warehouses_per_partition=1,
    mode="nowait", ramp_s=1.0, scale=Scale(customers_per_district=30, items=200))
sys.argv = ["wisconsin", *sys.argv[1:]]
main()
"""


@pytest.mark.cluster
@pytest.mark.xdist_group("netns")
def test_kill_9_of_a_hosts_server_then_repair_on_the_cluster(tls_cluster, tmp_path):
    cluster, _, tls = tls_cluster
    data = tmp_path / "coordinator"
    bench = subprocess.Popen(
        [sys.executable, "-c", _BENCH, "bench", "--workload", "tpcc", "--partitions", "2",
         "--step-seconds", "60", "--data", str(data), "--out", str(tmp_path / "runs"),
         "--cluster", cluster.scheduler_address, *tls],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    key = hosted.database_key(data / "tpcc")
    log = cluster.data_dirs["part0"] / "tpcc" / key / DB / "logs" / "driver-p000.log"
    deadline = time.monotonic() + 60
    pid = None  # the server starts after the build, which clears an earlier run's log
    while pid is None or not (log.exists() and log.read_text().count("\nC ") > 40):
        assert bench.poll() is None, bench.communicate()[0]
        assert time.monotonic() < deadline, "no acknowledged transaction in 60 s"
        time.sleep(0.2)
        pid = pid or server_pid(cluster, "part0")
    os.kill(pid, signal.SIGKILL)  # mid-run: transactions in flight, some decided
    out, _ = bench.communicate(timeout=60)
    last = out.strip().splitlines()[-1]
    assert bench.returncode != 0 and "Traceback" not in out, out
    assert "TPC-C partition 0 on host0" in last and "signal 9 (SIGKILL)" in last, last
    db = data / "tpcc" / DB
    assert f"`wisconsin repair {db} --cluster {cluster.scheduler_address}" in last, last

    res = CliRunner().invoke(cli, ["repair", str(db)])  # the files are not here
    assert res.exit_code == 2 and "give --cluster" in res.output, res.output
    res = CliRunner().invoke(cli, ["info", str(db)])
    assert res.exit_code == 2 and "repair DIR --cluster ADDR" in res.output, res.output
    repair = ["repair", str(db), "--cluster", cluster.scheduler_address, *tls]
    res = CliRunner().invoke(cli, repair)
    assert res.exit_code == 0, res.output
    head = res.output.splitlines()[0]
    assert "conditions 3.3.2.1-12 (11 aside) hold" in head, head
    assert "no acknowledged transaction lost" in head, head
    found = next(x for x in res.output.splitlines() if x.startswith("acknowledged transactions"))
    got = re.match(r"acknowledged transactions: ([\d,]+) in the log, ([\d,]+) of ([\d,]+) "
                   r"with rows to find found, 0 lost;", found)  # fmt: skip
    assert got, found
    acked, hits, with_keys = (int(g.replace(",", "")) for g in got.groups())
    assert acked >= 40 and hits == with_keys > 0, found
    assert "0 decided but missing, 0 applied without" in found
    assert "independent check: OK" in res.output
    assert sum(x.startswith("3.3.2.") and " ok " in x for x in res.output.splitlines()) == 11

    again = CliRunner().invoke(cli, repair)
    assert again.exit_code == 0 and "nothing pending on the hosts" in again.output

    # a decision on host0 whose half (STOCK of warehouse 2) host1 never applied: redone there
    from wisconsin.workloads.tpcc import inputs as ins
    from wisconsin.workloads.tpcc import remote
    from wisconsin.workloads.tpcc.schema import connect

    con = connect(str(log.parent.parent / "part-000.duckdb"))
    remote.decide(con, 1, remote.stock_half(999998, 1, 1, [ins.Line(7, 2, 3)]))
    con.close()
    res = CliRunner().invoke(cli, repair)
    assert res.exit_code == 0 and "1 decided remote half(s) applied on the hosts" in res.output

    # a forged receipt in host0's log whose row would be on host1: a Payment at warehouse 2
    _log(log.parent, 0, "B 999999 payment", "C 999999 P 2 1 1 1 1 500 0")
    res = CliRunner().invoke(cli, repair)
    assert res.exit_code == 3, res.output  # damaged data
    assert "acknowledged LOST" in res.output.splitlines()[0]
    assert "Payment txid 999999 (w 2, d 1, customer 1): its HISTORY row missing" in res.output
