"""The run files' schema (issue 43): every number typed with its range, a bad field one line in
every verb, an incomplete DebitCredit run passing nothing, and what is not a run file named."""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from wisconsin.cli import cli
from wisconsin.runfiles import abfile, runfile
from wisconsin.workloads.debitcredit import runfile as dcfile

FIXTURES = Path(__file__).parent / "fixtures"
WISCONSIN = FIXTURES / "audit_tiny_sn.json"
DEBITCREDIT = FIXTURES / "debitcredit_run.json"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _dataclasses(tp, seen=None) -> set:
    """tp and every dataclass its fields hold."""
    seen = set() if seen is None else seen
    if dataclasses.is_dataclass(tp) and tp not in seen:
        seen.add(tp)
        for hint in typing.get_type_hints(tp, include_extras=True).values():
            for arg in _args(hint):
                _dataclasses(arg, seen)
    return seen


def _args(hint):
    yield hint
    for a in typing.get_args(hint):
        yield from _args(a)


@pytest.mark.parametrize("root", [runfile.Run, dcfile.DebitCreditRun, abfile._Checked])
def test_every_number_of_a_run_file_is_declared_with_its_range(root):
    # a bare float or int accepts NaN, Infinity or 10**400: every number names its range
    bare = []
    for tp in _dataclasses(root):
        for name, hint in typing.get_type_hints(tp, include_extras=True).items():
            for arg in _args(hint):
                if arg in (int, float) and not any(
                    typing.get_origin(h) is typing.Annotated and typing.get_args(h)[0] is arg
                    for h in _args(hint)
                ):
                    bare.append(f"{tp.__name__}.{name}")
    assert bare == []


def _edited(tmp_path, base: Path, edit, name="bad.json") -> Path:
    data = json.loads(base.read_text())
    edit(data)
    out = tmp_path / name
    out.write_text(json.dumps(data))  # NaN and Infinity as Python writes them
    return out


def _rep(d, label="F2/scan", i=0):
    table, query = label.split("/")
    (m,) = [m for m in d["measurements"] if (m["table"], m["query"]) == (table, query)]
    return m["repetitions"][i]


WISCONSIN_EDITS = [
    (lambda d: d["environment"].update(usable_cores=0), "environment.usable_cores is 0, not an integer >= 1"),
    (lambda d: d["environment"].update(usable_cores=-1), "environment.usable_cores is -1"),
    (lambda d: _rep(d).update(wall_s=10**400), "repetitions[0].wall_s is 1000"),
    (lambda d: _rep(d).update(wall_s=math.nan), "wall_s is NaN, not a number > 0.0"),
    (lambda d: _rep(d).update(wall_s=math.inf), "wall_s is Infinity"),
    (lambda d: d["calibration"].update(storage_read_bytes_per_s=-math.inf), "storage_read_bytes_per_s is -Infinity"),
    (lambda d: d["measurements"][0].update(partitions=0), "measurements[0].partitions is 0"),
    (lambda d: d.update(finished_utc="yesterday"), 'finished_utc is "yesterday", not a UTC time'),
    (lambda d: d.update(status="done"), 'status is "done", not one of the values this field takes'),
    (lambda d: d.pop("environment"), "environment is missing"),
]  # fmt: skip


@pytest.mark.parametrize("edit, said", WISCONSIN_EDITS)
@pytest.mark.parametrize("verb", ["audit", "report", "compare", "plot", "run --resume"])
def test_a_bad_wisconsin_field_is_one_line_in_every_verb(tmp_path, verb, edit, said):
    bad = _edited(tmp_path, WISCONSIN, edit)
    args = {"compare": ["compare", "--force", FIXTURES / "run_real_cold.json", bad]}.get(
        verb, [*verb.split(), bad]
    )
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("Error: ") and said in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def _step(d, p=0, s=0):
    return d["results"][p]["steps"][s]


