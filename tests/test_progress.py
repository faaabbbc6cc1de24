"""The progress display: one live bar on a terminal, replaced in place and gone at the end;
piped, a line per phase and at most one every LOG_EVERY_S seconds, with the time left. The
time left is a Job's (wisconsin.measure.progress): from the steps' measured times; a bench
records what it said at half the job."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import time

import pyte
import pytest

from harness.exits import completed
from wisconsin.builds import build_tables
from wisconsin.cli import options
from wisconsin.measure.progress import Job
from wisconsin.runfiles.runfile import estimate_text
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


def _loop(reps, cache, budget, done_rounds, block_rounds=1):
    from types import SimpleNamespace

    from wisconsin.measure.execution import Loop

    opts = SimpleNamespace(reps=reps, cache=cache, time_budget_s=budget)
    state = SimpleNamespace(
        rounds=[{"index": i} for i in range(1, done_rounds + 1)],
        done_in_round=lambda i: {"a"},
        base={"config": {"block_rounds": block_rounds}},
    )
    return Loop(state, {}, [SimpleNamespace(label="a")], opts, 0, None, elapsed_before=10.0)


def test_the_rounds_expected_are_the_minimum_then_a_block_at_a_time(monkeypatch):
    """The progress total was the most rounds the stop rule allows: piped, a bench's
    percentage stopped at 52%. The rounds expected are --min-reps, and once the rule asked
    for more, to the end of the next block; with a time budget, no more than the time left
    holds at the last round's pace; never more than --max-reps."""
    loop = _loop((3, 40), "warm", 100.0, 2)
    assert loop.expected_rounds() == 3  # no round timed yet: the least the rule allows
    assert loop.expected_total() == 3
    assert _loop((3, 40), "warm", None, 3).expected_rounds() == 4  # the rule asked for more
    assert _loop((4, 40), "warm", None, 4, block_rounds=2).expected_rounds() == 6  # a block
    assert _loop((4, 40), "warm", None, 5, block_rounds=2).expected_rounds() == 6  # its end
    assert _loop((3, 3), "warm", None, 3).expected_rounds() == 3  # never past --max-reps
    assert _loop((3, 4), "cold", None, 0).expected_total() == 3 + 1  # and the warm-up round
    loop = _loop((10, 40), "warm", 100.0, 2)
    monkeypatch.setattr("time.perf_counter", lambda: 30.0)
    loop._started, loop._round_s = 0.0, 20.0  # 40 s used (10 before): 60 s hold 3 more
    assert loop.expected_rounds() == 2 + 3
    loop._round_s = 100.0  # none fits: the round under way
    assert loop.expected_rounds() == 3


def test_the_most_rounds_are_max_reps_within_the_budget(monkeypatch):
    """The laptop preset's estimate at half its job said ~26 s left and it took 652 s more:
    the stop rule asked for rounds 16-30. The most it may yet ask for is --max-reps, no
    more than the time budget holds at the last round's pace."""
    assert _loop((15, 30), "warm", None, 3).expected_rounds(most=True) == 30
    assert _loop((15, 30), "warm", None, 3).expected_rounds() == 15
    loop = _loop((10, 40), "warm", 100.0, 2)
    monkeypatch.setattr("time.perf_counter", lambda: 30.0)
    loop._started, loop._round_s = 0.0, 20.0  # 60 s left hold 3 more rounds
    assert loop.expected_rounds(most=True) == 2 + 3


def test_the_time_left_says_the_most_it_may_take_when_well_above():
    """A job planned with more units that may begin says both; the display names the most
    only when it is well above the expected (else the line would always carry it)."""
    clock, shown = Clock(), []

    def display(label, done, total, job=None, left_s=None, most_s=None):
        shown.append((left_s, most_s))

    display.estimates = True
    job = Job(display, clock=clock)
    job.plan("step", 10, each_s=2.0, most=30)
    job.start("step", "one")
    assert shown[-1] == (20.0, 60.0)  # 9 planned + the current one's 2 s; 29 more at most
    clock.t = 2.0
    job.start("step", "two")  # 8 planned after this one, 28 at most
    assert shown[-1] == (18.0, 58.0)
    job.plan("step", 0)  # the rule said stop: nothing more may begin
    assert job.left_s(most=True) == job.left_s() == 2.0
    assert options.left_text(16.0, 56.0) == "~16 s left (up to ~56 s if the intervals stay wide)"
    assert options.left_text(100.0, 154.0) == "~1.7 min left"  # not well above: not said
    assert options.left_text(100.0, 156.0) == (
        "~1.7 min left (up to ~2.6 min if the intervals stay wide)"
    )
    assert options.left_text(10.0, None) == "~10 s left"


