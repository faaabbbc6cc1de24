"""The one-command DebitCredit experiment: for each P, build, measure, audit; one run file.

At each partition count P (database and terminals scaled with P): build the P files from a
zero start, start the P partition processes, warm up, run `repeats` closed N-stream windows
(the peak), then `repeats` passes of the stepped open-arrival curve at fractions of that
peak, stop, redo any decided remote halves, audit, and run the independent check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from wisconsin import WisconsinError, atomic
from wisconsin.measure import environment
from wisconsin.measure.progress import Job
from wisconsin.oltp import cpu, histogram
from wisconsin.oltp.failures import RunFailed, naming_storage
from wisconsin.oltp.series import per_second
from wisconsin.store import check_writable, lock, utc_now
from wisconsin.workloads.debitcredit import audit, metrics, schema
from wisconsin.workloads.debitcredit.check import independent_check
from wisconsin.workloads.debitcredit.coordinator import PartitionServers
from wisconsin.workloads.debitcredit.driver import Load
from wisconsin.workloads.debitcredit.runfile import (
    DURABILITY,
    SCHEMA_VERSION,
    WORKLOAD,
    AuditRecord,
    Config,
    DebitCreditRun,
    PartitionResult,
    Step,
    load_partial,
    save,
    save_partial,
)


def _priority() -> str:
    """CPU and I/O priority: under `ionice -c3` every commit's fsync waits for others' I/O."""
    proc = psutil.Process()
    try:
        io = proc.ionice()
        io_class = {0: "best-effort (default)", 1: "realtime", 2: "best-effort", 3: "idle"}.get(
            int(io.ioclass), str(io.ioclass)
        )
    except (AttributeError, psutil.Error):
        io_class = "unknown"
    return f"ran at nice {proc.nice()}, I/O class {io_class}" + (
        "; an idle I/O class makes each commit's fsync wait for other processes' I/O"
        if io_class == "idle"
        else ""
    )


def _step(load: Load, repeat: int, partitions: int, tallies: list[dict]) -> Step:
    h = histogram.merge([t["hist"] for t in tallies])
    tps, p95 = per_second([d for t in tallies for d in t["done"]], load.duration_s)

    def total(k):
        return sum(t[k] for t in tallies)

    return Step(
        mode=load.mode,
        repeat=repeat,
        offered_tps=load.rate * partitions if load.mode == "open" else 0.0,
        threads=load.streams if load.mode == "closed" else load.servers,
        duration_s=load.duration_s,
        arrivals=total("arrivals"),
        committed=total("committed"),
        in_window=total("in_window"),
        distributed=total("distributed"),
        retries=total("retries"),
        failed=total("failed"),
        unfinished=total("unfinished"),
        throughput_tps=total("in_window") / load.duration_s,
        latency=histogram.summarize(h),
        cpu_s=total("cpu_s"),
        committed_by_partition=tuple(t["committed"] for t in tallies),
        hist=histogram.encode(h),
        first_error=next((t["error"] for t in tallies if t["error"]), ""),
        tps_series=tuple(tps),
        p95_series_s=tuple(p95),
        memory_bytes=tuple(tuple(e[0] for e in t["engine"]) for t in tallies),
        txn_memory_bytes=tuple(tuple(e[1] for e in t["engine"]) for t in tallies),
        temp_bytes=tuple(tuple(e[2] for e in t["engine"]) for t in tallies),
        remote_hist=histogram.encode(histogram.merge([t.get("remote_hist", "") for t in tallies])),
        cpu=tuple(cpu.record(t["cpu"]) for t in tallies),
    )


def _steady(step: Step) -> str:
    v = metrics.steadiness(step)
    return "" if v.steady else f" ({'unsteady' if v.steady is False else 'not judged'}: {v.why})"


def _measure_again(step: Step) -> bool:
    """Only a closed window judged unsteady is measured again (one too short to judge would
    be as short again); the audit re-derives this (audit.rule_steady)."""
    return metrics.steadiness(step).steady is False


WARMUP_WINDOW_S = 2.0
# A scaled partition (2.4 GB at 45 M accounts) fills its engine memory for a minute or more
# under closed load (measured, one connection: 350 -> 1,441 MB in 40 s; the limit is the
# file's size, schema.engine_memory_limit): two minutes at most, not 30 s.
WARMUP_MAX_WINDOWS = 60
WARMUP_FLAT_BYTES = 4 * 2**20  # a window whose engine memory grew less than this: warm


def _warm_up(servers: PartitionServers, cfg: Config, job: Job, label: str) -> int:
    """Closed load, untimed, until each partition's engine memory stops growing (its
    buffer pool and index pages loaded: the first measured step would otherwise be judged
    unsteady for filling the cache), at most WARMUP_MAX_WINDOWS windows. The commits it
    made (they are in the database and the audit). job: told its windows as they go."""
    committed, grew = 0, []
    before = job.kinds["warm-up"].counts if "warm-up" in job.kinds else []
    for i in range(WARMUP_MAX_WINDOWS):
        expect = warm_up_windows(grew, statistics.fmean(before) if before else None)
        job.count("warm-up", f"{label}, window {i + 1}", i, expect, units=1)
        window = min(WARMUP_WINDOW_S, cfg.step_s)
        tallies = servers.run(Load("closed", window, streams=cfg.streams, seed=cfg.seed + i))
        errors = [t["error"] for t in tallies if t["error"]]
        if errors and not sum(t["committed"] for t in tallies):
            raise RunFailed(f"the warm-up committed nothing: {errors[0]}; the run stops")
        committed += sum(t["committed"] for t in tallies)
        growth = [t["engine"][-1][0] - t["engine"][0][0] for t in tallies if t.get("engine")]
        if growth and max(growth) < WARMUP_FLAT_BYTES:
            break
        grew.append(max(growth, default=WARMUP_FLAT_BYTES))
    job.count("warm-up", f"{label}: warm", i + 1, i + 1)  # the windows it took, for the next
    return committed


WARMUP_GUESS_WINDOWS = 12  # until a warm-up's own growth tells (P = 1: 7-12, measured)
TREND_WINDOWS = 4  # the windows whose median growth is compared with the 4 before
LEVELLED = 0.75  # a median growth not below this share of the one before: not falling


def warm_up_windows(grew: list[float], before: float | None = None) -> int:
    """The windows a warm-up is expected to take in all, from its engine memory's growth in
    each window so far (the most of any partition): while the median growth of the last
    TREND_WINDOWS falls below LEVELLED of the one before, by as much per window until it is
    under WARMUP_FLAT_BYTES; once it stops falling, it levels above the mark (history rows
    and the log grow the memory ~5-10 MB a window at P = 2 on 2 cores,
    measured, so no window of both partitions is under it); it then ends at the first
    window under the mark, of the odds a lognormal of the last 2n windows gives each. Until
    two medians are known: the windows the bench's warm-ups so far took (`before`, their
    mean), else WARMUP_GUESS_WINDOWS."""
    n = TREND_WINDOWS
    if len(grew) < 2 * n:
        return max(round(before or WARMUP_GUESS_WINDOWS), len(grew) + 1)
    last = max(statistics.median(grew[-n:]), 1.0)
    earlier = max(statistics.median(grew[-2 * n : -n]), 1.0)
    if last >= LEVELLED * earlier:
        # levelled off: it ends at the first window under the mark, each one of the odds
        # the last 2n windows' spread (lognormal) gives it; at most the cap
        logs = [math.log(max(g, 1.0)) for g in grew[-2 * n :]]
        spread = max(statistics.stdev(logs), 1e-3)
        odds = statistics.NormalDist(statistics.fmean(logs), spread).cdf(
            math.log(WARMUP_FLAT_BYTES)
        )
        if odds * WARMUP_MAX_WINDOWS <= 1:
            return WARMUP_MAX_WINDOWS
        return min(WARMUP_MAX_WINDOWS, len(grew) + math.ceil(1 / odds))
    factor = (last / earlier) ** (1 / n)
    more = math.log(WARMUP_FLAT_BYTES / last) / math.log(factor)
    return min(WARMUP_MAX_WINDOWS, len(grew) + 1 + max(0, math.ceil(more)))


def measure_partitions(
    cfg: Config, partitions: int, work_dir: Path, say, job: Job | None = None, on=None
) -> PartitionResult:
    """One P: on this machine, or with on (hosts.OnCluster) on its cluster's workers."""
    job = job or planned_job(None, cfg, [partitions])
    if on is not None:
        from wisconsin.workloads.debitcredit import hosts

        return hosts.measure(cfg, partitions, say, job, on, measure_steps, say_audit)
    # The database's lock from build to audit: `repair` or another bench must not touch it.
    db_dir = schema.partition_file(cfg.data_dir, 0, partitions).parent
    with lock.hold_tables([db_dir], create=True):
        return _measure_partitions(cfg, partitions, say, job)


