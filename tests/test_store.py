import dataclasses
import json

import pyarrow as pa
import pytest

from harness.damage import corrupt_blocks
from harness.exits import completed
from wisconsin import generator, store
from wisconsin.store import ContentDigest, StoreError, TableSpec
from wisconsin.store import check as store_check
from wisconsin.workloads.wisconsin import queries


def _digest(batches):
    d = ContentDigest()
    for b in batches:
        d.update(b)
    return d.hexdigest()


def test_digest_ignores_batch_boundaries_and_string_layout():
    table = pa.Table.from_batches(list(generator.generate(5000, 7, 0, 5000, batch_rows=1000)))
    whole = _digest(table.combine_chunks().to_batches())
    assert _digest(table.to_batches(max_chunksize=333)) == whole
    large = table.cast(
        pa.schema(
            [
                pa.field(f.name, pa.large_string() if f.type == pa.string() else f.type)
                for f in table.schema
            ]
        )
    )
    assert _digest(large.to_batches(max_chunksize=777)) == whole
    sliced = [table.slice(0, 10).to_batches()[0], *table.slice(10).to_batches()]
    assert _digest(sliced) == whole


def test_digest_sees_a_changed_value():
    batch = next(generator.generate(1000, 7, 0, 1000))
    changed = batch.set_column(
        0, "unique1", pa.array([1, *batch.column(0).to_pylist()[1:]], pa.int32())
    )
    if changed.column(0)[0].as_py() == batch.column(0)[0].as_py():
        changed = batch.set_column(
            0, "unique1", pa.array([2, *batch.column(0).to_pylist()[1:]], pa.int32())
        )
    assert _digest([changed]) != _digest([batch])


@pytest.mark.parametrize(
    "spec, message",
    [
        (TableSpec("X", 10, 2, 1), "unknown table kind"),
        (TableSpec("F", 0, 2, 1), "rows must be positive"),
        (TableSpec("F", 3, 4, 1), "more partitions"),
        (TableSpec("F", 10, 0, 1), "partitions must be positive"),
        (TableSpec("F", 10, 2, -1), "seed"),
    ],
)
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(StoreError, match=message):
        store.validate_spec(spec)


def test_g_tables_grow_with_partitions():
    assert TableSpec("G", 100, 4, 1).n == 400
    assert TableSpec("F", 100, 4, 1).n == 100


# --------------------------------------------------------------------------- check / repair


def _cli(*args):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _one_line_error(result, *fragments, code=2):
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert "Traceback" not in result.output
    assert len(lines) == 1, result.output
    assert all(f in lines[0] for f in fragments), result.output


@pytest.fixture
def f2(tmp_path):
    from wisconsin.builds import build_tables

    build_tables(tmp_path, [TableSpec("F", 20_000, 2, 5)], jobs=2)
    return tmp_path / "F2"


def _run(data, mode, *extra):
    return _cli(
        "run", "--data", data, "--mode", mode, "--tables", "F", "--repeat", "1",
        "--warmup", "0", "--queries", "average", "--out", data / "runs", "--quiet", *extra,
    )  # fmt: skip


@pytest.mark.parametrize("table", ["wisconsin", "wisconsin_copy"])
def test_corrupt_table_is_caught_before_timing_and_repaired(f2, table):
    corrupt_blocks(f2 / "part-001.duckdb", table)
    result = _run(f2.parent, "shared-memory")
    damaged = ("F2: partition 1:", table, "corrupt", "nothing was timed", "repair")
    _one_line_error(result, *damaged, code=3)  # damaged data, not bad input
    assert not (f2.parent / "runs").exists()
    info = _cli("info", f2)
    assert info.exit_code == 3 and f"problem: partition 1: {table} is corrupt" in info.output
    fixed = _cli("repair", f2, "--quiet")
    assert fixed.exit_code == 0, fixed.output
    assert "rebuilt partition 1:" in fixed.output and "partition 0" not in fixed.output
    deep = _cli("info", f2, "--deep")
    assert deep.exit_code == 0, deep.output
    assert "full content digests of both tables" in deep.output
    assert completed(_run(f2.parent, "shared-memory"))


