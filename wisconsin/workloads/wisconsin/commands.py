"""`wisconsin bench` and `wisconsin run` as their command lines ask: the parsed options
(wisconsin.workloads.options) resolved into the runner's RunOptions, the tables sized (a
preset, or calibrated), and the lines the command prints."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from wisconsin import WisconsinError, atomic, engines, store
from wisconsin.builds import cost
from wisconsin.measure.options import RunOptions
from wisconsin.runfiles.runfile import estimate_text
from wisconsin.workloads.options import (
    BenchOptions,
    Console,
    OptionError,
    Outcome,
    RunCommandOptions,
    checked_max_reps,
    engine_config,
    shared_fields,
)
from wisconsin.workloads.wisconsin import pipeline
from wisconsin.workloads.wisconsin.presets import DEFAULT_TIME_BUDGET_S, Preset, get_preset
from wisconsin.workloads.wisconsin.queries import CATALOG

# --------------------------------------------------------------------------- bench


def bench(opts: BenchOptions, console: Console) -> Outcome:
    """Size (a preset, or calibrated on this machine), generate, run, report and plot; the
    lines to print after it, and where its disk went."""
    started = time.monotonic()
    # before the announcement, the calibration probe and the build: each a refusal in one
    # line, with nothing written or said before it
    engines.check_cluster(opts.mode, opts.cluster_address)
    store.refuse_inside_table(opts.data_dir)
    pipeline.check_outputs(opts.out, opts.mode)
    opts = _rounds(opts)
    preset, parts = _sizes(opts, started, console.say)
    specs = pipeline.preset_specs(preset, opts.seed, ("F", "G"), parts, baseline=True)
    on_cluster = bool(opts.cluster_address)
    console.say(_announcement(pipeline.disk_plan(specs, opts.data_dir, on_cluster), opts))
    address = opts.cluster_address
    engine = engine_config(opts.mode, parts, None, 3600, address, opts.tls, opts.transport)
    run_opts = RunOptions(
        **shared_fields(opts, RunOptions) | {"partitions": parts, "warmup": _warmup(opts)},
        catalog=CATALOG,
        g_partitions=preset.g_partitions,
        engine=engine,
    )
    deadline = None if opts.time_budget is None else started + opts.time_budget
    with console.progress() as progress:
        result = pipeline.bench(  # looked up on use: tests replace it
            preset,
            opts.data_dir,
            opts.seed,
            run_opts,
            progress=progress,
            worker_data=opts.worker_data,
            deadline=deadline,
            announce=console.say,
        )
    return Outcome(
        tuple(_summary(result, opts, started)),
        Path(opts.data_dir),
        tuple(Path(opts.data_dir) / s.name for s in specs),
        result.run_path,
        on_cluster,
    )


_ROUND_OPTIONS = ("repeat", "min_reps", "max_reps", "blocks")


def _own_rounds(opts: BenchOptions) -> Preset | None:
    """The preset whose own rounds (and warm-up) the bench runs: one that has them, when
    no round option is given; else None."""
    preset = get_preset(opts.preset) if opts.preset is not None else None
    if preset is not None and preset.rounds and not opts.given_options(*_ROUND_OPTIONS):
        return preset
    return None


def _rounds(opts: BenchOptions) -> BenchOptions:
    """opts with the rounds and the time budget the bench runs: calibrated, within the time
    budget (default DEFAULT_TIME_BUDGET_S) it plans SIZING_ROUNDS rounds of one block each
    (15 would shrink its tables under the harness bound); a preset with rounds of its own
    (tiny) runs those, in its blocks, unless --repeat, --min-reps, --max-reps or --blocks is
    given; options given win."""
    min_reps, blocks, time_budget = opts.min_reps, opts.blocks, opts.time_budget
    max_reps, given_max = opts.max_reps, bool(opts.given_options("max_reps"))
    if (preset := _own_rounds(opts)) is not None:
        min_reps = max_reps = preset.rounds  # the preset's own: sized with its tables
        blocks, given_max = preset.blocks or preset.rounds, True
    if opts.preset is None and opts.repeat is None:
        if not opts.given_options("min_reps"):
            min_reps = pipeline.SIZING_ROUNDS
        if not opts.given_options("blocks"):
            blocks = min(blocks, min_reps)
    max_reps = checked_max_reps(min_reps, max_reps, given_max)
    if time_budget is None and opts.preset is None:
        time_budget = DEFAULT_TIME_BUDGET_S
    if opts.cluster_address is None and opts.worker_data is not None:
        raise OptionError("--worker-data needs --cluster")
    return replace(
        opts, min_reps=min_reps, max_reps=max_reps, blocks=blocks, time_budget=time_budget
    )


def _warmup(opts: BenchOptions) -> int:
    """The untimed warm-up rounds: the preset's when its own rounds run, else the runner's."""
    preset = _own_rounds(opts)
    return preset.warmup if preset is not None else RunOptions.warmup


def _sizes(opts: BenchOptions, started: float, say) -> tuple[Preset, tuple[int, ...]]:
    """The preset the bench builds and its partition counts: --preset's, or calibrated."""
    if opts.preset is not None:
        chosen = get_preset(opts.preset)
        return chosen, opts.partitions or chosen.partitions
    if opts.cluster_address is not None:
        raise OptionError("--cluster needs a --preset (calibration probes this machine)")
    parts = opts.partitions or pipeline.BENCH_PARTITIONS
    rounds = opts.repeat or opts.min_reps
    chosen = pipeline.calibrate(
        opts.data_dir,
        opts.seed,
        parts,
        disk_budget=opts.disk_budget,
        time_budget_s=opts.time_budget,
        started=started,
        rounds=rounds,
        blocks=min(opts.blocks, rounds),
        say=say,
    )
    return chosen, parts