def _failed(step: Step, partitions: int) -> Step:
    """A step that delivered nothing because of an unexpected error measured nothing: the
    run stops there, so no "audit: OK" follows it (a full disk stops it sooner, in the
    partition that met it)."""
    if step.first_error and not step.in_window:
        raise RunFailed(
            f"P={partitions} {step.mode} step delivered nothing: {step.failed} transactions "
            f"failed ({step.first_error}); the run stops"
        )
    return step


def _measure_partitions(cfg: Config, partitions: int, say, job: Job) -> PartitionResult:
    t0 = time.perf_counter()
    db_dir = schema.partition_file(cfg.data_dir, 0, partitions).parent
    job.start("build", f"P={partitions}: building the database", units=partitions)
    with naming_storage(f"P={partitions}: building the database in {db_dir}"):
        paths = schema.build(cfg.data_dir, partitions, cfg.sizing)
    build_s = time.perf_counter() - t0
    db_bytes = schema.database_bytes(paths)  # as built, before the run adds history
    log_dir = schema.ack_log_dir(paths[0].parent)  # emptied by the build
    job.start("start", f"P={partitions}: starting the partition servers", units=partitions)
    with PartitionServers(cfg.data_dir, partitions, cfg.sizing, log_dir, pin=True) as servers:
        warmup_committed, steps = measure_steps(servers, cfg, partitions, say, job)
    job.start("audit", f"P={partitions}: auditing", units=partitions)
    with naming_storage(f"P={partitions}: auditing the database in {db_dir}"):
        record = _audit(paths, log_dir)
    say_audit(say, partitions, record, steps)
    return PartitionResult(
        partitions=partitions,
        oversubscribed=partitions > environment.usable_cores(),
        branches=cfg.sizing.branches(partitions),
        tellers=cfg.sizing.tellers(partitions),
        accounts=cfg.sizing.accounts(partitions),
        build_s=build_s,
        db_bytes=db_bytes,
        pinned_cores=servers.cores,
        warmup_committed=warmup_committed,
        steps=tuple(steps),
        audit=record,
        remote_cpu=cpu.summary([s.cpu for s in steps]),
    )


