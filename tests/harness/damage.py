"""Test helper (tests/harness: not shipped in the wheel): damage a partition file the way a disk or a stray write would."""

from __future__ import annotations

import os

import numpy as np

BLOCK_START = 3 * 4096  # DuckDB 2.0's file headers (see docs/storage.md)


def corrupt_blocks(path: str | os.PathLike, table: str, nbytes: int = 8192, seed: int = 0) -> int:
    """Overwrite nbytes of random bytes inside one of table's data blocks (raw file I/O,
    past the block's checksum); return the file offset written."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        blocks = sorted(
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT block_id FROM pragma_storage_info('{table}') WHERE block_id >= 0"
            ).fetchall()
        )
    finally:
        con.close()
    offset = BLOCK_START + blocks[len(blocks) // 2] * block_size + 8 + 1024
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(np.random.default_rng(seed).bytes(nbytes))
    return offset
