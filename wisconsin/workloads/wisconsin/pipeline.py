"""The main job: generate (or reuse) the preset's F and G tables, run all five queries at
every partition count, write the report and the figures next to the run file."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib

from wisconsin import WisconsinError, cluster, engines, outputs, store
from wisconsin.analysis.schedule import OVERHEAD_MULTIPLE_MIN
from wisconsin.builds import Progress, build_tables, cost
from wisconsin.measure.progress import Job
from wisconsin.measure.runner import RunOptions, default_run_path, run, with_defaults
from wisconsin.reports import figures as drawing
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import Run
from wisconsin.store import TableSpec, generator, lock
from wisconsin.workloads.wisconsin import plots, report
from wisconsin.workloads.wisconsin.presets import Preset, get_preset

CALIBRATED = "calibrated"  # bench's default: sizes from a probe of this machine
BENCH_PARTITIONS = (1, 2, 4, 8, 16)
DEFAULT_DISK_BUDGET = 10 * 10**9  # 10 GB as every figure prints it (decimal)
# Untimed work per step of a round (open share, evict, empty statement, verify, undo):
# ~0.3-1.5 s measured on the shared 2-core machine.
STEP_OVERHEAD_S = 0.6
# Cold cost of one round's queries on a table, in full-row scans of it: scan 1, select
# ~1 (1% of rows spread over every block), average ~0.04, update ~0.05 + commit, join ~2
# (two tables). Measured on 4 M rows: scan 2.5 s, average 0.10 s, update 0.13 s cold.
ROUND_SCANS = 4.2
# Restarting a local cluster's workers before a block: 5-7 s measured for 2 workers here.
FRESH_WORKERS_S = 6.0
# The calibrated bench sizes its tables for at most this many rounds (each a block): more
# would shrink the tables under the harness bound within the time budget (15 rounds in 13
# minutes leave ~0.1 M rows a partition). It runs further rounds while time remains.
SIZING_ROUNDS = 8
GENERATE_ROWS_PER_S = 300_000.0  # both tables of a partition, 2 cores, measured
SAFETY = 2.0  # sizes the shortest scan at SAFETY x the bound
# The cold average (one column) at P = cores, from its partition's cold full-row scan time:
# fixed + share x scan. Fitted to two measured points: 23 ms at 0.55 M rows a partition
# (2026-11-25-quickstart-bench-3.md, scan 2.24 M rows/s) and 100 ms at 4 M rows.
AVERAGE_FIXED_S = 0.011
AVERAGE_SCAN_SHARE = 0.05
MIN_ROWS_PER_PARTITION = 1000  # the smallest G partition plan_sizes chooses


@dataclass(frozen=True)
class Plan:
    """The table sizes bench chose, and what it predicts for them."""

    f_rows: int
    g_rows: int  # per partition
    partitions: tuple[int, ...]
    g_partitions: tuple[int, ...]  # P <= cores: batch scaleup adds a processor per partition
    disk_bytes: int
    predicted_s: float  # generate + the minimum rounds and their blocks' fresh workers
    min_scan_s: float  # predicted cold scan at P = cores (the shortest headline scan)
    bound_s: float  # 20 x the harness overhead at P <= cores
    notes: tuple[str, ...]

    @property
    def preset(self) -> Preset:
        g = self.g_partitions if self.g_partitions != self.partitions else None
        return Preset(CALIBRATED, self.f_rows, self.g_rows, self.partitions, "calibrated", g)


def scaleup_partitions(partitions: tuple[int, ...], cores: int) -> tuple[int, ...]:
    """The G tables' counts a calibrated bench builds: those with a core per partition.
    Beyond the cores a G table only measures cores shared by more data (16 partitions on 2
    cores ran ~8x slower), yet it was ~60% of the bench's disk and time."""
    return tuple(p for p in partitions if p <= cores) or (min(partitions),)


