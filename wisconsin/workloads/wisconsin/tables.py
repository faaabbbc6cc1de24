"""A Wisconsin table as `wisconsin info` and `wisconsin repair` see it: its manifest and what
its check found (locally, or by each partition's owner on a cluster), and the rebuild of its
damaged partitions."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

from wisconsin.workloads.options import Console, InfoOptions, RepairOptions, engine_target


def captured_logs(cluster_address, directory):
    """A command that is a client of a cluster keeps Dask's logging in a private directory
    inside its data directory (docs/storage.md, 'Where logs go'); nothing otherwise."""
    if cluster_address is None:
        return contextlib.nullcontext()
    from wisconsin.cluster.logs import captured

    return captured(directory)


# --------------------------------------------------------------------------- info


def info(opts: InfoOptions) -> tuple[list[str], str | None]:
    """`wisconsin info` on a table: (lines, None, or wisconsin.DAMAGED when its check fails or
    an update is pending). Lines starting "problem:" or "Error:" are for standard error; an
    "Error:" line ends them."""
    from wisconsin import DAMAGED
    from wisconsin.store.updates import DecisionLog

    table_dir = opts.table_dir
    m, problems = _checked(opts)
    pending = not opts.no_verify and not DecisionLog(table_dir).is_empty()
    on_cluster = opts.cluster_address is not None
    lines = [_as_json(m, problems, pending, opts)] if opts.as_json else _manifest_lines(m)
    if problems:
        lines += [f"problem: {line}" for line in problems]
        if pending:
            return lines + [_pending_line(table_dir) + " (the problems above may be its doing)"], (
                DAMAGED
            )
        return lines + [
            f"Error: {table_dir}: {len(problems)} problem(s) found; `wisconsin repair "
            f"{table_dir}` rebuilds the damaged partitions"
        ], DAMAGED
    if pending:
        # Never "verified" over it: some partitions may hold the update, others not yet.
        return lines + [_pending_line(table_dir)], DAMAGED
    if not opts.no_verify and not opts.as_json:
        lines.append(_verified_line(m, opts.deep, on_cluster))
    return lines, None


def _checked(opts: InfoOptions):
    """(manifest, problems): the manifest alone with --no-verify, else its files checked
    (on the cluster's workers with --cluster)."""
    from wisconsin.store import read_manifest
    from wisconsin.store.check import verify_table

    if opts.cluster_address is None:
        engine_target(None, "shared-nothing", opts.tls)  # TLS files without --cluster: refused
    if opts.no_verify:
        return read_manifest(opts.table_dir), []
    if opts.cluster_address is None:
        return verify_table(opts.table_dir, deep=opts.deep)
    from wisconsin.cluster import info_on_cluster

    with captured_logs(opts.cluster_address, Path(opts.table_dir).absolute().parent):
        return info_on_cluster(
            opts.table_dir,
            opts.cluster_address,
            tls_ca=opts.tls_ca,
            tls_cert=opts.tls_cert,
            tls_key=opts.tls_key,
            timeout=opts.timeout,
        )


def _as_json(m, problems, pending: bool, opts: InfoOptions) -> str:
    """The manifest, and what the check found (a script must not take the one for the other)."""
    remote = [p.index for p in m.parts if p.worker] if opts.cluster_address is None else []
    check = {
        "checked": "none" if opts.no_verify else ("deep" if opts.deep else "cheap"),
        "ok": None if opts.no_verify else not problems and not pending,
        "problems": list(problems),
        "update_pending": pending,
        "not_read": remote,  # partitions on cluster workers, unread without --cluster
    }
    return json.dumps({**dataclasses.asdict(m), "verification": check}, indent=1)


def _manifest_lines(m) -> list[str]:
    lines = [
        f"{m.name}: kind {m.kind}, {m.rows:,} rows, {m.partitions} partitions, "
        f"seed {m.seed}, generator {m.generator_version}, created {m.created_utc}, "
        f"id {m.table_id}",
        f"storage: {', '.join(f'{k}={v}' for k, v in m.storage.items())}",
    ]
    for p in m.parts:
        where = f"  on {p.worker}@{p.host}" if p.worker else ""
        lines.append(
            f"  {p.file}  unique2 [{p.lo:,}, {p.hi:,})  {p.rows:,} rows  {p.checksum}{where}"
        )
    return lines


def _verified_line(m, deep: bool, on_cluster: bool) -> str:
    remote = [p.index for p in m.parts if p.worker]
    if remote and on_cluster:
        return (
            "verified: every partition matches the manifest, each read by its owner "
            "on the host that wrote it"
        )
    if remote:
        return (
            f"verified: every local partition matches the manifest; partitions "
            f"{', '.join(map(str, remote))} live on cluster workers and were not read "
            "(give --cluster ADDRESS to verify them there)"
        )
    how = "full content digests of both tables" if deep else "cheap check"
    return f"verified: every partition matches the manifest ({how})"


def _pending_line(table_dir) -> str:
    return (
        f"update pending: an interrupted update is recorded in {table_dir}/_txlog and the "
        f"table may differ from its generated rows until it is settled; run `wisconsin "
        f"repair {table_dir}` (a run also settles it when it opens the table)"
    )


# --------------------------------------------------------------------------- repair


def repair(opts: RepairOptions, console: Console) -> list[str]:
    """`wisconsin repair`: rebuild exactly the damaged, missing or foreign partitions (on
    their cluster workers with --cluster) and settle an interrupted update; the lines saying
    what was done."""
    from wisconsin.builds import repair_table

    table_dir = opts.table_dir
    address, security = engine_target(opts.cluster_address, "shared-nothing", opts.tls)
    client = None
    with captured_logs(address, Path(table_dir).absolute().parent):
        if address is not None:
            from wisconsin.cluster import connect

            client = connect(address, security)
        try:
            with console.progress() as progress:
                result = repair_table(
                    table_dir,
                    jobs=opts.jobs,
                    progress=progress,
                    client=client,
                    announce=None if opts.quiet else console.log,
                )
        finally:
            if client is not None:
                client.close()
    if not result.damaged:
        return [f"{table_dir}: every partition matches the manifest; nothing to repair"]
    return [
        f"rebuilt partition {part}: {problems[0]}" for part, problems in result.damaged.items()
    ] + [
        f"{table_dir}: {len(result.damaged)} partition(s) rebuilt and verified "
        f"in {result.seconds:.1f} s"
    ]
