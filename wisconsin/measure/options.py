"""What a Wisconsin run is asked to do: one frozen object passed from the CLI or the bench
to the runner and its rounds."""

from __future__ import annotations

from dataclasses import dataclass

from wisconsin.engines.base import EngineConfig
from wisconsin.measure.catalog import QueryCatalog
from wisconsin.runfiles import runfile


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
