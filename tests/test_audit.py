import dataclasses
import json
import re

import pytest
from click.testing import CliRunner

from wisconsin.cli import cli
from wisconsin.runfiles import runfile
from wisconsin.workloads.wisconsin.audit import audit, audit_file


def _rules(run):
    return {r.name: r for r in audit(run)}


def _edit(run_path, tmp_path, fn):
    data = json.loads(run_path.read_text())
    fn(data)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(data))
    return out


def _cli(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_real_cold_run_passes_its_evidence_rules(run_path):
    rules = _rules(runfile.load(run_path))
    for name in (
        "run complete",
        "answers verified",
        "full scan proven",
        "cache state proven",
        "durability on",
        "repetitions interleaved",
        "enough repetitions",
        "single-thread baseline",
    ):
        assert rules[name].ok, rules[name]
    # 3000-row tables take well under a millisecond a query: the share rule sees it
    assert "engine share" in rules


def test_a_run_edited_to_claim_cold_with_zero_bytes_read_fails(run_path, tmp_path):
    def zero(data):
        for m in data["measurements"]:
            for r in m["repetitions"]:
                for s in r["partitions"]:
                    s["bytes_read"] = 0

    edited = _edit(run_path, tmp_path, zero)
    rules = {r.name: r for r in audit_file(edited)}
    assert not rules["cache state proven"].ok
    detail = rules["cache state proven"].detail
    assert "read nothing from storage" in detail or "read 0 of" in detail
    result = _cli("audit", str(edited))
    assert result.exit_code == 1
    assert "FAIL  cache state proven" in result.output


def quick_harness(data):
    """The tiny run is harness-dominated only because its queries take microseconds: with
    overheads 1/100 of the wall time (and the calibration derived from the edited times)
    every rule passes."""
    # shared-memory: the baseline is the F1 measurements themselves, edited alike; wall
    # times kept (shorter ones could beat the run's measured bound)
    for m in (*data["measurements"], *data["baseline"]):
        for r in m["repetitions"]:
            # engine times that give a 95% share (audit recomputes it from them)
            decision = r["commit_decision_s"] or 0.0
            slowest = max(max(s["engine_s"] for s in r["partitions"]), 1e-9)
            grow = max(0.95 * r["wall_s"] - decision, 0.0) / slowest
            for s in r["partitions"]:
                s["engine_s"] *= grow
            r["engine_share"] = (slowest * grow + decision) / r["wall_s"]
            r["overhead_s"] = r["wall_s"] / 100
    _recalibrate(data)
    # no point harness-dominated now: every ratio is a headline, and the stop rule re-run
    # on the file must not meet --target-ci before the rounds the run stopped on. A run that
    # met its --target-ci there (its ratios tight on a quiet machine) would then go on: the
    # forged file stops on max reps at that round, as a run with that setting would have.
    done = data["stop"]["rounds"]
    data["config"]["target_ci"] = 1e-9
    data["config"]["max_reps"] = done
    data["stop"] = dict(data["stop"], rule="max-reps", limit=done, flag="")


def test_every_rule_passes_when_the_points_are_long_enough(run_path, tmp_path):
    result = _cli("audit", str(_edit(run_path, tmp_path, quick_harness)))
    assert result.exit_code == 0, result.output
    assert "FAIL" not in result.output and result.output.endswith("\n12 of 12 rules pass\n")


def _recalibrate(data):
    """The calibration the runner derives from the (edited) times: what a forger who kept
    the file consistent with itself would write."""
    from wisconsin.analysis.stats import median

    cal = data["calibration"]
    cal["scan_rows_per_s"] = [
        [m["query"], m["rows"] / min(r["wall_s"] for r in m["repetitions"])]
        for m in data["baseline"]
    ]
    by_p = {}
    for m in data["measurements"]:
        by_p.setdefault(m["partitions"], []).extend(r["overhead_s"] for r in m["repetitions"])
    cal["dispatch_s"] = [[p, median(v)] for p, v in sorted(by_p.items())]


@pytest.mark.parametrize(
    "rule, edit",
    [
        (
            "run complete",
            lambda d: d.update(status="incomplete", stop={"rule": "failed", "text": "x"}),
        ),
        ("durability on", lambda d: d["config"].update(durability="WAL off")),
        (
            "repetitions interleaved",
            lambda d: d["rounds"][1].update(order=sorted(d["rounds"][1]["order"])),
        ),
        (
            "full scan proven",
            lambda d: [
                s.update(projections=[["hundpct"]])
                for m in d["measurements"]
                if m["query"] == "scan"
                for r in m["repetitions"]
                for s in r["partitions"]
            ],
        ),
        (
            "answers verified",
            lambda d: d["measurements"][0]["repetitions"][0].update(verified=False),
        ),
        (
            "engine share",
            lambda d: [
                r.update(overhead_s=r["wall_s"])
                for m in d["measurements"]
                for r in m["repetitions"]
            ],
        ),
        ("enough repetitions", lambda d: d["measurements"][0].update(repetitions=[])),
        ("single-thread baseline", lambda d: d.update(baseline=[])),
    ],
)
def test_each_rule_fails_on_an_edited_file(run_path, tmp_path, rule, edit):
    from wisconsin.analysis.audit import format_rules

    got = audit_file(_edit(run_path, tmp_path, edit))
    rules = {r.name: r for r in got}
    assert rules[rule].ok is False, rules[rule]  # a verdict, not a missing one
    assert rules[rule].detail.startswith(FAILED_DETAIL[rule]), rules[rule].detail
    failed = sum(not r.ok for r in got)
    assert (
        format_rules(got)
        .splitlines()[-1]
        .startswith(f"{len(got) - failed} of {len(got)} rules pass; ")
    )


# How each failure above begins, as `wisconsin audit` prints it.
FAILED_DETAIL = {
    "run complete": "status 'incomplete': failed: x",
    "durability on": "not a setting this tool runs with: 'WAL off'",
    "repetitions interleaved": "round 1: order is not the shuffle seed",
    "full scan proven": "F1 rep 1: projections do not cover all 16 columns; F1 rep 2",
    "answers verified": "F1/scan rep 1: not verified",
    "engine share": "harness-dominated at P <= 2: F1/scan: engine share 100%",
    "enough repetitions": "fewer than 5 timed (the methodology's minimum is 5): F1/scan (0)",
    "single-thread baseline": "no single-thread baseline recorded",
}


def test_schema_1_files_fail_what_they_did_not_record():
    run = runfile.load("tests/fixtures/run_a.json")
    rules = _rules(run)
    assert not rules["cache state proven"].ok
    assert not rules["repetitions interleaved"].ok
    assert rules["durability on"].ok


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = _cli("audit", str(bad))
    assert result.exit_code == 2
    missing = _cli("audit", str(tmp_path / "none.json"))
    assert missing.exit_code == 2 and "no such run file" in missing.output


def _resident(r):
    """r as a warm repetition that found its data in memory (read nothing from storage)."""
    parts = tuple(
        dataclasses.replace(s, bytes_read=None if s.bytes_read is None else 0) for s in r.partitions
    )
    return dataclasses.replace(
        r, cold=False, partitions=parts, bytes_read=None if r.bytes_read is None else 0
    )


def test_warm_runs_claim_nothing_to_prove(run_path):
    run = runfile.load(run_path)
    cfg = dataclasses.replace(run.config, cache="warm")

    def warm(ms):
        return tuple(
            dataclasses.replace(
                m,
                cache="warm",
                repetitions=tuple(_resident(r) for r in m.repetitions),
            )
            for m in ms
        )

    ms, base = warm(run.measurements), warm(run.baseline)
    rules = _rules(dataclasses.replace(run, config=cfg, measurements=ms, baseline=base))
    assert rules["cache state proven"].ok and "warm" in rules["cache state proven"].detail


def test_report_and_plot_refuse_an_incomplete_run(run_path, tmp_path):
    edited = _edit(run_path, tmp_path, lambda d: d.update(status="incomplete", stop_reason="x"))
    for cmd in ("report", "plot"):
        result = _cli(cmd, str(edited))
        assert result.exit_code == 2 and "incomplete run" in result.output
        assert "--resume" in result.output


# --------------------------------------------------------------- interleaving (audit item 2)


def _interleaved(run_path, tmp_path, edit):
    rules = {r.name: r for r in audit_file(_edit(run_path, tmp_path, edit))}
    return rules["repetitions interleaved"]


def _lab(m):
    return f"{m['table']}/{m['query']}"


def test_rounds_must_carry_the_seeds_the_order_seed_derives(run_path, tmp_path):
    rule = _interleaved(run_path, tmp_path, lambda d: d["config"].update(order_seed=12345))
    assert not rule.ok and "is not the one order seed 12345 gives it" in rule.detail


def test_seed_shopping_fails_even_when_each_order_matches_its_seed(run_path, tmp_path):
    from wisconsin.analysis import schedule

    def shop(d):
        # every round given one chosen seed and the order that seed produces
        steps = [schedule.Step.parse(x) for x in d["rounds"][1]["order"]]
        order = [s.label for s in schedule.round_order(steps, 643)]
        for rnd in d["rounds"]:
            rnd.update(seed=643, order=order)
        for m in d["measurements"]:
            for r in m["repetitions"]:
                r["position"] = order.index(f"{m['table']}/{m['query']}")

    rule = _interleaved(run_path, tmp_path, shop)
    assert not rule.ok and "seed 643 is not the one order seed" in rule.detail


def test_repetitions_back_to_back_in_one_round_fail(run_path, tmp_path):
    def one_round(d):
        first = d["rounds"][1]
        for m in d["measurements"]:
            for r in m["repetitions"]:
                r.update(round=first["index"], position=first["order"].index(_lab(m)))

    rule = _interleaved(run_path, tmp_path, one_round)
    assert not rule.ok
    assert "also holds" in rule.detail and "a second timed repetition" in rule.detail


def test_a_duplicated_repetition_fails(run_path, tmp_path):
    def dup(d):
        m = d["measurements"][0]
        m["repetitions"].append(dict(m["repetitions"][0]))

    rule = _interleaved(run_path, tmp_path, dup)
    assert not rule.ok and "also holds" in rule.detail


@pytest.mark.parametrize("position", [999, None])  # -1: refused by the schema on load
def test_a_position_outside_its_round_fails_in_one_line(run_path, tmp_path, position):
    rule = _interleaved(
        run_path,
        tmp_path,
        lambda d: d["measurements"][0]["repetitions"][0].update(position=position),
    )
    assert not rule.ok and f"position {position} is outside round" in rule.detail


def test_a_repetition_in_the_warm_up_round_or_an_unknown_round_fails(run_path, tmp_path):
    for rnd in (0, 99):
        rule = _interleaved(
            run_path,
            tmp_path,
            lambda d, rnd=rnd: d["measurements"][0]["repetitions"][0].update(round=rnd),
        )
        assert not rule.ok and f"round {rnd} is not a recorded timed round" in rule.detail


# --------------------------------------------------------------- completeness (audit item 6)


def _complete(run_path, tmp_path, edit):
    rules = {r.name: r for r in audit_file(_edit(run_path, tmp_path, edit))}
    return rules["run complete"]


def _drop(d, label):
    d["measurements"] = [m for m in d["measurements"] if _lab(m) != label]
    for rnd in d["rounds"]:  # and the rounds re-shuffled from their own seeds
        rnd["order"] = [x for x in rnd["order"] if x != label]


def test_a_measurement_the_config_asked_for_must_be_there(run_path, tmp_path):
    rule = _complete(run_path, tmp_path, lambda d: _drop(d, "F2/select"))
    assert not rule.ok and "measurements missing F2/select" in rule.detail


def test_a_measurement_twice_or_outside_the_config_fails(run_path, tmp_path):
    rule = _complete(
        run_path, tmp_path, lambda d: d["measurements"].append(dict(d["measurements"][0]))
    )
    assert not rule.ok and "measured twice" in rule.detail
    rule = _complete(run_path, tmp_path, lambda d: d["config"].update(kinds=["F", "G"]))
    assert not rule.ok and "measurements missing G1/" in rule.detail


def test_the_baseline_must_run_every_query(run_path, tmp_path):
    rule = _complete(run_path, tmp_path, lambda d: d.update(baseline=d["baseline"][:1]))
    assert not rule.ok and "baseline missing" in rule.detail


def test_an_empty_stop_reason_is_not_recorded(run_path, tmp_path):
    rule = _complete(run_path, tmp_path, lambda d: d.update(stop=None))
    assert not rule.ok and "stop reason not recorded" in rule.detail


def test_every_execution_has_one_sample_per_partition(run_path, tmp_path):
    def drop_sample(d):
        # the shared-memory update runs one unit per partition: keep only the first's
        m = next(m for m in d["measurements"] if _lab(m) == "F2/update")
        r = m["repetitions"][0]
        r["partitions"] = r["partitions"][:1]

    rule = _complete(run_path, tmp_path, drop_sample)
    assert not rule.ok and "samples for partitions [0], table has 2" in rule.detail


def test_a_measurement_must_match_its_table(run_path, tmp_path):
    def shrink(d):
        m = next(m for m in d["measurements"] if _lab(m) == "F2/scan")
        m["rows"] = 100

    rule = _complete(run_path, tmp_path, shrink)
    assert not rule.ok and "F2/scan: 100 rows in 2 partitions, the table has 3000" in rule.detail


def test_files_from_before_the_interleaving_runner_keep_their_complete_verdict():
    for name in ("run_a.json", "run_shm.json", "run_real.json"):
        rule = _rules(runfile.load(f"tests/fixtures/{name}"))["run complete"]
        assert rule.ok and "no stopping rule" in rule.detail, (name, rule)


# --------------------------------------------------------------- durability (audit item 4)


def _durability(run_path, tmp_path, edit):
    rules = {r.name: r for r in audit_file(_edit(run_path, tmp_path, edit))}
    return rules["durability on"]


@pytest.mark.parametrize(
    "text",
    [
        "durability off: WAL disabled, no fsync on commit",
        "durability on paper only: DuckDB WAL disabled (no fsync)",
        "",
    ],
)
def test_durability_is_the_runners_exact_setting(run_path, tmp_path, text):
    rule = _durability(run_path, tmp_path, lambda d: d["config"].update(durability=text))
    assert not rule.ok
    assert ("not a setting this tool runs with" if text else "not recorded") in rule.detail


def test_the_real_run_shows_its_update_commit_decisions(run_path):
    rule = _rules(runfile.load(run_path))["durability on"]
    assert rule.ok and "word for word" in rule.detail
    assert "commit decision timed > 0 s in all" in rule.detail


@pytest.mark.parametrize("value", [0.0, None])
def test_an_update_without_a_timed_commit_decision_fails(run_path, tmp_path, value):
    def edit(d):
        m = next(m for m in d["measurements"] if m["query"] == "update")
        m["repetitions"][0]["commit_decision_s"] = value

    rule = _durability(run_path, tmp_path, edit)
    assert not rule.ok and "commit decision is not timed > 0 s" in rule.detail


# --------------------------------------------------------------- TP1 pitfall 9: settings recorded


def test_the_run_file_records_the_scan_variants_duckdb_settings(run_path):
    from wisconsin.workloads.wisconsin import queries

    run = runfile.load(run_path)
    assert run.config.scan_variant == "full-row"
    assert run.config.scan_settings == (
        ("disabled_optimizers", "statistics_propagation,filter_pushdown"),
    )
    # the settings the statement is run with are the ones recorded
    stmt = queries.statement("scan", 3000, table="t", scan_variant=run.config.scan_variant)
    assert stmt.settings == run.config.scan_settings
    assert queries.scan_settings("predicate-column") == ()
    # files written before the field load with it "not recorded"
    assert runfile.load("tests/fixtures/run_real_cold.json").config.scan_settings is None


# --------------------------------------------------------------- the methodology's claims


def test_the_methodology_names_only_what_the_code_has():
    import importlib
    import re
    from pathlib import Path

    text = Path("docs/methodology.md").read_text()
    named = re.findall(r"`(audit|runner|schedule|queries)\.(\w+)`", text)
    assert ("schedule", "round_seed") in named and ("runner", "DURABILITY") in named
    home = {
        "audit": "workloads.wisconsin.audit",
        "runner": "measure.runner",
        "schedule": "analysis.schedule",
        "queries": "workloads.wisconsin.queries",
    }
    for mod, attr in named:
        assert hasattr(importlib.import_module(f"wisconsin.{home[mod]}"), attr), f"{mod}.{attr}"
    # html.py renders audit(run); wisconsin.workloads.wisconsin.audit has no `check`
    assert "`check` when present" not in text and "`audit(run)`" in text
    assert not hasattr(importlib.import_module("wisconsin.workloads.wisconsin.audit"), "check")
    assert "config.scan_settings" in text
    assert "scan_settings" in {f.name for f in dataclasses.fields(runfile.RunConfig)}


def _measurement(data, query, partitions=2):
    return next(
        m for m in data["measurements"] if m["query"] == query and m["table"] == f"F{partitions}"
    )


# --- the engine share is recomputed from the recorded times


def test_a_real_runs_recorded_engine_shares_match_its_times(run_path):
    assert "disagrees" not in _rules(runfile.load(run_path))["engine share"].detail


@pytest.mark.parametrize(
    "forge",
    [
        # the update's share raised above 80% without changing its times
        lambda m: [r.update(engine_share=0.95) for r in m["repetitions"]],
        # the wall time cut below the engine time, the share set to match
        lambda m: [
            r.update(wall_s=r["wall_s"] / 10, engine_share=r["engine_share"] * 10)
            for r in m["repetitions"]
        ],
    ],
)
def test_an_engine_share_its_times_contradict_fails(run_path, tmp_path, forge):
    edited = _edit(run_path, tmp_path, lambda d: forge(_measurement(d, "update")))
    rule = {r.name: r for r in audit_file(edited)}["engine share"]
    assert not rule.ok and "F2/update rep 1" in rule.detail, rule


# --- the cold-read proof


def test_a_scans_reads_recorded_only_for_the_repetition_do_not_prove_cold(run_path, tmp_path):
    # only the shared-memory update records its reads for the whole repetition (the real
    # run's update passes); a full-row scan must prove its reads per partition
    def moved(d):
        r = _measurement(d, "scan")["repetitions"][1]
        for s in r["partitions"]:
            s["bytes_read"] = None
        r["bytes_read"] = 1

    rule = {r.name: r for r in audit_file(_edit(run_path, tmp_path, moved))}["cache state proven"]
    assert not rule.ok and "bytes read not recorded" in rule.detail, rule


def test_a_scan_whose_data_bytes_shrank_with_its_reads_fails(run_path, tmp_path):
    def shrunk(d):
        for s in _measurement(d, "scan")["repetitions"][1]["partitions"]:
            s["bytes_read"] = s["data_bytes"] = 4096

    rule = {r.name: r for r in audit_file(_edit(run_path, tmp_path, shrunk))}["cache state proven"]
    assert not rule.ok and "of the table's" in rule.detail, rule


def test_the_runner_refuses_a_scan_proven_cold_only_by_the_repetitions_total():
    from types import SimpleNamespace

    from wisconsin.measure.execution import ColdNotProven, check_cold
    from wisconsin.workloads.wisconsin import queries

    sample = runfile.PartitionSample(0, 1.0, 1.0, 10, None, bytes_read=None, data_bytes=10**6)
    rep = runfile.Repetition(1, True, 1.0, 0, (sample,), round=1, bytes_read=1)
    target = SimpleNamespace(manifest=SimpleNamespace(name="F1"))
    with pytest.raises(ColdNotProven, match="not measurable"):
        check_cold(target, queries.get("scan"), "full-row", rep)
    check_cold(
        target, queries.get("update"), "", rep
    )  # the shared-memory update's total is its proof


# --- enough repetitions is the methodology's minimum, not the run's own


def test_a_run_that_asked_for_one_repetition_fails_enough_repetitions(run_path, tmp_path):
    def one(d):
        d["config"].update(min_reps=1, max_reps=1, repeat=1)
        for m in d["measurements"]:
            m["repetitions"] = m["repetitions"][:1]

    rule = {r.name: r for r in audit_file(_edit(run_path, tmp_path, one))}["enough repetitions"]
    assert not rule.ok and "minimum is 5" in rule.detail and "asked for only 1" in rule.detail


def test_a_run_that_asked_for_more_repetitions_is_held_to_its_own_count(run_path):
    from wisconsin.workloads.wisconsin.audit import rule_repetitions

    run = runfile.load(run_path)
    have = min(len({r.index for r in m.repetitions}) for m in run.measurements)
    held = dataclasses.replace(run, config=dataclasses.replace(run.config, min_reps=have + 1))
    rule = rule_repetitions(held)
    assert not rule.ok and f"asked for --min-reps {have + 1}" in rule.detail
    assert rule_repetitions(run).ok and f"(>= {max(5, run.config.min_reps)})" in (
        rule_repetitions(run).detail
    )


# --- malformed evidence is a FAIL line, never a traceback


@pytest.mark.parametrize(
    "rule, forge",
    [
        (
            "repetitions interleaved",
            lambda d: _measurement(d, "scan")["repetitions"][0].update(position=999),
        ),
        ("repetitions interleaved", lambda d: d["rounds"][1]["order"].__setitem__(0, "garbage")),
    ],
)
def test_malformed_evidence_fails_its_rule_in_one_line(run_path, tmp_path, rule, forge):
    # the rule may name the defect itself or say "malformed evidence": never a traceback
    edited = _edit(run_path, tmp_path, forge)
    rules = {r.name: r for r in audit_file(edited)}
    assert not rules[rule].ok
    result = _cli("audit", str(edited))  # catch_exceptions=False: a traceback fails the test
    assert result.exit_code == 1 and f"FAIL  {rule}: " in result.output


def test_a_rule_that_cannot_read_its_evidence_fails_with_its_own_name(run_path, monkeypatch):
    from wisconsin.workloads.wisconsin import audit as wa

    def broken(run):
        return ().__getitem__(0)  # IndexError, like a position past the end of its round

    monkeypatch.setattr(wa, "RULES", (*wa.RULES[:-1], ("repetitions interleaved", broken)))
    rule = wa.audit(runfile.load(run_path))[-1]
    assert rule == wa.Rule(
        "repetitions interleaved",
        False,
        "malformed evidence (IndexError: tuple index out of range)",
    )


# --- answers are checked against each other, warm-ups whatever their index


def test_a_reindexed_warm_up_is_still_checked(run_path, tmp_path):
    def hide(d):
        w = _measurement(d, "select")["warmup"]
        w.update(index=99, verified=False)

    rules = {r.name: r for r in audit_file(_edit(run_path, tmp_path, hide))}
    assert not rules["answers verified"].ok and "rep 99" in rules["answers verified"].detail


def test_answers_disagreeing_across_tables_of_the_same_data_fail(run_path, tmp_path):
    def forged_count(d):
        m = _measurement(d, "select")
        m["expected_rows"] = 1
        for r in [m["warmup"], *m["repetitions"]]:
            r["rows"] = 1

    def forged_average(d):
        _measurement(d, "average")["repetitions"][2]["answer"] += 1.0

    for forge, what in ((forged_count, "expects 1 rows"), (forged_average, "average")):
        rule = {r.name: r for r in audit_file(_edit(run_path, tmp_path, forge))}
        assert not rule["answers verified"].ok and what in rule["answers verified"].detail


# --- a warm repetition that read its data from storage was not warm


def test_a_warm_repetition_that_read_its_data_fails(run_path):
    run = runfile.load(run_path)

    def warm(ms, read_from_disk):
        out = []
        for m in ms:
            reps = [_resident(r) for r in m.repetitions]
            if read_from_disk and m.query == "select" and m.partitions == 2:
                parts = tuple(
                    dataclasses.replace(s, bytes_read=s.data_bytes) for s in reps[0].partitions
                )
                reps[0] = dataclasses.replace(reps[0], partitions=parts)
            out.append(dataclasses.replace(m, cache="warm", repetitions=tuple(reps)))
        return tuple(out)

    cfg = dataclasses.replace(run.config, cache="warm")
    forged = dataclasses.replace(
        run,
        config=cfg,
        measurements=warm(run.measurements, True),
        baseline=warm(run.baseline, False),
    )
    rule = _rules(forged)["cache state proven"]
    assert not rule.ok and "warm, yet read" in rule.detail, rule


def test_no_timed_scan_is_no_proof_of_a_full_scan(run_path):
    """An incomplete run once audited as 'PASS full scan proven: 0 scans read every row'."""
    run = runfile.load(run_path)
    empty = dataclasses.replace(
        run,
        measurements=tuple(
            dataclasses.replace(m, repetitions=()) if m.query == "scan" else m
            for m in run.measurements
        ),
    )
    rule = _rules(empty)["full scan proven"]
    assert not rule.ok and "no timed scan recorded" in rule.detail
    dropped = dataclasses.replace(
        run, measurements=tuple(m for m in run.measurements if m.query != "scan")
    )
    rule = _rules(dropped)["full scan proven"]
    assert not rule.ok and "none is recorded" in rule.detail
    assert _rules(run)["full scan proven"].ok


def _in_blocks(run, k: int, mode: str = "shared-nothing", fresh: bool = True):
    """run's rounds put in blocks of k rounds, as the runner records them."""
    rounds = tuple(
        dataclasses.replace(
            r,
            block=(r.index - 1) // k + 1 if r.index else 1,
            fresh_workers_s=1.5 if fresh and r.index > 1 and (r.index - 1) % k == 0 else None,
        )
        for r in run.rounds
    )
    cfg = dataclasses.replace(
        run.config, mode=mode, blocks=max(1, (run.config.min_reps or 1) // k), block_rounds=k
    )
    return dataclasses.replace(run, rounds=rounds, config=cfg)


def _blocks_rule(run):
    from wisconsin.analysis.audit import rule_blocks

    return rule_blocks(run)


def test_blocks_rule_passes_what_the_runner_records_and_old_files():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
    from make_fixture_runs import make_run_v2

    run = make_run_v2(reps=4)
    legacy = _blocks_rule(run)
    assert legacy.ok and "run-to-run variation unknown" in legacy.detail
    run = dataclasses.replace(run, config=dataclasses.replace(run.config, min_reps=4))
    ok = _blocks_rule(_in_blocks(run, 2))
    assert ok.ok and ok.detail.startswith("2 block(s) of 2 round(s), fresh worker processes")


def test_blocks_rule_fails_a_round_in_the_wrong_block_or_workers_not_restarted():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
    from make_fixture_runs import make_run_v2

    run = make_run_v2(reps=4)
    run = _in_blocks(
        dataclasses.replace(run, config=dataclasses.replace(run.config, min_reps=4)), 2
    )
    moved = dataclasses.replace(
        run,
        rounds=tuple(dataclasses.replace(r, block=1) if r.index == 3 else r for r in run.rounds),
    )
    assert "round 3 in block 1, not 2" in _blocks_rule(moved).detail
    stale = dataclasses.replace(
        run,
        rounds=tuple(
            dataclasses.replace(r, fresh_workers_s=None) if r.index == 3 else r for r in run.rounds
        ),
    )
    assert "round 3 starts block 2 without fresh workers" in _blocks_rule(stale).detail
    extra = dataclasses.replace(
        run,
        rounds=tuple(
            dataclasses.replace(r, fresh_workers_s=2.0) if r.index == 2 else r for r in run.rounds
        ),
    )
    assert "round 2 restarted the workers inside block 1" in _blocks_rule(extra).detail
    # shared-memory has no workers to restart: no fresh start is owed
    assert _blocks_rule(
        _in_blocks(dataclasses.replace(run, rounds=run.rounds), 2, "shared-memory", False)
    ).ok
    wrong_k = dataclasses.replace(run, config=dataclasses.replace(run.config, block_rounds=3))
    assert not _blocks_rule(wrong_k).ok


def test_the_cold_verdict_names_the_least_a_full_row_scan_read(run_path):
    run = runfile.load(run_path)
    least = min(
        s.bytes_read / s.data_bytes
        for m in run.measurements
        if m.query == "scan" and m.variant == "full-row"
        for r in m.repetitions
        for s in r.partitions
    )
    detail = _rules(run)["cache state proven"].detail
    assert detail == (
        f"cold: every cold execution read from storage; full-row scans read >= {least:.0%} "
        "of their data"
    )


def test_harness_dominated_points_above_the_cores_are_listed_not_failed(run_path):
    from wisconsin.workloads.wisconsin.audit import rule_engine_share

    run = runfile.load(run_path)
    # every repetition's overhead as long as the query: harness-dominated everywhere
    swamped = dataclasses.replace(
        run,
        measurements=tuple(
            dataclasses.replace(
                m,
                repetitions=tuple(
                    dataclasses.replace(r, overhead_s=r.wall_s) for r in m.repetitions
                ),
            )
            for m in run.measurements
        ),
    )
    at = {P: [m for m in swamped.measurements if m.partitions == P] for P in (1, 2)}
    # a one-core run: its calibration counted the one core too (else the cores disagree)
    one_core = dataclasses.replace(
        swamped,
        environment=dataclasses.replace(swamped.environment, usable_cores=1),
        calibration=dataclasses.replace(swamped.calibration, cores=1),
    )
    rule = rule_engine_share(one_core)
    assert not rule.ok and rule.detail.startswith("harness-dominated at P <= 1: ")
    assert rule.detail.count(" overhead") == 4  # four named ...
    assert f"(+{len(at[1]) - 4})" in rule.detail  # ... and how many more
    assert rule.detail.endswith(
        f"; above 1 cores (oversubscribed, not checked): {len(at[2])} harness-dominated"
    )
    only_above = dataclasses.replace(
        one_core, measurements=tuple(m for m in one_core.measurements if m.partitions == 2)
    )
    listed = rule_engine_share(only_above)
    assert listed.ok and listed.detail.endswith(f"{len(at[2])} harness-dominated")
    two_cores = dataclasses.replace(
        swamped,
        environment=dataclasses.replace(swamped.environment, usable_cores=2),
        measurements=tuple(m for m in swamped.measurements if m.partitions == 2),
    )
    assert not rule_engine_share(two_cores).ok  # P = 2 is within 2 cores: checked


def test_each_failure_names_what_and_where(run_path, tmp_path):
    """The detail a failing rule prints says which steps and repetitions, in full."""
    data = json.loads(run_path.read_text())
    ms = data["measurements"]
    label = [f"{m['table']}/{m['query']}" for m in ms]

    def rules_of(fn):
        return {r.name: r for r in audit_file(_edit(run_path, tmp_path, fn))}

    emptied = rules_of(lambda d: [m.update(repetitions=[]) for m in d["measurements"][:2]])
    assert emptied["run complete"].ok is False
    assert f"no timed repetitions for {label[0]}, {label[1]}" in emptied["run complete"].detail
    assert f"{label[0]} (0), {label[1]} (0)" in emptied["enough repetitions"].detail

    rep = ms[0]["repetitions"][0]
    wrong = rules_of(lambda d: d["measurements"][0]["repetitions"][0].update(rows=rep["rows"] + 1))
    assert wrong["answers verified"].detail.startswith(
        f"{label[0]} rep {rep['index']}: {rep['rows'] + 1} rows, expected {ms[0]['expected_rows']}"
    )

    def undecided(d):
        for m in d["measurements"]:
            if m["query"] == "update":
                m["repetitions"][0]["commit_decision_s"] = 0.0

    assert rules_of(undecided)["durability on"].detail.startswith(
        "the update's fsynced commit decision is not timed > 0 s: "
    )
    unrecorded = rules_of(lambda d: d["config"].update(cache=""))["cache state proven"]
    assert (unrecorded.ok, unrecorded.detail) == (False, "cache state not recorded")

    def dominated(d):
        for m in d["measurements"]:
            for r in m["repetitions"]:
                r["overhead_s"] = r["wall_s"]

    share = rules_of(dominated)["engine share"]
    assert share.detail.count("; ") == 3 and share.detail.endswith(f" (+{len(ms) - 4})")

    def two_dominated(d):
        for m in d["measurements"][:2]:
            for r in m["repetitions"]:
                r["overhead_s"] = r["wall_s"]

    two = rules_of(two_dominated)["engine share"].detail
    # at most 4 named, then "(+N)": nothing else after the last one
    assert two.endswith(" overhead") or re.search(r"overhead \(\+\d+\)$", two), two
