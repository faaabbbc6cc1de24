"""Table sizes. clx and vlx are the spec's Table 1. tiny (a smoke run, about a minute) and
laptop (minutes) are sized so that their audit can pass on 2 cores: every table at P <= 2
holds at least AVERAGE_ROWS_MIN rows a partition, and their G tables stop at 2 partitions,
as the calibrated bench's stop at the cores (beyond, a G table only measures cores shared by
more data). Every bench also builds F1, the single-thread baseline's table."""

from __future__ import annotations

from dataclasses import dataclass

from wisconsin import WisconsinError

# The calibrated bench's whole budget (generate + run + report): under 15 minutes with the
# probe. The one definition; `bench --time-budget` states it.
DEFAULT_TIME_BUDGET_S = 780.0
# Rows a partition needs at P <= 2 on the shared 2-core VM for the cold average (it reads
# one column) to last 20x the harness overhead, the audit's engine-share rule: at 700,000
# the quiet medians were 24x (G1) and 28x (F2) with a 0.35-0.65 ms empty statement, 16x at
# load 3 (benchmarks/results/2026-11-27-tiny-preset-breakdown.md). Below it a preset's audit
# fails on this machine whatever else it does.
AVERAGE_ROWS_MIN = 700_000


@dataclass(frozen=True)
class Preset:
    name: str
    f_rows: int  # F tables: total rows, split over the partitions (speedup)
    g_rows_per_partition: int  # G tables: rows per partition (batch scaleup)
    partitions: tuple[int, ...]
    description: str
    # G tables' counts when not `partitions` (the calibrated bench: P <= cores); None: same
    g_partitions: tuple[int, ...] | None = None
    # Timed rounds (min = max) and blocks when the command line gives none of --repeat,
    # --min-reps, --max-reps, --blocks; None: the runner's defaults (15 rounds in 15 blocks)
    rounds: int | None = None
    blocks: int | None = None
    # Untimed warm-up rounds before block 1 when the preset's own rounds run. tiny has none:
    # each of its blocks is one round on fresh workers with every partition evicted, so a
    # warm-up round would prepare block 1's workers alone and make it unlike blocks 2-5.
    warmup: int = 1

    def rows_for(self, kind: str) -> int:
        return self.f_rows if kind == "F" else self.g_rows_per_partition


PRESETS = {
    p.name: p
    for p in (
        Preset(
            "tiny",
            1_400_000,
            700_000,
            (1, 2),
            "about a minute on 2 cores; a smoke run whose audit passes",
            rounds=5,
            blocks=5,
            warmup=0,
        ),
        Preset(
            "laptop",
            2_000_000,
            1_000_000,
            (2, 4, 8, 16),
            "the default; minutes on 2 cores",
            (1, 2),
        ),
        Preset("clx", 2_441_440, 420_000, (2, 4, 8), "Tandem CLX sizes (spec Table 1)"),
        Preset("vlx", 8_000_000, 1_000_000, (2, 4, 8, 16), "Tandem VLX sizes (spec Table 1)"),
    )
}
DEFAULT_PRESET = "laptop"


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise WisconsinError(
            f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}"
        ) from None
