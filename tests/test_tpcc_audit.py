"""The TPC-C audit rules on forged runs: each passes just inside its threshold and fails just
past it, from the evidence the run file holds (series, histograms, delivery times, counts)."""

from __future__ import annotations

import dataclasses

import pytest

from wisconsin.oltp import histogram
from wisconsin.workloads.tpcc import audit, metrics
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc.runfile import (
    Checkpoint,
    Config,
    KindResult,
    Receipts,
    Result,
    Times,
    TpccRun,
    load,
    save,
)

WINDOW = 240
W = 8


def kind(name: str, count: int, seconds: float = 0.1) -> KindResult:
    h = histogram.new()
    for _ in range(count):
        histogram.record(h, seconds)
    t = Times(count, 1.0, 1.0, 1.0)
    return KindResult(name, count, 0, 0, 0, histogram.summarize(h), histogram.encode(h), t, t)


def receipts(acknowledged: int, with_keys: int, lost: int = 0, **fields) -> Receipts:
    """A receipts check of a run: acknowledged C lines, with_keys of them with rows to find."""
    named = tuple(f"New-Order txid {i}: no ORDER row" for i in range(lost))
    values = dict(acknowledged=acknowledged, with_keys=with_keys, found=with_keys - lost,
                  lost=named, lost_count=lost, in_doubt=0, aborted=0, halves_missing=0,
                  halves_orphaned=0)  # fmt: skip
    return Receipts(**{**values, **fields})


def forged(per_second: float = 1.6, **result) -> TpccRun:
    """A consistent spec-mode run: `per_second` committed New-Orders each second (an even
    series: its interval is its point), the mix of the deck, inputs at their expectations."""
    series = tuple(round(per_second * (i + 1)) - round(per_second * i) for i in range(WINDOW))
    no = sum(series)
    pay, small = round(no * 43 / 45), round(no * 4 / 45)
    kinds = (kind(ins.NEW_ORDER, no), kind(ins.PAYMENT, pay), kind(ins.ORDER_STATUS, small),
             kind(ins.DELIVERY, small), kind(ins.STOCK_LEVEL, small))  # fmt: skip
    base = Result(
        kinds=kinds, no_series=series, new_orders_all=no + 50, d_next_o_id_delta=no + 50,
        rolled_back=round(no / 100), lines=10 * no, remote_lines=round(no / 10),
        remote_payments=round(0.15 * pay), by_name=round(0.6 * (pay + small)),
        delivery_s=(1.0,) * small, deliveries_unfinished=0, skipped_districts=0,
        checkpoints=(Checkpoint(0, 120.0, 0.5, ""), Checkpoint(1, 120.0, 0.4, "")),
        wal_bytes=((1000,) * WINDOW,) * 2, memory_bytes=((100 * 2**20,) * WINDOW,) * 2,
        txn_memory_bytes=((2**20,) * WINDOW,) * 2, temp_bytes=((0,) * WINDOW,) * 2,
        cpu_s=(10.0, 10.0), first_error="", recovered=0,
        consistency=tuple(f"3.3.2.{n} ok" for n in range(1, 13)), consistency_failed=(),
        independent=("independent check: OK",), independent_ok=True, build_s=10.0, db_bytes=1,
        receipts=receipts(sum(k.count for k in kinds) - small, round(no * 88 / 45)),
    )  # fmt: skip
    cfg = Config(
        mode="spec", partitions=2, warehouses_per_partition=W // 2, customers_per_district=3000,
        items=100_000, ramp_s=60, window_s=WINDOW, workers=4, seed=0, c_load=(1, 2, 3),
        c_run=(4, 5, 6), checkpoint_at_s=120, drain_s=80, limit_s=5.0, pinned_cores=(0, 1),
        data_dir="/tmp/x",
    )  # fmt: skip
    return TpccRun("tpcc", 2, "2026-11-27T00:00:00Z", "2026-11-27T00:10:00Z", {}, cfg,
                   dataclasses.replace(base, **result))  # fmt: skip


def verdicts(run: TpccRun) -> dict[str, bool]:
    return {r.name: r.ok for r in audit.audit_run(run)}


