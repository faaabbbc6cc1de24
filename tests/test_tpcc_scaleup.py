"""benchmarks/tpcc_scaleup.py --quick: every side measured, the paired ratios and the USL
lines printed (the figures are the lead's quiet run; here, that the script works)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "tpcc_scaleup.py"


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="P = 2 pinned needs 2 cores")
def test_the_quick_scaleup_measures_every_side_and_states_the_usl(tmp_path):
    env = {**os.environ, "WISCONSIN_NO_RECORD": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--dir", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    for side in ("P1 harness", "P1 loop", "P2 harness local", "P2 harness remote", "P2 loops"):
        line = next(x for x in text.splitlines() if x.startswith(f"  round 1 {side} "))
        assert float(line.split(":")[1].split()[0]) > 0, line
    assert "P2 harness local-only / P2 loops" in text and "P2 harness remote / P2 loops" in text
    assert text.count("fit_usl on P = 1, 2: too few points: 1 beyond P0, USL needs 3") == 2
    assert "C(2) <= 2 (linear" in text and "X(3) ~" in text
    assert list(tmp_path.iterdir()) == []  # the databases are removed
