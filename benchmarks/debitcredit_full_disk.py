"""Fault drill (issue 43, item 6): the DebitCredit bench on a disk that fills during the run.

Usage: python benchmarks/debitcredit_full_disk.py [--trials 5] [--size 120m] [--dir D]
       [--fill-at 3,10,3,10,6.5]   (needs root: it mounts a tmpfs)

Each trial mounts a fresh --size tmpfs, runs `wisconsin bench --workload debitcredit
--partitions 1,2 --branches 2 --step-seconds 2 --repeat 1` with --data and --out on it, and
a filler process writes a file there until ENOSPC, --fill-at seconds after the bench
started (one figure per trial, in turn; 3 s is in the build, 10 s in P=1's steps here, later
ones reach P=2's distributed transactions and the open steps), leaving the disk full. The ending is classed: one line naming
the full disk / silent exit / traceback / finished / other; any "audit: OK" printed after a
step that ran on the full disk is counted. Then the filler is deleted (the space freed), `wisconsin repair` runs
on every database the bench built, and the audit against the drivers' logs (`wisconsin
info`: every acknowledged transaction present) and the independent duckdb-only check must
agree it is whole. Exits 1 unless every trial passed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _dc_faults as dc  # beside _results, in this directory
from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

BENCH = ["--partitions", "1,2", "--branches", "2", "--step-seconds", "2", "--repeat", "1"]
FILL_AT_S = (3.0, 10.0, 3.0, 10.0, 6.5)
FILLER = (
    "import sys\n"
    "f = open(sys.argv[1], 'wb')\n"
    "try:\n"
    "    while True:\n"
    "        f.write(b'\\0' * 2**20); f.flush()\n"
    "except OSError as e:\n"
    "    print(e.errno)\n"
)
FULL = ("the disk is full", "No space left on device")


def trial(i: int, root: Path, size: str, fill_at: float) -> tuple[str, bool, int]:
    mnt = root / f"t{i}"
    mnt.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], check=True)
    try:
        return _on(i, mnt, fill_at)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        mnt.rmdir()


def _on(i: int, mnt: Path, fill_at: float) -> tuple[str, bool, int]:
    bench = dc.Bench([*BENCH, "--data", str(mnt / "data"), "--out", str(mnt / "out")])
    t0 = time.monotonic()
    bench.wait_for("\0", fill_at)  # no line starts so: just wait, unless it ends first
    seen = len(bench.err)  # stderr lines before the fill
    filled = subprocess.run(
        [sys.executable, "-c", FILLER, str(mnt / "filler")], capture_output=True, text=True
    )
    full_after = time.monotonic() - t0
    rc = bench.finish()
    kind, said = dc.ending(rc, bench)
    if kind == "one line" and not any(f in said[0] for f in FULL):
        kind = "other"
    if kind == "one line":
        kind = "disk-full line"
    # An audit that follows a step run (at least in part) on the full disk: each step line
    # printed after the fill is such a step. P=1's audit after steps all measured before the
    # fill is true, and counted apart.
    oks, after_step, late = [], False, 0
    for line in bench.err[seen:]:
        after_step |= line.startswith("P=") and " tps " in line
        if "audit: OK" in line and after_step:
            oks.append(line)
        elif "audit: OK" in line:
            late += 1
    print(
        f"trial {i}: disk full {full_after:.1f} s in (filler: errno {filled.stdout.strip()}); "
        f"exit {rc} after {time.monotonic() - t0:.1f} s: {kind}; 'audit: OK' after a step on "
        f"the full disk: {len(oks)}"
        + (f" (and {late} of a P whose steps all ended before the fill)" if late else "")
    )
    for line in bench.err[max(0, seen - 1) : seen + 3]:
        if line.startswith(dc.PROGRESS):
            print(f"      progress | {line[:160]}")
    for line in said[-12:]:
        print(f"      | {line}")
    (mnt / "filler").unlink()  # free the space
    agree = True
    databases = sorted(p.parent for p in (mnt / "data" / "debitcredit").glob("dc*/manifest.json"))
    if not databases:
        print("      no database was complete (its manifest unwritten): nothing acknowledged")
    for db in databases:
        after = dc.repair_and_check(db)
        agree &= after.agree
        print(
            f"      {db.name}: repair exit {after.repair_rc}: {dc.last(after.repair)}\n"
            f"      {db.name}: info exit {after.info_rc}: {dc.last(after.info)}\n"
            f"      {db.name}: independent check exit {after.check_rc}: {dc.last(after.check)}"
        )
    return kind, agree, len(oks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--size", default="120m")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--fill-at", default=",".join(f"{t:g}" for t in FILL_AT_S))
    args = ap.parse_args()
    fill_at = [float(t) for t in args.fill_at.split(",")]
    if os.geteuid() != 0 or shutil.which("mount") is None:
        print("needs root and mount (a tmpfs is the disk that fills)")
        return 2
    root = Path(args.dir or tempfile.mkdtemp(prefix="dc-full-"))
    print(f"bench {' '.join(BENCH)} on a {args.size} tmpfs; {args.trials} trials under {root}")
    kinds, agreed, oks = [], 0, 0
    for i in range(args.trials):
        kind, agree, ok_lines = trial(i, root, args.size, fill_at[i % len(fill_at)])
        kinds.append(kind)
        agreed += agree
        oks += ok_lines
    print(
        f"\nendings over {len(kinds)} trials: {dc.tally(kinds)}; 'audit: OK' after a step on "
        f"the full disk: {oks}; after freeing the space and repair, the audit (every acknowledged "
        f"transaction present) and the independent check agree in {agreed} of {len(kinds)}"
    )
    ok = kinds.count("disk-full line") == len(kinds) and agreed == len(kinds) and not oks
    return dc.conclude(ok, root, keep=bool(args.dir))


if __name__ == "__main__":
    with recorded("debitcredit-full-disk"):
        sys.exit(main())
