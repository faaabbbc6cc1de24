"""Facts, not prose (issue 44): what a later reader checks is a field of the run file. A run
file with every note removed audits and resumes exactly as the original, in both workloads;
an older file's sentences are read into those fields once, when it is migrated, and the
fields render the very same words."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from wisconsin.measure import runner
from wisconsin.runfiles import facts, runfile
from wisconsin.workloads.debitcredit import audit as dc_audit
from wisconsin.workloads.debitcredit import runfile as dcfile
from wisconsin.workloads.wisconsin.audit import audit, audit_file
from wisconsin.workloads.wisconsin.queries import CATALOG

FIXTURES = Path(__file__).parent / "fixtures"
WISCONSIN_FILES = [
    FIXTURES / "audit_tiny_sn.json",
    FIXTURES / "run_real_cold.json",
    FIXTURES / "run_a.json",
    FIXTURES / "mainline" / "wisconsin-run.json",
]
DEBITCREDIT_FILES = [FIXTURES / "debitcredit_run.json", FIXTURES / "mainline/debitcredit-run.json"]
# What the runner said in notes before schema 3 (audit_tiny_sn's, and the mainline run's)
OLD_NOTES = [
    "no single-thread baseline: F1 is not generated in /tmp/golden-work/d3 (generate --kind F "
    "--partitions 1)",
    "DuckDB memory_limit: 60% of each host's RAM split among the open table's instances on it "
    "(config.memory_limit is only the fallback)",
    "transport: timed statements went as pinned Dask tasks (--transport dask)",
    "baseline: the F1 measurements themselves (shared-memory, threads = P = 1)",
]


def _verdicts(rules) -> list[tuple]:
    return [(r.name, r.ok, r.detail, r.figures, r.incomplete) for r in rules]


def _current(path: Path, tmp_path: Path, name: str, notes) -> Path:
    """path as a file of this schema (migrated, saved), its notes replaced by notes."""
    data = runfile.to_dict(runfile.load(path))
    data["notes"] = list(notes)
    if data.get("calibration"):
        data["calibration"]["notes"] = list(notes)
    out = tmp_path / name
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("path", WISCONSIN_FILES, ids=lambda p: p.name)
def test_a_wisconsin_run_file_without_notes_audits_as_the_original(path, tmp_path):
    with_notes = _current(path, tmp_path, "noted.json", OLD_NOTES + ["resumed at ..."])
    without = _current(path, tmp_path, "bare.json", [])
    assert runfile.load(with_notes).notes and not runfile.load(without).notes
    assert _verdicts(audit_file(without)) == _verdicts(audit_file(with_notes))
    assert _verdicts(audit_file(without)) == _verdicts(audit_file(path))


def test_the_real_run_without_notes_audits_as_the_original(run_path, tmp_path):
    data = json.loads(run_path.read_text())
    data["notes"], data["calibration"]["notes"] = [], []
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(data))
    assert _verdicts(audit_file(bare)) == _verdicts(audit_file(run_path))


@pytest.mark.parametrize("path", [FIXTURES / "audit_tiny_sn.json", FIXTURES / "run_v2.json"])
def test_a_wisconsin_run_file_without_notes_resumes_with_the_same_options(path, tmp_path):
    """The options (and the engine) a resume derives from the file: its fields only."""

    def options(file: Path):
        data = json.loads(file.read_text())
        data["status"] = "incomplete"
        file.write_text(json.dumps(data))
        partial = runfile.load(file)
        opts = runner.resumed_options(partial, file, CATALOG, 60.0, (None, None, None))
        return dataclasses.replace(opts, out="")  # where it is written: the file's own name

    noted = options(_current(path, tmp_path, "noted.json", OLD_NOTES))
    assert options(_current(path, tmp_path, "bare.json", [])) == noted
    assert noted.engine.transport == "direct" and noted.baseline  # the fields', not the notes'


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """An incomplete shared-memory run (interrupted in round 1) and its tables."""
    from wisconsin.builds import build_tables
    from wisconsin.store import TableSpec

    where = tmp_path_factory.mktemp("interrupted")
    build_tables(where / "data", [TableSpec("F", 3000, p, 5) for p in (1, 2)], jobs=2)
    seen = []

    def progress(label, done, total):
        seen.append(label)
        if "round 1" in label and len([s for s in seen if "round 1" in s]) == 3:
            raise KeyboardInterrupt

    opts = runner.RunOptions(
        catalog=CATALOG,
        data_dir=str(where / "data"),
        mode="shared-memory",
        kinds=("F",),
        queries=("scan", "average"),
        out=str(where / "run.json"),
        repeat=2,
        order_seed=3,
        blocks=1,
    )
    with pytest.raises(KeyboardInterrupt):
        runner.run(opts, progress=progress)
    partial = runfile.load(where / "run.json")
    assert partial.status == "incomplete" and partial.stop.rule == facts.StopRule.INTERRUPTED
    return where / "run.json"


def test_an_incomplete_run_without_notes_resumes_exactly_as_the_original(interrupted, tmp_path):
    results = {}
    for name, notes in (("noted", OLD_NOTES), ("bare", [])):
        copy = tmp_path / name / "run.json"
        copy.parent.mkdir()
        data = json.loads(Path(shutil.copy(interrupted, copy)).read_text())
        data["notes"] = list(notes)
        copy.write_text(json.dumps(data))
        results[name], _ = runner.resume(copy, catalog=CATALOG)
    noted, bare = results["noted"], results["bare"]
    assert noted.status == bare.status == "complete"
    assert bare.config == noted.config  # the fields the notes once stated, not the notes
    assert bare.config.single_thread == "own" and bare.config.transport_used == ""
    # the same rules judge both (their verdicts on times measured twice may differ)
    assert [r.name for r in audit(bare)] == [r.name for r in audit(noted)]


@pytest.mark.parametrize("path", DEBITCREDIT_FILES, ids=lambda p: p.name)
def test_a_debitcredit_run_file_without_notes_audits_and_resumes_as_the_original(path, tmp_path):
    data = json.loads(path.read_text())
    assert data["notes"]
    original = dc_audit.audit_file(path)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(dict(data, notes=[])))
    assert _verdicts(dc_audit.audit_file(bare)) == _verdicts(original)
    # `bench --resume` continues a progress file from its config and results
    saved = {}
    for name, notes in (("noted", data["notes"]), ("bare", [])):
        run = dcfile.load(path)
        final = tmp_path / name / "debitcredit.json"
        partial = dcfile.save_partial(dcfile.DebitCreditRun(**{**vars(run), "notes": notes}), final)
        saved[name] = dcfile.load_partial(partial)
    assert saved["bare"].config == saved["noted"].config
    assert saved["bare"].results == saved["noted"].results


# --------------------------------------------------------------------------- the words


@pytest.mark.parametrize(
    "said",
    [
        "max reps: 5 rounds (--max-reps 5)",
        "max reps: 1 rounds (--repeat 1)",
        "time budget: 3 rounds in 40 s; another (~8 s) would pass --time-budget 45 s "
        "(fewer than --min-reps 5)",
        "min reps: 5 rounds (--min-reps 5); " + facts.HEADLINE_NONE,
        "target CI met: all 6 headline ratios within +-10% after 12 rounds",
        "interrupted (^C)",
        "failed: worker part1 lost",
        "max reps (5) reached",  # an older runner's words: kept as they were
    ],
)
def test_an_old_stop_reason_is_read_into_a_stop_that_says_the_same(said, tmp_path):
    data = json.loads((FIXTURES / "audit_tiny_sn.json").read_text())
    data["stop_reason"] = said
    data["config"].update(min_reps=5, max_reps=5, target_ci=0.1, time_budget_s=45.0)
    run = runfile.from_dict(data)
    assert run.stop_reason == said
    assert (run.stop.rule == "worded") == (said == "max reps (5) reached")
    again = runfile.from_dict(json.loads(json.dumps(runfile.to_dict(run))))
    assert again.stop == run.stop and again.schema_version == 4


def test_the_stop_rule_records_a_stop_that_renders_its_reason():
    from wisconsin.analysis import schedule

    settings = dict(min_reps=2, max_reps=4, target_ci=0.1, elapsed_s=50.0, next_round_s=9.0)
    stop = schedule.stop_rule([], 1, time_budget_s=55.0, **settings)
    assert (stop.rule, stop.rounds, stop.limit, stop.short_of) == ("time-budget", 1, 55.0, 2)
    assert facts.stop_text(stop) == (
        "time budget: 1 rounds in 50 s; another (~9 s) would pass --time-budget 55 s (fewer "
        "than --min-reps 2)"
    )
    assert schedule.stop_rule([], 1, time_budget_s=None, **settings) is None
    assert schedule.stop_reason([], 4, time_budget_s=None, **settings, max_flag="--repeat") == (
        "max reps: 4 rounds (--repeat 4)"
    )


def test_the_durability_words_of_every_runner_are_one_protocol_code_each():
    codes = {facts.DURABILITY_TEXT[d]: d for d in facts.Durability}
    assert len(codes) == len(facts.Durability) == 3
    for path in WISCONSIN_FILES:
        said = json.loads(path.read_text())["config"]["durability"]
        assert runfile.load(path).config.durability == codes[said]
    assert runner.DURABILITY == facts.Durability.WAL_DECISION_UNIT
    assert facts.durability_text("WAL off") == "WAL off"  # no protocol: as it was written
