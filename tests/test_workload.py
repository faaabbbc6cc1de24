"""The query seam: a sixth query is one SQL text and one registry entry, nothing else, and
the real runner times and verifies it in both modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from wisconsin.builds import build_tables
from wisconsin.measure.runner import RunOptions, VerificationError, run
from wisconsin.store import TableSpec
from wisconsin.workloads.wisconsin import queries
from wisconsin.workloads.wisconsin.queries import CATALOG
from wisconsin.workloads.wisconsin.verify import _fail, inserted_rows

FIXTURES = Path(__file__).parent / "fixtures"

ROWS = 3000


def _check_tenpct(q, engine, m, exp, step, variant):
    """The 10% select's answer: 10 x ?tablesize/100 rows inserted, and
    the result table holds them (unique1 is dense: 0..n-1)."""
    want = 10 * queries.onepct_bound(m.rows)
    inserted = inserted_rows(step)
    held = sum(rows for rows, _digest in engine.result_digests(q.result_table).values())
    if inserted != want or held != want:
        raise _fail(m, q.name, f"inserted {inserted}, holds {held}, expected {want}")
    return inserted, None


SELECT_10PCT = queries.Query(
    name="select10",
    label="Select 10% & Insert",
    check=_check_tenpct,
    expected_rows=lambda e: 10 * queries.onepct_bound(e.rows),
    sql="INSERT INTO {result} SELECT * FROM {table} WHERE unique1 < 10 * {onepct_bound}",
    writes_result=True,
)


@pytest.fixture
def sixth_query():
    queries.register(SELECT_10PCT)
    yield SELECT_10PCT
    queries.unregister(SELECT_10PCT.name)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    build_tables(data, [TableSpec("F", ROWS, p, 7) for p in (1, 2)], jobs=2)
    return data


@pytest.mark.parametrize("mode", ["shared-nothing", "shared-memory"])
def test_a_registered_sixth_query_runs_verified_in_both_modes(data, tmp_path, mode, sixth_query):
    result, _path = run(
        RunOptions(
            catalog=CATALOG,
            data_dir=str(data),
            out=str(tmp_path / "runs"),
            mode=mode,
            kinds=("F",),
            queries=("select10", "select"),
            repeat=1,
            warmup=1,
        )
    )
    got = {(m.table, m.query): m for m in result.measurements}
    assert set(got) == {(t, q) for t in ("F1", "F2") for q in ("select10", "select")}
    for (_t, q), m in got.items():  # the built-in select alongside, as before
        if q == "select10":
            assert m.expected_rows == 10 * (ROWS // 100)
        assert m.repetitions
        assert all(r.verified and r.rows == m.expected_rows > 0 for r in m.repetitions)


def test_a_wrong_answer_of_the_sixth_query_voids_the_run(data, tmp_path, sixth_query):
    queries.unregister(SELECT_10PCT.name)  # the same query, its SQL off by one row
    queries.register(queries.Query(**{**SELECT_10PCT.__dict__, "sql": SELECT_10PCT.sql + " - 1"}))
    with pytest.raises(VerificationError, match="select10: wrong answer"):
        run(
            RunOptions(
                catalog=CATALOG,
                data_dir=str(data),
                out=str(tmp_path / "runs"),
                mode="shared-memory",
                kinds=("F",),
                queries=("select10",),
                repeat=1,
                warmup=0,
            )
        )


def test_the_registry_is_the_one_list():
    from wisconsin.workloads.wisconsin import tandem

    assert queries.QUERIES == ("scan", "select", "average", "update", "join")
    assert tuple(tandem.QUERY_LABELS) == queries.QUERIES
    with pytest.raises(queries.WisconsinError, match="unknown query 'nope'"):
        queries.get("nope")


def test_every_workload_has_the_entry_points_the_cli_calls():
    """The CLI dispatches report/plot/compare/audit through wisconsin.workloads only."""
    import inspect

    from wisconsin import cli, workloads

    for name in workloads.NAMES:
        module = workloads.get(name)
        for entry in ("owns", "report_files", "plot_files", "compare_files", "audit_file"):
            assert callable(getattr(module, entry)), (name, entry)
        assert module.DESCRIPTION
    assert workloads.of_run(FIXTURES / "run_v2.json") == "wisconsin"
    source = inspect.getsource(cli)
    assert "is_debitcredit" not in source and "debitcredit.report" not in source
