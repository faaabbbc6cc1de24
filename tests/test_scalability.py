"""The scalability card recovers known parameters from synthetic curves (within 5%)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import run_from_times  # noqa: E402

from wisconsin.analysis import metrics, scalability
from wisconsin.runfiles import runfile

FIX = Path(__file__).parent / "fixtures"
N = np.array([2.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def _noisy(y, seed):
    return y * np.random.default_rng(seed).normal(1.0, 0.003, y.size)


def test_usl_recovers_sigma_kappa_and_peak():
    sigma, kappa = 0.05, 0.002
    fit = scalability.fit_usl(N, _noisy(scalability.usl(N, sigma, kappa), 1))
    assert fit.param("sigma").value == pytest.approx(sigma, rel=0.05)
    assert fit.param("kappa").value == pytest.approx(kappa, rel=0.05)
    nstar = np.sqrt((1 - sigma) / kappa)
    assert fit.param("N*").value == pytest.approx(nstar, rel=0.05)
    for name in ("sigma", "kappa", "N*"):
        p = fit.param(name)
        assert p.lo <= p.value <= p.hi


def test_amdahl_and_gustafson_recover_serial_fraction():
    n = N[:4]
    a = scalability.fit_amdahl(n, _noisy(scalability.amdahl(n, 0.1), 2))
    assert a.param("s").value == pytest.approx(0.1, rel=0.05)
    g = scalability.fit_gustafson(n, _noisy(scalability.gustafson(n, 0.2), 3))
    assert g.param("s").value == pytest.approx(0.2, rel=0.05)


def test_too_few_points_say_so():
    fit = scalability.fit_usl([2.0, 4.0], [1.9, 3.5])
    assert fit.note == "too few points: 2 beyond P0, USL needs 3"
    assert all(p.value is None for p in fit.params)
    assert scalability.fit_amdahl([2.0], [1.9]).note.startswith("too few points")


def test_card_of_a_run_cost_and_exclusions():
    run = runfile.load(FIX / "run_v2.json")
    pts = metrics.compute_points(run)
    cards = {(c.kind, c.query): c for c in scalability.cards(pts, run)}
    scan = cards["F", "scan"]
    # one in-process thread takes 0.8 s; F2 (0.47 s) beats it, F1 (0.88 s) does not
    assert scan.cost.P == 2 and scan.cost.text == "P = 2"
    assert [P for P, _ in scan.karp_flatt] == [2, 4, 8]
    assert [f.model for f in scan.fits] == ["Amdahl", "USL"]
    assert scan.fits[1].param("sigma").value is not None
    # AVG at P = 8 is harness-dominated: out of the fits, and USL has too few points
    avg = cards["F", "average"]
    assert avg.excluded == (8,) and avg.fits[1].note.startswith("too few points")
    g = cards["G", "scan"]
    assert g.cost is None and [f.model for f in g.fits] == ["Gustafson", "USL"]


def test_cost_unbounded_and_not_recorded():
    run = runfile.load(FIX / "run_v2.json")
    slow = [m for m in run.baseline if m.query == "scan"][0]
    import dataclasses

    fast_base = dataclasses.replace(
        slow, repetitions=tuple(dataclasses.replace(r, wall_s=0.01) for r in slow.repetitions)
    )
    run2 = dataclasses.replace(run, baseline=(fast_base,))
    pts = [p for p in metrics.compute_points(run2) if p.kind == "F" and p.query == "scan"]
    c = scalability.cost(pts, [run2])
    assert c.P is None and c.text.startswith("unbounded (no P up to 8 beats")
    old = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]})
    pts = metrics.compute_points(old)
    assert scalability.cost(pts, [old]).text.startswith("not recorded")
