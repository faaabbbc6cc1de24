"""Long-lived processes on named workers, started and watched by Dask.

A worker plugin (registered under a name of the run's own) starts each process on its
worker (a child of the worker: it ends with it), hands it its input on stdin, returns the
first line it writes (where it listens) and later its exit status; the plugin's teardown,
when the run unregisters it or the worker closes, kills whatever is left. What the process
does after its first line goes over its own sockets, not through Dask.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping

from distributed.diagnostics.plugin import WorkerPlugin

from wisconsin.cluster import ClusterError, wait_pinned

FIRST_LINE_TIMEOUT_S = 60.0


class ProcessPlugin(WorkerPlugin):
    """The processes this run started on one worker."""

    def __init__(self):
        self.procs: dict[str, subprocess.Popen] = {}

    def setup(self, worker):
        self.worker = worker

    def start(self, key: str, argv: list[str], stdin: bytes, stderr: str) -> dict:
        os.makedirs(os.path.dirname(stderr), exist_ok=True)
        with open(stderr, "ab") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        self.procs[key] = proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        line = _first_line(proc, FIRST_LINE_TIMEOUT_S)
        return {
            "line": line,
            "pid": proc.pid,
            "host": socket.gethostname(),
            "worker": str(self.worker.name),
            "address": self.worker.address,
            "exit": proc.poll(),
            "stderr": stderr,
        }

    def wait(self, key: str, timeout: float) -> int | None:
        proc = self.procs.get(key)
        if proc is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        return proc.poll()

    def kill(self, key: str) -> None:
        proc = self.procs.get(key)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)

    def teardown(self, worker):
        for key in list(self.procs):
            self.kill(key)


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The process's first stdout line; "" if it ended or said nothing within timeout."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline, buf = time.monotonic() + timeout, b""
    fd = proc.stdout.fileno()
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not sel.select(left):
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    sel.close()
    return buf.split(b"\n", 1)[0].decode(errors="replace") if b"\n" in buf else ""


def _plugin(name: str):
    from distributed import get_worker

    return get_worker().plugins[name]


def task_start(name: str, key: str, argv: list[str], stdin: bytes, stderr: str) -> dict:
    return _plugin(name).start(key, argv, stdin, stderr)


def task_wait(name: str, key: str, timeout: float) -> int | None:
    return _plugin(name).wait(key, timeout)


def task_kill(name: str, key: str) -> None:
    _plugin(name).kill(key)


class WorkerProcesses:
    """The processes one run starts on named workers, as a context manager: leaving it
    unregisters the plugin, which kills any process still running."""

    def __init__(self, client, timeout: float = FIRST_LINE_TIMEOUT_S + 30):
        self.client = client
        self.timeout = timeout
        self.name = f"wisconsin-procs-{uuid.uuid4().hex[:12]}"
        self.owner: dict[str, str] = {}  # key -> worker name

    def __enter__(self) -> WorkerProcesses:
        self.client.register_plugin(ProcessPlugin(), name=self.name)
        return self

    def _on(self, calls: Mapping[str, tuple[str, object, tuple]], timeout: float) -> dict:
        named = {k: (w, fn, (self.name, k, *args)) for k, (w, fn, args) in calls.items()}
        return run_pinned(self.client, named, timeout)

    def start(self, specs: Mapping[str, tuple[str, list[str], bytes, str]]) -> dict[str, dict]:
        """{key: (worker, argv, stdin, stderr path)} -> {key: what task_start returned}."""
        self.owner.update({k: w for k, (w, *_rest) in specs.items()})
        calls = {
            k: (w, task_start, (argv, stdin, err)) for k, (w, argv, stdin, err) in specs.items()
        }
        return self._on(calls, self.timeout)

    def wait(self, keys, timeout: float) -> dict[str, int | None]:
        """Each process's exit status once it ended (None: still running after timeout)."""
        calls = {k: (self.owner[k], task_wait, (timeout,)) for k in keys}
        return self._on(calls, timeout + 30)

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(Exception):
            self.client.unregister_worker_plugin(self.name)


def run_pinned(client, calls: Mapping, timeout: float) -> dict:
    """{key: (worker name, fn, args)} -> {key: fn(*args) run on that worker}, or
    ClusterError in one line naming the first key that failed and its worker."""
    futures = {
        key: client.submit(
            fn, *args, workers=[worker], allow_other_workers=False, pure=False,
            key=f"{getattr(fn, '__name__', 'task')}-{key}-{uuid.uuid4().hex[:8]}",
        )
        for key, (worker, fn, args) in calls.items()
    }  # fmt: skip
    found, failed = wait_pinned(client, futures, {k: c[0] for k, c in calls.items()}, timeout)
    if failed:
        key, exc = next(iter(failed.items()))
        raise ClusterError(f"{key} on worker {calls[key][0]}: {type(exc).__name__}: {exc}")
    return found


def python_argv(module: str) -> list[str]:
    """A Python process running module, with the worker's own interpreter."""
    return [sys.executable, "-m", module]
