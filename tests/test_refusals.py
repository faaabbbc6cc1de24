"""Every refusal among the bad inputs of tests/harness/bad_inputs.py (issue 45), in this
process through the CLI's entry point: exit 2, one line on stderr, no traceback, the line
names what it must (the kind given, the option refused), and the scratch directory's tree
is as it was (paths, file sizes and mtimes: nothing created, changed or removed).
benchmarks/bad_inputs.py runs the same list as subprocesses."""

from __future__ import annotations

import pytest

from harness import invocations as iv
from harness.bad_inputs import CASES, Case


def _param(case: Case):
    marks = []
    if case.pending:  # strict: the day it is fixed, the mark must go
        marks.append(pytest.mark.xfail(strict=True, run=not case.long, reason=case.pending))
    return pytest.param(case, id=case.args, marks=marks)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """(root, paths): every kind of thing a verb may be given, built once per process."""
    root = tmp_path_factory.mktemp("bad-inputs")
    paths = iv.build(root)
    with iv.full_disk(root) as full:
        if full is not None:
            paths["full"] = full
        yield root, paths


@pytest.mark.parametrize("case", [_param(c) for c in CASES if c.refused])
def test_refused_in_one_line_leaving_the_tree_as_it_was(scratch, case):
    root, paths = scratch
    if case.needs == "root" and "full" not in paths:
        pytest.skip("a full disk is a tmpfs, which needs root to mount")
    before = iv.tree(root)
    ran = iv.cli(case.argv(paths), real=False, cwd=root)
    touched, _ = iv.changes(before, iv.tree(root))
    verdict = iv.judge(case, ran, touched, paths)
    said = ran.stdout + ran.stderr
    assert not verdict.traceback and ran.code == 2, said
    assert not verdict.not_one_line and ran.stderr.startswith("Error: "), said
    assert not verdict.wrong_message, f"{said!r} does not name all of {case.says}"
    assert not touched, f"refused, yet: {touched}"


@pytest.mark.parametrize(
    "verb, what",
    [(v, w) for v in ("info", "repair", "export") for w in ("docs", "dir", "wrun")]
    + [("export", "dcdb")],  # info and repair take a DebitCredit database
)
def test_what_is_no_table_is_refused_before_any_lock_file_is_written(scratch, verb, what):
    """issue 45: `info docs` wrote a lock file into docs/ (and beside a run file, into its
    directory): refused first, no directory's mtime moves."""
    root, paths = scratch
    args = [verb, str(paths[what])] + (["--out", str(paths["new"])] if verb == "export" else [])
    before = iv.tree(root)
    ran = iv.cli(args, real=False, cwd=root)
    assert ran.code == 2, ran.stdout + ran.stderr
    assert iv.changes(before, iv.tree(root)) == ([], [])
