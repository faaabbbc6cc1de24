"""A small tmpfs, the honest way to fill a disk in a test (needs root and mount)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted on where (created), unmounted afterwards; the test is
    skipped where it cannot be mounted (not root, no mount)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk is simulated with a tmpfs mount, which needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def fill(path: Path) -> None:
    """Write path until the disk is full (ENOSPC); the file stays, and the disk full."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
