"""Dask's own log lines go to a file, never to the user's terminal.

Where: a private directory (mode 0700, a name nobody can guess, made fresh so nothing can
be planted in it) inside the command's output directory (a run's: beside its run file),
removed when nothing was logged or the command succeeded; kept when something was logged
and the command failed, and then named in its last line (`kept()`, read by the CLI).

The coordinator (scheduler and nannies of a local cluster run in its process) attaches a
file handler to the `distributed` loggers for the engine's lifetime; worker processes
inherit the file's path through the environment and send their stdout and stderr (log
lines, warnings, a dying worker's traceback) to the same file from their preload. Error
lines that concern the workers name the file.

A process killed outright (kill -9) removes nothing: its directory holds `owner.json`
(pid, host and start time of the process that made it) for as long as that process may still
use it, and the next command on the directory (`sweep`: run, bench, a cluster client) removes
a directory whose owner is gone, naming it. A kept log (the command failed and named it) has
no owner: it is the user's to read, never swept.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from wisconsin import WisconsinError, atomic
from wisconsin.jsonfields import utc_now

ENV = "WISCONSIN_DASK_LOG"
LOGGERS = ("distributed", "dask", "tornado", "asyncio")


LOG_DIR_PREFIX = ".wisconsin-logs-"

_kept: list[Path] = []  # log files this process kept: the CLI names them if the command fails


def forget() -> None:
    """A new command starts (the CLI, once per command): earlier commands' logs are theirs."""
    _kept.clear()


def kept() -> list[Path]:
    """Log files kept so far (not discarded) by this process's commands, that still exist."""
    return [p for p in _kept if p.exists()]


OWNER = "owner.json"  # in a log directory: the process using it (see sweep)


def private_dir(parent: str | os.PathLike | None) -> tuple[Path, list[Path]]:
    """A new directory only this user can enter, inside parent (None: $TMPDIR), owned by
    this process (claim); and the directories made for it above it, innermost first."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    made = []
    if parent is not None:
        made = [d for d in (Path(parent), *Path(parent).parents) if not d.exists()]
        Path(parent).mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix=f"{LOG_DIR_PREFIX}{stamp}-", dir=parent))
    claim(d)
    return d, made


def _remove_made(made: list[Path]) -> None:
    """Remove the directories made for a log directory, innermost first, while empty: a
    command refused at once (a bad --cluster address) leaves no data directory."""
    for d in made:
        try:
            d.rmdir()
        except OSError:
            break


def _process_started(pid: int) -> float | None:
    """The start time of process pid (seconds since the epoch), None if there is none."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None  # dead, not yet reaped by its parent
        return proc.create_time()
    except psutil.NoSuchProcess:
        return None


def _program() -> str:
    name = Path(sys.argv[0]).name
    return "wisconsin" if name == "__main__.py" else name  # python -m wisconsin


def claim(d: Path) -> None:
    """Record in d that this process uses it: a sweep leaves d alone while it runs. Without
    the record (a full disk) d is never swept, only left over."""
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "process_started": _process_started(os.getpid()),
        "command": " ".join([_program(), *sys.argv[1:]])[:500],
        "created_utc": utc_now(),
    }
    with contextlib.suppress(WisconsinError):
        atomic.write_text(d / OWNER, json.dumps(me) + "\n")


def release(d: Path) -> None:
    """d is kept for the user to read (or about to be removed): no sweep may take it."""
    with contextlib.suppress(OSError):
        (d / OWNER).unlink(missing_ok=True)


def _stale_owner(d: Path) -> dict | None:
    """The owner recorded in log directory d if it provably no longer runs: same host, and
    no process of that pid, or one started at another time (the pid was reused)."""
    try:
        owner = atomic.read_json(d / OWNER, "log directory owner", object_only=True)
    except WisconsinError:
        return None  # none: a kept log, one being made, or an older version's
    pid, host, started = owner.get("pid"), owner.get("host"), owner.get("process_started")
    if type(pid) is not int or pid <= 0 or host != socket.gethostname():
        return None  # another host's process cannot be looked up from here
    if not isinstance(started, int | float) or isinstance(started, bool):
        return None
    now = _process_started(pid)
    return owner if now is None or abs(now - started) > 1.0 else None


