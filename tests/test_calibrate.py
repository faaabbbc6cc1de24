"""Machine probes on tiny inputs: bounded, and measuring what they say."""

from __future__ import annotations

import os

import pytest

from wisconsin.measure import calibrate
from wisconsin.store import pagecache
from wisconsin.workloads.wisconsin.queries import CATALOG


def test_storage_read_rate_reads_the_evicted_file(tmp_path):
    f = tmp_path / "blob"
    f.write_bytes(os.urandom(8 << 20))
    rate = calibrate.storage_read_bytes_per_s(f, max_seconds=2.0)
    if pagecache.read_bytes() is None:
        assert rate is None
    else:
        assert rate is not None and 1e6 < rate < 1e12
    assert pagecache.resident_bytes(f) is not None


def test_storage_read_rate_reads_at_most_max_bytes_of_a_larger_file(tmp_path):
    f = tmp_path / "blob"
    f.write_bytes(os.urandom(64 << 20))
    if pagecache.read_bytes() is None:
        pytest.skip("no /proc/self/io here")
    before = pagecache.read_bytes()
    rate = calibrate.storage_read_bytes_per_s(f, max_bytes=4 << 20, streams=2)
    assert rate is not None
    assert pagecache.read_bytes() - before < 24 << 20  # 4 MiB and read-ahead, not 64 MiB


def test_storage_read_rate_is_none_when_the_bytes_were_not_from_storage(tmp_path, monkeypatch):
    f = tmp_path / "blob"
    f.write_bytes(b"x" * (1 << 20))
    monkeypatch.setattr(calibrate.pagecache, "evict", lambda path: None)  # stays cached
    f.read_bytes()
    assert calibrate.storage_read_bytes_per_s(f) is None


def test_the_storage_rate_is_the_fastest_of_repeated_short_probes(monkeypatch):
    rates = iter([1e8, 3e8, None, 2e8, 9e9])
    monkeypatch.setattr(calibrate, "storage_read_bytes_per_s", lambda p, streams: next(rates))
    assert calibrate.best_storage_read_bytes_per_s("f", repeats=4) == 3e8  # 5th not probed


def test_a_long_probe_is_not_repeated_and_a_failed_one_stays_none(monkeypatch):
    calls = []

    def slow(path, streams):
        calls.append(path)
        return 1e8

    monkeypatch.setattr(calibrate, "storage_read_bytes_per_s", slow)
    assert calibrate.best_storage_read_bytes_per_s("f", within_s=0.0) == 1e8
    assert len(calls) == 1
    monkeypatch.setattr(calibrate, "storage_read_bytes_per_s", lambda p, streams: None)
    assert calibrate.best_storage_read_bytes_per_s("f") is None


def test_memory_read_rate_is_plausible():
    rate = calibrate.memory_read_bytes_per_s(nbytes=16 << 20, repeats=2)
    assert 1e8 < rate < 1e12


@pytest.mark.parametrize("dispatch", [False, True])
def test_probe_on_a_tiny_table(tmp_path, dispatch):
    p = calibrate.probe(
        tmp_path, max_partitions=2, scan=CATALOG.get("scan"), rows=20_000, repeats=2,
        dispatch=dispatch,
    )  # fmt: skip
    assert p.rows == 20_000 and p.table_bytes > 20_000 * 200
    assert p.scan_rows_per_s > 10_000
    assert p.memory_read_bytes_per_s > 1e8
    assert p.dispatch_partitions == 2
    assert (p.dispatch_s is not None and 0 < p.dispatch_s < 5) if dispatch else p.dispatch_s is None
    if pagecache.read_bytes() is not None:
        assert p.cold_scan_rows_per_s is not None and p.cold_scan_rows_per_s < p.scan_rows_per_s
    assert p.seconds < 60
    (table_file,) = tmp_path.glob("probe-20000x1/F1/*.duckdb")
    built = table_file.stat().st_mtime_ns
    calibrate.probe(
        tmp_path, max_partitions=2, scan=CATALOG.get("scan"), rows=20_000, repeats=1,
        dispatch=False,
    )  # fmt: skip
    assert table_file.stat().st_mtime_ns == built  # the probe table is reused, not rebuilt
