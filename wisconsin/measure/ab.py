"""A/B in one invocation: two configurations measured block by block in turn (ABBA).

Two runs made minutes or days apart differ by more than their own intervals say (page
cache, placement, neighbours): the drift between them is confounded with the difference.
Here each block of A is next in time to a block of B, and which side goes first alternates,
so drift hits both alike; `compare AB.json` then tests the sides on their blocks.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from wisconsin import WisconsinError, store
from wisconsin.measure.options import RunOptions
from wisconsin.measure.runner import run
from wisconsin.runfiles import abfile
from wisconsin.runfiles.abfile import ABRun


def ab_path(out: str) -> Path:
    """OUT/<UTC-time>-ab.json, or out itself if it names a .json file."""
    p = Path(out)
    if p.suffix == ".json":
        return p
    return p / f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-ab.json"


def block_order(blocks: int) -> list[str]:
    """A B | B A | A B ...: each side first in every other block pair."""
    return [s for i in range(blocks) for s in (("A", "B") if i % 2 == 0 else ("B", "A"))]


def _prefixed(progress, prefix: str):
    if progress is None:
        return None
    return lambda label, done, total: progress(f"{prefix} {label}", done, total)


def run_ab(
    a: RunOptions,
    b: RunOptions,
    *,
    blocks: int,
    rounds: int,
    out: str,
    labels: tuple[str, str] = ("", ""),
    progress=None,
) -> tuple[ABRun, Path]:
    """Measure `blocks` blocks of `rounds` timed rounds per side in ABBA order; save the
    A/B file (every block's run in it) and return it with its path."""
    if blocks < 2:
        raise WisconsinError("an A/B run needs at least 2 blocks a side (--blocks)")
    path = ab_path(out)
    if path.exists():
        raise WisconsinError(f"{path} already exists; A/B files are never overwritten")
    store.check_writable(path.parent, f"--out {out}")
    work = path.with_name(path.stem + ".blocks")  # each block's run file while it runs
    if work.exists():
        raise WisconsinError(f"{work} already exists: an earlier A/B run's blocks")
    started = store.utc_now()
    sides: dict[str, list] = {"A": [], "B": []}
    opts = {"A": a, "B": b}
    order = block_order(blocks)
    try:
        for side in order:
            n = len(sides[side]) + 1
            one = replace(
                opts[side],
                blocks=1,
                repeat=None,
                min_reps=rounds,
                max_reps=rounds,
                time_budget_s=None,
                order_seed=None,
                out=str(work / f"{side.lower()}-{n:02d}.json"),
            )
            result, _ = run(one, progress=_prefixed(progress, f"{side} block {n}/{blocks}"))
            sides[side].append(result)
    except BaseException as exc:
        done = sum(map(len, sides.values()))
        if done and isinstance(exc, Exception | KeyboardInterrupt):
            raise WisconsinError(
                f"A/B run stopped after {done} of {len(order)} blocks ({exc}); their run "
                f"files are in {work} (compare them with --with-a/--with-b)"
            ) from exc
        raise
    ab = ABRun(
        started_utc=started,
        finished_utc=store.utc_now(),
        label_a=labels[0],
        label_b=labels[1],
        order=tuple(order),
        a=tuple(sides["A"]),
        b=tuple(sides["B"]),
        stop_reason=f"{blocks} blocks a side of {rounds} round{'s' * (rounds > 1)} each",
    )
    abfile.save(ab, path)
    shutil.rmtree(work)  # every block is in the A/B file now
    return ab, path
