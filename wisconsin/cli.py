"""Command-line interface. The only module that imports click: commands parse, call one
library function, print. Library errors (WisconsinError) become one line and exit 2."""

from __future__ import annotations

import click

from wisconsin import WisconsinError, __version__


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except WisconsinError as exc:
            raise click.ClickException(str(exc)) from None


click.ClickException.exit_code = 2


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="wisconsin")
def cli() -> None:
    """Speedup and scaleup benchmark of partitioned tables (Tandem NonStop SQL R2, 1989)."""


def main() -> None:
    cli(prog_name="wisconsin")
