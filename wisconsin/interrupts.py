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
