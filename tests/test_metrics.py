import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import run_from_times  # noqa: E402

from wisconsin import metrics  # noqa: E402
from wisconsin import runfile as rf  # noqa: E402


def _pts(run):
    return {(p.kind, p.query, p.P): p for p in metrics.compute_points(run)}


def test_exact_speedup_scaleup_and_karp_flatt():
    run = run_from_times(
        {
            ("F", 2, "scan"): [10.0, 10.0, 10.0],
            ("F", 4, "scan"): [5.0, 5.0, 5.0],
            ("F", 8, "scan"): [4.0, 4.0, 4.0],
            ("G", 2, "scan"): [3.0, 3.0, 3.0],
            ("G", 4, "scan"): [3.3, 3.3, 3.3],
        },
        cores=16,
    )
    p = _pts(run)
    assert p["F", "scan", 2].ratio.value == 1.0
    assert p["F", "scan", 4].ratio.value == pytest.approx(2.0)
    assert p["F", "scan", 8].ratio.value == pytest.approx(2.5)
    assert p["F", "scan", 2].karp_flatt is None  # undefined at p = 1
    assert p["F", "scan", 4].karp_flatt == pytest.approx(0.0)
    # S = 2.5 at p = 4: (0.4 - 0.25) / 0.75 = 0.2
    assert p["F", "scan", 8].karp_flatt == pytest.approx(0.2)
    assert p["F", "scan", 8].efficiency == pytest.approx(2.5 / 4)
    assert p["F", "scan", 8].ideal == 4.0
    assert p["G", "scan", 4].ratio.value == pytest.approx(1.1)
    assert p["G", "scan", 4].ideal == 1.0
    assert p["G", "scan", 4].karp_flatt is None
    # identical repetitions: a zero-width interval, not wide
    r = p["F", "scan", 4].ratio
    assert (r.lo, r.hi, r.wide) == (pytest.approx(2.0), pytest.approx(2.0), False)


def test_median_is_used():
    run = run_from_times({("F", 1, "avg"): [9.0, 10.0, 100.0], ("F", 2, "avg"): [5.0, 5.0, 1.0]})
    p = _pts(run)
    assert p["F", "avg", 2].ratio.value == pytest.approx(2.0)
    assert p["F", "avg", 2].P0 == 1
    assert (p["F", "avg", 1].time_min, p["F", "avg", 1].time_max) == (9.0, 100.0)


def test_ceiling_and_oversubscribed_on_two_cores():
    assert metrics.speedup_ceiling(16, 2, 2) == 1.0
    assert metrics.speedup_ceiling(4, 1, 2) == 2.0
    assert metrics.speedup_ceiling(8, 1, 16) == 8.0
    assert metrics.scaleup_ceiling(16, 2, 2) == 8.0
    assert metrics.scaleup_ceiling(8, 2, 16) == 1.0
    times = {("F", P, "scan"): [1.0, 1.0] for P in (1, 2, 4, 8, 16)}
    p = _pts(run_from_times(times, cores=2))
    assert [p["F", "scan", P].oversubscribed for P in (1, 2, 4, 8, 16)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert [p["F", "scan", P].ceiling for P in (1, 2, 4, 8, 16)] == [1, 2, 2, 2, 2]


def test_cluster_cores_are_summed_over_hosts():
    hosts = (rf.HostInfo("a", ("w0",), 4, 1), rf.HostInfo("b", ("w1",), 4, 1))
    run = run_from_times({("F", 2, "scan"): [1.0]}, cores=2, cluster="tcp://x:8786", hosts=hosts)
    assert metrics.machine_cores(run) == 8
    local = run_from_times({("F", 2, "scan"): [1.0]}, cores=2, hosts=hosts)
    assert metrics.machine_cores(local) == 2


def test_bootstrap_ci_contains_truth_for_synthetic_data():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(40):
        a = 10.0 * rng.lognormal(0, 0.05, size=15)
        b = 5.0 * rng.lognormal(0, 0.05, size=15)
        r = metrics.bootstrap_ratio(a, b, resamples=1000)
        hits += r.lo <= 2.0 <= r.hi
    assert hits >= 34  # nominal 95%; percentile intervals on medians run a little narrow


def test_bootstrap_is_deterministic_and_marks_wide():
    noisy = metrics.bootstrap_ratio([1.0, 2.0, 3.0], [1.0, 1.5, 0.7])
    assert noisy == metrics.bootstrap_ratio([1.0, 2.0, 3.0], [1.0, 1.5, 0.7])
    assert noisy.wide
    tight = metrics.bootstrap_ratio([2.0, 2.01, 1.99, 2.0], [1.0, 1.0, 1.01, 0.99])
    assert not tight.wide and tight.lo <= 2.0 <= tight.hi
    single = metrics.bootstrap_ratio([2.0], [1.0])
    assert (single.value, single.lo, single.hi, single.wide) == (2.0, None, None, False)


def test_causes_of_bending():
    run = run_from_times(
        {
            ("F", 2, "q"): [2.0, 2.0],
            ("F", 4, "q"): [1.0, 1.0],
            ("G", 2, "q"): [1.0],
            ("G", 4, "q"): [1.0],
        },
        cores=2,
        engine={
            ("F", 2, "q"): [1.0, 1.0],
            ("F", 4, "q"): [1.0, 1.0, 1.0, 3.0],  # mean 1.5, expected 0.5 -> interference 3
            ("G", 2, "q"): [1.0, 1.0],
            ("G", 4, "q"): [1.5, 1.5, 1.5, 1.5],
        },
        cpu={("F", 4, "q"): [0.5, 0.5, 0.5, 0.5]},
    )
    p = _pts(run)
    f4 = p["F", "q", 4]
    assert f4.skew == pytest.approx(2.0)
    assert f4.interference == pytest.approx(3.0)
    assert f4.cpu_util == pytest.approx(2.0 / (1.0 * 2))
    assert f4.startup == pytest.approx(0.01)
    assert p["G", "q", 4].interference == pytest.approx(1.5)
    assert p["F", "q", 2].interference == pytest.approx(1.0)


def test_missing_partition_samples_give_none():
    run = run_from_times(
        {("F", 2, "q"): [2.0], ("F", 4, "q"): [1.0]},
        engine={("F", 4, "q"): [0.9]},  # shared memory: one engine sample for 4 partitions
    )
    p = _pts(run)
    assert p["F", "q", 2].skew is None and p["F", "q", 2].startup is None
    assert p["F", "q", 2].cpu_util is None
    assert p["F", "q", 4].skew is None and p["F", "q", 4].interference is None
    assert p["F", "q", 4].cpu_util == pytest.approx(0.9 / 2)
