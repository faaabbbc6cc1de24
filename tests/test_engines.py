"""The engine contract, run against every engine: execute, update, make_cold, the noop
statement and data_bytes behave the same way whatever the architecture."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import duckdb
import pytest

from wisconsin import engines, store
from wisconsin.builds import build_tables
from wisconsin.engines import kind
from wisconsin.engines.base import CommitReport, EngineConfig, PartitionReport
from wisconsin.engines.duckdb_session import memory_share
from wisconsin.measure.runner import make_engine
from wisconsin.store import pagecache
from wisconsin.store.expect import expected_answers
from wisconsin.workloads.wisconsin import queries
from wisconsin.workloads.wisconsin.queries import UPDATE_DELTA

# Why this size: a cold scan also reads DuckDB's header, catalog and row-group metadata
# (a few hundred KB) and the kernel reads ahead, so with a table of a block or two the
# "read >= 90% of the data" check would measure those, not the scan. 40 000 rows in two
# partitions is ~4.7 MB of column data per partition (18 blocks of 256 KiB), large enough
# for the ratio to mean something and small enough to build in about a second.
ROWS = 40_000
PARTS = 2
MODES = engines.MODES  # the contract runs against every registered engine


def _fs_type(path: Path) -> str:
    best, kind = "", ""
    with open("/proc/mounts") as fh:
        for line in fh:
            _dev, mnt, fs, *_ = line.split()
            if str(path).startswith(mnt) and len(mnt) > len(best):
                best, kind = mnt, fs
    return kind


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    data = tmp_path_factory.mktemp("engines")
    (m,) = build_tables(data, [store.TableSpec("F", ROWS, PARTS, 7)], jobs=PARTS).manifests
    return m, str(data / m.name)


@pytest.fixture(scope="module", params=MODES)
def engine(request, table):
    m, tdir = table
    eng = make_engine(request.param, EngineConfig(memory_limit="256MB"))
    eng.start(PARTS)
    eng.open_table(m, tdir)
    yield eng
    eng.stop()


def _scan(engine, m):
    return engine.execute(engine.statements(queries.get("scan"), m, "full-row"))


def test_execute_reports_rows_projections_and_bytes_read(engine, table):
    m, _ = table
    step = _scan(engine, m)
    want = [-1] if engine.mode == "shared-memory" else list(range(PARTS))
    assert sorted(step.units) == want
    assert sum(u.rows_scanned for u in step.units.values()) == ROWS
    for u in step.units.values():
        assert isinstance(u, PartitionReport)  # typed, whichever engine or transport
        assert u.rows == []
        assert all(set(p) == set(store.generator.COLUMNS) for p in u.projections)
        assert isinstance(u.bytes_read, int) and u.bytes_read >= 0
        assert u.engine_s > 0
    assert step.bytes_read == sum(u.bytes_read for u in step.units.values())
    assert step.wall_s >= max(u.engine_s for u in step.units.values())
    # placement is part of the protocol: a worker per partition, or none (one process)
    if kind(engine.mode).instance_per_partition:
        assert sorted(engine.placement) == want and all(engine.placement.values())
    else:
        assert engine.placement == {}
    assert isinstance(engine.warnings, list)


def test_update_applies_and_reports_per_partition(engine, table):
    m, _ = table
    before = engine.query(f"SELECT sum(four)::BIGINT FROM {m.table}")
    step = engine.update(
        f"t{uuid.uuid4().hex[:12]}", engine.statements(queries.get("update"), m, "full-row")
    )
    assert sorted(step.units) == list(range(PARTS))
    assert all(isinstance(u, PartitionReport) for u in step.units.values())
    assert sorted(step.commit) == list(range(PARTS))
    assert all(isinstance(c, CommitReport) for c in step.commit.values())
    exp = expected_answers(m)
    for part, u in step.units.items():
        assert u.rows[0][0] == exp.parts[part].selected
    assert step.bytes_read is not None
    undo = engine.statements(queries.get("update"), m, "full-row", delta=-UPDATE_DELTA)
    engine.update(f"t{uuid.uuid4().hex[:12]}", undo)
    assert engine.query(f"SELECT sum(four)::BIGINT FROM {m.table}") == before


def test_data_bytes_is_the_tables_blocks(engine, table):
    m, tdir = table
    sizes = engine.data_bytes()
    assert sorted(sizes) == list(range(PARTS))
    for part in m.parts:
        b = sizes[part.index]
        assert b % (256 * 1024) == 0  # whole DuckDB blocks
        # 13 INTEGERs + 3 52-character strings: ~200 B a row uncompressed, less than the
        # file, which also holds the copy table and the primary-key indexes.
        assert 180 * part.rows <= b < os.path.getsize(store.partition_path(tdir, part))


def test_noop_is_shaped_like_statements_and_does_nothing(engine, table):
    m, _ = table
    noop = engine.noop_statements()
    assert sorted(noop) == sorted(engine.statements(queries.get("scan"), m, "full-row"))
    step = engine.execute(noop)
    assert sorted(step.units) == sorted(noop)
    for u in step.units.values():
        assert u.rows == [(1,)]
        assert u.rows_scanned is None  # not profiled: nothing to prove
    assert step.wall_s < 5.0


def test_make_cold_evicts_and_the_next_scan_reads_the_table_from_storage(engine, table):
    m, tdir = table
    if _fs_type(Path(tdir)) == "tmpfs" or pagecache.read_bytes() is None:
        pytest.skip("tmpfs or no /proc/self/io: the page cache is the storage here")
    data = sum(engine.data_bytes().values())
    _scan(engine, m)
    warm = _scan(engine, m)  # buffer pool warm: nothing from storage
    assert warm.bytes_read < 0.05 * data

    cold = engine.make_cold()
    assert sorted(cold) == list(range(PARTS))
    for part in m.parts:
        c = cold[part.index]
        assert c["file_bytes"] >= os.path.getsize(store.partition_path(tdir, part))
        # measured after the fresh session opened: what the next statement finds cached
        assert c["resident_bytes"] is not None and c["resident_bytes"] <= 64 * 1024
    step = _scan(engine, m)
    assert step.bytes_read >= 0.9 * data, (step.bytes_read, data)
    assert sum(u.rows_scanned for u in step.units.values()) == ROWS


def _duckdb_shows(limit: str) -> str:
    con = duckdb.connect(":memory:", config={"memory_limit": limit})
    try:
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    finally:
        con.close()


def test_memory_fraction_is_split_among_the_tables_instances_only(engine, table):
    """A run starts max(P) workers; a P=2 table on a 4-worker cluster must give each of
    its 2 instances half the budget, not a quarter (an idle worker needs none)."""
    m, tdir = table
    mode = engine.mode
    engine.close_table()  # a file is open in one process at a time
    eng = make_engine(mode, EngineConfig(memory_limit="256MB", memory_fraction=0.05))
    try:
        eng.start(4 if mode == "shared-nothing" else PARTS)
        eng.open_table(m, tdir)
        want = memory_share(0.05, PARTS if mode == "shared-nothing" else 1)
        assert set(eng.memory_limits.values()) == {want}
        for _ in range(2):  # make_cold reopens the sessions: the limit must survive
            shown = eng.query("SELECT current_setting('memory_limit')")
            assert {rows[0][0] for rows in shown.values()} == {_duckdb_shows(want)}
            eng.make_cold()
    finally:
        eng.stop()
        engine.open_table(m, tdir)


def test_the_registry_is_what_the_cli_and_runner_offer():
    from click.testing import CliRunner

    from wisconsin.cli import cli
    from wisconsin.measure import runner

    assert runner.MODES == engines.MODES == tuple(engines.ENGINES)
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    for name in engines.MODES:
        assert name in help_text
    # the cluster rule, from the registry, in one place
    with pytest.raises(engines.WisconsinError, match="^--cluster needs --mode shared-nothing$"):
        engines.make_engine("shared-memory", EngineConfig(cluster="tcp://h:1"))
    engines.check_cluster("shared-nothing", "tcp://h:1")  # accepted
    with pytest.raises(engines.WisconsinError, match="unknown mode 'nope'"):
        engines.make_engine("nope", EngineConfig())