def test_the_time_left_is_each_kinds_measured_step_time():
    clock, shown = Clock(), []

    def display(label, done, total, job=None, left_s=None, most_s=None):
        shown.append((label, job, left_s))

    display.estimates = True
    job = Job(display, clock=clock)
    job.plan("setup", 1)  # no guess: nothing can be told yet
    job.plan("step", 10, like="warm-up")
    job.plan("warm-up", 2, each_s=3.0)
    assert job.left_s() is None
    job.start("setup", "starting")
    assert shown[-1] == ("starting", None, None)
    clock.t = 4.0
    job.start("warm-up", "warm-up 1")  # setup measured; warm-ups at their guess
    assert job.left_s() == 3.0 + 3.0 + 10 * 3.0
    clock.t = 6.0  # a warm-up step takes 2 s: the steps stand in for them until measured
    job.start("warm-up", "warm-up 2")
    assert job.left_s() == 2.0 + 10 * 2.0
    clock.t = 7.0
    assert job.left_s() == 1.0 + 10 * 2.0  # the step under way counts down
    job.start("step", "step 1")
    clock.t = 11.0  # a step takes 4 s
    job.start("step", "step 2")
    assert job.left_s() == 4.0 + 8 * 4.0
    assert shown[-1] == ("step 2", 11 / (11 + 36), 36.0)
    job.plan("step", 8 + 5)  # more rounds than planned: 5 more steps
    assert job.left_s() == 4.0 + 13 * 4.0


def test_a_counted_step_tells_its_time_left_at_its_own_rate():
    clock = Clock()
    job = Job(None, clock=clock)
    job.plan("build", 1000, each_s=0.01)
    job.plan("step", 2, each_s=1.0)
    job.count("build", "F2", 0, 1000)
    assert job.left_s() == 10.0 + 2.0  # the guess, until a second of it has passed
    clock.t = 2.0
    job.count("build", "F2", 500, 1000)  # 4 ms a row: 2 s more
    assert job.left_s() == 2.0 + 2.0
    job.start("step", "step 1")
    assert job.kinds["build"].seconds == 2.0 and job.kinds["build"].done == 1000


def test_the_record_is_the_estimate_said_at_half_the_job():
    clock = Clock()
    job = Job(None, clock=clock)
    job.plan("step", 4, each_s=10.0)
    for i in range(4):  # the guess was 10 s a step; they take 20, 20, 30, 30
        clock.t = (0, 20, 40, 70)[i]
        job.start("step", f"step {i + 1}")
    clock.t = 100.0
    job.end("done")
    e = job.record()
    # at 40 s (of 100) it said: step 3 of 20 s (the mean so far) and one more: 40 s left
    assert (e.job_s, e.at_s, e.left_s, e.measured_steps) == (100.0, 40.0, 40.0, 2)
    assert e.error == pytest.approx(80 / 100 - 1)
    assert estimate_text(e) == (
        "at half the job (40 s) it said ~40 s left, 80 s in all; the job took 100 s: -20% off "
        "(from 2 measured steps)"
    )
    assert estimate_text(None) == "not recorded"
    assert Job(None, clock=Clock()).record() is None  # nothing said: nothing recorded


def test_a_plain_progress_callback_is_given_three_arguments():
    seen = []
    job = Job(lambda label, done, total: seen.append((label, done, total)))
    job.start("step", "F2/scan", done=3, total=10)
    assert seen == [("F2/scan", 3, 10)]


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
    assert lines[1].endswith("(5%), ~1.6 min left")  # 95 s: 5 s for each 5%
    assert lines[-1].endswith("build: F2: 1,000/1,000 (100%)")
    update("round 1: F2/scan", 10, 40, job=0.25, left_s=30.0)  # a new phase, the job's time
    assert (
        out.getvalue()
        .splitlines()[-1]
        .endswith("round 1: F2/scan: 10/40 (25%); job 25%, ~30 s left")
    )
    clock.t = 200.0
    update("P=1: starting the partition servers", 0, 0, job=0.5, left_s=None)
    assert out.getvalue().splitlines()[-1].endswith("P=1: starting the partition servers; job 50%")


