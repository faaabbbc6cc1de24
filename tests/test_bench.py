from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from wisconsin import WisconsinError
from wisconsin.cli import cli
from wisconsin.workloads.wisconsin.pipeline import plan_sizes


def _probe(dispatch_s, cold=1.5e6):
    return SimpleNamespace(
        cores=2,
        rows=200_000,
        table_bytes=93_000_000,  # ~465 bytes a row, both tables
        scan_rows_per_s=1e7,
        cold_scan_rows_per_s=cold,
        dispatch_s=dispatch_s,
    )


def test_sizes_make_the_scans_long_enough_when_the_budgets_allow():
    plan = plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=780)
    assert plan.partitions == (1, 2, 4, 8, 16)
    assert plan.f_rows == 2 * plan.g_rows  # F at P = cores holds what G holds per partition
    assert plan.min_scan_s >= 2 * plan.bound_s  # the safety factor is met
    assert plan.disk_bytes <= 10 * 2**30 and plan.predicted_s <= 780
    assert not any("do not allow" in n for n in plan.notes)


def test_budgets_that_cannot_fit_say_so_and_stay_within_them():
    plan = plan_sizes(_probe(0.085), disk_budget=2 * 2**30, time_budget_s=300)
    assert plan.disk_bytes <= 2 * 2**30 and plan.predicted_s <= 300
    assert plan.min_scan_s < plan.bound_s
    assert any("do not allow tables long enough" in n for n in plan.notes)
    assert any(n.startswith("average") for n in plan.notes)


def test_bigger_budgets_give_bigger_tables():
    small = plan_sizes(_probe(0.02), disk_budget=2 * 2**30, time_budget_s=3000)
    big = plan_sizes(_probe(0.02), disk_budget=8 * 2**30, time_budget_s=3000)
    assert big.g_rows > 3 * small.g_rows


def test_resume_takes_its_options_from_the_file(tmp_path):
    r = CliRunner().invoke(cli, ["run", "--resume", str(tmp_path / "x.json"), "--cache", "warm"])
    assert r.exit_code == 2 and "--resume takes its options from the run file" in r.output
    r = CliRunner().invoke(cli, ["run", "--resume", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "no such run file" in r.output


def test_a_disk_budget_too_small_for_the_smallest_tables_is_refused_before_the_probe(tmp_path):
    r = CliRunner().invoke(
        cli,
        ["bench", "--disk-budget", "1KB", "--data", str(tmp_path / "d"), "--out", str(tmp_path)],
    )
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    (line,) = [x for x in r.output.splitlines() if x.strip()]
    assert line.startswith("Error: --disk-budget 1.0 KB is too small") and "--preset" in line
    assert not (tmp_path / "d").exists()  # not even the calibration probe's table


def test_plan_sizes_refuses_a_disk_budget_no_tables_fit():
    with pytest.raises(WisconsinError, match="--disk-budget .* is too small"):
        plan_sizes(_probe(0.002), disk_budget=1024, time_budget_s=780)
