"""Start a child as a terminal's foreground job would be started."""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """preexec_fn: SIGINT at its default disposition in the child. A shell without job
    control starts background commands (`.ci/run &`) with SIGINT ignored, and children
    inherit that, so a ^C test would otherwise see its SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c_once_written(monkeypatch, directory, pattern: str) -> None:
    """Make interrupts.check raise KeyboardInterrupt (a ^C) from the first call after a file
    matching pattern exists in directory: a ^C that lands once a run file is saved."""
    from wisconsin import interrupts

    real = interrupts.check

    def check() -> None:
        real()
        if list(directory.glob(pattern)):
            raise KeyboardInterrupt

    monkeypatch.setattr(interrupts, "check", check)
