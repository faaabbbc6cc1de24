"""Command-line interface. The only module that imports click: commands parse, call one
library function, print. Library errors (WisconsinError) become one line and the exit code
of their kind (wisconsin.cli.exits: 2 bad input, 1 a run that failed, 3 damaged data)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from wisconsin import DAMAGED, USAGE, WisconsinError, __version__, interrupts, outputs, sqltext
from wisconsin.cli import exits

click.ClickException.exit_code = exits.CODE[USAGE]


class _Group(click.Group):
    def invoke(self, ctx):
        if "wisconsin.cluster.logs" in sys.modules:  # one process, several commands (tests)
            sys.modules["wisconsin.cluster.logs"].forget()
        with interrupts.recorded(), outputs.published() as published:
            return self._invoke(ctx, published)

    def _invoke(self, ctx, published: list[Path]):
        try:
            try:
                done = super().invoke(ctx)
            except Exception as exc:
                # DuckDB's form of a ^C during a query in this process
                if interrupts.is_interrupt(exc):
                    raise KeyboardInterrupt from None
                # Any error after a ^C is its consequence: an extension module whose import
                # it broke (matplotlib's ft2font) raises ImportError, not KeyboardInterrupt.
                interrupts.check()
                raise
            interrupts.check()  # a ^C raised where Python discarded it is still a ^C
            return done
        except WisconsinError as exc:
            # one line even where it names a path holding a newline
            failure = click.ClickException(sqltext.shown(_naming_kept_logs(str(exc))))
            # a run that failed under its user (a partition died, a disk filled) exits 1,
            # damaged data 3 (exits.TABLE)
            failure.exit_code = exits.code_of(exc)
            raise failure from None
        except Exception as exc:
            duckdb = sys.modules.get("duckdb")
            if duckdb is not None and isinstance(exc, duckdb.Error):
                # e.g. a damaged block the check before timing does not read (docs/storage.md)
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                failure = click.ClickException(f"DuckDB: {first}")
                if "corrupt" in first.lower():  # its own word for a file that fails a checksum
                    failure.exit_code = exits.CODE[DAMAGED]
                raise failure from None
            raise
        except KeyboardInterrupt as exc:
            run_file = getattr(exc, "run_file", None)
            replaced = getattr(exc, "written", None)  # plot --force: ones renamed over old files
            # A ^C right after the outputs were renamed into place (while their paths are
            # printed, or raised again by interrupts.check) leaves them all: say so.
            listed = ", ".join(map(str, published))
            kept = (
                exc.resume_command  # a workload's own way to continue (DebitCredit's bench)
                if getattr(exc, "resume_command", None)
                else f"what was measured is in {run_file} (incomplete): continue it with "
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
            click.echo(_naming_kept_logs(f"interrupted; {what}"), err=True)
            sys.exit(exits.CODE[exits.INTERRUPTED])


def _naming_kept_logs(line: str) -> str:
    """A failed command's last line names the diagnostic logs it kept (docs/storage.md,
    'Where logs go'), unless it already does."""
    if "wisconsin.cluster.logs" not in sys.modules:
        return line  # no command of this process captured any
    from wisconsin.cluster.logs import kept

    paths = [str(p) for p in kept() if str(p) not in line]
    return f"{line}; logs kept in {', '.join(paths)}" if paths else line


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


@cli.command("cli-reference", hidden=True)
def cli_reference() -> None:
    """Print the exit codes and every command's --help as Markdown (docs/cli.md is this
    output)."""
    out = [
        "# CLI reference",
        "",
        "The exit codes and every command's `--help`. Generated by `wisconsin cli-reference > docs/cli.md`;",
        "a test fails when this file is out of date.",
        "",
        *exits.markdown(),
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
    """Entry point: every error a user can cause is one line on stderr and exit code 2
    (the others: wisconsin.cli.exits)."""
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
        sys.exit(exits.CODE[exits.INTERRUPTED])
    sys.exit(code if isinstance(code, int) else 0)
