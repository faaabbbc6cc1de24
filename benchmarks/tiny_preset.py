"""`wisconsin bench --preset tiny` as a user runs it: wall time, audit, where the time went.

Usage: python benchmarks/tiny_preset.py [--dir DIR] [--runs N] [--compare CHECKOUT]
           [--keep] [-- extra bench options]

Each run is one child `python -m wisconsin bench --preset tiny --data DIR/data --out
DIR/runs-K --quiet` on fresh tables (generation included, as a first bench on a machine),
then `wisconsin audit --format json` of its run file. Printed per run: wall time, CPU time
of the child and every process it reaped (its Dask workers), the audit's pass count and
its failing rules, and where the wall time went, read from the run file alone: the parts
the runner recorded (Run.time_spent: checks, probes, start, fresh workers, warm-ups, opens,
resets, eviction, empty statements, timed, verify, undo, other), or for a file without
them:

  before the run   interpreter start, building the tables, checking them (to started_utc)
  first start      probes, the first workers, the baseline engine (to round 0)
  fresh workers    restarting the local workers before each block (Round.fresh_workers_s)
  timed            every execution's wall_s, warm-ups included
  table opens      startup_s (median open) x the opens of the rounds
  other untimed    the rest of the rounds: eviction, the empty statements, verification,
                   the update's undo, journaling, closing
  after the run    report and figures (finished_utc to the child's exit)

and the untimed gaps between executions by the step before them (what follows a step: its
verification, the update's undo, the next step's eviction).

--compare CHECKOUT runs another checkout's code too (a `git worktree` of main, say), in
ABBA order per pair of runs, and prints the ratio of median wall times (this / other).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

ROOT = Path(__file__).resolve().parent.parent


def _ts(utc: str) -> float:
    return datetime.fromisoformat(utc).timestamp()


def breakdown(doc: dict) -> dict[str, float]:
    """Seconds of the run by phase, from the run file: the runner's own record (TimeSpent)
    where it has one, else derived (see the module docstring)."""
    spent = doc.get("time_spent")
    if spent:
        parts = {k.removesuffix("_s").replace("_", " "): v for k, v in spent.items()}
        total = parts.pop("total")
        parts["other"] = max(0.0, total - sum(parts.values()))
        return parts
    started, finished = _ts(doc["started_utc"]), _ts(doc["finished_utc"])
    rounds = sorted(doc["rounds"], key=lambda r: r["index"])
    first = _ts(rounds[0]["started_utc"]) if rounds else finished
    fresh = sum(r.get("fresh_workers_s") or 0.0 for r in rounds)
    ms = [*doc["measurements"], *doc.get("baseline", [])]
    timed = sum(r["wall_s"] for m in ms for r in m["repetitions"])
    timed += sum(m["warmup"]["wall_s"] for m in ms if m["warmup"]["index"] == 0)
    # a table is opened once per round (its steps are one block of the round)
    tables = {m["table"]: m.get("startup_s") or 0.0 for m in doc["measurements"]}
    opens = len(rounds) * sum(tables.values())
    opens += len(rounds) * max(
        (m.get("startup_s") or 0.0 for m in doc.get("baseline", [])), default=0.0
    )
    rest = (finished - first) - fresh - timed - opens
    return {
        "first start": first - started,
        "fresh workers": fresh,
        "timed": timed,
        "table opens": opens,
        "other untimed": rest,
    }


def gaps_by_step(doc: dict) -> dict[str, tuple[float, int]]:
    """Untimed seconds between one execution's end and the next's dispatch, by the query
    before the gap ("+open": the next step is on another table: close and open too)."""
    execs = []
    for group in ("measurements", "baseline"):
        for m in doc.get(group, []):
            for r in [*m["repetitions"], m["warmup"]]:
                if r.get("dispatched_unix") is not None and r["index"] >= 0:
                    execs.append((r["dispatched_unix"], r["wall_s"], m["query"], m["table"], group))
    execs = sorted(set(execs))
    out: dict[str, list[float]] = defaultdict(list)
    for (t0, wall, q, table, g), (t1, _, _, table1, g1) in zip(execs, execs[1:], strict=False):
        gap = t1 - (t0 + wall)
        if gap < 0 or gap > 30:  # a block's fresh workers or the run's end: counted apart
            continue
        label = q + ("+open" if (table, g) != (table1, g1) else "")
        out[label].append(gap)
    return {k: (sum(v), len(v)) for k, v in sorted(out.items())}


def tightest(doc: dict, n: int = 3) -> list[str]:
    """The points the engine-share rule judges (P <= usable cores) closest to its 20x: each
    median time over its median harness overhead, smallest first."""
    cores = doc["environment"]["usable_cores"]
    out = []
    for m in doc["measurements"]:
        times = [r["wall_s"] for r in m["repetitions"]]
        over = [r["overhead_s"] for r in m["repetitions"] if r.get("overhead_s")]
        if m["partitions"] <= cores and times and over:
            out.append((statistics.median(times) / statistics.median(over), m, over))
    return [
        f"{m['table']}/{m['query']} {x:.0f}x ({statistics.median(o) * 1e3:.2f} ms overhead)"
        for x, m, o in sorted(out, key=lambda t: t[0])[:n]
    ]


def run_once(checkout: Path, work: Path, k: int, extra: list[str]) -> dict:
    data, out = work / "data", work / f"runs-{k}"
    shutil.rmtree(data, ignore_errors=True)  # fresh tables: generation is part of the bench
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    cmd = [sys.executable, "-m", "wisconsin", "bench", "--preset", "tiny", "--data", str(data)]
    cmd += ["--out", str(out), "--quiet", *extra]
    load_before = os.getloadavg()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    child = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=checkout)
    wall = time.perf_counter() - t0
    end = time.time()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if child.returncode not in (0, 1):  # 1: the run completed and its audit failed
        raise SystemExit(f"bench failed (exit {child.returncode}):\n{child.stderr[-2000:]}")
    (run_path,) = [p for p in out.glob("*.json")]
    doc = json.loads(run_path.read_text())
    audit = subprocess.run(
        [sys.executable, "-m", "wisconsin", "audit", "--format", "json", str(run_path)],
        capture_output=True, text=True, env=env, cwd=checkout,
    )  # fmt: skip
    rules = json.loads(audit.stdout)["rules"]
    # before the run file's start: the interpreter and the build; after its end: the
    # reports and figures (finished_utc has whole seconds)
    parts = {"before the run": _ts(doc["started_utc"]) - (end - wall)} | breakdown(doc)
    parts["after the run"] = end - _ts(doc["finished_utc"])
    return {
        "wall": wall,
        "cpu": cpu,
        "passed": sum(r["verdict"] == "pass" for r in rules),
        "rules": len(rules),
        "failed": [f"{r['rule']}: {r['detail'][:160]}" for r in rules if r["verdict"] != "pass"],
        "parts": parts,
        "gaps": gaps_by_step(doc),
        "rounds": len([r for r in doc["rounds"] if r["index"] > 0]),
        "blocks": len({r["block"] for r in doc["rounds"] if r["index"] > 0}),
        "stop": doc.get("stop_reason", ""),
        "load": os.getloadavg()[0],
        "load_before": load_before,
        "tightest": tightest(doc),
    }


def show(name: str, r: dict) -> None:
    print(
        f"{name}: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s (all processes), load after "
        f"{r['load']:.1f}; audit {r['passed']} of {r['rules']} rules pass; "
        f"{r['rounds']} timed rounds in {r['blocks']} blocks ({r['stop']})"
    )
    print(
        "    load average before (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in r["load_before"])
    )
    print("    engine share's tightest points: " + "; ".join(r["tightest"]))
    for line in r["failed"]:
        print(f"    FAIL {line}")
    for part, s in r["parts"].items():
        print(f"    {part:15s} {s:7.1f} s  {s / r['wall']:5.1%}")
    print("    untimed gaps by the step before them: " + ", ".join(
        f"{q} {s:.1f} s/{n}" for q, (s, n) in r["gaps"].items()
    ))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="working directory (default: a new one in $TMPDIR, deleted)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each checkout (default 1)")
    ap.add_argument("--compare", type=Path, help="another checkout to run too, ABBA")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    ap.add_argument("extra", nargs="*", help="more `wisconsin bench` options, after --")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="tiny-preset-"))
    work.mkdir(parents=True, exist_ok=True)
    sides = {"this": ROOT} | ({"other": args.compare.resolve()} if args.compare else {})
    print(f"tiny preset end to end in {work}; " + "; ".join(f"{k} = {v}" for k, v in sides.items()))
    print(f"load average before: {os.getloadavg()[0]:.1f}; extra options: {args.extra or 'none'}")
    walls: dict[str, list[float]] = defaultdict(list)
    with contextlib.ExitStack() as cleanup:
        if not args.keep:
            cleanup.callback(shutil.rmtree, work, ignore_errors=True)
        for i in range(args.runs):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))  # ABBA
            for name in order:
                k = sum(map(len, walls.values())) + 1
                r = run_once(sides[name], work, k, args.extra)
                show(f"run {k} ({name})", r)
                walls[name].append(r["wall"])
    for name, w in walls.items():
        print(f"{name}: median wall {statistics.median(w):.1f} s over {len(w)} run(s), "
              f"range {min(w):.1f}-{max(w):.1f} s")  # fmt: skip
    if len(walls) == 2:
        ratio = statistics.median(walls["this"]) / statistics.median(walls["other"])
        print(f"this / other, median wall: {ratio:.2f}")


if __name__ == "__main__":
    with recorded("tiny-preset"):
        main()
