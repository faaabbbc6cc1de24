"""A ^C that cannot be lost. Python discards an exception raised where it cannot propagate
(a weakref callback, __del__, a finalizer: it prints "Exception ignored in" and goes on), so
a KeyboardInterrupt raised there would let a run finish as if no ^C had come. While the CLI
runs a command, SIGINT is also recorded here; check() raises it again at a safe point."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from multiprocessing import resource_tracker

_seen = threading.Event()


def _on_sigint(signum, frame) -> None:
    _seen.set()  # first: the KeyboardInterrupt below may be raised where it is discarded
    raise KeyboardInterrupt


def _unraisable(previous):
    def hook(unraisable) -> None:
        # A recorded ^C is raised again by check(); its discarded copy is not news to print.
        if issubclass(unraisable.exc_type, KeyboardInterrupt) and _seen.is_set():
            return
        previous(unraisable)

    return hook


@contextlib.contextmanager
def recorded() -> Iterator[None]:
    """Record every ^C while inside (the CLI's commands). Does nothing outside the main
    thread (only it may set a signal handler) or where SIGINT is not Python's default
    handler (ignored, as in a background job, or someone else's handler)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    _seen.clear()
    hook = sys.unraisablehook
    signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _unraisable(hook)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = hook
        _seen.clear()  # library use after the command is not interrupted by it


def is_interrupt(exc: BaseException) -> bool:
    """A ^C, however it surfaced: a ^C while DuckDB runs a query in this process's main thread
    is turned by DuckDB's Python client into RuntimeError("Query interrupted"), not
    KeyboardInterrupt (DuckDB 1.x-2.x)."""
    return isinstance(exc, KeyboardInterrupt) or (
        type(exc) is RuntimeError and str(exc) == "Query interrupted"
    )


def check() -> None:
    """Raise KeyboardInterrupt if a ^C was recorded: one raised where it was discarded is
    raised again here. Never raises outside recorded() (library use)."""
    if _seen.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold back a ^C until the block ends, then raise it as it would have been: for spawning
    processes, which must be where the caller can stop them before a ^C surfaces.

    SIGINT is blocked in this thread, and the mask is inherited across fork and exec, so a
    child started here stays deaf to ^C while it imports (it calls child_ignores_sigint()).
    Blocking alone is not enough in this process: another thread may take the signal, and
    Python then raises it in the main thread at once; so the handler only records it here.
    """
    # The first spawn of a process starts multiprocessing's resource tracker, and starting
    # it unblocks SIGINT in this thread (Python 3.11-3.13): start it before blocking.
    resource_tracker.ensure_running()
    seen: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    takes_over = callable(previous) and threading.current_thread() is threading.main_thread()
    if takes_over:
        signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        try:
            if takes_over:
                signal.signal(signal.SIGINT, previous)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # a pending ^C: previous's
        if seen:
            previous(signal.SIGINT, None)  # type: ignore[operator]


def child_ignores_sigint() -> None:
    """In a child spawned under deferred(): ^C is the parent's to handle. A ^C pending since
    the spawn is discarded on unblocking."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
