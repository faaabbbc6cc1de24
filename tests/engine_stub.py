"""Test-only stand-in for the engine side of issue 8 (make_cold, data_bytes, noop_statements,
bytes_read) until it lands; `install` does nothing once the engines have make_cold.

The stand-in evicts partition files with posix_fadvise from the test process (the page cache
is the machine's), sizes the queried table from pragma_storage_info, and reads /proc/self/io
around in-process statements (shared-memory only: workers report no bytes_read here).
"""

from __future__ import annotations

import os

from wisconsin import partition
from wisconsin.queries import Statement
from wisconsin.shared_memory import WHOLE, SharedMemoryEngine
from wisconsin.shared_nothing import SharedNothingEngine

NOOP = Statement(query="noop", sql="SELECT 1", profile=False)


def read_bytes() -> int | None:
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _evict(path: str) -> int:
    for f in (path, path + ".wal"):
        if os.path.exists(f):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return os.path.getsize(path)


def _paths(engine) -> dict[int, str]:
    if isinstance(engine, SharedNothingEngine):
        return dict(engine.paths)
    return {p: os.path.join(engine.table_dir, f"part-{p:03d}.duckdb") for p in engine.parts}


def make_cold(self) -> dict[int, dict]:
    return {
        p: {"file_bytes": _evict(path), "resident_bytes": None} for p, path in _paths(self).items()
    }


def data_bytes(self) -> dict[int, int]:
    got = self.query(
        "SELECT count(DISTINCT block_id) * 262144 "
        "FROM pragma_storage_info('wisconsin') WHERE block_id >= 0"
    )
    return {p: int(rows[0][0]) for p, rows in got.items()}


def noop_statements(self) -> dict[int, Statement]:
    if isinstance(self, SharedMemoryEngine):
        return {WHOLE: NOOP}
    return {p: NOOP for p in sorted(self.paths)}


def install(monkeypatch) -> bool:
    """Patch the engines; False if the real API is there (nothing patched)."""
    if hasattr(SharedMemoryEngine, "make_cold"):
        return False
    for cls in (SharedMemoryEngine, SharedNothingEngine):
        monkeypatch.setattr(cls, "make_cold", make_cold, raising=False)
        monkeypatch.setattr(cls, "data_bytes", data_bytes, raising=False)
        monkeypatch.setattr(cls, "noop_statements", noop_statements, raising=False)
    run = partition.PartitionSession.run

    def run_with_io(self, stmt, dispatched=None):
        before = read_bytes()
        out = run(self, stmt, dispatched)
        after = read_bytes()
        out["bytes_read"] = None if before is None else after - before
        return out

    monkeypatch.setattr(partition.PartitionSession, "run", run_with_io)
    return True
