"""Measuring: the runner, its rounds, cache policy, calibration and the machine probe."""
