import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import in_blocks, make_run, make_run_v2, run_from_times  # noqa: E402

from wisconsin import WisconsinError  # noqa: E402
from wisconsin.runfiles.runfile import load, save  # noqa: E402
from wisconsin.workloads.wisconsin.compare import (  # noqa: E402
    compare_files,
    compare_runs,
    permutation_p,
    render_comparison,
)

FIX = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def ab():
    return load(FIX / "run_a.json"), load(FIX / "run_b.json")


def test_repetitions_alone_cannot_carry_a_verdict_over_40_points(ab):
    """Fixture runs of one block each: the permutation test on 5 vs 5 repetitions cannot
    go below p = 0.008, and Holm over 40 points needs 0.00125: nothing is called different
    (not even the update, 1.3x slower), and the footer says why and what to do."""
    c = compare_runs(*ab)
    assert len(c.rows) == 40 and not c.differences
    upd = [r for r in c.rows if r.query == "update"]
    assert all(r.time_ratio.value == pytest.approx(1.3, abs=0.03) for r in upd)
    assert all(r.p_value < 0.05 for r in upd)  # each alone would have been "significant"
    assert not any(r.significant for r in c.rows) and c.verdict == "cannot tell apart"
    text = render_comparison(c, "text")
    assert "cannot tell apart" in text and "run-to-run variation unknown" in text
    assert "Holm" in text
    assert json.loads(render_comparison(c, "json"))["rows"][0]["table"] == "F2"
    assert "| Query |" in render_comparison(c, "markdown")


def _block_run(rng, slow: float = 1.0, blocks: int = 5, spread: float = 0.05, start="A"):
    """Two points (scan and update at P = 2, 4), each block's times shifted together by a
    block effect (run-to-run variation) of `spread`; the update `slow` times slower."""
    times = {}
    effects = np.exp(rng.normal(0, spread, blocks))
    for P in (2, 4):
        for q, base in (("scan", 1.0 / P), ("update", 0.2 / P * slow)):
            times[("F", P, q)] = [float(base * e * np.exp(rng.normal(0, 0.01))) for e in effects]
    run = run_from_times(times)
    return in_blocks(
        dataclasses.replace(run, started_utc=f"2025-01-01T00:00:{ord(start) - 65:02d}Z")
    )


def test_blocks_find_a_real_slowdown_after_holm():
    rng = np.random.default_rng(1)
    c = compare_runs(_block_run(rng), _block_run(rng, slow=1.3, start="B"))
    upd = [r for r in c.rows if r.query == "update"]
    assert all(r.significant and r.blocks_a == r.blocks_b == 5 for r in upd)
    assert not any(r.significant for r in c.rows if r.query == "scan")
    assert c.verdict == "B slower"
    text = render_comparison(c, "text")
    assert "tested on blocks" in text and "smallest slowdown" in text
    assert "run-to-run variation unknown" not in text
    assert json.loads(render_comparison(c, "json"))["verdict"] == "B slower"


def test_identical_configurations_in_blocks_are_rarely_called_different():
    """A/A with run-to-run block effects of 5% (larger than the repetition noise): the
    family-wise false-positive rate stays near the 5% Holm promises (200 pairs)."""
    rng = np.random.default_rng(7)
    hits = sum(
        compare_runs(_block_run(rng), _block_run(rng, start="B")).verdict != "cannot tell apart"
        for _ in range(200)
    )
    assert hits / 200 <= 0.08, hits


def test_holm_adjusts_step_down():
    from wisconsin.analysis.significance import holm

    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([]) == []


def test_compare_names_what_else_differs_before_the_verdict():
    rng = np.random.default_rng(3)
    a, b = _block_run(rng), _block_run(rng, start="B")
    b = dataclasses.replace(
        b,
        environment=dataclasses.replace(b.environment, duckdb="9.9.9", usable_cores=16),
        config=dataclasses.replace(b.config, memory_limit="123MB", cluster="tcp://h:8786"),
    )
    c = compare_runs(a, b)
    assert "DuckDB: 2.0.0 in A, 9.9.9 in B" in c.context
    assert "cluster: local in A, tcp://h:8786 in B" in c.context
    assert any(x.startswith("usable cores: 2 in A, 16 in B") for x in c.context)
    assert any(x.startswith("memory limit:") for x in c.context)
    text = render_comparison(c, "text")
    assert text.index("Differs:") < text.index("Verdict:")


def test_permutation_p_exact_and_monte_carlo():
    # 3 vs 3 fully separated: the observed split is one of 2 extremes out of C(6,3) = 20
    assert permutation_p([1.0, 1.1, 1.2], [2.0, 2.1, 2.2]) == pytest.approx(0.1)
    assert permutation_p([1.0, 2.0], [1.0, 2.0]) == 1.0
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 0.1, 30), rng.normal(1.5, 0.1, 30)  # C(60,30) splits: sampled
    assert permutation_p(a, b) < 0.001
    same = rng.normal(1.0, 0.1, 60)
    assert permutation_p(same[:30], same[30:]) > 0.05


def test_too_few_reps_note():
    t = {("F", 2, "scan"): [1.0, 1.0, 1.0], ("F", 4, "scan"): [0.5, 0.5, 0.5]}
    run_a = run_from_times(t)
    run_b = run_from_times({k: [x * 2 for x in v] for k, v in t.items()})
    c = compare_runs(run_a, run_b)
    assert not any(r.significant for r in c.rows)  # min p with 3 vs 3 is 0.1
    assert "too few repetitions" in render_comparison(c)


def test_refuses_different_seed_and_sizes():
    a = make_run(reps=2)
    with pytest.raises(WisconsinError, match=r"seed differs: 42 in A, 7 in B"):
        compare_runs(a, make_run(seed=7, reps=2))
    with pytest.raises(WisconsinError, match=r"table F2 differs: 2,000,000 rows"):
        compare_runs(a, make_run(f_rows=4_000_000, reps=2))
    fewer = dataclasses.replace(
        a,
        tables=tuple(t for t in a.tables if t.partitions != 16),
        measurements=tuple(m for m in a.measurements if m.partitions != 16),
    )
    with pytest.raises(WisconsinError, match=r"partition counts differ"):
        compare_runs(a, fewer)
    with pytest.raises(WisconsinError) as info:
        compare_runs(a, make_run(seed=7, reps=2))
    assert "\n" not in str(info.value) and "--force" in str(info.value)


