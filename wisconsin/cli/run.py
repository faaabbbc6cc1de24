"""`wisconsin run`: measure generated tables."""

from __future__ import annotations

import statistics

import click

from wisconsin.cli.options import (
    DEFAULT_OUT,
    MODE,
    REPEAT,
    TRANSPORT,
    checked_max_reps,
    cluster_options,
    data_option,
    engine_config,
    measurement_options,
    parse_int_list,
    parse_kinds,
    progress_display,
    refuse_cold_in_memory,
    refuse_with_repeat,
)

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
def run_command(
    ctx,
    data_dir,
    mode,
    kinds,
    partitions,
    query_list,
    scan_variant,
    cache,
    min_reps,
    max_reps,
    target_ci,
    blocks,
    repeat,
    transport,
    time_budget,
    warmup,
    order_seed,
    out,
    memory_limit,
    timeout,
    resume_path,
    quiet,
    cluster_address,
    tls_ca,
    tls_cert,
    tls_key,
) -> None:
    """Time the five queries on F and G tables at each partition count, in interleaved
    rounds; save a run file."""
    from wisconsin.measure.runner import resume, run
    from wisconsin.workloads.wisconsin.queries import CATALOG

    if resume_path is not None:
        # --time-budget: a run whose budget ran out before its first timed round needs more
        allowed = {
            "resume_path",
            "timeout",
            "time_budget",
            "quiet",
            "tls_ca",
            "tls_cert",
            "tls_key",
        }
        given = [
            f"--{k.replace('_', '-')}"
            for k in ctx.params
            if k not in allowed
            and ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise click.UsageError(
                f"--resume takes its options from the run file; drop {', '.join(given)}"
            )
        with progress_display(quiet) as progress:
            result, path = resume(
                resume_path,
                progress=progress,
                catalog=CATALOG,
                tls=(tls_ca, tls_cert, tls_key),
                timeout_s=timeout,
                time_budget_s=time_budget,
            )
        print_run_summary(result)
        click.echo(f"run file: {path}")
        return
    opts = run_options(ctx)
    with progress_display(quiet) as progress:
        result, path = run(opts, progress=progress)
    print_run_summary(result)
    click.echo(f"run file: {path}")


def run_options(ctx: click.Context):
    """The RunOptions of a parsed `run` command line (not --resume): `run` and each side of
    `ab` build theirs here."""
    from wisconsin.measure.runner import RunOptions, available_partitions
    from wisconsin.workloads.wisconsin.queries import CATALOG, QUERIES, parse_queries

    p = ctx.params
    refuse_with_repeat(ctx)
    data_dir, cluster_address, partitions = p["data_dir"], p["cluster_address"], p["partitions"]
    refuse_cold_in_memory(p["cache"], data_dir, cluster_address)
    explicit = ctx.get_parameter_source("kinds")
    kinds, partitions, g_partitions = _tables_to_run(
        data_dir, p["kinds"], explicit != click.core.ParameterSource.DEFAULT, partitions
    )
    partitions = partitions or available_partitions(data_dir, kinds) or None
    engine = engine_config(
        p["mode"],
        (*(partitions or (16,)), *(g_partitions or ())),
        p["memory_limit"],
        p["timeout"],
        cluster_address,
        (p["tls_ca"], p["tls_cert"], p["tls_key"]),
        p["transport"],
    )
    query_list = p["query_list"]
    return RunOptions(
        catalog=CATALOG,
        data_dir=data_dir,
        mode=p["mode"],
        kinds=kinds,
        partitions=partitions,
        g_partitions=g_partitions,
        queries=parse_queries(query_list) if query_list is not None else QUERIES,
        scan_variant=p["scan_variant"],
        repeat=p["repeat"],
        warmup=p["warmup"],
        out=p["out"],
        engine=engine,
        cache=p["cache"],
        min_reps=p["min_reps"],
        max_reps=checked_max_reps(p["min_reps"], p["max_reps"]),
        target_ci=p["target_ci"],
        blocks=p["blocks"],
        time_budget_s=p["time_budget"],
        order_seed=p["order_seed"],
    )


def _tables_to_run(data_dir: str, kinds, explicit: bool, partitions):
    """(kinds, partitions, g_partitions) for `run`: without --tables, the kinds that are
    generated; without --partitions, the counts generated for every kind, or each kind's own
    (F's, and G's as g_partitions) when G's are some of F's (a calibrated bench builds G
    only up to the cores). A one-line error says what is missing."""
    from wisconsin.store import tables_in

    have = tables_in(data_dir)
    if not have:
        raise click.ClickException(_no_tables(data_dir))
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
        raise click.ClickException(
            f"no {' or '.join(missing)} tables in {data_dir} ({holds}): generate them{hint}"
        )
    if partitions is None and set(kinds) == {"F", "G"} and counts["G"] < counts["F"]:
        return kinds, tuple(sorted(counts["F"])), tuple(sorted(counts["G"]))
    if partitions is None:
        common = set.intersection(*(counts[k] for k in kinds))
        if not common:
            each = "; ".join(f"{k} at P = {', '.join(map(str, sorted(counts[k])))}" for k in kinds)
            raise click.ClickException(
                f"no partition count has every one of {', '.join(kinds)} in {data_dir} "
                f"({each}): choose --tables, or generate the missing tables"
            )
        partitions = tuple(sorted(common))
    return kinds, partitions, None


def _no_tables(data_dir: str) -> str:
    """Why --data holds no complete table, and a fix that works: it is a table (give its
    data directory), a build is still writing it (name the build), or nothing is there."""
    from pathlib import Path

    from wisconsin.store import MANIFEST, lock, tables_in

    path = Path(data_dir)
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
