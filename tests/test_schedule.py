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


def test_headline_ratios_are_speedup_for_f_and_time_ratio_for_g_with_their_intervals():
    import dataclasses

    import pytest

    from wisconsin.analysis import stats

    f1 = _m("F", 1, [2.0, 2.1, 1.9, 2.0])
    f2 = _m("F", 2, [0.01] * 4, share=0.5)  # harness-dominated: skipped, not the end
    f4 = _m("F", 4, [0.5, 0.52, 0.48, 0.5])
    g1 = _m("G", 1, [1.0, 1.05, 0.95, 1.0])
    g2 = _m("G", 2, [1.25, 1.3, 1.2, 1.25])
    other = dataclasses.replace(_m("F", 2, [1.0] * 4), kind="S")  # neither F nor G
    empty = dataclasses.replace(_m("G", 4, [1.0]), repetitions=())  # nothing timed
    heads = schedule.headline_ratios([g2, f4, other, f1, f2, g1, empty])
    assert [(h.kind, h.P, h.P0) for h in heads] == [("F", 4, 1), ("G", 2, 1)]
    f, g = heads
    assert f.value == pytest.approx(4.0) and g.value == pytest.approx(1.25)  # T1/T4; T2/T1
    for h in heads:
        assert h.lo < h.value < h.hi
        assert h.half_width == pytest.approx((h.hi - h.lo) / 2 / h.value)
    # with blocks, the interval is the report's: the t-interval over the blocks' ratios
    split = {id(m): {1: m.times[:2], 2: m.times[2:]} for m in (f1, f4, g1, g2)}
    f_b, g_b = schedule.headline_ratios([f1, f2, f4, g1, g2], blocks=lambda m: split[id(m)])
    want_f = stats.block_ratio_interval([f1.times[:2], f1.times[2:]], [f4.times[:2], f4.times[2:]])
    want_g = stats.block_ratio_interval([g2.times[:2], g2.times[2:]], [g1.times[:2], g1.times[2:]])
    assert (f_b.value, f_b.lo, f_b.hi) == pytest.approx((want_f.value, want_f.lo, want_f.hi))
    assert (g_b.value, g_b.lo, g_b.hi) == pytest.approx((want_g.value, want_g.lo, want_g.hi))
    assert (f_b.lo, f_b.hi) != pytest.approx((f.lo, f.hi))  # not the within-run interval


def test_the_stop_rule_judges_the_block_interval_when_there_are_blocks():
    # Tight within the run (+-1%), yet its two blocks' speedups differ by 4%: over two
    # blocks that is a t-interval of +-25%, wider than the 10% target.
    f1, f2 = _m("F", 1, [2.0, 2.0, 2.04, 2.04]), _m("F", 2, [1.0, 1.0, 0.98, 0.98])
    split = {id(m): {1: m.times[:2], 2: m.times[2:]} for m in (f1, f2)}
    assert _stop([f1, f2], 4).startswith("target CI met")  # within the run: narrow
    assert _stop([f1, f2], 4, blocks=lambda m: split[id(m)]) == ""  # over blocks: go on
    assert _stop([f1, f2], 1, time_budget_s=5).endswith("(fewer than --min-reps 3)")
    assert "fewer than" not in _stop([f1, f2], 3, time_budget_s=5)


def test_round_seeds_stay_below_two_to_the_31():
    assert schedule.round_seed(3000, 1) == (3000 * 1_000_003 + 1) % 2**31 < 2**31  # not 2**32


# --- pinned by mutation testing: the full messages, and the boundaries of the rule


def test_stop_messages_name_the_options_in_full():
    wide = [_m("F", 1, [1.0, 2.0, 0.5, 1.5]), _m("F", 2, [0.5, 1.5, 0.2, 0.9])]
    assert _stop(wide, 6) == "max reps: 6 rounds (--max-reps 6)"
    assert _stop(wide, 6, max_flag="--repeat") == "max reps: 6 rounds (--repeat 6)"
    assert _stop(wide, 4, time_budget_s=5) == (
        "time budget: 4 rounds in 10 s; another (~1 s) would pass --time-budget 5 s"
    )


def test_a_round_that_would_end_exactly_at_the_budget_still_runs():
    wide = [_m("F", 1, [1.0, 2.0, 0.5, 1.5]), _m("F", 2, [0.5, 1.5, 0.2, 0.9])]
    assert _stop(wide, 4, elapsed_s=90, next_round_s=10, time_budget_s=100) == ""
    later = _stop(wide, 4, elapsed_s=90.5, next_round_s=10, time_budget_s=100)
    assert later.startswith("time budget: 4 rounds")


def test_a_headline_exactly_at_the_target_meets_it():
    tight = [_m("F", 1, [1.0, 1.01, 0.99, 1.0]), _m("F", 2, [0.5, 0.505, 0.495, 0.5])]
    (head,) = schedule.headline_ratios(tight)
    assert (head.kind, head.query, head.P, head.P0) == ("F", "scan", 2, 1)
    assert 0 < head.half_width < 0.10
    assert _stop(tight, 4, target_ci=head.half_width).startswith("target CI met")
    assert _stop(tight, 4, target_ci=head.half_width * 0.999) == ""


def test_a_headline_without_an_interval_is_wide():
    # one repetition a side: a value and no interval, so nothing says it is narrow enough
    single = [_m("F", 1, [2.0]), _m("F", 2, [1.0])]
    (head,) = schedule.headline_ratios(single)
    assert (head.value, head.lo, head.hi, head.half_width) == (2.0, None, None, None)
    assert _stop(single, 1, min_reps=1) == ""


def test_a_block_only_one_side_has_is_left_out_of_the_interval():
    from wisconsin.analysis import stats

    f1 = _m("F", 1, [2.0, 2.0, 2.04, 2.04, 1.5])
    f2 = _m("F", 2, [1.0, 1.0, 0.98, 0.98])
    split = {
        id(f1): {1: f1.times[:2], 2: f1.times[2:4], 3: f1.times[4:]},  # a third block
        id(f2): {1: f2.times[:2], 2: f2.times[2:]},
    }
    (head,) = schedule.headline_ratios([f1, f2], blocks=lambda m: split[id(m)])
    want = stats.block_ratio_interval([f1.times[:2], f1.times[2:4]], [f2.times[:2], f2.times[2:]])
    assert (head.value, head.lo, head.hi) == (want.value, want.lo, want.hi)
