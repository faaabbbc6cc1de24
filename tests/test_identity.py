"""Table identities: a fresh id per build, a deterministic one for manifests without one."""

import json

from wisconsin.builds import build_tables
from wisconsin.builds.dask_cluster import build_table_id, worker_table_dir
from wisconsin.store import TableSpec, derived_table_id, read_manifest


def test_every_build_has_its_own_id_and_old_manifests_a_derived_one(tmp_path):
    spec = TableSpec("F", 1000, 2, 7)
    a = build_tables(tmp_path / "a", [spec], jobs=1).manifests[0]
    b = build_tables(tmp_path / "b", [spec], jobs=1).manifests[0]
    assert a.table_id and b.table_id and a.table_id != b.table_id  # same table, two builds
    assert read_manifest(tmp_path / "a" / "F2").table_id == a.table_id

    path = tmp_path / "a" / "F2" / "manifest.json"
    old = json.loads(path.read_text())
    del old["table_id"]  # written before table ids existed
    path.write_text(json.dumps(old))
    m = read_manifest(tmp_path / "a" / "F2")
    assert m.table_id == derived_table_id("F", 1000, 2, 7, m.generator_version)
    assert m.table_id == read_manifest(tmp_path / "a" / "F2").table_id  # stable
    assert m.table_id != derived_table_id("F", 1000, 2, 8, m.generator_version)


def test_an_interrupted_cluster_build_keeps_its_id_another_table_gets_a_new_one(tmp_path):
    spec = TableSpec("F", 1000, 2, 7)
    first = build_table_id(tmp_path, spec)
    assert build_table_id(tmp_path, spec) == first  # resumed into the same worker directory
    other = build_table_id(tmp_path, TableSpec("F", 2000, 2, 7))
    assert other != first
    assert worker_table_dir(spec, first).startswith("F2-n1000-seed7-gen")
    assert worker_table_dir(spec, first).endswith(first)
