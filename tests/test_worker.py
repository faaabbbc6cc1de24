"""A shared-nothing worker's process: one closed cleanly exits at once, without Python's
finalization; one that did not exits as usual."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_EXIT = """
import atexit, sys
atexit.register(lambda: print("finalized", flush=True))  # runs after the worker's handler
from wisconsin.engines import worker
atexit.register(worker._exit_closed)
if sys.argv[1] == "closed":
    worker.dask_teardown(None)
print("bye", flush=True)
"""


@pytest.mark.parametrize("closed", [True, False])
def test_a_worker_that_closed_cleanly_exits_without_finalizing(closed):
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", _EXIT, "closed" if closed else "not"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == (["bye"] if closed else ["bye", "finalized"])