def test_force_compares_anyway():
    c = compare_runs(make_run(reps=2), make_run(seed=7, reps=2), force=True)
    assert c.differences == ("seed differs: 42 in A, 7 in B",)
    assert "FORCED" in render_comparison(c) and len(c.rows) == 40


def test_compare_files_errors(tmp_path):
    with pytest.raises(WisconsinError, match="version 99"):
        compare_files(FIX / "run_a.json", FIX / "bad_version.json")
    with pytest.raises(WisconsinError) as info:
        compare_files(FIX / "run_a.json", FIX / "run_b.json", fmt="csv")
    assert str(info.value) == "unknown compare format 'csv' (choose text, markdown, json)"


def _cli(*args):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    return CliRunner().invoke(cli, list(args))


def test_cli_compare(tmp_path):
    res = _cli("compare", str(FIX / "run_a.json"), str(FIX / "run_b.json"))
    assert res.exit_code == 0 and "Verdict: cannot tell apart" in res.output
    res = _cli("compare", "--format", "json", str(FIX / "run_a.json"), str(FIX / "run_b.json"))
    assert res.exit_code == 0 and len(json.loads(res.output)["rows"]) == 40


def test_cli_compare_refuses_then_force(tmp_path):
    from wisconsin.runfiles.runfile import save

    save(make_run(seed=7, reps=2), tmp_path / "seed7.json")
    args = [str(FIX / "run_a.json"), str(tmp_path / "seed7.json")]
    res = _cli("compare", *args)
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        "Error: runs are not comparable: seed differs: 42 in A, 7 in B (use --force to "
        "compare anyway)"
    ]
    res = _cli("compare", "--force", *args)
    assert res.exit_code == 0 and re.search(r"FORCED: +seed differs", res.output)


@pytest.mark.parametrize("name", ["bad_version.json", "does-not-exist.json"])
def test_cli_compare_bad_file_is_one_line_exit_2(name):
    res = _cli("compare", str(FIX / "run_a.json"), str(FIX / name))
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_pooled_sides_widen_the_interval_and_cli_takes_replicates(tmp_path):
    a, b = load(FIX / "run_v2.json"), load(FIX / "run_v2_b.json")
    one = {(r.table, r.query): r for r in compare_runs(a, b).rows}
    pooled = {(r.table, r.query): r for r in compare_runs([a, b], [b, a]).rows}
    r1, rp = one["F4", "scan"], pooled["F4", "scan"]
    assert rp.reps_a == rp.reps_b == 10
    assert rp.time_ratio.hi - rp.time_ratio.lo >= r1.time_ratio.hi - r1.time_ratio.lo
    args = [str(FIX / "run_v2.json"), str(FIX / "run_v2_b.json")]
    # replicates are other runs of the configuration (a copy of a file is the same run)
    more = [tmp_path / "c.json", tmp_path / "d.json"]
    save(make_run_v2(noise_seed=13, started="2026-01-01T02:00:00Z"), more[0])
    save(make_run_v2(noise_seed=14, started="2026-01-01T03:00:00Z"), more[1])
    res = _cli("compare", *args, "--with-a", str(more[0]), "--with-b", str(more[1]))
    assert res.exit_code == 0 and "2 runs pooled" in res.output
    copy = shutil.copy(args[1], tmp_path / "copy.json")
    res = _cli("compare", *args, "--with-a", str(copy))
    assert res.exit_code == 2 and "are the same run" in res.output
    with pytest.raises(WisconsinError, match="not of one configuration"):
        compare_runs([a, load(FIX / "run_a.json")], b)


def test_fail_slower_gates_ci_on_a_significant_slowdown(tmp_path):
    rng = np.random.default_rng(5)
    save(_block_run(rng), tmp_path / "a.json")
    save(_block_run(rng, slow=1.3, start="B"), tmp_path / "b.json")
    save(_block_run(rng, start="C"), tmp_path / "c.json")
    a, b, c = (str(tmp_path / f"{x}.json") for x in "abc")
    res = _cli("compare", "--fail-slower", "1.2", a, b)
    assert res.exit_code == 1 and "whole curve(s) of B slower than A by more than 1.2x" in (
        res.output
    )
    assert _cli("compare", "--fail-slower", "1.5", a, b).exit_code == 0  # 1.3x: under 1.5
    assert _cli("compare", "--fail-slower", "1.05", a, c).exit_code == 0  # A/A


def _curve_run(rng, scan_slow: float = 1.0, p2_slow: float = 1.0, blocks: int = 8, start="A"):
    """F1 and F2 (scan, select, update), block effects of 5%; the scan `scan_slow` times
    slower at every P, and every query at P = 2 `p2_slow` times slower."""
    times = {}
    effects = np.exp(rng.normal(0, 0.05, blocks))
    for P in (1, 2):
        for q, base in (("scan", 1.0), ("select", 0.8), ("update", 0.2)):
            t = base / P * (scan_slow if q == "scan" else 1.0) * (p2_slow if P == 2 else 1.0)
            times[("F", P, q)] = [float(t * e * np.exp(rng.normal(0, 0.01))) for e in effects]
    run = run_from_times(times)
    return in_blocks(
        dataclasses.replace(run, started_utc=f"2025-01-01T00:00:{ord(start) - 65:02d}Z")
    )