def test_a_corrupt_block_of_an_uncached_file_is_caught(f2):
    from wisconsin.store import pagecache

    path = f2 / "part-001.duckdb"
    corrupt_blocks(path, "wisconsin_copy")
    pagecache.evict(path)  # cold: every block the check reads comes from storage
    m, problems = store_check.verify_table(f2)
    assert any("partition 1: wisconsin_copy is corrupt" in p for p in problems), problems


def test_spread_takes_all_blocks_up_to_the_count_else_an_even_spread_with_both_ends():
    assert store_check.spread([5, 1, 3], None) == [1, 3, 5]
    assert store_check.spread([5, 1, 3], 3) == [1, 3, 5]
    picked = store_check.spread(list(range(1000)), 5)
    assert picked == [0, 250, 500, 749, 999]  # round(i * 999 / 4)
    assert store_check.spread(list(range(10)), 1) == [0]


def test_the_check_before_timing_reads_a_bounded_sample_of_blocks_and_info_reads_all(
    f2, monkeypatch
):
    asked: list[list[int]] = []
    real = store_check._bad_blocks

    def recording(path, block_size, blocks):
        asked.append(list(blocks))
        return real(path, block_size, blocks)

    monkeypatch.setattr(store_check, "_bad_blocks", recording)
    m = store.read_manifest(f2)
    store_check.check_partitions(f2, m)  # as info does: every block
    every = list(asked)
    assert len(every) == 4 and all(len(b) > 2 for b in every)  # 2 partitions x 2 tables
    asked.clear()
    monkeypatch.setattr(store_check, "CHECK_BLOCKS", 2)
    assert store_check.check_table(f2, m) == m  # before timing: the first and the last block
    assert sorted(map(tuple, asked)) == sorted((b[0], b[-1]) for b in every)


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_missing_partition_stops_the_run_and_is_never_created(f2, mode):
    (f2 / "part-000.duckdb").unlink()
    _one_line_error(_run(f2.parent, mode), "partition 0:", "is missing", code=3)
    assert not (f2 / "part-000.duckdb").exists()
    again = _cli("generate", "--kind", "F", "--rows", 20_000, "--partitions", 2, "--seed", 5,
                 "--data", f2.parent, "--quiet")  # fmt: skip
    _one_line_error(again, "F2: partition 0", "is missing", "wisconsin repair", code=3)
    assert _cli("repair", f2, "--quiet").exit_code == 0
    assert (f2 / "part-000.duckdb").is_file()
    assert _cli("info", f2, "--deep").exit_code == 0


def test_foreign_partition_is_named(f2, tmp_path):
    from wisconsin.builds import build_tables

    build_tables(tmp_path / "other", [TableSpec("F", 20_000, 2, 6)], jobs=1)  # another seed
    (tmp_path / "other" / "F2" / "part-000.duckdb").replace(f2 / "part-000.duckdb")
    m, problems = store_check.verify_table(f2)
    assert len(problems) == 1 and "foreign" in problems[0] and "partition 0" in problems[0]


def test_an_update_left_applied_is_drift(f2):
    import duckdb

    con = duckdb.connect(str(f2 / "part-001.duckdb"))
    con.execute("UPDATE wisconsin SET four = four + 117 WHERE hundpct < 200")
    con.close()
    m, problems = store_check.verify_table(f2)
    assert len(problems) == 1 and "four outside 0..3" in problems[0]
    # the deep check sees it too; repair rebuilds only that partition
    from wisconsin.builds import plan_repair

    assert list(plan_repair(f2, m)) == [1]


def test_deep_check_sees_a_modified_copy_that_the_cheap_check_cannot(f2):
    """Documented limit of the cheap check: a valid SQL change away from the sampled rows
    and outside column four passes it; info --deep finds it."""
    import duckdb

    con = duckdb.connect(str(f2 / "part-000.duckdb"))
    con.execute("UPDATE wisconsin_copy SET ten = 9 - ten WHERE unique2 = 1234")
    con.close()
    assert store_check.verify_table(f2)[1] == []
    _m, problems = store_check.verify_table(f2, deep=True)
    assert problems == ["partition 0: wisconsin_copy content differs from the manifest"]


