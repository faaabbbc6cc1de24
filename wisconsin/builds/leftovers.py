"""What a killed build leaves in a table directory, and its removal.

A build writes under these temporary names only (docs/storage.md, "Writing rules")::

    part-NNN.duckdb.tmp            the partition being written (writer.build_partition)
    part-NNN.duckdb.tmp.wal        its write-ahead log
    part-NNN.duckdb.tmp.tmp/       DuckDB's temporary directory beside it: duckdb_temp_* files
    part-NNN.selected.arrow.tmp    its selected rows being written
    .part-NNN.tmp-PID.json         a temporary name of atomic.temp_path (also .manifest.tmp-PID.json,
                                   .table-id.tmp-PID.json)
    .write-test-PID                plan.prepare_table_dir's probe

and, once the manifest exists, part-NNN.selected.arrow (the manifest holds what it was kept
for). Only a command holding the table's lock clears a directory (generate, repair), and a
builder clears its own partition's names before it writes, so nothing removed here belongs to
a build still going. A name of ours of another kind (a directory where a build writes a file,
a symbolic link, a DuckDB temporary directory holding anything but DuckDB's own files) is no
leftover of ours: it is named in one line and left as it is.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from wisconsin.store import StoreError

_N = r"part-(\d{3,})"
_FILES = tuple(
    re.compile(p)
    for p in (
        _N + r"\.duckdb\.tmp",
        _N + r"\.duckdb\.tmp\.wal",
        _N + r"\.selected\.arrow\.tmp",
        r"\.(?:" + _N + r"|manifest|table-id)\.tmp-\d+\.json",
        r"\.write-test-\d+()",
    )
)
_SELECTED = re.compile(_N + r"\.selected\.arrow")  # a leftover only beside a manifest
_DUCKDB_TEMP_DIR = re.compile(_N + r"\.duckdb\.tmp\.tmp")
_DUCKDB_TEMP_FILE = re.compile(r"duckdb_temp_[A-Za-z0-9_.-]+")  # DuckDB 2.0: ..._owner, ...tmp


def _ours(name: str, complete: bool):
    """(pattern kind, its partition or None) if name is one of our temporary names."""
    for kind, patterns in (("file", _FILES), ("dir", (_DUCKDB_TEMP_DIR,))):
        for p in patterns:
            if m := p.fullmatch(name):
                return kind, m.group(1)
    if complete and (m := _SELECTED.fullmatch(name)):
        return "file", m.group(1)
    return None


def _foreign_entry(path: Path) -> str | None:
    """Why the DuckDB temporary directory `path` is not only DuckDB's, or None."""
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if not (_DUCKDB_TEMP_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)):
            return f"it holds {entry.name}, which is not one of DuckDB's temporary files"
    return None


def _why_not(path: Path, kind: str) -> str | None:
    """None if path is of the kind a build leaves under its name, else why it is not."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if kind == "file":
        return None if stat.S_ISREG(mode) else "not a regular file, where a build writes a file"
    if not stat.S_ISDIR(mode):
        return "not a directory, where DuckDB makes its temporary directory"
    return _foreign_entry(path)


def find(tdir: Path, part: int | None = None, complete: bool = False) -> list[tuple[Path, str]]:
    """Our temporary names in tdir (of partition `part` only, if given), each with why it
    must not be removed ("" if it may): sorted by name."""
    try:
        names = sorted(os.listdir(tdir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"cannot read {tdir}: {exc.strerror or exc}") from None
    found = []
    for name in names:
        hit = _ours(name, complete)
        if hit is None:
            continue
        kind, of = hit
        if part is not None and (not of or int(of) != part):
            continue
        try:
            why = _why_not(tdir / name, kind)
        except FileNotFoundError:
            continue
        except OSError as exc:  # e.g. a directory this user cannot read: not DuckDB's
            why = f"it cannot be read: {exc.strerror or exc}"
        found.append((tdir / name, why or ""))
    return found


def _remove(path: Path) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        for entry in os.scandir(path):  # DuckDB's files only (checked by find)
            os.unlink(entry.path)
        os.rmdir(path)
    else:
        os.unlink(path)


def clear(
    tdir: Path,
    *,
    part: int | None = None,
    complete: bool = False,
    verb: str = "generate",
    strict: bool = True,
) -> list[Path]:
    """Remove what a killed build left in tdir (of partition `part` only, if given;
    complete: the table's manifest exists) and return the removed paths. A name of ours
    that is not what a build leaves is a StoreError naming it, and nothing is removed
    (strict=False: it is skipped, and so is a path that cannot be removed)."""
    found = find(Path(tdir), part, complete)
    refused = [(p, why) for p, why in found if why]
    if refused and strict:
        path, why = refused[0]
        raise StoreError(
            f"{path} is not something an interrupted build leaves ({why}); it was left as it "
            f"is: move it out of {path.parent}, then run {verb} again"
        )
    removed = []
    for path, why in found:
        if why:
            continue
        try:
            _remove(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if not strict:
                continue
            raise StoreError(
                f"cannot remove {path}, left by an interrupted build: {exc.strerror or exc}"
            ) from None
        removed.append(path)
    return removed


def said(tdir: Path, removed: list[Path], verb: str = "generate") -> str:
    """One line naming what clear() removed."""
    names = ", ".join(p.name + "/" * bool(_DUCKDB_TEMP_DIR.fullmatch(p.name)) for p in removed)
    return f"{verb}: removed what an interrupted build left in {tdir}: {names}"
