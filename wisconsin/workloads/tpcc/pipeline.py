"""The one-command TPC-C experiment: build, run, recover, check, save, report.

Build the database afresh (one file per partition, in parallel), start the partition
servers pinned one per core, run the terminals through a ramp-up and the measured window
(a FORCE CHECKPOINT in its middle on every partition), let the queued deliveries finish,
redo any decided remote half, check consistency conditions 3.3.2.1-12 across the partitions
and the independent check's 1-4, find every acknowledged transaction in the database
(receipts.py), and save the run file. The tables stay in place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from wisconsin import WisconsinError, atomic
from wisconsin.measure import environment
from wisconsin.oltp import cpu, histogram, hosted
from wisconsin.oltp.failures import naming_storage
from wisconsin.oltp.servers import pinned_cores
from wisconsin.store import check_writable, lock, utc_now
from wisconsin.workloads.tpcc import consistency, load, receipts, remote, rules
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc import metrics as m
from wisconsin.workloads.tpcc.check import independent_check
from wisconsin.workloads.tpcc.driver import Load
from wisconsin.workloads.tpcc.runfile import (
    SCHEMA_VERSION,
    WORKLOAD,
    Checkpoint,
    Config,
    KindResult,
    Result,
    Times,
    TpccRun,
    save,
)
from wisconsin.workloads.tpcc.schema import SPEC_SCALE, Placement, Scale, connect

DEFAULT_WAREHOUSES_PER_PARTITION = 4
DEFAULT_RAMP_S = 60.0  # every terminal has cycled at least once (a cycle is ~21 s)
DEFAULT_WINDOW_S = 240.0
NOWAIT_WORKERS = 4  # no-wait terminals (and workers) per partition
SPEC_WORKERS = 4
DRAIN_S = 80.0
SUM_NEXT_O_ID = "SELECT sum(d_next_o_id) FROM district"
NOTES = (
    "TPC-C-derived, not an audited tpmC: no remote terminal emulator, pricing or full "
    "disclosure; a short window, not the specification's two hours",
    "every commit fsyncs its partition's DuckDB WAL; a distributed transaction's decision is "
    "the home partition's commit (presumed abort)",
)


def default_partitions() -> int:
    """One partition per usable core, at most 2 (the default's load fits in minutes)."""
    return max(1, min(2, environment.usable_cores()))


def _next_o_ids(paths) -> int:
    total = 0
    for p in paths:
        con = connect(p, read_only=True)
        try:
            total += con.execute(SUM_NEXT_O_ID).fetchall()[0][0]
        finally:
            con.close()
    return total


def _times(t: list) -> Times:
    n, total, low, high = t
    return Times(int(n), total / n if n else 0.0, low, high)


def _kinds(tallies: list[dict]) -> tuple[KindResult, ...]:
    out = []
    for k in ins.KINDS:
        parts = [t["by_kind"][k] for t in tallies]
        h = histogram.merge([p["hist"] for p in parts])
        key = [p["keying"] for p in parts]
        think = [p["think"] for p in parts]

        def merged(ts):
            n = sum(t[0] for t in ts)
            return [n, sum(t[1] for t in ts), min((t[2] for t in ts if t[0]), default=0.0),
                    max((t[3] for t in ts), default=0.0)]  # fmt: skip

        out.append(
            KindResult(
                kind=k,
                count=sum(p["count"] for p in parts),
                failed=sum(p["failed"] for p in parts),
                retries=sum(p["retries"] for p in parts),
                distributed=sum(p["distributed"] for p in parts),
                latency=histogram.summarize(h),
                hist=histogram.encode(h),
                keying=_times(merged(key)),
                think=_times(merged(think)),
            )
        )
    return tuple(out)


def _series(tallies: list[dict], window_s: float) -> tuple[int, ...]:
    n = round(window_s)
    counts = [0] * n
    for t in tallies:
        for at in t["no_done"]:
            if 0 <= at <= window_s:
                counts[min(int(at), n - 1)] += 1
    return tuple(counts)


def _measure(db_dir: Path, manifest, step: Load, say) -> tuple[Result, tuple[int, ...]]:
    """Run the step on the partition servers, then recover and check the database."""
    from wisconsin.workloads.tpcc.server import PartitionServers

    paths = load.partition_paths(db_dir, manifest)
    before = _next_o_ids(paths)
    with PartitionServers(db_dir, manifest, load.ack_log_dir(db_dir)) as servers:
        tallies = servers.run(step)
    say("window done; recovering and checking consistency")
    with naming_storage(f"checking the TPC-C database in {db_dir}"):
        recovered = remote.recover(paths)
        acked = receipts.check(paths, load.ack_log_dir(db_dir))
        after = _next_o_ids(paths)
        verdicts = consistency.check_database(paths, manifest.scale, delivered(tallies))
        ind_ok, ind_lines = independent_check(str(db_dir))
    independent = (ind_ok, ind_lines)
    result = result_of(tallies, step, after - before, recovered, verdicts, independent, acked)
    return result, servers.cores


def delivered(tallies: list[dict]) -> dict:
    """Orders delivered per (warehouse, district), as the Delivery transactions said."""
    out: dict = {}
    for t in tallies:
        for w, d, n in t["delivered"]:
            out[(w, d)] = out.get((w, d), 0) + n
    return out


def result_of(
    tallies, step: Load, next_o_delta: int, recovered: int, verdicts, independent, acked=None
):
    """The run's Result from the partitions' tallies and the checks after the window
    (independent: the independent check's (ok, lines); acked: the receipts, looked up here
    or on each host); its build is set by the caller."""
    ind_ok, ind_lines = independent
    return Result(
        kinds=_kinds(tallies),
        no_series=_series(tallies, step.duration_s),
        new_orders_all=sum(t["new_orders_all"] for t in tallies),
        d_next_o_id_delta=next_o_delta,
        rolled_back=sum(t["rolled_back"] for t in tallies),
        lines=sum(t["lines"] for t in tallies),
        remote_lines=sum(t["remote_lines"] for t in tallies),
        remote_payments=sum(t["remote_payments"] for t in tallies),
        by_name=sum(t["by_name"] for t in tallies),
        delivery_s=tuple(d[1] for t in tallies for d in t["deliveries"]),
        deliveries_unfinished=sum(t["delivery_unfinished"] for t in tallies),
        skipped_districts=sum(d[2] for t in tallies for d in t["deliveries"]),
        checkpoints=tuple(
            Checkpoint(p, *t["checkpoint"]) for p, t in enumerate(tallies) if t["checkpoint"]
        ),
        wal_bytes=tuple(tuple(t["wal_bytes"]) for t in tallies),
        memory_bytes=tuple(tuple(e[0] for e in t["engine"]) for t in tallies),
        txn_memory_bytes=tuple(tuple(e[1] for e in t["engine"]) for t in tallies),
        temp_bytes=tuple(tuple(e[2] for e in t["engine"]) for t in tallies),
        cpu_s=tuple(t["cpu_s"] for t in tallies),
        cpu=(split := tuple(cpu.record(t["cpu"]) for t in tallies)),
        remote_cpu=cpu.summary([split]),
        first_error=next((t["error"] for t in tallies if t["error"]), ""),
        recovered=recovered,
        consistency=tuple(consistency.lines(verdicts)),
        consistency_failed=tuple(consistency.failed(verdicts)),
        independent=tuple(ind_lines),
        independent_ok=ind_ok,
        build_s=0.0,
        db_bytes=0,
        receipts=acked,
    )


def run_bench(
    data_dir: str | Path,
    out_dir: str | Path,
    partitions: int | None = None,
    warehouses_per_partition: int = DEFAULT_WAREHOUSES_PER_PARTITION,
    mode: str = "spec",
    window_s: float = DEFAULT_WINDOW_S,
    ramp_s: float = DEFAULT_RAMP_S,
    seed: int = 0,
    scale: Scale = SPEC_SCALE,
    say: Callable[[str], None] = lambda s: None,
    cluster=None,
) -> tuple[TpccRun, Path]:
    """Measure one TPC-C run and save its run file in out_dir (cluster: an
    oltp.hosted.Target, each partition on a worker of its own; tpcc.hosts)."""
    if mode not in ("spec", "nowait"):
        raise WisconsinError(f"mode must be spec or nowait, not {mode!r}")
    if window_s < 1 or ramp_s < 0:
        raise WisconsinError("the window must be at least 1 s and the ramp-up at least 0 s")
    partitions = partitions or default_partitions()
    placement = Placement(partitions, warehouses_per_partition)
    db_dir = Path(data_dir) / "tpcc" / f"w{placement.warehouses}-p{partitions}"
    say(
        f"TPC-C-derived, {mode} mode: {placement.warehouses} warehouses on {partitions} "
        f"partition(s), ramp-up {ramp_s:g} s, window {window_s:g} s; building "
        + (f"{db_dir}" if cluster is None else f"on the cluster's hosts (note in {db_dir})")
    )
    with contextlib.ExitStack() as stack:
        on = None if cluster is None else stack.enter_context(hosted.Session(cluster))
        return _bench(db_dir, out_dir, placement, mode, window_s, ramp_s, seed, scale, say, on)


def _bench(db_dir, out_dir, placement, mode, window_s, ramp_s, seed, scale, say, on):
    started = utc_now()
    t0 = time.perf_counter()
    if on is None:
        with naming_storage(f"building the TPC-C database in {db_dir}"):
            manifest = load.build(db_dir, placement, seed, scale)
        db_bytes = sum(p.stat().st_size for p in load.partition_paths(db_dir, manifest))
    else:
        from wisconsin.workloads.tpcc import hosts

        manifest, built = hosts.build(on, db_dir, placement, seed, scale)
        db_bytes = built.bytes
    build_s = time.perf_counter() - t0
    c_run = rules.run_constants(manifest.constants, seed)
    workers = SPEC_WORKERS if mode == "spec" else NOWAIT_WORKERS
    step = Load(
        mode, ramp_s, window_s, seed, (c_run.c_last, c_run.c_id, c_run.ol_i_id), workers,
        checkpoint_at_s=window_s / 2, drain_s=DRAIN_S, deferred_delivery=mode == "spec",
    )  # fmt: skip
    say(f"built in {build_s:.0f} s ({db_bytes / 2**20:.0f} MB); running the terminals")
    where = None
    if on is None:
        with lock.hold_tables([db_dir]):
            result, cores = _measure(db_dir, manifest, step, say)
    else:
        tallies, before, where = hosts.run_window(on, db_dir, manifest, built, step, say)
        say("window done; recovering and checking consistency on every host")
        checked = hosts.check_all(on, manifest, built, delivered(tallies))
        recovered, after, verdicts, ind, acked = checked
        result = result_of(tallies, step, after - before, recovered, verdicts, ind, acked)
        cores = ()
    result = dataclasses.replace(result, build_s=build_s, db_bytes=db_bytes)
    sized = ("partitions", "warehouses_per_partition", "customers_per_district", "items")
    cfg = Config(
        **{name: getattr(manifest, name) for name in sized},
        mode=mode, ramp_s=ramp_s, window_s=window_s, workers=workers, seed=seed,
        c_load=(manifest.c_last, manifest.c_id, manifest.ol_i_id),
        c_run=(c_run.c_last, c_run.c_id, c_run.ol_i_id),
        checkpoint_at_s=window_s / 2, drain_s=DRAIN_S, limit_s=m.LIMIT_S,
        pinned_cores=tuple(cores or pinned_cores(0)), data_dir=str(db_dir), cluster=where,
    )  # fmt: skip
    env = dataclasses.asdict(environment.capture())
    run = TpccRun(WORKLOAD, SCHEMA_VERSION, started, utc_now(), env, cfg, result, NOTES)
    stamp = started.replace(":", "").replace("-", "")
    with naming_storage("saving the run file"):
        path = save(run, Path(out_dir) / f"tpcc-{stamp}.json")
    return run, path


def bench_command(opts, say: Callable[[str], None]) -> tuple[TpccRun, Path, str, Path]:
    """`wisconsin bench --workload tpcc`: measure, save, report (text and markdown)."""
    from wisconsin.workloads.tpcc import report

    check_writable(opts.out, f"--out {opts.out}")
    window = opts.step_seconds if opts.step_seconds is not None else DEFAULT_WINDOW_S
    parts = opts.partitions[0] if opts.partitions else None
    if opts.partitions and len(opts.partitions) > 1:
        raise WisconsinError("--workload tpcc runs one partition count at a time")
    # one partition server per worker (oltp.hosted)
    cluster = hosted.optional_target(opts.cluster_address, opts.tls)
    run, path = run_bench(
        opts.data_dir, opts.out, parts, window_s=window, seed=opts.seed, say=say, cluster=cluster
    )
    text = report.render(run, "text")
    report_path = path.with_suffix(".report.md")
    atomic.write_text(report_path, report.render(run, "markdown"))
    return run, path, text, report_path
