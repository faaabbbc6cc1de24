"""Export: a table as Parquet, one file per partition, for other engines (docs/storage.md)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path

from wisconsin.sqltext import db_path, ident
from wisconsin.store import (
    StoreError,
    lock,
    partition_path,
    read_manifest,
    refuse_inside_table,
    tables_in,
)


def export_parquet(table_dir: str | os.PathLike, out_dir: str | os.PathLike) -> list[Path]:
    """Write each local partition to out_dir/part-NNN.parquet (key order): all or none, and
    none if any exists (outputs.write_all). Refused, writing nothing, when out_dir is (or is
    inside) a table or a data directory: Parquet files there are files wisconsin did not
    build (`remove` would refuse the directory)."""
    refuse_inside_table(out_dir)
    if tables := tables_in(out_dir):
        raise StoreError(
            f"{out_dir} is a data directory holding tables {', '.join(tables)}: give the "
            "Parquet files a directory of their own"
        )
    return _export(table_dir, out_dir)


@lock.locked("table_dir", shared=True, table=True)  # as verify_table
def _export(table_dir: str | os.PathLike, out_dir: str | os.PathLike) -> list[Path]:
    import duckdb

    from wisconsin.outputs import write_all

    m = read_manifest(table_dir)
    sources = []
    for p in m.parts:
        src = partition_path(table_dir, p)
        if p.worker or not src.is_file():
            raise StoreError(f"partition {p.index} is not on this machine ({src}); export it there")
        sources.append(src)

    def copy(i: int, tmp: Path) -> None:
        con = duckdb.connect(db_path(sources[i]), read_only=True, config={"threads": 1})
        try:
            con.execute(
                f"COPY (SELECT * FROM {ident(m.table)} ORDER BY unique2) TO ? "
                "(FORMAT parquet, COMPRESSION zstd)",
                [db_path(tmp)],
            )
        except duckdb.IOException as exc:  # a full disk: write_all's one line names the file
            raise _os_error(exc) from None
        finally:
            con.close()

    targets = [Path(out_dir) / f"part-{p.index:03d}.parquet" for p in m.parts]
    return write_all(targets, copy, error=StoreError)


def _os_error(exc: Exception) -> OSError:
    """A DuckDB IO error as the OSError it reports: its text holds a JSON object with the
    errno (DuckDB 2.0), else only the words."""
    text = str(exc)
    code = 0
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        code = int(json.loads(text[text.index("{") : text.rindex("}") + 1]).get("errno", 0))
    if not code and "No space left on device" in text:
        code = errno.ENOSPC
    if code:
        return OSError(code, os.strerror(code))
    return OSError((text.strip().splitlines() or [type(exc).__name__])[0])
