"""`wisconsin ab`: two configurations measured in one invocation, block by block in turn."""

from __future__ import annotations

import shlex

import click

from wisconsin.cli.options import DEFAULT_OUT, progress_display, usage_errors

# ab decides these for both sides: each block is a run of --rounds rounds into the A/B file
_OWN = ("resume_path", "out", "blocks", "repeat", "min_reps", "max_reps", "time_budget",
        "order_seed", "quiet")  # fmt: skip


@click.command(
    "ab",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.option(
    "--a",
    "side_a",
    required=True,
    metavar="OPTIONS",
    help='`run` options of A only, quoted, e.g. --a "--mode shared-nothing".',
)
@click.option(
    "--b",
    "side_b",
    required=True,
    metavar="OPTIONS",
    help='`run` options of B only, e.g. --b "--mode shared-memory" or --b "--data OTHER".',
)
@click.option(
    "--blocks",
    type=click.IntRange(min=2),
    default=15,
    show_default=True,
    help="Blocks a side, each a run with fresh workers and its own shuffled order.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Timed rounds in each block.",
)
@click.option("--out", default=DEFAULT_OUT, show_default=True, help="Directory for the A/B file.")
@click.option("--quiet", is_flag=True, help="No progress bar or progress lines.")
@click.pass_context
def ab(ctx, side_a, side_b, blocks, rounds, out, quiet) -> None:
    """Measure two configurations in one invocation into one A/B file: blocks of A and B in
    turn (A B, B A, A B, ...), so drift over the minutes hits both alike; then compare them.

    Every other option is a `run` option common to both sides (e.g. --data D --tables F
    --cache cold); --a and --b hold what differs. `wisconsin compare AB.json` compares the
    file again."""
    from wisconsin.cli.run import run_command, run_command_options
    from wisconsin.measure.ab import run_ab
    from wisconsin.workloads.wisconsin import workload
    from wisconsin.workloads.wisconsin.compare import compare_ab_file

    sides = []
    for name, text in (("--a", side_a), ("--b", side_b)):
        try:
            args = [*ctx.args, *shlex.split(text)]
        except ValueError as exc:
            raise click.UsageError(f"{name}: {exc}") from None
        sub = run_command.make_context("run", args, parent=ctx)
        given = [
            f"--{k.replace('_path', '').replace('_', '-')}"
            for k in _OWN
            if sub.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise click.UsageError(
                f"ab sets {', '.join(given)} itself (use --blocks, --rounds, --out of ab)"
            )
        with usage_errors():
            sides.append(workload.run_options(run_command_options(sub)))
    with progress_display(quiet) as progress:
        result, path = run_ab(
            *sides,
            blocks=blocks,
            rounds=rounds,
            out=out,
            labels=(side_a, side_b),
            progress=progress,
        )
    click.echo(compare_ab_file(path), nl=False)  # as `compare AB.json` prints it
    click.echo(f"A/B file: {path} ({result.stop_reason}; A = {side_a}, B = {side_b})")
