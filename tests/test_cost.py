import shutil
from collections import namedtuple

import pytest
from click.testing import CliRunner

from wisconsin import store
from wisconsin.builds import build_tables, cost
from wisconsin.cli import cli
from wisconsin.store import TableSpec

Usage = namedtuple("Usage", "total used free")


def test_the_disk_model_matches_a_built_partition(tmp_path):
    rows = 40_000
    build_tables(tmp_path, [TableSpec("F", rows, 1, 3)], jobs=1)
    actual = (tmp_path / "F1" / "part-000.duckdb").stat().st_size
    model = cost.FILE_BYTES_FIXED + cost.FILE_BYTES_PER_ROW * rows
    assert 0.85 < actual / model < 1.15
    assert cost.partition_bytes(rows) > actual  # the budget includes the run's headroom


def test_estimate_counts_rows_partitions_and_the_copy():
    specs = [TableSpec("F", 100_000, 2, 1), TableSpec("G", 10_000, 4, 1)]
    e = cost.estimate_tables("/nonexistent/data", specs, jobs=2, cores=2)
    assert (e.tables, e.rows, e.partitions) == (("F2", "G4"), 140_000, 6)
    assert e.disk_bytes >= 140_000 * 2 * 230  # both tables, ~230 B per row each
    assert e.where == "/" and e.free_bytes > 0
    line = cost.describe(e)
    assert "140,000 rows in 6 partitions" in line and "disk" in line and "to build" in line


def test_build_time_grows_linearly_and_is_bounded_by_the_disk():
    one = cost.build_seconds(10_000_000, 2, 0, jobs=2, cores=2) - cost.WORKER_START_SECONDS
    two = cost.build_seconds(20_000_000, 2, 0, jobs=2, cores=2) - cost.WORKER_START_SECONDS
    assert two - one == pytest.approx(10_000_000 / (2 * cost.BUILD_ROWS_PER_S_PER_CORE))
    assert two == pytest.approx(2 * one, rel=0.05)  # fixed costs are small at this size
    assert cost.build_seconds(10, 1, 4e9, jobs=2, cores=2) >= 4e9 / cost.WRITE_BYTES_PER_S
    # more workers than cores does not make the estimate faster
    assert cost.build_seconds(10**7, 8, 0, jobs=8, cores=2) == cost.build_seconds(
        10**7, 8, 0, jobs=2, cores=2
    )


def test_build_memory_is_bounded_and_grows_with_the_partition():
    small, large = cost.build_memory_mb(1_000_000, 2), cost.build_memory_mb(30_000_000, 2)
    assert cost.BUILD_MEMORY_BASE_MB <= small < large <= 1024


def test_build_announces_only_what_is_left_to_build(tmp_path):
    said = []
    build_tables(tmp_path, [TableSpec("F", 2000, 2, 1)], jobs=1, announce=said.append)
    assert len(said) == 1 and "2,000 rows in 2 partitions" in said[0]
    (tmp_path / "F2" / store.MANIFEST).unlink()
    (tmp_path / "F2" / "part-001.json").unlink()  # as if interrupted before partition 1
    said.clear()
    build_tables(tmp_path, [TableSpec("F", 2000, 2, 1)], jobs=1, announce=said.append)
    assert len(said) == 1 and "1,000 rows in 1 partition" in said[0]
    said.clear()
    build_tables(tmp_path, [TableSpec("F", 2000, 2, 1)], jobs=1, announce=said.append)
    assert said == []  # complete: nothing to build, nothing to say


@pytest.mark.parametrize("command", ["generate", "bench"])
def test_a_size_that_does_not_fit_is_refused_in_one_line(tmp_path, monkeypatch, command):
    monkeypatch.setattr(cost.shutil, "disk_usage", lambda p: Usage(10**9, 10**9, 10**6))
    args = ["--data", str(tmp_path / "d"), "--quiet"]
    if command == "generate":
        args += ["--kind", "F", "--rows", "100000", "--partitions", "2"]
    else:
        args += ["--preset", "tiny", "--out", str(tmp_path / "runs")]
    r = CliRunner().invoke(cli, [command, *args], catch_exceptions=False)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    # --quiet: the refusal is the only line (generate: the cost model's; bench: its own
    # announcement, sized by the same model, refuses before generating anything)
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    assert ("needs ~" in lines[0] or "bench needs about" in lines[0]) and "free" in lines[0]
    # refused before creating anything but the data directory's lock file (wisconsin.store.lock)
    assert not [p for p in (tmp_path / "d").rglob("*") if p.name != ".wisconsin.lock"]


def test_generate_prints_the_cost_first(tmp_path):
    r = CliRunner().invoke(
        cli,
        ["generate", "--kind", "G", "--rows", "500", "--partitions", "2"]
        + ["--data", str(tmp_path)],
    )
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines()[0].startswith("cost: G2: 1,000 rows in 2 partitions")
    assert shutil.disk_usage(tmp_path).free > 0
