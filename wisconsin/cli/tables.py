"""Commands on tables: generate, info, repair, export."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from wisconsin.cli.options import (
    PRESET,
    SEED,
    cluster_options,
    data_option,
    duckdb_dir,
    engine_target,
    parse_int_list,
    parse_kinds,
    progress_display,
)

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
    with _cluster_logs(cluster_address, data_dir):
        if cluster_address is not None:
            from wisconsin.cluster import connect, resolve_target

            client = connect(*resolve_target(cluster_address, tls_ca, tls_cert, tls_key))
        result = _build(data_dir, specs, jobs, quiet, client, worker_data)
    for m in result.manifests:
        note = " (already built)" if m.name in result.reused_tables else ""
        owners = sorted({f"{p.worker}@{p.host}" for p in m.parts if p.worker})
        note += f" on {', '.join(owners)}" if owners else ""
        sizes = sorted({p.rows for p in m.parts})
        if len(sizes) > 1:  # the rows do not divide evenly: say how they were split
            note += f" of {sizes[0]:,}-{sizes[-1]:,} rows (uneven: {m.rows:,} / {m.partitions})"
        parts = f"{m.partitions} partition{'s' * (m.partitions != 1)}"
        click.echo(f"{Path(data_dir) / m.name}: {m.rows:,} rows in {parts}{note}")
    if result.rows_built:
        click.echo(
            f"built {result.built_partitions} partition{'s' * (result.built_partitions != 1)} "
            f"({result.rows_built:,} rows) in "
            f"{result.seconds:.1f} s, {result.rows_per_second / 1e6:.2f} M rows/s"
            + (
                f"; {result.reused_partitions} partition{'s' * (result.reused_partitions != 1)} "
                "kept from an earlier build"
                if result.reused_partitions
                else ""
            )
        )
    from wisconsin.workloads.inventory import disk_line

    tables = [Path(data_dir) / m.name for m in result.manifests]
    click.echo(disk_line(Path(data_dir), tables, on_cluster=cluster_address is not None))


def _cluster_logs(cluster_address, directory):
    """A command that is a client of a cluster keeps Dask's logging in a private directory
    inside its data directory (docs/storage.md, 'Where logs go'); nothing otherwise."""
    import contextlib

    if cluster_address is None:
        return contextlib.nullcontext()
    from wisconsin.cluster.logs import captured

    return captured(directory)


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
def info(
    table_dir, no_verify, deep, as_json, timeout, cluster_address, tls_ca, tls_cert, tls_key
) -> None:
    """Print a table's manifest and check its files: row counts, key ranges, DuckDB block
    checksums, sample rows against the generator (see docs/storage.md); with --cluster,
    partitions on cluster workers are checked there, by their owners."""
    import dataclasses

    from wisconsin import workloads
    from wisconsin.store import read_manifest

    if no_verify and deep:
        raise click.UsageError("--deep checks the files, --no-verify reads none: give one")
    if (name := workloads.of_table(table_dir)) != workloads.NAMES[0]:
        if cluster_address is not None or as_json or no_verify:
            raise click.UsageError("--cluster, --json and --no-verify are for Wisconsin tables")
        lines, code = workloads.get(name).info_table(table_dir)
        for line in lines:
            click.echo(line, err=line.startswith("problem:"))
        sys.exit(code)
    from wisconsin.store.check import verify_table
    from wisconsin.store.updates import DecisionLog

    if cluster_address is None:
        engine_target(None, "shared-nothing", tls_ca, tls_cert, tls_key)
    if no_verify:
        m, problems = read_manifest(table_dir), []
    elif cluster_address is not None:
        from wisconsin.cluster import info_on_cluster

        with _cluster_logs(cluster_address, Path(table_dir).absolute().parent):
            m, problems = info_on_cluster(
                table_dir,
                cluster_address,
                tls_ca=tls_ca,
                tls_cert=tls_cert,
                tls_key=tls_key,
                timeout=timeout,
            )
    else:
        m, problems = verify_table(table_dir, deep=deep)
    if as_json:
        # the manifest, and what the check found (a script must not take the one for the other)
        pending = not no_verify and not DecisionLog(table_dir).is_empty()
        remote = [p.index for p in m.parts if p.worker] if cluster_address is None else []
        check = {
            "checked": "none" if no_verify else ("deep" if deep else "cheap"),
            "ok": None if no_verify else not problems and not pending,
            "problems": list(problems),
            "update_pending": pending,
            "not_read": remote,  # partitions on cluster workers, unread without --cluster
        }
        click.echo(json.dumps({**dataclasses.asdict(m), "verification": check}, indent=1))
    else:
        click.echo(
            f"{m.name}: kind {m.kind}, {m.rows:,} rows, {m.partitions} partitions, "
            f"seed {m.seed}, generator {m.generator_version}, created {m.created_utc}, "
            f"id {m.table_id}"
        )
        click.echo(f"storage: {', '.join(f'{k}={v}' for k, v in m.storage.items())}")
        for p in m.parts:
            where = f"  on {p.worker}@{p.host}" if p.worker else ""
            click.echo(
                f"  {p.file}  unique2 [{p.lo:,}, {p.hi:,})  {p.rows:,} rows  {p.checksum}{where}"
            )
    pending = not no_verify and not DecisionLog(table_dir).is_empty()
    if problems:
        for line in problems:
            click.echo(f"problem: {line}", err=True)
        if pending:
            click.echo(_pending_line(table_dir) + " (the problems above may be its doing)")
            sys.exit(1)
        raise click.ClickException(
            f"{table_dir}: {len(problems)} problem(s) found; `wisconsin repair {table_dir}` "
            "rebuilds the damaged partitions"
        )
    if pending:
        # Never "verified" over it: some partitions may hold the update, others not yet.
        click.echo(_pending_line(table_dir))
        sys.exit(1)
    if not no_verify and not as_json:
        remote = [p.index for p in m.parts if p.worker]
        if remote and cluster_address is not None:
            click.echo(
                "verified: every partition matches the manifest, each read by its owner "
                "on the host that wrote it"
            )
        elif remote:
            click.echo(
                f"verified: every local partition matches the manifest; partitions "
                f"{', '.join(map(str, remote))} live on cluster workers and were not read "
                "(give --cluster ADDRESS to verify them there)"
            )
        else:
            how = "full content digests of both tables" if deep else "cheap check"
            click.echo(f"verified: every partition matches the manifest ({how})")


def _pending_line(table_dir) -> str:
    return (
        f"update pending: an interrupted update is recorded in {table_dir}/_txlog and the "
        f"table may differ from its generated rows until it is settled; run `wisconsin "
        f"repair {table_dir}` (a run also settles it when it opens the table)"
    )


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
def repair(table_dir, jobs, quiet, cluster_address, tls_ca, tls_cert, tls_key) -> None:
    """The one recovery verb: rebuild exactly the damaged, missing or foreign partitions of
    a table (on their cluster workers with --cluster) and settle an interrupted update; on a
    DebitCredit database, apply the remote halves a crash left decided but undone."""
    from wisconsin import workloads
    from wisconsin.builds import repair_table

    if (name := workloads.of_table(table_dir)) != workloads.NAMES[0]:
        if cluster_address is not None or jobs is not None:
            raise click.UsageError("--cluster and --jobs are for Wisconsin tables")
        for line in workloads.get(name).repair_table(table_dir):
            click.echo(line)
        return
    address, security = engine_target(cluster_address, "shared-nothing", tls_ca, tls_cert, tls_key)
    client = None
    with _cluster_logs(address, Path(table_dir).absolute().parent):
        if address is not None:
            from wisconsin.cluster import connect

            client = connect(address, security)
        try:
            with progress_display(quiet) as progress:
                result = repair_table(
                    table_dir,
                    jobs=jobs,
                    progress=progress,
                    client=client,
                    announce=None if quiet else (lambda line: click.echo(line, err=True)),
                )
        finally:
            if client is not None:
                client.close()
    if not result.damaged:
        click.echo(f"{table_dir}: every partition matches the manifest; nothing to repair")
        return
    for part, problems in result.damaged.items():
        click.echo(f"rebuilt partition {part}: {problems[0]}")
    click.echo(
        f"{table_dir}: {len(result.damaged)} partition(s) rebuilt and verified "
        f"in {result.seconds:.1f} s"
    )


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
