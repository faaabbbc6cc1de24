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
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from wisconsin import VerificationError, WisconsinError, engines, interrupts, store
from wisconsin.analysis import schedule
from wisconsin.analysis.schedule import Step
from wisconsin.cluster import logs
from wisconsin.engines.base import Engine, EngineConfig
from wisconsin.measure import environment, journal
from wisconsin.measure.catalog import QueryCatalog
from wisconsin.measure.execution import ColdNotProven, Loop, Progress, Target  # noqa: F401
from wisconsin.measure.options import RunOptions
from wisconsin.runfiles import facts, runfile
from wisconsin.runfiles.facts import StopRule
from wisconsin.runfiles.runfile import Run, RunConfig, TableInfo
from wisconsin.store import check as store_check
from wisconsin.store import lock
from wisconsin.store.expect import expected_answers

# The commit protocol this runner runs with (audit.rule_durability knows every one a runner
# of this tool has run with; facts.DURABILITY_TEXT says it in words).
DURABILITY = runfile.Durability.WAL_DECISION_UNIT
CACHES = runfile.CACHE_STATES
MODES = engines.MODES


def make_engine(mode: str, config: EngineConfig) -> Engine:
    return engines.make_engine(mode, config)


def available_partitions(data_dir: str, kinds) -> tuple[int, ...]:
    """Partition counts generated in data_dir for every one of kinds."""
    found = store.tables_in(data_dir).values()
    counts = [{p for k, p in found if k == kind} for kind in kinds]
    return tuple(sorted(set.intersection(*counts))) if counts else ()


def own_partitions(data_dir: str, kinds) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """(partitions, g_partitions) generated in data_dir: each kind's own counts when G's
    are some of F's (a calibrated bench's G tables stop at the cores), else the counts
    every kind has and g_partitions None."""
    if set(kinds) == {"F", "G"}:
        f, g = available_partitions(data_dir, ["F"]), available_partitions(data_dir, ["G"])
        if g and set(g) < set(f):
            return f, g
    return available_partitions(data_dir, kinds), None


def load_tables(opts: RunOptions) -> dict[str, store.Manifest]:
    """Manifests of every table the run needs; a clear error for any missing one."""
    manifests = {}
    have = store.tables_in(opts.data_dir)
    for kind, p in opts.tables():
        tdir = Path(opts.data_dir) / f"{kind}{p}"
        if f"{kind}{p}" not in have:
            found = f"it holds {', '.join(have)}" if have else "it holds no tables"
            raise WisconsinError(
                f"table {kind}{p} is not generated in {opts.data_dir} ({found}): "
                "generate it with the same --rows and --seed, or choose --tables and "
                "--partitions to match"
            )
        manifests[f"{kind}{p}"] = store.read_manifest(tdir)
    seeds = {m.seed for m in manifests.values()}
    if len(seeds) > 1:
        raise WisconsinError(f"tables in {opts.data_dir} have different seeds {sorted(seeds)}")
    return manifests


def with_defaults(opts: RunOptions) -> RunOptions:
    """opts with the catalog's query list and scan variant where none was given."""
    if opts.catalog is None:
        raise WisconsinError("RunOptions.catalog is required: the workload's queries")
    return replace(
        opts,
        queries=opts.catalog.default if opts.queries is None else opts.queries,
        scan_variant=opts.scan_variant or opts.catalog.default_scan_variant,
    )


def validate(opts: RunOptions) -> None:
    """A mistake in opts as one line."""
    from wisconsin.engines.duckdb_session import check_memory_limit

    opts = with_defaults(opts)

    check_memory_limit(opts.engine.memory_limit)
    engines.kind(opts.mode)  # unknown: one line
    engines.check_cluster(opts.mode, opts.engine.cluster)
    if opts.cache not in CACHES:
        raise WisconsinError(f"unknown cache state {opts.cache!r}; choose from cold, warm")
    variants = opts.catalog.scan_variants
    if opts.scan_variant not in variants:
        raise WisconsinError(
            f"unknown scan variant {opts.scan_variant!r}; choose from {', '.join(variants)}"
        )
    lo, hi = opts.reps
    if lo < 1 or opts.warmup < 0:
        raise WisconsinError("--min-reps/--repeat must be >= 1, --warmup >= 0")
    if hi < lo:
        raise WisconsinError(f"--max-reps {hi} is below --min-reps {lo}: give max >= min")
    if opts.target_ci <= 0 or (opts.time_budget_s is not None and opts.time_budget_s <= 0):
        raise WisconsinError("--target-ci and --time-budget must be positive")
    known = opts.catalog.names()
    bad = [q for q in opts.queries if q not in known]
    if bad:
        raise WisconsinError(f"unknown query {', '.join(bad)}; choose from {', '.join(known)}")