def _announcement(plan: pipeline.DiskPlan, opts: BenchOptions) -> str:
    """Where bench writes and how much disk it needs, said before it writes anything;
    refused at once when the local disk cannot hold the tables."""
    data = Path(opts.data_dir).absolute()
    reused = f" ({', '.join(plan.reused)} already built)" if plan.reused else ""
    if plan.free_bytes is None:
        where = f"on the cluster workers' disks (manifests in {data})"
    else:
        where = f"in {data}, {cost.size(plan.free_bytes)} free there"
        if plan.new_bytes * 1.1 > plan.free_bytes:
            raise WisconsinError(
                f"bench needs about {cost.size(plan.new_bytes)} for its tables in {data} but "
                f"only {cost.size(plan.free_bytes)} are free: free some space, choose another "
                "--data, or a smaller --preset/--partitions"
            )
    return (
        f"bench: about {cost.size(plan.new_bytes)} of tables to generate{reused} {where}; "
        f"run file, report and figures go to {Path(opts.out).absolute()}"
    )


def _summary(result: pipeline.BenchResult, opts: BenchOptions, started: float) -> list[str]:
    """The verdict (one screen, unless quiet; every section is in the report file) and where
    everything went."""
    lines = []
    if not opts.quiet:
        from wisconsin.workloads.wisconsin.report import short_text

        lines.append(short_text([result.run], [result.run_path]))
    reused = f" (reused {', '.join(result.tables_reused)})" if result.tables_reused else ""
    overview = next(
        (f for f in result.figures if "overview" in f.name and f.suffix == ".png"),
        result.figures[0],
    )
    return lines + [
        f"tables:   {opts.data_dir}{reused}",
        f"run file: {result.run_path} ({result.run.stop_reason})",
        f"report:   {result.report_path} (every section)",
        f"html:     {result.html_path}",
        f"figures:  {len(result.figures)} files in {result.run_path.parent}, e.g. {overview}",
        f"estimate: {estimate_text(result.run.estimate)}",
        *filter(None, [pipeline.time_line(result)]),
        f"bench took {time.monotonic() - started:.0f} s; check it with "
        f"`wisconsin audit {result.run_path}`",
    ]


# --------------------------------------------------------------------------- run

# what `run --resume` takes besides the run file (the rest comes from the file): a run whose
# budget ran out before its first timed round needs more --time-budget
RESUME_TAKES = frozenset({"resume_path", "timeout", "time_budget", "quiet", "tls_ca", "tls_cert",
                          "tls_key"})  # fmt: skip


def run(opts: RunCommandOptions, progress=None):
    """`wisconsin run`: measure the tables opts names into a run file, or with --resume
    continue an incomplete one; (Run, its path)."""
    from wisconsin.measure import runner

    if opts.resume_path is None:
        return runner.run(run_options(opts), progress=progress)
    given = [typed for name, typed in opts.given if name not in RESUME_TAKES]  # as typed: --data
    if given:
        raise OptionError(f"--resume takes its options from the run file; drop {', '.join(given)}")
    return runner.resume(
        opts.resume_path,
        progress=progress,
        catalog=CATALOG,
        tls=opts.tls,
        timeout_s=opts.timeout,
        time_budget_s=opts.time_budget,
    )


