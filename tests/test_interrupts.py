"""A ^C cannot be lost: wisconsin.interrupts records it while the CLI runs a command."""

import signal
import sys
import threading
import weakref

import pytest
from click.testing import CliRunner

from wisconsin import interrupts
from wisconsin.cli import cli


@pytest.fixture
def terminal_sigint():
    """SIGINT at Python's default handler, as in a terminal (CI may start pytest with it
    ignored, which the CLI leaves alone)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ctrl_c_discarded() -> None:
    """What a ^C during a lazy import once did: its KeyboardInterrupt was raised in a weakref
    callback (of importlib's module lock), where Python prints and discards it."""

    class Lock:
        pass

    _ref = weakref.ref(Lock(), lambda _: signal.getsignal(signal.SIGINT)(signal.SIGINT, None))


def test_a_command_that_returns_after_a_discarded_ctrl_c_exits_130(
    terminal_sigint, tmp_path, monkeypatch
):
    r = CliRunner().invoke(
        cli,
        [
            "generate",
            "--kind",
            "F",
            "--rows",
            "100",
            "--partitions",
            "1",
            "--data",
            str(tmp_path),
            "--quiet",
        ],
    )
    assert r.exit_code == 0, r.output
    from wisconsin import store

    real = store.read_manifest

    def read_manifest(*args, **kwargs):
        _ctrl_c_discarded()
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "read_manifest", read_manifest)
    r = CliRunner().invoke(cli, ["info", "--no-verify", str(tmp_path / "F1")])
    assert r.exit_code == 130, r.output
    assert r.output.splitlines()[-1] == "interrupted; nothing was written"
    assert "Traceback" not in r.output and "Exception ignored" not in r.output, r.output


def test_an_error_a_ctrl_c_caused_is_the_ctrl_c(terminal_sigint, tmp_path, monkeypatch):
    """A ^C during an extension's import surfaced as ImportError("initialization failed")
    (matplotlib's ft2font): after a recorded ^C, an error is the interruption, one line."""
    from wisconsin import store

    def read_manifest(*args, **kwargs):
        _ctrl_c_discarded()
        raise ImportError("initialization failed")

    monkeypatch.setattr(store, "read_manifest", read_manifest)
    (tmp_path / "F1").mkdir()
    r = CliRunner().invoke(cli, ["info", "--no-verify", str(tmp_path / "F1")])
    assert r.exit_code == 130, r.output
    assert r.output.splitlines()[-1] == "interrupted; nothing was written"
    assert "Traceback" not in r.output, r.output


def test_an_error_without_a_ctrl_c_is_still_the_error(terminal_sigint, tmp_path, monkeypatch):
    from wisconsin import store

    def read_manifest(*args, **kwargs):
        raise ImportError("initialization failed")

    monkeypatch.setattr(store, "read_manifest", read_manifest)
    (tmp_path / "F1").mkdir()
    r = CliRunner().invoke(cli, ["info", "--no-verify", str(tmp_path / "F1")])
    assert isinstance(r.exception, ImportError), r.output


def test_recorded_restores_the_handler_and_forgets_the_ctrl_c(terminal_sigint):
    hook = sys.unraisablehook
    with pytest.raises(KeyboardInterrupt), interrupts.recorded():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        _ctrl_c_discarded()
        interrupts.check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook
    interrupts.check()  # library use afterwards: nothing recorded


def test_library_use_and_other_threads_are_left_alone(terminal_sigint):
    interrupts.check()  # outside the CLI nothing is recorded: never raises
    seen = []

    def other():
        with interrupts.recorded():
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [signal.default_int_handler]


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's ^C
    try:
        with interrupts.recorded():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


# The script first takes Python's own ^C handler: a test run started in the background of a
# shell inherits SIGINT ignored, which exec keeps, and a plain child would then live on.
_SPAWN_AND_CTRL_C = """
import contextlib, multiprocessing as mp, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from wisconsin import interrupts
if __name__ == "__main__":
    proc = mp.get_context("spawn").Process(target=interrupts.child_ignores_sigint)
    with interrupts.deferred() if sys.argv[1] == "deaf" else contextlib.nullcontext():
        proc.start()
    os.kill(proc.pid, signal.SIGINT)
    proc.join(30)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    print(proc.exitcode)
"""


@pytest.mark.parametrize("deaf", [True, False])
def test_a_child_spawned_deaf_survives_a_ctrl_c_while_it_starts(deaf):
    """^C reaches a spawned child before its first line runs: spawned deaf it lives on and
    ignores it; spawned plainly it dies (with a traceback once Python's handler is in: the
    defect CI saw in a bench's stderr). A fresh interpreter, so that this is its first spawn:
    the one that starts multiprocessing's resource tracker, which unblocked SIGINT."""
    import subprocess

    mode = "deaf" if deaf else "plain"
    r = subprocess.run(
        [sys.executable, "-c", _SPAWN_AND_CTRL_C, mode], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    exitcode = int(r.stdout)
    assert (exitcode == 0) is deaf, exitcode  # plain: 1 (traceback) or -2 (before Python's handler)


def _sigint_blocked_here() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())


@pytest.mark.parametrize("to", ["this thread", "another thread"])
def test_deferred_raises_a_ctrl_c_once_the_block_is_done(terminal_sigint, to):
    """A ^C inside the block, whichever thread the kernel hands it to, surfaces after the
    block's last line, exactly once, with the handler and the mask as they were."""
    import time

    idle = threading.Event()
    other = threading.Thread(target=idle.wait)  # started outside: SIGINT not blocked there
    other.start()
    done = []
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.deferred():
            if to == "this thread":
                signal.raise_signal(signal.SIGINT)  # pending: this thread blocks it
            else:
                signal.pthread_kill(other.ident, signal.SIGINT)
            time.sleep(0.05)
            for _ in range(100_000):  # bytecodes where Python would raise a ^C
                pass
            done.append("last line")
        assert done == ["last line"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert not _sigint_blocked_here()
    finally:
        idle.set()
        other.join()


def test_deferred_without_a_ctrl_c_is_transparent(terminal_sigint):
    with pytest.raises(ValueError), interrupts.deferred():
        assert _sigint_blocked_here()
        raise ValueError
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not _sigint_blocked_here()