def _calibration(run: Run, cores: int, probes: dict) -> runfile.Calibration:
    by_p: dict[int, list[float]] = {}
    for m in run.measurements:
        for r in m.repetitions:
            if r.overhead_s is not None:
                by_p.setdefault(m.partitions, []).append(r.overhead_s)
    from wisconsin.analysis.stats import median

    # the fastest repetition: a bound must be optimistic, and on a shared machine the median
    # single-thread time includes other work's interference (a real point beat it)
    rates = tuple((m.query, m.rows / min(m.times)) for m in run.baseline if m.times)
    return runfile.Calibration(
        measured_utc=store.utc_now(),
        cores=cores,
        storage_read_bytes_per_s=probes.get("storage"),
        memory_read_bytes_per_s=probes.get("memory"),
        scan_rows_per_s=rates,
        dispatch_s=tuple((p, median(v)) for p, v in sorted(by_p.items())),
        notes=tuple(probes.get("notes", ())),
        scan_rates_from="fastest",
        storage_file=probes.get("storage_file", ""),
        storage_streams=probes.get("storage_streams", ()),
    )


def _probe_machine(manifest: store.Manifest | None, table_dir: str) -> dict:
    """Storage and memory read rates (wisconsin.measure.calibrate), untimed, a few seconds."""
    out: dict = {"notes": []}
    try:
        from wisconsin.measure import calibrate
    except ImportError:
        out["notes"].append("storage and memory bandwidth not measured (no calibrate module)")
        return out
    if manifest is not None:
        path = store.partition_path(table_dir, manifest.parts[0])
        try:
            from wisconsin.measure.environment import usable_cores

            # The bound must hold for P partitions reading at once: the best of one stream
            # and one per core (parallel readers were measured 1.3-2x faster on a VM disk).
            cores = max(1, usable_cores())
            rates = {
                k: calibrate.storage_read_bytes_per_s(str(path), streams=k) for k in {1, cores}
            }
            found = [r for r in rates.values() if r]
            out["storage"] = max(found) if found else None
            out["storage_file"] = str(path)
            out["storage_streams"] = tuple(sorted(rates.items()))
        except Exception as exc:  # a probe that cannot run leaves its field None
            out["notes"].append(f"storage read rate not measured: {exc}")
    try:
        out["memory"] = calibrate.memory_read_bytes_per_s()
    except Exception as exc:
        out["notes"].append(f"memory read rate not measured: {exc}")
    return out


# --------------------------------------------------------------------------- the run


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


def _config(opts: RunOptions, seed: int, order_seed: int) -> RunConfig:
    lo, hi = opts.reps
    return RunConfig(
        mode=opts.mode,
        cluster=opts.engine.cluster,
        data_dir=os.path.abspath(opts.data_dir),
        kinds=opts.kinds,
        partitions=opts.partitions,
        g_partitions=opts.g_partitions,
        queries=opts.queries,
        scan_variant=opts.scan_variant,
        scan_settings=opts.catalog.scan_settings(opts.scan_variant),
        repeat=0,  # the timed rounds run: filled in when the run ends
        warmup=opts.warmup,
        seed=seed,
        # shared-memory runs one DuckDB whose threads = P of each table: recorded as 0
        threads_per_worker=opts.engine.threads_per_worker if opts.mode == "shared-nothing" else 0,
        memory_limit=opts.engine.memory_limit,
        memory_fraction=opts.engine.memory_fraction,
        durability=DURABILITY,
        cache=opts.cache,
        interleaved=True,
        order_seed=order_seed,
        min_reps=lo,
        max_reps=hi,
        target_ci=opts.target_ci,
        time_budget_s=opts.time_budget_s,
        blocks=opts.blocks,
        block_rounds=opts.block_rounds,
        transport=opts.engine.transport if opts.mode == "shared-nothing" else "",
    )


def _skeleton(opts: RunOptions, manifests: dict[str, store.Manifest]) -> dict:
    first = next(iter(manifests.values()))
    order_seed = opts.order_seed if opts.order_seed is not None else time.time_ns() % 2**31
    run = Run(
        schema_version=runfile.SCHEMA_VERSION,
        started_utc=store.utc_now(),
        finished_utc="",
        environment=environment.capture(),
        config=_config(opts, first.seed, order_seed),
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
            for m in manifests.values()
        ),
        measurements=(),
        status="incomplete",
    )
    return runfile.to_dict(run)


