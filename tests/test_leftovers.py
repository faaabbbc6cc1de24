"""What a killed build leaves in a table directory: generate and repair remove exactly our
temporary names (files, DuckDB's temporary directory, its files), name what they removed,
and name in one line, exit 2, a name of ours that is not what a build leaves (issue 43.4)."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from wisconsin.builds import leftovers, writer
from wisconsin.cli import cli

ROWS = 3000


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def generate(data, parts="2"):
    return invoke(
        "generate", "--kind", "F", "--rows", ROWS, "--partitions", parts, "--data", data
    )  # fmt: skip


def one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and all(f in lines[0] for f in fragments), result.output


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("leftovers")
    assert generate(d).exit_code == 0
    return d / "F2"


def killed_copy(built, tmp_path):
    """F2 as a generate killed while building partition 1 left it: no manifest, partition 0
    finished (its selected rows kept for the manifest), partition 1 missing."""
    t = tmp_path / "d" / "F2"
    shutil.copytree(built, t)
    for name in ("manifest.json", "part-001.duckdb", "part-001.json"):
        (t / name).unlink()
    return t


def own_files(tdir):
    return sorted(p.name for p in tdir.iterdir() if p.name != ".wisconsin.lock")


TABLE = ["manifest.json", "part-000.duckdb", "part-000.json", "part-001.duckdb", "part-001.json"]


def plant(t, kind):
    """A leftover of one kind: the files a builder writes, DuckDB's temporary directory
    (empty), or that directory holding DuckDB's own files. Returns the names planted."""
    if kind == "file":
        names = ["part-001.duckdb.tmp", "part-001.duckdb.tmp.wal", "part-001.selected.arrow.tmp",
                 ".part-001.tmp-99999999.json", ".manifest.tmp-99999999.json", ".write-test-7"]  # fmt: skip
        for n in names:
            (t / n).write_bytes(b"half")
        return names
    d = t / "part-001.duckdb.tmp.tmp"
    d.mkdir()
    if kind == "nested":
        for n in ("duckdb_temp_4242_1_owner", "duckdb_temp_4242_1_storage_S224K-0.tmp"):
            (d / n).write_bytes(b"spill")
    return [d.name]


@pytest.mark.parametrize("kind", ["file", "directory", "nested"])
def test_generate_removes_and_names_what_a_killed_build_left(built, tmp_path, kind):
    t = killed_copy(built, tmp_path)
    names = plant(t, kind)
    r = generate(t.parent)
    assert r.exit_code == 0, r.output
    said = [line for line in r.stderr.splitlines() if "removed what an interrupted" in line]
    assert len(said) == 1 and str(t) in said[0], r.output
    assert all(n in said[0] for n in names)
    assert "1 partition kept from an earlier build" in r.output
    assert own_files(t) == TABLE
    info = invoke("info", "--deep", t)
    assert info.exit_code == 0 and "verified" in info.output, info.output


@pytest.mark.parametrize("kind", ["file", "directory", "nested"])
def test_repair_removes_and_names_what_a_killed_repair_left(built, tmp_path, kind):
    t = tmp_path / "F2"
    shutil.copytree(built, t)
    (t / "part-001.duckdb").write_bytes(b"damaged")  # a repair has something to rebuild
    names = plant(t, kind)
    (t / "part-000.selected.arrow").write_bytes(b"kept until the manifest was written")
    r = invoke("repair", t)
    assert r.exit_code == 0, r.output
    said = [line for line in r.stderr.splitlines() if "removed what an interrupted" in line]
    assert len(said) == 1 and said[0].startswith("repair: "), r.output
    assert all(n in said[0] for n in [*names, "part-000.selected.arrow"])
    assert "rebuilt partition 1" in r.output
    assert own_files(t) == TABLE
    assert invoke("info", "--deep", t).exit_code == 0


def test_a_healthy_table_repair_still_clears_leftovers(built, tmp_path):
    t = tmp_path / "F2"
    shutil.copytree(built, t)
    plant(t, "nested")
    r = invoke("repair", t)
    assert r.exit_code == 0 and "nothing to repair" in r.output, r.output
    assert own_files(t) == TABLE


FOREIGN = [
    "subdirectory in DuckDB's temporary directory",
    "user file in DuckDB's temporary directory",
    "directory where a build writes a file",
    "file where DuckDB makes its directory",
    "symbolic link",
]