def test_a_pending_update_is_left_to_recovery_not_called_damage(f2):
    _leave_an_update_pending(f2)
    assert store_check.verify_table(f2)[1] == []  # +117 is applied, but recovery owns it
    assert completed(_run(f2.parent, "shared-memory"))
    assert store_check.verify_table(f2, deep=True)[1] == []


def test_a_duckdb_error_past_the_checks_is_one_line(f2, monkeypatch):
    import duckdb

    def broken(*args, **kwargs):
        raise duckdb.IOException("Corrupt database file: block 12\nsecond line")

    monkeypatch.setattr(store_check, "check_table", broken)
    _one_line_error(_run(f2.parent, "shared-memory"), "DuckDB: ", "Corrupt database file", code=3)


# --------------------------------------------------------------------------- checksums

SHA256 = "sha256/128 of canonical column streams"


def _as_built_with(table_dir, checksum):
    """Rewrite a table's manifest as if it had been built with another checksum: its
    partition checksums and expected answers' digests recomputed with that hash."""
    import json

    from wisconsin.store import expect

    m = store.read_manifest(table_dir)
    data = json.loads((table_dir / store.MANIFEST).read_text())
    data["storage"]["checksum"] = checksum
    whole = ContentDigest(checksum)
    for p, entry in zip(m.parts, data["parts"], strict=True):
        d, acc = ContentDigest(checksum), expect.PartAnswers(m.rows, checksum)
        for batch in generator.generate(m.rows, m.seed, p.lo, p.hi):
            d.update(batch)
            whole.update(acc.update(batch))
        entry["checksum"], entry["answers"] = d.hexdigest(), acc.as_dict()
    data["answers"]["selected_digest"] = whole.hexdigest()
    (table_dir / store.MANIFEST).write_text(json.dumps(data))
    return data


def test_the_checksum_is_the_one_the_manifest_names():
    batches = list(generator.generate(2000, 3, 0, 2000))
    new, old = store.content_digest(batches), store.content_digest(batches, SHA256)
    assert store.STORAGE["checksum"] == "xxh3-128 of canonical column streams"
    assert len(new) == len(old) == 32 and new != old


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_a_table_checksummed_with_sha256_still_verifies_runs_and_repairs(f2, mode):
    """Tables built before xxh3 keep their SHA-256 digests: the deep check, a run's verified
    answers (the select-insert's digest) and a repair all use the hash the manifest names."""
    before = _as_built_with(f2, SHA256)
    assert _cli("info", f2, "--deep").exit_code == 0
    run = _cli(
        "run", "--data", f2.parent, "--mode", mode, "--tables", "F", "--repeat", "1",
        "--warmup", "0", "--queries", "select,update,join", "--out", f2.parent / "runs", "--quiet",
    )  # fmt: skip
    assert completed(run), run.output  # 1 round: its audit fails (exit 1)
    corrupt_blocks(f2 / "part-001.duckdb", "wisconsin")
    fixed = _cli("repair", f2, "--quiet")
    assert fixed.exit_code == 0, fixed.output
    after = store.read_manifest(f2)
    assert [p.checksum for p in after.parts] == [p["checksum"] for p in before["parts"]]
    assert _cli("info", f2, "--deep").exit_code == 0


def test_a_checksum_this_version_does_not_know_is_one_line(f2):
    import json

    data = json.loads((f2 / store.MANIFEST).read_text())
    data["storage"]["checksum"] = "md5 of something"
    (f2 / store.MANIFEST).write_text(json.dumps(data))
    _one_line_error(_cli("info", f2), "F2", "md5 of something", "generate it again")


# --------------------------------------------------------------------------- hand-edited manifests


