"""The progress display: one live bar on a terminal, replaced in place and gone at the end;
piped, a line per phase and at most one every LOG_EVERY_S seconds, with the time left."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

import pyte
import pytest

from wisconsin.builds import build_tables
from wisconsin.cli import options
from wisconsin.store import TableSpec


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_time_left_is_told_from_the_phase_so_far():
    phase, clock = options._Phase(), Clock()
    phase.clock = clock
    assert phase.update(0, 100) is True
    clock.t = 0.5
    assert phase.update(10, 100) is False
    assert phase.remaining() == ""  # under a second: not yet told
    clock.t = 10.0
    phase.update(50, 100)
    assert phase.remaining() == "~10 s left"
    clock.t = 40.0
    assert phase.update(40, 400) is True  # another total: a new phase, counted from here
    clock.t = 41.0
    assert phase.remaining() == ""  # nothing done in it yet
    phase.update(80, 400)
    clock.t = 50.0
    assert phase.remaining() == "~80 s left"  # 40 in 10 s, 320 to go at that rate
    assert phase.update(10, 400) is True  # done went back: a new phase


def test_piped_lines_say_each_phase_and_at_most_one_per_interval(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("time.monotonic", clock)
    out = io.StringIO()
    update = options._log_lines(out)
    for i in range(0, 101):  # one update a second for 100 s, one phase
        clock.t = float(i)
        update("build: F2", i * 10, 1000)
    lines = out.getvalue().splitlines()
    # the first, then one every LOG_EVERY_S, and the finished one
    assert len(lines) == 1 + 100 // options.LOG_EVERY_S + (100 % options.LOG_EVERY_S > 0)
    assert lines[0].endswith("build: F2: 0/1,000 (0%)")
    assert lines[1].endswith("(10%), ~1.5 min left")  # 90 s: 10 s for each 10%
    assert lines[-1].endswith("build: F2: 1,000/1,000 (100%)")


def _screen(cmd: list[str]) -> tuple[int, list[str]]:
    """Run cmd on a pseudo-terminal (80 x 24); what a terminal shows at its end."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="80", LINES="24", TERM="xterm")
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        raw += chunk
    os.close(master)
    screen = pyte.Screen(80, 24)
    pyte.ByteStream(screen).feed(raw)
    return proc.wait(), [line.rstrip() for line in screen.display if line.strip()]


@pytest.mark.slow
def test_a_run_on_a_terminal_ends_with_at_most_two_progress_lines(tmp_path):
    build_tables(tmp_path / "d", [TableSpec("F", 4000, p, 7) for p in (1, 2)], jobs=1)
    code, shown = _screen(
        [
            sys.executable,
            "-m",
            "wisconsin",
            "run",
            "--data",
            str(tmp_path / "d"),
            "--mode",
            "shared-memory",
            "--queries",
            "average,scan",
            "--repeat",
            "3",
            "--out",
            str(tmp_path / "runs"),
        ]  # fmt: skip
    )
    assert code == 0, shown
    progress = [line for line in shown if "%" in line or "━" in line]
    assert len(progress) <= 2, shown
    assert any(line.startswith("run file: ") for line in shown), shown
