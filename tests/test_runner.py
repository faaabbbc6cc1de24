import shutil

import duckdb
import pytest

from wisconsin.builds import build_tables
from wisconsin.measure.runner import RunOptions, VerificationError, run
from wisconsin.runfiles import runfile
from wisconsin.store import TableSpec, read_manifest
from wisconsin.store import check as store_check
from wisconsin.workloads.wisconsin.queries import CATALOG

N_F = 3000  # F table rows
N_G = 1000  # G rows per partition


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    specs = [TableSpec(k, N_F if k == "F" else N_G, p, 7) for k in "FG" for p in (1, 2, 4)]
    build_tables(data, specs, jobs=2)
    return data


def _run(data, tmp_path, **kw):
    kw.setdefault("repeat", 1)
    opts = RunOptions(
        catalog=CATALOG, data_dir=str(data), out=str(tmp_path / "runs"), warmup=1, **kw
    )
    return run(opts)


@pytest.mark.parametrize(
    "mode, cache, partitions",
    [
        ("shared-memory", "cold", (1, 2, 4)),
        ("shared-nothing", "cold", (1, 2, 4)),
        ("shared-memory", "warm", (2,)),
        ("shared-nothing", "warm", (2,)),
    ],
)
def test_every_query_verified(tables, tmp_path, mode, cache, partitions):
    result, path = _run(tables, tmp_path, mode=mode, partitions=partitions, cache=cache)
    assert path.exists()
    loaded = runfile.load(path)
    assert loaded == result
    assert result.status == "complete" and result.stop_reason.startswith("max reps")
    assert len(result.measurements) == 2 * len(partitions) * 5
    for m in result.measurements:
        assert m.repetitions and all(r.verified for r in m.repetitions)
        assert m.cache == cache and m.table_bytes > 0
        # the warm-up is cold only where it was evicted first (it used to be tagged cold
        # whatever the cache held)
        assert m.warmup.cold == (cache == "cold") and m.warmup.index == 0
        assert all(r.wall_s > 0 for r in m.repetitions)
        for r in m.repetitions:
            assert r.round == 1 and r.engine_share > 0
            # time outside the engine: a dispatch in shared-nothing, ~nothing in-process
            assert r.overhead_s > 0 if mode == "shared-nothing" else r.overhead_s >= 0
            assert r.cold == (cache == "cold")
            # the update's engine share counts the coordinator's fsynced commit decision
            # (transaction-manager work); every other query has none
            decision = r.commit_decision_s if m.query == "update" else 0.0
            assert (r.commit_decision_s is not None) == (m.query == "update")
            slowest = max(s.engine_s for s in r.partitions) + decision
            assert r.engine_share == pytest.approx(slowest / r.wall_s)
            assert 0 < r.engine_share <= 1.0 + 1e-9
        if m.query == "scan":
            assert m.repetitions[0].rows == 0
            assert sum(s.rows_scanned for s in m.repetitions[0].partitions) == m.rows
        if m.query in ("select", "join", "update"):
            assert m.repetitions[0].rows == m.expected_rows > 0
            # profiled on the warm-up only: timed repetitions carry no profiling cost
            assert all(s.rows_scanned for s in m.warmup.partitions)
            assert all(s.rows_scanned is None for s in m.repetitions[0].partitions)
        if m.query == "average":
            assert m.repetitions[0].answer is not None
    assert result.config.mode == mode
    assert result.environment.usable_cores >= 1
    # the single-thread baseline: F1 through one in-process DuckDB thread
    assert [m.query for m in result.baseline] == list(result.config.queries) or 1 not in partitions
    if 1 in partitions:
        assert all(m.table == "F1" and m.partitions == 1 for m in result.baseline)
        cal = result.calibration
        assert dict(cal.scan_rows_per_s).keys() == set(result.config.queries)
        assert sorted(dict(cal.dispatch_s)) == list(partitions)
    if mode == "shared-nothing" and 4 in partitions:
        workers = {w for h in result.topology.hosts for w in h.workers}
        assert workers == {"part0", "part1", "part2", "part3"}
        f4 = result.measurement("F4", "select")
        assert sorted(s.worker for s in f4.repetitions[0].partitions) == [
            "part0",
            "part1",
            "part2",
            "part3",
        ]


