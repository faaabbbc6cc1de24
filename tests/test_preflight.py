"""The noise preflight: what it finds, each threshold just past, and the run file and the
report carrying it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from wisconsin.measure import preflight
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import Preflight

QUIET = Preflight((), 0.0, 0.1, 0, None, ())


@pytest.mark.parametrize(
    "change, found",
    [
        ({}, None),
        ({"governors": ("performance",)}, None),
        ({"governors": ("powersave",)}, "CPU frequency governor powersave"),
        ({"busy_cores": 0.49}, None),
        ({"busy_cores": 0.5}, "other load: 0.5 of 2 cores busy"),
        ({"swap_used_bytes": 1}, "swap in use"),
        ({"cpu_quota": 2.0}, None),
        ({"cpu_quota": 1.5}, "cgroup CPU quota of 1.5 cores, below the 2 usable"),
    ],
)
def test_findings(change, found):
    out = preflight.findings(dataclasses.replace(QUIET, **change), usable=2)
    assert (out == ()) if found is None else (len(out) == 1 and out[0].startswith(found))


def test_cgroup_quota_is_read_in_cores(tmp_path):
    path = tmp_path / "cpu.max"
    path.write_text("max 100000\n")
    assert preflight.cpu_quota(str(path)) is None
    path.write_text("150000 100000\n")
    assert preflight.cpu_quota(str(path)) == 1.5
    assert preflight.cpu_quota(str(tmp_path / "missing")) is None


def test_the_run_file_keeps_it_and_the_report_names_it(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
    from make_fixture_runs import make_run

    from wisconsin.workloads.wisconsin.report import report_files

    run = make_run(reps=3)
    noisy = dataclasses.replace(QUIET, busy_cores=1.2, findings=("other load: 1.2 of 2 cores",))
    run = dataclasses.replace(
        run, environment=dataclasses.replace(run.environment, preflight=noisy)
    )
    path = runfile.save(run, tmp_path / "r.json")
    assert runfile.load(path).environment.preflight == noisy
    assert "noise before the run: other load: 1.2 of 2 cores" in report_files([path], "text")
    assert "Noise:        other load: 1.2 of 2 cores" in report_files([path], "text", full=True)


def test_a_check_on_this_machine_returns_its_figures():
    p = preflight.check(usable=2)
    assert p.busy_cores >= 0 and p.load_1m >= 0