def measure_steps(servers, cfg: Config, partitions: int, say, job: Job) -> tuple[int, list]:
    """On started servers: the warm-up (its commits), the closed windows, the open curve."""
    warmup_committed = _warm_up(servers, cfg, job, f"P={partitions}: warming up")
    steps = _closed_steps(servers, cfg, partitions, say, job)
    steps += _open_steps(servers, cfg, partitions, _peak(steps, partitions), say, job)
    return warmup_committed, steps


def say_audit(say, partitions: int, record: AuditRecord, steps: list[Step]) -> None:
    """The audit's line of one P, with the steps' unexpected errors if any."""
    erred = [s for s in steps if s.first_error]
    say(
        f"P={partitions} audit: {'OK' if record.ok else 'VOID: ' + '; '.join(record.problems)}"
        + (
            f"; {sum(s.failed for s in erred)} transactions of {len(erred)} steps failed with "
            f"unexpected errors (first: {erred[0].first_error})"
            if erred
            else ""
        )
    )


def _closed_steps(servers, cfg: Config, partitions: int, say, job: Job) -> list[Step]:
    """`repeats` closed windows (the peak), each measured again while judged unsteady, at
    most closed_retries more times."""
    steps: list[Step] = []
    for r in range(cfg.repeats):
        for attempt in range(1 + cfg.closed_retries):
            seed = cfg.seed + 1000 + r + 500 * attempt
            load = Load("closed", cfg.closed_s, streams=cfg.streams, seed=seed)
            again = (
                f" (measured again, {attempt + 1} of {1 + cfg.closed_retries})" if attempt else ""
            )
            if attempt:  # a window the plan did not hold
                job.plan("closed", job.kinds["closed"].planned + cfg.closed_s)
            job.start("closed", f"P={partitions} closed {r + 1}/{cfg.repeats}{again}", cfg.closed_s)
            steps.append(_failed(_step(load, r, partitions, servers.run(load)), partitions))
            say(
                f"P={partitions} closed {r + 1}/{cfg.repeats}{again}: "
                f"{steps[-1].throughput_tps:.1f} tps delivered{_steady(steps[-1])}"
            )
            if not _measure_again(steps[-1]):
                break
    return steps


