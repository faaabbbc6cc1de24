import re
from dataclasses import MISSING, fields, replace
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from wisconsin import WisconsinError
from wisconsin.cli import cli
from wisconsin.workloads.wisconsin.pipeline import plan_sizes


def _probe(dispatch_s, cold=1.5e6):
    return SimpleNamespace(
        cores=2,
        rows=200_000,
        table_bytes=93_000_000,  # ~465 bytes a row, both tables
        scan_rows_per_s=1e7,
        cold_scan_rows_per_s=cold,
        dispatch_s=dispatch_s,
    )


def test_sizes_make_the_scans_long_enough_when_the_budgets_allow():
    plan = plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=780)
    assert plan.partitions == (1, 2, 4, 8, 16)
    assert plan.f_rows == 2 * plan.g_rows  # F at P = cores holds what G holds per partition
    assert plan.min_scan_s >= 2 * plan.bound_s  # the safety factor is met
    assert plan.disk_bytes <= 10 * 2**30 and plan.predicted_s <= 780
    assert not any("do not allow" in n for n in plan.notes)


def test_g_tables_stop_at_the_cores_and_their_room_goes_to_larger_partitions():
    from wisconsin.workloads.wisconsin.pipeline import _table_bytes

    plan = plan_sizes(_probe(0.0018, cold=2.24e6), disk_budget=10**10, time_budget_s=720)
    assert plan.partitions == (1, 2, 4, 8, 16) and plan.g_partitions == (1, 2)
    assert plan.preset.g_partitions == (1, 2)
    disk = sum(_table_bytes(plan.f_rows, p) for p in plan.partitions)
    disk += sum(_table_bytes(plan.g_rows * p, p) for p in (1, 2))
    assert plan.disk_bytes == disk <= 10**10  # G4..G16 are neither built nor budgeted
    # the quickstart's probe (2026-11-25): 0.55 M rows a partition with G to 16, the cold
    # average 18x its overhead; G to the cores leaves room for ~3x the rows, past 20x
    assert plan.g_rows > 1_500_000
    assert not any(n.startswith("average") for n in plan.notes)
    one = plan_sizes(
        _probe(0.0018), disk_budget=10**10, time_budget_s=720, partitions=(4, 8)
    )  # no count within the cores: the smallest, so that there is a scaleup baseline
    assert one.g_partitions == (4,)


def test_budgets_that_cannot_fit_say_so_and_stay_within_them():
    plan = plan_sizes(_probe(0.085), disk_budget=2 * 2**30, time_budget_s=600)
    assert plan.disk_bytes <= 2 * 2**30 and plan.predicted_s <= 600
    assert plan.min_scan_s < plan.bound_s
    assert any("do not allow tables long enough" in n for n in plan.notes)
    assert any(n.startswith("average") for n in plan.notes)


def test_a_time_budget_below_the_rounds_of_the_smallest_tables_says_so():
    plan = plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=200)
    assert any("even the smallest tables need" in n and "8 rounds" in n for n in plan.notes)
    roomy = plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=780)
    assert not any("even the smallest" in n for n in roomy.notes)


def test_blocks_fresh_workers_are_in_the_predicted_time():
    few = plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=780, blocks=1)
    many = plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=780, blocks=10)
    assert many.g_rows < few.g_rows  # 9 more restarts of the workers leave less for rows


def test_bigger_budgets_give_bigger_tables():
    small = plan_sizes(_probe(0.02), disk_budget=2 * 2**30, time_budget_s=3000)
    big = plan_sizes(_probe(0.02), disk_budget=8 * 2**30, time_budget_s=3000)
    assert big.g_rows > 3 * small.g_rows


