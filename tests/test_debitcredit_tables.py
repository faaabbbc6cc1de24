"""DebitCredit databases as tables: manifest, `info`, and `repair` (the one recovery verb)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from wisconsin.cli import cli
from wisconsin.workloads.debitcredit import check, schema, tables, transaction

TINY = schema.Sizing(branches_per_partition=2, tellers_per_branch=3, accounts_per_branch=50)


@pytest.fixture
def db2(tmp_path):
    paths = schema.build(tmp_path, 2, TINY)
    return paths[0].parent


def _state(db_dir):
    """(inode, mtime_ns, size) of every file: what 'untouched' means."""
    return {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(db_dir.iterdir())
        if p.is_file() and p.name != ".wisconsin.lock"
    }


def _decided_not_applied(db_dir, txid=7, delta=25):
    """What a kill -9 of the account's partition between the two commits leaves: the home
    (partition 0) committed teller, branch and the decision row; partition 1 never
    committed its account update. Returns the account id."""
    aid = TINY.accounts(1)  # the first account of partition 1
    home = schema.connect(db_dir / "part-000.duckdb")
    try:
        transaction.home_half(home, txid, aid, tid=0, bid=0, delta=delta, remote=1)
        home.execute("COMMIT")
    finally:
        home.close()
    return aid


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_build_writes_a_manifest_last_and_info_verifies(db2):
    m = tables.read_manifest(db2)
    assert (m.partitions, m.sizing, m.files) == (2, TINY, ("part-000.duckdb", "part-001.duckdb"))
    result = _invoke("info", db2)
    assert result.exit_code == 0, result.output
    assert "DebitCredit database, 2 partitions" in result.output
    assert "verified: account = teller = branch = history sums (0)" in result.output


def test_repair_on_a_healthy_database_says_so_in_one_line_and_changes_nothing(db2):
    before = _state(db2)
    result = _invoke("repair", db2)
    assert result.exit_code == 0, result.output
    assert result.output.count("\n") == 1
    assert "nothing pending, nothing changed" in result.output
    assert _state(db2) == before


def test_a_decided_remote_half_is_pending_in_info_and_applied_by_repair(db2):
    aid = _decided_not_applied(db2)
    ok, _ = check.independent_check(str(db2))
    assert not ok  # the independent reader sees the missing half too
    result = _invoke("info", db2)
    assert result.exit_code == 3  # not as the run left it until repaired: damaged data
    assert "update pending: 1 decided remote half(s) not yet applied" in result.output
    assert "verified" not in result.output
    result = _invoke("repair", db2)
    assert result.exit_code == 0, result.output
    assert "1 decided remote half(s) applied" in result.output
    ok, lines = check.independent_check(str(db2))
    assert ok, lines
    con = schema.connect(db2 / "part-001.duckdb", read_only=True)
    assert con.execute("SELECT abalance FROM account WHERE aid = $1", [aid]).fetchone() == (25,)
    con.close()
    # exactly once: a second repair finds nothing to do
    assert "nothing pending" in _invoke("repair", db2).output
    assert _invoke("info", db2).exit_code == 0


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("files", ["../../x.duckdb", "part-001.duckdb"], "files must be part-000.duckdb"),
        ("partitions", 0, "partitions is 0, not 1 to 1024"),
        ("accounts_per_branch", "50", 'accounts_per_branch is "50"'),
        ("extra", 1, "extra"),
    ],
)
def test_a_crafted_manifest_is_refused_in_one_line_and_nothing_is_written(db2, field, value, said):
    path = db2 / "manifest.json"
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    before = _state(db2)
    for verb in ("info", "repair"):
        result = _invoke(verb, db2)
        assert result.exit_code == 2, (verb, result.output)
        assert said in result.output
        assert result.output.strip().count("\n") == 0, result.output
    assert _state(db2) == before


def test_swapped_partition_files_are_named_and_repair_refuses_to_guess(db2):
    a, b = db2 / "part-000.duckdb", db2 / "part-001.duckdb"
    tmp = db2 / "swap"
    os.rename(a, tmp), os.rename(b, a), os.rename(tmp, b)
    before = _state(db2)
    result = _invoke("info", db2)
    assert result.exit_code == 3
    assert "part-000.duckdb says it is [(1, 2," in result.output
    result = _invoke("repair", db2)
    assert result.exit_code == 3
    assert "no generator can rebuild it" in result.output
    assert _state(db2) == before


def test_a_damaged_partition_file_is_found_and_left_as_it_was(db2):
    path = db2 / "part-001.duckdb"
    raw = bytearray(path.read_bytes())
    raw[8192 : 8192 + 4096] = b"\xff" * 4096  # the database headers and first block
    path.write_bytes(bytes(raw))
    before = _state(db2)
    result = _invoke("info", db2)
    assert result.exit_code == 3
    assert "problem: partition 1: part-001.duckdb" in result.output
    assert _invoke("repair", db2).exit_code == 3
    assert _state(db2) == before


def test_repair_is_refused_while_a_bench_holds_the_database(db2):
    import subprocess
    import sys

    from wisconsin.store import lock

    before = _state(db2)
    with lock.hold_tables([db2]):  # as measure_partitions holds it from build to audit
        done = subprocess.run(
            [sys.executable, "-m", "wisconsin", "repair", str(db2)],
            capture_output=True,
            text=True,
        )
    assert done.returncode == 2, done.stderr
    assert "is in use by another wisconsin process" in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert _state(db2) == before


@pytest.mark.parametrize(
    "verb, option",
    [
        ("info", ["--deep"]),
        ("info", ["--timeout", "5"]),
        ("info", ["--json"]),
        ("repair", ["--quiet"]),
        ("repair", ["--jobs", "2"]),
    ],
)
def test_options_a_database_does_not_take_are_refused_not_ignored(db2, verb, option):
    """info and repair of a DebitCredit database check it whole, here: an option that would
    narrow or move that is refused in one line, and nothing is touched."""
    before = _state(db2)
    result = _invoke(verb, *option, db2)
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]  # click's usage lines, then the error
    assert (
        "Traceback" not in result.output and option[0] in line and "for Wisconsin tables" in line
    ), line
    assert _state(db2) == before