def run_options(opts: RunCommandOptions) -> RunOptions:
    """The RunOptions of a parsed `run` command line (not --resume): `run` and each side of
    `ab` build theirs here."""
    from wisconsin.measure.runner import available_partitions
    from wisconsin.workloads.wisconsin.queries import QUERIES, parse_queries

    explicit = bool(opts.given_options("kinds"))
    kinds, partitions, g_partitions = _tables_to_run(
        opts.data_dir, opts.kinds, explicit, opts.partitions
    )
    partitions = partitions or available_partitions(opts.data_dir, kinds) or None
    engine = engine_config(
        opts.mode,
        (*(partitions or (16,)), *(g_partitions or ())),
        opts.memory_limit,
        opts.timeout,
        opts.cluster_address,
        opts.tls,
        opts.transport,
    )
    queries = parse_queries(opts.query_list) if opts.query_list is not None else QUERIES
    max_reps = checked_max_reps(opts.min_reps, opts.max_reps, bool(opts.given_options("max_reps")))
    resolved = {"kinds": kinds, "partitions": partitions, "max_reps": max_reps}
    return RunOptions(
        **shared_fields(opts, RunOptions) | resolved,
        catalog=CATALOG,
        g_partitions=g_partitions,
        queries=queries,
        engine=engine,
        time_budget_s=opts.time_budget,
    )


def _tables_to_run(data_dir: str, kinds, explicit: bool, partitions):
    """(kinds, partitions, g_partitions) for `run`: without --tables, the kinds that are
    generated; without --partitions, the counts generated for every kind, or each kind's own
    (F's, and G's as g_partitions) when G's are some of F's (a calibrated bench builds G
    only up to the cores). A one-line error says what is missing."""
    from wisconsin.store import tables_in

    have = tables_in(data_dir)
    if not have:
        raise WisconsinError(_no_tables(data_dir))
    counts = {k: {p for kk, p in have.values() if kk == k} for k in ("F", "G")}
    holds = f"it holds {', '.join(have)}"
    if not explicit:
        present = tuple(k for k in kinds if counts[k])
        full = tuple(k for k in present if partitions and set(partitions) <= counts[k])
        kinds = full or present
    missing = [k for k in kinds if not counts[k]]
    if missing:
        other = [k for k in kinds if counts[k]]
        hint = f", or choose --tables {','.join(other)}" if other else ""
        raise WisconsinError(
            f"no {' or '.join(missing)} tables in {data_dir} ({holds}): generate them{hint}"
        )
    if partitions is None and set(kinds) == {"F", "G"} and counts["G"] < counts["F"]:
        return kinds, tuple(sorted(counts["F"])), tuple(sorted(counts["G"]))
    if partitions is None:
        common = set.intersection(*(counts[k] for k in kinds))
        if not common:
            each = "; ".join(f"{k} at P = {', '.join(map(str, sorted(counts[k])))}" for k in kinds)
            raise WisconsinError(
                f"no partition count has every one of {', '.join(kinds)} in {data_dir} "
                f"({each}): choose --tables, or generate the missing tables"
            )
        partitions = tuple(sorted(common))
    return kinds, partitions, None


def _no_tables(data_dir: str) -> str:
    """Why --data holds no complete table, and a fix that works: it is a table (give its
    data directory), a build is still writing it (name the build), or nothing is there."""
    from wisconsin.store import MANIFEST, lock, tables_in

    path = Path(data_dir)
    other = _other_workload(path / MANIFEST)
    if other:  # another workload's database
        return (
            f"{data_dir} is a {other} database, not a data directory of Wisconsin tables: `wisconsin "
            f"info {data_dir}` checks it; `wisconsin run --data DIR` times the tables "
            "`wisconsin generate --data DIR` builds"
        )
    if (path / MANIFEST).is_file() and tables_in(path.parent):
        # `--data DATA/F4`: the table itself; generate --data DATA/F4 would nest tables
        return (
            f"{data_dir} is a table, not a data directory: give the directory that holds it, "
            f"--data {path.parent} (with --tables {path.name[:1]} --partitions "
            f"{path.name[1:]} for this table alone)"
        )
    try:
        with lock.hold(data_dir, shared=True):  # read-only: refused only while one writes
            pass
    except lock.DataDirBusy as busy:
        return f"no complete tables in {data_dir} yet: {busy}"
    return f"no tables in {data_dir}: run `wisconsin generate --data {data_dir}` first"


def _other_workload(manifest: Path) -> str | None:
    """The workload a database's manifest names when it is not a Wisconsin table's."""
    if not manifest.is_file():
        return None
    try:
        data = atomic.read_json(manifest, "manifest")
    except WisconsinError:
        return None
    workload = data.get("workload") if isinstance(data, dict) else None
    return workload if isinstance(workload, str) and workload != "wisconsin" else None
