"""TPC-C-derived OLTP as a workload (see wisconsin.workloads): its entry points."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.workloads.options import (
    BenchOptions,
    Console,
    InfoOptions,
    OptionError,
    Outcome,
    RepairOptions,
    Takes,
)

DESCRIPTION = "OLTP: TPC-C-derived new orders per minute on partitions (docs/tpcc.md)"

# what `bench --workload tpcc` reads; any other option given is refused, not ignored
BENCH_TAKES = Takes(
    frozenset(
        {
            "workload",
            "data_dir",
            "partitions",
            "seed",
            "out",
            "quiet",
            "step_seconds",
            "cluster_address",
            "tls_ca",
            "tls_cert",
            "tls_key",
        }
    ),  # fmt: skip
    "{given}: not used by --workload tpcc; drop {it}",
)
INFO_TAKES = Takes(frozenset({"table_dir"}), "{given}: not used on a TPC-C database")
REPAIR_TAKES = Takes(
    frozenset({"table_dir", "cluster_address", "tls_ca", "tls_cert", "tls_key"}),
    "{given}: a TPC-C database is repaired whole",
)


def bench(opts: BenchOptions, console: Console) -> Outcome:
    """`wisconsin bench --workload tpcc`: build, run the terminals, check, save, report."""
    from wisconsin.oltp import hosted
    from wisconsin.workloads.tpcc.pipeline import bench_command

    run, path, text, report_path = bench_command(opts, console.log)
    lines = ([] if opts.quiet else [text]) + [f"run file: {path}", f"report:   {report_path}"]
    db = Path(run.config.data_dir)
    on_cluster = run.config.cluster is not None
    args = hosted.cluster_args(opts.cluster_address, opts.tls)
    return Outcome(tuple(lines), db.parent, (db,), Path(path), on_cluster, args)


def owns(path: str | os.PathLike) -> bool:
    from wisconsin.workloads.tpcc.runfile import is_tpcc

    return is_tpcc(path)


def _local(table_dir) -> bool:
    from wisconsin import atomic
    from wisconsin.workloads.tpcc.load import MANIFEST, WORKLOAD

    try:
        data = atomic.read_json(Path(table_dir) / MANIFEST, "manifest")
    except (WisconsinError, OSError):
        return False
    return isinstance(data, dict) and data.get("workload") == WORKLOAD


def _on_cluster(table_dir) -> bool:
    """No database here, but the note a cluster bench leaves of one on its workers."""
    from wisconsin.oltp.hosted import read_note

    note = read_note(table_dir)
    return not _local(table_dir) and note is not None and note.get("workload") == "tpcc"


def owns_table(table_dir: str | os.PathLike) -> bool:
    return _local(table_dir) or _on_cluster(table_dir)


def _cluster_refused(table_dir, then: str) -> OptionError:
    from wisconsin.oltp.hosted import CLUSTER_NOTE

    return OptionError(
        f"{table_dir}: its partitions are on a cluster's workers ({CLUSTER_NOTE}); {then}"
    )


def _check(table_dir) -> tuple[list[str], bool]:
    from wisconsin.workloads.tpcc import consistency, load

    m = load.read_manifest(table_dir)
    verdicts = consistency.check_database(
        load.partition_paths(table_dir, m), m.scale, None, (1, 2, 3, 4)
    )
    return consistency.lines(verdicts), not consistency.failed(verdicts)


def info_table(table_dir, opts: InfoOptions | None = None) -> tuple[list[str], str | None]:
    """`wisconsin info` on a TPC-C database: its placement and conditions 1-4 (lines, None
    or wisconsin.DAMAGED: a condition failed)."""
    from wisconsin import DAMAGED
    from wisconsin.workloads.tpcc.load import read_manifest

    if _on_cluster(table_dir):
        raise _cluster_refused(
            table_dir, "`wisconsin repair DIR --cluster ADDR` checks them on their hosts"
        )
    m = read_manifest(table_dir)
    lines, ok = _check(table_dir)
    head = (
        f"{table_dir}: TPC-C database, {m.partitions * m.warehouses_per_partition} warehouses "
        f"on {m.partitions} partition(s), seed {m.seed}"
    )
    return [head, *lines], None if ok else DAMAGED


def repair_table(table_dir, opts: RepairOptions | None = None, console: Console | None = None):
    """`wisconsin repair`: redo the decided remote halves, check conditions 1-4, and, when
    the drivers' acknowledgement log is there, find every acknowledged transaction (lines,
    None or wisconsin.DAMAGED: a condition fails or an acknowledged transaction is lost);
    with --cluster, on the hosts a cluster bench left the database on (hosts.py)."""
    from wisconsin import DAMAGED
    from wisconsin.store import lock
    from wisconsin.workloads.tpcc import load, receipts, remote

    if opts is not None and opts.cluster_address is None and any(opts.tls):
        raise OptionError("--tls-ca/--tls-cert/--tls-key need --cluster")
    if opts is not None and opts.cluster_address is not None:
        from wisconsin.oltp import hosted
        from wisconsin.workloads.tpcc.hosts import repair_on_cluster

        return repair_on_cluster(table_dir, hosted.target(opts.cluster_address, opts.tls))
    if _on_cluster(table_dir):
        raise _cluster_refused(
            table_dir, "give --cluster ADDR (and --tls-ca/--tls-cert/--tls-key if it uses TLS)"
        )

    m = load.read_manifest(table_dir)
    paths = load.partition_paths(table_dir, m)
    log_dir = load.ack_log_dir(table_dir)
    with lock.hold_tables([Path(table_dir)]):
        redone = remote.recover(paths)
        lines, ok = _check(table_dir)
        acked = receipts.check(paths, log_dir) if receipts.has_log(log_dir) else None
    state = (
        f"{table_dir}: {redone} decided remote half(s) applied"
        if redone
        else (f"{table_dir}: nothing pending, nothing changed")
    )
    state += "; conditions 3.3.2.1-4 hold" if ok else "; a condition FAILED"
    if acked is not None:
        state += "; no acknowledged transaction lost" if acked.ok else "; acknowledged LOST"
        lines = [*lines, acked.line()]
    else:
        lines = [*lines, f"no acknowledgement log in {log_dir}: nothing to find"]
    return [state, *lines], None if ok and (acked is None or acked.ok) else DAMAGED


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text") -> str:
    from wisconsin.workloads.tpcc.report import report_files

    return report_files(paths, fmt)


def plot_files(paths: Sequence[str | os.PathLike], out_dir=None, force: bool = False) -> list[Path]:
    """`wisconsin plot`: the New-Order series and the response-time distributions."""
    from wisconsin.workloads.tpcc.plot import plot_files

    return plot_files(paths, out_dir, force=force)


def compare_files(a: Sequence, b: Sequence, force: bool = False, fmt: str = "text") -> str:
    """`wisconsin compare`: what else differs named first, one verdict, the figures side by
    side. Nothing is refused (unlike runs are compared and said to be), so --force, which
    would change nothing, is refused rather than ignored."""
    from wisconsin.workloads.tpcc.compare import compare_files

    if force:
        raise WisconsinError(
            "--force: TPC-C runs are compared whatever else differs (named first); drop it"
        )
    return compare_files(a, b, fmt)


def audit_file(path: str | os.PathLike) -> list:
    from wisconsin.workloads.tpcc.audit import audit_file

    return audit_file(path)