def test_whole_curve_geomean_and_ratio_of_speedups_on_blocks():
    from wisconsin.analysis.significance import welch

    rng = np.random.default_rng(3)
    c = compare_runs(_curve_run(rng), _curve_run(rng, p2_slow=1.25, start="B"))
    by = {r.label: r for r in c.curves}
    assert set(by) == {"F scan", "F select", "F update", "F1", "F2"}
    # every query of F2 25% slower: that table's curve is, F1's is not
    assert by["F2"].significant and 1.15 < by["F2"].time_ratio.value < 1.35
    assert not by["F1"].significant
    assert by["F1"].points == 3 and by["F2"].blocks_a == 8
    # each query's curve over P = 1, 2: the geometric mean of 1 and 1.25
    assert 1.05 < by["F scan"].time_ratio.value < 1.2 and by["F scan"].points == 2
    # B's speedup at P = 2 is 1/1.25 of A's, for each query, and its interval says so
    spd = {r.query: r for r in c.speedup_ratios}
    assert set(spd) == {"scan", "select", "update"}
    for r in spd.values():
        assert r.ratio.lo < 0.8 < r.ratio.hi and r.ratio.hi < 1 and r.p_value < 0.01
    text = render_comparison(c, "text")
    assert "Whole curves" in text and "Ratio of speedups" in text
    data = json.loads(render_comparison(c, "json"))
    assert {r["label"] for r in data["curves"]} == set(by)
    # welch: identical values give no difference; the ratio is exp of the mean log difference
    r, p = welch([0.0, 0.0], [0.0, 0.0])
    assert r.value == 1.0 and p == 1.0
    r, _ = welch([0.0, 0.1], [np.log(2), np.log(2) + 0.1])
    assert abs(r.value - 2.0) < 1e-9


def test_identical_curves_are_not_called_different():
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(100):
        c = compare_runs(_curve_run(rng), _curve_run(rng, start="B"))
        hits += any(r.significant for r in c.curves)
    assert hits <= 8, hits


def test_a_larger_table_at_every_p_is_one_slower_curve_under_one_family():
    """The scan 25% slower at P = 1 and 2 with block effects of 5% each side: the points
    alone may miss it, the scan's curve (both P pooled) finds it; points and curves are
    adjusted as one family."""
    rng = np.random.default_rng(5)
    found_point = found_curve = 0
    for _ in range(20):
        c = compare_runs(_curve_run(rng), _curve_run(rng, scan_slow=1.25, start="B"))
        found_point += any(r.significant for r in c.rows if r.query == "scan")
        found_curve += next(x for x in c.curves if x.label == "F scan").significant
        assert len({r.p_holm for r in c.rows} | {x.p_holm for x in c.curves}) > 1
    assert found_curve >= found_point and found_curve >= 18, (found_point, found_curve)


def test_one_block_a_side_gives_no_curve_rows(ab):
    c = compare_runs(*ab)
    assert c.curves == () and c.speedup_ratios == ()


def test_separate_runs_allow_for_their_run_to_run_shift_an_ab_file_does_not():
    from wisconsin.analysis.significance import RUN_TO_RUN_LOG_SD, run_to_run_var

    sd2 = RUN_TO_RUN_LOG_SD**2
    assert run_to_run_var(1, 1, paired=False) == pytest.approx(2 * sd2)
    assert run_to_run_var(2, 3, paired=False) == pytest.approx(sd2 * (1 / 2 + 1 / 3))
    assert run_to_run_var(1, 1, paired=True) == 0.0
    # B's whole level 6% higher, tight blocks (1% spread), 15 blocks a side: the blocks
    # alone call it (paired, as an A/B file's alternated blocks are); as two separate runs
    # it is within what one run differs from the next (the A/A pair of 2026-11-26, 7.6%)
    rng = np.random.default_rng(3)
    a = _block_run(rng, blocks=15, spread=0.01)
    b = _slower_level(_block_run(rng, slow=1.0, blocks=15, spread=0.01, start="B"), 1.06)
    assert compare_runs(a, b, paired=True).verdict == "B slower"
    separate = compare_runs(a, b)
    assert separate.verdict == "cannot tell apart"
    assert "may also shift by 3% (SD) from one run to the next" in render_comparison(separate)
    # 30% slower is found all the same
    slower = _block_run(np.random.default_rng(4), slow=1.3, blocks=15, spread=0.01, start="B")
    assert compare_runs(a, slower).verdict == "B slower"


def test_welch_without_extra_variance_is_scipys_welch():
    from scipy import stats as sps

    from wisconsin.analysis.significance import welch

    rng = np.random.default_rng(5)
    la, lb = rng.normal(0, 0.1, 7), rng.normal(0.05, 0.2, 11)
    ratio, p = welch(la, lb)
    assert p == pytest.approx(sps.ttest_ind(lb, la, equal_var=False).pvalue, rel=1e-9)
    wider, p2 = welch(la, lb, extra_var=0.01)
    assert p2 > p and wider.lo < ratio.lo and wider.hi > ratio.hi
    assert wider.value == pytest.approx(ratio.value)


def test_welch_with_identical_blocks_and_with_only_run_to_run_variance():
    from scipy import stats as sps

    from wisconsin.analysis.significance import welch

    shifted, p = welch([0.0] * 3, [0.1] * 3)  # no spread: a shift is certain, no width
    assert p == 0.0 and shifted.lo == shifted.hi == pytest.approx(np.exp(0.1))
    # the blocks identical, the run-to-run variance only: df falls back to 3 + 3 - 2
    # (0.5: exact in binary, so both variances are exactly 0)
    r, p = welch([0.0] * 3, [0.5] * 3, extra_var=0.01)
    half = sps.t.ppf(0.975, 4) * 0.1
    assert (r.lo, r.hi) == pytest.approx((np.exp(0.5 - half), np.exp(0.5 + half)))
    assert p == pytest.approx(2 * sps.t.sf(5.0, 4))


def test_two_blocks_a_side_are_enough_for_curves_and_ratios_of_speedups():
    rng = np.random.default_rng(7)
    c = compare_runs(_block_run(rng, blocks=2), _block_run(rng, blocks=2, start="B"))
    by = {r.label: r for r in c.curves}
    assert {"F scan", "F update", "F2", "F4"} <= set(by)
    assert by["F2"].table == "F2" and by["F2"].query == "" and by["F scan"].table == ""
    assert by["F scan"].blocks_a == by["F scan"].blocks_b == 2
    assert {(r.query, r.P, r.blocks_a, r.blocks_b) for r in c.speedup_ratios} == {
        ("scan", 4, 2, 2),
        ("update", 4, 2, 2),
    }
    # a block missing at P0 on one side is left out of that side's ratios, not paired wrong
    a = _block_run(rng, blocks=3)
    b = _block_run(rng, blocks=3, start="B")
    b = dataclasses.replace(
        b,
        measurements=tuple(
            m
            if m.partitions != 2 or m.query != "scan"
            else dataclasses.replace(m, repetitions=tuple(r for r in m.repetitions if r.round != 1))
            for m in b.measurements
        ),
    )
    scan = next(r for r in compare_runs(a, b).speedup_ratios if r.query == "scan")
    assert (scan.blocks_a, scan.blocks_b) == (3, 2)


