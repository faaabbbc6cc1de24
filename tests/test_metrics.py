import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import run_from_times  # noqa: E402

from wisconsin.analysis import metrics
from wisconsin.runfiles import runfile as rf

FIX = Path(__file__).parent / "fixtures"


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
    # P0: the ratio is 1 by definition, with no interval
    r0 = p["F", "scan", 2].ratio
    assert (r0.value, r0.lo, r0.hi) == (1.0, None, None)


def test_median_is_used():
    run = run_from_times({("F", 1, "avg"): [9.0, 10.0, 100.0], ("F", 2, "avg"): [5.0, 5.0, 1.0]})
    p = _pts(run)
    assert p["F", "avg", 2].ratio.value == pytest.approx(2.0)
    assert p["F", "avg", 2].P0 == 1
    assert (p["F", "avg", 1].time_min, p["F", "avg", 1].time_max) == (9.0, 100.0)


def test_oversubscribed_on_two_cores_and_no_bound_without_calibration():
    # The min(P, cores) "ceiling" is gone (issue 9): a schema-1 run has no bound, says so.
    times = {("F", P, "scan"): [1.0, 1.0] for P in (1, 2, 4, 8, 16)}
    p = _pts(run_from_times(times, cores=2))
    assert [p["F", "scan", P].oversubscribed for P in (1, 2, 4, 8, 16)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    for P in (1, 2, 4, 8, 16):
        assert p["F", "scan", P].bound is None and p["F", "scan", P].of_bound is None
        assert p["F", "scan", P].bound_note == "bound not available: run file lacks calibration"


def test_bound_terms_binding_and_of_bound():
    run = rf.load(FIX / "run_v2.json")
    p = _pts(run)
    f1, f8 = p["F", "scan", 1], p["F", "scan", 8]
    # 2,000,000 rows at 2.5 M rows/s on one thread = 0.8 s; 2 cores at P >= 2 -> 0.4 s
    assert f1.bound.compute_s == pytest.approx(0.8)
    assert f8.bound.compute_s == pytest.approx(0.4)
    # cold: bytes read (2e6 rows x 200 B) over 1.5 GB/s storage
    assert f8.bound.bytes_s == pytest.approx(4e8 / 1.5e9, rel=1e-3)
    assert f8.bound.overhead_s == pytest.approx(0.004 + 0.0015 * 8, rel=0.2)
    assert f8.bound.resource == "cores"
    assert f8.of_bound == pytest.approx(f8.bound.time_s / f8.time_median)
    assert f8.bound_ratio == pytest.approx(f1.time_median / f8.bound.time_s)
    assert not any(x.beats_bound for x in p.values())
    # storage binds when the device is slow; the harness when the overhead is largest
    slow = dataclasses.replace(
        run, calibration=dataclasses.replace(run.calibration, storage_read_bytes_per_s=1e8)
    )
    assert _pts(slow)["F", "scan", 2].bound.resource == "storage"
    busy = dataclasses.replace(
        run,
        calibration=dataclasses.replace(
            run.calibration, scan_rows_per_s=(("scan", 1e12),), storage_read_bytes_per_s=1e15
        ),
    )
    b = _pts(busy)["F", "scan", 2]
    assert b.bound.resource == "harness"
    assert _pts(busy)["F", "select", 2].bound_note.startswith("bound not available")


def test_point_faster_than_its_bound_is_flagged():
    run = rf.load(FIX / "run_v2.json")
    fast = dataclasses.replace(
        run, calibration=dataclasses.replace(run.calibration, scan_rows_per_s=(("scan", 1e5),))
    )
    p = _pts(fast)["F", "scan", 2]
    assert p.beats_bound and p.of_bound > 1


@pytest.mark.parametrize("name,n", [("run_real.json", 30), ("run_real_cold.json", 15)])
def test_real_small_runs_never_beat_their_bound(name, n):
    # Real runs of small tables at P = 1, 2, 4 on this 2-core machine. run_real.json: warm,
    # main's runner, calibration measured by make_fixture_runs.make_real_run. run_real_cold:
    # cold, F tables of 1 M rows, written by issue 8's runner (helper m2's branch, merged
    # for the purpose) with its own calibration, baseline, bytes read and overheads.
    run = rf.load(FIX / name)
    pts = metrics.compute_points(run)
    assert {p.P for p in pts} == {1, 2, 4} and len(pts) == n
    assert all(p.bound is not None for p in pts)
    for p in pts:
        assert p.time.hi >= p.bound.time_s, (p.table, p.query, p.time, p.bound)
        assert not p.beats_bound


def test_harness_dominated_points():
    p = _pts(rf.load(FIX / "run_v2.json"))
    avg8 = p["F", "average", 8]
    assert avg8.harness is True and not avg8.headline and avg8.engine_share < 0.8
    assert p["F", "scan", 8].harness is False and p["F", "scan", 8].headline
    assert metrics.harness_dominated(None, None, 1.0) is None
    assert metrics.harness_dominated(0.9, 0.01, 0.1) is True  # 10x the overhead only
    assert metrics.harness_dominated(0.9, 0.001, 0.1) is False
    # schema 1: not recorded, so unknown (not counted as harness-dominated)
    assert _pts(rf.load(FIX / "run_a.json"))["F", "scan", 4].harness is None


def test_no_interval_at_p0():
    p = _pts(rf.load(FIX / "run_v2.json"))
    r = p["F", "scan", 1].ratio
    assert (r.value, r.lo, r.hi) == (1.0, None, None)
    assert p["F", "scan", 2].ratio.lo is not None


def test_pooling_two_runs_is_at_least_as_wide_as_either():
    a, b = rf.load(FIX / "run_v2.json"), rf.load(FIX / "run_v2_b.json")
    pa, pb, pool = _pts(a), _pts(b), _pts([a, b])
    for key, pt in pool.items():
        if pt.ratio.lo is None:
            continue
        assert pt.runs == 2 and pt.reps == 10
        for single in (pa[key], pb[key]):
            assert pt.ratio.hi - pt.ratio.lo >= single.ratio.hi - single.ratio.lo - 1e-12, key
            assert pt.ratio.lo <= single.ratio.lo and pt.ratio.hi >= single.ratio.hi
    # run B drifted 25% at P = 4: the two runs' intervals are disjoint, the pooled one
    # is honest about it
    assert pa["F", "scan", 4].ratio.lo > pb["F", "scan", 4].ratio.hi
    w = pool["F", "scan", 4].ratio
    assert w.wide and w.lo < pb["F", "scan", 4].ratio.lo and w.hi > pa["F", "scan", 4].ratio.hi


def test_cluster_cores_are_summed_over_hosts():
    hosts = (rf.HostInfo("a", ("w0",), 4, 1), rf.HostInfo("b", ("w1",), 4, 1))
    run = run_from_times({("F", 2, "scan"): [1.0]}, cores=2, cluster="tcp://x:8786", hosts=hosts)
    assert metrics.machine_cores(run) == 8
    local = run_from_times({("F", 2, "scan"): [1.0]}, cores=2, hosts=hosts)
    assert metrics.machine_cores(local) == 2


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


def test_single_run_ratio_interval_for_the_stopping_rule():
    r = metrics.ratio_interval([2.0, 2.1, 1.9], [1.0, 1.05, 0.95])
    assert r.value == pytest.approx(2.0) and r.lo < 2.0 < r.hi
    assert metrics.bootstrap_ratio is metrics.ratio_interval  # old name, used by schedule.py


def test_real_cold_run_binding_resources():
    pts = _pts(rf.load(FIX / "run_real_cold.json"))
    # the cold scan reads its table from a 0.26 GB/s device: storage binds, not the cores
    assert pts["F", "scan", 1].bound.resource == "storage"
    assert pts["F", "scan", 1].bound.bytes_s > pts["F", "scan", 1].bound.compute_s
    # AVG is short: the harness overhead binds at P = 2 and 4, and the points say so
    assert pts["F", "average", 4].bound.resource == "harness"
    assert pts["F", "average", 4].harness is True
