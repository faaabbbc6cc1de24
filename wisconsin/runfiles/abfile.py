"""A/B files: two configurations measured in one invocation, block by block in turn.

`wisconsin ab` runs block 1 of A, then B; block 2 of B, then A; ... (ABBA), each block a
whole run of its own (fresh workers, its own shuffled order, cache state re-established),
and saves every block's run in this one file. `compare AB.json` pools each side's blocks:
drift over the minutes the pair takes hits A and B alike.

Versioned like run files: an unknown version, a malformed block or an order that does
not match the blocks fails with RunFileError in one line. Written atomically, never over
an existing file.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta

from wisconsin import atomic, jsonfields
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import Run, RunFileError

AB_VERSION = 1
KIND = "wisconsin-ab"  # what tells an A/B file from a run file


@dataclass(frozen=True)
class ABRun:
    started_utc: str
    finished_utc: str
    label_a: str  # the options A was given beyond the common ones, as typed
    label_b: str
    order: tuple[str, ...]  # "A" / "B" in the order the blocks ran
    a: tuple[Run, ...]  # A's blocks, in the order they ran
    b: tuple[Run, ...]
    stop_reason: str  # "N blocks a side", or why it stopped early


def is_ab_file(path: str | os.PathLike) -> bool:
    """Whether path holds an A/B file (a cheap look at its first bytes)."""
    try:
        with open(path, "rb") as f:
            head = f.read(200)
    except OSError:
        return False
    return f'"kind": "{KIND}"'.encode() in head


def to_dict(ab: ABRun) -> dict:
    d = {"kind": KIND, "ab_version": AB_VERSION}
    for f in dataclasses.fields(ab):
        v = getattr(ab, f.name)
        d[f.name] = [runfile.to_dict(r) for r in v] if f.name in ("a", "b") else v
    return d


@dataclass(frozen=True)
class _Checked:
    """An A/B file's own fields as its schema; each block is a run file, read as one."""

    started_utc: str
    finished_utc: str
    label_a: str
    label_b: str
    order: tuple[Literal["A", "B"], ...]
    a: Annotated[tuple[dict, ...], Meta(min_length=1)]
    b: Annotated[tuple[dict, ...], Meta(min_length=1)]
    stop_reason: str


def from_dict(data: dict) -> ABRun:
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise RunFileError("not an A/B file")
    if data.get("ab_version") != AB_VERSION:
        raise RunFileError(
            f"A/B file version {data.get('ab_version')!r} is not supported (this wisconsin "
            f"reads version {AB_VERSION})"
        )
    names = {f.name for f in dataclasses.fields(ABRun)}
    unknown = set(data) - names - {"kind", "ab_version"}
    if unknown:
        raise RunFileError(f"not a valid A/B file: fields {sorted(unknown)}")
    try:
        head = jsonfields.convert(_Checked, {k: v for k, v in data.items() if k in names})
    except jsonfields.FieldError as exc:
        raise RunFileError(f"not a valid A/B file: {exc}") from None
    sides = {}
    for side in ("a", "b"):
        blocks = []
        for i, r in enumerate(getattr(head, side)):
            try:
                blocks.append(runfile.from_dict(r))
            except RunFileError as exc:
                raise RunFileError(f"side {side.upper()}, block {i + 1}: {exc}") from None
        sides[side] = tuple(blocks)
    order = head.order
    if sorted(order) != sorted("A" * len(sides["a"]) + "B" * len(sides["b"])):
        raise RunFileError(
            f"not a valid A/B file: its order names {order.count('A')} A and "
            f"{order.count('B')} B blocks, it holds {len(sides['a'])} and {len(sides['b'])}"
        )
    text = ("started_utc", "finished_utc", "label_a", "label_b", "stop_reason")
    return ABRun(**{k: getattr(head, k) for k in text}, order=order, a=sides["a"], b=sides["b"])


def load(path: str | os.PathLike) -> ABRun:
    p = Path(path)
    if not p.exists():
        raise RunFileError(f"{p}: no such A/B file")
    data = atomic.read_json(p, "not a readable A/B file:", error=RunFileError)
    try:
        return from_dict(data)
    except RunFileError as exc:
        raise RunFileError(f"{p}: {exc}") from None


def save(ab: ABRun, path: str | os.PathLike) -> Path:
    """Write atomically; refuse to overwrite an existing file."""
    p = Path(path)
    try:
        atomic.write_text(p, json.dumps(to_dict(ab), indent=1) + "\n", overwrite=False)
    except atomic.AlreadyExistsError:
        raise RunFileError(f"{p} already exists; A/B files are never overwritten") from None
    return p