def test_rows_follow_the_papers_query_order_and_say_their_blocks(ab):
    from wisconsin.workloads.wisconsin import compare as cmp

    c = compare_runs(*ab)
    assert {(r.blocks_a, r.blocks_b) for r in c.rows} == {(1, 1)}  # no blocks: one each
    times = {("F", P, q): [1.0 / P] * 4 for P in (1, 2) for q in ("average", "scan")}
    c = compare_runs(run_from_times(times), run_from_times(times))
    assert [r.query for r in c.rows if r.P == 2] == ["scan", "average"]  # not alphabetical
    # a zero-width interval says nothing about what could have been detected
    rng = np.random.default_rng(7)
    row = compare_runs(_block_run(rng, blocks=3), _block_run(rng, blocks=3, start="B")).rows[0]
    assert cmp._detectable(row, 0.05) > 1.0
    flat = dataclasses.replace(row, time_ratio=dataclasses.replace(row.time_ratio, lo=1.1, hi=1.1))
    assert cmp._detectable(flat, 0.05) is None


# What a person reads, pinned word for word (WISCONSIN_REGEN_GOLDEN=1 rewrites the files,
# only after an intended change): headers, labels, verdict words, notes and footers.
GOLDEN = Path(__file__).parent / "golden"


def _golden(name: str, text: str) -> None:
    """text against the golden file; JSON parsed, floats to 9 significant digits."""
    import os

    from test_mainline_golden import _rounded

    if os.environ.get("WISCONSIN_REGEN_GOLDEN") == "1":
        (GOLDEN / name).write_text(text)
    want = (GOLDEN / name).read_text()
    if name.endswith(".json"):
        assert _rounded(json.loads(text)) == _rounded(json.loads(want))
    else:
        assert text == want


def _slower_level(run, factor: float):
    """run with every repetition `factor` times slower (B's whole level shifted)."""
    return dataclasses.replace(
        run,
        measurements=tuple(
            dataclasses.replace(
                m,
                repetitions=tuple(
                    dataclasses.replace(r, wall_s=r.wall_s * factor) for r in m.repetitions
                ),
            )
            for m in run.measurements
        ),
    )


def test_the_comparison_reads_as_pinned(ab):
    rng = np.random.default_rng(4)
    a = _block_run(rng, blocks=6, spread=0.01)
    b = _block_run(rng, slow=1.3, blocks=6, spread=0.01, start="B")
    slower = compare_runs(a, b)
    assert slower.verdict == "B slower" and compare_runs(b, a).verdict == "B faster"
    _golden("compare_blocks.txt", render_comparison(slower))
    _golden("compare_blocks.json", render_comparison(slower, "json"))
    _golden("compare_one_block.txt", render_comparison(compare_runs(*ab)))
    _golden("compare_one_block.json", render_comparison(compare_runs(*ab), "json"))
    other = dataclasses.replace(b, tables=b.tables[:1])
    assert "tables differ: only in A ['F4'], only in B -" in differences_text(a, other)


def differences_text(a, b) -> str:
    from wisconsin.workloads.wisconsin.compare import differences

    return "\n".join(differences(a, b))


def test_an_ab_files_alternated_blocks_gate_a_shift_separate_runs_cannot(tmp_path):
    """An A/B file's blocks alternate, so no run-to-run shift is allowed for: a tight 6%
    slowdown fails --fail-slower 1.05 read from the A/B file, not from two separate runs."""
    from wisconsin.runfiles import abfile
    from wisconsin.workloads.wisconsin.compare import (
        ab_slower_than,
        compare_ab_file,
        slower_than,
    )

    rng = np.random.default_rng(3)
    a = _block_run(rng, blocks=15, spread=0.01)
    b = _slower_level(_block_run(rng, blocks=15, spread=0.01, start="B"), 1.06)
    ab_path = abfile.save(
        abfile.ABRun("2025-01-01T00:00:00Z", "2025-01-01T01:00:00Z", "", "--x", ("A", "B"),
                     (a,), (b,), "1 block a side"),
        tmp_path / "x-ab.json",
    )  # fmt: skip
    gate = ab_slower_than(ab_path, 1.05)
    assert gate.startswith(
        "4 point(s) and 4 whole curve(s) of B slower than A by more than 1.05x"
    ), gate
    save(a, tmp_path / "a.json")
    save(b, tmp_path / "b.json")
    assert slower_than([tmp_path / "a.json"], [tmp_path / "b.json"], 1.05) == ""
    assert "Verdict: B slower" in compare_ab_file(ab_path)
    bad = json.loads(ab_path.read_text())
    bad["ab_version"] = 9
    (tmp_path / "bad-ab.json").write_text(json.dumps(bad))
    with pytest.raises(WisconsinError, match="A/B file version 9 is not supported"):
        compare_ab_file(tmp_path / "bad-ab.json")


def test_unequal_pools_of_one_block_runs_are_compared_pooled(ab):
    """Two A runs against one B run, one block each: each side's repetitions are pooled
    into one sample (the ratio pairs runs only when both sides have as many); a B pool
    of two configurations is refused by its side's name."""
    a, b = ab
    a2 = dataclasses.replace(a, started_utc="2025-01-03T00:00:00Z")
    c = compare_runs([a, a2], b)
    assert c.a == (
        "2 runs pooled (2025-01-01T00:00:00Z, 2025-01-03T00:00:00Z), shared-nothing on "
        "fixture-host, DuckDB 2.0.0, 5 reps"
    )
    upd = [r for r in c.rows if r.query == "update"]
    assert upd and all(r.reps_a == 2 * r.reps_b for r in upd)
    assert all(r.time_ratio.lo < r.time_ratio.value < r.time_ratio.hi for r in upd)
    assert all(r.time_ratio.value == pytest.approx(1.3, abs=0.03) for r in upd)
    other = dataclasses.replace(b, config=dataclasses.replace(b.config, seed=b.config.seed + 1))
    with pytest.raises(WisconsinError, match="the runs pooled as B are not of one configuration"):
        compare_runs(a, [b, other])