def test_a_consistent_forged_run_passes_every_rule():
    assert all(verdicts(forged()).values()), [r for r in audit.audit_run(forged()) if not r.ok]


def test_run_file_round_trip(tmp_path):
    run = forged()
    assert load(save(run, tmp_path / "tpcc-x.json")) == run


def test_efficiency_above_100_percent_fails_just_past_it():
    most = metrics.MAX_TPMC_PER_WAREHOUSE * W / 60  # new orders per second at 100%
    assert verdicts(forged(most * 0.995))["efficiency"]
    assert not verdicts(forged(most * 1.01))["efficiency"]


def test_d_next_o_id_must_move_by_the_committed_new_orders():
    run = forged()
    r = run.result
    assert not verdicts(forged(d_next_o_id_delta=r.new_orders_all + 1))["new orders"]
    assert not verdicts(forged(new_orders_all=sum(r.no_series) - 1,
                               d_next_o_id_delta=sum(r.no_series) - 1))["new orders"]  # fmt: skip


def test_p90_over_its_limit_fails():
    run = forged()
    slow = tuple(kind(k.kind, k.count, 5.02) if k.kind == ins.PAYMENT else k
                 for k in run.result.kinds)  # fmt: skip
    ok = tuple(kind(k.kind, k.count, 4.98) if k.kind == ins.PAYMENT else k
               for k in run.result.kinds)  # fmt: skip
    assert verdicts(forged(kinds=ok))["p90 response times"]
    assert not verdicts(forged(kinds=slow))["p90 response times"]


def test_deliveries_need_90_percent_within_80_s():
    assert verdicts(forged(delivery_s=(1.0,) * 90 + (81.0,) * 10))["deferred deliveries"]
    assert not verdicts(forged(delivery_s=(1.0,) * 89 + (81.0,) * 11))["deferred deliveries"]
    # an unfinished delivery is a late one
    late = forged(delivery_s=(1.0,) * 90 + (81.0,) * 9, deliveries_unfinished=2)
    assert not verdicts(late)["deferred deliveries"]


def test_mix_below_the_minimum_beyond_chance_fails():
    run = forged()
    n = metrics.completed(run.result)
    allowed = 0.43 - metrics.tolerance(0.43, n)

    def with_payments(share):
        others = n - run.result.kinds[1].count
        pay = round(share * others / (1 - share))
        return forged(kinds=tuple(kind(k.kind, pay) if k.kind == ins.PAYMENT else k
                                  for k in run.result.kinds))  # fmt: skip

    assert verdicts(with_payments(allowed + 0.01))["mix"]
    assert not verdicts(with_payments(allowed - 0.01))["mix"]


@pytest.mark.parametrize(
    "name, field, of",
    [
        ("rolled-back New-Orders", "rolled_back", "new_order"),
        ("remote Payments", "remote_payments", "payment"),
    ],
)
def test_input_shares_outside_their_range_beyond_chance_fail(name, field, of):
    run = forged()
    n = metrics.kind(run.result, of).count
    _, high, _ = metrics.SHARE_RANGES[name]
    edge = (high + metrics.tolerance(high, n)) * n
    rule = f"input: {name}"
    assert verdicts(forged(**{field: int(edge)}))[rule]
    assert not verdicts(forged(**{field: int(edge) + 2}))[rule]


def test_lines_per_order_outside_its_range_fails():
    run = forged()
    no = metrics.kind(run.result, ins.NEW_ORDER).count
    hi = 10.5 + metrics.Z * metrics.LINES_SD / no**0.5
    assert verdicts(forged(lines=int(hi * no) - 1))["input: lines per order"]
    assert not verdicts(forged(lines=int(hi * no) + 2))["input: lines per order"]


def test_a_failed_condition_or_independent_check_fails():
    assert not verdicts(forged(consistency_failed=(11,)))["consistency"]
    assert not verdicts(forged(independent_ok=False))["consistency"]
    assert not verdicts(forged(consistency=("3.3.2.1 ok",)))["consistency"]