def _peak(closed: list[Step], partitions: int) -> float:
    """The open steps' rates are fractions of this: the median of the steady closed
    windows' throughput (of all, if none is)."""
    steady = [s for s in closed if metrics.steadiness(s).steady] or closed
    peak = statistics.median(s.throughput_tps for s in steady)
    if peak <= 0:
        raise WisconsinError(f"P={partitions}: no transaction committed in the closed runs")
    return peak


def _open_steps(servers, cfg: Config, partitions: int, peak: float, say, job: Job) -> list[Step]:
    """`repeats` passes of the stepped open-arrival curve at cfg.load_fractions of peak."""
    steps: list[Step] = []
    for r in range(cfg.repeats):
        for i, frac in enumerate(cfg.load_fractions):
            load = Load(
                "open",
                cfg.step_s,
                rate=frac * peak / partitions,
                servers=cfg.servers,
                seed=cfg.seed + 2000 + 100 * r + i,
            )
            label = f"P={partitions} open {i + 1}/{len(cfg.load_fractions)}"
            job.start("open", f"{label} ({frac:g} of the peak)", cfg.step_s)
            steps.append(_failed(_step(load, r, partitions, servers.run(load)), partitions))
            s = steps[-1]
            say(
                f"P={partitions} open {s.offered_tps:.1f} tps offered: "
                f"{s.throughput_tps:.1f} delivered, p95 {s.latency.p95 * 1e3:.0f} ms" + _steady(s)
            )
    return steps


def _audit(paths, log_dir) -> AuditRecord:
    """Redo the decided remote halves, check the invariants, run the independent check."""
    recovered = audit.recover(paths)
    a = audit.check(paths, log_dir)
    ok, lines = independent_check(str(paths[0].parent))
    return AuditRecord(
        **dataclasses.asdict(a),
        problems=a.problems,
        recovered=recovered,
        independent=tuple(lines),
        independent_ok=ok,
    )


def run_bench(
    cfg: Config,
    out_dir: str | Path,
    say: Callable[[str], None] = lambda s: None,
    resumed: DebitCreditRun | None = None,
    resumed_from: Path | None = None,
    progress=None,
    cluster=None,
) -> tuple[DebitCreditRun, Path]:
    """Measure every P in cfg.partitions and save the run file in out_dir. After each P but
    the last, a progress file (runfile.save_partial) holds what was measured: an interrupted
    bench continues from it (`resumed`, read from `resumed_from`), rebuilding the P it
    reached from zero. progress: the display its Job tells the time left. cluster
    (oltp.hosted.Target): each P's partitions on that cluster's workers."""
    out = Path(out_dir)
    started = resumed.started_utc if resumed else utc_now()
    stamp = started.replace(":", "").replace("-", "")
    final = out / f"debitcredit-{stamp}.json"
    results = list(resumed.results) if resumed else []
    todo = [p for p in cfg.partitions if p not in {r.partitions for r in results}]
    work_dir = Path(cfg.data_dir)
    job = planned_job(progress, cfg, todo)
    say(schedule_text(cfg) + (f"; resuming at P={todo[0]}" if resumed and todo else ""))
    partial = resumed_from
    try:
        with contextlib.ExitStack() as stack:
            on = None if cluster is None else stack.enter_context(_on_cluster(cluster))
            for p in todo:
                results.append(measure_partitions(cfg, p, work_dir, say, job, on))
                if p != todo[-1]:
                    with naming_storage("saving what was measured"):
                        partial = save_partial(_run(cfg, started, results), final)
    except KeyboardInterrupt as exc:
        if partial is not None:
            exc.resume_command = _resume_text(partial)
        raise
    except RunFailed as exc:
        if partial is None:
            raise
        raise type(exc)(f"{exc}; {_resume_text(partial)}") from None
    job.end("DebitCredit: every P measured")
    run = _run(cfg, started, results, job.record())
    with naming_storage("saving the run file"):
        path = save(run, final)
    if partial is not None:
        partial.unlink(missing_ok=True)  # the run file holds it all now
    return run, path


