"""A full disk: every write of ours and DuckDB's own becomes one line, exit 2, and the table
is as generated afterwards (issue 29, finding 4). Each test fills a small tmpfs (root only:
CI runs as root)."""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest
from click.testing import CliRunner

from wisconsin.builds import build_tables
from wisconsin.cli import cli
from wisconsin.store import TableSpec


def _fill(mnt):
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _tmpfs(where, size):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs filled to the last block."""
    with _tmpfs(tmp_path / "full", "1m") as mnt:
        _fill(mnt)
        yield mnt


def test_a_run_onto_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, full_disk):
    """The journal's first record hit ENOSPC: a traceback and a 0-byte .journal were left."""
    from click.testing import CliRunner

    from wisconsin.builds import build_tables
    from wisconsin.cli import cli

    data = tmp_path / "data"
    build_tables(data, [TableSpec("F", 2000, 2, 7)], jobs=1)
    out = full_disk / "runs"
    res = CliRunner().invoke(cli, [
        "run", "--data", str(data), "--tables", "F", "--mode", "shared-memory", "--repeat", "1",
        "--queries", "average", "--quiet", "--out", str(out),
    ])  # fmt: skip
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert line.startswith(f"Error: cannot write the run's journal {out}/")
    assert line.endswith(": No space left on device")
    assert sorted(p.name for p in full_disk.rglob("*")) in (["filler"], ["filler", "runs"])
    deep = CliRunner().invoke(cli, ["info", str(data / "F2"), "--deep"])
    assert deep.exit_code == 0 and "verified" in deep.output


def test_generate_onto_a_full_disk_is_one_line(full_disk):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    res = CliRunner().invoke(cli, [
        "generate", "--data", str(full_disk / "data"), "--kind", "F", "--rows", "20000",
        "--partitions", "2", "--quiet",
    ])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


@pytest.mark.parametrize("mode", ["shared-memory", "shared-nothing"])
def test_duckdb_hitting_a_full_disk_mid_run_is_one_line_and_the_table_stays(tmp_path, mode):
    """The table's own disk fills: DuckDB cannot write the update's WAL or the results
    file. One line, exit 2; once space is back, info --deep finds the table as generated."""
    with _tmpfs(tmp_path / "disk", "64m") as mnt:
        build_tables(mnt / "data", [TableSpec("F", 20_000, 2, 3)], jobs=2)
        _fill(mnt)
        res = CliRunner().invoke(cli, [
            "run", "--data", str(mnt / "data"), "--tables", "F", "--mode", mode,
            "--repeat", "1", "--queries", "update,select", "--quiet", "--out", str(tmp_path / "runs"),
            "--cache", "warm",  # a tmpfs cannot be evicted: cold is refused up front there
        ])  # fmt: skip
        assert res.exit_code == 2, res.output
        (line,) = res.output.strip().splitlines()
        assert "No space left on device" in line and "Traceback" not in res.output
        (mnt / "filler").unlink()
        deep = CliRunner().invoke(cli, ["info", str(mnt / "data" / "F2"), "--deep"])
        assert deep.exit_code == 0, deep.output
        assert "verified: every partition matches the manifest (full content" in deep.output


def test_export_onto_a_full_disk_is_one_line_naming_the_file(tmp_path, full_disk):
    """DuckDB's COPY hit ENOSPC: the line was its raw JSON error ("Async write failed ...
    {"exception_type":"IO", ...}"). Now write_all's line naming the file, and nothing left."""
    build_tables(tmp_path / "data", [TableSpec("F", 2000, 1, 7)], jobs=1)
    out = full_disk / "parquet"
    res = CliRunner().invoke(cli, ["export", str(tmp_path / "data" / "F1"), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        f"Error: cannot write {out}/part-000.parquet: No space left on device"
    ]
    assert [p.name for p in full_disk.iterdir()] == ["filler"]
