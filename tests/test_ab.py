"""`wisconsin ab`: two configurations in one invocation, ABBA blocks, one A/B file."""

import itertools
import json

import pytest
from click.testing import CliRunner

from wisconsin import WisconsinError
from wisconsin.builds import build_tables
from wisconsin.cli import cli
from wisconsin.measure import ab as ab_mod
from wisconsin.runfiles import abfile
from wisconsin.runfiles.runfile import RunFileError
from wisconsin.store import TableSpec


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("ab") / "d"
    build_tables(d, [TableSpec("F", 2000, p, 7) for p in (1, 2)], jobs=2)
    return d


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


COMMON = ("--tables", "F", "--queries", "average", "--mode", "shared-memory", "--warmup", 0)


@pytest.fixture(scope="module")
def ab_run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("ab-runs")
    r = invoke(
        "ab", "--data", data, *COMMON, "--a", "--memory-limit 300MB",
        "--b", "--memory-limit 200MB", "--blocks", 2, "--out", out, "--quiet",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return r, out


def test_blocks_alternate_which_side_goes_first():
    assert ab_mod.block_order(3) == ["A", "B", "B", "A", "A", "B"]


def test_one_invocation_writes_one_file_with_every_block_in_abba_order(ab_run):
    r, out = ab_run
    (path,) = out.glob("*-ab.json")
    assert [p.name for p in out.iterdir()] == [path.name]  # the blocks' run files folded in
    ab = abfile.load(path)
    assert ab.order == ("A", "B", "B", "A") and len(ab.a) == len(ab.b) == 2
    # the blocks ran in the recorded order: each block, taken in that order, started no
    # earlier than the one before it ended (run files time to the second: ties allowed)
    sides = {"A": iter(ab.a), "B": iter(ab.b)}
    seq = [next(sides[s]) for s in ab.order]
    assert all(x.finished_utc <= y.started_utc for x, y in itertools.pairwise(seq))
    assert {x.config.memory_limit for x in ab.a} == {"300MB"}
    assert {x.config.memory_limit for x in ab.b} == {"200MB"}
    assert all(x.config.blocks == 1 and x.config.min_reps == 1 for x in (*ab.a, *ab.b))
    assert "Differs: memory limit: 300MB in A, 200MB in B" in r.output
    assert r.output.splitlines()[-1].startswith(f"A/B file: {path}")


def test_compare_reads_the_ab_file_alone(ab_run):
    r, out = ab_run
    (path,) = out.glob("*-ab.json")
    again = invoke("compare", path)
    assert again.exit_code == 0, again.output
    verdict = [ln for ln in again.output.splitlines() if ln.startswith("Verdict:")]
    assert verdict and verdict[0] in r.output
    js = json.loads(invoke("compare", path, "--format", "json").output)
    assert js["rows"] and all(row["blocks_a"] == row["blocks_b"] == 2 for row in js["rows"])


def test_ab_files_are_versioned_and_checked(ab_run, tmp_path):
    _, out = ab_run
    (path,) = out.glob("*-ab.json")
    data = json.loads(path.read_text())
    assert abfile.is_ab_file(path) and not abfile.is_ab_file(tmp_path / "none.json")
    for edit, message in (
        (lambda d: d.update(ab_version=2), "A/B file version 2 is not supported"),
        (lambda d: d.update(order=["A", "B", "B"]), "its order names 1 A and 2 B blocks"),
        (lambda d: d.update(b=[]), "b is [], not a list of length >= 1"),
        (lambda d: d.update(extra=1), "fields ['extra']"),
        (lambda d: d.update(order=3), "order is 3, not a list"),
        (
            lambda d: d.update(order=["A", "C"]),
            'order[1] is "C", not one of the values this field takes',
        ),
        (lambda d: d["a"][0]["environment"].update(usable_cores=0), "side A, block 1: not a "),
    ):
        bad = json.loads(json.dumps(data))
        edit(bad)
        with pytest.raises(RunFileError, match=message.replace("[", r"\[")):
            abfile.from_dict(bad)
    with pytest.raises(RunFileError, match="never overwritten"):
        abfile.save(abfile.load(path), path)
    r = invoke("compare", path.parent / "nope.json")
    assert r.exit_code == 2 and "one A/B file" in r.output


def test_what_ab_sets_itself_is_refused_in_either_side(data, tmp_path):
    for side in ("--out x", "--blocks 3", "--repeat 2", "--resume r.json"):
        r = invoke("ab", "--data", data, *COMMON, "--a", side, "--b", "", "--out", tmp_path)
        assert r.exit_code == 2 and "ab sets --" in r.output, (side, r.output)
    r = invoke("ab", "--data", data, "--a", "--mode 'x", "--b", "", "--out", tmp_path)
    assert r.exit_code == 2 and "--a: No closing quotation" in r.output
    assert not list(tmp_path.iterdir())


def test_a_stopped_ab_run_names_where_its_finished_blocks_are(data, tmp_path, monkeypatch):
    real, calls = ab_mod.run, []

    def fail_third(opts, progress=None):
        calls.append(opts.out)
        if len(calls) == 3:
            raise WisconsinError("worker lost")
        return real(opts, progress=progress)

    monkeypatch.setattr(ab_mod, "run", fail_third)
    r = invoke(
        "ab", "--data", data, *COMMON, "--a", "", "--b", "--memory-limit 200MB",
        "--blocks", 2, "--out", tmp_path, "--quiet",
    )  # fmt: skip
    assert r.exit_code == 2, r.output
    assert "A/B run stopped after 2 of 4 blocks (worker lost)" in r.output
    (blocks,) = tmp_path.glob("*-ab.blocks")
    assert sorted(p.name for p in blocks.iterdir()) == ["a-01.json", "b-01.json"]
    assert not list(tmp_path.glob("*-ab.json"))  # no A/B file for a stopped run


def test_compare_of_separate_runs_it_cannot_tell_apart_points_to_ab(ab_run, tmp_path):
    from wisconsin.runfiles import runfile

    _, out = ab_run
    (path,) = out.glob("*-ab.json")
    first, second = abfile.load(path).a  # two blocks of A: one round each, nothing differs
    a, b = runfile.save(first, tmp_path / "a.json"), runfile.save(second, tmp_path / "b.json")
    r = invoke("compare", a, b)
    assert r.exit_code == 0 and "Verdict: cannot tell apart" in r.output, r.output
    assert "measure A and B in one invocation" in r.output and "wisconsin ab --data" in r.output
    assert "measure A and B in one invocation" not in invoke("compare", path).output