def _on_cluster(cluster):
    from wisconsin.oltp import hosted

    return hosted.Session(cluster)


def _resume_text(partial: Path) -> str:
    return (
        f"what was measured is in {partial}: continue it with `wisconsin bench "
        f"--workload debitcredit --resume {partial}`"
    )


def _run(cfg: Config, started: str, results, estimate=None) -> DebitCreditRun:
    notes = [
        (
            f"database sized for {cfg.sizing.rated_tps_per_partition:g} tps per partition "
            f"({cfg.sizing.branches_per_partition} branches, "
            f"{cfg.sizing.branches_per_partition * cfg.sizing.accounts_per_branch:,} accounts); "
            "the report says per P whether the measured tps is within it (scaled)"
        ),
        "terminals have no think time (closed: N streams; open: Poisson arrivals served by a "
        "pool), not the standard's 100 tellers per tps thinking 100 s",
        _priority(),
    ]
    return DebitCreditRun(
        workload=WORKLOAD,
        schema_version=SCHEMA_VERSION,
        started_utc=started,
        finished_utc=utc_now(),
        environment=dataclasses.asdict(environment.capture()),
        config=cfg,
        results=tuple(results),
        notes=tuple(notes),
        estimate=estimate,
    )


RULES = {"95/1": (0.95, 1.0), "90/2": (0.90, 2.0)}
# Per P: one closed window (the peak) and one pass of the stepped open curve; its intervals
# come from the batch means of each step's per-second series (metrics.batch_interval).
DEFAULT_REPEATS = 1
DEFAULT_STEP_S = 30.0  # long enough to judge steadiness on thirds of 10 s
# The closed window sets the peak and gates the audit: twice as long, its thirds of 20 s
# average out more of a shared machine's wander (5-10% over seconds, measured).
CLOSED_STEP_FACTOR = 2.0
# A closed window the machine disturbed (a neighbour changing the rate by 25% mid-window,
# measured) is measured again once; both windows stay in the run file, the unsteady one
# off the headline. Worst case: one more closed window per P.
DEFAULT_CLOSED_RETRIES = 1
LOAD_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.25)
# First guesses of the untimed work, until the bench has measured its own (the time left
# before then): a partition's build (~1 M accounts), a P's start and warm-up, a partition's
# audit and independent check.
BUILD_GUESS_PER_PARTITION_S = 10.0
START_GUESS_PER_PARTITION_S = 2.0
AUDIT_GUESS_PER_PARTITION_S = 2.0


def scaled_branches(tps: float) -> int:
    """Branches per partition that rate it at `tps` by the rule (schema.BRANCHES_PER_TPS per
    tps, whole branches, rounded up)."""
    return max(1, math.ceil(round(tps * schema.BRANCHES_PER_TPS, 9)))


def default_partitions(cores: int | None = None) -> tuple[int, ...]:
    """1, 2, 4, ... up to the usable cores (at least 1 and 2: a scaleup needs two P); a P
    beyond the cores is reported as oversubscribed and kept off the scaleup headline."""
    cores = cores or environment.usable_cores()
    out, p = [], 1
    while p <= max(2, cores):
        out.append(p)
        p *= 2
    return tuple(out)


