"""The Wisconsin benchmark: queries, answers, Tandem's reference, presets, reports, audit rules."""
