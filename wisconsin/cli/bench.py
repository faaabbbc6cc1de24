"""`wisconsin bench`: the main job."""

from __future__ import annotations

import click

from wisconsin import workloads
from wisconsin.cli import exits
from wisconsin.cli.options import (
    DEFAULT_OUT,
    MODE,
    REPEAT,
    SEED,
    TRANSPORT,
    cluster_options,
    console,
    data_option,
    measurement_options,
    parse_int_list,
    parsed,
    print_outcome,
    refuse_cold_in_memory,
    refuse_with_repeat,
    usage_errors,
)
from wisconsin.cli.run import refuse_transport_without_workers
from wisconsin.workloads import NAMES as WORKLOAD_NAMES
from wisconsin.workloads.options import BenchOptions
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
    help="wisconsin: the batch queries; debitcredit, tpcc: OLTP scaleup (docs/debitcredit.md, "
    "docs/tpcc.md).",
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
@click.pass_context
def bench(ctx, **_options) -> None:
    """The main job: size the tables for this machine, generate, run F and G at every
    partition count in interleaved rounds, report and plot. Calibrated (no --preset), it
    builds G only up to the cores (a processor per partition), plans 8 rounds of one block
    each within --time-budget (unless --min-reps/--blocks are given) and runs more while
    time remains.

    With --workload debitcredit: OLTP scaleup at P = 1, 2, 4, ... up to the usable cores (or
    --partitions); per P one closed window and the stepped open curve of --step-seconds each
    (a closed window judged unsteady is measured again, once).

    With --workload tpcc: TPC-C on warehouses split over partitions, in spec mode (terminals
    with keying and think times, deferred Delivery); tpmC and efficiency (docs/tpcc.md).
    """
    workload = workloads.get(ctx.params["workload"])
    opts = parsed(ctx, BenchOptions, workload.BENCH_TAKES)
    refuse_with_repeat(ctx)
    if "transport" in workload.BENCH_TAKES.options:
        refuse_transport_without_workers(ctx, opts.mode)
    if "cache" in workload.BENCH_TAKES.options:  # tables read cold must be on a disk
        refuse_cold_in_memory(opts.cache, opts.data_dir, opts.cluster_address)
    with usage_errors():
        done = workload.bench(opts, console(opts.quiet))
    print_outcome(done)
    exits.exit_unless_audited(workload, done.run_path)
