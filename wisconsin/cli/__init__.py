"""Command-line interface: the only package that imports click. Each command parses, calls
one library function and prints; library errors (WisconsinError) become one line, exit 2.

app holds the group and the entry point, options the shared options and parsing helpers,
and one module per family of commands registers its commands here."""

from __future__ import annotations

from wisconsin.cli.ab import ab
from wisconsin.cli.app import cli, main
from wisconsin.cli.bench import bench
from wisconsin.cli.housekeeping import list_command, remove
from wisconsin.cli.options import DEFAULT_OUT
from wisconsin.cli.reading import audit, compare, history, plot, report
from wisconsin.cli.run import print_run_summary, run_command
from wisconsin.cli.tables import export, generate, info, repair

for _command in (
    generate, info, repair, export, bench, run_command, ab, report, plot, compare, audit,
    list_command, remove, history,
):  # fmt: skip
    cli.add_command(_command)

__all__ = ["DEFAULT_OUT", "print_run_summary", "cli", "main"]
