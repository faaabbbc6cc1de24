""".ci/tmpcheck: the CI's check that the test suite leaves nothing in the temporary
directories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

TMPCHECK = Path(__file__).parent.parent / ".ci" / "tmpcheck"


def _check(tmp: Path, script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPCHECK_DIRS": str(tmp)}
    return subprocess.run(
        [str(TMPCHECK), "sh", "-c", script], env=env, capture_output=True, text=True
    )


def test_growth_fails_and_names_what_grew(tmp_path):
    (tmp_path / "before").write_bytes(b"x" * 100_000)  # there already: not counted
    left = tmp_path / "wisconsin-dask-1.log"
    r = _check(tmp_path, f"head -c 3000000 /dev/zero > {left}")
    assert r.returncode == 1, r.stdout
    assert "FAIL: the run left 2 MiB" in r.stdout or "FAIL: the run left 3 MiB" in r.stdout
    (grown,) = [ln for ln in r.stdout.splitlines() if ln.strip().endswith(str(left))]
    assert int(grown.split()[0]) >= 2900
    assert "before" not in r.stdout.split("entries:")[1]


def test_a_clean_run_passes_and_a_failing_one_keeps_its_code(tmp_path):
    scratch = tmp_path / "scratch"
    r = _check(
        tmp_path, f"mkdir {scratch} && head -c 3000000 /dev/zero > {scratch}/t && rm -r {scratch}"
    )
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    assert _check(tmp_path, "exit 3").returncode == 3
