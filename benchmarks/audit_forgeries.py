"""How many forged copies of a real run file `wisconsin audit` catches.

Usage: python benchmarks/audit_forgeries.py [--run RUN.json] [--make-tiny DIR]

The base is a real run file: by default the repository's reference run (runs/, a default
`wisconsin bench`, every audit rule passes), or with --make-tiny a fresh
`wisconsin bench --preset tiny --partitions 1,2 --repeat 5` made in DIR. Each forgery edits
one copy of it the way a careless or dishonest hand might; a forgery is caught when a rule
that passes on the untouched file fails (or says incomplete) on the copy. The untouched file
must add no failure (0 false failures). Then every point is scaled x10 and /10 alone, to say
how much of the file the time rules cover, not just the forgery's chosen point.

Exit status: 0 if every forgery is caught and the untouched file adds no failure, else 1.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from wisconsin.runfiles import runfile  # noqa: E402
from wisconsin.workloads.wisconsin import rules_derived  # noqa: E402
from wisconsin.workloads.wisconsin.audit import audit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "runs" / "20261123T130232Z-vm-shared-nothing.json"


def _label(m: dict) -> str:
    return f"{m['table']}/{m['query']}"


def _point(d: dict, query: str, baseline: bool = False) -> dict:
    """The F measurement of query at the smallest P > 1 (or the baseline's)."""
    if baseline:
        return next(m for m in d["baseline"] if m["query"] == query)
    return min(
        (m for m in d["measurements"] if m["query"] == query and m["kind"] == "F"),
        key=lambda m: (m["partitions"] < 2, m["partitions"]),
    )


def _scale(m: dict, factor: float, keep_overhead: bool = False) -> None:
    """Every time of a point's timed repetitions (the harness overhead too, unless kept),
    engine shares kept consistent."""
    fields = ("wall_s", "commit_decision_s") + (() if keep_overhead else ("overhead_s",))
    for r in m["repetitions"]:
        for f in fields:
            if r.get(f) is not None:
                r[f] *= factor
        for s in r["partitions"]:
            s["engine_s"] *= factor
            s["cpu_s"] *= factor


def _every_execution(d: dict):
    for m in (*d["measurements"], *d["baseline"]):
        yield from (m["warmup"], *m["repetitions"])


# --- the forgeries the re-reading audit already caught (tests/test_audit.py)


def zero_cold_reads(d):
    for m in d["measurements"]:
        for r in m["repetitions"]:
            for s in r["partitions"]:
                s["bytes_read"] = 0


def status_incomplete(d):
    d.update(status="incomplete", stop={"rule": "failed", "text": "x"})


def durability_off(d):
    d["config"]["durability"] = "WAL off"


def round_order_sorted(d):
    d["rounds"][1]["order"] = sorted(d["rounds"][1]["order"])


def scan_projection_narrowed(d):
    for m in d["measurements"]:
        if m["query"] == "scan":
            for r in m["repetitions"]:
                for s in r["partitions"]:
                    s["projections"] = [["hundpct"]]


def one_execution_unverified(d):
    d["measurements"][0]["repetitions"][0]["verified"] = False


def overhead_equal_to_wall(d):
    for m in d["measurements"]:
        for r in m["repetitions"]:
            r["overhead_s"] = r["wall_s"]


def baseline_dropped(d):
    d["baseline"] = []


# --- the ones it did not (issue 30)


def one_repetition_deleted(d):
    m = _point(d, "select")
    m["repetitions"] = m["repetitions"][:2] + m["repetitions"][3:]


def slowest_repetitions_deleted(d):
    for m in d["measurements"]:
        m["repetitions"] = sorted(m["repetitions"], key=lambda r: r["wall_s"])[:-2]


def point_times_x10(d):
    _scale(_point(d, "join"), 10)


def point_times_div10(d):
    _scale(_point(d, "join"), 0.1)


def answers_changed_alike(d):
    for m in (*d["measurements"], *d["baseline"]):
        if m["query"] == "select":
            m["expected_rows"] += 1
            for r in (m["warmup"], *m["repetitions"]):
                r["rows"] += 1


def averages_changed_alike(d):
    for m in (*d["measurements"], *d["baseline"]):
        if m["query"] == "average":
            for r in (m["warmup"], *m["repetitions"]):
                r["answer"] *= 1.001


def cold_average_one_page(d):
    r = _point(d, "average")["repetitions"][1]
    for s in r["partitions"]:
        s["bytes_read"] = 4096
    r["bytes_read"] = 4096 * len(r["partitions"])


def incomplete_without_scans(d):
    d.update(status="incomplete", stop={"rule": "interrupted"})
    for m in d["measurements"]:
        m["repetitions"] = [] if m["query"] == "scan" else m["repetitions"][:2]


def whole_round_deleted_consistently(d):
    last = max(r["index"] for r in d["rounds"])
    for m in (*d["measurements"], *d["baseline"]):
        m["repetitions"] = [r for r in m["repetitions"] if r["round"] != last]
    d["rounds"] = [r for r in d["rounds"] if r["index"] != last]
    d["config"]["repeat"] = last - 1
    d["stop"]["rounds"] = last - 1


def baseline_times_div10(d):
    _scale(_point(d, "scan", baseline=True), 0.1)


FORGERIES = (
    ("cold reads zeroed", zero_cold_reads, False),
    ("status incomplete", status_incomplete, False),
    ("durability text changed", durability_off, False),
    ("a round's order sorted", round_order_sorted, False),
    ("scan projections narrowed", scan_projection_narrowed, False),
    ("an execution unverified", one_execution_unverified, False),
    ("overheads = wall times", overhead_equal_to_wall, False),
    ("baseline dropped", baseline_dropped, False),
    ("a repetition deleted", one_repetition_deleted, True),
    ("the 2 slowest repetitions deleted", slowest_repetitions_deleted, True),
    ("a point's times x10", point_times_x10, True),
    ("a point's times /10", point_times_div10, True),
    ("select answers +1 alike (rows, expectation)", answers_changed_alike, True),
    ("every AVG x1.001 alike", averages_changed_alike, True),
    ("cold AVG claims 4 KiB read", cold_average_one_page, True),
    ("incomplete, no timed scan", incomplete_without_scans, True),
    (
        "last round deleted, config and stop reason rewritten",
        whole_round_deleted_consistently,
        True,
    ),
    ("baseline scan times /10", baseline_times_div10, True),
)


def _failing(data: dict) -> dict[str, str]:
    return {r.name: r.detail for r in audit(runfile.from_dict(data)) if not r.ok}


def _make_tiny(where: Path) -> Path:
    out = where / "out"
    args = ["bench", "--preset", "tiny", "--partitions", "1,2", "--repeat", "5", "--quiet"]
    cmd = [sys.executable, "-m", "wisconsin", *args, "--data", str(where / "data")]
    cmd += ["--out", str(out)]
    print("making a tiny run:", " ".join(cmd[2:]))
    subprocess.run(cmd, check=True, capture_output=True)
    return next(out.glob("*.json"))


def _every_repetition_div10(base: dict, checks: dict) -> None:
    """Each timed repetition alone made 10x faster (its wall, engine, CPU and overhead times
    together, the other repetitions and the median untouched): how many the time rules catch
    (issue 43: the bound used to be held against medians only)."""
    hit = total = 0
    by = dict.fromkeys(checks, 0)
    for kind in ("measurements", "baseline"):
        for i, m in enumerate(base[kind]):
            for j in range(len(m["repetitions"])):
                data = copy.deepcopy(base)
                rep = data[kind][i]["repetitions"][j]
                one = {**data[kind][i], "repetitions": [rep]}
                _scale(one, 0.1)
                run = runfile.from_dict(data)
                found = [k for k, check in checks.items() if check(run)]
                total += 1
                hit += bool(found)
                for k in found:
                    by[k] += 1
    print(
        f"one repetition's times /10: caught on {hit} of {total} repetitions ("
        + ", ".join(f"{k} {v}" for k, v in by.items())
        + ")"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=None, help="the real run file to forge")
    ap.add_argument("--make-tiny", type=Path, default=None, help="make a tiny run in this dir")
    args = ap.parse_args()
    if args.make_tiny is not None:
        args.make_tiny.mkdir(parents=True, exist_ok=True)
        path = _make_tiny(args.make_tiny)
    else:
        path = args.run or REFERENCE
    # this version's schema (an older file migrated): the forgeries edit its fields
    base = json.loads(json.dumps(runfile.to_dict(runfile.load(path))))
    t0 = time.perf_counter()
    before = _failing(base)
    print(f"base: {path}")
    print(
        f"untouched: {len(before)} failing rule(s) {sorted(before)} ({time.perf_counter() - t0:.1f} s,"
    )
    print("  the generator re-derives every table's answers once; later audits reuse them)")
    print()
    caught_old = caught_new = 0
    missed = []
    for name, forge, new in FORGERIES:
        data = copy.deepcopy(base)
        forge(data)
        t = time.perf_counter()
        after = _failing(data)
        added = sorted(set(after) - set(before))
        caught = bool(added)
        caught_old += caught and not new
        caught_new += caught and new
        if not caught:
            missed.append(name)
        print(
            f"{'CAUGHT' if caught else 'MISSED'}  {'new ' if new else 'old '} {name:52} "
            f"{time.perf_counter() - t:5.1f} s  by: {', '.join(added) or '-'}"
        )
    n_old = sum(not n for *_, n in FORGERIES)
    n_new = len(FORGERIES) - n_old
    print()
    print(
        f"caught {caught_old + caught_new} of {len(FORGERIES)} forgeries "
        f"({caught_old} of {n_old} the re-reading audit caught, {caught_new} of {n_new} it missed)"
    )
    # how much of the file the time rules cover: every point alone, x10 and /10, all its
    # times (the harness overhead too) or only the query's (the overhead kept, so the
    # calibration's dispatch medians stay as they were); which check catches it
    print()
    points = [(False, i) for i in range(len(base["measurements"]))]
    points += [(True, i) for i in range(len(base["baseline"]))]
    checks = {
        "calibration": lambda run: rules_derived._calibration_problems(run),
        "bound": lambda run: rules_derived._bound_problems(run)[0],
        "timeline": lambda run: rules_derived._timeline_problems(run)[0],
    }
    for factor in (10, 0.1):
        for keep_overhead in (False, True):
            hit, by, miss = 0, dict.fromkeys(checks, 0), []
            for is_base, i in points:
                data = copy.deepcopy(base)
                m = data["baseline" if is_base else "measurements"][i]
                _scale(m, factor, keep_overhead)
                run = runfile.from_dict(data)
                found = [k for k, check in checks.items() if check(run)]
                for k in found:
                    by[k] += 1
                if found:
                    hit += 1
                else:
                    miss.append(("baseline:" if is_base else "") + _label(m))
            print(
                f"one point's {'query times (overhead kept)' if keep_overhead else 'times'} "
                f"x{factor:g}: caught on {hit} of {len(points)} points ("
                + ", ".join(f"{k} {v}" for k, v in by.items())
                + ")"
                + (f"; missed: {', '.join(miss)}" if miss else "")
            )
    _every_repetition_div10(base, checks)
    ok = not missed
    print(f"\nall forgeries caught, untouched file adds no failure: {'yes' if ok else 'no'}")
    return 0 if ok else 1


if __name__ == "__main__":
    with recorded("audit-forgeries"):
        code = main()
    sys.exit(code)
