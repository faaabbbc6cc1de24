"""kill -9 of `generate` part-way, then `generate` again: every trial must rebuild, and every
table must pass `info --deep`.

Each trial starts `wisconsin generate --kind F --rows 200000 --partitions 1,2 --jobs 1` in a
fresh data directory, SIGKILLs it (the generate process only, as a user's kill -9 would: its
builders die with it, builds/local.py) after a delay spread over --min..--max seconds, lists
what the kill left in each table directory (DuckDB's temporary directory part-NNN.duckdb.tmp.tmp/
among it, when the kill hit a builder while DuckDB was using it), runs the same `generate`
again, then `info --deep` on every table, and checks that nothing but the table's own files is
left. Issue 43 item 4: before the fix, a leftover temporary directory made every later generate
fail with IsADirectoryError.

    python benchmarks/generate_kill.py --trials 8 --min 0.5 --max 2.5 --watched 4

DuckDB's temporary directory exists only while an F2 partition's primary key is built (F1, with
a larger memory limit, does not spill): on the 2-core test machine from about 1.4-2.2 s to
0.2 s later, depending on its load. The timed kills are spread over 0.5-2.5 s to reach it
now and then; the --watched trials kill the moment it appears, so that case is always tried.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded

TABLE_FILES = {"manifest.json", ".wisconsin.lock"}  # besides part-NNN.duckdb and part-NNN.json


def wisconsin(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wisconsin", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def generate_args(data: Path, rows: int) -> list[str]:
    return ["generate", "--kind", "F", "--rows", str(rows), "--partitions", "1,2", "--jobs", "1",
            "--data", str(data)]  # fmt: skip


def left_behind(data: Path) -> str:
    """What is in each table directory, directories with their entry count."""
    out = []
    for tdir in sorted(p for p in data.iterdir() if p.is_dir()):
        names = []
        for p in sorted(tdir.iterdir()):
            if p.name == ".wisconsin.lock":
                continue
            names.append(f"{p.name}/({len(list(p.iterdir()))})" if p.is_dir() else p.name)
        out.append(f"{tdir.name}: {', '.join(names) or '-'}")
    return "; ".join(out) or "nothing"


def foreign(data: Path) -> list[str]:
    """Anything in a table directory that is not the table's own file."""
    bad = []
    for tdir in (p for p in data.iterdir() if p.is_dir()):
        for p in tdir.iterdir():
            own = p.name in TABLE_FILES or (
                p.name.startswith("part-") and p.suffix in (".duckdb", ".json") and p.is_file()
            )
            if not own:
                bad.append(f"{tdir.name}/{p.name}")
    return sorted(bad)


def wait_for_temp_dir(data: Path, proc: subprocess.Popen, limit: float = 60.0) -> float:
    """Seconds until DuckDB's temporary directory of a partition appears (or generate ends)."""
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < limit:
        if data.is_dir() and any(data.glob("F*/part-*.duckdb.tmp.tmp")):
            break
        time.sleep(0.002)
    return time.monotonic() - t0


def trial(delay: float | None, where: Path, rows: int) -> tuple[bool, str]:
    """delay None: kill the moment DuckDB's temporary directory appears."""
    data = where / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", *generate_args(data, rows)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if delay is None:
        delay = wait_for_temp_dir(data, proc)
    else:
        time.sleep(delay)
    ended_first = proc.poll() is not None
    if not ended_first:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.3)  # the builders die by PR_SET_PDEATHSIG: let the kernel reap them
    left = left_behind(data) if data.is_dir() else "no data directory yet"
    if ended_first:
        left += " (generate had already finished)"
    again = wisconsin(*generate_args(data, rows))
    said = [ln for ln in again.stderr.splitlines() if "removed what an interrupted build" in ln]
    problems = []
    if again.returncode != 0 or "Traceback" in again.stderr + again.stdout:
        tail = " | ".join((again.stderr or again.stdout).strip().splitlines()[-2:])
        problems.append(f"generate again: exit {again.returncode}: {tail}")
    for table in ("F1", "F2"):
        info = wisconsin("info", "--deep", str(data / table))
        if info.returncode != 0 or "verified" not in info.stdout:
            tail = " | ".join((info.stderr or info.stdout).strip().splitlines()[-2:])
            problems.append(f"info --deep {table}: exit {info.returncode}: {tail}")
    if extra := foreign(data):
        problems.append(f"still there after the rebuild: {', '.join(extra)}")
    line = f"kill -9 at {delay:.2f} s: left {left}"
    line += f"\n    rebuild: {'; '.join(said) if said else 'nothing to remove'}"
    line += (
        f"\n    {'FAILED: ' + '; '.join(problems) if problems else 'rebuilt, info --deep verified'}"
    )
    return not problems, line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--min", type=float, default=0.5, help="first kill delay, s")
    ap.add_argument("--max", type=float, default=2.5, help="last kill delay, s")
    ap.add_argument(
        "--watched",
        type=int,
        default=4,
        help="more trials, each killed the moment DuckDB's temporary directory appears",
    )
    ap.add_argument("--rows", type=int, default=200_000)
    args = ap.parse_args()
    step = (args.max - args.min) / max(1, args.trials - 1)
    delays = [args.min + i * step for i in range(args.trials)] + [None] * args.watched
    ok, hit_temp_dir = {True: 0, False: 0}, {True: 0, False: 0}
    for delay in delays:
        with tempfile.TemporaryDirectory(prefix="wisconsin-generate-kill-") as where:
            good, line = trial(delay, Path(where), args.rows)
        timed = delay is not None
        ok[timed] += good
        hit_temp_dir[timed] += ".duckdb.tmp.tmp/" in line.splitlines()[0]
        print(("" if timed else "[watched] ") + line, flush=True)
    print(
        f"timed kills: {ok[True]} of {args.trials} rebuilt and verified by info --deep "
        f"({hit_temp_dir[True]} had left DuckDB's temporary directory)"
    )
    if args.watched:
        print(
            f"kills as DuckDB's temporary directory appeared: {ok[False]} of {args.watched} "
            f"rebuilt and verified ({hit_temp_dir[False]} had left it)"
        )
    sys.exit(0 if sum(ok.values()) == len(delays) else 1)


if __name__ == "__main__":
    with recorded("generate-kill"):
        main()