def _screen(cmd: list[str]) -> tuple[int, list[str], bytes]:
    """Run cmd on a pseudo-terminal (80 x 24); every line the terminal showed at its end,
    those scrolled off the top included; and the raw bytes it wrote."""
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
    screen = pyte.HistoryScreen(80, 24, history=100_000)
    pyte.ByteStream(screen).feed(raw)
    scrolled = ["".join(line[x].data for x in range(80)) for line in screen.history.top]
    shown = [line.rstrip() for line in [*scrolled, *screen.display] if line.strip()]
    return proc.wait(), shown, raw


def _wisconsin(*args: str) -> list[str]:
    return [sys.executable, "-m", "wisconsin", *args]


def _run_command(tmp_path) -> list[str]:
    build_tables(tmp_path / "d", [TableSpec("F", 4000, p, 7) for p in (1, 2)], jobs=1)
    return _wisconsin(
        "run", "--data", str(tmp_path / "d"), "--mode", "shared-memory", "--queries",
        "average,scan", "--repeat", "3", "--out", str(tmp_path / "runs"),
    )  # fmt: skip


def _bench_wisconsin(tmp_path) -> list[str]:
    return _wisconsin(
        "bench", "--preset", "tiny", "--partitions", "1", "--repeat", "2", "--mode",
        "shared-memory", "--cache", "warm", "--data", str(tmp_path / "d"), "--out",
        str(tmp_path / "runs"),
    )  # fmt: skip


def _bench_debitcredit(tmp_path) -> list[str]:
    return _wisconsin(
        "bench", "--workload", "debitcredit", "--partitions", "1", "--repeat", "1",
        "--step-seconds", "0.5", "--branches", "1", "--data", str(tmp_path / "d"), "--out",
        str(tmp_path / "runs"),
    )  # fmt: skip


COMMANDS = {"run": _run_command, "bench": _bench_wisconsin, "debitcredit": _bench_debitcredit}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_job_on_a_terminal_ends_with_at_most_two_progress_lines(tmp_path, command):
    """One live bar replaced in place: none left stacked, even scrolled off the screen; it
    said the time left while the job ran."""
    code, shown, raw = _screen(COMMANDS[command](tmp_path))
    # 1: the run's audit failed (a loaded machine); its files are kept all the same
    assert code == 0 or (code == 1 and any(ln.startswith("audit: fail (") for ln in shown)), shown
    progress = [line for line in shown if "━" in line or re.search(r"\d+%.*left", line)]
    assert len(progress) <= 2, progress
    assert any(line.startswith("run file: ") for line in shown), shown
    assert b" s left" in raw or b" min left" in raw


@pytest.mark.slow
@pytest.mark.parametrize("command", ["bench", "debitcredit"])
def test_a_piped_bench_says_the_job_at_most_every_few_seconds_and_records_its_estimate(
    tmp_path, command
):
    t0 = time.monotonic()
    done = subprocess.run(COMMANDS[command](tmp_path), capture_output=True, text=True)
    wall = time.monotonic() - t0
    assert completed(done), done.stderr
    lines = [line for line in done.stderr.splitlines() if re.match(r"\[\d\d:\d\d:\d\d\] ", line)]
    job = [line for line in lines if re.search(r"; job \d+%", line)]
    assert job and any(line.endswith(" left") for line in job), lines
    # one a phase's start and end, else at most one every LOG_EVERY_S
    assert len(lines) <= wall / options.LOG_EVERY_S + 8, lines
    (said,) = [line for line in done.stdout.splitlines() if line.startswith("estimate: ")]
    assert said.startswith("estimate: at half the job ("), said
    (run_path,) = [p for p in (tmp_path / "runs").glob("*.json") if "report" not in p.name]
    raw = json.loads(run_path.read_text())["estimate"]
    assert 0 < raw["at_s"] <= raw["job_s"] / 2 and raw["left_s"] >= 0
    assert raw["error"] == pytest.approx((raw["at_s"] + raw["left_s"]) / raw["job_s"] - 1)


def test_an_old_run_file_loads_with_its_estimate_not_recorded(request):
    from wisconsin.runfiles import runfile
    from wisconsin.workloads.debitcredit import runfile as dc_runfile

    root = request.config.rootpath / "tests/fixtures"
    for path in ("run_a.json", "run_v2.json", "mainline/wisconsin-run.json"):
        run = runfile.load(root / path)
        assert run.schema_version == 4 and estimate_text(run.estimate) == "not recorded"
    for path in ("debitcredit_run.json", "mainline/debitcredit-run.json"):
        run = dc_runfile.load(root / path)
        assert (
            run.schema_version == dc_runfile.SCHEMA_VERSION
            and estimate_text(run.estimate) == "not recorded"
        )
