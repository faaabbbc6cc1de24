"""The one atomic writer: every file wisconsin writes goes through here.

A file is written under a hidden temporary name in its own directory, flushed and fsynced,
then published by one os.replace (overwrite) or os.link (never over an existing file), and
the directory is fsynced so that the rename survives a crash. A reader sees the old file or
the complete new one, never a part. Any failure (a full disk included) becomes one
WisconsinError line naming the file and the cause, and leaves neither the temporary file
nor an empty final file behind.

A temporary name holds the pid: one process writes a given file from one thread at a time.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wisconsin import WisconsinError

# fsync of a directory that the filesystem cannot sync: the rename is done all the same.
_DIR_SYNC_UNSUPPORTED = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}


class WriteError(WisconsinError):
    """A file could not be written; nothing of the attempt is left on disk."""

    def __init__(self, message: str, path: Path, errno: int | None = None):
        super().__init__(message)
        self.path = path
        self.errno = errno


class AlreadyExistsError(WriteError):
    """overwrite=False and the file exists: it is left as it was."""


def temp_path(final: Path) -> Path:
    """The temporary name final is written under: hidden, in final's directory, with the pid,
    keeping final's suffix (a library that picks a format by suffix still sees it)."""
    final = Path(final)
    return final.with_name(f".{final.stem}.tmp-{os.getpid()}{final.suffix}")


def _cause(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _cannot_write(final: Path, exc: OSError) -> WriteError:
    return WriteError(f"cannot write {final}: {_cause(exc)}", final, exc.errno)


def _exists(final: Path) -> AlreadyExistsError:
    return AlreadyExistsError(f"{final} already exists; not overwriting it", final, errno.EEXIST)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _DIR_SYNC_UNSUPPORTED:
            raise
    finally:
        os.close(fd)


def publish(tmp: Path, final: Path, *, overwrite: bool) -> None:
    """Make the written file tmp appear as final in one step.

    fsync tmp, then os.replace it over final (overwrite) or os.link it to final, which fails
    if final exists, and remove tmp (not overwrite: AlreadyExistsError, final unchanged);
    then fsync the directory. The only place in wisconsin that renames or links a file into
    place. tmp is gone however this ends: published, or removed."""
    tmp, final = Path(tmp), Path(final)
    try:
        _fsync_file(tmp)
        if overwrite:
            os.replace(tmp, final)
        else:
            try:
                os.link(tmp, final)
            except FileExistsError:
                raise _exists(final) from None
            tmp.unlink()
        _fsync_dir(final.parent)
    except OSError as exc:
        raise _cannot_write(final, exc) from None
    finally:
        # Published (replaced, or linked: final holds the data), or not published at all.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _refuse_existing(final: Path, overwrite: bool) -> None:
    """The early refusal, before anything is written (publish's link is the race-safe one)."""
    if not overwrite and os.path.lexists(final):
        raise _exists(final)


def _fresh_temp(final: Path) -> Path:
    """final's temporary name, with a stale file of a dead process of the same pid removed."""
    tmp = temp_path(final)
    try:
        tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise _cannot_write(final, exc) from None
    return tmp


def write_bytes(path: str | os.PathLike[str], data: bytes, *, overwrite: bool = True) -> None:
    """Write data to path atomically (see publish); overwrite=False refuses an existing file."""
    final = Path(path)
    _refuse_existing(final, overwrite)
    tmp = _fresh_temp(final)
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _cannot_write(final, exc) from None
        raise
    publish(tmp, final, overwrite=overwrite)


def write_text(path: str | os.PathLike[str], text: str, *, overwrite: bool = True) -> None:
    """Write text to path as UTF-8, atomically (see write_bytes)."""
    write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


@contextlib.contextmanager
def writing(path: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[Path]:
    """Yield the temporary path to write path's content to (a DuckDB database, a file a
    library writes); publish it when the block ends normally, remove it on any exception
    (KeyboardInterrupt included). An OSError of the block about the temporary file (a full
    disk) becomes a WriteError naming path; the caller closes what it opened on the file
    inside the block. Side files a library makes next to it (a DuckDB .wal) are the
    caller's."""
    final = Path(path)
    _refuse_existing(final, overwrite)
    tmp = _fresh_temp(final)
    try:
        yield tmp
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp), tmp):
            raise _cannot_write(final, exc) from None
        raise
    publish(tmp, final, overwrite=overwrite)


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def read_json(
    path: str | os.PathLike[str],
    what: str,
    *,
    object_only: bool = False,
    error: type[WisconsinError] = WisconsinError,
) -> Any:
    """Read and parse the JSON file path, a `what` (e.g. "run file"); a missing, unreadable or
    malformed file (not UTF-8, invalid JSON, nested too deeply, not an object when
    object_only) raises error with one line: "<what> <path>: <reason>"."""
    p = Path(path)

    def fail(reason: str) -> WisconsinError:
        return error(f"{what} {p}: {reason}")

    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise fail("no such file") from None
    except OSError as exc:
        raise fail(f"cannot read it: {_cause(exc)}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise fail("not valid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise fail(f"not valid JSON ({str(exc).splitlines()[0]})") from None
    if object_only and not isinstance(data, dict):
        kind = _JSON_TYPES.get(type(data), "number")
        raise fail(f"not a JSON object (the top level is a {kind})")
    return data
