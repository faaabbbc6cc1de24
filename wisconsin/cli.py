"""Command-line interface. The only module that imports click: commands parse, call one
library function, print. Library errors (WisconsinError) become one line and exit 2."""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from wisconsin import WisconsinError, __version__

click.ClickException.exit_code = 2


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except WisconsinError as exc:
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt:
            what = {
                "generate": "finished partitions are kept and the next generate resumes",
                "bench": "finished partitions are kept; no run file was written",
                "run": "no run file was written",
            }.get(ctx.invoked_subcommand or "", "nothing was written")
            click.echo(f"interrupted; {what}", err=True)
            sys.exit(130)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="wisconsin")
def cli() -> None:
    """Speedup and scaleup benchmark of partitioned tables (Tandem NonStop SQL R2, 1989)."""


# --------------------------------------------------------------------------- parsing helpers


def _int_list(ctx, param, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        items = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None
    if not items or any(i <= 0 for i in items):
        raise click.BadParameter(f"expected positive integers, got {value!r}")
    return tuple(sorted(set(items)))


def _kinds(ctx, param, value: str) -> tuple[str, ...]:
    kinds = tuple(dict.fromkeys(k.strip().upper() for k in value.split(",") if k.strip()))
    bad = [k for k in kinds if k not in ("F", "G")]
    if bad or not kinds:
        raise click.BadParameter(f"unknown table kind {','.join(bad) or value!r}: use F, G or F,G")
    return kinds


def _cluster_options(worker_data: bool):
    """--cluster and the TLS files (and --worker-data where tables are generated)."""

    def deco(fn):
        opts = [
            click.option(
                "--cluster",
                "cluster_address",
                default=None,
                metavar="ADDRESS",
                help="Dask scheduler (tcp://host:port or tls://host:port); shared-nothing only.",
            ),
            click.option("--tls-ca", type=click.Path(dir_okay=False), help="CA bundle (PEM)."),
            click.option(
                "--tls-cert", type=click.Path(dir_okay=False), help="Client certificate (PEM)."
            ),
            click.option("--tls-key", type=click.Path(dir_okay=False), help="Its private key."),
        ]
        if worker_data:
            opts.append(
                click.option(
                    "--worker-data",
                    default=None,
                    help="Data root on each worker host, unless the worker's "
                    "$WISCONSIN_DATA_DIR is set (default: the --data path). See docs/cluster.md.",
                )
            )
        for opt in reversed(opts):
            fn = opt(fn)
        return fn

    return deco


def _engine_target(cluster_address, mode, tls_ca, tls_cert, tls_key):
    """(address, Security) for EngineConfig, or (None, None) without --cluster."""
    if cluster_address is None:
        if tls_ca or tls_cert or tls_key:
            raise click.UsageError("--tls-ca/--tls-cert/--tls-key need --cluster")
        return None, None
    if mode != "shared-nothing":
        raise click.UsageError("--cluster needs --mode shared-nothing")
    from wisconsin.cluster import resolve_target

    return resolve_target(cluster_address, tls_ca, tls_cert, tls_key)


# --------------------------------------------------------------------------- shared options

PRESET = click.option(
    "--preset",
    default="laptop",
    show_default=True,
    help="Table sizes: tiny, laptop, clx or vlx (the spec's Table 1).",
)
SEED = click.option(
    "--seed",
    type=int,
    default=1989,
    show_default=True,
    help="Generator seed: the same seed and sizes give the same rows.",
)
MODE = click.option(
    "--mode",
    type=click.Choice(["shared-nothing", "shared-memory"]),
    default="shared-nothing",
    show_default=True,
    help="One worker process per partition, or one DuckDB with P threads.",
)
REPEAT = click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Timed repetitions per (table, query).",
)


def data_option(help_text: str):
    return click.option(
        "--data",
        "data_dir",
        type=click.Path(file_okay=False),
        default="wisconsin-data",
        show_default=True,
        help=help_text,
    )