def _manifest_dict():
    spec = TableSpec("F", 10, 2, 1)
    parts = [
        store.PartitionInfo(i, f"part-00{i}.duckdb", 5 * i, 5 * i + 5, 5, "0" * 32) for i in (0, 1)
    ]
    return json.loads(json.dumps(dataclasses.asdict(store.make_manifest(spec, parts))))


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda d: d["parts"][0].__setitem__("rows", "x"), 'parts[0].rows is "x", not an integer'),
        (lambda d: d.__setitem__("partitions", True), "partitions is true, not an integer"),
        (lambda d: d.__setitem__("storage", []), "storage is [], not an object"),
        (lambda d: d["parts"][0].__setitem__("answers", 3), "parts[0].answers is 3, not an object or null"),
        (lambda d: d.__setitem__("partitions", 0), "partitions is 0, not at least 1"),
        (lambda d: d["parts"][1].__setitem__("rows", -1), "parts[1].rows is -1, not a count >= 0"),
        (lambda d: d.pop("seed"), "seed is missing, not optional"),
        (lambda d: d["parts"][0].__setitem__("owner", "w1"), 'parts[0].owner is "w1", not a known field'),
        (lambda d: d.__setitem__("parts", {}), "parts is {}, not a list"),
        (lambda d: d.__setitem__("kind", "H"), "kind is 'H', not one of F, G"),
    ],
)  # fmt: skip
def test_a_hand_edited_manifest_field_is_named_as_in_run_files(tmp_path, edit, said):
    data = _manifest_dict()
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    assert store.read_manifest(tmp_path).rows == 10
    edit(data)
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(StoreError) as info:
        store.read_manifest(tmp_path)
    assert str(info.value) == f"{tmp_path / 'manifest.json'}: not a valid manifest: {said}"


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda d: d.__setitem__("table", "t; COPY (SELECT 1) TO 'x.csv'; --"), "table and copy_table are"),
        (lambda d: d.__setitem__("name", "F3"), "name is 'F3', not F2"),
        (lambda d: d["parts"][0].__setitem__("file", "../../x.duckdb"), "parts[0].file is '../../x.duckdb', not 'part-000.duckdb'"),
        (lambda d: d["parts"][0].update(rows=4, hi=4), "parts[0] holds keys [0, 4) and 4 rows"),
        (lambda d: d["parts"][1].update(lo=4), "parts[1] holds keys [4, 10)"),
        (lambda d: d.__setitem__("generator_version", "0"), "generator_version is '0'"),
        (lambda d: d.__setitem__("table_id", "../x"), "table_id is '../x', not 16 hex digits"),
        (lambda d: d["parts"][0].update(path="/data/../etc/part-000.duckdb", worker="w"), "parts[0].path is '/data/../etc/part-000.duckdb'"),
    ],
)  # fmt: skip
def test_a_manifest_is_input_names_and_ranges_are_checked(tmp_path, edit, said):
    """Nothing in a manifest reaches a path or SQL unless it is what this version writes, and
    each partition's rows and keys are the generator's for (kind, rows, partitions)."""
    data = _manifest_dict()
    edit(data)
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(StoreError) as info:
        store.read_manifest(tmp_path)
    assert f"not a valid manifest: {said}" in str(info.value)
    assert "\n" not in str(info.value)


