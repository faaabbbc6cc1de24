"""The whole-curve comparisons, computed in wisconsin.analysis.curves (their one home);
their names, as compare's callers import them from here."""

from wisconsin.analysis.curves import (  # noqa: F401  (re-exported)
    CurveRow,
    RatioOfRatios,
    block_logs,
    curve_rows,
    ratio_of_ratios,
)
