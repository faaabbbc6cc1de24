"""Page-cache helpers: eviction, residency and bytes read, on a small real file."""

from __future__ import annotations

import errno
import os
import time

import pytest

from wisconsin import pagecache


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


def _blocks_file(path, blocks=10, size=64 << 10):
    data = os.urandom(4096 + blocks * size)
    path.write_bytes(data)
    return data, size


@pytest.mark.parametrize("direct", [True, False])
def test_read_blocks_gives_each_block_once_in_order_and_short_past_the_end(tmp_path, direct):
    data, size = _blocks_file(tmp_path / "f")
    pagecache.evict(tmp_path / "f")
    wanted = [7, 2, 3, 3, 9, 10, 4, 0]  # duplicates, gaps, runs, one block past the end
    got = [
        (b, bytes(buf))
        for b, buf in pagecache.read_blocks(tmp_path / "f", 4096, size, wanted, direct=direct)
    ]
    assert [b for b, _ in got] == [0, 2, 3, 4, 7, 9, 10]
    for b, buf in got:
        assert buf == data[4096 + b * size : 4096 + (b + 1) * size]
    assert got[-1][1] == b""  # block 10 starts at the end of the file


def test_read_blocks_coalesces_across_its_read_size(tmp_path, monkeypatch):
    monkeypatch.setattr(pagecache, "READ_BYTES", 3 * (64 << 10))  # 3 blocks per read
    data, size = _blocks_file(tmp_path / "f")
    got = {b: bytes(buf) for b, buf in pagecache.read_blocks(tmp_path / "f", 4096, size, range(8))}
    assert got == {b: data[4096 + b * size : 4096 + (b + 1) * size] for b in range(8)}


def test_read_blocks_of_a_cold_file_leaves_it_out_of_the_cache(tmp_path):
    f = tmp_path / "f"
    data, size = _blocks_file(f, blocks=64)
    pagecache.evict(f)
    if pagecache.resident_bytes(f) is None or not hasattr(os, "O_DIRECT"):
        pytest.skip("no mincore or no direct I/O here")
    fd = pagecache._open_direct(f)
    if fd is None:
        pytest.skip("this file system has no direct I/O")
    os.close(fd)
    read = sum(len(buf) for _, buf in pagecache.read_blocks(f, 4096, size, range(64)))
    assert read == 64 * size
    assert pagecache.resident_bytes(f) < len(data) // 4  # read around the cache
    f.read_bytes()  # once cached, the cache is read and stays as it was
    assert sum(len(buf) for _, buf in pagecache.read_blocks(f, 4096, size, range(64))) == read
    assert pagecache.resident_bytes(f) == len(data)


def test_read_blocks_falls_back_where_direct_io_is_refused(tmp_path, monkeypatch):
    f = tmp_path / "f"
    data, size = _blocks_file(f, blocks=3)
    pagecache.evict(f)
    real, refused = os.preadv, []

    def preadv(fd, buffers, offset):
        if not refused:  # as a file system without direct I/O answers the first read
            refused.append(fd)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, buffers, offset)

    monkeypatch.setattr(os, "preadv", preadv)
    got = b"".join(bytes(buf) for _, buf in pagecache.read_blocks(f, 4096, size, range(3)))
    assert refused and got == data[4096:]
