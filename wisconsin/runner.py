"""The runner: time the five queries on F and G tables at each partition count, verify
every answer, and save a run file.

Timing method (the TP1 pitfalls are the checklist): every measurement starts from the
same state (result tables emptied, the update undone and verified, all untimed);
connections are opened fresh before a table is measured; one untimed warm-up (tagged
cold) precedes R timed repetitions; durability stays on.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from wisconsin import WisconsinError, commit, environment, lock, runfile, store
from wisconsin.engine import Engine, EngineConfig, StepResult
from wisconsin.expect import TableExpect, expected_answers
from wisconsin.queries import DEFAULT_SCAN_VARIANT, QUERIES, SCAN_VARIANTS, UPDATE_DELTA
from wisconsin.runfile import Measurement, PartitionSample, Repetition, Run, RunConfig, TableInfo

Progress = Callable[[str, int, int], None]
DURABILITY = (
    "durability on: each partition commits through DuckDB's WAL (COMMIT fsyncs it); the "
    "cross-partition update's commit decision is fsynced by the coordinator before any "
    "partition commits; the update and its untimed undo are one recoverable unit (an fsynced "
    "intent before the update; opening a table restores its generated state and verifies its "
    "digests); every partition is checked against its manifest before timing; inserts into "
    "result tables are autocommitted"
)


class VerificationError(WisconsinError):
    """An answer that differs from the independently computed one: the run is void."""


@dataclass(frozen=True)
class RunOptions:
    data_dir: str
    mode: str = "shared-nothing"
    kinds: tuple[str, ...] = ("F", "G")
    partitions: tuple[int, ...] | None = None  # None: every count generated for all kinds
    queries: tuple[str, ...] = QUERIES
    scan_variant: str = DEFAULT_SCAN_VARIANT
    repeat: int = 3
    warmup: int = 1
    out: str = "runs"
    engine: EngineConfig = EngineConfig()


MODES = ("shared-nothing", "shared-memory")


def default_memory_limit(mode: str, partitions) -> str:
    """DuckDB defaults to 80% of RAM per instance; P instances must share the machine."""
    import psutil

    total = psutil.virtual_memory().total
    share = 0.6 / (max(partitions) if mode == "shared-nothing" else 1)
    return f"{max(256, int(total * share) // 2**20)}MB"


def make_engine(mode: str, config: EngineConfig) -> Engine:
    if mode == "shared-nothing":
        from wisconsin.shared_nothing import SharedNothingEngine

        return SharedNothingEngine(config)
    if mode == "shared-memory":
        if config.cluster:
            raise WisconsinError("--cluster needs --mode shared-nothing")
        from wisconsin.shared_memory import SharedMemoryEngine

        return SharedMemoryEngine(config)
    raise WisconsinError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")


def available_partitions(data_dir: str, kinds) -> tuple[int, ...]:
    """Partition counts generated in data_dir for every one of kinds."""
    found = store.tables_in(data_dir).values()
    counts = [{p for k, p in found if k == kind} for kind in kinds]
    return tuple(sorted(set.intersection(*counts))) if counts else ()


def load_tables(opts: RunOptions) -> dict[str, store.Manifest]:
    """Manifests of every table the run needs; a clear error for any missing one."""
    manifests = {}
    have = store.tables_in(opts.data_dir)
    for kind in opts.kinds:
        for p in opts.partitions:
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


def validate(opts: RunOptions) -> None:
    import duckdb

    try:  # DuckDB's own parser decides what a memory limit is
        duckdb.connect(":memory:", config={"memory_limit": opts.engine.memory_limit}).close()
    except duckdb.Error as exc:
        reason = str(exc).splitlines()[0]
        raise WisconsinError(
            f"--memory-limit {opts.engine.memory_limit!r} is not a DuckDB memory limit "
            f"(like 4GB or 512MB): {reason}"
        ) from None
    if opts.mode not in MODES:
        raise WisconsinError(f"unknown mode {opts.mode!r}; choose from {', '.join(MODES)}")
    if opts.scan_variant not in SCAN_VARIANTS:
        raise WisconsinError(
            f"unknown scan variant {opts.scan_variant!r}; choose from {', '.join(SCAN_VARIANTS)}"
        )
    if opts.repeat < 1 or opts.warmup < 0:
        raise WisconsinError("--repeat must be >= 1 and --warmup >= 0")
    bad = [q for q in opts.queries if q not in QUERIES]
    if bad:
        raise WisconsinError(f"unknown query {', '.join(bad)}; choose from {', '.join(QUERIES)}")


# --------------------------------------------------------------------------- verification


def _fail(m: store.Manifest, query: str, what: str) -> VerificationError:
    return VerificationError(f"{m.name} {query}: wrong answer: {what}")


def verify_scan(m, variant, step: StepResult) -> int:
    returned = sum(len(u["rows"]) for u in step.units.values())
    if returned:
        raise _fail(m, "scan", f"returned {returned} rows, expected none")
    scanned = sum(u["rows_scanned"] for u in step.units.values())
    if variant != "as-written" and scanned != m.rows:
        raise _fail(
            m, "scan", f"the engine read {scanned} of {m.rows} rows: a scan that did not scan"
        )
    if variant == "full-row":
        columns = set(store.generator.COLUMNS)
        for u in step.units.values():
            for projected in u["projections"]:
                if set(projected) != columns:
                    raise _fail(m, "scan", f"full-row scan read only columns {projected}")
    return 0


def verify_inserted(engine, m, query, exp: TableExpect, step: StepResult) -> int:
    inserted = sum(r[0] for u in step.units.values() for r in u["rows"])
    if inserted != exp.selected:
        raise _fail(m, query, f"inserted {inserted} rows, expected {exp.selected}")
    digests = engine.result_digests(f"{query}_result")
    for part, (rows, digest) in digests.items():
        want = (
            (exp.selected, exp.selected_digest)
            if part < 0
            else (
                exp.parts[part].selected,
                exp.parts[part].selected_digest,
            )
        )
        if (rows, digest) != want:
            where = "the result table" if part < 0 else f"partition {part}'s result"
            raise _fail(m, query, f"{where} holds {rows} rows that differ from the expected rows")
    return inserted


def verify_average(m, exp: TableExpect, step: StepResult) -> tuple[int, float]:
    total = sum(u["rows"][0][0] or 0 for u in step.units.values())
    count = sum(u["rows"][0][1] for u in step.units.values())
    if (total, count) != (exp.sum_onepct, exp.rows):
        raise _fail(
            m, "average", f"SUM/COUNT {total}/{count}, expected {exp.sum_onepct}/{exp.rows}"
        )
    return count, total / count


def verify_update_state(engine, m, exp: TableExpect, applied: bool) -> None:
    got = engine.query(
        f"SELECT sum(four)::BIGINT, count(*) FILTER (WHERE four >= {UPDATE_DELTA}) FROM {m.table}"
    )
    for part, rows in got.items():
        pe = exp.parts[part]
        want = (
            (pe.sum_four + UPDATE_DELTA * pe.selected, pe.selected) if applied else (pe.sum_four, 0)
        )
        if tuple(rows[0]) != want:
            state = "after the update" if applied else "after undoing the update"
            raise _fail(
                m,
                "update",
                f"partition {part} {state}: sum(four), updated = {rows[0]}, expected {want}",
            )


def verify_update_counts(m, exp: TableExpect, step: StepResult) -> int:
    for part, u in step.units.items():
        if u["rows"][0][0] != exp.parts[part].selected:
            raise _fail(
                m,
                "update",
                f"partition {part} updated {u['rows'][0][0]} rows, expected {exp.parts[part].selected}",
            )
    return exp.selected


# --------------------------------------------------------------------------- measuring


def _samples(step: StepResult, placement: Mapping[int, str]) -> tuple[PartitionSample, ...]:
    out = []
    for part, u in sorted(step.units.items()):
        c = step.commit.get(part, {})
        out.append(
            PartitionSample(
                part=part,
                engine_s=u["engine_s"] + c.get("engine_s", 0.0),
                cpu_s=u["cpu_s"] + c.get("cpu_s", 0.0),
                rows_scanned=u["rows_scanned"],
                peak_rss_bytes=u["peak_rss_bytes"],
                start_delay_s=max(0.0, u["start_delay_s"]),
                worker=placement.get(part, "") if part >= 0 else "engine",
            )
        )
    return tuple(out)


def measure(
    engine: Engine,
    m: store.Manifest,
    exp: TableExpect,
    query: str,
    opts: RunOptions,
    tick: Callable[[], None],
) -> Measurement:
    reps = []
    placement = getattr(engine, "placement", {})
    for i in range(opts.warmup + opts.repeat):
        answer = None
        if query in ("select", "join"):
            engine.reset_result(f"{query}_result")
        # Profile the warm-up and every scan; other timed repetitions run unprofiled.
        profile = i < opts.warmup or query == "scan"
        stmts = {
            p: replace(s, profile=profile)
            for p, s in engine.statements(query, m, opts.scan_variant).items()
        }
        if query == "update":
            tx_update, tx_undo = (f"u{uuid.uuid4().hex[:16]}" for _ in range(2))
            undo = engine.statements(query, m, opts.scan_variant, delta=-UPDATE_DELTA)
            # One recoverable unit: a crash anywhere in it leaves the generated table.
            with commit.update_pair(engine.table_dir, tx_update, tx_undo, undo):
                step = engine.update(tx_update, stmts)
                rows = verify_update_counts(m, exp, step)
                verify_update_state(engine, m, exp, applied=True)
                engine.update(tx_undo, undo)
            verify_update_state(engine, m, exp, applied=False)
        else:
            step = engine.execute(stmts)
            if query == "scan":
                rows = verify_scan(m, opts.scan_variant, step)
            elif query == "average":
                rows, answer = verify_average(m, exp, step)
            else:
                rows = verify_inserted(engine, m, query, exp, step)
        reps.append(
            Repetition(
                index=i,
                cold=False,  # nothing is evicted yet (the measurement issue adds --cache)
                wall_s=step.wall_s,
                rows=rows,
                partitions=_samples(step, placement),
                answer=answer,
                verified=True,
            )
        )
        tick()
    warm = reps[: opts.warmup]
    return Measurement(
        table=m.name,
        kind=m.kind,
        partitions=m.partitions,
        rows=m.rows,
        query=query,
        variant=opts.scan_variant if query == "scan" else "",
        warmup=warm[0] if warm else replace(reps[0], index=-1),
        repetitions=tuple(reps[opts.warmup :]),
        expected_rows={"scan": 0, "average": exp.rows}.get(query, exp.selected),
    )


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


@lock.locked("opts")
def run(opts: RunOptions, progress: Progress | None = None) -> tuple[Run, Path]:
    """Measure, verify, save; return the run and the run file's path."""
    if opts.partitions is None:
        found = available_partitions(opts.data_dir, opts.kinds)
        if not found:
            raise WisconsinError(
                f"no {' and '.join(opts.kinds)} tables in {opts.data_dir}: run "
                f"`wisconsin generate --data {opts.data_dir}` first"
            )
        opts = replace(opts, partitions=found)
    validate(opts)
    out_path = default_run_path(opts.out, opts.mode)
    if out_path.exists():
        raise WisconsinError(f"{out_path} already exists; run files are never overwritten")
    manifests = load_tables(opts)
    started = store.utc_now()
    total = len(manifests) * len(opts.queries) * (opts.warmup + opts.repeat)
    done = 0
    label = f"{opts.mode}: verifying answers"

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(label, done, total)

    if progress:
        progress(label, 0, total)
    for name, m in manifests.items():  # before anything is timed (docs/storage.md)
        store.check_table(Path(opts.data_dir) / name, m)
    expectations = {name: expected_answers(m) for name, m in manifests.items()}
    engine = make_engine(opts.mode, opts.engine)
    measurements, topology, notes = [], None, []
    try:
        # One start for the largest P; tables with fewer partitions use the first P workers.
        startup = engine.start(max(opts.partitions))
        if opts.engine.cluster:
            notes.append(
                f"cluster {opts.engine.cluster}: connected in {startup:.2f} s; each partition "
                "ran on the worker its table's manifest placed it on (see topology)"
            )
        elif opts.mode == "shared-nothing":
            notes.append(
                f"{max(opts.partitions)} workers started once in {startup:.2f} s and stayed "
                "attached; a table of P partitions used the first P (as in the spec)"
            )
        for p in opts.partitions:
            for m in (manifests[f"{k}{p}"] for k in opts.kinds):
                label = f"{opts.mode}: {m.name}"
                open_s = engine.open_table(m, str(Path(opts.data_dir) / m.name))
                for q in opts.queries:
                    meas = measure(engine, m, expectations[m.name], q, opts, tick)
                    measurements.append(replace(meas, startup_s=open_s))
                engine.close_table()
        topology = engine.topology()
        notes += getattr(engine, "warnings", [])  # e.g. fewer cluster workers than P
    finally:
        engine.stop()
    first = next(iter(manifests.values()))
    config = RunConfig(
        mode=opts.mode,
        cluster=opts.engine.cluster,
        data_dir=os.path.abspath(opts.data_dir),
        kinds=opts.kinds,
        partitions=opts.partitions,
        queries=opts.queries,
        scan_variant=opts.scan_variant,
        repeat=opts.repeat,
        warmup=opts.warmup,
        seed=first.seed,
        # shared-memory runs one DuckDB whose threads = P of each table: recorded as 0
        threads_per_worker=opts.engine.threads_per_worker if opts.mode == "shared-nothing" else 0,
        memory_limit=opts.engine.memory_limit,
        durability=DURABILITY,
    )
    result = Run(
        schema_version=runfile.SCHEMA_VERSION,
        started_utc=started,
        finished_utc=store.utc_now(),
        environment=environment.capture(),
        config=config,
        topology=topology,
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
        measurements=tuple(measurements),
        notes=tuple(notes),
    )
    try:
        path = runfile.save(result, out_path)
    except runfile.RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    return result, path