@lock.locked("opts")  # before the journal exists: a refused run leaves nothing behind
def run(opts: RunOptions, progress: Progress | None = None) -> tuple[Run, Path]:
    """Measure, verify, save; return the run and the run file's path."""
    if opts.partitions is None:
        found, g_found = own_partitions(opts.data_dir, opts.kinds)
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
    manifests = load_tables(opts)
    with lock.hold_tables(_table_dirs(opts, manifests)):
        _check_tables(opts, manifests)
        base = _skeleton(opts, manifests)
        created = not out_path.parent.exists()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        state = journal.RunState(base, journal.journal_path(out_path))
        try:
            return _execute(state, opts, manifests, out_path, progress, elapsed_before=0.0)
        except BaseException:
            if created and not any(out_path.parent.iterdir()):  # a run that kept nothing
                out_path.parent.rmdir()
            raise


def _table_dirs(opts: RunOptions, manifests) -> list[Path]:
    """The run's tables and the baseline's F1 (hold() skips one that does not exist): a run
    holds each one's own lock, so a table reached through a symlink is not shared."""
    return [Path(opts.data_dir) / name for name in {*manifests, "F1"}]


def resume_options(run: Run, out: Path, engine: EngineConfig, catalog: QueryCatalog) -> RunOptions:
    """The options an incomplete run was started with (engine: where and how it runs)."""
    c = run.config
    return RunOptions(
        data_dir=c.data_dir,
        catalog=catalog,
        mode=c.mode,
        kinds=c.kinds,
        partitions=c.partitions,
        g_partitions=c.g_partitions,
        queries=c.queries,
        scan_variant=c.scan_variant,
        warmup=c.warmup,
        out=str(out),
        engine=engine,
        cache=c.cache,
        min_reps=c.min_reps or 1,
        max_reps=c.max_reps or c.min_reps or 1,
        target_ci=c.target_ci or 0.10,
        time_budget_s=c.time_budget_s,
        order_seed=c.order_seed,
        baseline=c.single_thread != "not-asked",
        blocks=c.blocks or 1,  # a file from before blocks: the Loop never restarts workers
    )


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
    engine = EngineConfig(
        threads_per_worker=c.threads_per_worker or 1,
        memory_limit=c.memory_limit,
        memory_fraction=c.memory_fraction,
        timeout_s=timeout_s,
        cluster=address,
        security=security,
        transport=c.transport or "direct",
    )
    return resume_options(partial, out, engine, catalog)