def _engine_config(mode, partitions, memory_limit, timeout, cluster_address, tls):
    from wisconsin.engine import EngineConfig
    from wisconsin.runner import default_memory_limit

    address, security = _engine_target(cluster_address, mode, *tls)
    return EngineConfig(
        memory_limit=memory_limit or default_memory_limit(mode, partitions),
        timeout_s=timeout,
        cluster=address,
        security=security,
    )


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator:
    """A rich progress bar with rows/s; yields a (label, done, total) callback."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=False) as bar:
        tasks: dict[str, int] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=max(total, 1), rate="")
            task = bar.tasks[tasks[label]]
            elapsed = task.elapsed or 0.0
            rate = f"{done / elapsed / 1e6:.2f} M rows/s" if elapsed > 0.5 and done else ""
            bar.update(tasks[label], completed=done, total=max(total, 1), rate=rate)

        yield update


# --------------------------------------------------------------------------- generate


@cli.command()
@click.option(
    "--kind",
    default="F,G",
    show_default=True,
    callback=_kinds,
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
    callback=_int_list,
    default=None,
    help="Comma-separated partition counts (default: the preset's, e.g. 2,4,8,16).",
)
@PRESET
@SEED
@data_option("Directory holding one sub-directory per table.")
@click.option(
    "--jobs", type=int, default=None, help="Concurrent builder processes (default: cores)."
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_cluster_options(worker_data=True)
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
    from wisconsin.build import build_tables
    from wisconsin.presets import get_preset
    from wisconsin.store import TableSpec

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
        _engine_target(None, "shared-nothing", tls_ca, tls_cert, tls_key)
        if worker_data is not None:
            raise click.UsageError("--worker-data needs --cluster")
    elif jobs is not None:
        raise click.UsageError("--jobs has no effect with --cluster (each worker builds its own)")
    with _progress(not quiet and sys.stderr.isatty()) as progress:
        if cluster_address is None:
            result = build_tables(
                data_dir, specs, jobs=jobs, progress=progress, announce=click.echo
            )
        else:
            from wisconsin.cluster import generate_on_cluster

            result = generate_on_cluster(
                cluster_address,
                data_dir,
                specs,
                tls_ca=tls_ca,
                tls_cert=tls_cert,
                tls_key=tls_key,
                worker_data=worker_data,
                progress=progress,
            )
    for m in result.manifests:
        note = " (already built)" if m.name in result.reused_tables else ""
        owners = sorted({f"{p.worker}@{p.host}" for p in m.parts if p.worker})
        note += f" on {', '.join(owners)}" if owners else ""
        click.echo(f"{Path(data_dir) / m.name}: {m.rows:,} rows in {m.partitions} partitions{note}")
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


# --------------------------------------------------------------------------- info / export


@cli.command()
@click.argument("table_dir", type=click.Path())
@click.option("--no-verify", is_flag=True, help="Print the manifest without re-reading the files.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def info(table_dir, no_verify, as_json) -> None:
    """Print a table's manifest and verify its files (row counts, key ranges, checksums)."""
    import dataclasses

    from wisconsin.store import read_manifest, verify_table

    if no_verify:
        m, problems = read_manifest(table_dir), []
    else:
        m, problems = verify_table(table_dir)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(m), indent=1))
    else:
        click.echo(
            f"{m.name}: kind {m.kind}, {m.rows:,} rows, {m.partitions} partitions, "
            f"seed {m.seed}, generator {m.generator_version}, created {m.created_utc}"
        )
        click.echo(f"storage: {', '.join(f'{k}={v}' for k, v in m.storage.items())}")
        for p in m.parts:
            where = f"  on {p.worker}@{p.host}" if p.worker else ""
            click.echo(
                f"  {p.file}  unique2 [{p.lo:,}, {p.hi:,})  {p.rows:,} rows  {p.checksum}{where}"
            )
    if problems:
        for line in problems:
            click.echo(f"problem: {line}", err=True)
        raise click.ClickException(f"{table_dir}: {len(problems)} problem(s) found")
    if not no_verify and not as_json:
        remote = [p.index for p in m.parts if p.worker]
        if remote:
            click.echo(
                f"verified: every local partition matches the manifest; partitions "
                f"{', '.join(map(str, remote))} live on cluster workers and were not read"
            )
        else:
            click.echo("verified: every partition matches the manifest")


