"""Page-cache helpers: eviction, residency and bytes read, on a small real file."""

from __future__ import annotations

import os
import time

import pytest

from wisconsin.store import pagecache


def test_evict_empties_the_cache_and_the_next_read_comes_from_storage(tmp_path):
    f = tmp_path / "blob"
    size = 4 << 20
    f.write_bytes(os.urandom(size))
    f.read_bytes()
    if pagecache.read_bytes() is None or pagecache.resident_bytes(f) is None:
        pytest.skip("no /proc/self/io or mincore here")
    assert pagecache.resident_bytes(f) == size  # just written and read: all cached
    out = pagecache.evict(f)
    assert out == {"file_bytes": size, "resident_bytes": 0}
    before = pagecache.read_bytes()
    f.read_bytes()
    assert pagecache.read_bytes() - before >= size  # from storage, not the cache
    assert pagecache.resident_bytes(f) == size


def test_evict_fsyncs_only_a_file_whose_pages_stay_dirty(tmp_path, monkeypatch):
    f = tmp_path / "blob"
    f.write_bytes(os.urandom(1 << 20))
    if pagecache.resident_bytes(f) is None:
        pytest.skip("no mincore here")
    synced = []
    real, real_advise = os.fsync, os.posix_fadvise
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    # just written: dirty pages DONTNEED cannot drop until written back
    assert pagecache.evict(f)["resident_bytes"] == 0
    dirty = len(synced)
    f.read_bytes()  # cached again, clean
    assert pagecache.resident_bytes(f) == 1 << 20
    assert pagecache.evict(f)["resident_bytes"] == 0
    assert len(synced) == dirty  # a clean file is dropped without an fsync
    # a page that stays after DONTNEED (dirty, or under writeback) is written back first
    monkeypatch.setattr(
        os, "posix_fadvise", lambda *a: None if len(synced) == dirty else real_advise(*a)
    )
    f.read_bytes()
    assert pagecache.evict(f)["resident_bytes"] == 0
    assert len(synced) == dirty + 1


def test_evict_partition_covers_the_wal_and_tolerates_its_absence(tmp_path):
    db = tmp_path / "p.duckdb"
    db.write_bytes(b"x" * 8192)
    assert pagecache.evict_partition(db)["file_bytes"] == 8192
    (tmp_path / "p.duckdb.wal").write_bytes(b"y" * 4096)
    assert pagecache.evict_partition(db)["file_bytes"] == 8192 + 4096


def test_drop_caches_without_permission_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(pagecache, "DROP_CACHES", str(tmp_path / "no" / "such"))
    with pytest.raises(pagecache.EvictionError, match="needs root"):
        pagecache.drop_caches()


def test_resident_bytes_of_an_empty_file_is_zero(tmp_path):
    f = tmp_path / "empty"
    f.write_bytes(b"")
    assert pagecache.resident_bytes(f) == 0


def test_written_pages_dropper_drops_written_back_pages_and_keeps_every_byte(tmp_path):
    f, later = tmp_path / "growing", tmp_path / "created-later"
    data = os.urandom(8 << 20)
    with (
        pagecache.WrittenPagesDropper([f, later], interval_s=0.01, keep_bytes=0) as dropper,
        open(f, "wb") as fh,
    ):
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())  # written back: DONTNEED may now drop these pages
        resident = pagecache.resident_bytes(f)
        if resident is None:
            pytest.skip("no mincore here")
        for _ in range(200):  # the thread drops them within a few intervals
            if pagecache.resident_bytes(f) == 0:
                break
            time.sleep(0.01)
        assert pagecache.resident_bytes(f) == 0
        fh.write(data)  # dirty pages: DONTNEED never drops them, so nothing is lost
    assert not dropper._thread.is_alive()  # stopped on exit
    assert f.read_bytes() == data + data
    assert not later.exists()  # a file that never appeared is not created


def test_written_pages_dropper_keeps_the_first_bytes_of_a_file_cached(tmp_path):
    f = tmp_path / "big"
    with pagecache.WrittenPagesDropper([f], interval_s=0.01, keep_bytes=4 << 20):
        with open(f, "wb") as fh:
            fh.write(os.urandom(12 << 20))
            fh.flush()
            os.fsync(fh.fileno())
        if pagecache.resident_bytes(f) is None:
            pytest.skip("no mincore here")
        for _ in range(200):
            if pagecache.resident_bytes(f) == 4 << 20:
                break
            time.sleep(0.01)
    assert pagecache.resident_bytes(f) == 4 << 20  # the head stays, the rest was dropped


_HOLDER = """
import sys
import duckdb
from wisconsin.store import pagecache
con = duckdb.connect(sys.argv[1])
print("open", flush=True)
sys.stdin.readline()
pagecache.evict(sys.argv[1])
pagecache.resident_bytes(sys.argv[1])
pagecache.evict_partition(sys.argv[1])
print("evicted", flush=True)
sys.stdin.readline()
"""


def test_evicting_a_file_duckdb_holds_open_keeps_duckdbs_lock(tmp_path):
    """close() of any descriptor of a file drops the process's POSIX locks on it: eviction
    once released DuckDB's lock on a partition a run held open (62 of 73 samples)."""
    import subprocess
    import sys

    import duckdb

    from harness.locks import posix_lock_holder

    path = tmp_path / "part.duckdb"
    duckdb.connect(str(path)).execute("CREATE TABLE t AS SELECT range AS i FROM range(10000)")
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout.readline() == "open\n"
        assert posix_lock_holder(path) == child.pid
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline() == "evicted\n"
        assert posix_lock_holder(path) == child.pid
    finally:
        child.kill()
        child.wait()


def test_proc_files_are_read_from_a_kept_descriptor_that_follows_the_process():
    # kept open between calls (read_bytes still counts each read: the test above); a forked
    # child reads its own /proc/self, not the parent's inherited descriptor
    assert pagecache.proc_field("status", b"Pid:") == os.getpid()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own pid, or 0
        ok = pagecache.proc_field("status", b"Pid:") == os.getpid()
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"
    assert pagecache.proc_field("status", b"NoSuchField:") is None
    assert pagecache.proc_field("no-such-file", b"x:") is None