def test_resume_takes_its_options_from_the_file(tmp_path):
    r = CliRunner().invoke(cli, ["run", "--resume", str(tmp_path / "x.json"), "--cache", "warm"])
    assert r.exit_code == 2 and "--resume takes its options from the run file" in r.output
    r = CliRunner().invoke(cli, ["run", "--resume", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "no such run file" in r.output


def test_a_disk_budget_too_small_for_the_smallest_tables_is_refused_before_the_probe(tmp_path):
    r = CliRunner().invoke(
        cli,
        ["bench", "--disk-budget", "1KB", "--data", str(tmp_path / "d"), "--out", str(tmp_path)],
    )
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    (line,) = [x for x in r.output.splitlines() if x.strip()]
    assert line.startswith("Error: --disk-budget 1.0 KB is too small") and "--preset" in line
    assert not (tmp_path / "d").exists()  # not even the calibration probe's table


def test_plan_sizes_refuses_a_disk_budget_no_tables_fit():
    with pytest.raises(WisconsinError, match="--disk-budget .* is too small"):
        plan_sizes(_probe(0.002), disk_budget=1024, time_budget_s=780)


def test_the_probe_is_announced_before_it_writes(tmp_path, monkeypatch):
    from wisconsin.measure import calibrate

    seen = {}

    def probe(workdir, *a, **k):
        seen["exists"] = (tmp_path / "d").exists()
        raise WisconsinError("probe stopped here")

    monkeypatch.setattr(calibrate, "probe", probe)
    r = CliRunner().invoke(cli, ["bench", "--data", str(tmp_path / "d"), "--out", str(tmp_path)])
    assert r.exit_code == 2 and seen == {"exists": False}, r.output
    first, error = [x for x in r.output.splitlines() if x.strip()]
    assert first.startswith(f"calibrating this machine: probe tables go to {tmp_path / 'd/_probe'}")
    assert error == "Error: probe stopped here"


def test_the_last_line_says_where_the_disk_went_and_how_to_free_it(tmp_path):
    import re
    import shlex
    import subprocess

    from wisconsin.workloads.inventory import disk_line as _leftovers

    data, out = tmp_path / "data", tmp_path / "out"
    tables = [data / "F2", data / "G2"]
    for t in tables:  # what `wisconsin remove` takes for tables: a manifest, partitions
        t.mkdir(parents=True)
        (t / "part-000.duckdb").write_bytes(b"x" * 3_000_000)
        (t / "manifest.json").write_text("{}")
    (data / "_probe").mkdir()
    out.mkdir()
    run = out / "20261125T000000Z-h-shared-nothing.json"
    for name in (run.name, run.stem + ".report.txt", run.stem + "-overview.png"):
        (out / name).write_bytes(b"y" * 1_000_000)
    (out / "another-run.json").write_text("{}")
    line = _leftovers(data, tables, run, on_cluster=False)
    assert line.startswith(
        f"disk: tables 6.0 MB in {data}, run file, report and figures 3.0 MB in {out}"
    )
    # the data directory holds only this bench's tables: all of it goes, by `wisconsin
    # remove` (it removes only what it built); the run's files (results) by rm
    tables_cmd, files_cmd = re.findall(r"`([^`]*)`", line)
    assert tables_cmd == f"wisconsin remove {data}" and files_cmd == f"rm {out / run.stem}*"
    (data / "F4").mkdir()  # someone else's table: only ours are named
    tables_cmd, files_cmd = re.findall(r"`([^`]*)`", _leftovers(data, tables, run, False))
    assert tables_cmd == f"wisconsin remove {tables[0]} {tables[1]}"
    subprocess.run(files_cmd, shell=True, check=True)
    assert sorted(p.name for p in out.iterdir()) == ["another-run.json"]
    assert shlex.split(files_cmd)[0] == "rm"


def test_sizes_are_decimal_as_printed_and_the_build_line_leaves_the_disk_to_bench():
    import dataclasses

    from wisconsin.builds import cost
    from wisconsin.cli.bench import _bytes

    assert _bytes(None, None, "10GB") == 10 * 10**9 and _bytes(None, None, "1GiB") == 2**30
    assert cost.size(_bytes(None, None, "10GB")) == "10.0 GB"
    est = cost.Estimate(("F2",), 10, 2, 5 * 10**9, 1.0, 2**20, 1, 9 * 10**10, "/", 4 * 10**9)
    assert "4.0 GB of tables on disk" in cost.describe(est)
    said = cost.describe(est, disk=False)
    assert "GB of tables" not in said and said.startswith("cost: F2: 10 rows in 2 partitions, ~")
    assert dataclasses.replace(est, files_bytes=0).fits


def test_a_second_bench_reuses_the_tables_an_earlier_one_sized(tmp_path):
    """The probe sizes tables a few percent differently each time: a second `bench` on the
    same --data refused its own tables ("already holds another table"). It now reuses them
    when they are within 25% of what it would build; beyond that, or of another seed, it
    builds (and the build names what is in the way)."""
    import dataclasses

    from wisconsin.builds import build_tables
    from wisconsin.store import TableSpec
    from wisconsin.workloads.wisconsin.pipeline import earlier_sizes

    build_tables(
        tmp_path, [TableSpec("F", 2000, p, 7) for p in (1, 2)] + [TableSpec("G", 500, 1, 7)],
        jobs=1,
    )  # fmt: skip
    plan = dataclasses.replace(
        plan_sizes(_probe(0.002), disk_budget=10 * 2**30, time_budget_s=780),
        f_rows=2100, g_rows=520, partitions=(1, 2), g_partitions=(1, 2),
    )  # fmt: skip
    again = earlier_sizes(plan, 7, str(tmp_path))
    assert (again.f_rows, again.g_rows) == (2000, 500)  # G2 not built yet: built at 500
    assert again.partitions == plan.partitions and again.predicted_s == plan.predicted_s
    assert earlier_sizes(plan, 8, str(tmp_path)) is None  # another seed
    assert earlier_sizes(dataclasses.replace(plan, f_rows=2700), 7, str(tmp_path)) is None
    assert (
        earlier_sizes(dataclasses.replace(plan, f_rows=2000, g_rows=500), 7, str(tmp_path)) is None
    )
    assert earlier_sizes(plan, 7, str(tmp_path / "empty")) is None


def test_every_preset_builds_the_baseline_table_so_its_audit_can_pass(tmp_path, monkeypatch):
    """The runner times the single-thread baseline (and so has a bound) only where F1 is
    generated: a bench of any preset builds it, once, at the preset's F size."""
    from wisconsin.workloads.wisconsin import pipeline
    from wisconsin.workloads.wisconsin.presets import PRESETS

    for name, p in PRESETS.items():
        specs = pipeline.preset_specs(name, 7, ("F", "G"), p.partitions, baseline=True)
        f1 = [s for s in specs if (s.kind, s.partitions) == ("F", 1)]
        assert [(s.n, s.seed) for s in f1] == [(p.f_rows, 7)], name
    # a bench that measures G alone still builds F1 for its baseline, and only it besides
    built = []

    def build(data_dir, specs, **kw):
        built.extend(specs)
        raise WisconsinError("stop after the build's plan")

    monkeypatch.setattr(pipeline, "build_tables", build)
    from wisconsin.measure.options import RunOptions
    from wisconsin.workloads.wisconsin.queries import CATALOG

    opts = RunOptions(
        data_dir=str(tmp_path), kinds=("G",), partitions=(2, 4), out=str(tmp_path), catalog=CATALOG
    )
    with pytest.raises(WisconsinError, match="stop after"):
        pipeline.bench("laptop", str(tmp_path / "d"), 7, opts)
    assert sorted(s.name for s in built) == ["F1", "G2", "G4"]
    built.clear()
    with pytest.raises(WisconsinError, match="stop after"):
        pipeline.bench("laptop", str(tmp_path / "d"), 7, replace(opts, baseline=False))
    assert sorted(s.name for s in built) == ["G2", "G4"]


def test_a_preset_with_its_own_rounds_runs_them_unless_the_command_line_says(tmp_path):
    from wisconsin.workloads.wisconsin import commands
    from wisconsin.workloads.wisconsin.presets import get_preset

    tiny = get_preset("tiny")
    assert tiny.rounds and tiny.blocks

    def opts(given=(), **values):
        from wisconsin.workloads.options import BenchOptions

        base = {f.name: None for f in fields(BenchOptions) if f.default is MISSING}
        base |= {"workload": "wisconsin", "data_dir": str(tmp_path), "out": str(tmp_path)}
        base |= {"preset": "tiny", "min_reps": 15, "max_reps": 30, "blocks": 15, "seed": 1}
        return BenchOptions(**base | values, given=tuple((k, f"--{k}") for k in given))

    o = commands._rounds(opts())
    assert (o.min_reps, o.max_reps, o.blocks) == (tiny.rounds, tiny.rounds, tiny.blocks)
    o = commands._rounds(opts(min_reps=7, given=("min_reps",)))
    assert (o.min_reps, o.max_reps, o.blocks) == (7, 30, 15)
    o = commands._rounds(opts(preset="vlx"))  # no rounds of its own: the runner's defaults
    assert (o.min_reps, o.max_reps, o.blocks) == (15, 30, 15)
    # tiny's own rounds run without a warm-up round; rounds of the command line keep it
    assert tiny.warmup == 0 and commands._warmup(opts()) == 0
    assert commands._warmup(opts(min_reps=7, given=("min_reps",))) == 1
    assert commands._warmup(opts(preset="vlx")) == 1


def test_the_presets_that_should_pass_here_hold_enough_rows_at_two_partitions():
    from wisconsin.workloads.wisconsin.presets import AVERAGE_ROWS_MIN, PRESETS

    for name in ("tiny", "laptop"):
        p = PRESETS[name]
        g_parts = p.g_partitions or p.partitions
        assert max(g_parts) <= 2, name  # no G table beyond the cores of a 2-core machine
        small = [p.f_rows // n for n in (1, *p.partitions) if n <= 2]
        small += [p.g_rows_per_partition] if min(g_parts) <= 2 else []
        assert min(small) >= AVERAGE_ROWS_MIN, (name, small)


def test_bench_ends_with_where_its_time_went():
    from wisconsin.runfiles.runfile import TimeSpent
    from wisconsin.workloads.wisconsin.pipeline import time_line

    names = [f.name for f in fields(TimeSpent)]
    spent = TimeSpent(**dict.fromkeys(names, 1.0) | {"total_s": 20.0})
    run = SimpleNamespace(time_spent=spent)
    line = time_line(SimpleNamespace(run=run, generate_s=3.0, report_s=4.5))
    assert line.startswith("time: building tables 3.0 s, checks 1.0 s, probes 1.0 s,")
    assert "timed 1.0 s" in line and "worker restarts 1.0 s" in line and "undo 1.0 s" in line
    # every part named once; "other" is what the parts leave of the run's total
    assert line.count(" s,") == len(names) - 1 + 2 and "other 8.0 s" in line
    assert line.endswith("report and figures 4.5 s")
    assert time_line(SimpleNamespace(run=SimpleNamespace(time_spent=None))) == ""


def test_the_page_written_beside_the_figures_is_the_runs_report(tmp_path):
    """bench draws each figure once per format (the PNGs in a second process): the page is
    the one `report --format html` renders of the run file, its inline figures are the SVG
    files, and the text report is `report`'s."""
    import shutil

    from wisconsin.runfiles import runfile
    from wisconsin.workloads.wisconsin import report
    from wisconsin.workloads.wisconsin.pipeline import _report_figures_and_page

    src = tmp_path / "run.json"
    shutil.copy("tests/fixtures/run_real.json", src)
    run = runfile.load(src)
    page, text_file = tmp_path / "run.report.html", tmp_path / "run.report.txt"
    text, figures = _report_figures_and_page(run, src, text_file, page)
    assert figures and all(f.exists() for f in figures)
    assert {f.suffix for f in figures} == {".png", ".svg"}
    assert all(f.read_bytes().startswith(b"\x89PNG") for f in figures if f.suffix == ".png")
    assert text_file.read_text() == text == report.render_report([run], "text")
    html = page.read_text()
    for svg in (f for f in figures if f.suffix == ".svg"):
        body = svg.read_text()
        assert body[body.index("<svg") :] in html, svg.name

    # the same page but for the ids matplotlib draws anew in each rendering (clips, markers)
    def drawn_ids(text):
        return re.sub(r"\b[mp][0-9a-f]{10}\b", "<ID>", text)

    assert drawn_ids(html) == drawn_ids(report.render_report([run], "html"))