def test_runs_with_no_query_in_common_compare_to_nothing_without_a_crash():
    """Same tables, no common query (A timed the scan, B the update): no point and no
    curve (a per-table curve over no query must not intersect an empty list)."""
    rng = np.random.default_rng(6)
    a, b = _block_run(rng), _block_run(rng, start="B")

    def only(run, query):
        return dataclasses.replace(
            run, measurements=tuple(m for m in run.measurements if m.query == query)
        )

    c = compare_runs(only(a, "scan"), only(b, "update"), force=True)
    assert (c.rows, c.curves, c.verdict) == ((), (), "cannot tell apart")


# --- pinned by mutation testing (issue 30)


def test_file_level_compare_and_gate_refuse_other_data_unless_forced(tmp_path):
    from wisconsin.workloads.wisconsin.compare import slower_than

    save(make_run(reps=2), tmp_path / "a.json")
    save(make_run(seed=7, reps=2), tmp_path / "b.json")
    for call in (
        lambda: compare_files(tmp_path / "a.json", tmp_path / "b.json"),
        lambda: slower_than([tmp_path / "a.json"], [tmp_path / "b.json"], 1.05),
    ):
        with pytest.raises(WisconsinError, match="seed differs"):
            call()
    assert "FORCED" in compare_files(tmp_path / "a.json", tmp_path / "b.json", force=True)
    assert slower_than([tmp_path / "a.json"], [tmp_path / "b.json"], 1.05, force=True) == ""
    text = compare_files(tmp_path / "a.json", tmp_path / "a.json")
    assert text == render_comparison(compare_runs(*(load(tmp_path / "a.json"),) * 2))


def test_verdict_words():
    from wisconsin.workloads.wisconsin.compare import _verdict_of

    assert _verdict_of(False, 2.0) == "cannot tell apart"
    assert _verdict_of(True, 1.2) == "B slower"
    assert _verdict_of(True, 0.8) == "B faster"


def test_the_gate_is_strictly_more_than_its_factor_and_names_the_interval(tmp_path):
    from wisconsin.reports.document import interval_text
    from wisconsin.workloads.wisconsin.compare import _slower

    rng = np.random.default_rng(3)
    a = _block_run(rng, blocks=15, spread=0.01)
    b = _slower_level(_block_run(rng, blocks=15, spread=0.01, start="B"), 1.06)
    c = compare_runs(a, b, force=True, paired=True)
    bad = [r for r in c.rows if r.significant]
    curves = [r for r in c.curves if r.significant]
    worst = max(bad, key=lambda r: r.time_ratio.value)
    wc = max(curves, key=lambda r: r.time_ratio.value)
    w = worst.time_ratio
    assert _slower(c, 1.05) == (
        f"{len(bad)} point(s) and {len(curves)} whole curve(s) of B slower than A by more than "
        f"1.05x, significant after Holm's correction; worst {worst.table} {worst.query}: "
        f"{interval_text(w.value, w.lo, w.hi)}; worst curve {wc.label}: "
        f"{interval_text(wc.time_ratio.value, wc.time_ratio.lo, wc.time_ratio.hi)}"
    )
    assert _slower(c, w.value) == ""  # B slower by exactly the factor is not more than it
    # no point alone significant, one whole curve is: the verdict says "B slower", so does
    # the gate (it counted points only)
    only_curve = dataclasses.replace(
        c, rows=tuple(dataclasses.replace(r, significant=False) for r in c.rows)
    )
    assert _slower(only_curve, 1.05).startswith(f"{len(curves)} whole curve(s) of B slower")


def test_an_ab_file_reads_as_pinned(tmp_path):
    from wisconsin.runfiles import abfile
    from wisconsin.workloads.wisconsin.compare import compare_ab_file

    rng = np.random.default_rng(5)
    a = _block_run(rng, blocks=4, spread=0.01)
    b = _slower_level(_block_run(rng, blocks=4, spread=0.01, start="B"), 1.2)
    path = abfile.save(
        abfile.ABRun("2025-01-01T00:00:00Z", "2025-01-01T01:00:00Z", "", "--x", ("A", "B"),
                     (a,), (b,), "4 blocks a side"),
        tmp_path / "x-ab.json",
    )  # fmt: skip
    _golden("compare_ab_file.txt", compare_ab_file(path))


# --- pinned by mutation testing: compare and compare_curves survivors


def _row(**kw):
    """A comparison row built by hand (the renderer's input, no run measured)."""
    from wisconsin.analysis.metrics import Ratio
    from wisconsin.workloads.wisconsin.compare import Row

    base = dict(
        query="scan",
        kind="F",
        table="F2",
        P=2,
        reps_a=5,
        reps_b=5,
        time_a=1.0,
        time_b=1.0,
        time_ratio=Ratio(1.0, 0.9, 1.1, False),
        ratio_a=Ratio(1.0, None, None, False),
        ratio_b=Ratio(1.0, None, None, False),
        p_value=0.5,
        significant=False,
        p_holm=1.0,
    )
    return Row(**{**base, **kw})


def test_a_hand_built_comparison_reads_word_for_word():
    """Every part of the text from a Comparison built by hand: a point of 2 blocks a side
    counts as tested on blocks; the slowdown note names the median and the range of the
    points' detectable ratios; a point of one block a side (5 vs 3 repetitions: C(8, 3) =
    56 splits, so p can reach 2/56 < 0.05) needs no note about too few repetitions, nor
    does a point on blocks with 2 repetitions a side; a query without a label keeps its
    name; a missing speedup is '-'."""
    from wisconsin.analysis.curves import CurveRow, RatioOfRatios
    from wisconsin.analysis.metrics import Ratio
    from wisconsin.workloads.wisconsin.compare import Comparison

    rows = (
        _row(reps_a=2, reps_b=2, time_b=1.5, time_ratio=Ratio(1.5, 1.4, 1.6, False),
             p_value=0.001, p_holm=0.004, significant=True, blocks_a=2, blocks_b=2,
             detectable=1.05),
        _row(table="F4", P=4, time_a=0.5, time_b=0.5, ratio_a=Ratio(2.0, 1.9, 2.1, False),
             ratio_b=Ratio(2.0, 1.8, 2.2, False), blocks_a=3, blocks_b=3, detectable=1.2),
        _row(query="update", time_a=0.25, time_b=0.25, blocks_a=4, blocks_b=4,
             detectable=1.1),
        _row(query="custom", reps_b=3, time_b=0.8, time_ratio=Ratio(0.8, 0.7, 0.9, False),
             ratio_a=None, ratio_b=None, p_value=0.036, p_holm=0.108),
    )  # fmt: skip
    curve = CurveRow("F scan", "F", "scan", "", points=2, blocks_a=3, blocks_b=3,
                     time_ratio=Ratio(1.2, 1.1, 1.3, False), p_value=0.01, p_holm=0.04,
                     significant=True)  # fmt: skip
    c = Comparison(
        a="run A",
        b="run B",
        differences=(),
        rows=rows,
        context=("host: x in A, y in B",),
        verdict="B slower",
        geomean=Ratio(1.2**0.25, None, None, False),
        curves=(curve,),
        speedup_ratios=(
            RatioOfRatios("scan", "F4", 4, Ratio(1.0, 0.9, 1.1, False), 0.9, 3, 3),
            RatioOfRatios("custom", "F4", 4, Ratio(0.5, 0.4, 0.6, False), 0.02, 3, 3),
        ),
    )
    _golden("compare_by_hand.txt", render_comparison(c))


