"""Commands on tables: generate, info, repair, export."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from wisconsin import workloads
from wisconsin.cli import exits
from wisconsin.cli.options import (
    PRESET,
    SEED,
    cluster_options,
    console,
    data_option,
    duckdb_dir,
    engine_target,
    parse_int_list,
    parse_kinds,
    parsed,
    progress_display,
    refuse_ignored,
    usage_errors,
)
from wisconsin.workloads.options import InfoOptions, RepairOptions
from wisconsin.workloads.wisconsin.tables import captured_logs

# --------------------------------------------------------------------------- generate


@click.command()
@click.option(
    "--kind",
    default="F,G",
    show_default=True,
    callback=parse_kinds,
    help="F (fixed size: speedup), G (fixed rows per partition: scaleup), or F,G.",
)
@click.option(
    "--rows",
    type=int,
    default=None,
    help="F: total rows; G: rows per partition. Overrides the preset (needs one --kind).",
)
@click.option(
    "--partitions",
    callback=parse_int_list,
    default=None,
    help="Comma-separated partition counts (default: the preset's, e.g. 2,4,8,16).",
)
@PRESET
@SEED
@data_option("Directory holding one sub-directory per table.")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Concurrent builder processes (default: cores).",
)
@click.option("--quiet", is_flag=True, help="No progress bar or progress lines.")
@cluster_options(worker_data=True)
def generate(
    kind,
    rows,
    partitions,
    preset,
    seed,
    data_dir,
    jobs,
    quiet,
    cluster_address,
    tls_ca,
    tls_cert,
    tls_key,
    worker_data,
) -> None:
    """Build F and/or G tables, each partition in its own process (or on its cluster worker)."""
    from wisconsin.store import TableSpec
    from wisconsin.workloads.wisconsin.presets import get_preset

    p = get_preset(preset)
    if rows is not None and len(kind) > 1:
        raise click.BadParameter(
            "--rows means different things for F and G; give one --kind", param_hint="--rows"
        )
    specs = [
        TableSpec(k, rows if rows is not None else p.rows_for(k), n_parts, seed)
        for k in kind
        for n_parts in (partitions or p.partitions)
    ]
    if cluster_address is None:
        engine_target(None, "shared-nothing", tls_ca, tls_cert, tls_key)
        if worker_data is not None:
            raise click.UsageError("--worker-data needs --cluster")
    elif jobs is not None:
        raise click.UsageError("--jobs has no effect with --cluster (each worker builds its own)")
    client = None
    with captured_logs(cluster_address, data_dir):
        if cluster_address is not None:
            from wisconsin.cluster import connect, resolve_target

            client = connect(*resolve_target(cluster_address, tls_ca, tls_cert, tls_key))
        result = _build(data_dir, specs, jobs, quiet, client, worker_data)
    for line in _built(result, data_dir):
        click.echo(line)
    from wisconsin.workloads.inventory import disk_line

    tables = [Path(data_dir) / m.name for m in result.manifests]
    click.echo(disk_line(Path(data_dir), tables, on_cluster=cluster_address is not None))


def _built(result, data_dir) -> list[str]:
    """A line per table generate built or kept (where, how split), and what it built."""
    lines = []
    for m in result.manifests:
        note = " (already built)" if m.name in result.reused_tables else ""
        owners = sorted({f"{p.worker}@{p.host}" for p in m.parts if p.worker})
        note += f" on {', '.join(owners)}" if owners else ""
        sizes = sorted({p.rows for p in m.parts})
        if len(sizes) > 1:  # the rows do not divide evenly: say how they were split
            note += f" of {sizes[0]:,}-{sizes[-1]:,} rows (uneven: {m.rows:,} / {m.partitions})"
        parts = f"{m.partitions} partition{'s' * (m.partitions != 1)}"
        lines.append(f"{Path(data_dir) / m.name}: {m.rows:,} rows in {parts}{note}")
    if result.rows_built:
        kept = result.reused_partitions
        lines.append(
            f"built {result.built_partitions} partition{'s' * (result.built_partitions != 1)} "
            f"({result.rows_built:,} rows) in "
            f"{result.seconds:.1f} s, {result.rows_per_second / 1e6:.2f} M rows/s"
            + (f"; {kept} partition{'s' * (kept != 1)} kept from an earlier build" if kept else "")
        )
    return lines


def _build(data_dir, specs, jobs, quiet, client, worker_data):
    from wisconsin.builds import build_tables

    try:
        with progress_display(quiet) as progress:
            return build_tables(
                data_dir,
                specs,
                jobs=jobs,
                progress=progress,
                announce=None if quiet else (lambda line: click.echo(line, err=True)),
                client=client,
                worker_data=worker_data,
            )
    finally:
        if client is not None:
            client.close()


# --------------------------------------------------------------------------- info / export


@click.command()
@click.argument("table_dir", type=click.Path(), callback=duckdb_dir)
@click.option("--no-verify", is_flag=True, help="Print the manifest without re-reading the files.")
@click.option(
    "--deep",
    is_flag=True,
    help="Also recompute the full content digest of both tables in every partition.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the manifest and what the check found (verification) as JSON.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=600,
    show_default=True,
    help="Seconds the cluster's workers may take to verify.",
)
@cluster_options(worker_data=False)
@click.pass_context
def info(ctx, table_dir, no_verify, deep, **_options) -> None:
    """Print a table's manifest and check its files: row counts, key ranges, DuckDB block
    checksums, sample rows against the generator (see docs/storage.md); with --cluster,
    partitions on cluster workers are checked there, by their owners."""
    if no_verify and deep:
        raise click.UsageError("--deep checks the files, --no-verify reads none: give one")
    workload = workloads.get(workloads.of_table(table_dir))
    opts = parsed(ctx, InfoOptions, getattr(workload, "INFO_TAKES", None))
    if opts.cluster_address is None:
        refuse_ignored(
            ctx,
            ("timeout",),
            "it is how long the cluster's workers may take to verify; without --cluster the "
            "table is checked here, with no time limit",
        )
    with usage_errors():
        lines, problem = workload.info_table(table_dir, opts)
    for line in lines:
        click.echo(line, err=line.startswith(("problem:", "Error:")))
    if problem is not None:
        sys.exit(exits.CODE[problem])


@click.command()
@click.argument("table_dir", type=click.Path(), callback=duckdb_dir)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Concurrent builder processes (default: cores).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@cluster_options(worker_data=False)
@click.pass_context
def repair(ctx, table_dir, quiet, **_options) -> None:
    """The one recovery verb: rebuild exactly the damaged, missing or foreign partitions of
    a table (on their cluster workers with --cluster) and settle an interrupted update; on a
    DebitCredit database, apply the remote halves a crash left decided but undone."""
    workload = workloads.get(workloads.of_table(table_dir))
    opts = parsed(ctx, RepairOptions, getattr(workload, "REPAIR_TAKES", None))
    with usage_errors():
        lines, problem = workload.repair_table(table_dir, opts, console(quiet))
    for line in lines:
        click.echo(line)
    if problem is not None:  # still damaged: each line says what
        sys.exit(exits.CODE[problem])


@click.command()
@click.argument("table_dir", type=click.Path(), callback=duckdb_dir)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    callback=duckdb_dir,
    required=True,
    help="Directory for part-NNN.parquet files.",
)
def export(table_dir, out_dir) -> None:
    """Write a table to Parquet, one file per partition, for other engines."""
    from wisconsin.store.export import export_parquet

    for path in export_parquet(table_dir, out_dir):
        click.echo(str(path))
