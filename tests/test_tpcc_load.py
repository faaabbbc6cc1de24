"""Building a TPC-C database: a file per partition, built in parallel, holding exactly the
generator's rows for its warehouses; a manifest written last; nothing half-built left."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from wisconsin import WisconsinError
from wisconsin.store import StoreError
from wisconsin.workloads.tpcc import generate, load, schema
from wisconsin.workloads.tpcc.schema import PRIMARY_KEYS, TABLES, Placement, Scale

SCALE = Scale(customers_per_district=30, items=200)
PLACE = Placement(partitions=2, warehouses_per_partition=2)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpcc") / "db"
    return d, load.build(d, PLACE, seed=5, scale=SCALE, jobs=2)


def _ordered(con, name: str):
    keys = ", ".join(PRIMARY_KEYS.get(name, ("h_w_id", "h_d_id", "h_c_id")))
    return con.sql(f"SELECT * FROM {name} ORDER BY {keys}").to_arrow_table()


def test_each_partition_holds_exactly_its_warehouses_generated_rows(db):
    d, m = db
    assert sorted(p.name for p in d.iterdir()) == [
        "manifest.json",
        "part-000.duckdb",
        "part-001.duckdb",
    ]
    for part, path in enumerate(load.partition_paths(d, m)):
        con = schema.connect(path, read_only=True)
        try:
            meta = con.execute("SELECT part, partitions, warehouses_per_partition FROM tpcc_meta")
            assert meta.fetchall() == [(part, 2, 2)]
            wanted = [generate.warehouse_tables(w, 5, SCALE) for w in PLACE.warehouses_of(part)]
            for name in TABLES:
                got = _ordered(con, name)
                if name == "item":
                    want = generate.item_table(5, SCALE)
                else:
                    want = pa.concat_tables(t[name] for t in wanted)
                assert got.cast(want.schema).equals(want), (part, name)
            pk = con.execute(
                "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'"
            ).fetchall()
            assert sorted(t for (t,) in pk) == sorted(PRIMARY_KEYS)
        finally:
            con.close()


def test_the_manifest_says_what_was_built(db):
    d, m = db
    back = load.read_manifest(d)
    assert back == m and back.placement == PLACE and back.scale == SCALE
    assert back.constants == load.rules.load_constants(5)
    assert json.loads((d / "manifest.json").read_text())["workload"] == "tpcc"


def test_a_damaged_manifest_is_one_line(tmp_path, db):
    d, _ = db
    text = (d / "manifest.json").read_text()
    (tmp_path / "manifest.json").write_text(text.replace('"partitions": 2', '"partitions": 0'))
    with pytest.raises(StoreError, match="partitions") as exc:
        load.read_manifest(tmp_path)
    assert "\n" not in str(exc.value)


def test_a_failed_build_leaves_no_manifest_and_no_temporary_file(tmp_path):
    d = tmp_path / "db"
    with pytest.raises(StoreError, match="a partition's build failed") as exc:
        load.build(d, Placement(1, 1), seed=1, scale=SCALE, memory_limit="1KB")
    assert "\n" not in str(exc.value)
    assert not d.exists()  # nothing written: the directory it made is gone too


def test_a_rebuild_replaces_what_an_earlier_build_left(tmp_path):
    d = tmp_path / "db"
    d.mkdir()
    (d / "part-003.duckdb").write_text("stale")
    (d / ".part-000.tmp-1.duckdb").write_text("half-built")
    load.build(d, Placement(1, 1), seed=2, scale=SCALE)
    assert sorted(p.name for p in d.iterdir()) == [
        "manifest.json",
        "part-000.duckdb",
    ]


def test_a_negative_seed_is_refused(tmp_path):
    with pytest.raises(WisconsinError, match="seed"):
        load.build(tmp_path / "db", PLACE, seed=-1, scale=SCALE)
