"""Compare and plot of TPC-C runs: what else differs named first, one verdict, tpmC and each
type's p90 side by side with intervals; the New-Order series and the response-time CDFs."""

from __future__ import annotations

import dataclasses
import json

from click.testing import CliRunner
from test_tpcc_audit import forged

from wisconsin.cli import cli
from wisconsin.oltp import compare as core
from wisconsin.oltp import histogram
from wisconsin.oltp.series import Interval
from wisconsin.workloads.tpcc import compare, plot
from wisconsin.workloads.tpcc.runfile import save


def _env(run, host="box"):
    return dataclasses.replace(run, environment={"hostname": host, "usable_cores": 2})


def test_the_same_run_twice_has_no_difference_and_says_so():
    a = _env(forged())
    text = compare.compare_runs([a], [a])
    lines = text.splitlines()
    assert lines[1].startswith("same machine, warehouses")
    assert "no difference this can tell" in lines[2]
    assert "new orders per minute" in text and "p90 New-Order s" in text


def test_a_faster_b_is_higher_and_what_else_differs_comes_first():
    a, b = _env(forged(1.6)), _env(forged(1.6 * 1.2))
    lines = compare.compare_runs([a], [b]).splitlines()
    assert lines[1].startswith("same machine") and "B higher" in lines[2]
    assert "1.20" in lines[2]
    other = _env(dataclasses.replace(b, config=dataclasses.replace(b.config, mode="nowait")), "x")
    lines = compare.compare_runs([a], [other]).splitlines()
    assert lines[1] == ("differs: machine host: box in A, x in B; mode: spec in A, nowait in B")
    assert "between unlike runs" in lines[2]


def test_sets_of_runs_pool_to_their_median_and_spread():
    a = [_env(forged(1.5)), _env(forged(1.6)), _env(forged(1.7))]
    rows = {r["name"]: r for r in compare._rows(a, [_env(forged(1.6))])}
    t = rows["new orders per minute"]["a"]
    assert t.n == 3 and t.low < t.median < t.high
    assert round(t.median, 6) == round(sum(forged(1.6).result.no_series) * 60 / 240, 6)
    out = json.loads(compare.compare_runs(a, a, "json"))
    assert out["rows"][0]["name"] == "new orders per minute" and out["rows"][0]["ratio"]
    assert "| p90 Payment s |" in compare.compare_runs(a, a, "markdown")


def test_the_ratio_verdict_needs_an_interval_clear_of_one():
    assert (
        core.verdict_word(core.ratio(Interval(10, 9, 11, 5), Interval(12, 11.01, 13, 5)))[:8]
        == "B higher"
    )
    assert "spans 1" in core.verdict_word(
        core.ratio(Interval(10, 9, 11, 5), Interval(12, 10.9, 13, 5))
    )


def test_p90_interval_is_the_order_statistics_one():
    h = histogram.new()
    for ms in range(1, 1001):
        histogram.record(h, ms / 1000)
    point, low, high, n = histogram.percentile_interval(h, 90.0)
    # ranks 900 -/+ 1.96 sqrt(1000 * 0.9 * 0.1) = 900 -/+ 18.6
    assert n == 1000 and abs(point - 0.900) < 0.001
    assert abs(low - 0.881) <= 0.002 and abs(high - 0.918) <= 0.002


def test_compare_and_plot_through_the_cli(tmp_path):
    a = save(_env(forged(1.6)), tmp_path / "tpcc-a.json")
    b = save(_env(forged(1.8)), tmp_path / "tpcc-b.json")
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert res.exit_code == 0 and "verdict: new orders per minute B / A" in res.output
    forced = CliRunner().invoke(cli, ["compare", str(a), str(b), "--force"])  # changes nothing
    assert forced.exit_code == 2 and "--force" in forced.output, forced.output
    figs = CliRunner().invoke(cli, ["plot", str(a), "--out-dir", str(tmp_path / "figs")])
    assert figs.exit_code == 0, figs.output
    names = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert names == ["tpcc-a-response-times.png", "tpcc-a-response-times.svg",
                     "tpcc-a-tpmc-series.png", "tpcc-a-tpmc-series.svg"]  # fmt: skip
    assert [n for n, _ in plot.figures(forged())] == ["tpmc-series", "response-times"]