def _notes(rows, paired=False, verdict="B slower") -> list[str]:
    """The paragraphs of a hand-built comparison's text after its points table."""
    from wisconsin.workloads.wisconsin.compare import Comparison

    c = Comparison("run A", "run B", (), tuple(rows), verdict=verdict, paired=paired)
    text = render_comparison(c)
    return text[text.index("T: median seconds") :].splitlines()[1:]


def test_the_notes_on_blocks_and_repetitions():
    from wisconsin.analysis.metrics import Ratio

    # points on blocks whose intervals have no width: no detectable slowdown to name
    flat = Ratio(1.0, 1.0, 1.0, False)
    assert _notes([_row(blocks_a=3, blocks_b=3, time_ratio=flat)], paired=True) == [
        "1 points are tested on blocks (Welch t on the blocks' log median times; T_B/T_A's "
        "95% interval likewise), so run-to-run variation is in the test; A and B alternated "
        "block by block in one session (an A/B file)."
    ]
    # 1 vs 39 repetitions: the most extreme of C(40, 1) = 40 splits gives p = 2/40 = 0.05,
    # which is not below 0.05
    notes = _notes([_row(reps_a=1, reps_b=39)])
    assert notes[-1] == (
        "Some rows have too few repetitions for any split to reach p < 0.05: add "
        "repetitions to detect a difference there."
    )
    assert len(notes) == 2 and notes[0].startswith("1 points have one block on a side")
    # 2 vs 40: 2/41 < 0.05
    assert len(_notes([_row(reps_a=2, reps_b=40)])) == 1


def test_a_detectable_slowdown_past_10x_says_the_blocks_are_too_few():
    """2 blocks a side at Holm's level once printed 'about 1784397320.19x': a figure past
    10x is named as too few blocks; at 10x it is still a figure; a range past 10x ends in
    'more than 10x'."""
    from wisconsin.analysis.metrics import Ratio

    r = Ratio(1.0, 0.5, 2.0, False)

    def last(*detect):
        rows = [_row(blocks_a=2, blocks_b=3, time_ratio=r, detectable=d) for d in detect]
        return _notes(rows)[0]

    assert last(1784397320.19).endswith(
        "; with 2 blocks on a side these points cannot show a slowdown smaller than 10x "
        "(median over points): give each run more blocks (--blocks) for a test that can."
    )
    assert last(10.0).endswith("is about 10.00x (median over points, 10.00x-10.00x).")
    assert last(1.5, 2.0, 11.0).endswith("about 2.00x (median over points, 1.50x-more than 10x).")


def test_no_common_point_reads_without_a_geometric_mean():
    from wisconsin.workloads.wisconsin.compare import Comparison

    c = Comparison("run A", "run B", (), (), verdict="cannot tell apart", paired=True)
    lines = render_comparison(c).splitlines()
    assert lines[4] == (
        "Verdict: cannot tell apart (0 of 0 points and 0 of 0 curves differ after Holm's "
        "correction)"
    )


def test_the_overall_verdict_from_significant_points_and_curves():
    """A significant point at exactly T_B/T_A = 1 is neither slower nor faster; a slower
    and a faster one together are mixed."""
    from types import SimpleNamespace as NS

    from wisconsin.analysis.metrics import Ratio
    from wisconsin.workloads.wisconsin.compare import overall_verdict

    def pt(value, significant=True):
        return NS(significant=significant, time_ratio=Ratio(value, None, None, False))

    assert overall_verdict([pt(1.2), pt(0.8)]) == "mixed"
    assert overall_verdict([pt(1.2), pt(1.0)]) == "B slower"
    assert overall_verdict([pt(0.8), pt(1.0)]) == "B faster"
    assert overall_verdict([pt(1.2, False), pt(0.8, False)]) == "cannot tell apart"


def test_context_names_every_setting_that_differs():
    from wisconsin.workloads.wisconsin.compare import context_differences

    a = make_run(reps=2)
    a = dataclasses.replace(a, config=dataclasses.replace(a.config, cache="warm"))
    b = dataclasses.replace(
        a,
        environment=dataclasses.replace(
            a.environment, tool_version="0.2.0", git_commit="1111111", hostname="other"
        ),
        config=dataclasses.replace(
            a.config, mode="shared-memory", threads_per_worker=4, cache="cold",
            scan_variant="other-scan",
        ),
    )  # fmt: skip
    assert context_differences(a, b) == [
        "tool version: 0.1.0 in A, 0.2.0 in B",
        "git commit: 0000000fixture in A, 1111111 in B",
        "host: fixture-host in A, other in B",
        "mode: shared-nothing in A, shared-memory in B",
        "threads per worker: 1 in A, 4 in B",
        "cache: warm in A, cold in B",
        "scan variant: full-row in A, other-scan in B",
    ]


