"""Bad inputs as a new user gives them (issue 45): every verb, every kind of thing in the
wrong place, bad values, conflicting options, options that do not apply.

The cases are tests/harness/bad_inputs.py's list (tests/test_refusals.py runs the same list
in process). Fixtures are made once in a scratch directory, as a user would: F tables
(`generate --kind F --rows 2000 --partitions 1,2`), a tiny DebitCredit bench (its database
and run file), an `ab` of 2 blocks a side, the Wisconsin run file of tests/fixtures, a
random file, an empty one, an empty directory, a directory that is not a table, a path
that does not exist, and (as root) a full 1 MiB tmpfs. Each case runs as
`python -m wisconsin ...` with the scratch directory as its working directory; the scratch
directory's tree (paths, sizes, mtimes, directories too) is taken before and after.

Prints one row per case (exit status, what went wrong, the first line said), every failed
case with its output (and, where the fix is due from files another helper is changing, whose),
and the totals: tracebacks, options ignored in silence (exit 0 where a refusal is due), other
exit statuses (a case still working after --timeout is killed: 124), messages that miss what
they must name (the kind given, the option refused), refusals that are not one line, and
refusals that created, changed or removed a path; apart, the refusals that made and removed a
file (a lock) on the way. Exit status 0 if no case failed.

    python benchmarks/bad_inputs.py [--only VERB] [--timeout S]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # its harness package, as the tests import it

from harness import invocations as iv  # noqa: E402
from harness.bad_inputs import CASES  # noqa: E402

TOTALS = (  # a verdict's field, its flag in a row, its total's line
    ("traceback", "T", "tracebacks"),
    ("ignored", "I", "options ignored in silence (exit 0 where a refusal is due)"),
    ("wrong_exit", "X", "other exit statuses (not 2 for a refusal, not 0 for a job)"),
    ("wrong_message", "M", "messages that miss the kind or option they must name"),
    ("not_one_line", "L", "refusals not exactly one line on stderr"),
    ("touched", "F", "refusals that created, changed or removed a path"),
)


def _undo(root: Path, touched: list[str]) -> None:
    """Remove what a case created, so the next case starts from the same tree."""
    for change in touched:
        path = root / change[1:]
        if change.startswith("+") and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif change.startswith("+") and os.path.lexists(path):
            path.unlink()
        elif not change.startswith("+"):
            print(f"    (fixtures changed by this case: {change}; later cases see it so)")


def _verbs() -> list[str]:
    """Every command of `wisconsin --help`."""
    from wisconsin.cli import cli

    return [n for n in cli.list_commands(None) if not cli.get_command(None, n).hidden]


def run_cases(cases, root: Path, paths: dict, timeout: float) -> tuple[collections.Counter, list]:
    """Each case in turn, a row each; (the counts, [(case, ran, verdict, relocked)])."""
    counts, results = collections.Counter(), []
    print(f"{len(cases)} cases; each row: exit status, flags (T traceback, I ignored in "
          "silence, X other exit, M message, L not one line, F files), the first line said")  # fmt: skip
    for case in cases:
        if case.needs == "root" and "full" not in paths:
            counts["skipped"] += 1
            print(f"  skip  {case.args}  (needs root: a tmpfs)")
            continue
        before = iv.tree(root)
        ran = iv.cli(case.argv(paths), real=True, cwd=root, timeout=timeout)
        touched, relocked = iv.changes(before, iv.tree(root))
        verdict = iv.judge(case, ran, touched, paths)
        results.append((case, ran, verdict, relocked if case.refused else []))
        counts["cases"] += 1
        counts["refusals"] += case.refused
        for key, _, _ in TOTALS:
            counts[key] += bool(getattr(verdict, key))
        flags = "".join(flag if getattr(verdict, key) else "." for key, flag, _ in TOTALS)
        print(f"  {ran.code:>3}  {flags}  {case.args}")
        print(f"            {iv.first_line(ran).replace(str(root), '$T')[:200]}")
        _undo(root, touched)
    return counts, results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only the cases of this verb (e.g. report)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a case may take")
    args = ap.parse_args()
    cases = [c for c in CASES if args.only in (None, c.verb)]
    with tempfile.TemporaryDirectory(prefix="wisconsin-bad-inputs-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        paths = iv.build(root, real=True)
        print(f"fixtures built in {time.perf_counter() - t0:.0f} s under $T ({root}): "
              + ", ".join(f"{{{k}}}" for k in sorted(paths)))  # fmt: skip
        with iv.full_disk(root) as full:
            if full is not None:
                paths["full"] = full
            counts, results = run_cases(cases, root, paths, args.timeout)

    def shown(text: str) -> str:
        return text.replace(str(root), "$T")

    print()
    failed = [(c, r, v) for c, r, v, _ in results if not v.ok]
    for case, ran, verdict in failed:
        must = "be refused" if case.refused else "succeed"
        print(f"FAILED: wisconsin {case.args}  ({case.why}; must {must} naming {list(case.says)}"
              + (f"; fix due from {case.pending}" if case.pending else "") + ")")  # fmt: skip
        for line in (ran.stdout + ran.stderr).strip().splitlines()[-6:]:
            print(f"    {shown(line)[:240]}")
        if verdict.touched:
            print(f"    touched: {shown(', '.join(verdict.touched))[:2000]}")
    relocked = [(c, dirs) for c, _, _, dirs in results if dirs]
    if relocked:
        print("\nRefusals after a file was made and removed again (a lock taken and released: "
              "nothing left, a directory's mtime moved):")  # fmt: skip
        for case, dirs in relocked:
            print(f"    wisconsin {case.args}  ({', '.join(dirs)})")
    verbs = _verbs()
    print()
    print(f"cases: {counts['cases']} run ({counts['refusals']} must be refused, "
          f"{counts['cases'] - counts['refusals']} must succeed), {counts['skipped']} skipped; "
          + ", ".join(f"{n} {why}" for why, n in collections.Counter(c.why for c in cases).most_common()))  # fmt: skip
    print(f"verbs of `wisconsin --help` with cases: {sum(any(c.verb == v for c in cases) for v in verbs)}"
          f" of {len(verbs)} ({', '.join(v for v in verbs if any(c.verb == v for c in cases))})")  # fmt: skip
    for key, _, label in TOTALS:
        print(f"{counts[key]:>4}  {label}")
    pending = sum(1 for c, _, _ in failed if c.pending)
    print(f"{len(failed):>4}  cases failed, {pending} of them with the fix due from another "
          "helper's files (named above)")  # fmt: skip
    print(f"{len(relocked):>4}  refusals that took a lock and released it (not counted above)")
    return 1 if failed else 0


if __name__ == "__main__":
    with recorded("bad-inputs"):
        sys.exit(main())