def plan_sizes(
    probe,
    *,
    disk_budget: int,
    time_budget_s: float,
    partitions: tuple[int, ...] = BENCH_PARTITIONS,
    rounds: int = SIZING_ROUNDS,
    blocks: int = SIZING_ROUNDS,
) -> Plan:
    """Table sizes for this machine: the F scan at P = cores and the G1/G2 scans must last
    SAFETY x 20 x the harness overhead at P <= cores; then as large as the disk and time
    budgets allow (longer queries: the short ones, average and update, gain most)."""
    cores = max(1, min(probe.cores, max(partitions)))
    g_parts = scaleup_partitions(partitions, cores)
    cold_rate = probe.cold_scan_rows_per_s or probe.scan_rows_per_s
    overhead = probe.dispatch_s or 0.02
    bound = OVERHEAD_MULTIPLE_MIN * overhead
    # rows one partition must hold so its cold scan lasts SAFETY x bound
    need = math.ceil(SAFETY * bound * cold_rate)
    sum_p = sum(g_parts)
    steps = (len(partitions) + len(g_parts) + 1) * 5

    def budget_of(g: int) -> tuple[int, float]:
        f = g * cores
        rows = f * len(partitions) + g * sum_p  # F tables + G tables
        disk = sum(_table_bytes(f, p) for p in partitions)
        disk += sum(_table_bytes(g * p, p) for p in g_parts)
        run_rows = rows + f  # + the single-thread baseline on F1
        t = (
            rows / GENERATE_ROWS_PER_S
            + min(blocks, rounds) * FRESH_WORKERS_S
            + rounds * (steps * STEP_OVERHEAD_S + ROUND_SCANS * run_rows / cold_rate)
        )
        return disk, t

    g, notes = need, []
    disk, t = budget_of(g)
    if disk > disk_budget or t > time_budget_s:
        notes.append(
            f"the budgets do not allow tables long enough: {g:,} rows per partition need "
            f"{disk / 2**30:.1f} GB and ~{t / 60:.0f} min (budgets {disk_budget / 2**30:.1f} "
            f"GB, {time_budget_s / 60:.0f} min); using the largest that fit"
        )
    lo = MIN_ROWS_PER_PARTITION
    if budget_of(lo)[0] > disk_budget:  # the smallest tables would not fit either: none fit
        raise WisconsinError(_too_small(disk_budget, budget_of(lo)[0], partitions))
    if budget_of(lo)[1] > time_budget_s:
        notes.append(
            f"even the smallest tables need ~{budget_of(lo)[1] / 60:.0f} min for {rounds} rounds "
            f"(budget {time_budget_s / 60:.0f} min): the run stops at its budget with fewer "
            "rounds and blocks, and says so"
        )
    # a table's rows stay within the generator's range (G at the largest P, F at cores)
    hi = min(max(g, lo) * 64, generator.MAX_ROWS // max(max(g_parts), cores))
    while hi - lo > max(1000, lo // 100):  # largest g within both budgets
        mid = (lo + hi) // 2
        d, tt = budget_of(mid)
        if d <= disk_budget and tt <= time_budget_s:
            lo = mid
        else:
            hi = mid
    g = lo
    disk, t = budget_of(g)
    f = g * cores
    min_scan = g / cold_rate
    short = AVERAGE_FIXED_S + AVERAGE_SCAN_SHARE * min_scan  # the cold average, the shortest
    if short < bound:
        rows = (bound - AVERAGE_FIXED_S) / AVERAGE_SCAN_SHARE * cold_rate  # a partition's
        need_disk = budget_of(math.ceil(rows))[0]
        notes.append(
            f"average (cold ~{short * 1e3:.0f} ms at P = {cores}) stays below {bound * 1e3:.0f} ms "
            f"= {OVERHEAD_MULTIPLE_MIN:.0f}x the harness overhead: it reads one column, and "
            f"reaching the bound needs ~{need_disk / 1e9:.0f} GB of tables"
        )
    return Plan(f, g, tuple(partitions), g_parts, disk, t, min_scan, bound, tuple(notes))


def calibrate(
    data_dir: str,
    seed: int,
    partitions: tuple[int, ...],
    *,
    disk_budget: int,
    time_budget_s: float,
    started: float,
    rounds: int,
    blocks: int,
    say: Callable[[str], None],
) -> Preset:
    """The sizes a calibrated bench builds: probe this machine (its tables kept under
    data_dir/_probe for the next bench), plan the sizes within the disk budget and what is
    left of the time budget (started: when the bench began, time.monotonic), and reuse the
    sizes an earlier bench built in data_dir when they are close enough (earlier_sizes).
    say receives the announcement before the probe writes, then what it found and chose."""
    from wisconsin.measure import calibrate as machine  # looked up on use: tests replace it
    from wisconsin.measure.environment import usable_cores
    from wisconsin.workloads.wisconsin.queries import CATALOG

    check_disk_budget(disk_budget, partitions)  # before the probe writes its table
    probe_dir = Path(data_dir) / "_probe"
    # announced before the probe writes its tables (kept there: the next bench reuses them)
    say(
        f"calibrating this machine: probe tables go to {probe_dir.absolute()} (kept for "
        "the next bench); cold and warm scans, dispatch..."
    )
    found = machine.probe(
        probe_dir,
        max_partitions=min(usable_cores(), max(partitions)),
        scan=CATALOG.get("scan"),
    )
    plan = plan_sizes(
        found,
        disk_budget=disk_budget,
        time_budget_s=time_budget_s - (time.monotonic() - started),
        partitions=partitions,
        rounds=rounds,
        blocks=blocks,
    )
    earlier = earlier_sizes(plan, seed, data_dir)
    reuse_note = ""
    if earlier is not None:  # a second bench on the same --data reuses its tables
        reuse_note = (
            f" (reused: the tables an earlier bench built in {data_dir}; this probe "
            f"sized F {plan.f_rows:,} and G {plan.g_rows:,})"
        )
        plan = earlier
    say(
        f"probe: {found.cores} cores; cold full-row scan "
        f"{(found.cold_scan_rows_per_s or 0) / 1e6:.2f} M rows/s per process; storage "
        f"{(found.storage_read_bytes_per_s or 0) / 2**20:.0f} MB/s; harness overhead "
        f"{(found.dispatch_s or 0) * 1e3:.1f} ms at P = {found.dispatch_partitions}"
    )
    say(_sizes_line(plan, disk_budget, time_budget_s) + reuse_note)
    for note in plan.notes:
        say(f"note: {note}")
    return plan.preset


def _sizes_line(plan: Plan, disk_budget: int, time_budget_s: float) -> str:
    parts = ",".join(map(str, plan.partitions))
    return (
        f"sizes: F {plan.f_rows:,} rows at P = {parts}, G "
        f"{plan.g_rows:,} rows per partition at P = {','.join(map(str, plan.g_partitions))} "
        f"(a core each) (within --disk-budget {cost.size(disk_budget)}; "
        f"the disk they take is on the next line), ~{plan.predicted_s / 60:.0f} min predicted "
        f"(budget {time_budget_s / 60:.0f} min); shortest headline scan ~"
        f"{plan.min_scan_s:.2f} s vs {plan.bound_s:.2f} s needed"
    )


def _too_small(disk_budget: int, need: int, partitions) -> str:
    return (
        f"--disk-budget {cost.size(disk_budget)} is too small: the smallest tables bench would "
        f"build ({MIN_ROWS_PER_PARTITION:,} rows per partition, P = "
        f"{','.join(map(str, partitions))}) take about {cost.size(need)}; give a larger "
        "--disk-budget, fewer --partitions, or a --preset"
    )


def check_disk_budget(disk_budget: int, partitions: tuple[int, ...]) -> None:
    """Refuse a --disk-budget the smallest calibrated tables do not fit in (wisconsin.builds.cost's
    file sizes), before the calibration probe writes anything."""
    import psutil

    cores = max(1, min(psutil.cpu_count(logical=True) or 1, max(partitions)))  # as the probe
    g = MIN_ROWS_PER_PARTITION
    need = sum(_table_bytes(g * cores, p) for p in partitions)
    need += sum(_table_bytes(g * p, p) for p in scaleup_partitions(partitions, cores))
    if need > disk_budget:
        raise WisconsinError(_too_small(disk_budget, need, partitions))


def _table_bytes(rows: int, partitions: int) -> int:
    """Disk a table of rows in partitions takes after the bench's rounds: the one size model
    of the bench (its budget check, its sizes, its announcement)."""
    return sum(
        cost.run_file_bytes(hi - lo)
        for lo, hi in (generator.partition_range(rows, p, partitions) for p in range(partitions))
    )


def _built(data_dir: str, spec: TableSpec) -> bool:
    return (Path(data_dir) / spec.name / store.MANIFEST).is_file()


def planned_job(progress, to_build, options: RunOptions) -> Job:
    """The bench's Job on the display progress, its work planned with this module's first
    guesses (each replaced by the times measured as the bench goes): the rows to build, the
    runner's start, the rounds' steps and the blocks' fresh workers."""
    job = Job(progress)
    job.plan("build", sum(s.n for s in to_build), each_s=1 / GENERATE_ROWS_PER_S)
    lo, _ = options.reps
    steps = len(options.tables()) * len(with_defaults(options).queries)
    job.plan("setup", 1, each_s=FRESH_WORKERS_S)
    warmups = steps * options.warmup if options.cache == "cold" else 0
    job.plan("warm-up step", warmups, each_s=STEP_OVERHEAD_S)
    job.plan("step", lo * steps, like="warm-up step")
    blocks = lo // options.block_rounds
    job.plan("fresh workers", max(0, blocks - 1), each_s=FRESH_WORKERS_S)
    return job


@dataclass(frozen=True)
class BenchResult:
    run: Run
    run_path: Path
    report_path: Path
    report_text: str
    figures: tuple[Path, ...]
    tables_reused: tuple[str, ...]
    generate_s: float
    html_path: Path | None = None
    report_s: float = 0.0  # the text and HTML reports and the figures, after the run


# TimeSpent's parts as a bench's last lines name them, in the order they happen
SPENT_WORDS = (
    ("checks_s", "checks"),
    ("probes_s", "probes"),
    ("start_s", "first workers"),
    ("warmups_s", "warm-ups"),
    ("timed_s", "timed"),
    ("fresh_workers_s", "worker restarts"),
    ("eviction_s", "eviction"),
    ("empty_statements_s", "empty statements"),
    ("resets_s", "resets"),
    ("verify_s", "verification"),
    ("undo_s", "undo"),
    ("opens_s", "opening tables"),
)


def time_line(result: BenchResult) -> str:
    """Where the bench's time went: building, the run's parts (its file's TimeSpent) and the
    report; "" when the run did not record them."""
    spent = result.run.time_spent
    if spent is None:
        return ""
    parts = [("building tables", result.generate_s)]
    parts += [(word, getattr(spent, name)) for name, word in SPENT_WORDS]
    parts += [("other", spent.other_s), ("report and figures", result.report_s)]
    return "time: " + ", ".join(f"{word} {s:.1f} s" for word, s in parts)


@dataclass(frozen=True)
class DiskPlan:
    new_bytes: int  # partition files still to generate
    reused: tuple[str, ...]  # tables already complete in data_dir
    free_bytes: int | None  # free space where data_dir is (None: on cluster workers)


def disk_plan(specs, data_dir: str, on_cluster: bool = False) -> DiskPlan:
    """How much disk bench's tables will take that is not taken yet, and what is free."""
    import shutil

    from wisconsin.store import MANIFEST

    new, reused = 0, []
    for s in specs:
        if (Path(data_dir) / s.name / MANIFEST).is_file():
            reused.append(s.name)
        else:
            new += _table_bytes(s.n, s.partitions)
    where = Path(data_dir).absolute()
    while not where.exists():
        where = where.parent
    free = None if on_cluster else shutil.disk_usage(where).free
    return DiskPlan(new, tuple(reused), free)


# How far the sizes of tables an earlier bench built may be from this probe's sizes and
# still be reused: the probe's sizes move a few percent from one bench to the next (3,251,284
# and 3,256,240 F rows on one machine minutes apart), and a rebuild costs minutes and disk.
REUSE_SIZE_TOLERANCE = 0.25


def earlier_sizes(plan: Plan, seed: int, data_dir: str) -> Plan | None:
    """plan with the sizes of the F and G tables an earlier calibrated bench built in
    data_dir, when there are such tables (same partitions, seed and generator, one size per
    kind) within REUSE_SIZE_TOLERANCE of the plan's; None otherwise (the build then says
    whatever else is in the way)."""
    sizes: dict[str, set[int]] = {"F": set(), "G": set()}
    for spec in preset_specs(plan.preset, seed, ("F", "G"), plan.partitions):
        table_dir = Path(data_dir) / spec.name
        if not (table_dir / store.MANIFEST).is_file():
            continue
        try:
            m = store.read_manifest(table_dir)
        except store.StoreError:
            return None
        if (m.kind, m.partitions, m.seed, m.generator_version) != (
            spec.kind, spec.partitions, seed, generator.GENERATOR_VERSION
        ):  # fmt: skip
            return None
        sizes[m.kind].add(m.rows if m.kind == "F" else m.rows // m.partitions)
    if not (sizes["F"] or sizes["G"]) or len(sizes["F"]) > 1 or len(sizes["G"]) > 1:
        return None
    f_rows = next(iter(sizes["F"]), plan.f_rows)
    g_rows = next(iter(sizes["G"]), plan.g_rows)
    if (f_rows, g_rows) == (plan.f_rows, plan.g_rows):
        return None
    for have, want in ((f_rows, plan.f_rows), (g_rows, plan.g_rows)):
        if abs(have - want) > REUSE_SIZE_TOLERANCE * want:
            return None
    return replace(plan, f_rows=f_rows, g_rows=g_rows)


def preset_specs(
    preset: str | Preset, seed: int, kinds, partitions, baseline: bool = False
) -> list[TableSpec]:
    """The tables of a preset over partitions (its G tables over its g_partitions, if set);
    with baseline, F1 too when they do not include it: the single-thread baseline's table,
    without which a run has no baseline and no bound (its audit cannot pass)."""
    p = preset if isinstance(preset, Preset) else get_preset(preset)
    specs = [
        TableSpec(k, p.rows_for(k), n, seed)
        for k, n in runfile.table_list(kinds, partitions, p.g_partitions)
    ]
    return with_baseline(specs, p, seed) if baseline else specs


def with_baseline(specs: list[TableSpec], p: Preset, seed: int) -> list[TableSpec]:
    """specs and, when they do not hold it, F1 at the preset's F size: the single-thread
    baseline's table (the runner times it only where F1 is generated) and so the bound."""
    has_f1 = any((s.kind, s.partitions) == ("F", 1) for s in specs)
    return specs if has_f1 else [*specs, TableSpec("F", p.f_rows, 1, seed)]


def report_paths(run_path: Path) -> tuple[Path, Path]:
    """The text report and the self-contained page (issue 9) bench writes beside a run."""
    return run_path.with_suffix(".report.txt"), run_path.with_suffix(".report.html")


def check_outputs(out: str, mode: str) -> None:
    """Refuse, before any probe, build or measurement (minutes wasted otherwise), an --out
    that cannot be written or whose run file or reports are already there."""
    planned = default_run_path(out, mode)
    store.check_writable(planned.parent, f"--out {out}")
    for final in (planned, *report_paths(planned)):
        if os.path.lexists(final):  # a dangling symlink too, as outputs.write_all
            raise WisconsinError(f"{final} already exists; not overwriting it")


@lock.locked("data_dir", create=True)
def bench(
    preset: str | Preset,
    data_dir: str,
    seed: int,
    options: RunOptions,
    progress: Progress | None = None,
    worker_data: str | None = None,
    deadline: float | None = None,
    announce=None,
) -> BenchResult:
    """Generate + run + report + plot. options carries everything but the tables to use.

    With options.engine.cluster the tables are generated in place on the cluster's workers
    (worker_data: see wisconsin.cluster for where workers write). announce receives the
    local build's cost line (wisconsin.builds.cost) before it starts.
    """
    p = preset if isinstance(preset, Preset) else get_preset(preset)
    specs = [TableSpec(k, p.rows_for(k), n, seed) for k, n in options.tables()]
    if options.baseline:
        specs = with_baseline(specs, p, seed)
    check_outputs(options.out, options.mode)
    job = planned_job(progress, [s for s in specs if not _built(data_dir, s)], options)
    eng = options.engine
    client = None
    if eng.cluster:
        engines.check_cluster(options.mode, eng.cluster)
        client = cluster.connect(eng.cluster, eng.security, min(eng.timeout_s, 30.0))
    try:
        built = build_tables(
            data_dir,
            specs,
            progress=lambda label, done, total: job.count("build", label, done, total),
            announce=announce,
            client=client,
            worker_data=worker_data,
            timeout=eng.timeout_s,
            disk_said=True,  # bench said its one disk figure before (commands._announcement)
        )
    finally:
        if client is not None:
            client.close()
    if deadline is not None:  # what is left of the bench's time budget is the run's
        left = deadline - time.monotonic() - 20.0  # report and figures
        options = replace(options, time_budget_s=max(1.0, left))
    result, path = run(options, progress=job)
    t0 = time.perf_counter()
    report_path, html_path = report_paths(path)
    text, figures = _report_figures_and_page(result, path, report_path, html_path)
    return BenchResult(
        run=result,
        run_path=path,
        report_path=report_path,
        report_text=text,
        figures=tuple(figures),
        tables_reused=built.reused_tables,
        generate_s=built.seconds,
        html_path=html_path,
        report_s=time.perf_counter() - t0,
    )


def _report_figures_and_page(
    result: Run, path: Path, report_path: Path, html_path: Path
) -> tuple[str, list[Path]]:
    """Write the run's text report, its figure files and its HTML page, each figure drawn
    once per format: the report, the SVGs (for their files and the page, inline) and the
    page here, the PNGs at the same time in a second process (before, the page drew every
    SVG again: ~5.6 s after the tiny bench's run on the quiet 2-core VM). Each file is
    written whole or not at all, the figures all or none. Returns (report text, figures)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    # spawn: this process holds threads (Dask's, DuckDB's) that a fork would copy mid-work
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        pngs = pool.submit(draw_pngs, str(path))
        text = report.render_report([result], "text")
        # Never a half-written report under its final name, never one a user had replaced.
        outputs.write_all([report_path], lambda _i, tmp: tmp.write_text(text))
        with matplotlib.rc_context(drawing.RC):
            named = plots.figures(result)
            drawn = {(n, "svg"): drawing.render(f, "svg") for n, f in named}
        svgs = {n: drawn[n, "svg"].decode() for n, _ in named}
        page = report.render_report([result], "html", svgs=svgs)
        drawn |= {(n, "png"): png for n, png in pngs.result().items()}
    order = [(n, ext) for n, _ in named for ext in drawing.FORMATS]
    targets = [path.parent / f"{path.stem}-{n}.{ext}" for n, ext in order]
    written = drawing.write_drawn(targets, lambda i: drawn[order[i]])
    outputs.write_all([html_path], lambda _i, tmp: tmp.write_text(page))
    return text, written


def draw_pngs(run_path: str) -> dict[str, bytes]:
    """The PNG of each figure of the run file at run_path, by name."""
    with matplotlib.rc_context(drawing.RC):
        named = plots.figures(runfile.load(run_path))
        return {n: drawing.render(f, "png") for n, f in named}
