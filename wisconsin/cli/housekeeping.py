"""list and remove: what the tool built, and taking it away again."""

from __future__ import annotations

import json

import click

from wisconsin.cli.options import cluster_options


def _mb(n: int) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


@click.command("list")
@click.argument("directory", type=click.Path(), default=".")
@click.option(
    "--no-verify", is_flag=True, help="Do not check tables (faster; state 'not checked')."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_command(directory, no_verify, as_json) -> None:
    """The tables, DebitCredit databases, run files and leftover logs under DIRECTORY (default:
    here, four levels deep), with their kind, size on disk and state (verified, damaged, in
    use, incomplete, complete)."""
    from wisconsin.workloads.inventory import walk

    total, count = 0, 0
    for item in walk(directory, verify=not no_verify):
        total, count = total + item.size_bytes, count + 1
        if as_json:
            row = {"path": str(item.path), "kind": item.kind, "size_bytes": item.size_bytes}
            click.echo(json.dumps({**row, "state": item.state}))
        else:
            click.echo(f"{item.path}  {item.kind}  {_mb(item.size_bytes)}  {item.state}")
    if not as_json:
        click.echo(
            f"{count} item{'s' * (count != 1)}, {_mb(total)} on disk"
            + (" (`wisconsin remove PATH` removes a table or data directory)" if count else "")
        )


@click.command()
@click.argument("paths", type=click.Path(), nargs=-1, required=True)
@cluster_options(worker_data=False)
def remove(paths, cluster_address, tls_ca, tls_cert, tls_key) -> None:
    """Remove tables, DebitCredit and TPC-C databases, a run's leftover Dask logs, or a data
    directory that holds only what wisconsin built. Refused, removing nothing, for anything
    else and for a table in use. An OLTP database a cluster bench left (its directory holds
    cluster.json) is removed on its hosts too, with --cluster."""
    from wisconsin.workloads.inventory import remove_all

    for line in remove_all(paths, cluster_address, (tls_ca, tls_cert, tls_key)):
        click.echo(line)
