"""Pure analysis of run files: statistics, the stop rule, speedup and scaleup, bounds, fits."""
