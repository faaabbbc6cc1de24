"""Audit rules that re-derive what a run file states instead of trusting it (issue 43), each
on an edit of a real run just past its threshold."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from wisconsin.analysis import bound as bnd
from wisconsin.cli import cli
from wisconsin.runfiles import runfile
from wisconsin.workloads.debitcredit.workload import audit_file as dc_audit_file
from wisconsin.workloads.wisconsin.audit import audit
from wisconsin.workloads.wisconsin.rules_derived import REP_BEAT_MAX

FIXTURES = Path(__file__).parent / "fixtures"
BASE = json.loads((FIXTURES / "audit_tiny_sn.json").read_text())  # F1, F2 cold, 5 rounds
DEBITCREDIT = json.loads((FIXTURES / "debitcredit_run.json").read_text())


def _m(d, label):
    table, query = label.split("/")
    (m,) = [m for m in d["measurements"] if (m["table"], m["query"]) == (table, query)]
    return m


def _rules(d) -> dict:
    return {r.name: r for r in audit(runfile.from_dict(d))}


def _faster(rep: dict, factor: float) -> None:
    """One repetition made `factor` times faster, wall and engine times together (its
    recorded engine share stays the share of its times)."""
    rep["wall_s"] /= factor
    for s in rep["partitions"]:
        s["engine_s"] /= factor
        s["cpu_s"] /= factor


def test_one_repetition_ten_times_faster_fails_the_audit(tmp_path):
    d = copy.deepcopy(BASE)
    _faster(_m(d, "F2/scan")["repetitions"][1], 10)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(d))
    r = CliRunner().invoke(cli, ["audit", str(path)])
    assert r.exit_code == 1
    assert "FAIL  times within physics: F2/scan rep" in r.output
    assert "(one repetition at most 3x faster allowed)" in r.output
    # the untouched run passes it: the edit is what fails
    assert _rules(BASE)["times within physics"].ok


@pytest.mark.parametrize("margin, ok", [(1.02, True), (0.98, False)])
def test_each_repetition_is_held_to_the_bound_just_past_its_threshold(margin, ok):
    d = copy.deepcopy(BASE)
    m = _m(d, "F2/scan")
    bound, _ = bnd.point_bound(
        runfile.from_dict(BASE), [runfile.from_dict(BASE).measurement("F2", "scan")]
    )
    fastest = min(m["repetitions"], key=lambda r: r["wall_s"])  # the median stays
    _faster(fastest, fastest["wall_s"] / (bound.time_s / REP_BEAT_MAX * margin))
    rule = _rules(d)["times within physics"]
    assert rule.ok is ok, rule.detail


def test_usable_cores_that_disagree_with_the_recorded_ones_fail_engine_share():
    d = copy.deepcopy(BASE)
    d["environment"]["usable_cores"] = 1  # every P = 2 point would be "oversubscribed"
    rule = _rules(d)["engine share"]
    assert not rule.ok and rule.detail == "usable cores 1 disagree with the calibration's 2"
    d["environment"]["usable_cores"] = d["calibration"]["cores"] = 3  # edited together
    rule = _rules(d)["engine share"]
    assert not rule.ok and rule.detail == "usable cores 3 exceed the host's 2 (topology)"
    d["environment"]["usable_cores"] = d["calibration"]["cores"] = 2
    assert "disagree" not in _rules(d)["engine share"].detail


def test_an_execution_without_its_dispatch_time_is_a_gap_in_the_timeline():
    d = copy.deepcopy(BASE)
    _m(d, "F1/scan")["repetitions"][2]["dispatched_unix"] = None
    rule = _rules(d)["times within physics"]
    assert not rule.ok and "F1/scan rep 3: no dispatch time" in rule.detail


def _dc_rules(tmp_path, edit) -> dict:
    d = copy.deepcopy(DEBITCREDIT)
    edit(d)
    path = tmp_path / "dc.json"
    path.write_text(json.dumps(d))
    return {r.name: r for r in dc_audit_file(path)}


def _independent(d, i, old, new):
    rec = d["results"][1]["audit"]
    rec["independent"][i] = rec["independent"][i].replace(old, new)


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda d: _independent(d, 1, "history 11375401", "history 11375402"), "its sums differ"),
        (lambda d: _independent(d, 2, "history rows: 189", "history rows: 188"), "it counted 188 history rows (14 distributed), the audit 189 (14)"),
        (lambda d: _independent(d, 2, "missing halves: 0", "missing halves: 1"), "missing halves: 1; orphan halves: 0"),
        (lambda d: _independent(d, 0, "files: 2", "files: 1"), "it read 1 partition files, not 2"),
        (lambda d: d["results"][1]["audit"].update(independent=[]), "the recorded report does not say its files, its sums, its rows"),
        (lambda d: d["results"][1]["audit"].update(independent_ok=False), "its recorded verdict (FAILED) says otherwise"),
    ],
)  # fmt: skip
def test_the_independent_check_is_read_not_trusted(tmp_path, edit, said):
    assert _dc_rules(tmp_path, lambda d: None)["P=2 independent check"].ok
    rule = _dc_rules(tmp_path, edit)["P=2 independent check"]
    assert not rule.ok and said in rule.detail, rule.detail


def test_durability_is_the_bench_s_word_for_word(tmp_path):
    rule = _dc_rules(tmp_path, lambda d: d["config"].update(durability="fsync, honest"))
    assert not rule["durability stated"].ok
    assert (
        rule["durability stated"].detail == "not the setting this tool runs with: 'fsync, honest'"
    )


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s["memory_bytes"][0].clear(),  # a partition's series emptied
        lambda s: s["memory_bytes"].pop(),  # a partition's series gone
        lambda s: s["temp_bytes"][1].pop(),  # spill sampled apart from memory
    ],
)
def test_engine_memory_wants_one_series_per_partition(tmp_path, edit):
    rules = _dc_rules(tmp_path, lambda d: edit(d["results"][1]["steps"][0]))
    rule = rules["P=2 engine memory and spill"]
    assert not rule.ok and "not one non-empty per partition" in rule.detail, rule.detail


def test_a_dispatch_time_dropped_from_the_calibration_fails():
    d = copy.deepcopy(BASE)
    d["calibration"]["dispatch_s"] = [e for e in d["calibration"]["dispatch_s"] if e[0] != 2]
    rule = _rules(d)["times within physics"]
    assert not rule.ok and "P=2: no calibration dispatch time" in rule.detail, rule.detail