def schedule_text(cfg: Config) -> str:
    """The arithmetic of a bench, as its first line says it."""
    per_p = cfg.seconds_per_partition_count()
    return (
        f"schedule: P = {','.join(map(str, cfg.partitions))}; per P {cfg.repeats} x (1 closed "
        f"step of {cfg.closed_s:g} s + {len(cfg.load_fractions)} open of {cfg.step_s:g} s) = "
        f"{per_p / 60:.1f} min measured, plus build and warm-up; "
        f"~{per_p * len(cfg.partitions) / 60:.0f} min measured in all"
        + (
            f"; an unsteady closed step is measured again (at most {cfg.closed_retries} more: "
            f"+{cfg.closed_retries * cfg.closed_s:g} s per P)"
            if cfg.closed_retries
            else ""
        )
    )


def planned_job(progress, cfg: Config, todo) -> Job:
    """The bench's Job on the display progress, the partition counts todo planned: a build
    and an audit per partition, a start and warm-up per P, and the windows' seconds (their
    drain and collection add to them, as measured), each at its first guess until measured."""
    job = Job(progress)
    windows = cfg.repeats * (cfg.closed_s + len(cfg.load_fractions) * cfg.step_s)
    job.plan("build", sum(todo), each_s=BUILD_GUESS_PER_PARTITION_S)
    job.plan("start", sum(todo), each_s=START_GUESS_PER_PARTITION_S)
    job.plan("warm-up", len(todo), each_s=WARMUP_GUESS_WINDOWS * WARMUP_WINDOW_S)
    job.plan("closed", len(todo) * cfg.repeats * cfg.closed_s, each_s=1.0)
    job.plan("open", len(todo) * (windows - cfg.repeats * cfg.closed_s), 1.0, like="closed")
    job.plan("audit", sum(todo), each_s=AUDIT_GUESS_PER_PARTITION_S)
    return job


def bench_command(
    data_dir: str,
    partitions: tuple[int, ...],
    seed: int,
    repeats: int | None,
    out: str,
    branches: int,
    step_s: float | None,
    rule: str,
    streams: int = 8,
    servers: int = 8,
    say: Callable[[str], None] = lambda s: None,
    resume: str | None = None,
    progress=None,
    cluster=None,
) -> tuple[DebitCreditRun, Path, str, list[Path]]:
    """`wisconsin bench --workload debitcredit`: measure, save, report, plot (with resume: a
    progress file's configuration, measuring the partition counts it lacks); progress: the
    display of its progress and time left; cluster: oltp.hosted.Target, or None here."""
    from wisconsin.workloads.debitcredit import plot, report

    if resume is not None:
        resumed = load_partial(resume)
        where = Path(resume).parent
        run, path = run_bench(resumed.config, where, say, resumed, Path(resume), progress, cluster)
        return _publish(run, path, report, plot)
    partitions = tuple(partitions) or default_partitions()
    step_s = DEFAULT_STEP_S if step_s is None else step_s
    if any(p < 1 for p in partitions):
        raise WisconsinError("partition counts must be at least 1")
    if step_s <= 0:
        raise WisconsinError("--step-seconds must be positive")
    check_writable(out, f"--out {out}")  # before minutes of measuring
    if repeats is None:
        repeats = DEFAULT_REPEATS
    share, limit = RULES[rule]
    cfg = Config(
        partitions=tuple(partitions),
        sizing=schema.Sizing(branches_per_partition=branches),
        streams=streams,
        servers=servers,
        step_s=step_s,
        repeats=repeats,
        load_fractions=LOAD_FRACTIONS,
        rule_share=share,
        rule_limit_s=limit,
        seed=seed,
        data_dir=str(Path(data_dir) / "debitcredit"),
        durability=DURABILITY,
        closed_step_s=CLOSED_STEP_FACTOR * step_s,
        closed_retries=DEFAULT_CLOSED_RETRIES,
    )
    run, path = run_bench(cfg, out, say, progress=progress, cluster=cluster)
    return _publish(run, path, report, plot)


def _publish(run: DebitCreditRun, path: Path, report, plot):
    text = report.render(run, "text")
    report_path = path.with_suffix(".report.md")
    # never a half-written report under the final name
    atomic.write_text(report_path, report.render(run, "markdown"))
    figures = plot.plot_run(run, path.parent, path.stem)
    return run, path, text, [report_path, *figures]