def test_detectable_on_two_blocks_a_side_by_the_cauchy_quantiles():
    """Two blocks a side: df = 1, where Student's t is Cauchy, t.ppf(q) = tan(pi (q - 1/2)).
    At level 0.05 the detectable ratio is the interval's geometric half-width sqrt(hi/lo);
    at 0.05/4 (a family of 4) it is that half-width scaled by tan(0.49375 pi)/tan(0.475 pi).
    An interval without a bound gives none."""
    import math

    from wisconsin.analysis.metrics import Ratio
    from wisconsin.workloads.wisconsin.compare import _detectable

    row = _row(time_ratio=Ratio(1.1, 1.0, 1.21, False), blocks_a=2, blocks_b=2)
    assert _detectable(row, 0.05) == pytest.approx(1.1, rel=1e-9)
    scale = math.tan(math.pi * 0.49375) / math.tan(math.pi * 0.475)
    assert _detectable(row, 0.05 / 4) == pytest.approx(math.exp(math.log(1.1) * scale))
    for lo, hi in ((None, 1.21), (1.0, None), (0.0, 1.21)):
        bare = dataclasses.replace(row, time_ratio=Ratio(1.1, lo, hi, False))
        assert _detectable(bare, 0.05) is None


def test_a_tight_threefold_slowdown_is_not_wide():
    """'wide': an interval wider than 10% of its value. B 3x slower with tight blocks: the
    point's interval and its curve's (about 3 +- 2%) are narrow."""
    from wisconsin.analysis.significance import welch

    rng = np.random.default_rng(4)
    a = _block_run(rng, blocks=6, spread=0.01)
    b = _slower_level(_block_run(rng, blocks=6, spread=0.01, start="B"), 3.0)
    c = compare_runs(a, b, paired=True)
    for r in (*c.rows, *c.curves):
        t = r.time_ratio
        assert 2.8 < t.value < 3.2 and t.hi - t.lo < 0.2 and not t.wide, r
    r, _ = welch([0.0, 0.01, 0.02], [np.log(3), np.log(3) + 0.01, np.log(3) + 0.03])
    assert r.value == pytest.approx(3 * np.exp(0.01 / 3)) and not r.wide


def test_welch_with_equal_spreads_on_both_sides_is_scipys_welch():
    from scipy import stats as sps

    from wisconsin.analysis.significance import welch

    la, lb = [0.0, 0.2, 0.4], [0.1, 0.3, 0.5]  # same variance, B 0.1 higher
    r, p = welch(la, lb)
    assert p == pytest.approx(sps.ttest_ind(lb, la, equal_var=False).pvalue, rel=1e-9)
    assert 0.5 < p < 1 and r.lo < 1 < r.hi


def test_block_logs_skip_a_run_without_the_point_and_go_on():
    """Three runs of one side, the middle one without F2's scan: the blocks of the first
    and the third, keyed by run index, each its log time (one repetition a block)."""
    from wisconsin.analysis.curves import block_logs

    rng = np.random.default_rng(2)
    first, third = _block_run(rng, blocks=2), _block_run(rng, blocks=2)
    middle = dataclasses.replace(
        first,
        measurements=tuple(m for m in first.measurements if (m.table, m.query) != ("F2", "scan")),
    )
    got = block_logs([first, middle, third], "F2", "scan")
    want = {
        (i, k + 1): np.log(rep.wall_s)
        for i, run in ((0, first), (2, third))
        for k, rep in enumerate(run.measurement("F2", "scan").repetitions)
    }
    assert got == pytest.approx(want) and set(got) == {(0, 1), (0, 2), (2, 1), (2, 2)}


def test_no_curve_when_only_one_side_has_blocks():
    rng = np.random.default_rng(8)
    a = _block_run(rng, blocks=3)
    b = dataclasses.replace(_block_run(rng, blocks=3, start="B"), rounds=())  # one block
    c = compare_runs(a, b)
    assert {(r.blocks_a, r.blocks_b) for r in c.rows} == {(3, 1)}
    assert c.curves == () and c.speedup_ratios == ()


def test_curves_of_a_kind_measured_at_one_p_only():
    """One table (F2) of two queries in blocks: a curve per query over its one point and
    one for the table; no ratio of speedups (no P above P0)."""
    rng = np.random.default_rng(9)

    def run(start):
        t = {("F", 2, q): list(np.exp(rng.normal(0, 0.05, 3))) for q in ("scan", "update")}
        return in_blocks(dataclasses.replace(run_from_times(t), started_utc=start))

    c = compare_runs(run("2025-01-01T00:00:00Z"), run("2025-01-01T01:00:00Z"))
    assert [(r.label, r.points, r.blocks_a, r.blocks_b) for r in c.curves] == [
        ("F scan", 1, 3, 3),
        ("F update", 1, 3, 3),
        ("F2", 2, 3, 3),
    ]
    assert c.speedup_ratios == ()


def test_a_query_the_paper_does_not_name_sorts_after_its_five():
    times = {("F", P, q): [1.0 / P] * 3 for P in (1, 2) for q in ("zz-custom", "join", "scan")}
    c = compare_runs(run_from_times(times), run_from_times(times))
    assert [(r.query, r.P) for r in c.rows] == [
        ("scan", 1),
        ("scan", 2),
        ("join", 1),
        ("join", 2),
        ("zz-custom", 1),
        ("zz-custom", 2),
    ]


def test_an_ab_files_sides_are_compared_as_if_forced(tmp_path):
    """An A/B file's sides may differ by design (here the seed): compare and its gate read
    it without --force and name the difference."""
    from wisconsin.runfiles import abfile
    from wisconsin.workloads.wisconsin.compare import ab_slower_than, compare_ab_file

    rng = np.random.default_rng(5)
    a = _block_run(rng, blocks=3, spread=0.01)
    b = _block_run(rng, blocks=3, spread=0.01, start="B")
    b = dataclasses.replace(b, config=dataclasses.replace(b.config, seed=7))
    path = abfile.save(
        abfile.ABRun("2025-01-01T00:00:00Z", "2025-01-01T01:00:00Z", "", "--x", ("A", "B"),
                     (a,), (b,), "3 blocks a side"),
        tmp_path / "x-ab.json",
    )  # fmt: skip
    assert re.search(r"FORCED: +seed differs: 42 in A, 7 in B", compare_ab_file(path))
    assert ab_slower_than(path, 10.0) == ""


