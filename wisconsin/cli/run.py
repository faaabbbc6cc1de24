"""`wisconsin run`: measure generated tables."""

from __future__ import annotations

import statistics

import click

from wisconsin.cli import exits
from wisconsin.cli.options import (
    DEFAULT_OUT,
    MODE,
    REPEAT,
    TRANSPORT,
    cluster_options,
    data_option,
    measurement_options,
    parse_int_list,
    parse_kinds,
    parsed,
    progress_display,
    refuse_cold_in_memory,
    refuse_ignored,
    refuse_with_repeat,
    usage_errors,
)
from wisconsin.workloads.options import RunCommandOptions

# --------------------------------------------------------------------------- run


@click.command("run")
@data_option("Directory the tables were generated into.")
@MODE
@click.option(
    "--tables",
    "kinds",
    default="F,G",
    callback=parse_kinds,
    help="F (speedup), G (scaleup) or F,G (default: whichever are generated in --data).",
)
@click.option(
    "--partitions",
    callback=parse_int_list,
    default=None,
    help="Partition counts (default: every count generated in --data for the chosen tables).",
)
@click.option(
    "--queries",
    "query_list",
    default=None,
    help="Comma-separated queries.  [default: every registered query: scan, select, average, update, join]",
)
@click.option(
    "--scan-variant",
    type=click.Choice(["full-row", "predicate-column", "as-written"]),
    default="full-row",
    show_default=True,
    help="How the table scan is kept from being answered without scanning.",
)
@measurement_options
@REPEAT
@TRANSPORT
@click.option(
    "--time-budget",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Start no round that would end after this many seconds (default: no limit; with "
    "--resume, replaces the run's budget).",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Untimed executions: cold, a first round of them (evicted first, so tagged cold); "
    "warm, this many (at least 1) right before each timed one.",
)
@click.option(
    "--order-seed",
    type=int,
    default=None,
    help="Seed of the rounds' shuffled order (default: from the clock; always recorded).",
)
@click.option(
    "--out",
    default=DEFAULT_OUT,
    show_default=True,
    help="Directory for the run file, or a .json path.",
)
@click.option(
    "--memory-limit",
    default=None,
    help="DuckDB memory_limit per instance (default: 60% of RAM split among the P instances; "
    "with --cluster, 60% of each worker's Dask memory limit split among its partitions).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=3600,
    show_default=True,
    help="Seconds any worker may take to answer.",
)
@click.option("--quiet", is_flag=True, help="No progress bar or progress lines.")
@click.option(
    "--resume",
    "resume_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="RUN.json",
    help="Continue an incomplete run (its options come from the file).",
)
@cluster_options(worker_data=False)
@click.pass_context
def run_command(ctx, **_options) -> None:
    """Time the five queries on F and G tables at each partition count, in interleaved
    rounds; save a run file."""
    from wisconsin.workloads.wisconsin import workload

    opts = run_command_options(ctx)
    with usage_errors(), progress_display(opts.quiet) as progress:
        result, path = workload.run(opts, progress)
    print_run_summary(result)
    click.echo(f"run file: {path}")
    exits.exit_unless_audited(workload, path)


def run_command_options(ctx: click.Context) -> RunCommandOptions:
    """A parsed `run` command line (`run` and each side of `ab`), refused where its tables
    are in memory and --cache cold, or where --repeat meets the stop rule's options (a
    --resume is refused by the library for any option the run file sets)."""
    opts = parsed(ctx, RunCommandOptions)
    if opts.resume_path is None:
        refuse_with_repeat(ctx)
        refuse_transport_without_workers(ctx, opts.mode)
        refuse_cold_in_memory(opts.cache, opts.data_dir, opts.cluster_address)
    return opts


def refuse_transport_without_workers(ctx: click.Context, mode: str) -> None:
    """--transport says how statements reach shared-nothing's workers: any other mode has
    none, so it would be ignored (`run` and `bench`)."""
    if mode != "shared-nothing":
        refuse_ignored(
            ctx,
            ("transport",),
            f"--mode {mode} has no workers for it to reach (it is for --mode shared-nothing)",
        )


def print_run_summary(result) -> None:
    by_table: dict[str, list[str]] = {}
    for m in result.measurements:
        ms = f"{statistics.median(m.times) * 1e3:.1f}" if m.times else "-"  # none timed
        by_table.setdefault(m.table, []).append(f"{m.query} {ms}")
    c = result.config
    click.echo(
        f"{c.mode}, {c.cache or 'warm'} cache, {c.repeat} rounds ({result.stop_reason}): "
        "median ms per query (all answers verified)"
    )
    for table, cells in by_table.items():
        click.echo(f"  {table:>4}  " + "  ".join(cells))