DEBITCREDIT_EDITS = [
    (lambda d: d.update(results=True), "results is true, not a list"),
    (lambda d: d.update(results=None), "results is null, not a list"),
    (lambda d: d.update(results={}), "results is {}, not a list"),
    (lambda d: d["results"][0].update(partitions=0), "results[0].partitions is 0, not an integer >= 1"),
    (lambda d: _step(d).update(throughput_tps=math.nan), "throughput_tps is NaN"),
    (lambda d: _step(d).update(throughput_tps=1e308), "throughput_tps is 1e+308, not in_window / duration_s = 37"),
    (lambda d: _step(d).update(duration_s=10**400), "duration_s is 1000"),
    (lambda d: d["config"].update(rule_limit_s=1e308), "config.rule_limit_s is 1e+308, not a number <= 600"),
    (lambda d: d["environment"].update(usable_cores=0), "environment.usable_cores is 0"),
    (lambda d: d["config"].update(partitions=[]), "config.partitions is [], not a list of length >= 1"),
]  # fmt: skip


@pytest.mark.parametrize("edit, said", DEBITCREDIT_EDITS)
@pytest.mark.parametrize("verb", ["audit", "report", "compare", "plot"])
def test_a_bad_debitcredit_field_is_one_line_in_every_verb(tmp_path, verb, edit, said):
    bad = _edited(tmp_path, DEBITCREDIT, edit, "debitcredit-bad.json")
    # compare's A: another run (its own start), else the edits of unmeasured fields are a copy
    other = _edited(tmp_path, DEBITCREDIT, lambda d: d.update(started_utc="2000-01-01T00:00:00Z"))
    args = [verb, *([other] if verb == "compare" else []), bad]
    if verb == "plot":
        args.insert(1, "--force")
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("Error: ") and said in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_a_debitcredit_run_without_results_passes_nothing(tmp_path):
    bad = _edited(tmp_path, DEBITCREDIT, lambda d: d.update(results=[]))
    r = invoke("audit", bad)
    assert r.exit_code == 1
    assert (
        "INCOMPLETE  run complete: incomplete: P = 1, 2 of --partitions 1,2 were not measured"
        in r.output
    )
    assert "PASS" not in r.output and "an incomplete run passes nothing" in r.output
    r = invoke("report", bad)
    assert (
        r.exit_code == 0
        and "incomplete: P = 1, 2 of --partitions 1,2 were not measured" in r.output
    )


def test_a_bench_stopped_after_its_first_p_is_incomplete(tmp_path):
    # what a bench killed after P = 1 of --partitions 1,2 leaves: its .json.partial
    partial = _edited(
        tmp_path, DEBITCREDIT, lambda d: d.update(results=d["results"][:1]),
        "debitcredit-x.json.partial",
    )  # fmt: skip
    r = invoke("audit", partial)
    assert r.exit_code == 1 and "PASS" not in r.output
    assert "incomplete: P = 2 of --partitions 1,2 was not measured" in r.output
    r = invoke("report", partial)
    assert r.output.splitlines()[2] == "incomplete: P = 2 of --partitions 1,2 was not measured"
    # a window short of the schedule: its P is there, its last open step is not
    short = _edited(tmp_path, DEBITCREDIT, lambda d: d["results"][1]["steps"].pop())
    r = invoke("audit", short)
    assert r.exit_code == 1 and "P = 2 repeat 1: 1 closed and 4 open windows" in r.output


def test_the_untouched_files_are_valid_and_complete():
    assert invoke("audit", DEBITCREDIT).output.startswith("PASS  run complete: every P")
    assert runfile.load(WISCONSIN).environment.usable_cores == 2


def test_a_journal_given_to_resume_says_what_to_give(tmp_path):
    data = json.loads(WISCONSIN.read_text())
    journal = tmp_path / "run.json.journal"
    journal.write_text(json.dumps({"t": "base", "run": data}) + "\n{}\n")
    r = invoke("run", "--resume", journal)
    assert r.exit_code == 2 and "schema version" not in r.output
    assert "a run's journal, not a run file" in r.output
    assert f"`wisconsin run --resume {tmp_path / 'run.json'}`" in r.output
    partial = tmp_path / "debitcredit-1.json.partial"
    partial.write_text(DEBITCREDIT.read_text())
    r = invoke("run", "--resume", partial)
    assert r.exit_code == 2 and "a 'debitcredit' run file, not a Wisconsin one" in r.output
    assert f"bench --workload debitcredit --resume {partial}" in r.output
