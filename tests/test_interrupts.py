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
