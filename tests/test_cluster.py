"""--cluster end to end on a real multi-host Dask cluster: a scheduler and workers in separate
network namespaces (own addresses, hostnames and data directories) on this machine."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from harness.exits import completed
from wisconsin import WisconsinError
from wisconsin.builds import build_tables
from wisconsin.cli import cli
from wisconsin.cluster import scheduler_identity
from wisconsin.engines import commit, worker
from wisconsin.engines.base import EngineConfig, Fault
from wisconsin.measure.runner import RunOptions, make_engine, run
from wisconsin.runfiles import runfile
from wisconsin.store import TableSpec, read_manifest
from wisconsin.store.expect import expected_answers
from wisconsin.workloads.wisconsin import queries
from wisconsin.workloads.wisconsin.queries import CATALOG

pytestmark = pytest.mark.cluster
SEED = 7


def _cli(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _ok(*args: str):
    """Done: exit 0, or a run whose audit failed (exit 1, the tiny runs here all do)."""
    res = _cli(*args)
    assert completed(res), f"{args}: {res.output}{res.exception!r}"
    return res


def _one_line_error(res, code: int = 2) -> str:
    assert res.exit_code == code, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


def _kill_when_running(
    cluster, name: str, key_prefix: str, settle: float = 0.5, crash_only: bool = False
):
    """A thread that SIGKILLs name's host (or, crash_only, just its worker process, which
    its nanny restarts under the same name) once a task key_prefix-* is running there."""
    errors: list[BaseException] = []

    def watch() -> None:
        try:
            with cluster.client() as c:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    info = scheduler_identity(c)["workers"]
                    addr = next(a for a, w in info.items() if w["name"] == name)
                    running = [str(k) for k in c.processing([addr])[addr]]
                    # timed statements go over the direct channel, not as Dask tasks
                    running += c.run(worker.direct_calls, workers=[addr]).get(addr, [])
                    if any(k.startswith(key_prefix) for k in running):
                        time.sleep(settle)  # the others have answered; name is inside its sleep
                        if crash_only:
                            cluster.crash_worker_process(name)
                        else:
                            cluster.kill_worker(name)
                        return
                    time.sleep(0.05)
                raise TimeoutError(f"{key_prefix} never ran on {name}")
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t, errors


def _four_sums_on_disk(manifest) -> dict[int, int]:
    out = {}
    for p in manifest.parts:
        con = duckdb.connect(p.path, read_only=True)
        try:
            out[p.index] = con.execute("SELECT sum(four)::BIGINT FROM wisconsin").fetchone()[0]
        finally:
            con.close()
    return out


def test_generate_run_and_compare_with_a_local_run(netns_cluster_factory, tmp_path):
    names = ["alpha", "beta", "gamma"]  # not part<i>: placement is round-robin by name
    cluster = netns_cluster_factory(3, worker_names=names)
    addr = cluster.scheduler_address
    data = tmp_path / "coordinator"
    gen = ["generate", "--seed", SEED, "--data", data, "--cluster", addr, "--quiet"]
    _ok(*gen, "--kind", "F", "--rows", 3000, "--partitions", "2,4")
    out = _ok(*gen, "--kind", "G", "--rows", 800, "--partitions", "2,4").output
    assert "on alpha@host0, beta@host1" in out

    for name in ("F2", "F4", "G2", "G4"):
        m = read_manifest(data / name)
        # Worker-side files live under the table's identity, not its name.
        key = f"{name}-n{m.rows}-seed{SEED}-gen{m.generator_version}-{m.table_id}"
        for p in m.parts:
            owner = names[p.index % 3]
            assert (p.worker, p.host) == (owner, cluster.hosts[owner].host)
            assert Path(p.path) == cluster.data_dirs[owner] / key / p.file
            assert Path(p.path).is_file()
            # The partition exists only on its owner's disk, never on the coordinator's.
            for other in set(names) - {owner}:
                assert not (cluster.data_dirs[other] / key / p.file).exists()
            assert not (data / name / p.file).exists()

    # Run all five queries on the cluster; the runner verifies every answer.
    cl_run = tmp_path / "cluster.json"
    common = ["--partitions", "2,4", "--repeat", 2, "--warmup", 0, "--timeout", 60, "--quiet"]
    out = _ok("run", "--data", data, "--cluster", addr, "--out", cl_run, *common).output
    # Fewer workers than partitions, one thread each: said, not silently measured.
    assert "warning: F4 has 4 partitions on 3 workers (alpha holds 2)" in out
    assert "warning: F4: worker alpha has 1 thread(s) for its 2 partitions" in out
    assert "dashboard" not in out  # started with --no-dashboard: no link to print
    # The same tables, generated and run locally.
    local = tmp_path / "local"
    build_tables(local, [TableSpec("F", 3000, p, SEED) for p in (2, 4)], jobs=2)
    build_tables(local, [TableSpec("G", 800, p, SEED) for p in (2, 4)], jobs=2)
    lo_run = tmp_path / "local.json"
    _ok("run", "--data", local, "--out", lo_run, *common)

    a, b = runfile.load(lo_run), runfile.load(cl_run)
    for r in (a, b):
        assert {(m.table, m.query) for m in r.measurements} == {
            (t, q)
            for t in ("F2", "F4", "G2", "G4")
            for q in ("scan", "select", "average", "update", "join")
        }
        assert all(rep.verified for m in r.measurements for rep in m.repetitions)
    topo = b.topology
    assert b.config.cluster == addr and topo.scheduler == addr
    assert {h.host: h.workers for h in topo.hosts} == {
        "host0": ("alpha",),
        "host1": ("beta",),
        "host2": ("gamma",),
    }
    assert all(h.cores >= 1 for h in topo.hosts)
    # Dask threads and memory limit of every worker (NetnsCluster: 1 thread, 2 GiB)
    assert all(h.worker_nthreads == (1,) for h in topo.hosts)
    assert all(h.worker_memory_bytes == (2 * 2**30,) for h in topo.hosts)
    assert b.config.memory_limit == "60%"  # of each worker's memory, decided there
    assert topo.rtt_s is not None and 0 < topo.rtt_s < 1
    # ... and the run file keeps the placement warnings (F2, G2: one worker per partition).
    assert [n for n in b.notes if n.startswith("warning:")] == [
        f"warning: {t} has 4 partitions on 3 workers (alpha holds 2): fewer than P "
        "processes, so its speedup and scaleup are not comparable with P workers"
        if i == 0
        else f"warning: {t}: worker alpha has 1 thread(s) for its 2 partitions, so they "
        "queue instead of running in parallel"
        for t in ("F4", "G4")
        for i in (0, 1)
    ]
    # Partition 3 of F4 ran on alpha, next to partition 0.
    f4_scan = b.measurement("F4", "scan").repetitions[0]
    assert {s.part: s.worker for s in f4_scan.partitions} == {
        0: "alpha",
        1: "beta",
        2: "gamma",
        3: "alpha",
    }
    cmp = _ok("compare", lo_run, cl_run)
    assert "F4" in cmp.output and "not comparable" not in cmp.output

    # A complete table is reused; an interrupted one is finished on its owners.
    assert "F2: 3,000 rows in 2 partitions (already built)" in _ok(
        *gen, "--kind", "F", "--rows", 3000, "--partitions", 2
    ).output.replace(str(data) + "/", "")
    before = read_manifest(data / "F2")
    (data / "F2" / "manifest.json").unlink()
    Path(before.parts[1].path).unlink()  # beta lost its file; alpha's is complete
    out = _ok(*gen, "--kind", "F", "--rows", 3000, "--partitions", 2).output
    assert "built 1 partition " in out and "1 partition kept" in out
    after = read_manifest(data / "F2")
    assert [p.checksum for p in after.parts] == [p.checksum for p in before.parts]

    # A missing worker: one line naming the partitions nobody can reach, exit 2.
    cluster.kill_worker("gamma")
    t0 = time.monotonic()
    res = _cli("run", "--data", data, "--cluster", addr, "--tables", "F", "--partitions", 4,
               "--timeout", 3, "--quiet")  # fmt: skip
    line = _one_line_error(res)
    assert "gamma" in line and "partitions 2 are unreachable" in line, line
    assert time.monotonic() - t0 < 20
    res = _cli(*gen, "--kind", "F", "--rows", 3000, "--partitions", 4, "--seed", SEED + 1)
    assert res.exit_code == 2 and "another table" in res.output


def test_tls_cluster_and_plaintext_refused(netns_cluster_factory, tmp_path):
    from harness.netns import TlsUnavailable, make_tls_files

    try:
        tls = make_tls_files(tmp_path / "tls")
    except TlsUnavailable as exc:
        pytest.skip(str(exc))
    cluster = netns_cluster_factory(2, tls=tls)
    addr = cluster.scheduler_address
    assert addr.startswith("tls://")
    files = ["--tls-ca", tls.ca, "--tls-cert", tls.cert, "--tls-key", tls.key]
    data = tmp_path / "data"
    _ok("generate", "--kind", "F", "--rows", 2000, "--partitions", 2, "--data", data,
        "--cluster", addr, *files, "--quiet")  # fmt: skip
    assert [p.worker for p in read_manifest(data / "F2").parts] == ["part0", "part1"]
    out = _ok("run", "--data", data, "--cluster", addr, *files, "--tables", "F",
              "--partitions", 2, "--repeat", 1, "--warmup", 0, "--out", tmp_path / "r.json",
              "--timeout", 60, "--quiet").output  # fmt: skip
    assert "all answers verified" in out

    # A worker process that dies and is restarted by its nanny (same name, new address)
    # lost its sessions: its partition fails promptly, the others are not waited for forever.
    engine = make_engine(
        "shared-nothing",
        EngineConfig(
            cluster=addr,
            security=tls.security(),
            fault=Fault(part=1, phase="run", action="sleep", seconds=30),
            timeout_s=60,
        ),
    )
    engine.start(2)
    try:
        m = read_manifest(data / "F2")
        engine.open_table(m, str(data / "F2"))
        crasher, errors = _kill_when_running(cluster, "part1", "task_run", 0.2, crash_only=True)
        t0 = time.monotonic()
        with pytest.raises(commit.PartitionFailure, match="partition 1 on part1: WorkerLost"):
            engine.execute(engine.statements(queries.get("scan"), m, "full-row"))
        assert time.monotonic() - t0 < 25
        crasher.join(timeout=30)
        assert not errors, errors
    finally:
        engine.stop()

    plain = addr.replace("tls://", "tcp://")
    line = _one_line_error(_cli("run", "--data", data, "--cluster", plain, *files))
    assert "refusing plaintext tcp://" in line
    line = _one_line_error(_cli("run", "--data", data, "--cluster", addr))
    assert "--tls-ca" in line


def _cluster_table(cluster, data: Path, partitions: int):
    with cluster.client() as client:
        result = build_tables(
            data, [TableSpec("F", 3000, partitions, 11)], client=client, timeout=60
        )
    return data / "F3" if partitions == 3 else data / f"F{partitions}", result.manifests[0]


def test_worker_killed_during_update_changes_nothing(netns_cluster_factory, tmp_path):
    cluster = netns_cluster_factory(3)
    table, m = _cluster_table(cluster, tmp_path / "data", 3)
    exp = expected_answers(m)
    engine = make_engine(
        "shared-nothing",
        EngineConfig(
            cluster=cluster.scheduler_address,
            fault=Fault(part=1, phase="prepare", action="sleep", seconds=30),
            timeout_s=60,
        ),
    )
    engine.start(3)
    try:
        engine.open_table(m, str(table))
        killer, errors = _kill_when_running(cluster, "part1", "task_prepare")
        t0 = time.monotonic()
        with pytest.raises(commit.CommitAborted, match="partition 1 on part1: WorkerLost"):
            engine.update("t-kill", engine.statements(queries.get("update"), m, "full-row"))
        assert time.monotonic() - t0 < 25, "a dead worker must fail the update promptly"
        killer.join(timeout=30)
        assert not errors, errors
        assert commit.DecisionLog(table).pending() == []
        # Release the survivors' files (the dead one's close fails, as it must).
        with pytest.raises(commit.PartitionFailure, match=r"partition 1 on part1"):
            engine.close_table()
    finally:
        engine.stop()
    # Every partition, including the dead worker's file left on its disk, is unchanged.
    assert _four_sums_on_disk(m) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}


def test_worker_killed_during_scan_is_an_error_not_a_time(netns_cluster_factory, tmp_path):
    cluster = netns_cluster_factory(2)
    data = tmp_path / "data"
    _cluster_table(cluster, data, 2)
    out = tmp_path / "never.json"
    opts = RunOptions(
        catalog=CATALOG,
        data_dir=str(data),
        kinds=("F",),
        partitions=(2,),
        queries=("scan",),
        repeat=1,
        warmup=0,
        out=str(out),
        engine=EngineConfig(
            cluster=cluster.scheduler_address,
            fault=Fault(part=0, phase="run", action="sleep", seconds=30),
            timeout_s=60,
        ),
    )
    killer, errors = _kill_when_running(cluster, "part0", "task_run", settle=0.2)
    t0 = time.monotonic()
    with pytest.raises(WisconsinError, match="partition 0 on part0: WorkerLost"):
        run(opts)
    assert time.monotonic() - t0 < 25
    killer.join(timeout=30)
    assert not errors, errors
    assert not out.exists()


def _bytes(duckdb_size: str) -> float:
    number, unit = duckdb_size.split()
    return float(number) * {"MiB": 2**20, "GiB": 2**30, "KiB": 2**10}[unit]


def test_two_data_directories_on_the_same_workers_never_share_a_file(
    netns_cluster_factory, tmp_path
):
    cluster = netns_cluster_factory(2)
    addr = cluster.scheduler_address
    gen = ["generate", "--kind", "F", "--partitions", 2, "--seed", SEED, "--cluster", addr]
    dirs = {"A": 3000, "B": 5000, "C": 3000}  # the same name F2; C is A's twin in size
    for d, rows in dirs.items():
        _ok(*gen, "--rows", rows, "--data", tmp_path / d, "--quiet")
    for d in dirs:
        out = _ok("run", "--data", tmp_path / d, "--cluster", addr, "--repeat", 1,
                  "--warmup", 0, "--timeout", 60, "--out", tmp_path / f"{d}.json",
                  "--quiet").output  # fmt: skip
        assert "all answers verified" in out and "warning" not in out
    ms = {d: read_manifest(tmp_path / d / "F2") for d in dirs}
    assert len({m.table_id for m in ms.values()}) == 3
    assert len({p.path for m in ms.values() for p in m.parts}) == 6
    for m in ms.values():
        assert all(Path(p.path).is_file() for p in m.parts)

    # info --cluster reads every partition on its owner.
    out = _ok("info", tmp_path / "A" / "F2", "--cluster", addr).output
    assert "verified: every partition matches the manifest, each read by its owner" in out
    assert f"id {ms['A'].table_id}" in out
    local = _ok("info", tmp_path / "A" / "F2").output
    assert "give --cluster ADDRESS to verify them there" in local
    # A damaged remote partition is found by its owner.
    Path(ms["C"].parts[1].path).unlink()
    res = _cli("info", tmp_path / "C" / "F2", "--cluster", addr)
    assert res.exit_code == 3 and "problem: partition 1" in res.output, res.output
    assert "problem: partition 0" not in res.output

    # DuckDB's memory limit comes from the worker's Dask memory limit (2 GiB), not from
    # the client's RAM: 60% of it for the worker's one partition.
    engine = make_engine(
        "shared-nothing", EngineConfig(cluster=addr, memory_limit="60%", timeout_s=60)
    )
    engine.start(2)
    try:
        engine.open_table(ms["A"], str(tmp_path / "A" / "F2"))
        limits = engine.query("SELECT current_setting('memory_limit')")
        engine.close_table()
    finally:
        engine.stop()
    for rows in limits.values():
        assert 0.5 * 2**30 < _bytes(rows[0][0]) < 0.61 * 2 * 2**30, rows

    # The same worker names come back on swapped hosts: reported, never used.
    cluster.stop()
    swapped = netns_cluster_factory(2, worker_names=["part1", "part0"])
    res = _cli("info", tmp_path / "A" / "F2", "--cluster", swapped.scheduler_address)
    assert res.exit_code == 3  # its check fails: damaged data
    assert (
        "partition 0: its worker part0 now runs on host1, but the partition was "
        "written on host0" in res.output
    )
    line = _one_line_error(
        _cli(
            "run",
            "--data",
            tmp_path / "A",
            "--cluster",
            swapped.scheduler_address,
            "--timeout",
            30,
            "--out",
            tmp_path / "never.json",
            "--quiet",
        )  # fmt: skip
    )
    assert "F2: partition 0: its worker part0 now runs on host1" in line
    assert "(and 1 more)" in line
    assert not (tmp_path / "never.json").exists()


def test_remote_partition_damage_is_caught_before_timing(netns_cluster_factory, tmp_path):
    from harness.damage import corrupt_blocks

    cluster = netns_cluster_factory(2)
    data = tmp_path / "data"
    _table, m = _cluster_table(cluster, data, 2)
    corrupt_blocks(m.parts[1].path, "wisconsin_copy")
    out = tmp_path / "runs"
    line = _one_line_error(
        _cli("run", "--data", data, "--cluster", cluster.scheduler_address, "--tables", "F",
             "--queries", "average", "--repeat", 1, "--warmup", 0, "--out", out, "--quiet"),
        code=3,
    )  # fmt: skip
    assert "partition 1: wisconsin_copy is corrupt" in line and "(on part1)" in line, line
    assert not out.exists()
    # repaired on its owner, exactly that partition; then the run verifies every answer
    fixed = _ok("repair", data / "F2", "--cluster", cluster.scheduler_address, "--quiet")
    assert "rebuilt partition 1:" in fixed.output and "partition 0" not in fixed.output
    _ok("run", "--data", data, "--cluster", cluster.scheduler_address, "--tables", "F",
        "--queries", "average,update", "--repeat", 1, "--warmup", 0, "--out", out, "--quiet")  # fmt: skip


def test_worker_crash_during_undo_leaves_the_generated_table(netns_cluster_factory, tmp_path):
    """The update committed on every worker; part1's worker process dies in the undo's
    prepare. The next open (its nanny restarted it) undoes the update where it is still
    applied and verifies every partition's digest."""
    cluster = netns_cluster_factory(3)
    table, m = _cluster_table(cluster, tmp_path / "data", 3)
    exp = expected_answers(m)
    config = EngineConfig(cluster=cluster.scheduler_address, timeout_s=60)
    engine = make_engine("shared-nothing", config)
    engine.start(3)
    try:
        engine.open_table(m, str(table))
        undo = engine.statements(queries.get("update"), m, "full-row", delta=-117)
        with pytest.raises(commit.CommitAborted, match="partition 1 on part1"):  # noqa: SIM117
            with commit.update_pair(table, "uc1", "uc2", undo):
                engine.update("uc1", engine.statements(queries.get("update"), m, "full-row"))
                engine.config = EngineConfig(
                    cluster=cluster.scheduler_address,
                    timeout_s=60,
                    fault=Fault(part=1, phase="prepare", action="sleep", seconds=30),
                )
                killer, errors = _kill_when_running(
                    cluster, "part1", "task_prepare", crash_only=True
                )
                engine.update("uc2", undo)
        killer.join(timeout=30)
        assert not errors, errors
        assert len(commit.DecisionLog(table).pending_pairs()) == 1
    finally:
        engine.stop()
    engine = make_engine("shared-nothing", config)
    engine.start(3)
    try:
        engine.open_table(m, str(table))  # recovery, then the digest check
        engine.close_table()
    finally:
        engine.stop()
    assert commit.DecisionLog(table).is_empty()
    assert _four_sums_on_disk(m) == {p: pe.sum_four for p, pe in enumerate(exp.parts)}
