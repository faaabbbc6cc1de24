"""Every field of a real run file of each workload, mutated, through every verb that reads it.

Usage: python benchmarks/runfile_fuzz.py [--per-pattern N] [--seed S] [--only wisconsin|debitcredit]
                                         [--base RUN.json] [--sample N] [--cases CASES.tsv]

--base with --only mutates another real run of that workload instead, e.g. the reference run
in runs/ whose audit passes every rule (its audit takes seconds: use --sample).

Bases: tests/fixtures/audit_tiny_sn.json (a real shared-nothing run: F1 and F2, cold, a
baseline, 5 rounds) and tests/fixtures/debitcredit_run.json (a real `bench --workload
debitcredit --partitions 1,2`). Each field pattern (list indices generalised:
measurements[].repetitions[].wall_s) is taken at up to N of its instances (the first, the
last, random others), each mutated every way tests/harness/runfile_fuzz.py knows (wrong type,
null, 0, -1, NaN, Infinity, 10**400, 1e308, empty and huge strings, list<->dict, deleted);
each case runs `audit`, `report --full`, `compare` (against another run) and
`run --resume` in this process (click's CliRunner).

Prints: cases and verb calls, tracebacks (must be 0; each listed), audits that pass what
they should fail (must be 0; each listed: every rule that passed on the untouched file still
passes and one of them saw the mutation), and the audit's verdicts (PASS, FAIL, refused).
Exit status 0 if both are 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # its harness package, as the tests import it

from click.testing import CliRunner  # noqa: E402

from harness import runfile_fuzz as fz  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
BASES = {
    "wisconsin": FIXTURES / "audit_tiny_sn.json",
    "debitcredit": FIXTURES / "debitcredit_run.json",
}


def cases(data, per_pattern: int, rng: random.Random) -> list[tuple]:
    """(path, mutation) for up to per_pattern instances of every field pattern."""
    by: dict[str, list[tuple]] = collections.defaultdict(list)
    for p in fz.paths(data):
        by[fz.pattern(p)].append(p)
    out = []
    for instances in by.values():
        pick = [instances[0], instances[-1]]
        rest = instances[1:-1]
        pick += rng.sample(rest, min(len(rest), max(per_pattern - 2, 0)))
        for p in dict.fromkeys(pick[:per_pattern] if per_pattern < 2 else pick):
            out += [(p, name) for name in fz.NAMES]
    return out


def fuzz(
    workload: str, per_pattern: int, rng: random.Random, work: Path, log=None, sample=None
) -> dict:
    base_path = BASES[workload]
    data = json.loads(base_path.read_text())
    other = work / f"{workload}-other.json"  # compare's A: the same run, another start time
    other.write_text(json.dumps(dict(data, started_utc="2000-01-01T00:00:00Z")))
    runner = CliRunner()
    base = fz.rules_of(fz.run_verbs(runner, base_path, other, ("audit",))["audit"].output)
    assert base, f"{base_path}: the untouched file's audit printed no rules"
    todo = cases(data, per_pattern, rng)
    if sample is not None and sample < len(todo):
        todo = rng.sample(todo, sample)
    patterns = len({fz.pattern(p) for p, _ in todo})
    print(f"{workload}: {base_path.relative_to(ROOT)}, {sum(ok for ok, _ in base.values())} of "
          f"{len(base)} rules pass untouched; {patterns} field patterns, {len(todo)} cases")  # fmt: skip
    stats = collections.Counter()
    verdicts = collections.Counter()
    tracebacks, passes = [], []
    target = work / f"{workload}-mutated.json"
    for path, name in todo:
        mutated = fz.mutate(data, path, name)
        if mutated is None:
            stats["no-op"] += 1
            continue
        target.write_text(fz.dump(mutated))
        out = fz.run_verbs(runner, target, other)
        stats["cases"] += 1
        stats["calls"] += len(out)
        for o in out.values():
            if o.traceback:
                tracebacks.append(f"{o.verb} {fz.show(path)} = {name}: {o.traceback}")
        v = fz.verdict(out["audit"])
        verdicts[v] += 1
        if log is not None:  # the verdict of every case, and each verb's exit code
            codes = "\t".join(f"{o.verb}={o.exit_code}" for o in out.values())
            log.write(f"{workload}\t{fz.show(path)}\t{name}\t{v}\t{codes}\n")
        saw = fz.passes_what_it_should_fail(base, fz.rules_of(out["audit"].output))
        if saw:
            passes.append(f"{fz.show(path)} = {name}: passes, seen by {', '.join(saw)}")
    print(
        f"  {stats['cases']} cases ({stats['no-op']} no-ops skipped), {stats['calls']} verb calls"
    )
    print("  audit verdicts: " + ", ".join(f"{k} {verdicts[k]}" for k in ("PASS", "FAIL", "refused", "crash")))  # fmt: skip
    print(f"  tracebacks: {len(tracebacks)}")
    for t in tracebacks[:40]:
        print(f"    {t}")
    print(f"  audits passing what they should fail: {len(passes)}")
    for t in passes[:40]:
        print(f"    {t}")
    return {"cases": stats["cases"], "calls": stats["calls"], "tracebacks": len(tracebacks),
            "passes": len(passes)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-pattern", type=int, default=3, help="instances of each field pattern")
    ap.add_argument("--seed", type=int, default=43)
    ap.add_argument("--only", choices=sorted(BASES))
    ap.add_argument(
        "--base", type=Path, help="another real run file of --only's workload to mutate"
    )
    ap.add_argument(
        "--sample", type=int, help="at most this many cases a workload, drawn at random"
    )
    ap.add_argument(
        "--cases", type=Path, help="write each case's audit verdict and exit codes here (TSV)"
    )
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if args.base is not None:
        if args.only is None:
            ap.error("--base needs --only (the workload the file belongs to)")
        BASES[args.only] = args.base.resolve()
    t0 = time.perf_counter()
    totals = collections.Counter()
    log = args.cases.resolve().open("w") if args.cases else None
    with tempfile.TemporaryDirectory(prefix="runfile-fuzz-") as tmp:
        os.chdir(tmp)  # plot and report write nothing here, but keep the checkout clean
        for workload in [args.only] if args.only else list(BASES):
            totals.update(fuzz(workload, args.per_pattern, rng, Path(tmp), log, args.sample))
    if log is not None:
        log.close()
        print(f"every case's verdict: {args.cases}")
    print(
        f"total: {totals['cases']} cases, {totals['calls']} verb calls, "
        f"{totals['tracebacks']} tracebacks, {totals['passes']} audits passing what they "
        f"should fail; {time.perf_counter() - t0:.0f} s"
    )
    return 0 if totals["tracebacks"] == 0 and totals["passes"] == 0 else 1


if __name__ == "__main__":
    with recorded("runfile-fuzz"):
        sys.exit(main())
