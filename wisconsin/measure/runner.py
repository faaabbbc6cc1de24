"""The runner: time the five queries on F and G tables at each partition count, verify
every answer, and save a run file.

Timing method (the TP1 pitfalls are the checklist; docs/methodology.md maps them):
- rounds: each round runs every (table, query), and the single-thread baseline's, once in a
  seeded shuffled order (wisconsin.analysis.schedule), so drift cannot line up with P;
- every execution opens the table fresh and starts from the same state (result tables
  emptied, the update undone and verified), all untimed;
- cache state is chosen: cold evicts every partition (OS page cache and DuckDB) before each
  timed execution and proves it from the bytes read; warm runs the statement untimed right
  before, in the same DuckDB instance;
- each timed execution records the harness overhead at its P just before it (an empty
  statement through the same path) and its engine share;
- rounds go on until every headline ratio is narrow enough, --max-reps, or --time-budget;
- every execution is journaled as it finishes (wisconsin.measure.journal): a failed or interrupted
  run leaves an "incomplete" run file that `run --resume` continues.

What the run holds while it measures (its tables, read once; its engines, stopped whatever
happens) is wisconsin.measure.session's; the configuration is derived from the options once
(wisconsin.measure.options.run_config).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path

from wisconsin import VerificationError, WisconsinError, engines, interrupts, store
from wisconsin.analysis import schedule
from wisconsin.analysis.schedule import Step
from wisconsin.cluster import logs
from wisconsin.measure import calibrate, environment, journal
from wisconsin.measure.catalog import QueryCatalog
from wisconsin.measure.execution import ColdNotProven, Loop, Progress, Spent, Target  # noqa: F401
from wisconsin.measure.options import (  # noqa: F401  (re-exported: the CLI and tests use them)
    CACHES,
    RunOptions,
    engine_config,
    resume_options,
    run_config,
    validate,
    with_defaults,
)
from wisconsin.measure.progress import Job, job_of
from wisconsin.measure.session import Session, Tables, make_engine, own_partitions, partitions_of  # noqa: F401
from wisconsin.runfiles import facts, runfile
from wisconsin.runfiles.facts import StopRule
from wisconsin.runfiles.runfile import Run, TableInfo
from wisconsin.store import check as store_check
from wisconsin.store import lock
from wisconsin.store.expect import expected_answers

# The commit protocol this runner runs with (audit.rule_durability knows every one a runner
# of this tool has run with; facts.DURABILITY_TEXT says it in words).
DURABILITY = runfile.Durability.WAL_DECISION_UNIT
MODES = engines.MODES


def available_partitions(data_dir: str, kinds) -> tuple[int, ...]:
    """Partition counts generated in data_dir for every one of kinds."""
    return partitions_of(store.tables_in(data_dir), kinds)


def default_run_path(out: str, mode: str) -> Path:
    """runs/<UTC-time>-<host>-<mode>.json, or out itself if it names a .json file."""
    p = Path(out)
    if p.suffix == ".json":
        return p
    if p.is_file() or p.suffix in (".txt", ".csv", ".md", ".log"):
        raise WisconsinError(f"--out {out}: give a directory, or a file name ending in .json")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    host = socket.gethostname().split(".")[0] or "host"
    return p / f"{stamp}-{host}-{mode}.json"


def _skeleton(opts: RunOptions, tables: Tables) -> dict:
    """The run file before its first round (the journal's base record)."""
    first = next(iter(tables.manifests.values()))
    order_seed = opts.order_seed if opts.order_seed is not None else time.time_ns() % 2**31
    config = run_config(
        opts,
        seed=first.seed,
        order_seed=order_seed,
        durability=DURABILITY,
        interleaved=True,
        single_thread=tables.single_thread(opts),
    )
    run = Run(
        schema_version=runfile.SCHEMA_VERSION,
        started_utc=store.utc_now(),
        finished_utc="",
        environment=environment.capture(),
        config=config,
        topology=runfile.Topology(scheduler="", hosts=()),
        tables=tuple(
            TableInfo(
                name=m.name,
                kind=m.kind,
                rows=m.rows,
                partitions=m.partitions,
                seed=m.seed,
                generator_version=m.generator_version,
                rows_per_partition=m.rows_per_partition,
            )
            for m in tables.manifests.values()
        ),
        measurements=(),
        status="incomplete",
    )
    return runfile.to_dict(run)


@lock.locked("opts")  # before the journal exists: a refused run leaves nothing behind
def run(opts: RunOptions, progress: Progress | Job | None = None) -> tuple[Run, Path]:
    """Measure, verify, save; return the run and the run file's path. progress: a display
    (fed by a Job of this run), or the Job of a larger one (a bench)."""
    t0 = time.perf_counter()
    job = job_of(progress)
    listing = store.tables_in(opts.data_dir)  # the data directory, listed once for the run
    if opts.partitions is None:
        found, g_found = own_partitions(listing, opts.kinds)
        if not found:
            raise WisconsinError(
                f"no {' and '.join(opts.kinds)} tables in {opts.data_dir}: run "
                f"`wisconsin generate --data {opts.data_dir}` first"
            )
        opts = replace(opts, partitions=found, g_partitions=g_found)
    opts = with_defaults(opts)
    validate(opts)
    out_path = default_run_path(opts.out, opts.mode)
    if out_path.exists() or journal.journal_path(out_path).exists():
        raise WisconsinError(f"{out_path} already exists; run files are never overwritten")
    store.check_writable(out_path.parent, f"--out {opts.out}")
    logs.say_swept(out_path.parent)  # log directories of runs killed there
    tables = Tables.read(opts, listing)
    with lock.hold_tables(_table_dirs(tables)):
        job.start("setup", f"{opts.mode}: checking the tables, starting the engine")
        spent = Spent()
        with spent.on("checks"):
            _check_tables(tables)
        base = _skeleton(opts, tables)
        created = not out_path.parent.exists()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        state = journal.RunState(base, journal.journal_path(out_path))
        try:
            return _execute(
                state, opts, tables, out_path, job, elapsed_before=0.0, spent=(t0, spent)
            )
        except BaseException:
            if created and not any(out_path.parent.iterdir()):  # a run that kept nothing
                out_path.parent.rmdir()
            raise


def _table_dirs(tables: Tables) -> list[Path]:
    """The run's tables and the baseline's F1 (hold() skips one that does not exist): a run
    holds each one's own lock, so a table reached through a symlink is not shared."""
    return [tables.dir(name) for name in {*tables.manifests, "F1"}]


def resume(
    path: str | os.PathLike,
    progress: Progress | Job | None = None,
    *,
    catalog: QueryCatalog,
    timeout_s: float = 3600.0,
    tls: tuple = (None, None, None),
    time_budget_s: float | None = None,
) -> tuple[Run, Path]:
    """Continue an incomplete run where it stopped; the complete run replaces its file.
    The partial round it stopped in is finished in its recorded order. time_budget_s
    replaces the run's budget (the whole run's, time already spent included)."""
    out_path = Path(path)
    job = job_of(progress)
    state = journal.load_for_resume(out_path)
    logs.say_swept(out_path.parent)
    if time_budget_s is not None:
        state.base["config"]["time_budget_s"] = time_budget_s
    partial = state.to_run()
    opts = with_defaults(resumed_options(partial, out_path, catalog, timeout_s, tls))
    validate(opts)
    tables = Tables.read(opts)
    for t in partial.tables:
        m = tables.manifests.get(t.name)
        if m is None or (m.rows, m.partitions, m.seed) != (t.rows, t.partitions, t.seed):
            raise WisconsinError(f"{t.name} in {opts.data_dir} is not the table this run measured")
    with lock.hold_tables(_table_dirs(tables)):
        job.start("setup", f"{opts.mode}: resuming, checking the tables, starting the engine")
        _check_tables(tables)
        state.base["notes"] = [*state.base.get("notes", []), _resumed(partial, time_budget_s)]
        journal.journal_path(out_path).unlink(missing_ok=True)
        state = journal.RunState(runfile.to_dict(state.to_run()), journal.journal_path(out_path))
        before = _elapsed(partial)
        return _execute(state, opts, tables, out_path, job, elapsed_before=before)


def resumed_options(
    partial: Run, out: Path, catalog: QueryCatalog, timeout_s: float, tls: tuple
) -> RunOptions:
    """The options an incomplete run resumes with: its config's, on the engine it records
    (the cluster's address resolved, with tls: (ca, cert, key) files)."""
    c = partial.config
    address, security = None, None
    if c.cluster:
        from wisconsin.cluster import resolve_target

        address, security = resolve_target(c.cluster, *tls)
    engine = engine_config(c, timeout_s=timeout_s, cluster=address, security=security)
    return resume_options(partial, out, engine, catalog)


def _elapsed(partial: Run) -> float:
    """Seconds the run had spent, from its first round's start to its last dispatch."""
    stamps = [r.dispatched_unix or 0.0 for m in partial.measurements for r in m.repetitions]
    first = [r.started_utc for r in partial.rounds if r.started_utc]
    if not stamps or not first:
        return 0.0
    return max(0.0, max(stamps) - datetime.fromisoformat(first[0]).timestamp())


def _resumed(partial: Run, time_budget_s: float | None) -> str:
    return (
        f"resumed at {store.utc_now()} after {len(partial.rounds)} rounds had started "
        f"({partial.stop_reason or 'the run had stopped'})"
        + (f" with --time-budget {time_budget_s:g} s" if time_budget_s is not None else "")
    )


def _check_tables(tables: Tables) -> None:
    """Every partition against its manifest, before anything is written or timed."""
    for name, m in tables.manifests.items():
        store_check.check_table(tables.dir(name), m)


def _targets(tables: Tables, session: Session) -> dict[str, Target]:
    expect = {name: expected_answers(m) for name, m in tables.manifests.items()}
    targets = {
        name: Target(session.engine, m, str(tables.dir(name)), expect[name])
        for name, m in tables.manifests.items()
    }
    if session.baseline is not None:
        f1 = tables.f1
        exp = expect.get("F1") or expected_answers(f1)
        label = f"{schedule.BASELINE}:F1"
        targets[label] = Target(session.baseline, f1, str(tables.dir("F1")), exp)
    return targets


def _steps(opts: RunOptions, tables: Tables, separate: bool) -> list[Step]:
    steps = [Step(name, q) for name in tables.manifests for q in opts.queries]
    return steps + ([Step("F1", q, True) for q in opts.queries] if separate else [])


@lock.locked("opts")  # one run per data directory (run and resume both come here)
def _execute(
    state, opts, tables, out_path, job: Job, elapsed_before, spent=None
) -> tuple[Run, Path]:
    """The rounds and the run file. spent: (perf_counter at the run's start, Spent so far)
    to record where the run's time went (None: not recorded, e.g. a resumed run)."""
    config = state.base["config"]
    config["single_thread"] = tables.single_thread(opts)
    separate = config["single_thread"] == "separate"
    notes = list(state.base.get("notes", []))
    rates, topology = {}, None
    t0, parts = spent or (time.perf_counter(), Spent())
    with Session(opts, out_path.parent, separate) as session:
        config["transport_used"] = session.transport_used
        try:
            targets = _targets(tables, session)
            first = targets.get("F1") or next(iter(targets.values()))
            with parts.on("probes"):
                rates = calibrate.machine_rates(first.manifest, first.table_dir)
            with parts.on("start"):
                session.start()
            local = opts.mode == "shared-nothing" and not opts.engine.cluster
            job.plan("fresh workers", 0, each_s=(session.start_s or 0.0) if local else 0.0)
            ram = state.base["environment"]["memory_bytes"]
            if opts.engine.cluster:
                topology = session.topology()
                ram = sum(h.memory_bytes for h in topology.hosts) or ram
            steps = _steps(opts, tables, separate)
            loop = Loop(
                state, targets, steps, opts, ram, job, elapsed_before, session.new_block,
                spent=parts,
            )  # fmt: skip
            stop = loop.loop()
            topology = session.topology()
            notes += session.warnings(list(tables.manifests))
        except VerificationError:
            state.close(remove=True)  # a wrong answer voids the run: nothing is kept
            raise
        except BaseException as exc:
            raise _incomplete(state, exc, out_path, notes, topology) from None
    try:
        interrupts.check()  # a ^C discarded after the last round (e.g. in engine.stop)
    except KeyboardInterrupt as exc:
        raise _incomplete(state, exc, out_path, notes, topology) from None
    if loop.timed_rounds_done() == 0:  # e.g. the warm-ups used the whole budget: no times
        spent = WisconsinError(
            f"the time budget ({opts.time_budget_s:g} s) ran out before the first timed round"
        )
        more = " --time-budget SECONDS"
        raise _incomplete(state, spent, out_path, notes, topology, why=stop, more=more)
    result = _complete(state, loop.timed_rounds_done(), stop, notes, topology, rates, job)
    if spent is not None:
        result = replace(result, time_spent=time_spent(parts, time.perf_counter() - t0))
    path = journal.save_run(result, out_path)
    state.close(remove=True)
    session.discard_logs()
    return result, path


def time_spent(parts: Spent, total_s: float) -> runfile.TimeSpent:
    """The run's TimeSpent from what its parts took (a part never entered took 0 s)."""
    names = [f.name for f in fields(runfile.TimeSpent) if f.name != "total_s"]
    return runfile.TimeSpent(
        total_s=total_s, **{n: parts.get(n.removesuffix("_s"), 0.0) for n in names}
    )


def _complete(state, rounds: int, stop, notes, topology, rates, job: Job) -> Run:
    """The complete run: its rounds, why they stopped, the calibration from its times, and
    what the time-left estimate said at half the job."""
    partial = state.to_run()
    own = partial.config.single_thread == "own"
    base = partial.baseline or tuple(m for m in partial.measurements if m.table == "F1" and own)
    cores = _cores(partial, topology)
    cal = calibrate.run_calibration(replace(partial, baseline=base), cores, rates)
    return state.to_run(
        finished_utc=store.utc_now(),
        topology=topology,
        config=replace(partial.config, repeat=rounds),
        notes=tuple(notes),
        status="complete",
        stop=stop,
        calibration=cal,
        baseline=tuple(runfile.to_dict(m) for m in base),
        estimate=job.record(),
    )


def _cores(run: Run, topology) -> int:
    if run.config.cluster and topology is not None and topology.hosts:
        return sum(h.cores for h in topology.hosts)
    return run.environment.usable_cores


def _incomplete(
    state, exc: BaseException, out_path: Path, notes, topology, why=None, more: str = ""
) -> BaseException:
    """Write what was measured as an incomplete run file; the exception to raise. why: the
    Stop (default: from exc); more: what the resume command needs besides the file."""
    interrupted = interrupts.is_interrupt(exc)
    if interrupted and not isinstance(exc, KeyboardInterrupt):
        exc = KeyboardInterrupt()  # DuckDB's form of a ^C: the CLI says "interrupted", exit 130
    # one line: a DuckDB or Dask message can run to several
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    why = why or runfile.Stop(
        StopRule.INTERRUPTED if interrupted else StopRule.FAILED, text="" if interrupted else first
    )
    if not state.reps and not state.warmups:
        state.close(remove=True)
        if interrupted or isinstance(exc, WisconsinError):
            return exc
        return WisconsinError(facts.stop_text(why))
    partial = state.to_run(
        finished_utc=store.utc_now(),
        notes=tuple(notes),
        status="incomplete",
        stop=why,
        **({"topology": topology} if topology is not None else {}),
    )
    path = journal.save_run(partial, out_path)
    state.close(remove=True)
    if interrupted:
        exc.run_file = str(path)
        return exc
    return WisconsinError(
        f"{first}; what was measured is in {path} (incomplete): "
        f"continue it with `wisconsin run --resume {path}{more}`"
    )