def resume(
    path: str | os.PathLike,
    progress: Progress | None = None,
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
    state = journal.load_for_resume(out_path)
    logs.say_swept(out_path.parent)
    if time_budget_s is not None:
        state.base["config"]["time_budget_s"] = time_budget_s
    partial = state.to_run()
    opts = with_defaults(resumed_options(partial, out_path, catalog, timeout_s, tls))
    validate(opts)
    manifests = load_tables(opts)
    for t in partial.tables:
        m = manifests.get(t.name)
        if m is None or (m.rows, m.partitions, m.seed) != (t.rows, t.partitions, t.seed):
            raise WisconsinError(f"{t.name} in {opts.data_dir} is not the table this run measured")
    with lock.hold_tables(_table_dirs(opts, manifests)):
        _check_tables(opts, manifests)
        stamps = [r.dispatched_unix or 0.0 for m in partial.measurements for r in m.repetitions]
        first = [r.started_utc for r in partial.rounds if r.started_utc]
        before = 0.0
        if stamps and first:
            before = max(0.0, max(stamps) - datetime.fromisoformat(first[0]).timestamp())
        state.base["notes"] = [
            *state.base.get("notes", []),
            f"resumed at {store.utc_now()} after {len(partial.rounds)} rounds had started "
            f"({partial.stop_reason or 'the run had stopped'})"
            + (f" with --time-budget {time_budget_s:g} s" if time_budget_s is not None else ""),
        ]
        journal.journal_path(out_path).unlink(missing_ok=True)
        state = journal.RunState(runfile.to_dict(state.to_run()), journal.journal_path(out_path))
        return _execute(state, opts, manifests, out_path, progress, elapsed_before=before)


def _check_tables(opts: RunOptions, manifests) -> None:
    """Every partition against its manifest, before anything is written or timed."""
    for name, m in manifests.items():
        store_check.check_table(Path(opts.data_dir) / name, m)


def _targets(opts: RunOptions, manifests, engine, baseline_engine) -> dict[str, Target]:
    expect = {name: expected_answers(m) for name, m in manifests.items()}
    targets = {
        name: Target(engine, m, str(Path(opts.data_dir) / name), expect[name])
        for name, m in manifests.items()
    }
    if baseline_engine is not None:
        f1 = manifests.get("F1") or store.read_manifest(Path(opts.data_dir) / "F1")
        exp = expect.get("F1") or expected_answers(f1)
        targets[f"{schedule.BASELINE}:F1"] = Target(
            baseline_engine, f1, str(Path(opts.data_dir) / "F1"), exp
        )
    return targets


@lock.locked("opts")  # one run per data directory (run and resume both come here)
def _execute(state, opts, manifests, out_path, progress, elapsed_before) -> tuple[Run, Path]:
    notes = list(state.base.get("notes", []))
    have_f1 = "F1" in store.tables_in(opts.data_dir)
    # shared-memory on F1 is one in-process DuckDB thread: it is its own baseline
    own_baseline = opts.mode == "shared-memory" and "F1" in manifests
    separate = opts.baseline and have_f1 and not own_baseline
    config = state.base["config"]
    config["single_thread"] = (
        "not-asked" if not opts.baseline
        else "no-f1" if not have_f1
        else "own" if own_baseline
        else "separate"
    )  # fmt: skip
    engine = make_engine(opts.mode, replace(opts.engine, log_dir=str(out_path.parent)))
    config["transport_used"] = getattr(engine, "transport", "")  # which path carried them
    base_engine = (
        make_engine("shared-memory", replace(opts.engine, cluster=None)) if separate else None
    )
    steps = [Step(name, q) for name in manifests for q in opts.queries]
    steps += [Step("F1", q, True) for q in opts.queries] if separate else []
    ram = state.base["environment"]["memory_bytes"]
    probes, topology = {}, None
    try:
        targets = _targets(opts, manifests, engine, base_engine)
        first = targets.get("F1") or next(iter(targets.values()))
        probes = _probe_machine(first.manifest, first.table_dir)
        startup = engine.start(max(p for _, p in opts.tables()))
        if base_engine is not None:
            base_engine.start(1)
        if opts.engine.cluster:
            topology = engine.topology()
            ram = sum(h.memory_bytes for h in topology.hosts) or ram

        def new_block() -> float | None:
            """Fresh worker processes for the next block (a local cluster's nannies and
            workers restarted: the seconds it took); None where the workers stay (one
            process, or a shared cluster's workers)."""
            if opts.mode == "shared-nothing" and not opts.engine.cluster:
                return engine.start(max(p for _, p in opts.tables()))
            return None

        loop = Loop(state, targets, steps, opts, ram, progress, elapsed_before, new_block)
        reason = loop.loop()
        topology = replace(engine.topology(), start_s=startup)
        # e.g. fewer cluster workers than P; said in table order, whatever order rounds ran in
        notes += sorted(engine.warnings, key=_table_rank(list(manifests)))
    except VerificationError:
        state.close(remove=True)  # a wrong answer voids the run: nothing is kept
        raise
    except BaseException as exc:
        raise _incomplete(state, exc, out_path, notes, topology) from None
    finally:
        engine.stop()
        if base_engine is not None:
            base_engine.stop()
    try:
        interrupts.check()  # a ^C discarded after the last round (e.g. in engine.stop)
    except KeyboardInterrupt as exc:
        raise _incomplete(state, exc, out_path, notes, topology) from None
    if loop.timed_rounds_done() == 0:  # e.g. the warm-ups used the whole budget: no times
        spent = WisconsinError(
            f"the time budget ({opts.time_budget_s:g} s) ran out before the first timed round"
        )
        raise _incomplete(
            state, spent, out_path, notes, topology, why=reason, more=" --time-budget SECONDS"
        )
    partial = state.to_run()
    base = partial.baseline or tuple(
        m for m in partial.measurements if m.table == "F1" and own_baseline
    )
    cal = _calibration(replace(partial, baseline=base), _cores(partial, topology), probes)
    result = state.to_run(
        finished_utc=store.utc_now(),
        topology=topology,
        config=replace(partial.config, repeat=loop.timed_rounds_done()),
        notes=tuple(notes),
        status="complete",
        stop=reason,
        calibration=cal,
        baseline=tuple(runfile.to_dict(m) for m in base),
    )
    path = journal.save_run(result, out_path)
    state.close(remove=True)
    discard = getattr(engine, "logs", None)
    if discard is not None:
        discard.discard()  # the run succeeded: its diagnostic logs go (a failed run keeps them)
    return result, path


def _cores(run: Run, topology) -> int:
    if run.config.cluster and topology is not None and topology.hosts:
        return sum(h.cores for h in topology.hosts)
    return run.environment.usable_cores


def _table_rank(names: list[str]):
    """Sort key putting a "warning: <table> ..." line at its table's place in the run."""

    def rank(line: str) -> int:
        head = line.removeprefix("warning: ")
        return next(
            (i for i, n in enumerate(names) if head.startswith((f"{n} ", f"{n}:"))), len(names)
        )

    return rank


def _incomplete(
    state, exc: BaseException, out_path: Path, notes, topology, why=None, more: str = ""
) -> BaseException:
    """Write what was measured as an incomplete run file; the exception to raise. why: the
    stop reason (default: from exc); more: what the resume command needs besides the file."""
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
