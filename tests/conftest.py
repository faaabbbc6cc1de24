"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_tempdir(tmp_path_factory, monkeypatch):
    """Each test's temporary files (and its subprocesses': TMPDIR) go to a directory of its
    own, removed when it ends: what library code puts in the temp directory (e.g. Dask logs
    of an engine given no output directory) never accumulates (.ci/tmpcheck)."""
    tmp_path_factory.getbasetemp()  # pytest's own base stays where it is
    own = tempfile.mkdtemp(prefix="wisconsin-test-")
    monkeypatch.setattr(tempfile, "tempdir", own)
    monkeypatch.setenv("TMPDIR", own)
    yield
    shutil.rmtree(own, ignore_errors=True)


@pytest.fixture
def netns_cluster_factory(tmp_path):
    """Start ``NetnsCluster``s (same arguments, minus base_dir); all stopped at teardown.

    Skips the test with the reason when network namespaces are unavailable
    (not root, no iproute2, ...). Leftovers of killed earlier runs are removed first.
    """
    from harness.netns import (
        NetnsCluster,
        NetnsUnavailable,
        check_available,
        cleanup_stale,
    )

    try:
        check_available()
    except NetnsUnavailable as exc:
        pytest.skip(f"network namespaces unavailable: {exc}")
    cleanup_stale()
    clusters: list[NetnsCluster] = []

    def make(n_workers: int, **kwargs) -> NetnsCluster:
        cluster = NetnsCluster(n_workers, tmp_path / f"cluster{len(clusters)}", **kwargs)
        clusters.append(cluster)
        return cluster.start()

    yield make
    for cluster in clusters:
        cluster.stop()


def shm_run(where, rows, seed, progress=None):
    """A real shared-memory cold run in `where`: F of `rows` rows at P = 1, 2, every query,
    >= 5 rounds; its run file's path (progress: the runner's callback)."""
    from wisconsin.builds import build_tables
    from wisconsin.measure.runner import RunOptions, run
    from wisconsin.store import TableSpec
    from wisconsin.workloads.wisconsin.queries import CATALOG

    build_tables(where / "data", [TableSpec("F", rows, p, seed) for p in (1, 2)], jobs=2)
    out = where / "run.json"
    opts = RunOptions(
        catalog=CATALOG,
        data_dir=str(where / "data"),
        mode="shared-memory",
        kinds=("F",),
        out=str(out),
        # the settings the audit tests' forgeries were written against (not the defaults,
        # which change with the power measured: a forged stop rule needs --max-reps 10)
        min_reps=5,
        max_reps=10,
        blocks=3,
    )
    return run(opts, progress=progress)[1]


@pytest.fixture(scope="session")
def run_path(tmp_path_factory):
    """A real shared-memory cold run of 3000 rows (the audit tests forge copies of it).
    WISCONSIN_TEST_RUN_FILE names one made beforehand by shm_run (mutation testing runs
    the audit tests once per mutant: 14 s of measuring each time otherwise)."""
    made = os.environ.get("WISCONSIN_TEST_RUN_FILE")
    if made:
        return Path(shutil.copy(made, tmp_path_factory.mktemp("shm") / "run.json"))
    return shm_run(tmp_path_factory.mktemp("shm"), 3000, 7)


@pytest.fixture
def make_shm_run():
    return shm_run


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the marks in each worker
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n`), tests that start network-namespace clusters share one
    worker: two Dask clusters on one 2-core box at once would be timed against each other.
    (Without xdist the mark does nothing.)"""
    for item in items:
        if "netns_cluster_factory" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("netns"))
