"""`wisconsin list` and `wisconsin remove`: what the tool built, recognised by what it holds;
removal only of that, under its locks, and nothing at all when refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from wisconsin.builds import build_tables
from wisconsin.cli import cli
from wisconsin.store import TableSpec

FIXTURES = Path(__file__).parent / "fixtures"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    build_tables(d, [TableSpec("F", 2000, 1, 7), TableSpec("F", 2000, 2, 7)], jobs=1)
    return d


def test_list_names_each_kind_with_its_state(data, tmp_path):
    shutil.copy(FIXTURES / "audit_tiny_sn.json", tmp_path / "run.json")
    (tmp_path / "notes.json").write_text('{"mine": 1}')  # JSON, but not the tool's
    (data / "F8").mkdir()
    (data / "F8" / "part-000.duckdb.tmp").write_bytes(b"x")  # a killed build's
    (data / ".wisconsin-logs-20261127T000000-abc").mkdir()
    con = duckdb.connect(str(data / "F2" / "part-001.duckdb"))
    con.execute("UPDATE wisconsin SET stringu1 = 'x' WHERE unique2 = 1999")
    con.close()
    r = invoke("list", tmp_path, "--json")
    assert r.exit_code == 0, r.output
    rows = {Path(x["path"]).relative_to(tmp_path).as_posix(): x for x in map(json.loads,
            r.output.splitlines())}  # fmt: skip
    assert {k: (v["kind"], v["state"].split(":")[0]) for k, v in rows.items()} == {
        "data/.wisconsin-logs-20261127T000000-abc": ("dask logs", "left by a run"),
        "data/F1": ("wisconsin table", "verified"),
        "data/F2": ("wisconsin table", "damaged"),
        "data/F8": ("unfinished table", "incomplete"),
        "run.json": ("wisconsin run", "complete"),
    }
    assert rows["data/F1"]["size_bytes"] > 0
    text = invoke("list", tmp_path, "--no-verify").output
    assert "data/F2  wisconsin table" in text and "not checked" in text
    assert text.splitlines()[-1].startswith("5 items, ")


def test_remove_a_table_then_the_data_directory(data):
    r = invoke("remove", data / "F2")
    assert r.exit_code == 0 and r.output.startswith(f"removed {data / 'F2'} (wisconsin table, ")
    assert sorted(p.name for p in data.iterdir()) == ["F1"]
    r = invoke("remove", data)
    assert r.exit_code == 0 and "data directory: 1 table, " in r.output
    assert not data.exists()


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda d: (d / "mine.txt").write_text("x"), "mine.txt, which wisconsin did not build"),
        (lambda d: (d / "F1" / "notes").write_text("x"), "notes, which wisconsin did not"),
        (lambda d: (d / "link").symlink_to(d / "F1"), "link, which wisconsin did not build"),
    ],
)
def test_remove_refuses_what_it_did_not_build_and_removes_nothing(data, make, fragment):
    make(data)
    before = tree(data)
    r = CliRunner().invoke(cli, ["remove", str(data)])
    assert r.exit_code == 2 and fragment in r.output and "nothing removed" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert tree(data) == before


def test_remove_refuses_an_empty_directory_and_a_file(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "f.txt").write_text("x")
    for p, fragment in ((tmp_path / "empty", "holds nothing wisconsin built"),
                        (tmp_path / "f.txt", "not a table or data directory"),
                        (tmp_path / "nope", "no such table")):  # fmt: skip
        r = CliRunner().invoke(cli, ["remove", str(p)])
        assert r.exit_code == 2 and fragment in r.output, r.output
    assert tree(tmp_path) == ["empty", "f.txt"]


HOLDER = """
import sys, time
from wisconsin.store import lock
with lock.hold_tables([sys.argv[1]]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_table_in_use_is_neither_removed_nor_checked(data):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(data / "F2")],
                            stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == b"held"
        before = tree(data)
        for target in (data / "F2", data):
            r = CliRunner().invoke(cli, ["remove", str(target)])
            assert r.exit_code == 2 and "in use by another wisconsin process" in r.output
        assert tree(data) == before
        states = [json.loads(x) for x in invoke("list", data, "--json").output.splitlines()]
        assert {Path(s["path"]).name: s["state"] for s in states}["F2"] == "in use"
    finally:
        proc.kill()
        proc.wait()


def test_each_reading_verb_names_the_kind_it_was_given(data, tmp_path):
    """Issue 45: a table, a data directory or an A/B file given to report, audit or plot was
    'is a directory' or 'schema version None'; now one line says what it is and which
    command reads it."""
    from wisconsin.runfiles import abfile

    ab = tmp_path / "x-ab.json"
    ab.write_text(json.dumps({"kind": abfile.KIND, "ab_version": abfile.AB_VERSION}))
    journal = tmp_path / "r.json.journal"
    journal.write_text("{}\n")
    cases = [
        (["report", data / "F1"], f"{data / 'F1'} is a wisconsin table, not a run file: "
         f"`wisconsin info {data / 'F1'}` checks it"),
        (["audit", data], f"{data} is a data directory, not a run file: `wisconsin list"),
        (["plot", ab], f"{ab} is an a/b file, not a run file: `wisconsin compare {ab}` reads"),
        (["report", journal], f"{journal} is a run journal, not a run file: `wisconsin run "
         "--resume` of its run file"),
        (["compare", data / "F1", ab], "is a wisconsin table, not a run file"),
        (["report", tmp_path / "nothing"], "nothing"),  # no such file: the reader says so
    ]  # fmt: skip
    for args, fragment in cases:
        r = CliRunner().invoke(cli, [str(a) for a in args])
        assert r.exit_code == 2 and fragment in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, r.output
