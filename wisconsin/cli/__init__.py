"""Command-line interface. The only module that imports click: commands parse, call one
library function, print. Library errors (WisconsinError) become one line and exit 2."""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from wisconsin import WisconsinError, __version__, engines, interrupts, outputs
from wisconsin.workloads import NAMES as WORKLOAD_NAMES

click.ClickException.exit_code = 2


class _Group(click.Group):
    def invoke(self, ctx):
        with interrupts.recorded(), outputs.published() as published:
            return self._invoke(ctx, published)

    def _invoke(self, ctx, published: list[Path]):
        try:
            try:
                done = super().invoke(ctx)
            except RuntimeError as exc:
                # DuckDB's form of a ^C during a query in this process
                if interrupts.is_interrupt(exc):
                    raise KeyboardInterrupt from None
                raise
            interrupts.check()  # a ^C raised where Python discarded it is still a ^C
            return done
        except WisconsinError as exc:
            raise click.ClickException(str(exc)) from None
        except Exception as exc:
            duckdb = sys.modules.get("duckdb")
            if duckdb is not None and isinstance(exc, duckdb.Error):
                # e.g. a damaged block the check before timing does not read (docs/storage.md)
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise click.ClickException(f"DuckDB: {first}") from None
            raise
        except KeyboardInterrupt as exc:
            run_file = getattr(exc, "run_file", None)
            replaced = getattr(exc, "written", None)  # plot --force: ones renamed over old files
            # A ^C right after the outputs were renamed into place (while their paths are
            # printed, or raised again by interrupts.check) leaves them all: say so.
            listed = ", ".join(map(str, published))
            kept = (
                f"what was measured is in {run_file} (incomplete): continue it with "
                f"`wisconsin run --resume {run_file}`"
                if run_file
                # the run had finished: its complete file (and bench's reports) are written
                else f"already written: {listed}"
                if published
                else "no run file was written"
            )
            what = {
                "generate": "finished partitions are kept and the next generate resumes",
                "bench": f"finished partitions are kept; {kept}",
                "run": kept,
                "export": (
                    f"{len(published)} Parquet files were already written: {listed}"
                    if published
                    else "no Parquet file was written"
                ),
                "plot": (
                    f"{len(replaced)} figure files were already replaced: "
                    + ", ".join(map(str, replaced))
                    if replaced
                    else f"{len(published)} figure files were already written: {listed}"
                    if published
                    else "no figure was written"
                ),
            }.get(ctx.invoked_subcommand or "", "nothing was written")
            click.echo(f"interrupted; {what}", err=True)
            sys.exit(130)


HELP_OPTIONS = ["-h", "--help"]


def _print_version(ctx, param, value) -> None:
    if not value or ctx.resilient_parsing:
        return
    from wisconsin.measure.environment import git_commit

    click.echo(f"wisconsin {__version__} (commit {git_commit()})")
    ctx.exit(0)


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": HELP_OPTIONS},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the git commit, and exit.",
)
@click.pass_context
def cli(ctx) -> None:
    """Speedup and scaleup benchmark of partitioned tables (Tandem NonStop SQL R2, 1989)."""
    if ctx.invoked_subcommand is None:  # plain `wisconsin`: help, not an error
        click.echo(ctx.get_help())
        return
    if ctx.invoked_subcommand in ("generate", "run", "bench", "info"):  # --cluster commands
        from wisconsin import cluster

        # The dashboard link and placement warnings: on stderr, beside the progress.
        cluster.set_reporter(lambda line: click.echo(line, err=True))


# --------------------------------------------------------------------------- parsing helpers


def _int_list(ctx, param, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    if any(not v.strip() for v in value.split(",")):  # "2,,4" is a typo, not "2,4"
        raise click.BadParameter(f"empty item in {value!r}: expected e.g. 1,2,4")
    try:
        items = tuple(int(v) for v in value.split(","))
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
    engines.check_cluster(mode, cluster_address)
    from wisconsin.cluster import resolve_target

    return resolve_target(cluster_address, tls_ca, tls_cert, tls_key)


# --------------------------------------------------------------------------- shared options

# Git-ignored, like wisconsin-data/: the repository's runs/ holds only the reference runs.
DEFAULT_OUT = "wisconsin-runs"

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
    type=click.Choice(list(engines.MODES)),
    default=engines.MODES[0],
    show_default=True,
    help="; ".join(f"{e.name}: {e.description}" for e in engines.ENGINES.values()) + ".",
)
TRANSPORT = click.option(
    "--transport",
    type=click.Choice(["direct", "dask"]),
    default="direct",
    show_default=True,
    help="shared-nothing: how timed statements reach the workers: a direct socket per "
    "partition, or a pinned Dask task each (the old path, ~15-25 ms more per statement at "
    "P = 2). A TLS cluster always uses dask (the socket is not encrypted).",
)
REPEAT = click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=None,
    help="Exactly this many timed rounds (sets --min-reps and --max-reps); DebitCredit: "
    "closed windows and passes of the stepped curve per P (default 3).",
)


