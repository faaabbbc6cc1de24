"""DebitCredit as a workload (see wisconsin.workloads): its run files' entry points."""

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

DESCRIPTION = "OLTP scaleup: DebitCredit throughput at a response-time limit (docs/debitcredit.md)"

# what `bench --workload debitcredit` reads; any other option given is refused, not ignored
BENCH_TAKES = Takes(
    frozenset(
        {
            "workload",
            "data_dir",
            "partitions",
            "seed",
            "repeat",
            "out",
            "quiet",
            "branches",
            "scaled_tps",
            "step_seconds",
            "rule",
            "resume_path",
            "cluster_address",
            "tls_ca",
            "tls_cert",
            "tls_key",
        }
    ),  # fmt: skip
    "{given}: for the Wisconsin workload, not used by --workload debitcredit; drop {it}",
)
# what --resume reads from the progress file instead
RESUMED = ("partitions", "repeat", "branches", "scaled_tps", "step_seconds", "rule", "seed")


def bench(opts: BenchOptions, console: Console) -> Outcome:
    """`wisconsin bench --workload debitcredit`: measure every P, save, report, plot (with
    --resume: continue a progress file with its own settings)."""
    from wisconsin.runfiles.runfile import estimate_text
    from wisconsin.workloads.debitcredit.pipeline import bench_command, scaled_branches

    if opts.resume_path is not None and (given := opts.given_options(*RESUMED)):
        raise OptionError(
            f"--resume takes its settings from the progress file; drop {', '.join(given)}"
        )
    branches = opts.branches
    if opts.scaled_tps is not None:
        if opts.given_options("branches"):
            raise OptionError("--scaled sets the branches: drop --branches")
        branches = scaled_branches(opts.scaled_tps)
    from wisconsin.oltp import hosted

    # one partition server per worker (oltp.hosted)
    cluster = hosted.optional_target(opts.cluster_address, opts.tls)
    with console.progress() as progress:
        run, path, text, files = bench_command(
            opts.data_dir,
            opts.partitions or (),
            opts.seed,
            opts.repeat,
            opts.out,
            branches,
            opts.step_seconds,
            opts.rule,
            say=console.log,
            resume=opts.resume_path,
            progress=progress,
            cluster=cluster,
        )
    figures = ", ".join(str(f) for f in files[1:] if f.suffix == ".png")
    lines = ([] if opts.quiet else [text]) + [
        f"run file: {path}",
        f"report:   {files[0]}",
        f"figures:  {figures}",
        f"estimate: {estimate_text(run.estimate)}",
    ]
    dc_data = Path(run.config.data_dir)  # the bench's own directory under --data
    databases = tuple(dc_data / f"dc{r.partitions}" for r in run.results)
    return Outcome(
        tuple(lines), dc_data, databases, Path(path), cluster is not None,
        hosted.cluster_args(opts.cluster_address, opts.tls),
    )  # fmt: skip


def owns(path: str | os.PathLike) -> bool:
    from wisconsin.workloads.debitcredit.runfile import is_debitcredit

    return is_debitcredit(path)


def owns_table(table_dir: str | os.PathLike) -> bool:
    """A database here, or the note a cluster bench leaves of one on its workers."""
    from wisconsin.oltp.hosted import read_note
    from wisconsin.workloads.debitcredit.tables import is_database

    if is_database(table_dir):
        return True
    note = read_note(table_dir)
    return note is not None and note.get("workload") == "debitcredit"


# what `info` and `repair` read on a DebitCredit database: info checks a local one whole,
# here; a cluster's is checked on its hosts by repair --cluster
INFO_TAKES = Takes(
    frozenset({"table_dir"}),
    "{given}: for Wisconsin tables; `info` checks a local DebitCredit database whole, here, "
    "and `wisconsin repair DIR --cluster ADDR` checks one on a cluster's hosts",
)
REPAIR_TAKES = Takes(
    frozenset({"table_dir", "cluster_address", "tls_ca", "tls_cert", "tls_key"}),
    "{given}: for Wisconsin tables; a DebitCredit database is repaired whole",
)


def info_table(
    table_dir: str | os.PathLike, opts: InfoOptions | None = None
) -> tuple[list[str], str | None]:
    """`wisconsin info` on a DebitCredit database: (lines, None or the kind of what its check
    found: wisconsin.DAMAGED)."""
    from wisconsin.oltp import hosted
    from wisconsin.workloads.debitcredit.tables import info, is_database

    if not is_database(table_dir) and hosted.read_note(table_dir) is not None:
        raise OptionError(
            f"{table_dir}: its partitions are on a cluster's workers ({hosted.CLUSTER_NOTE}); "
            "`wisconsin repair DIR --cluster ADDR` checks them on their hosts"
        )
    return info(table_dir)


def repair_table(
    table_dir: str | os.PathLike, opts: RepairOptions | None = None, console: Console | None = None
) -> tuple[list[str], str | None]:
    """`wisconsin repair`: apply decided remote halves, then check the invariants (a failed
    one is raised; with --cluster, on the hosts a cluster bench left the database on)."""
    from wisconsin.oltp import hosted
    from wisconsin.workloads.debitcredit.tables import repair

    if opts is not None and opts.cluster_address is not None:
        from wisconsin.workloads.debitcredit.hosts import repair_on_cluster

        return repair_on_cluster(table_dir, hosted.target(opts.cluster_address, opts.tls)), None
    if hosted.read_note(table_dir) is not None:
        raise OptionError(
            f"{table_dir}: its partitions are on a cluster's workers ({hosted.CLUSTER_NOTE}): "
            "give --cluster ADDR (and --tls-ca/--tls-cert/--tls-key if it uses TLS)"
        )

    done = repair(table_dir)
    a = done.audit
    state = (
        f"{table_dir}: {done.redone} decided remote half(s) applied; "
        if done.redone
        else f"{table_dir}: nothing pending, nothing changed; "
    )
    return [
        state + f"verified: account = teller = branch = history sums ({a.account_sum:,}), "
        f"{a.history_rows:,} history rows"
    ], None


def report_files(paths: Sequence[str | os.PathLike], fmt: str = "text") -> str:
    """The page holds each run's audit (audit_file)."""
    from wisconsin.workloads.debitcredit.report import report_files

    return report_files(paths, fmt, audit=audit_file)


def plot_files(paths: Sequence[str | os.PathLike], out_dir=None, force: bool = False) -> list[Path]:
    from wisconsin.workloads.debitcredit.plot import plot_files

    return plot_files(paths, out_dir, force=force)


def compare_files(a: Sequence, b: Sequence, force: bool = False, fmt: str = "text") -> str:
    from wisconsin.workloads.debitcredit.compare import compare_files

    if len(a) != 1 or len(b) != 1:
        raise WisconsinError("DebitCredit runs are compared one against one (no --with-a/-b)")
    return compare_files(a[0], b[0], force=force, fmt=fmt)


def audit_file(path: str | os.PathLike) -> list:
    """Re-check each partition count's audit from the run file alone (audit.audit_run)."""
    from wisconsin.workloads.debitcredit.audit import audit_file

    return audit_file(path)
