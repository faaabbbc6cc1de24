"""What a Wisconsin run is asked to do: one frozen object passed from the CLI or the bench
to the runner and its rounds, its checks, and the run file's configuration derived from it
(and back, for a resumed run) field by field."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, replace

from wisconsin import WisconsinError, engines
from wisconsin.engines.base import EngineConfig
from wisconsin.measure.catalog import QueryCatalog
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import RunConfig

CACHES = runfile.CACHE_STATES


@dataclass(frozen=True)
class RunOptions:
    data_dir: str
    mode: str = "shared-nothing"
    kinds: tuple[str, ...] = ("F", "G")
    partitions: tuple[int, ...] | None = None  # None: every count generated for all kinds
    # G tables' counts when not `partitions` (RunConfig.g_partitions); None: the same
    g_partitions: tuple[int, ...] | None = None
    # The workload's queries (wisconsin.workloads.wisconsin.queries.CATALOG): the runner
    # binds and checks them through this object and never imports a workload.
    catalog: QueryCatalog | None = None
    queries: tuple[str, ...] | None = None  # None: the catalog's default list
    scan_variant: str | None = None  # None: the catalog's default
    repeat: int | None = None  # shorthand for min_reps = max_reps = repeat
    warmup: int = 1
    out: str = "runs"
    engine: EngineConfig = EngineConfig()
    cache: str = "cold"
    min_reps: int = 15
    max_reps: int = 30
    target_ci: float = 0.10  # relative half-width of every headline ratio's interval
    time_budget_s: float | None = None
    order_seed: int | None = None  # None: drawn from the clock (and recorded)
    baseline: bool = True  # time the F1 table with one in-process DuckDB thread too
    # Replicates: timed rounds are split into this many blocks of consecutive rounds, each
    # with fresh worker processes; intervals come from the blocks (docs/methodology.md).
    # 15 blocks of 1 round: a 25% larger table's cold scan is found slower under Holm over
    # every point and curve of a compare 95% of the time (10 blocks: 78%, 3: 4%; resampled
    # from real runs' blocks, docs/methodology.md).
    blocks: int = 15

    def tables(self) -> list[tuple[str, int]]:
        """(kind, P) of every table to measure (partitions must be set)."""
        return runfile.table_list(self.kinds, self.partitions, self.g_partitions)

    @property
    def block_rounds(self) -> int:
        """Timed rounds per block: the minimum rounds over the blocks, rounded down (so the
        minimum makes at least `blocks` blocks; a last block cut by --max-reps is shorter)."""
        lo, _ = self.reps
        return max(1, lo // max(1, self.blocks))

    @property
    def reps(self) -> tuple[int, int]:
        """(min, max) timed rounds."""
        if self.repeat is not None:
            return self.repeat, self.repeat
        return self.min_reps, self.max_reps


def with_defaults(opts: RunOptions) -> RunOptions:
    """opts with the catalog's query list and scan variant where none was given, and the
    rounds --repeat sets as min and max."""
    if opts.catalog is None:
        raise WisconsinError("RunOptions.catalog is required: the workload's queries")
    lo, hi = opts.reps
    return replace(
        opts,
        queries=opts.catalog.default if opts.queries is None else opts.queries,
        scan_variant=opts.scan_variant or opts.catalog.default_scan_variant,
        min_reps=lo,
        max_reps=hi,
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


# --------------------------------------------------------------------------- the run's config

# Named alike, meaning otherwise: RunConfig.repeat counts the rounds done, RunOptions.repeat
# is the --repeat shorthand.
NOT_AN_OPTION = frozenset({"repeat"})


def _names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def run_config(opts: RunOptions, **recorded) -> RunConfig:
    """The run file's configuration, derived once from opts (after with_defaults): each of
    its fields that RunOptions, or the engine's EngineConfig, has under the same name is
    taken from there; recorded: the rest, which the tables, the clock and the runner say."""
    shared_nothing = opts.mode == "shared-nothing"
    given = {}
    for name in _names(RunConfig) - NOT_AN_OPTION:
        for source in (opts, opts.engine):
            if hasattr(source, name):
                given[name] = getattr(source, name)
                break
    given |= {
        "data_dir": os.path.abspath(opts.data_dir),
        "scan_settings": opts.catalog.scan_settings(opts.scan_variant),
        # shared-memory runs one DuckDB whose threads = P of each table: recorded as 0
        "threads_per_worker": opts.engine.threads_per_worker if shared_nothing else 0,
        "transport": opts.engine.transport if shared_nothing else "",
        "repeat": 0,  # the timed rounds run: filled in when the run ends
    }
    return RunConfig(**(given | recorded))


# What a file recorded as None (written before the setting was) resumes as: one block (the
# loop never restarts workers), the stop rule's settings of the runner of its time.
RESUMED_AS = {"min_reps": 1, "target_ci": 0.10, "blocks": 1}


def resume_options(
    run: runfile.Run, out: os.PathLike | str, engine: EngineConfig, catalog: QueryCatalog
) -> RunOptions:
    """The options an incomplete run was started with: each RunOptions field its config has
    under the same name (engine: where and how it runs, engine_config)."""
    c = run.config
    given = {n: getattr(c, n) for n in _names(RunOptions) & _names(RunConfig) - NOT_AN_OPTION}
    given |= {k: v for k, v in RESUMED_AS.items() if given[k] is None}
    if given["max_reps"] is None:
        given["max_reps"] = given["min_reps"]
    return RunOptions(
        **given,
        catalog=catalog,
        out=str(out),
        engine=engine,
        baseline=c.single_thread != "not-asked",
    )


def engine_config(c: RunConfig, **given) -> EngineConfig:
    """The engine a recorded run ran on, as far as its config says (each EngineConfig field
    it has under the same name); given: the rest (timeout, the cluster's resolved address
    and security)."""
    recorded = {n: getattr(c, n) for n in _names(EngineConfig) & _names(RunConfig)}
    recorded |= {
        "threads_per_worker": c.threads_per_worker or 1,  # shared-memory records 0
        "transport": c.transport or "direct",
    }
    return EngineConfig(**(recorded | given))
