"""What one run holds while it measures: its tables (the data directory listed once, each
manifest read once) and its engines (made, started, restarted per block and stopped here,
whatever happens in between)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from wisconsin import WisconsinError, engines, store
from wisconsin.engines.base import Engine, EngineConfig
from wisconsin.measure.options import RunOptions
from wisconsin.runfiles.runfile import Topology


def make_engine(mode: str, config: EngineConfig) -> Engine:
    return engines.make_engine(mode, config)


# --------------------------------------------------------------------------- the tables


def own_partitions(listing: dict, kinds) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """(partitions, g_partitions) among the tables listed: each kind's own counts when G's
    are some of F's (a calibrated bench's G tables stop at the cores), else the counts
    every kind has and g_partitions None."""
    if set(kinds) == {"F", "G"}:
        f, g = partitions_of(listing, ["F"]), partitions_of(listing, ["G"])
        if g and set(g) < set(f):
            return f, g
    return partitions_of(listing, kinds), None


def partitions_of(listing: dict, kinds) -> tuple[int, ...]:
    """Partition counts listed for every one of kinds."""
    counts = [{p for k, p in listing.values() if k == kind} for kind in kinds]
    return tuple(sorted(set.intersection(*counts))) if counts else ()


@dataclass(frozen=True)
class Tables:
    """A run's tables: what the data directory holds (listed once) and the manifest of each
    table the run measures, and of the baseline's F1, each read once."""

    data_dir: str
    listing: dict[str, tuple[str, int]]  # store.tables_in
    manifests: dict[str, store.Manifest]  # the measured tables, by name
    f1: store.Manifest | None  # the baseline's table (None: not generated, or not needed)

    @classmethod
    def read(cls, opts: RunOptions, listing: dict | None = None) -> Tables:
        """The manifests of every table opts measures (listing: the data directory's, if
        already listed); a clear error for a missing table or mixed seeds."""
        have = store.tables_in(opts.data_dir) if listing is None else listing
        manifests = {}
        for kind, p in opts.tables():
            name = f"{kind}{p}"
            if name not in have:
                found = f"it holds {', '.join(have)}" if have else "it holds no tables"
                raise WisconsinError(
                    f"table {name} is not generated in {opts.data_dir} ({found}): "
                    "generate it with the same --rows and --seed, or choose --tables and "
                    "--partitions to match"
                )
            manifests[name] = store.read_manifest(Path(opts.data_dir) / name)
        seeds = {m.seed for m in manifests.values()}
        if len(seeds) > 1:
            raise WisconsinError(f"tables in {opts.data_dir} have different seeds {sorted(seeds)}")
        f1 = manifests.get("F1")
        if f1 is None and opts.baseline and "F1" in have:
            f1 = store.read_manifest(Path(opts.data_dir) / "F1")
        return cls(opts.data_dir, have, manifests, f1)

    def dir(self, name: str) -> Path:
        return Path(self.data_dir) / name

    def single_thread(self, opts: RunOptions) -> str:
        """How the single-thread baseline runs (RunConfig.single_thread)."""
        if not opts.baseline:
            return "not-asked"
        if "F1" not in self.listing:
            return "no-f1"
        # shared-memory on F1 is one in-process DuckDB thread: it is its own baseline
        own = opts.mode == "shared-memory" and "F1" in self.manifests
        return "own" if own else "separate"


# --------------------------------------------------------------------------- the engines


class Session:
    """The engines of one run: the run's engine, and the single-thread baseline's when it
    runs apart, made on entering and stopped on leaving."""

    def __init__(self, opts: RunOptions, log_dir: Path, separate_baseline: bool):
        self.opts = opts
        self.most = max(p for _, p in opts.tables())  # workers: one per partition of the largest
        self._log_dir, self._separate = str(log_dir), separate_baseline
        self.start_s: float | None = None
        self.engine: Engine | None = None
        self.baseline: Engine | None = None

    def __enter__(self) -> Session:
        o = self.opts
        self.engine = make_engine(o.mode, replace(o.engine, log_dir=self._log_dir))
        if self._separate:
            try:
                self.baseline = make_engine("shared-memory", replace(o.engine, cluster=None))
            except BaseException:
                self.engine.stop()
                raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.engine.stop()
        finally:
            if self.baseline is not None:
                self.baseline.stop()

    @property
    def transport_used(self) -> str:
        """What carries the timed statements (shared-nothing; "" elsewhere)."""
        return getattr(self.engine, "transport", "")

    def start(self) -> None:
        self.start_s = self.engine.start(self.most)
        if self.baseline is not None:
            self.baseline.start(1)

    def new_block(self) -> float | None:
        """Fresh worker processes for the next block (a local cluster's nannies and workers
        restarted: the seconds it took); None where the workers stay (one process, or a
        shared cluster's workers)."""
        if self.opts.mode == "shared-nothing" and not self.opts.engine.cluster:
            return self.engine.start(self.most)
        return None

    def topology(self) -> Topology:
        return replace(self.engine.topology(), start_s=self.start_s)

    def warnings(self, tables: list[str]) -> list[str]:
        """What the engine warned of (e.g. fewer cluster workers than P), in table order,
        whatever order the rounds ran in."""
        return sorted(self.engine.warnings, key=_table_rank(tables))

    def discard_logs(self) -> None:
        """The run succeeded: its diagnostic logs go (a failed run keeps them)."""
        logs = getattr(self.engine, "logs", None)
        if logs is not None:
            logs.discard()


def _table_rank(names: list[str]):
    """Sort key putting a "warning: <table> ..." line at its table's place in the run."""

    def rank(line: str) -> int:
        head = line.removeprefix("warning: ")
        return next(
            (i for i, n in enumerate(names) if head.startswith((f"{n} ", f"{n}:"))), len(names)
        )

    return rank
