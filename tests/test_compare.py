import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import make_run, make_run_v2, run_from_times  # noqa: E402

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


def _blocked(run, k: int = 1):
    """run with its repetitions in rounds 1.., k rounds per block (as a run in blocks)."""
    from wisconsin.runfiles import runfile as rf

    n = max(len(m.repetitions) for m in run.measurements)
    ms = tuple(
        dataclasses.replace(
            m,
            repetitions=tuple(
                dataclasses.replace(r, round=i + 1) for i, r in enumerate(m.repetitions)
            ),
        )
        for m in run.measurements
    )
    rounds = tuple(rf.Round(i, 0, (), "", (i - 1) // k + 1 if i else 1) for i in range(n + 1))
    cfg = dataclasses.replace(run.config, blocks=n // k, block_rounds=k)
    return dataclasses.replace(run, measurements=ms, rounds=rounds, config=cfg)


def _block_run(rng, slow: float = 1.0, blocks: int = 5, spread: float = 0.05, start="A"):
    """Two points (scan and update at P = 2, 4), each block's times shifted together by a
    block effect (run-to-run variation) of `spread`; the update `slow` times slower."""
    times = {}
    effects = np.exp(rng.normal(0, spread, blocks))
    for P in (2, 4):
        for q, base in (("scan", 1.0 / P), ("update", 0.2 / P * slow)):
            times[("F", P, q)] = [float(base * e * np.exp(rng.normal(0, 0.01))) for e in effects]
    run = run_from_times(times)
    return _blocked(dataclasses.replace(run, started_utc=f"2025-01-01T00:00:0{start}Z"))


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
    from wisconsin.workloads.wisconsin.compare import holm

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
    with pytest.raises(WisconsinError, match="unknown compare format"):
        compare_files(FIX / "run_a.json", FIX / "run_b.json", fmt="csv")


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
    assert res.exit_code == 1 and "gate: 2 point(s) of B slower than A by more than 1.2x" in (
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
    return _blocked(dataclasses.replace(run, started_utc=f"2025-01-01T00:00:0{start}Z"))


def test_whole_curve_geomean_and_ratio_of_speedups_on_blocks():
    from wisconsin.workloads.wisconsin.compare_curves import welch

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
    from wisconsin.workloads.wisconsin.compare import RUN_TO_RUN_LOG_SD, run_to_run_var

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

    from wisconsin.workloads.wisconsin.compare_curves import welch

    rng = np.random.default_rng(5)
    la, lb = rng.normal(0, 0.1, 7), rng.normal(0.05, 0.2, 11)
    ratio, p = welch(la, lb)
    assert p == pytest.approx(sps.ttest_ind(lb, la, equal_var=False).pvalue, rel=1e-9)
    wider, p2 = welch(la, lb, extra_var=0.01)
    assert p2 > p and wider.lo < ratio.lo and wider.hi > ratio.hi
    assert wider.value == pytest.approx(ratio.value)


def test_welch_with_identical_blocks_and_with_only_run_to_run_variance():
    from scipy import stats as sps

    from wisconsin.workloads.wisconsin.compare_curves import welch

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
    assert gate.startswith("4 point(s) of B slower than A by more than 1.05x"), gate
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
    worst = max(bad, key=lambda r: r.time_ratio.value)
    w = worst.time_ratio
    assert _slower(c, 1.05) == (
        f"{len(bad)} point(s) of B slower than A by more than 1.05x, significant after Holm's "
        f"correction; worst {worst.table} {worst.query}: {interval_text(w.value, w.lo, w.hi)}"
    )
    assert _slower(c, w.value) == ""  # B slower by exactly the factor is not more than it


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