def measurement_options(fn):
    """--cache, --min-reps, --max-reps, --target-ci, --time-budget (run and bench)."""
    opts = [
        click.option(
            "--cache",
            type=click.Choice(["cold", "warm"]),
            default="cold",
            show_default=True,
            help="cold: every partition evicted from the OS page cache and DuckDB before each "
            "timed execution, proven by the bytes read (the paper's disk-bound tables); warm: "
            "the statement runs untimed right before, data resident.",
        ),
        click.option(
            "--min-reps",
            type=click.IntRange(min=1),
            default=5,
            show_default=True,
            help="Timed rounds at least (each round runs every table and query once).",
        ),
        click.option(
            "--max-reps",
            type=click.IntRange(min=1),
            default=10,
            show_default=True,
            help="Timed rounds at most.",
        ),
        click.option(
            "--target-ci",
            type=click.FloatRange(min=0, min_open=True),
            default=0.10,
            show_default=True,
            help="Stop once every headline ratio's 95% interval is within +- this fraction.",
        ),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _max_reps(min_reps: int, max_reps: int) -> int:
    """--max-reps as given, refused below --min-reps (before bench builds anything); left at
    its default, at least --min-reps."""
    source = click.get_current_context().get_parameter_source("max_reps")
    if source == click.core.ParameterSource.DEFAULT:
        return max(min_reps, max_reps)
    if max_reps < min_reps:
        raise click.BadParameter(
            f"{max_reps} is below --min-reps {min_reps}", param_hint="'--max-reps'"
        )
    return max_reps


def data_option(help_text: str):
    return click.option(
        "--data",
        "data_dir",
        type=click.Path(file_okay=False),
        default="wisconsin-data",
        show_default=True,
        help=help_text,
    )


def _engine_config(
    mode, partitions, memory_limit, timeout, cluster_address, tls, transport="direct"
):
    from wisconsin.engines import default_memory_limit
    from wisconsin.engines.base import EngineConfig

    address, security = _engine_target(cluster_address, mode, *tls)
    if not memory_limit and address:
        from wisconsin.cluster import WORKER_MEMORY_LIMIT

        # Decided on each worker, from its own memory limit: not the client's RAM.
        memory_limit = WORKER_MEMORY_LIMIT
    return EngineConfig(
        memory_limit=memory_limit or default_memory_limit(mode, partitions),
        memory_fraction=None if memory_limit else 0.6,  # default: RAM split per table's P
        timeout_s=timeout,
        cluster=address,
        security=security,
        transport=transport,
    )


LOG_EVERY_S = 15.0


def _log_lines(stream) -> Callable[[str, int, int], None]:
    """Progress as plain timestamped lines, for output that is not a terminal: one when a
    step starts or ends and at most one every LOG_EVERY_S seconds in between."""
    import time
    from datetime import datetime

    state = {"label": None, "at": 0.0}

    def update(label: str, done: int, total: int) -> None:
        now = time.monotonic()
        new, finished = label != state["label"], done >= total > 0
        if not (new or finished or now - state["at"] >= LOG_EVERY_S):
            return
        if finished and not new and state.get("finished") == label:
            return
        state.update(label=label, at=now, finished=label if finished else None)
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        stamp = datetime.now().strftime("%H:%M:%S")
        click.echo(f"[{stamp}] {label}: {done:,}/{total:,}{pct}", file=stream)

    return update


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator:
    """Yields a (label, done, total) callback: a rich progress bar with rows/s on a
    terminal, timestamped log lines on stderr when it is redirected, None when quiet."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():
        yield _log_lines(sys.stderr)
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
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Concurrent builder processes (default: cores).",
)
@click.option("--quiet", is_flag=True, help="No progress bar or progress lines.")
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
    from wisconsin.builds import build_tables
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
        _engine_target(None, "shared-nothing", tls_ca, tls_cert, tls_key)
        if worker_data is not None:
            raise click.UsageError("--worker-data needs --cluster")
    elif jobs is not None:
        raise click.UsageError("--jobs has no effect with --cluster (each worker builds its own)")
    client = None
    if cluster_address is not None:
        from wisconsin.cluster import connect, resolve_target

        client = connect(*resolve_target(cluster_address, tls_ca, tls_cert, tls_key))
    try:
        with _progress(quiet) as progress:
            result = build_tables(
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
@click.option(
    "--deep",
    is_flag=True,
    help="Also recompute the full content digest of both tables in every partition.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=600,
    show_default=True,
    help="Seconds the cluster's workers may take to verify.",
)
@_cluster_options(worker_data=False)
def info(
    table_dir, no_verify, deep, as_json, timeout, cluster_address, tls_ca, tls_cert, tls_key
) -> None:
    """Print a table's manifest and check its files: row counts, key ranges, DuckDB block
    checksums, sample rows against the generator (see docs/storage.md); with --cluster,
    partitions on cluster workers are checked there, by their owners."""
    import dataclasses

    from wisconsin.store import read_manifest, verify_table

    if cluster_address is None:
        _engine_target(None, "shared-nothing", tls_ca, tls_cert, tls_key)
    if no_verify:
        m, problems = read_manifest(table_dir), []
    elif cluster_address is not None:
        from wisconsin.cluster import info_on_cluster

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
        click.echo(json.dumps(dataclasses.asdict(m), indent=1))
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
    if problems:
        for line in problems:
            click.echo(f"problem: {line}", err=True)
        raise click.ClickException(
            f"{table_dir}: {len(problems)} problem(s) found; `wisconsin repair {table_dir}` "
            "rebuilds the damaged partitions"
        )
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


@cli.command()
@click.argument("table_dir", type=click.Path())
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Concurrent builder processes (default: cores).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_cluster_options(worker_data=False)
def repair(table_dir, jobs, quiet, cluster_address, tls_ca, tls_cert, tls_key) -> None:
    """Rebuild exactly the damaged, missing or foreign partitions of a table (on their
    cluster workers with --cluster)."""
    from wisconsin.builds import repair_table

    address, security = _engine_target(cluster_address, "shared-nothing", tls_ca, tls_cert, tls_key)
    client = None
    if address is not None:
        from wisconsin.cluster import connect

        client = connect(address, security)
    try:
        with _progress(quiet) as progress:
            result = repair_table(table_dir, jobs=jobs, progress=progress, client=client)
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


def _bytes(ctx, param, value: str | None) -> int | None:
    if value is None:
        return None
    import re

    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgt]?)i?b?\s*", value.lower())
    if not m:
        raise click.BadParameter(f"expected a size like 10GB or 500MB, got {value!r}")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


@cli.command()
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
    callback=_int_list,
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
    "it, and no round starts that would end after it. Default: 780 (13 min) when "
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
@_cluster_options(worker_data=True)
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
    "--step-seconds",
    type=click.FloatRange(min=0.1),
    default=3.0,
    show_default=True,
    help="DebitCredit: length of each measured window.",
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
    step_seconds,
    rule,
) -> None:
    """The main job: size the tables for this machine, generate, run F and G at every
    partition count in interleaved rounds, report and plot.

    With --workload debitcredit: OLTP scaleup at P = 1, 2, 4 (or --partitions).
    """

    if workload == "debitcredit":
        if cluster_address is not None:
            raise click.UsageError("--workload debitcredit runs on this machine (no --cluster)")
        from wisconsin.workloads.debitcredit.pipeline import bench_command

        say = (lambda s: None) if quiet else (lambda s: click.echo(s, err=True))
        _run, path, text, files = bench_command(
            data_dir,
            partitions or (1, 2, 4),
            seed,
            repeat,
            out,
            branches,
            step_seconds,
            rule,
            say=say,
        )
        if not quiet:
            click.echo(text)
        click.echo(f"run file: {path}")
        click.echo(f"report:   {files[0]}")
        click.echo(f"figures:  {', '.join(str(f) for f in files[1:] if f.suffix == '.png')}")
        return
    import time

    from wisconsin.measure.runner import RunOptions, default_run_path
    from wisconsin.store import check_writable
    from wisconsin.workloads.wisconsin.pipeline import (
        BENCH_PARTITIONS,
        check_disk_budget,
        disk_plan,
        plan_sizes,
        preset_specs,
    )
    from wisconsin.workloads.wisconsin.pipeline import bench as run_bench
    from wisconsin.workloads.wisconsin.presets import get_preset

    started = time.monotonic()
    # before the calibration probe and the build: both are wasted if no run file can be saved
    check_writable(default_run_path(out, mode).parent, f"--out {out}")
    max_reps = _max_reps(min_reps, max_reps)
    if time_budget is None and preset is None:
        time_budget = 780.0
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
        click.echo("calibrating this machine (a probe table, cold and warm scans, dispatch)...")
        found = probe(Path(data_dir) / "_probe", max_partitions=min(usable_cores(), max(parts)))
        plan = plan_sizes(
            found,
            disk_budget=disk_budget,
            time_budget_s=time_budget - (time.monotonic() - started),
            partitions=parts,
        )
        chosen = plan.preset
        click.echo(
            f"probe: {found.cores} cores; cold full-row scan "
            f"{(found.cold_scan_rows_per_s or 0) / 1e6:.2f} M rows/s per process; storage "
            f"{(found.storage_read_bytes_per_s or 0) / 2**20:.0f} MB/s; harness overhead "
            f"{(found.dispatch_s or 0) * 1e3:.1f} ms at P = {found.dispatch_partitions}"
        )
        click.echo(
            f"sizes: F {plan.f_rows:,} rows, G {plan.g_rows:,} rows per partition, P = "
            f"{','.join(map(str, parts))}: {plan.disk_bytes / 2**30:.1f} GB of disk (budget "
            f"{disk_budget / 2**30:.1f} GB), ~{plan.predicted_s / 60:.0f} min predicted "
            f"(budget {time_budget / 60:.0f} min); shortest headline scan ~"
            f"{plan.min_scan_s:.2f} s vs {plan.bound_s:.2f} s needed"
        )
        for note in plan.notes:
            click.echo(f"note: {note}")
    disk = disk_plan(preset_specs(chosen, seed, ("F", "G"), parts), data_dir, bool(cluster_address))
    _announce_bench(disk, data_dir, out)
    engine = _engine_config(
        mode, parts, None, 3600, cluster_address, (tls_ca, tls_cert, tls_key), transport
    )
    opts = RunOptions(
        data_dir=data_dir,
        mode=mode,
        partitions=parts,
        repeat=repeat,
        out=out,
        engine=engine,
        cache=cache,
        min_reps=min_reps,
        max_reps=max_reps,
        target_ci=target_ci,
    )
    with _progress(quiet) as progress:
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
        click.echo(result.report_text)
    reused = f" (reused {', '.join(result.tables_reused)})" if result.tables_reused else ""
    click.echo(f"tables:   {data_dir}{reused}")
    click.echo(f"run file: {result.run_path} ({result.run.stop_reason})")
    click.echo(f"report:   {result.report_path}")
    click.echo(f"html:     {result.html_path}")
    click.echo(
        f"figures:  {len(result.figures)} files in {result.run_path.parent}, e.g. "
        f"{next((f for f in result.figures if 'overview' in f.name and f.suffix == '.png'), result.figures[0])}"
    )
    click.echo(
        f"bench took {time.monotonic() - started:.0f} s; check it with `wisconsin audit {result.run_path}`"
    )


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


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


# --------------------------------------------------------------------------- run


@cli.command("run")
@data_option("Directory the tables were generated into.")
@MODE
@click.option(
    "--tables",
    "kinds",
    default="F,G",
    callback=_kinds,
    help="F (speedup), G (scaleup) or F,G (default: whichever are generated in --data).",
)
@click.option(
    "--partitions",
    callback=_int_list,
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
@_cluster_options(worker_data=False)
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
    from wisconsin.measure.runner import RunOptions, available_partitions, resume, run
    from wisconsin.workloads.wisconsin.queries import QUERIES, parse_queries

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
        with _progress(quiet) as progress:
            result, path = resume(
                resume_path,
                progress=progress,
                tls=(tls_ca, tls_cert, tls_key),
                timeout_s=timeout,
                time_budget_s=time_budget,
            )
        _print_run_summary(result)
        click.echo(f"run file: {path}")
        return
    explicit = ctx.get_parameter_source("kinds")
    kinds, partitions = _tables_to_run(
        data_dir, kinds, explicit != click.core.ParameterSource.DEFAULT, partitions
    )
    partitions = partitions or available_partitions(data_dir, kinds) or None
    engine = _engine_config(
        mode,
        partitions or (16,),
        memory_limit,
        timeout,
        cluster_address,
        (tls_ca, tls_cert, tls_key),
        transport,
    )
    opts = RunOptions(
        data_dir=data_dir,
        mode=mode,
        kinds=kinds,
        partitions=partitions,
        queries=parse_queries(query_list) if query_list is not None else QUERIES,
        scan_variant=scan_variant,
        repeat=repeat,
        warmup=warmup,
        out=out,
        engine=engine,
        cache=cache,
        min_reps=min_reps,
        max_reps=_max_reps(min_reps, max_reps),
        target_ci=target_ci,
        time_budget_s=time_budget,
        order_seed=order_seed,
    )
    with _progress(quiet) as progress:
        result, path = run(opts, progress=progress)
    _print_run_summary(result)
    click.echo(f"run file: {path}")


def _tables_to_run(data_dir: str, kinds, explicit: bool, partitions):
    """(kinds, partitions) for `run`: without --tables, the kinds that are generated; without
    --partitions, the counts generated for every kind. A one-line error says what is missing."""
    from wisconsin.store import tables_in

    have = tables_in(data_dir)
    if not have:
        raise click.ClickException(
            f"no tables in {data_dir}: run `wisconsin generate --data {data_dir}` first"
        )
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
    if partitions is None:
        common = set.intersection(*(counts[k] for k in kinds))
        if not common:
            each = "; ".join(f"{k} at P = {', '.join(map(str, sorted(counts[k])))}" for k in kinds)
            raise click.ClickException(
                f"no partition count has every one of {', '.join(kinds)} in {data_dir} "
                f"({each}): choose --tables, or generate the missing tables"
            )
        partitions = tuple(sorted(common))
    return kinds, partitions


def _print_run_summary(result) -> None:
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


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "csv", "json", "html"]),
    default="text",
    show_default=True,
    help="html: one self-contained page (figures inline), e.g. > report.html.",
)
def report(runs, fmt) -> None:
    """Speedup and scaleup tables of run files, beside Tandem's published Table 2.

    Run files of one configuration are pooled as replicates (one report, wider intervals
    when the runs disagree); files of different configurations get a report each."""
    from wisconsin import workloads

    click.echo(workloads.of_runs(runs).report_files(runs, fmt), nl=False)


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to write the figures (default: next to each run file).",
)
@click.option("--force", is_flag=True, help="Replace figures that already exist.")
def plot(runs, out_dir, force) -> None:
    """Speedup, scaleup and timeline figures (PNG and SVG) of run files; prints the paths.

    Run files of one configuration are pooled into one set of figures. Existing figures are
    refused (nothing is written) unless --force."""
    from wisconsin import workloads

    for path in workloads.of_runs(runs).plot_files(runs, out_dir, force=force):
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
@click.option(
    "--with-a",
    "more_a",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Another run of A's configuration, pooled with RUN_A as a replicate (repeatable).",
)
@click.option(
    "--with-b",
    "more_b",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Another run of B's configuration, pooled with RUN_B (repeatable).",
)
def compare(run_a, run_b, force, fmt, more_a, more_b) -> None:
    """Compare two runs of the same tables: time ratios, speedups, significance.

    Two DebitCredit runs: throughput ratios per partition count.
    """
    from wisconsin import workloads

    a, b = [run_a, *more_a], [run_b, *more_b]
    click.echo(workloads.of_runs(a + b).compare_files(a, b, force=force, fmt=fmt), nl=False)


@cli.command()
@click.argument("run_file", type=click.Path(dir_okay=False))
def audit(run_file) -> None:
    """Re-check a run file alone: every measurement rule (Wisconsin), or every audit
    invariant recomputed from its figures (DebitCredit); exit 1 if any rule fails."""
    from wisconsin import workloads
    from wisconsin.workloads.wisconsin.audit import format_rules

    rules = workloads.of_runs([run_file]).audit_file(run_file)
    click.echo(format_rules(rules), nl=False)
    if not all(r.ok for r in rules):
        sys.exit(1)


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
        ctx = click.Context(
            cmd,
            info_name=title,
            terminal_width=100,
            max_content_width=100,
            help_option_names=HELP_OPTIONS,  # a parentless context does not inherit them
        )
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
