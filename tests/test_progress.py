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
    assert phase.update(40, 400) is True  # done went back: a new phase, counted from here
    clock.t = 41.0
    assert phase.remaining() == ""  # nothing done in it yet
    phase.update(80, 400)
    clock.t = 50.0
    assert phase.remaining() == "~80 s left"  # 40 in 10 s, 320 to go at that rate
    assert phase.update(10, 400) is True  # done went back: a new phase
    clock.t = 60.0
    assert phase.update(20, 400) is False
    assert phase.update(20, 60) is False  # the total revised (a budget): the same phase
    assert phase.remaining() == "~40 s left"  # 10 in 10 s, 40 to go


def test_the_rounds_expected_shrink_to_what_the_time_budget_holds(monkeypatch):
    """The progress total was the most rounds the stop rule allows: a 13-minute bench said
    '~19 min left'. With a time budget it is the rounds the time left holds at the last
    round's pace, never fewer than --min-reps, never more than --max-reps."""
    from types import SimpleNamespace

    from wisconsin.measure.execution import Loop

    opts = SimpleNamespace(reps=(3, 40), cache="warm", time_budget_s=100.0)
    state = SimpleNamespace(rounds=[{"index": i} for i in (1, 2)], done_in_round=lambda i: {"a"})
    loop = Loop(state, {}, [SimpleNamespace(label="a")], opts, 0, None, elapsed_before=10.0)
    assert loop.expected_total() == 40  # no round timed yet: the most the rule allows
    monkeypatch.setattr("time.perf_counter", lambda: 30.0)
    loop._started, loop._round_s = 0.0, 20.0  # 40 s used (10 before): 60 s hold 3 more
    assert loop.expected_total() == 2 + 3
    loop._round_s = 100.0  # none fits: still --min-reps
    assert loop.expected_total() == 3
    loop.opts = SimpleNamespace(reps=(3, 4), cache="cold", time_budget_s=1000.0)
    loop._round_s = 1.0
    assert loop.expected_total() == 4 + 1  # --max-reps, and the warm-up round of a cold run


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
    assert code == 0 or (code == 1 and any(ln.startswith("audit: fail (") for ln in shown)), shown
    progress = [line for line in shown if "%" in line or "━" in line]
    assert len(progress) <= 2, shown
    assert any(line.startswith("run file: ") for line in shown), shown