def sweep(directory: str | os.PathLike) -> list[str]:
    """Remove the log directories in `directory` whose owner was killed before it could
    remove them; one line naming each removed. A directory of a command still running, a
    kept log, or one whose owner cannot be proven gone is left as it is."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    lines = []
    for e in entries:
        if not (e.name.startswith(LOG_DIR_PREFIX) and e.is_dir(follow_symlinks=False)):
            continue
        owner = _stale_owner(Path(e.path))
        if owner is None:
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        if not os.path.lexists(e.path):
            lines.append(
                f"removed {e.path}: the logs of `{str(owner.get('command'))[:200]}` "
                f"(pid {owner['pid']}, made {owner.get('created_utc')}), which ended "
                "without removing them"
            )
    return lines


def say_swept(directory: str | os.PathLike) -> None:
    """sweep(directory), each line on stderr: the first thing a command on it does."""
    for line in sweep(directory):
        print(line, file=sys.stderr)


class DaskLogs:
    """Capture the coordinator's Dask logging into `path` between start() and stop()."""

    def __init__(self, path: str | os.PathLike | None = None, directory=None):
        """path: the log file itself (tests); else dask.log in a private directory made
        inside `directory` (the command's output directory) when logging starts."""
        self._given = Path(path) if path else None
        self._directory = directory
        self.path = self._given or Path(os.devnull)
        self._saved: list[tuple[logging.Logger, list[logging.Handler], bool]] = []
        self._handler: logging.Handler | None = None
        self._env: str | None = None
        self._named = False  # an error line named the file: keep it, even if empty
        self._made: list[Path] = []  # directories made above the private one

    @property
    def scratch(self) -> Path:
        """Where local Dask workers keep their scratch space: inside the private directory
        (not $TMPDIR/dask-scratch-space), removed with it."""
        return self.path.parent / "scratch"

    def start(self) -> None:
        if self._handler is not None:
            return
        if self._given is None and not (
            self.path.name == "dask.log" and self.path.parent.is_dir()
        ):  # a restart (a new block's workers) keeps writing to the directory it kept
            private, self._made = private_dir(self._directory)
            self.path = private / "dask.log"
        elif self._given is None:
            claim(self.path.parent)  # in use again
        self._handler = logging.FileHandler(self.path, delay=True)
        self._handler.setFormatter(
            logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
        )
        for name in LOGGERS:
            log = logging.getLogger(name)
            self._saved.append((log, list(log.handlers), log.propagate))
            for h in list(log.handlers):
                log.removeHandler(h)
            log.addHandler(self._handler)
            log.propagate = False
        self._env = os.environ.get(ENV)
        os.environ[ENV] = str(self.path)  # spawned worker processes inherit it

    def stop(self) -> None:
        if self._handler is None:
            return
        for log, handlers, propagate in self._saved:
            log.removeHandler(self._handler)
            for h in handlers:
                log.addHandler(h)
            log.propagate = propagate
        self._saved = []
        self._handler.close()
        self._handler = None
        if self._env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self._env
        if self._given is None:
            # the local workers' scratch space (Dask's worker directories), closed by now
            shutil.rmtree(self.scratch, ignore_errors=True)
            # A scheduler still closing (after a ^C) would report, at exit and over the
            # user's last line, that it could not remove what was just removed here.
            logging.getLogger("distributed.diskutils").setLevel(logging.CRITICAL)
        try:
            empty = not self.path.exists() or self.path.stat().st_size == 0
            if empty and not self._named:
                self.path.unlink(missing_ok=True)  # nothing was logged: leave nothing behind
                if self._given is None:
                    release(self.path.parent)
                    self.path.parent.rmdir()
                    _remove_made(self._made)
            elif self._given is None:
                release(self.path.parent)  # kept for the user: never swept
                if self.path not in _kept:
                    _kept.append(self.path)
        except OSError:
            pass

    def discard(self) -> None:
        """The command succeeded: remove its private log directory, whatever it holds
        (call after stop()). A log given by path (tests) is left alone."""
        if self._given is None and self._handler is None and self.path.name == "dask.log":
            shutil.rmtree(self.path.parent, ignore_errors=True)
            _remove_made(self._made)
            with contextlib.suppress(ValueError):
                _kept.remove(self.path)

    @contextlib.contextmanager
    def children_output(self):
        """Point this process's stdout and stderr at the log file for the block, so that
        processes spawned meanwhile start with them there: a worker interrupted by ^C while
        still importing (before its preload redirects) prints its traceback into the file,
        not over the user's terminal. What this process prints meanwhile goes there too."""
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        saved = (os.dup(1), os.dup(2))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for f in (fd, *saved):
                os.close(f)

    def where(self) -> str:
        self._named = True
        self.path.touch()
        return f"Dask logs: {self.path}"


@contextlib.contextmanager
def captured(directory: str | os.PathLike) -> Iterator[DaskLogs]:
    """Dask's logging into a private directory inside `directory` for the block (a command
    that is only a client of a cluster: generate, info, repair --cluster); discarded when
    the block succeeds, kept (and named by the CLI) when it raises."""
    say_swept(directory)
    logs = DaskLogs(directory=directory)
    logs.start()
    try:
        yield logs
    finally:
        logs.stop()
    logs.discard()


def redirect_worker_output() -> None:
    """In a worker process started by a capturing coordinator: stdout and stderr (and so
    every log handler writing to them) go to the coordinator's log file."""
    path = os.environ.get(ENV)
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
