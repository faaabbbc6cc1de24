"""The capacity model across P (analysis.capacity): the USL fitted on the smaller P predicts
the largest and states its error; with every P fitted it predicts the next, without one;
`wisconsin report` of OLTP run files at three P or more sets it out."""

from __future__ import annotations

import dataclasses
import random

import pytest
from click.testing import CliRunner

from wisconsin.analysis import capacity
from wisconsin.analysis.capacity import Measured
from wisconsin.analysis.scalability import usl
from wisconsin.cli import cli
from wisconsin.workloads.debitcredit import metrics, report, runfile


def _measured(ps, lam=50.0, sigma=0.05, kappa=0.01, windows=3, noise=0.02, seed=1):
    rng = random.Random(seed)
    return [
        Measured(p, tuple(lam * usl(p, sigma, kappa) * (1 + rng.gauss(0, noise))
                          for _ in range(windows)))
        for p in ps
    ]  # fmt: skip


def test_fit_on_the_smaller_p_predicts_the_largest_with_its_error():
    c = capacity.model(_measured([1, 2, 4, 8]))
    assert c.fitted == (1, 2, 4) and c.points == 9 and not c.note
    lam, sigma, kappa = c.params
    assert lam.lo < 50 < lam.hi and sigma.lo <= 0.05 <= sigma.hi
    p = c.prediction
    truth = 50 * usl(8, 0.05, 0.01)
    assert p.P == 8 and p.low < truth < p.high
    mid, lo, hi = p.error()
    assert mid == pytest.approx(p.measured.middle / p.value - 1)
    assert lo <= mid <= hi and abs(mid) < 0.15
    text = capacity.lines(c, "tps")
    assert (
        text[0].startswith("capacity model (USL") and "fitted on P = 1, 2, 4 (9 windows)" in text[0]
    )
    assert text[1].startswith("P = 8: predicted ") and "; error " in text[1]


def test_a_bend_past_the_fitted_p_is_a_stated_error():
    """Eight partitions on two cores: P = 8 delivers what 4 did. The model, fitted on 1, 2,
    4, does not know it: its error says how far it missed."""
    pts = _measured([1, 2, 4], sigma=0.02, kappa=0.0, windows=6, noise=0.01)
    pts.append(Measured(8, pts[-1].values))
    mid, lo, hi = capacity.model(pts).prediction.error()
    assert lo < mid < -0.3 and hi < 0  # the interval says it too


def test_every_p_fitted_predicts_the_next_without_an_error():
    c = capacity.model(_measured([1, 2, 4]))
    assert c.prediction.P == 8 and c.prediction.measured is None
    assert c.prediction.error() is None
    assert "no error can be stated" in c.note
    assert "no error can be stated" in capacity.lines(c, "tps")[-1]
    every = capacity.model(_measured([1, 2, 4, 8]), hold_out=False)
    assert every.fitted == (1, 2, 4, 8) and every.prediction.P == 16
    assert every.prediction.error() is None and "no error can be stated" in every.note


def test_too_few_p_or_windows():
    c = capacity.model(_measured([1, 2]))
    assert c.prediction is None and c.note.startswith("too few partition counts: 1, 2")
    assert capacity.lines(c, "tps") == [
        "capacity model (USL: X(P) = lambda P / (1 + sigma (P-1) + kappa P (P-1))): " + c.note
    ]
    one = capacity.model(_measured([1, 2, 4, 8], windows=1))
    assert one.prediction.low is None and one.params[0].lo is None
    assert "no interval" in one.note and one.prediction.error()[1] is None


def _run_at(base, partitions: list[int], branches: int | None = None):
    """The fixture run with its P = 2 result copied to each of `partitions`."""
    (two,) = [r for r in base.results if r.partitions == 2]
    results = [dataclasses.replace(two, partitions=p) for p in partitions]
    cfg = base.config
    if branches is not None:
        cfg = dataclasses.replace(cfg, sizing=dataclasses.replace(
            cfg.sizing, branches_per_partition=branches))  # fmt: skip
    return dataclasses.replace(
        base, results=tuple(results), config=dataclasses.replace(cfg, partitions=tuple(partitions))
    )


@pytest.fixture
def base(request):
    return runfile.load(request.config.rootpath / "tests/fixtures/debitcredit_run.json")


def test_report_of_runs_at_three_p_or_more_sets_out_the_model(base, tmp_path):
    a = runfile.save(_run_at(base, [1, 2]), tmp_path / "a.json")
    b = runfile.save(dataclasses.replace(_run_at(base, [4]), started_utc="2026-01-01T00:00:00Z"),
                     tmp_path / "b.json")  # fmt: skip
    res = CliRunner().invoke(cli, ["report", str(a), str(b)])
    assert res.exit_code == 0, res.output
    assert "Capacity model across P (peak tps)" in res.output
    points, differ = metrics.capacity_points([runfile.load(a), runfile.load(b)])
    assert not differ
    if len(points) >= capacity.MIN_FITTED_P:  # the fixture's closed windows are steady
        assert "P = 8: predicted" in res.output and "no error can be stated" in res.output
    else:
        assert "too few partition counts" in res.output
    # two P: no model, no section (the goldens' reports are unchanged)
    assert report.capacity_section([runfile.load(a)]) is None


def test_runs_of_different_sizes_are_not_fitted_together(base):
    runs = [_run_at(base, [1, 2]), _run_at(base, [4], branches=5)]
    section = report.capacity_section(runs)
    (line,) = section.items
    assert line.startswith("not fitted: the runs differ in size or load per partition")


def test_tpcc_runs_at_three_p_get_the_model_in_their_report(tmp_path):
    from test_tpcc_audit import forged

    from wisconsin.workloads.tpcc import report as tpcc_report
    from wisconsin.workloads.tpcc import runfile as tpcc_runfile

    paths = []
    for i, (p, rate) in enumerate([(1, 1.0), (2, 1.9), (4, 3.5)]):
        run = forged(rate)
        run = dataclasses.replace(
            run, started_utc=f"2026-11-27T00:0{i}:00Z",
            config=dataclasses.replace(run.config, partitions=p),
        )  # fmt: skip
        paths.append(tpcc_runfile.save(run, tmp_path / f"tpcc-{p}.json"))
    text = tpcc_report.report_files(paths)
    assert "Capacity model across P (tpmC, one window per run)" in text
    assert "P = 8: predicted" in text and "as many windows as parameters" in text
    assert "Capacity model" not in tpcc_report.report_files(paths[:2])
