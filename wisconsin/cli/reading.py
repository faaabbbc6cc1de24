"""Commands that only read run files: report, plot, compare, audit."""

from __future__ import annotations

import sys

import click

from wisconsin import FAILED
from wisconsin.cli import exits


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "csv", "json", "html"]),
    default="text",
    show_default=True,
    help="html: one self-contained page (figures inline); write it with --out FILE.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Text: every section (run details, every P, times, causes, bound, profile, card) "
    "after the verdict; without it one screen: the verdict block.",
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the report to this file (any format; text with every section) instead of "
    "standard output.",
)
@click.option("--force", is_flag=True, help="With --out: replace a file that already exists.")
def report(runs, fmt, full, out_file, force) -> None:
    """Speedup and scaleup of run files, beside Tandem's published Table 2: the verdict
    first (ratios at the largest P, bound, audit, cache, why the curve bends).

    Run files of one configuration are pooled as replicates (one report, wider intervals
    when the runs disagree); files of different configurations get a report each."""
    from pathlib import Path

    from wisconsin import atomic, workloads

    if force and out_file is None:
        raise click.UsageError("--force replaces the file --out names: give --out, or drop --force")
    if out_file is None and fmt == "html" and _on_terminal():
        # A page of inline SVG is unreadable on a terminal; redirecting still prints it.
        click.echo(
            f"an HTML page is not printed on a terminal: write it with "
            f"`wisconsin report --format html --out report.html {' '.join(runs)}`"
        )
        return
    if out_file is not None and not force and Path(out_file).exists():
        # before the report is computed: a refusal should not take seconds
        raise click.ClickException(f"{out_file} already exists: give --force to replace it")
    _run_files(runs, "report")
    workload = workloads.of_runs(runs)
    # Text is one screen on a terminal by default; a file gets every section.
    full = full or fmt != "text" or out_file is not None
    kwargs = {"full": False} if not full and _takes_full(workload.report_files) else {}
    text = workload.report_files(runs, fmt, **kwargs)
    if out_file is None:
        click.echo(text, nl=False)
        return
    try:
        atomic.write_text(out_file, text, overwrite=force)
    except atomic.AlreadyExistsError:
        raise click.ClickException(
            f"{out_file} already exists: give --force to replace it"
        ) from None
    click.echo(f"report: {out_file}")


def _on_terminal() -> bool:
    return sys.stdout.isatty()


def _takes_full(report_files) -> bool:
    """Whether a workload can print a one-screen report (its report_files takes full)."""
    import inspect

    return "full" in inspect.signature(report_files).parameters


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
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

    _run_files(runs, "plot")
    for path in workloads.of_runs(runs).plot_files(runs, out_dir, force=force):
        click.echo(str(path))


@click.command()
@click.argument("run_a", type=click.Path())
@click.argument("run_b", type=click.Path(), required=False)
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
@click.option(
    "--fail-slower",
    type=click.FloatRange(min=1.0),
    default=None,
    metavar="FACTOR",
    help="Exit 1 when any point or whole curve of B is slower than A's by more than FACTOR "
    "(e.g. 1.10) and the difference is significant after Holm's correction, as the verdict "
    "judges them: a gate for CI.",
)
def compare(run_a, run_b, force, fmt, more_a, more_b, fail_slower) -> None:
    """Compare two runs of the same tables: time ratios, speedups, significance.

    One A/B file (`wisconsin ab`): its A blocks against its B blocks. Two DebitCredit runs:
    throughput ratios per partition count.
    """
    from wisconsin import workloads
    from wisconsin.runfiles.abfile import is_ab_file

    _run_files([run_a, *([run_b] if run_b else []), *more_a, *more_b], "compare", ab=True)
    if run_b is None:
        if not is_ab_file(run_a) or more_a or more_b:
            raise click.UsageError(
                "give RUN_A and RUN_B, or one A/B file of `wisconsin ab` (without --with-a/-b)"
            )
        from wisconsin.workloads.wisconsin import compare as wcompare

        click.echo(wcompare.compare_ab_file(run_a, fmt=fmt), nl=False)
        if fail_slower is not None:
            failed = wcompare.ab_slower_than(run_a, fail_slower)
            if failed:
                exits.exit_failed(f"gate: {failed}")
        return
    a, b = [run_a, *more_a], [run_b, *more_b]
    workload = workloads.of_runs(a + b)
    gate = getattr(workload, "slower_than", None)
    if fail_slower is not None and gate is None:  # before the comparison: one line
        raise click.UsageError("--fail-slower is for Wisconsin runs")
    click.echo(workload.compare_files(a, b, force=force, fmt=fmt), nl=False)
    if fail_slower is not None:
        failed = gate(a, b, fail_slower, force=force)
        if failed:
            exits.exit_failed(f"gate: {failed}")


def _text_or_json(help_text: str, *more: str):
    """--format text|json, and the more formats given (audit; history: html)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json", *more]),
        default="text",
        show_default=True,
        help=help_text,
    )


@click.command()
@click.argument("run_file", type=click.Path())
@_text_or_json("json: the overall verdict and each rule's verdict, detail and figures.")
def audit(run_file, fmt) -> None:
    """Re-check a run file alone: every measurement rule (Wisconsin), or every audit
    invariant recomputed from its figures (DebitCredit); exit 1 unless every rule passes
    (an incomplete run passes nothing)."""
    from wisconsin import workloads
    from wisconsin.workloads.wisconsin.audit import format_rules, rules_json

    _run_files([run_file], "audit")
    rules = workloads.of_runs([run_file]).audit_file(run_file)
    click.echo((rules_json if fmt == "json" else format_rules)(rules), nl=False)
    if not all(r.ok for r in rules):  # each failed rule is a FAIL line above
        sys.exit(exits.CODE[FAILED])


def _run_files(paths, verb: str, ab: bool = False, directories: bool = False) -> None:
    """One line naming what a path is when it is another of the tool's kinds (a table, an
    A/B file given to report, a journal, ...) and which command reads it. directories:
    the verb reads the run files in a directory (history)."""
    from wisconsin.workloads.inventory import RUN_FILES, require_kind

    takes = (*RUN_FILES, "a/b file") if ab else RUN_FILES
    what = "a run file or a directory of them" if directories else "a run file"
    for p in paths:
        require_kind(p, takes, f"wisconsin {verb}", what, directories=directories)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@_text_or_json(
    "json: every series, run and flagged change; html: one self-contained page with a figure "
    "per query (redirect it to a file).",
    "html",
)
def history(paths, fmt) -> None:
    """Each point's median time and each speedup and scaleup across Wisconsin run files (or
    the run files in directories), with its interval, in commit and date order; a change
    from one run to the next is flagged only where `compare`'s own test finds one (both the
    points and the whole curves, Holm-adjusted). Runs of other machines or configurations
    form series of their own. Every run is audited (about a second each)."""
    from wisconsin.workloads.wisconsin.history import history as series_of
    from wisconsin.workloads.wisconsin.history import render

    _run_files(paths, "history", directories=True)
    if fmt == "html" and _on_terminal():
        # A page of inline SVG is unreadable on a terminal; redirecting still prints it.
        click.echo(f"an HTML page is not printed on a terminal: write it with "
                   f"`wisconsin history --format html {' '.join(paths)} > history.html`")  # fmt: skip
        return
    click.echo(render(series_of(paths), fmt), nl=False)
