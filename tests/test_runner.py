import shutil

import duckdb
import pytest

from wisconsin import runfile
from wisconsin.build import build_tables
from wisconsin.runner import RunOptions, VerificationError, run
from wisconsin.store import TableSpec, read_manifest

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
    opts = RunOptions(data_dir=str(data), out=str(tmp_path / "runs"), warmup=1, **kw)
    return run(opts)


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_every_query_verified_at_p_1_2_4(tables, tmp_path, mode, cache):
    result, path = _run(tables, tmp_path, mode=mode, partitions=(1, 2, 4), cache=cache)
    assert path.exists()
    loaded = runfile.load(path)
    assert loaded == result
    assert result.status == "complete" and result.stop_reason.startswith("max reps")
    assert len(result.measurements) == 6 * 5
    for m in result.measurements:
        assert m.repetitions and all(r.verified for r in m.repetitions)
        assert m.cache == cache and m.table_bytes > 0
        # the warm-up is cold only where it was evicted first (it used to be tagged cold
        # whatever the cache held)
        assert m.warmup.cold == (cache == "cold") and m.warmup.index == 0
        assert all(r.wall_s > 0 for r in m.repetitions)
        for r in m.repetitions:
            assert r.round == 1 and r.overhead_s > 0 and r.engine_share > 0
            assert r.cold == (cache == "cold")
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
    if mode == "shared-nothing":
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
def test_a_wrong_answer_fails_the_run(tables, tmp_path, query, sql, mode):
    data = _corrupt_copy(tables, tmp_path, sql)
    with pytest.raises(VerificationError, match=f"F2 {query}: wrong answer"):
        _run(data, tmp_path, mode=mode, partitions=(2,), kinds=("F",), queries=(query,))
    assert not list((tmp_path / "runs").glob("*.json")) if (tmp_path / "runs").exists() else True


def test_run_files_are_never_overwritten(tables, tmp_path):
    out = tmp_path / "one.json"
    kw = dict(mode="shared-memory", partitions=(1,), kinds=("F",), queries=("average",))
    opts = RunOptions(data_dir=str(tables), out=str(out), repeat=1, **kw)
    run(opts)
    before = out.read_bytes()
    with pytest.raises(Exception, match="never overwritten"):
        run(opts)
    assert out.read_bytes() == before


def test_manifests_survive_runs(tables):
    # The runner adds result and marker tables but never changes the measured rows.
    from wisconsin.store import verify_table

    for name in ("F2", "G4"):
        _m, problems = verify_table(tables / name)
        assert problems == []
    assert read_manifest(tables / "F4").partitions == 4
