from wisconsin.analysis import schedule
from wisconsin.runfiles.runfile import Measurement, Repetition


def _m(kind, p, times, share=0.95, overhead=0.001):
    reps = tuple(
        Repetition(
            index=i + 1, cold=True, wall_s=t, rows=0, overhead_s=overhead, engine_share=share
        )
        for i, t in enumerate(times)
    )
    return Measurement(
        table=f"{kind}{p}",
        kind=kind,
        partitions=p,
        rows=1000,
        query="scan",
        variant="full-row",
        warmup=reps[0],
        repetitions=reps,
        expected_rows=0,
    )


def _stop(ms, rounds, **kw):
    args = dict(
        min_reps=3, max_reps=6, target_ci=0.10, elapsed_s=10, next_round_s=1, time_budget_s=None
    )
    return schedule.stop_reason(ms, rounds, **(args | kw))


def test_narrow_intervals_stop_after_min_reps():
    tight = [_m("F", 1, [1.0, 1.01, 0.99, 1.0]), _m("F", 2, [0.5, 0.505, 0.495, 0.5])]
    assert _stop(tight, 2) == ""  # below --min-reps
    assert _stop(tight, 4).startswith("target CI met")


def test_wide_intervals_run_until_max_reps():
    wide = [_m("F", 1, [1.0, 2.0, 0.5, 1.5]), _m("F", 2, [0.5, 1.5, 0.2, 0.9])]
    assert _stop(wide, 4) == ""
    assert _stop(wide, 6).startswith("max reps")


def test_the_time_budget_stops_before_a_round_that_would_pass_it():
    wide = [_m("F", 1, [1.0, 2.0, 0.5]), _m("F", 2, [0.5, 1.5, 0.2])]
    reason = _stop(wide, 1, elapsed_s=95, next_round_s=10, time_budget_s=100)
    assert reason.startswith("time budget") and "fewer than --min-reps" in reason


def test_harness_dominated_points_are_not_headlines():
    short = [_m("F", 1, [0.01] * 4, share=0.5), _m("F", 2, [0.005] * 4, share=0.5)]
    assert schedule.harness_dominated(short[0])
    assert schedule.headline_ratios(short) == []
    assert _stop(short, 3).startswith("min reps")
    long_but_near_overhead = _m("F", 1, [0.1] * 3, share=0.95, overhead=0.01)  # 10x overhead
    assert schedule.harness_dominated(long_but_near_overhead)


def test_round_orders_are_seeded_shuffles_in_table_blocks():
    steps = [schedule.Step(t, q) for t in ("F1", "F2", "G1") for q in ("scan", "average", "join")]
    steps.append(schedule.Step("F1", "scan", baseline=True))
    a = schedule.round_order(steps, 5)
    assert a == schedule.round_order(list(reversed(steps)), 5)  # only the seed matters
    assert sorted(s.label for s in a) == sorted(s.label for s in steps)
    tables = [(s.baseline, s.table) for s in a]
    assert len([i for i in range(1, len(tables)) if tables[i] != tables[i - 1]]) == 3
    orders = {tuple(s.label for s in schedule.round_order(steps, seed)) for seed in range(20)}
    assert len(orders) > 10
    assert schedule.Step.parse("baseline:F1/scan") == schedule.Step("F1", "scan", True)


def test_a_ratio_against_a_harness_dominated_base_is_not_a_headline():
    base = _m("G", 1, [0.01] * 4, share=0.5)  # dominated
    fine = _m("G", 2, [0.5, 0.51, 0.49, 0.5])
    assert schedule.harness_dominated(base) and not schedule.harness_dominated(fine)
    assert schedule.headline_ratios([base, fine]) == []
    # One rule with the report: the share alone is enough to judge a point.
    assert schedule.harness_dominated(_m("F", 1, [0.01] * 3, share=0.5, overhead=None))
