"""`wisconsin history` on real runs of two commits: does it flag a 25% slowdown, and nothing
between untouched or identical runs? (issue 45)

Usage: python benchmarks/history_check.py [--work /tmp/history] [--runs 6] [--old COMMIT]

1. Two clean clones of this repository in --work: the old commit (--old) and this checkout's
   HEAD. Tables are built once (F at P = 1, 2, --rows rows) by HEAD's `generate`; then
   --runs real `wisconsin run`s (shared-memory, warm, --repeat rounds in --blocks blocks),
   the commits alternating (old, new, old, ...) so that drift of the shared machine falls on
   both. Run files already in --work are reused (a second call only analyses).
2. `wisconsin history --format json` of this checkout, as a user runs it, on:
   - the untouched runs: every step between neighbours flagged is a false flag;
   - --runs copies of one run file, dated a minute apart: identical runs, nothing to flag;
   - for each run i after the first: the series with run i replaced by a copy of it with
     every time 25% longer (tests/test_history.py's slowed_copy): is the step into run i
     flagged "B slower"? Run-to-run changes of the machine are in these steps;
   - each run followed by its own slowed copy: the power against each run's own noise, with
     compare's smallest detectable slowdown for that pair.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_history import slowed_copy  # noqa: E402  (one definition of the injected slowdown)

from wisconsin.analysis.comparison import compare  # noqa: E402
from wisconsin.runfiles.runfile import load as load_run  # noqa: E402

PY = sys.executable
SLOWDOWN = 1.25
OLD = "4db6e6e"  # main before issue 45's work (run files of schema 3, as HEAD's)


def sh(*cmd: str, cwd: Path | None = None, env: dict | None = None) -> str:
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    # exit 1 with "audit: fail (" last: the run is written and kept (its audit failed: short
    # tables fail engine share), which history audits and says again
    last = (res.stderr.strip().splitlines() or [""])[-1]
    kept = res.returncode == 1 and last.startswith("audit: fail (")
    if res.returncode and not kept:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr[-800:]}")
    return res.stdout


def wisconsin(code: Path, *args: str) -> str:
    """The tool of the checkout at code, as a user runs it."""
    return sh(PY, "-m", "wisconsin", *args, cwd=code, env={**os.environ, "PYTHONPATH": str(code)})


def checkout(work: Path, name: str, commit: str) -> Path:
    """A clean clone of this repository at commit (its runs record that commit)."""
    path = work / name
    if not path.exists():
        sh("git", "clone", "-q", "--no-checkout", str(ROOT), str(path))
        sh("git", "-C", str(path), "checkout", "-q", commit)
    return path


def load() -> str:
    return sh("uptime").strip()


def make_runs(args, code: dict[str, Path]) -> list[Path]:
    data = args.work / "data"
    if not (data / "F2").exists():
        print(wisconsin(code["new"], "generate", "--kind", "F", "--rows", str(args.rows),
                        "--partitions", "1,2", "--data", str(data), "--quiet").strip())  # fmt: skip
    runs = args.work / "runs"
    runs.mkdir(exist_ok=True)
    paths = []
    for i in range(args.runs):
        side = ("old", "new")[i % 2]
        path = runs / f"run{i}-{side}.json"
        if not path.exists():
            t0 = time.perf_counter()
            wisconsin(code[side], "run", "--data", str(data), "--mode", "shared-memory",
                      "--cache", "warm", "--tables", "F", "--repeat", str(args.repeat),
                      "--blocks", str(args.blocks), "--quiet", "--out", str(path))  # fmt: skip
            print(f"{path.name}: {time.perf_counter() - t0:.0f} s; {load()}")
        paths.append(path)
    return paths


def history(paths: list[Path]) -> list[dict]:
    return json.loads(wisconsin(ROOT, "history", "--format", "json", *map(str, paths)))


def steps(series: list[dict]) -> list[tuple[str, str, int]]:
    """(run file name, verdict against the run before, changes flagged) of every step."""
    return [(Path(e["path"]).name, e["verdict"], len(e["changes"]))
            for s in series for e in s["entries"][1:]]  # fmt: skip


def flagged(st: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    return [x for x in st if x[1] != "cannot tell apart" or x[2]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/history"))
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--old", default=OLD)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=15)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    head = sh("git", "-C", str(ROOT), "rev-parse", "HEAD").strip()
    code = {"old": checkout(args.work, "old", args.old), "new": checkout(args.work, "new", head)}
    print(f"before: {load()}")
    print(f"commits: old {args.old}, new {head[:12]}; F at P = 1, 2 of {args.rows:,} rows; "
          f"shared-memory, warm, {args.repeat} rounds in {args.blocks} blocks")  # fmt: skip
    runs = make_runs(args, code)
    series = history(runs)
    st = steps(series)
    print(f"\nuntouched runs, in history's order: {len(st)} steps, {len(flagged(st))} flagged")
    for e in (e for s in series for e in s["entries"]):
        print(f"  {Path(e['path']).name:16} {e['commit'][:7]} {e['started_utc']}  other load "
              f"before it {e['busy_cores']} cores; vs the run before: {e['verdict'] or '-'} "
              f"({len(e['changes'])} changes)")  # fmt: skip

    tmp = args.work / "copies"
    tmp.mkdir(exist_ok=True)
    same = [slowed_copy(runs[0], tmp / f"same{i}.json", minutes=i) for i in range(1, args.runs + 1)]
    st = steps(history(same))
    print(f"identical runs (copies of {runs[0].name}): {len(st)} steps, {len(flagged(st))} flagged")

    print(f"\neach run in turn {SLOWDOWN:.2f}x slower, a copy in its place (between other runs):")
    found, other = 0, 0
    for i in range(1, len(runs)):
        slow = slowed_copy(runs[i], tmp / runs[i].name, slower=SLOWDOWN)
        st = steps(history([*runs[:i], slow, *runs[i + 1 :]]))
        into = next(x for x in st if x[0] == slow.name)
        found += into[1] == "B slower"
        out = [x for x in st if x[0] != slow.name and x in flagged(st)]
        other += len(out)
        print(f"  {slow.name:16} step into it: {into[1]} ({into[2]} changes); other steps "
              f"flagged: {[x[:2] for x in out]}")  # fmt: skip
    print(f"in place: {found} of {len(runs) - 1} flagged as B slower; {other} other steps "
          "flagged in those series (the step after the slowed run may rightly be)")  # fmt: skip

    print(f"\neach run followed by a copy of it {SLOWDOWN:.2f}x slower, dated a minute later:")
    found = 0
    for run in runs:
        slow = slowed_copy(run, tmp / f"after-{run.name}", slower=SLOWDOWN, minutes=1)
        st = steps(history([run, slow]))
        found += st[0][1] == "B slower"
        # compare's own figure: the smallest T_B/T_A each point's test could call slower
        c = compare([load_run(run)], [load_run(slow)])
        mid, least, most = c.detectable_spread or (float("nan"),) * 3
        print(f"  {run.name:16} -> {slow.name}: {st[0][1]} ({st[0][2]} changes); smallest "
              f"slowdown its points could show: median {mid:.2f}x ({least:.2f}-{most:.2f}x)")  # fmt: skip
    print(f"right after its own run: {found} of {len(runs)} flagged as B slower")
    print(f"after: {load()}")


if __name__ == "__main__":
    with recorded("history-check"):
        main()
