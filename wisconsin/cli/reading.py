"""Commands that only read run files: report, plot, compare, audit."""

from __future__ import annotations

import sys

import click


@click.command()
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


@click.command()
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


@click.command()
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


@click.command()
@click.argument("run_file", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: the overall verdict and each rule's verdict, detail and figures.",
)
def audit(run_file, fmt) -> None:
    """Re-check a run file alone: every measurement rule (Wisconsin), or every audit
    invariant recomputed from its figures (DebitCredit); exit 1 unless every rule passes
    (an incomplete run passes nothing)."""
    from wisconsin import workloads
    from wisconsin.workloads.wisconsin.audit import format_rules, rules_json

    rules = workloads.of_runs([run_file]).audit_file(run_file)
    click.echo((rules_json if fmt == "json" else format_rules)(rules), nl=False)
    if not all(r.ok for r in rules):
        sys.exit(1)