@cli.command()
@click.argument("table_dir", type=click.Path())
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="Directory for part-NNN.parquet files.",
)
def export(table_dir, out_dir) -> None:
    """Write a table to Parquet, one file per partition, for other engines."""
    from wisconsin.store import export_parquet

    for path in export_parquet(table_dir, out_dir):
        click.echo(str(path))


# --------------------------------------------------------------------------- bench


@cli.command()
@PRESET
@data_option("Where tables are generated (and reused from).")
@MODE
@click.option(
    "--partitions",
    callback=_int_list,
    default=None,
    help="Partition counts (default: the preset's).",
)
@SEED
@REPEAT
@click.option(
    "--out", default="runs", show_default=True, help="Directory for run file, report, figures."
)
@click.option("--quiet", is_flag=True, help="No progress bar, no report on the terminal.")
@_cluster_options(worker_data=True)
def bench(
    preset,
    data_dir,
    mode,
    partitions,
    seed,
    repeat,
    out,
    quiet,
    cluster_address,
    tls_ca,
    tls_cert,
    tls_key,
    worker_data,
) -> None:
    """The main job: generate, run F and G at every partition count, report and plot."""
    from wisconsin.bench import bench as run_bench
    from wisconsin.presets import get_preset
    from wisconsin.runner import RunOptions

    parts = partitions or get_preset(preset).partitions
    if cluster_address is None and worker_data is not None:
        raise click.UsageError("--worker-data needs --cluster")
    engine = _engine_config(mode, parts, None, 3600, cluster_address, (tls_ca, tls_cert, tls_key))
    opts = RunOptions(
        data_dir=data_dir, mode=mode, partitions=parts, repeat=repeat, out=out, engine=engine
    )
    with _progress(not quiet and sys.stderr.isatty()) as progress:
        result = run_bench(
            preset,
            data_dir,
            seed,
            opts,
            progress=progress,
            worker_data=worker_data,
            announce=click.echo,
        )
    if not quiet:
        click.echo(result.report_text)
    reused = f" (reused {', '.join(result.tables_reused)})" if result.tables_reused else ""
    click.echo(f"tables:   {data_dir}{reused}")
    click.echo(f"run file: {result.run_path}")
    click.echo(f"report:   {result.report_path}")
    click.echo(
        f"figures:  {len(result.figures)} files in {result.run_path.parent}, e.g. "
        f"{next((f for f in result.figures if 'overview' in f.name and f.suffix == '.png'), result.figures[0])}"
    )


# --------------------------------------------------------------------------- run


