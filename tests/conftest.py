"""Shared fixtures."""

from __future__ import annotations

import pytest


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
