"""`wisconsin bench`: the main job."""

from __future__ import annotations

from pathlib import Path

import click

from wisconsin.cli.options import (
    DEFAULT_OUT,
    MODE,
    REPEAT,
    SEED,
    TRANSPORT,
    checked_max_reps,
    cluster_options,
    data_option,
    engine_config,
    given,
    measurement_options,
    parse_int_list,
    progress_display,
    refuse_cold_in_memory,
    refuse_ignored,
    refuse_with_repeat,
)
from wisconsin.workloads import NAMES as WORKLOAD_NAMES
from wisconsin.workloads.wisconsin.presets import DEFAULT_TIME_BUDGET_S

# --------------------------------------------------------------------------- bench


def _bytes(ctx, param, value: str | None) -> int | None:
    if value is None:
        return None
    import re

    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgt]?)(i?)b?\s*", value.lower())
    if not m:
        raise click.BadParameter(f"expected a size like 10GB or 500MB, got {value!r}")
    # GB as every figure prints it (decimal, wisconsin.builds.cost.size); GiB binary
    unit = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * unit ** " kmgt".index(m.group(2) or " "))


@click.command()
@click.option(
    "--preset",
    default=None,
    help="Fixed table sizes (tiny, laptop, clx, vlx: no calibration). Default: sizes "
    "calibrated on this machine within --disk-budget and --time-budget.",
)
@data_option("Where tables are generated (and reused from).")
@MODE
@click.option(
    "--partitions",
    callback=parse_int_list,
    default=None,
    help="Partition counts (default: 1,2,4,8,16, or the preset's).",
)
@SEED
@measurement_options
@REPEAT
@TRANSPORT
@click.option(
    "--time-budget",
    type=click.FloatRange(min=60),
    default=None,
    metavar="SECONDS",
    help="The whole bench (generate, rounds, report): calibrated sizes are chosen to fit "
    "it, and no round starts that would end after it. Default: "
    f"{DEFAULT_TIME_BUDGET_S:.0f} ({DEFAULT_TIME_BUDGET_S / 60:.0f} min) when "
    "calibrating, none with a --preset.",
)
@click.option(
    "--disk-budget",
    callback=_bytes,
    default="10GB",
    show_default=True,
    help="Disk the calibrated tables may take (printed before starting).",
)
@click.option(
    "--out",
    default=DEFAULT_OUT,
    show_default=True,
    help="Directory for run file, report, figures (not the repository's runs/).",
)
@click.option("--quiet", is_flag=True, help="No progress bar, no report on the terminal.")
@cluster_options(worker_data=True)
@click.option(
    "--workload",
    type=click.Choice(WORKLOAD_NAMES),
    default=WORKLOAD_NAMES[0],
    show_default=True,
    help="wisconsin: the batch queries; debitcredit: OLTP scaleup (docs/debitcredit.md).",
)
@click.option(
    "--branches",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="DebitCredit: branches per partition (10 per rated tps; 10,000 accounts each).",
)
@click.option(
    "--scaled",
    "scaled_tps",
    type=click.FloatRange(min=0.1),
    default=None,
    help="DebitCredit: size each partition for TPS by the rule (10 branches, 100 tellers, "
    "100,000 accounts per tps: --scaled 450 is --branches 4500, 45 M accounts, ~2.5 GB); "
    "the run is labelled scaled only if it delivers at most that.",
)
@click.option(
    "--step-seconds",
    type=click.FloatRange(min=0.1),
    default=None,
    help="DebitCredit: length of each open step (default 30 s); the closed peak window is "
    "twice as long. Per P: warm-up until engine memory is flat, then 1 closed (60 s) + 5 "
    "open (30 s) steps = 3.5 min, plus the build; P = 1, 2, 4, ... up to the cores: 2 "
    "cores, ~10 min.",
)
@click.option(
    "--resume",
    "resume_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="DebitCredit: continue an interrupted bench from the progress file it named "
    "(debitcredit-*.json.partial), with that file's settings.",
)
@click.option(
    "--rule",
    type=click.Choice(["95/1", "90/2"]),
    default="95/1",
    show_default=True,
    help="DebitCredit: tps rule, 95%% within 1 s (standard) or 90%% within 2 s (Tandem 1987).",
)
def bench(
    preset,
    data_dir,
    mode,
    partitions,
    seed,
    cache,
    min_reps,
    max_reps,
    target_ci,
    blocks,
    repeat,
    transport,
    time_budget,
    disk_budget,
    out,
    quiet,
    cluster_address,
    tls_ca,
    tls_cert,
    tls_key,
    worker_data,
    workload,
    branches,
    scaled_tps,
    step_seconds,
    resume_path,
    rule,
) -> None:
    """The main job: size the tables for this machine, generate, run F and G at every
    partition count in interleaved rounds, report and plot. Calibrated (no --preset), it
    builds G only up to the cores (a processor per partition), plans 8 rounds of one block
    each within --time-budget (unless --min-reps/--blocks are given) and runs more while
    time remains.

    With --workload debitcredit: OLTP scaleup at P = 1, 2, 4, ... up to the usable cores (or
    --partitions); per P one closed window and the stepped open curve of --step-seconds each
    (a closed window judged unsteady is measured again, once).
    """

    ctx = click.get_current_context()
    if workload == "debitcredit":
        if cluster_address is not None:
            raise click.UsageError("--workload debitcredit runs on this machine (no --cluster)")
        refuse_ignored(
            ctx,
            [p.name for p in ctx.command.params if p.name not in DEBITCREDIT_OPTIONS],
            "Wisconsin options, not used by --workload debitcredit",
        )
        from wisconsin.workloads.debitcredit.pipeline import bench_command, scaled_branches

        if resume_path is not None:
            given = _given(
                "partitions", "repeat", "branches", "scaled_tps", "step_seconds", "rule", "seed"
            )
            if given:
                raise click.UsageError(
                    f"--resume takes its settings from the progress file; drop {', '.join(given)}"
                )
        if scaled_tps is not None:
            if _given("branches"):
                raise click.UsageError("--scaled sets the branches: drop --branches")
            branches = scaled_branches(scaled_tps)
        say = (lambda s: None) if quiet else (lambda s: click.echo(s, err=True))
        _run, path, text, files = bench_command(
            data_dir,
            partitions or (),
            seed,
            repeat,
            out,
            branches,
            step_seconds,
            rule,
            say=say,
            resume=resume_path,
        )
        if not quiet:
            click.echo(text)
        click.echo(f"run file: {path}")
        click.echo(f"report:   {files[0]}")
        click.echo(f"figures:  {', '.join(str(f) for f in files[1:] if f.suffix == '.png')}")
        from wisconsin.workloads.inventory import disk_line

        dc_data = Path(_run.config.data_dir)  # the bench's own directory under --data
        databases = [dc_data / f"dc{r.partitions}" for r in _run.results]
        click.echo(disk_line(dc_data, databases, Path(path)))
        return
    if resume_path is not None:
        raise click.UsageError(
            "--resume continues an interrupted DebitCredit bench; for a Wisconsin run use "
            "`wisconsin run --resume RUN.json`"
        )
    only_dc = _given("branches", "scaled_tps", "step_seconds", "rule")
    if only_dc:
        raise click.UsageError(
            f"{', '.join(only_dc)}: DebitCredit options (--workload debitcredit)"
        )
    refuse_with_repeat(ctx)
    import time

    from wisconsin.measure.runner import RunOptions
    from wisconsin.workloads.wisconsin.pipeline import (
        BENCH_PARTITIONS,
        check_disk_budget,
        check_outputs,
        disk_plan,
        earlier_sizes,
        plan_sizes,
        preset_specs,
    )
    from wisconsin.workloads.wisconsin.pipeline import bench as run_bench
    from wisconsin.workloads.wisconsin.presets import get_preset
    from wisconsin.workloads.wisconsin.queries import CATALOG

    started = time.monotonic()
    refuse_cold_in_memory(cache, data_dir, cluster_address)
    # before the calibration probe and the build: both are wasted if no run file can be saved
    check_outputs(out, mode)
    if preset is None and repeat is None:
        # within the time budget the calibrated bench plans SIZING_ROUNDS rounds of one block
        # each (15 would shrink its tables under the harness bound); options given win
        from wisconsin.workloads.wisconsin.pipeline import SIZING_ROUNDS

        default = click.core.ParameterSource.DEFAULT
        if ctx.get_parameter_source("min_reps") == default:
            min_reps = SIZING_ROUNDS
        if ctx.get_parameter_source("blocks") == default:
            blocks = min(blocks, min_reps)
    max_reps = checked_max_reps(min_reps, max_reps)
    if time_budget is None and preset is None:
        time_budget = DEFAULT_TIME_BUDGET_S
    if cluster_address is None and worker_data is not None:
        raise click.UsageError("--worker-data needs --cluster")
    if preset is not None:
        chosen = get_preset(preset)
        parts = partitions or chosen.partitions
    else:
        if cluster_address is not None:
            raise click.UsageError("--cluster needs a --preset (calibration probes this machine)")
        from wisconsin.measure.calibrate import probe
        from wisconsin.measure.environment import usable_cores

        parts = partitions or BENCH_PARTITIONS
        check_disk_budget(disk_budget, parts)  # before the probe writes its table
        probe_dir = Path(data_dir) / "_probe"
        # announced before the probe writes its tables (kept there: the next bench reuses them)
        click.echo(
            f"calibrating this machine: probe tables go to {probe_dir.absolute()} (kept for "
            "the next bench); cold and warm scans, dispatch..."
        )
        found = probe(
            probe_dir,
            max_partitions=min(usable_cores(), max(parts)),
            scan=CATALOG.get("scan"),
        )
        plan = plan_sizes(
            found,
            disk_budget=disk_budget,
            time_budget_s=time_budget - (time.monotonic() - started),
            partitions=parts,
            rounds=repeat or min_reps,
            blocks=min(blocks, repeat or min_reps),
        )
        earlier = earlier_sizes(plan, seed, data_dir)
        reuse_note = ""
        if earlier is not None:  # a second bench on the same --data reuses its tables
            reuse_note = (
                f" (reused: the tables an earlier bench built in {data_dir}; this probe "
                f"sized F {plan.f_rows:,} and G {plan.g_rows:,})"
            )
            plan = earlier
        chosen = plan.preset
        click.echo(
            f"probe: {found.cores} cores; cold full-row scan "
            f"{(found.cold_scan_rows_per_s or 0) / 1e6:.2f} M rows/s per process; storage "
            f"{(found.storage_read_bytes_per_s or 0) / 2**20:.0f} MB/s; harness overhead "
            f"{(found.dispatch_s or 0) * 1e3:.1f} ms at P = {found.dispatch_partitions}"
        )
        click.echo(
            f"sizes: F {plan.f_rows:,} rows at P = {','.join(map(str, parts))}, G "
            f"{plan.g_rows:,} rows per partition at P = {','.join(map(str, plan.g_partitions))} "
            f"(a core each) (within --disk-budget {_gb(disk_budget)}; "
            f"the disk they take is on the next line), ~{plan.predicted_s / 60:.0f} min predicted "
            f"(budget {time_budget / 60:.0f} min); shortest headline scan ~"
            f"{plan.min_scan_s:.2f} s vs {plan.bound_s:.2f} s needed{reuse_note}"
        )
        for note in plan.notes:
            click.echo(f"note: {note}")
    disk = disk_plan(preset_specs(chosen, seed, ("F", "G"), parts), data_dir, bool(cluster_address))
    _announce_bench(disk, data_dir, out)
    engine = engine_config(
        mode, parts, None, 3600, cluster_address, (tls_ca, tls_cert, tls_key), transport
    )
    opts = RunOptions(
        catalog=CATALOG,
        data_dir=data_dir,
        mode=mode,
        partitions=parts,
        g_partitions=chosen.g_partitions,
        repeat=repeat,
        out=out,
        engine=engine,
        cache=cache,
        min_reps=min_reps,
        max_reps=max_reps,
        target_ci=target_ci,
        blocks=blocks,
    )
    with progress_display(quiet) as progress:
        result = run_bench(
            chosen,
            data_dir,
            seed,
            opts,
            progress=progress,
            worker_data=worker_data,
            deadline=None if time_budget is None else started + time_budget,
            announce=click.echo,
        )
    if not quiet:
        from wisconsin.workloads.wisconsin.report import short_text

        # one screen: the verdict; every section is in the report file named below
        click.echo(short_text([result.run], [result.run_path]))
    reused = f" (reused {', '.join(result.tables_reused)})" if result.tables_reused else ""
    click.echo(f"tables:   {data_dir}{reused}")
    click.echo(f"run file: {result.run_path} ({result.run.stop_reason})")
    click.echo(f"report:   {result.report_path} (every section)")
    click.echo(f"html:     {result.html_path}")
    click.echo(
        f"figures:  {len(result.figures)} files in {result.run_path.parent}, e.g. "
        f"{next((f for f in result.figures if 'overview' in f.name and f.suffix == '.png'), result.figures[0])}"
    )
    click.echo(
        f"bench took {time.monotonic() - started:.0f} s; check it with `wisconsin audit {result.run_path}`"
    )
    from wisconsin.workloads.inventory import disk_line

    tables = [Path(data_dir) / s.name for s in preset_specs(chosen, seed, ("F", "G"), parts)]
    click.echo(disk_line(Path(data_dir), tables, result.run_path, bool(cluster_address)))