@cli.command("run")
@data_option("Directory the tables were generated into.")
@MODE
@click.option(
    "--tables",
    "kinds",
    default="F,G",
    show_default=True,
    callback=_kinds,
    help="F (speedup), G (scaleup) or F,G.",
)
@click.option(
    "--partitions",
    callback=_int_list,
    default=None,
    help="Partition counts (default: every count generated in --data for the chosen tables).",
)
@click.option(
    "--queries", "query_list", default="scan,select,average,update,join", show_default=True
)
@click.option(
    "--scan-variant",
    type=click.Choice(["full-row", "predicate-column", "as-written"]),
    default="full-row",
    show_default=True,
    help="How the table scan is kept from being answered without scanning.",
)
@REPEAT
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Untimed warm-up repetitions (recorded, tagged cold).",
)
@click.option(
    "--out", default="runs", show_default=True, help="Directory for the run file, or a .json path."
)
@click.option("--memory-limit", default=None, help="DuckDB memory_limit per instance.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=3600,
    show_default=True,
    help="Seconds any worker may take to answer.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_cluster_options(worker_data=False)
def run_command(
    data_dir,
    mode,
    kinds,
    partitions,
    query_list,
    scan_variant,
    repeat,
    warmup,
    out,
    memory_limit,
    timeout,
    quiet,
    cluster_address,
    tls_ca,
    tls_cert,
    tls_key,
) -> None:
    """Time the five queries on F and G tables at each partition count; save a run file."""
    from wisconsin.queries import parse_queries
    from wisconsin.runner import RunOptions, available_partitions, run

    partitions = partitions or available_partitions(data_dir, kinds) or None
    engine = _engine_config(
        mode,
        partitions or (16,),
        memory_limit,
        timeout,
        cluster_address,
        (tls_ca, tls_cert, tls_key),
    )
    opts = RunOptions(
        data_dir=data_dir,
        mode=mode,
        kinds=kinds,
        partitions=partitions,
        queries=parse_queries(query_list),
        scan_variant=scan_variant,
        repeat=repeat,
        warmup=warmup,
        out=out,
        engine=engine,
    )
    with _progress(not quiet and sys.stderr.isatty()) as progress:
        result, path = run(opts, progress=progress)
    _print_run_summary(result)
    click.echo(f"run file: {path}")


def _print_run_summary(result) -> None:
    by_table: dict[str, list[str]] = {}
    for m in result.measurements:
        by_table.setdefault(m.table, []).append(f"{m.query} {statistics.median(m.times) * 1e3:.1f}")
    click.echo(f"{result.config.mode}: median ms per query (all answers verified)")
    for table, cells in by_table.items():
        click.echo(f"  {table:>4}  " + "  ".join(cells))


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "csv", "json"]),
    default="text",
    show_default=True,
)
def report(runs, fmt) -> None:
    """Speedup and scaleup tables of run files, beside Tandem's published Table 2."""
    from wisconsin.report import report_files

    click.echo(report_files(runs, fmt), nl=False)


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to write the figures (default: next to each run file).",
)
def plot(runs, out_dir) -> None:
    """Speedup and scaleup figures (PNG and SVG) of run files; prints the written paths."""
    from wisconsin.plots import plot_files

    for path in plot_files(runs, out_dir):
        click.echo(str(path))


@cli.command()
@click.argument("run_a", type=click.Path(dir_okay=False))
@click.argument("run_b", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Compare runs of different tables or seeds anyway.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
def compare(run_a, run_b, force, fmt) -> None:
    """Compare two runs of the same tables: time ratios, speedups, significance."""
    from wisconsin.compare import compare_files

    click.echo(compare_files(run_a, run_b, force=force, fmt=fmt), nl=False)


@cli.command("cli-reference", hidden=True)
def cli_reference() -> None:
    """Print every command's --help as Markdown (docs/cli.md is this output)."""
    out = [
        "# CLI reference",
        "",
        "Every command's `--help`. Generated by `wisconsin cli-reference > docs/cli.md`;",
        "a test fails when this file is out of date.",
        "",
    ]
    names = [""] + [n for n in cli.list_commands(None) if not cli.get_command(None, n).hidden]
    for name in names:
        cmd = cli.get_command(None, name) if name else cli
        title = f"wisconsin {name}".strip()
        ctx = click.Context(cmd, info_name=title, terminal_width=100, max_content_width=100)
        out += [f"## {title}", "", "```", cmd.get_help(ctx), "```", ""]
    click.echo("\n".join(out))


def main() -> None:
    """Entry point: every error a user can cause is one line on stderr and exit code 2."""
    try:
        code = cli.main(prog_name="wisconsin", standalone_mode=False)
    except click.UsageError as exc:
        where = f"wisconsin {exc.ctx.info_name}" if exc.ctx and exc.ctx.parent else "wisconsin"
        click.echo(f"Error: {exc.format_message()} (see '{where} --help')", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"Error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