def plant_foreign(t, case):
    """A name of ours that no build leaves; returns the path the error must name."""
    spill, tmp = t / "part-001.duckdb.tmp.tmp", t / "part-001.duckdb.tmp"
    if case == FOREIGN[0]:
        (spill / "notes").mkdir(parents=True)
    elif case == FOREIGN[1]:
        spill.mkdir()
        (spill / "thesis.tex").write_text("mine")
    elif case == FOREIGN[2]:
        tmp.mkdir()
    elif case == FOREIGN[3]:
        spill.write_text("mine")
    else:
        tmp.symlink_to(t.parent.parent / "precious.db")
    return tmp if case in (FOREIGN[2], FOREIGN[4]) else spill


@pytest.mark.parametrize("case", FOREIGN)
@pytest.mark.parametrize("verb", ["generate", "repair"])
def test_a_name_of_ours_no_build_leaves_is_named_and_kept(built, tmp_path, case, verb):
    precious = tmp_path / "precious.db"
    precious.write_text("a user's database")
    t = killed_copy(built, tmp_path) if verb == "generate" else tmp_path / "d" / "F2"
    if verb == "repair":
        shutil.copytree(built, t)
    (t / "part-001.duckdb.tmp.wal").write_bytes(b"ours, but nothing goes while one is not")
    named = plant_foreign(t, case)
    before = sorted(str(p.relative_to(t)) for p in t.rglob("*"))
    r = generate(t.parent) if verb == "generate" else invoke("repair", t)
    one_line_error(r, str(named), "not something an interrupted build leaves", verb)
    assert sorted(str(p.relative_to(t)) for p in t.rglob("*")) == before  # nothing removed
    assert precious.read_text() == "a user's database"


def test_a_users_files_that_only_look_alike_are_never_touched(built, tmp_path):
    t = killed_copy(built, tmp_path)
    mine = ["notes.tmp", "part-001.duckdb.tmp.bak", "part-1.duckdb.tmp", "x.tmp-1.json",
            ".manifest.tmp-x.json", "part-001.duckdb.tmpfoo"]  # fmt: skip
    for n in mine:
        (t / n).write_text("mine")
    assert generate(t.parent).exit_code == 0
    assert own_files(t) == sorted(TABLE + mine)


def test_a_builder_clears_its_own_partitions_leftovers_only(tmp_path):
    """The cluster and repair path: writer.build_partition, before it writes partition 1,
    removes partition 1's leftovers (DuckDB's directory with its files included) and leaves
    partition 0's, which may belong to a builder still going."""
    spill = tmp_path / "part-001.duckdb.tmp.tmp"
    spill.mkdir()
    (spill / "duckdb_temp_1_0_owner").write_bytes(b"")
    (tmp_path / ".part-001.tmp-123.json").write_text("{")
    (tmp_path / "part-000.duckdb.tmp").write_bytes(b"another builder's")
    info = writer.build_partition(str(tmp_path), 2000, 7, 1, 2, memory_limit="256MB")
    assert info["rows"] == 1000
    assert sorted(os.listdir(tmp_path)) == ["part-000.duckdb.tmp", "part-001.duckdb",
                                            "part-001.json"]  # fmt: skip
    assert json.loads((tmp_path / "part-001.json").read_text())["index"] == 1


def test_find_sorts_ours_from_what_is_not(tmp_path):
    (tmp_path / "part-002.duckdb.tmp").write_bytes(b"")
    (tmp_path / "part-002.selected.arrow").write_bytes(b"")
    (tmp_path / "part-003.duckdb.tmp.tmp").mkdir()
    (tmp_path / "part-003.duckdb.tmp.tmp" / "duckdb_temp_block-1.block").write_bytes(b"")
    (tmp_path / "part-003.duckdb.tmp.tmp" / "x").mkdir()
    got = {p.name: why for p, why in leftovers.find(tmp_path)}
    assert got == {
        "part-002.duckdb.tmp": "",
        "part-003.duckdb.tmp.tmp": got["part-003.duckdb.tmp.tmp"],
    }
    assert "holds x" in got["part-003.duckdb.tmp.tmp"]
    # beside a manifest the selected rows are a leftover too; of partition 2 only, if asked
    assert [p.name for p, _ in leftovers.find(tmp_path, part=2, complete=True)] == [
        "part-002.duckdb.tmp",
        "part-002.selected.arrow",
    ]
    assert leftovers.clear(tmp_path, part=2) == [tmp_path / "part-002.duckdb.tmp"]


def test_a_duckdb_directory_that_cannot_be_read_is_named_not_a_traceback(tmp_path, monkeypatch):
    """(Root reads any directory: the refusal of a read is simulated.)"""
    spill = tmp_path / "part-001.duckdb.tmp.tmp"
    spill.mkdir()
    real = os.scandir

    def scandir(path="."):
        if str(path) == str(spill):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(leftovers.StoreError, match="cannot be read: Permission denied"):
        leftovers.clear(tmp_path, verb="repair")
    assert spill.is_dir()