def _gb(n: int) -> str:
    from wisconsin.builds.cost import size  # one format for one figure (the cost line's)

    return size(n)


def _announce_bench(plan, data_dir: str, out: str) -> None:
    """Say where bench writes and how much disk it needs before it writes anything;
    refuse at once when the local disk cannot hold the tables."""
    data = Path(data_dir).absolute()
    reused = f" ({', '.join(plan.reused)} already built)" if plan.reused else ""
    if plan.free_bytes is None:
        where = f"on the cluster workers' disks (manifests in {data})"
    else:
        where = f"in {data}, {_gb(plan.free_bytes)} free there"
        if plan.new_bytes * 1.1 > plan.free_bytes:
            raise click.ClickException(
                f"bench needs about {_gb(plan.new_bytes)} for its tables in {data} but only "
                f"{_gb(plan.free_bytes)} are free: free some space, choose another --data, "
                "or a smaller --preset/--partitions"
            )
    click.echo(
        f"bench: about {_gb(plan.new_bytes)} of tables to generate{reused} {where}; "
        f"run file, report and figures go to {Path(out).absolute()}"
    )


# what `bench --workload debitcredit` reads; any other option given is refused, not ignored
DEBITCREDIT_OPTIONS = frozenset(
    {"workload", "data_dir", "partitions", "seed", "repeat", "out", "quiet", "branches",
     "scaled_tps", "step_seconds", "rule", "resume_path", "cluster_address"}
)  # fmt: skip


def _given(*names: str) -> list[str]:
    return given(click.get_current_context(), *names)
