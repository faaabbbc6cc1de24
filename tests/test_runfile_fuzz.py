"""Run files with one field mutated, through audit, report, compare and run --resume (issue 43):
no traceback, and no audit passing what it should fail. A bounded budget here; every field
of both files: benchmarks/runfile_fuzz.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import runfile_fuzz as fz

FIXTURES = Path(__file__).parent / "fixtures"
BASES = {
    "wisconsin": FIXTURES / "audit_tiny_sn.json",  # a real shared-nothing run, 11 of 12 pass
    "debitcredit": FIXTURES / "debitcredit_run.json",  # a real bench, P = 1, 2
}
EXAMPLES = 200  # per workload: about 12 s each on 2 cores


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Per workload: (its data, its paths, its untouched audit's rules, compare's A side)."""
    work = tmp_path_factory.mktemp("fuzz")
    runner = CliRunner()
    out = {}
    for name, path in BASES.items():
        data = json.loads(path.read_text())
        other = work / f"{name}-other.json"
        other.write_text(json.dumps(dict(data, started_utc="2000-01-01T00:00:00Z")))
        audit = fz.run_verbs(runner, path, other, ("audit",))["audit"]
        rules = fz.rules_of(audit.output)
        assert rules and any(ok for ok, _ in rules.values()), audit.output
        out[name] = (data, fz.paths(data), rules, other)
    return out


def _fuzz(bases, tmp_path_factory, workload: str):
    data, paths, base_rules, other = bases[workload]
    target = tmp_path_factory.mktemp("case") / "mutated.json"
    verdicts: list[tuple[str, str, str]] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same cases on every run: a failure here is reproducible
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )
    @given(path=st.sampled_from(paths), name=st.sampled_from(fz.NAMES))
    def case(path, name):
        mutated = fz.mutate(data, path, name)
        if mutated is None:
            return
        target.write_text(fz.dump(mutated))
        out = fz.run_verbs(CliRunner(), target, other)
        where = f"{fz.show(path)} = {name}"
        for o in out.values():
            assert not o.traceback, f"{o.verb} {where}: {o.traceback}"
            if o.exit_code == 2:  # a refusal is one line
                assert len(o.output.strip().splitlines()) == 1, (o.verb, where, o.output)
        verdicts.append((fz.show(path), name, fz.verdict(out["audit"])))
        saw = fz.passes_what_it_should_fail(base_rules, fz.rules_of(out["audit"].output))
        assert not saw, f"{where}: the audit passes it, seen by {saw}"

    case()
    return verdicts


@pytest.mark.parametrize("workload", sorted(BASES))
def test_a_mutated_run_file_crashes_no_verb_and_passes_no_rule_it_reached(
    bases, tmp_path_factory, workload
):
    verdicts = _fuzz(bases, tmp_path_factory, workload)
    kinds = {v for _, _, v in verdicts}
    # the budget reached files refused by the schema and files the rules judged
    assert len(verdicts) >= EXAMPLES // 2 and {"refused", "FAIL"} <= kinds, verdicts[:5]