def test_a_partition_without_a_checkpoint_in_the_window_fails():
    assert not verdicts(forged(checkpoints=(Checkpoint(0, 120.0, 0.5, ""),)))[
        "checkpoint in the window"
    ]
    refused = (Checkpoint(0, 120.0, 0.5, ""), Checkpoint(1, 120.0, 0.0, "refused"))
    assert not verdicts(forged(checkpoints=refused))["checkpoint in the window"]
    after = (Checkpoint(0, 120.0, 0.5, ""), Checkpoint(1, WINDOW + 1.0, 0.5, ""))
    assert not verdicts(forged(checkpoints=after))["checkpoint in the window"]


def test_undo_growing_past_its_allowance_or_a_spill_fails():
    base = 100 * 2**20
    # the buffer pool filling is no failure
    fills = tuple(base + i * 2**20 for i in range(WINDOW))
    assert verdicts(forged(memory_bytes=(fills, fills)))["engine memory bounded"]

    # undo growing 17 MB (past 16 MB) over a third fails; 15 MB passes
    def undo(total_mb):
        return tuple(base + int(total_mb * 2**20 * i / (WINDOW - 1) * 1.5) for i in range(WINDOW))

    assert verdicts(forged(txn_memory_bytes=(undo(15), undo(1))))["engine memory bounded"]
    assert not verdicts(forged(txn_memory_bytes=(undo(17.5), undo(1))))["engine memory bounded"]
    spill = ((0,) * (WINDOW - 1) + (4096,), (0,) * WINDOW)
    assert not verdicts(forged(temp_bytes=spill))["engine memory bounded"]


def test_more_than_one_percent_failed_fails():
    run = forged()
    n = metrics.completed(run.result)
    k = run.result.kinds[0]
    ok = dataclasses.replace(k, failed=n // 100)
    bad = dataclasses.replace(k, failed=n // 100 + 1)
    assert verdicts(forged(kinds=(ok, *run.result.kinds[1:])))["failed transactions"]
    assert not verdicts(forged(kinds=(bad, *run.result.kinds[1:])))["failed transactions"]


def test_scale_label_says_unscaled_first():
    most = metrics.MAX_TPMC_PER_WAREHOUSE * W / 60
    run = dataclasses.replace(forged(most * 1.5), config=dataclasses.replace(
        forged().config, mode="nowait"))  # fmt: skip
    assert metrics.scale_label(run).startswith("UNSCALED")
    assert metrics.scale_label(forged()).startswith("scaled")
    # at its ceiling, a run above it by chance (its interval reaching below) is scaled
    noisy = forged(no_series=tuple(3 if (i // 30) % 2 else 1 for i in range(WINDOW)))
    t = metrics.tpmc_interval(noisy.result, WINDOW)
    assert t.median > metrics.MAX_TPMC_PER_WAREHOUSE * W >= t.low
    assert metrics.scale_label(noisy).startswith("scaled")


def test_no_acknowledged_transaction_lost():
    """One lost receipt, one decided half unapplied or one applied undecided fails; the log
    must hold at least the completions the terminals counted (one fewer fails)."""
    r = forged().result
    counted = sum(k.count for k in r.kinds if k.kind != ins.DELIVERY)
    a = r.receipts
    assert verdicts(forged())["acknowledged transactions"] and a.acknowledged == counted
    for broken in (receipts(a.acknowledged, a.with_keys, lost=1),
                   receipts(a.acknowledged, a.with_keys, halves_missing=1),
                   receipts(a.acknowledged, a.with_keys, halves_orphaned=1),
                   receipts(counted - 1, a.with_keys - 1),
                   receipts(a.acknowledged, a.with_keys, found=a.with_keys - 1)):  # fmt: skip
        assert not verdicts(forged(receipts=broken))["acknowledged transactions"], broken
    assert not verdicts(forged(receipts=None))["acknowledged transactions"]
    rule = {x.name: x for x in audit.audit_run(forged(receipts=receipts(counted, 9, lost=1)))}
    assert "New-Order txid 0: no ORDER row" in rule["acknowledged transactions"].detail
