"""Writing a set of output files all or nothing, never over a file that exists unasked."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from wisconsin import WisconsinError, atomic

# The lists of open published() blocks: each file write_all publishes is added to every one.
_records: list[list[Path]] = []


@contextlib.contextmanager
def published() -> Iterator[list[Path]]:
    """Yield a list of the files write_all publishes inside the block and does not take back:
    what is on disk however the block ends (a ^C after the last rename included)."""
    record: list[Path] = []
    _records.append(record)
    try:
        yield record
    finally:
        _records[:] = [r for r in _records if r is not record]


def note_published(path: Path) -> None:
    """Add a file written outside write_all (a complete run file) to the open published()
    lists: a ^C after it was written must not be reported as "nothing written"."""
    for record in _records:
        record.append(path)


def write_all(
    targets: Sequence[Path],
    write: Callable[[int, Path], None],
    *,
    force: bool = False,
    hint: str = "",
    error: type[WisconsinError] = WisconsinError,
) -> list[Path]:
    """Write every target (write(i, tmp) fills a temporary path) or none; return the targets.

    Every target is checked before anything is written: an existing one is refused (hint
    follows the refusal) unless force. All are written under temporary names in their
    directories, then all renamed; an error or ^C takes back what this call published (with
    force, files already replaced stay, in the exception's `written`) and the directories it
    created for them, if empty. published() lists what is left, however the call ends."""
    seen: set[Path] = set()
    for final in targets:
        key = final.resolve()
        if key in seen:
            raise error(f"two outputs would be written to {final}; write them to separate places")
        seen.add(key)
        if not force and os.path.lexists(final):
            raise error(f"{final} already exists; not overwriting it{hint}")
    created: list[Path] = []  # directories this call made, parents first
    try:
        for d in dict.fromkeys(final.parent for final in targets):
            try:
                _make_dirs(d, created)
            except OSError as exc:
                raise error(f"cannot create {d}: {exc.strerror or exc}") from None
        return _publish(targets, write, force, hint, error)
    except BaseException:
        # A failed or interrupted plot or export would leave an empty directory behind that
        # the user never made; one holding anything (a kept replacement, someone else's
        # file) stays.
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def _make_dirs(d: Path, created: list[Path]) -> None:
    """mkdir -p d, adding each directory it makes to created (parents first); one another
    process makes meanwhile is not ours."""
    missing = []
    while not os.path.lexists(d) and d.parent != d:
        missing.append(d)
        d = d.parent
    for m in reversed(missing):
        try:
            m.mkdir()
        except FileExistsError:
            continue
        created.append(m)
    d.mkdir(parents=True, exist_ok=True)  # refused here if it is not a directory


def _publish(
    targets: Sequence[Path],
    write: Callable[[int, Path], None],
    force: bool,
    hint: str,
    error: type[WisconsinError],
) -> list[Path]:
    """write_all once the directories exist: stage every file, then rename them all."""
    staged: list[Path] = []
    written: list[Path] = []
    current = targets[0] if targets else None  # the file being written, for an error
    # (final, the staged file's identity) once its publishing may have happened
    renaming: tuple[Path, tuple[int, int]] | None = None
    try:
        # Writing is the slow part: all of it happens under temporary names first, so a ^C
        # then leaves nothing; publishing is a rename per file.
        for i, final in enumerate(targets):
            current = final
            tmp = atomic.temp_path(final)
            staged.append(tmp)
            write(i, tmp)
        for tmp, final in zip(staged, targets, strict=True):
            current = final
            st = os.stat(tmp)
            renaming = (final, (st.st_dev, st.st_ino))
            # Without force, link() fails if the target appeared since the check: no silent
            # overwrite.
            atomic.publish(tmp, final, overwrite=force)
            written.append(final)
            note_published(final)
    except BaseException as exc:
        # A ^C right after a rename, before it was noted: that file is in place all the same.
        if renaming and renaming[0] not in written and _is_file(*renaming):
            written.append(renaming[0])
        if not force:  # each was created by this call (link() is exclusive): take them back
            for final in written:
                final.unlink(missing_ok=True)
            written = []
        for record in _records:
            record[:] = [f for f in record if f not in targets] + written
        # With force the old files are gone either way: the replacements stay, named.
        exc.written = written  # type: ignore[attr-defined]  # read by the CLI's ^C line
        if isinstance(exc, (FileExistsError, atomic.AlreadyExistsError)):
            raise error(f"{current} already exists; not overwriting it{hint}") from None
        if isinstance(exc, atomic.WriteError):
            raise error(str(exc)) from None
        if isinstance(exc, OSError):
            raise error(f"cannot write {current}: {exc.strerror or exc}") from None
        raise
    finally:
        for tmp in staged:
            tmp.unlink(missing_ok=True)
    return written


def _is_file(final: Path, identity: tuple[int, int]) -> bool:
    """Whether final is the staged file of that (st_dev, st_ino): renamed or linked there."""
    try:
        st = os.stat(final)
    except OSError:  # missing: not published
        return False
    return (st.st_dev, st.st_ino) == identity
