"""`wisconsin history`: a figure across runs in date order, a change between neighbours
flagged only where compare's own test finds one, unlike machines kept apart."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import in_blocks, run_from_times  # noqa: E402

from wisconsin.cli import cli  # noqa: E402
from wisconsin.runfiles.runfile import save  # noqa: E402
from wisconsin.workloads.wisconsin.history import history  # noqa: E402


def _run(rng, i: int, commit: str, slow: float = 1.0, host: str | None = None):
    """Scan and update at P = 2, 4 in 10 blocks, each block shifted by a 3% run-to-run
    effect; every time `slow` times longer."""
    effects = np.exp(rng.normal(0, 0.03, 10))
    times = {
        ("F", p, q): [float(base / p * slow * e * np.exp(rng.normal(0, 0.01))) for e in effects]
        for p in (2, 4)
        for q, base in (("scan", 1.0), ("update", 0.2))
    }
    run = in_blocks(run_from_times(times))
    env = dataclasses.replace(run.environment, git_commit=commit * 40)
    if host:
        env = dataclasses.replace(env, hostname=host)
    return dataclasses.replace(run, started_utc=f"2026-11-2{i}T00:00:00Z", environment=env)


def test_a_25_percent_slowdown_is_flagged_and_identical_runs_are_not(tmp_path):
    """Six runs of two commits: the fourth (the second commit) is 25% slower and stays so.
    Only the step from the third to the fourth is flagged; the runs are given out of date
    order and as a directory."""
    rng = np.random.default_rng(43)
    for i in (5, 0, 3, 1, 4, 2):  # written out of order: history orders by date
        slow = 1.25 if i >= 3 else 1.0
        save(_run(rng, i, "a" if i < 3 else "b", slow), tmp_path / f"r{i}.json")
    (series,) = history([tmp_path])
    verdicts = [e.verdict for e in series.entries]
    assert verdicts == ["", "cannot tell apart", "cannot tell apart", "B slower",
                        "cannot tell apart", "cannot tell apart"]  # fmt: skip
    flagged = series.entries[3].changes
    assert {c.what for c in flagged} >= {"F2 scan", "F4 scan", "F2 update", "F4 update"}
    assert all(1.15 < c.ratio < 1.35 for c in flagged)
    assert [e.commit for e in series.entries] == ["a" * 12] * 3 + ["b" * 12] * 3
    text = CliRunner().invoke(cli, ["history", str(tmp_path)]).output
    assert "r3.json  vs the run before: B slower: " in text
    assert text.count("vs the run before: cannot tell apart") == 4
    data = json.loads(
        CliRunner().invoke(cli, ["history", str(tmp_path), "--format", "json"]).output
    )
    assert [len(e["changes"]) for e in data[0]["entries"]] == [0, 0, 0, len(flagged), 0, 0]


def test_runs_of_another_machine_are_a_series_of_their_own(tmp_path):
    rng = np.random.default_rng(5)
    paths = []
    for i, host in enumerate(("laptop", "laptop", "cluster")):
        paths.append(tmp_path / f"r{i}.json")
        save(_run(rng, i, "c", 1.0 if host == "laptop" else 0.5, host), paths[-1])
    series = history(paths)
    assert [(s.machine.split(",")[0], len(s.entries)) for s in series] == [("laptop", 2),
                                                                            ("cluster", 1)]  # fmt: skip
    text = CliRunner().invoke(cli, ["history", *map(str, paths)]).output
    assert text.startswith("2 series: runs of different machines or configurations are not")