def test_scan_variants_report_what_was_read(tables, tmp_path):
    rows = {}
    for variant in ("full-row", "predicate-column", "as-written"):
        result, _ = _run(
            tables,
            tmp_path / variant,
            mode="shared-memory",
            partitions=(2,),
            kinds=("F",),
            queries=("scan",),
            scan_variant=variant,
        )
        m = result.measurement("F2", "scan")
        assert m.variant == variant
        rows[variant] = sum(s.rows_scanned for s in m.repetitions[0].partitions)
    assert rows == {"full-row": N_F, "predicate-column": N_F, "as-written": 0}


def _corrupt_copy(tables, tmp_path, sql):
    data = tmp_path / "corrupt"
    shutil.copytree(tables / "F2", data / "F2")
    con = duckdb.connect(str(data / "F2" / "part-001.duckdb"))
    con.execute(sql)
    con.close()
    return data


@pytest.mark.parametrize(
    "query, sql",
    [
        # one row more in the 1% selection: select, join and update must all notice
        (
            "select",
            f"UPDATE wisconsin SET hundpct = 0 WHERE hundpct >= {N_F // 100} AND unique2 = "
            f"(SELECT min(unique2) FROM wisconsin WHERE hundpct >= {N_F // 100})",
        ),
        ("join", f"UPDATE wisconsin_copy SET hundpct = {N_F - 1} WHERE hundpct < {N_F // 100}"),
        ("average", "UPDATE wisconsin SET onepct = onepct + 1 WHERE unique2 = 2000"),
        (
            "update",
            f"UPDATE wisconsin SET hundpct = 0 WHERE hundpct >= {N_F // 100} AND unique2 = "
            f"(SELECT min(unique2) FROM wisconsin WHERE hundpct >= {N_F // 100})",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_a_wrong_answer_fails_the_run(tables, tmp_path, query, sql, mode, monkeypatch):

    data = _corrupt_copy(tables, tmp_path, sql)
    # The check before timing may catch the change first (tests/test_store.py); here the
    # answer checks themselves are under test, so it is switched off.
    monkeypatch.setattr(store_check, "check_table", lambda *args, **kwargs: None)
    with pytest.raises(VerificationError, match=f"F2 {query}: wrong answer"):
        _run(data, tmp_path, mode=mode, partitions=(2,), kinds=("F",), queries=(query,))
    assert not list((tmp_path / "runs").glob("*.json")) if (tmp_path / "runs").exists() else True


def test_run_files_are_never_overwritten(tables, tmp_path):
    out = tmp_path / "one.json"
    kw = dict(mode="shared-memory", partitions=(1,), kinds=("F",), queries=("average",))
    opts = RunOptions(catalog=CATALOG, data_dir=str(tables), out=str(out), repeat=1, **kw)
    run(opts)
    before = out.read_bytes()
    with pytest.raises(Exception, match="never overwritten"):
        run(opts)
    assert out.read_bytes() == before


def test_manifests_survive_runs(tables):
    # The runner adds result and marker tables but never changes the measured rows.
    from wisconsin.store.check import verify_table

    for name in ("F2", "G4"):
        _m, problems = verify_table(tables / name)
        assert problems == []
    assert read_manifest(tables / "F4").partitions == 4


def test_cold_scans_read_their_data_warm_ones_do_not(tables, tmp_path):
    read = {}
    for cache in ("cold", "warm"):
        result, _ = _run(
            tables,
            tmp_path / cache,
            mode="shared-nothing",
            partitions=(2,),
            kinds=("F",),
            queries=("scan",),
            cache=cache,
            repeat=2,
        )
        m = result.measurement("F2", "scan")
        read[cache] = [s.bytes_read / s.data_bytes for r in m.repetitions for s in r.partitions]
    assert min(read["cold"]) >= 0.9
    assert max(read["warm"]) < 0.1


def test_a_cold_run_whose_data_stayed_cached_fails(tables, tmp_path, monkeypatch):
    from wisconsin import WisconsinError
    from wisconsin.engines.shared_memory import SharedMemoryEngine

    monkeypatch.setattr(SharedMemoryEngine, "make_cold", lambda self: {})
    with pytest.raises(WisconsinError, match="not a cold time"):
        _run(
            tables,
            tmp_path,
            mode="shared-memory",
            partitions=(2,),
            kinds=("F",),
            queries=("scan",),
            baseline=False,
        )


def test_rounds_run_every_step_once_in_their_seeded_order(tables, tmp_path):
    from wisconsin.analysis import schedule

    result, _ = _run(
        tables,
        tmp_path,
        mode="shared-memory",
        partitions=(1, 2),
        kinds=("F", "G"),
        queries=("scan", "average"),
        repeat=3,
        order_seed=11,
    )
    labels = sorted(f"{m.table}/{m.query}" for m in result.measurements)
    assert [r.index for r in result.rounds] == [0, 1, 2, 3]  # the cold warm-up round first
    assert result.config.order_seed == 11 and result.config.repeat == 3
    for rnd in result.rounds:
        assert sorted(rnd.order) == labels
        steps = [schedule.Step.parse(x) for x in rnd.order]
        assert [s.label for s in schedule.round_order(steps, rnd.seed)] == list(rnd.order)
        assert rnd.seed == schedule.round_seed(11, rnd.index)
    assert len({r.order for r in result.rounds}) > 1  # the orders differ between rounds
    for m in result.measurements:
        assert [r.round for r in m.repetitions] == [1, 2, 3]
        for r in m.repetitions:
            assert result.rounds[r.round].order[r.position] == f"{m.table}/{m.query}"


@pytest.mark.parametrize(
    "reps, blocks, want",
    [
        # (min, max) rounds, --blocks -> the block of rounds 1..n
        ((3, 3), 3, [1, 2, 3]),
        ((4, 4), 2, [1, 1, 2, 2]),
        ((5, 5), 2, [1, 1, 2, 2, 3]),  # a last block cut short by --max-reps
        ((1, 1), 3, [1]),  # one round: one block (run-to-run variation unknown)
    ],
)
def test_blocks_split_the_rounds_and_the_stop_rule_waits_for_a_whole_block(
    tables, tmp_path, reps, blocks, want
):
    lo, hi = reps
    result, _ = _run(
        tables, tmp_path, mode="shared-memory", partitions=(1, 2), kinds=("F",),
        queries=("average",), repeat=None, min_reps=lo, max_reps=hi, blocks=blocks,
    )  # fmt: skip
    assert [r.block for r in result.rounds if r.index > 0] == want
    assert result.config.blocks == blocks and result.config.block_rounds == max(1, lo // blocks)
    m = result.measurement("F2", "average")
    assert list(result.times_by_block(m)) == sorted(set(want))
    assert result.blocks_done() == len(set(want))


def test_each_block_starts_fresh_worker_processes(tables, tmp_path):
    """shared-nothing: the workers are restarted before each block's first round (its
    start-up seconds recorded there); the intervals are then over the blocks."""
    from wisconsin.analysis.metrics import compute_points

    result, _ = _run(
        tables, tmp_path, mode="shared-nothing", partitions=(1, 2), kinds=("F",),
        queries=("average",), repeat=None, min_reps=2, max_reps=2, blocks=2,
    )  # fmt: skip
    fresh = [(r.index, r.block, r.fresh_workers_s) for r in result.rounds]
    assert [(i, b) for i, b, _ in fresh] == [(0, 1), (1, 1), (2, 2)]
    assert fresh[1][2] is None and fresh[2][2] > 0  # restarted before block 2 only
    point = next(p for p in compute_points(result) if p.P == 2)
    assert point.blocks == 2 and point.ratio.lo is not None
    # where the run's time went (issue 45): each part measured, none counted twice
    spent = result.time_spent
    reps = [r for m in (*result.measurements, *result.baseline) for r in m.repetitions]
    assert spent.timed_s >= sum(r.wall_s for r in reps) and spent.fresh_workers_s >= fresh[2][2]
    assert min(spent.warmups_s, spent.eviction_s, spent.empty_statements_s) > 0
    assert min(spent.checks_s, spent.probes_s, spent.start_s, spent.opens_s) > 0
    assert spent.undo_s == spent.resets_s == 0  # the average: no update, no result table
    parts = spent.total_s - spent.other_s
    assert spent.other_s >= 0 and parts <= spent.total_s


def test_a_worker_killed_mid_run_leaves_an_incomplete_file_that_resume_completes(tables, tmp_path):
    import os
    import signal

    from wisconsin import WisconsinError
    from wisconsin.measure.runner import resume
    from wisconsin.workloads.wisconsin.audit import audit

    out = tmp_path / "run.json"
    killed, last = [], []

    def progress(label, done, total):
        # the next step is on the table the previous one opened (a round runs each table's
        # steps as one block): kill its workers mid-block, in the first timed round
        table = label.split("/")[0]  # "shared-nothing round 1: F2"
        mid_block = last and last[-1] == table and not table.startswith("baseline")
        if "round 1" in label and mid_block and not killed:
            for c in _worker_processes():
                os.kill(c.pid, signal.SIGKILL)
                killed.append(c.pid)
        last.append(table)

    opts = RunOptions(
        catalog=CATALOG,
        data_dir=str(tables),
        out=str(out),
        mode="shared-nothing",
        partitions=(2, 4),
        kinds=("F",),
        queries=("scan", "average", "update"),
        repeat=2,
        order_seed=3,
    )
    with pytest.raises(WisconsinError, match="incomplete.*--resume") as err:
        run(opts, progress=progress)
    assert killed, err.value
    partial = runfile.load(out)
    assert partial.status == "incomplete" and partial.stop_reason.startswith("failed")
    done = sum(len(m.repetitions) for m in (*partial.measurements, *partial.baseline))
    assert 0 < done < 2 * 3 * 2 + 5 * 2
    result, path = resume(out, catalog=CATALOG)
    assert path == out and result.status == "complete"
    assert runfile.load(out) == result
    assert all(len(m.repetitions) == 2 for m in (*result.measurements, *result.baseline))
    assert any("resumed" in n for n in result.notes)
    assert result.time_spent is None  # its time was spent by two processes: not recorded
    rules = {r.name: r for r in audit(result)}
    assert rules["repetitions interleaved"].ok, rules["repetitions interleaved"]
    assert rules["answers verified"].ok and rules["cache state proven"].ok
    assert not (tmp_path / "run.json.journal").exists()
    with pytest.raises(WisconsinError, match="complete run"):
        resume(out, catalog=CATALOG)


def test_a_journal_torn_by_a_kill_is_read_up_to_its_last_whole_line(tables, tmp_path):
    from wisconsin.measure import journal

    result, path = _run(
        tables, tmp_path, mode="shared-memory", partitions=(2,), kinds=("F",), queries=("scan",)
    )
    state = journal.RunState(runfile.to_dict(result), tmp_path / "j.journal")
    m = runfile.to_dict(result.measurements[0])
    shell = {k: v for k, v in m.items() if k not in ("warmup", "repetitions")}
    rep = result.measurements[0].repetitions[0]
    state.add_rep("F2/scan", shell, rep, False, 0.1)
    state.close()
    text = (tmp_path / "j.journal").read_text()
    (tmp_path / "j.journal").write_text(text + '{"t": "rep", "label"')
    again = journal.RunState.from_journal(tmp_path / "j.journal")
    assert len(again.reps["F2/scan"]) == len(result.measurements[0].repetitions) + 1


def _worker_processes():
    """This process's Dask worker processes. Not every python child is one: multiprocessing's
    resource tracker is one too, and killing it (CI did, once) restarts no worker."""
    import psutil

    workers = []
    for c in psutil.Process().children():
        try:
            if "spawn_main" in " ".join(c.cmdline()):
                workers.append(c)
        except psutil.Error:  # a killed worker not yet reaped is a zombie: not a worker
            pass
    return workers


def test_a_worker_that_dies_between_tables_is_a_recorded_fact_the_audit_fails(tables, tmp_path):
    """A worker killed while no statement is in flight is restarted by its nanny before the
    next table opens: no call fails, so only the engine's check of the workers' addresses
    sees it. The run file records it and `run complete` fails naming the worker."""
    import os
    import signal
    import time

    from wisconsin.workloads.wisconsin.audit import audit

    killed, last = [], []

    def progress(label, done, total):
        table = label.split("/")[0]  # "shared-nothing round 1: F2"
        if "round 1" in label and last and last[-1] != table and not killed:
            workers = _worker_processes()
            victim = workers[-1]
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)
            # its nanny starts another process: wait for it, so the next opening finds
            # the worker back (under a new address), not a call that fails on the dead one
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                now = _worker_processes()
                if len(now) >= len(workers) and victim.pid not in {c.pid for c in now}:
                    break
                time.sleep(0.1)
        last.append(table)

    opts = RunOptions(
        catalog=CATALOG,
        data_dir=str(tables),
        out=str(tmp_path / "run.json"),
        mode="shared-nothing",
        partitions=(2, 4),
        kinds=("F",),
        queries=("average",),
        repeat=2,
        order_seed=3,
    )
    result, path = run(opts, progress=progress)
    assert killed
    restarts = result.topology.worker_restarts
    assert len(restarts) == 1 and restarts[0].was != restarts[0].now
    assert runfile.load(path).topology.worker_restarts == restarts
    rule = {r.name: r for r in audit(result)}["run complete"]
    assert not rule.ok and f"worker {restarts[0].worker}" in rule.detail, rule
