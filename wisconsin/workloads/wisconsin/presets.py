"""Table sizes. clx and vlx are the spec's Table 1; laptop is the embedded default, sized so
that `wisconsin bench` (generate + run F and G at 2/4/8/16) finishes in minutes on 2 cores."""

from __future__ import annotations

from dataclasses import dataclass

from wisconsin import WisconsinError

# The calibrated bench's whole budget (generate + run + report): under 15 minutes with the
# probe. The one definition; `bench --time-budget` states it.
DEFAULT_TIME_BUDGET_S = 780.0


@dataclass(frozen=True)
class Preset:
    name: str
    f_rows: int  # F tables: total rows, split over the partitions (speedup)
    g_rows_per_partition: int  # G tables: rows per partition (batch scaleup)
    partitions: tuple[int, ...]
    description: str
    # G tables' counts when not `partitions` (the calibrated bench: P <= cores); None: same
    g_partitions: tuple[int, ...] | None = None

    def rows_for(self, kind: str) -> int:
        return self.f_rows if kind == "F" else self.g_rows_per_partition


PRESETS = {
    p.name: p
    for p in (
        Preset("tiny", 20_000, 5_000, (2, 4, 8, 16), "seconds; for tests and smoke runs"),
        Preset(
            "laptop", 1_000_000, 250_000, (2, 4, 8, 16), "the default; a few minutes on 2 cores"
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
