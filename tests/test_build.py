"""Building tables when things go wrong: a full disk."""

import subprocess

import pytest
from click.testing import CliRunner

from harness import tmpfs
from wisconsin.cli import cli
from wisconsin.store.lock import LOCK_FILE


@pytest.fixture
def small_disk(tmp_path):
    """An 8 MB tmpfs: an honest full disk (needs root and mount)."""
    with tmpfs.mounted(tmp_path / "small", "8m") as mnt:
        yield mnt


def test_a_size_that_does_not_fit_is_refused_before_anything_is_written(small_disk):
    data = small_disk / "data"
    result = CliRunner().invoke(
        cli,
        ["generate", "--kind", "F", "--rows", "100000", "--partitions", "2"]
        + ["--data", str(data), "--quiet"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs ~" in lines[0] and "free" in lines[0], result.output
    assert not [p for p in data.rglob("*") if p.name != LOCK_FILE]


def test_disk_full_during_generate_is_one_line_and_leaves_no_temp_files(small_disk, monkeypatch):
    # The cost estimate would refuse this size up front (test above); make it believe the
    # disk is large so the build really runs out of space while writing.
    from collections import namedtuple

    from wisconsin.builds import cost

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(cost.shutil, "disk_usage", lambda _p: usage(2**40, 0, 2**40))
    data = small_disk / "data"
    result = CliRunner().invoke(
        cli,
        ["generate", "--kind", "F", "--rows", "100000", "--partitions", "2"]
        + ["--data", str(data), "--quiet"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "no space left on the device" in lines[0] and "F2 partition" in lines[0]
    # no half-written partition, WAL or temp JSON file; no lock file, and the directories
    # the refused build created are gone with it
    assert not data.exists(), sorted(p.name for p in data.rglob("*"))


def test_builders_die_with_a_killed_generate(tmp_path):
    """SIGKILL of generate (no cleanup runs): its builder processes die too, instead of
    writing on, as orphans, into a directory the next generate builds in."""
    import sys
    import time

    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", "generate", "--kind", "F", "--rows", "4000000",
         "--partitions", "2", "--jobs", "2", "--data", str(tmp_path), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "F2").glob("*.tmp")):  # builders are writing
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        builders = psutil.Process(proc.pid).children(recursive=True)
        assert builders
    finally:
        proc.kill()
        proc.wait()
    _gone, alive = psutil.wait_procs(builders, timeout=10)
    for p in alive:
        p.kill()
    assert alive == []


def test_the_dask_executor_builds_resumes_and_reuses_through_the_same_planner(tmp_path):
    """Cluster generate without namespaces: two in-process workers, the same planner."""
    from distributed import Client, Scheduler, SpecCluster, Worker

    from wisconsin.builds import build_tables
    from wisconsin.store import TableSpec
    from wisconsin.store.check import verify_table

    data, workers = tmp_path / "data", tmp_path / "workers"
    spec = TableSpec("F", 2000, 2, 5)
    named = {f"part{i}": {"cls": Worker, "options": {"nthreads": 1}} for i in range(2)}
    sched = {"cls": Scheduler, "options": {"dashboard_address": None}}
    with SpecCluster(named, sched) as lc, Client(lc) as client:

        def build():
            return build_tables(data, [spec], client=client, worker_data=str(workers), timeout=60)

        first = build()
        (m,) = first.manifests
        assert (first.built_partitions, first.reused_tables) == (2, ())
        assert [p.worker for p in m.parts] == ["part0", "part1"]
        assert all(p.path.startswith(str(workers)) for p in m.parts)
        assert verify_table(data / "F2")[1] == []
        again = build()
        assert again.reused_tables == ("F2",) and again.built_partitions == 0
        # an interrupted build (no manifest yet) resumes: both partitions are kept
        (data / "F2" / "manifest.json").unlink()
        resumed = build()
        assert (resumed.built_partitions, resumed.reused_partitions) == (0, 2)
        assert [p.checksum for p in resumed.manifests[0].parts] == [p.checksum for p in m.parts]


def test_a_finished_partition_made_with_another_checksum_is_rebuilt(tmp_path):
    """One table, one hash: a resume keeps a finished partition only if its marker names
    the checksum this build makes (a build interrupted before the xxh3 change is redone)."""
    import json

    from wisconsin.builds import writer
    from wisconsin.store import STORAGE, TableSpec

    spec = TableSpec("F", 1000, 1, 5)
    writer.build_partition(str(tmp_path), spec.n, spec.seed, 0, 1)
    assert writer.finished_partition(tmp_path, spec, 0) is not None
    marker = tmp_path / writer.marker_file(0)
    data = json.loads(marker.read_text())
    assert data["checksum_of"] == STORAGE["checksum"]
    marker.write_text(json.dumps(data | {"checksum_of": "sha256/128 of canonical column streams"}))
    assert writer.finished_partition(tmp_path, spec, 0) is None
    del data["checksum_of"]  # a marker written before the field existed
    marker.write_text(json.dumps(data))
    assert writer.finished_partition(tmp_path, spec, 0) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: [d],  # not an object
        lambda d: d | {"rows": "x"},  # a wrong type
        lambda d: d | {"rows": -1},  # out of range
        lambda d: d | {"index": 3},  # another partition's entry
        lambda d: d | {"hi": d["hi"] + 1},  # rows no longer hi - lo
        lambda d: {k: v for k, v in d.items() if k != "checksum"},  # a field missing
    ],
)
def test_a_damaged_resume_marker_rebuilds_its_partition_instead_of_failing(tmp_path, damage):
    """A hand-edited or damaged part-NNN.json means "not finished": the partition is
    rebuilt, never a traceback nor a bad entry in the manifest."""
    import json

    from wisconsin.builds import writer
    from wisconsin.store import TableSpec

    spec = TableSpec("F", 1000, 1, 5)
    writer.build_partition(str(tmp_path), spec.n, spec.seed, 0, 1)
    marker = tmp_path / writer.marker_file(0)
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps(damage(data)))
    assert writer.finished_partition(tmp_path, spec, 0) is None
