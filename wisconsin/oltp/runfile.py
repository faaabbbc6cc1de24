"""What every OLTP workload's run file does alike: saved by the project's atomic writer and
never overwritten, recognised by its `workload` key, read as a JSON object of its workload."""

from __future__ import annotations

import os
from pathlib import Path

from wisconsin import WisconsinError, atomic, outputs
from wisconsin.runfiles import runfile as common


def save(run, path: str | os.PathLike) -> Path:
    """Atomic, never overwrites (the project's writer). The file is noted as published
    (outputs.published): a ^C after it is written must not say no run file was written."""
    try:
        saved = common.save(run, path)
    except common.RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    outputs.note_published(saved)
    return saved


def is_workload(path: str | os.PathLike, workload: str) -> bool:
    """True if the file is a readable JSON object whose workload is this one."""
    try:
        data = atomic.read_json(path, "run file")
    except WisconsinError:
        return False
    return isinstance(data, dict) and data.get("workload") == workload


def read(path: str | os.PathLike, workload: str, label: str) -> dict:
    """The run file's JSON object; one line if it is missing, unreadable or another's."""
    p = Path(path)
    if not p.exists():
        raise WisconsinError(f"{p}: no such run file")
    data = atomic.read_json(p, "not a readable run file:")
    if not isinstance(data, dict) or data.get("workload") != workload:
        raise WisconsinError(f"{p}: not a {label} run file")
    return data