def _files_state(table_dir):
    """(name, inode, mtime, sha256) of every partition file: what must not change."""
    import hashlib

    return sorted(
        (p.name, p.stat().st_ino, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in table_dir.glob("part-*.duckdb")
    )


def _edit_manifest(table_dir, edit):
    data = json.loads((table_dir / "manifest.json").read_text())
    edit(data)
    (table_dir / "manifest.json").write_text(json.dumps(data))


def test_sql_in_the_manifest_table_name_is_never_executed(f2, tmp_path):
    before = _files_state(f2)
    target = tmp_path / "pwned.csv"
    _edit_manifest(f2, lambda d: d.__setitem__("table", f"wisconsin TO '{target}'; --"))
    for args in (("info", f2), ("info", f2, "--deep"), ("repair", f2)):
        _one_line_error(_cli(*args), "not a valid manifest: table and copy_table are")
    _one_line_error(_run(f2.parent, "shared-memory"), "not a valid manifest")
    assert not target.exists() and _files_state(f2) == before


def test_a_partition_file_outside_the_table_is_refused_and_nothing_is_written(f2):
    before = _files_state(f2)
    outside = f2.parent.parent / "x.duckdb"
    _edit_manifest(f2, lambda d: d["parts"][0].__setitem__("file", "../../x.duckdb"))
    _one_line_error(_run(f2.parent, "shared-nothing"), "parts[0].file is '../../x.duckdb'")
    assert not outside.exists() and _files_state(f2) == before


def test_repair_does_not_rebuild_a_partition_to_an_edited_size(f2):
    """A row count edited in the manifest once made repair rebuild a correct partition to
    the wrong size; the manifest is now checked against the generator first."""
    before = _files_state(f2)
    _edit_manifest(f2, lambda d: d["parts"][0].update(rows=9_000, hi=9_000))
    _one_line_error(_cli("repair", f2), "parts[0] holds keys [0, 9000) and 9000 rows")
    assert _files_state(f2) == before


def _leave_an_update_pending(table_dir):
    from wisconsin.engines import commit
    from wisconsin.engines.base import EngineConfig
    from wisconsin.measure.runner import make_engine

    m = store.read_manifest(table_dir)
    engine = make_engine("shared-memory", EngineConfig(timeout_s=60))
    engine.start(2)
    engine.open_table(m, str(table_dir))
    undo = engine.statements(queries.get("update"), m, "full-row", delta=-queries.UPDATE_DELTA)
    try:
        with pytest.raises(RuntimeError), commit.update_pair(table_dir, "ux", "uy", undo):
            engine.update("ux", engine.statements(queries.get("update"), m, "full-row"))
            raise RuntimeError("the coordinator dies here")
    finally:
        engine.stop()


def test_info_says_update_pending_never_verified_and_repair_settles_it(f2):
    _leave_an_update_pending(f2)
    res = _cli("info", f2)
    assert res.exit_code == 3, res.output  # not as generated until repaired: damaged data
    assert "verified" not in res.output
    assert res.output.strip().splitlines()[-1].startswith("update pending:")
    assert f"run `wisconsin repair {f2}`" in res.output
    deep = _cli("info", f2, "--deep")  # which sees the partitions it changed
    assert deep.exit_code == 3 and "verified" not in deep.output
    assert "update pending:" in deep.output.strip().splitlines()[-1]
    fixed = _cli("repair", f2)
    assert fixed.exit_code == 0, fixed.output
    after = _cli("info", f2, "--deep")
    assert after.exit_code == 0 and "verified: every partition matches" in after.output


def test_repair_never_replaces_a_file_that_holds_the_generated_rows(f2):
    """An edited digest in the manifest makes a correct partition look damaged: repair
    rebuilds it aside, reads both files back against the generator's digest, keeps the
    correct file (same inode, mtime, bytes) and names the manifest as what is wrong."""
    before = _files_state(f2)
    _edit_manifest(f2, lambda d: d["parts"][0].__setitem__("checksum", "0" * 32))
    _one_line_error(_cli("repair", f2, "--quiet"), "partition 0: the generator's rows have digest",
                    "the manifest is damaged")  # fmt: skip
    assert _files_state(f2) == before
    assert sorted(p.name for p in f2.iterdir() if "tmp" in p.name) == []


def test_repair_on_a_healthy_table_says_so_and_changes_nothing(f2):
    before = _files_state(f2)
    res = _cli("repair", f2)
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines() == [
        f"{f2}: every partition matches the manifest; nothing to repair"
    ]
    assert _files_state(f2) == before


def test_repair_after_a_killed_update_removes_the_old_files_wal(f2):
    """A process killed mid-update leaves part-NNN.duckdb.wal beside the file: repair's new
    file must not be paired with the old file's WAL (DuckDB then refuses to open it: "WAL
    does not match database file", which made the repaired table unreadable)."""
    import duckdb

    con = duckdb.connect(str(f2 / "part-000.duckdb"))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("UPDATE wisconsin SET four = four + 117 WHERE unique2 < 50")
    con.close()  # as a SIGKILL leaves it: the change only in the WAL
    assert (f2 / "part-000.duckdb.wal").exists()
    fixed = _cli("repair", f2)
    assert fixed.exit_code == 0, fixed.output
    assert not (f2 / "part-000.duckdb.wal").exists()
    after = _cli("info", f2, "--deep")
    assert after.exit_code == 0 and "verified: every partition matches" in after.output