def test_a_significant_point_at_a_ratio_of_exactly_one_is_neither_slower_nor_faster():
    from wisconsin.workloads.wisconsin.compare import _verdict_of

    assert _verdict_of(True, 1.0) == "cannot tell apart"  # as overall_verdict counts it
    assert (_verdict_of(True, 1.01), _verdict_of(True, 0.99)) == ("B slower", "B faster")
    assert _verdict_of(False, 2.0) == "cannot tell apart"


def test_a_pool_of_two_configurations_is_refused_word_for_word(ab):
    a, b = ab
    other_a = dataclasses.replace(a, config=dataclasses.replace(a.config, seed=a.config.seed + 1))
    msg = (
        "the runs pooled as {} are not of one configuration (machine, mode, tables, seed, "
        "cache): compare them one at a time"
    )
    for pools, side in ((([a, other_a], b), "A"), ((a, [b, other_a]), "B")):
        with pytest.raises(WisconsinError) as err:
            compare_runs(*pools)
        assert str(err.value) == msg.format(side)


def test_differences_name_a_table_only_in_b_and_a_table_seed():
    a, b = load(FIX / "run_a.json"), load(FIX / "run_b.json")
    fewer = dataclasses.replace(a, tables=a.tables[:1])
    only_b = sorted(t.name for t in b.tables if t.name != a.tables[0].name)
    assert f"tables differ: only in A -, only in B {only_b}" in differences_text(fewer, b)
    first = b.tables[0]
    reseeded = dataclasses.replace(
        b, tables=(dataclasses.replace(first, seed=first.seed + 7), *b.tables[1:])
    )
    assert (
        f"table {first.name} seed differs: {first.seed} in A, {first.seed + 7} in B"
        in differences_text(a, reseeded)
    )


def test_a_ratio_of_speedups_skips_a_query_it_cannot_judge_and_goes_on():
    """At P = 2 the scan (sorted first) is missing from B, or measured in one block only:
    no ratio for it, and the update's ratio still comes."""
    from wisconsin.analysis.curves import ratio_of_ratios

    rng = np.random.default_rng(11)

    def run(drop=None, one=None):
        t = {
            ("F", P, q): list(np.exp(rng.normal(-P / 2, 0.05, 3)))
            for P in (1, 2)
            for q in ("scan", "update")
        }
        t.pop(drop, None)
        if one:
            t[one] = t[one][:1]
        return in_blocks(run_from_times(t))

    a = run()
    for b in (run(drop=("F", 2, "scan")), run(one=("F", 2, "scan"))):
        got = ratio_of_ratios([a], [b])
        assert [(r.query, r.table, r.P) for r in got] == [("update", "F2", 2)]


def test_runs_not_comparable_name_every_difference_in_one_line(ab):
    from wisconsin.workloads.wisconsin.compare import differences

    a, b = ab
    other = dataclasses.replace(
        b, config=dataclasses.replace(b.config, seed=b.config.seed + 1), tables=b.tables[:1]
    )
    diffs = differences(a, other)
    assert len(diffs) >= 2
    with pytest.raises(WisconsinError) as err:
        compare_runs(a, other)
    assert str(err.value) == (
        "runs are not comparable: " + "; ".join(diffs) + " (use --force to compare anyway)"
    )


def test_a_point_one_side_lacks_is_left_out_and_the_rest_compared():
    rng = np.random.default_rng(13)
    a, b = _block_run(rng), _block_run(rng, start="B")
    first = a.measurements[0]
    lacking = dataclasses.replace(
        b,
        measurements=tuple(
            m for m in b.measurements if (m.table, m.query) != (first.table, first.query)
        ),
    )
    got = {(r.table, r.query) for r in compare_runs(a, lacking).rows}
    assert got == {(m.table, m.query) for m in a.measurements} - {(first.table, first.query)}
    assert len(got) == 3


def test_two_blocks_a_side_take_the_block_test():
    """Two blocks is the fewest the block test takes (a Welch test on each side's block
    log medians); one block falls back to the repetitions' permutation test."""
    from wisconsin.analysis.significance import block_test, run_to_run_var

    rng = np.random.default_rng(14)
    a, b = _block_run(rng, blocks=2), _block_run(rng, blocks=2, start="B")
    rows = compare_runs(a, b).rows
    assert len(rows) == 4
    for r in rows:
        ma, mb = a.measurement(r.table, r.query), b.measurement(r.table, r.query)
        ba, bb = list(a.times_by_block(ma).values()), list(b.times_by_block(mb).values())
        assert (len(ba), len(bb), r.blocks_a, r.blocks_b) == (2, 2, 2, 2)
        ratio, p = block_test(ba, bb, ma.times, mb.times, run_to_run_var(1, 1, False))
        assert (r.time_ratio, r.p_value) == (ratio, p)
        assert p != permutation_p(ma.times, mb.times)


def test_a_point_whose_holm_p_is_exactly_alpha_is_not_significant():
    """One repetition against 39, the one the slowest: the permutation p is 2/40 = 0.05,
    exactly alpha, and Holm over one point leaves it there: not below alpha."""
    a = run_from_times({("F", 1, "scan"): [2.0]})
    b = run_from_times({("F", 1, "scan"): [1.0 + i / 100 for i in range(39)]})
    c = compare_runs(dataclasses.replace(a, started_utc="2025-01-01T00:00:00Z"), b)
    (row,) = c.rows
    assert (row.p_value, row.p_holm, row.significant) == (0.05, 0.05, False)
    assert c.curves == () and c.verdict == "cannot tell apart"


def test_a_point_of_a_kind_without_a_ratio_is_compared_on_its_times(ab):
    """A table kind other than F and G has no speedup or scaleup (metrics.series skips it):
    its rows still compare the times, with no ratio on either side."""

    def other_kind(run):
        ms = tuple(
            dataclasses.replace(m, kind="X") if m.table == "F2" else m for m in run.measurements
        )
        return dataclasses.replace(run, measurements=ms)

    c = compare_runs(*(other_kind(r) for r in ab))
    odd = [r for r in c.rows if r.table == "F2"]
    assert odd and all(r.ratio_a is None and r.ratio_b is None for r in odd)
    assert all(r.time_ratio.value > 0 for r in odd)
    assert "F2" in render_comparison(c, "text")  # a row without ratios still renders
    assert all(r.ratio_a is not None and r.ratio_b is not None for r in c.rows if r.table != "F2")
