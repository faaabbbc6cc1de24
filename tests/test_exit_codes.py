"""The exit-code table (wisconsin/cli/exits.py, printed in docs/cli.md): a test per code per
command where that code can occur, through the CLI as a user meets it, on the tiny fixtures
of tests/harness/invocations.py (built once per module).

Where reaching a code for real takes minutes (a bench, a run whose audit passes), the
workload's entry point is replaced by one that returns a run file of known audit (the
repository's reference run passes every rule; tests/fixtures' tiny runs fail some): what is
tested is the CLI's side, that the exit code and the last line follow the audit."""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from harness import invocations as iv
from harness.damage import corrupt_blocks
from wisconsin import DAMAGED, FAILED, USAGE
from wisconsin.cli import cli, exits

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
PASSING = ROOT / "runs" / "20261123T130232Z-vm-shared-nothing.json"  # 12 of 12 rules pass
FAILING = FIX / "audit_tiny_sn.json"  # fails "engine share"
DC_FAILING = FIX / "debitcredit_run.json"  # fails "P=1 steady", "P=2 steady"
WORKLOAD = "wisconsin.workloads.wisconsin.workload"
DC_WORKLOAD = "wisconsin.workloads.debitcredit.workload"
COMMANDS = sorted(n for n in cli.list_commands(None) if not cli.get_command(None, n).hidden)


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    """Every kind of thing a command may be given (tests/harness/invocations.py), and a
    damaged copy of the data directory and of the DebitCredit database."""
    root = tmp_path_factory.mktemp("exit-codes")
    p = iv.build(root)
    p["bad_data"] = root / "bad-data"
    shutil.copytree(p["data"], p["bad_data"])
    corrupt_blocks(p["bad_data"] / "F2" / "part-001.duckdb", "wisconsin")
    p["bad_dcdb"] = root / "bad-dc" / p["dcdb"].name
    shutil.copytree(p["dcdb"], p["bad_dcdb"])
    part = next(p["bad_dcdb"].glob("*.duckdb"))
    part.write_bytes(part.read_bytes()[: 4096 * 3])  # cut: not the database it was
    return p


def _cli(*args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], **kw)


def _last(r) -> str:
    return [ln for ln in r.output.splitlines() if ln.strip()][-1]


def _expect(r, code: int, *said: str) -> None:
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output, r.output
    for s in said:
        assert s in r.output, (s, r.output)


# --------------------------------------------------------------------------- the table


def test_the_table_in_docs_is_the_one_the_cli_uses():
    doc = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (\w+) \| (.+) \|$", doc, flags=re.M)
    assert [(int(c), k, w) for c, k, w in rows] == [t[:3] for t in exits.TABLE]
    said = " ".join(doc.split())
    for code, kind, _, detail in exits.TABLE:
        assert f"- {code} ({kind}): {detail}." in said, (code, kind)
    assert {exits.CODE[k] for k in (USAGE, FAILED, DAMAGED)} == {2, 1, 3}
    assert exits.CODE[exits.INTERRUPTED] == 130 and exits.CODE[exits.OK] == 0
    assert len({t[0] for t in exits.TABLE}) == len(exits.TABLE)  # one meaning a code


def test_library_errors_carry_their_kind():
    from wisconsin import VerificationError, WisconsinError
    from wisconsin.oltp.acklog import LogDamaged
    from wisconsin.oltp.failures import PartitionLost, RunFailed
    from wisconsin.store import StoreError, TableDamaged

    assert exits.code_of(WisconsinError("x")) == exits.code_of(StoreError("x")) == 2
    assert exits.code_of(TableDamaged("x")) == exits.code_of(LogDamaged("x")) == 3
    assert isinstance(TableDamaged("x"), StoreError)  # caught where a StoreError is
    for failed in (RunFailed, PartitionLost, VerificationError):
        assert exits.code_of(failed("x")) == 1


def test_every_command_has_its_row_below():
    """A command added later needs its cases here (and its 130 case)."""
    assert set(COMMANDS) == set(INTERRUPTED) == set(USAGE_CASES)


# --------------------------------------------------------------------------- 0: ok

OK_CASES = {
    "info": ["info", "{table}"],
    "info-dc": ["info", "{dcdb}"],
    "repair": ["repair", "{table}", "--quiet"],
    "export": ["export", "{table}", "--out", "{new}/pq"],
    "report": ["report", "{wrun}"],
    "report-dc": ["report", "{dcrun}"],
    "plot": ["plot", "{wrun}", "--out-dir", "{new}/fig"],
    "plot-dc": ["plot", "{dcrun}", "--out-dir", "{new}/fig-dc"],
    "compare": ["compare", "{ab}"],
    "compare-dc": ["compare", "{dcrun}", "{dcrun2}"],
    "list": ["list", "{data}", "--no-verify"],
    "history": ["history", "{wrun}"],
}


@pytest.mark.parametrize("case", OK_CASES)
def test_ok_is_0(fx, case):
    args = [a.format(**{k: str(v) for k, v in fx.items()}) for a in OK_CASES[case]]
    _expect(_cli(*args), 0)


def test_generate_is_0_and_ends_with_how_to_remove_what_it_built(fx, tmp_path):
    r = _cli("generate", "--kind", "F", "--rows", "1000", "--partitions", "1",
             "--data", tmp_path / "d", "--quiet")  # fmt: skip
    _expect(r, 0)
    assert _last(r).startswith("disk: tables ") and "`wisconsin remove " in _last(r)
    (command,) = re.findall(r"`wisconsin (remove [^`]*)`", _last(r))
    mine = tmp_path / "d" / "notes.txt"  # a file of the user's: only the tables are named
    mine.write_text("mine")
    (named,) = re.findall(r"`wisconsin (remove [^`]*)`", _last(_cli("generate", "--kind", "F",
        "--rows", "1000", "--partitions", "1", "--data", tmp_path / "d", "--quiet")))  # fmt: skip
    assert named == f"remove {(tmp_path / 'd' / 'F1').absolute()}", named
    _expect(_cli(*named.split()), 0, "removed")  # as printed, it works (no space in tmp_path)
    assert mine.exists() and not (tmp_path / "d" / "F1").exists()
    assert command == f"remove {(tmp_path / 'd').absolute()}"


def test_remove_is_0(fx, tmp_path):
    shutil.copytree(fx["data"], tmp_path / "d")
    _expect(_cli("remove", tmp_path / "d"), 0, "removed")
    assert not (tmp_path / "d").exists()


def test_audit_is_0_when_every_rule_passes():
    _expect(_cli("audit", PASSING), 0, "12 of 12 rules pass")


def test_ab_is_0(fx, monkeypatch):
    monkeypatch.setattr(
        "wisconsin.measure.ab.run_ab",
        lambda *a, **k: (SimpleNamespace(stop_reason="2 blocks a side"), fx["ab"]),
    )
    _expect(_cli("ab", "--data", fx["data"], "--a", "", "--b", "--mode shared-memory"), 0)


def _run_returning(monkeypatch, path: Path) -> None:
    from wisconsin.runfiles import runfile

    monkeypatch.setattr(f"{WORKLOAD}.run", lambda opts, progress=None: (runfile.load(path), path))


def test_run_is_0_when_its_audit_passes(fx, tmp_path, monkeypatch):
    _run_returning(monkeypatch, Path(shutil.copy(PASSING, tmp_path)))
    r = _cli("run", "--data", fx["data"], "--quiet")
    _expect(r, 0)
    assert _last(r).startswith("run file: ")


def _bench_returning(monkeypatch, workload: str, path: Path, data: Path) -> None:
    from wisconsin.workloads.options import Outcome

    outcome = Outcome(("bench: done",), data, tuple(data.iterdir()), path)
    monkeypatch.setattr(f"{workload}.bench", lambda opts, console: outcome)


@pytest.mark.parametrize("workload", ["wisconsin", "debitcredit"])
def test_bench_is_0_when_its_audit_passes_and_ends_with_the_disk_line(
    fx, tmp_path, monkeypatch, workload
):
    """Both workloads' bench end with where the data is, its size, and `wisconsin remove`."""
    out = tmp_path / "out"
    out.mkdir()
    if workload == "wisconsin":
        run, module, data = Path(shutil.copy(PASSING, out)), WORKLOAD, fx["data"]
    else:  # no DebitCredit run of the fixtures passes every rule: its audit says it does
        # as its bench returns it: the bench's own directory under --data, its databases
        run, module = Path(shutil.copy(DC_FAILING, out)), DC_WORKLOAD
        data = fx["dcdata"] / "debitcredit"
        monkeypatch.setattr(f"{DC_WORKLOAD}.audit_file", lambda path: [])
    _bench_returning(monkeypatch, module, run, data)
    r = _cli("bench", "--workload", workload, "--data", data, "--out", out, "--quiet")
    _expect(r, 0)
    last = _last(r)
    assert last.startswith("disk: tables ") and f"in {data.absolute()}" in last, last
    # the bench's own data directory: it holds only what the bench built
    assert f"remove the tables with `wisconsin remove {data.absolute()}`," in last, last
    assert f"the run's files with `rm {run.with_suffix('').absolute()}*`" in last, last


# --------------------------------------------------------------------------- 1: failed


def test_run_is_1_when_its_audit_fails_and_keeps_the_run_file(fx, tmp_path):
    """A real run, too short to pass its audit: the run file is kept, the last line names
    the rules."""
    r = _cli("run", "--data", fx["data"], "--tables", "F", "--partitions", "1",
             "--queries", "average", "--repeat", "1", "--warmup", "0", "--cache", "warm",
             "--mode", "shared-memory", "--out", tmp_path, "--quiet")  # fmt: skip
    _expect(r, 1, "run file: ")
    (kept,) = tmp_path.glob("*.json")
    assert _last(r).startswith("audit: fail (") and "enough repetitions" in _last(r)
    assert f"wisconsin audit {kept}" in _last(r)
    assert _cli("audit", kept).exit_code == 1  # the same verdict as `audit` gives


@pytest.mark.parametrize("workload", ["wisconsin", "debitcredit"])
def test_bench_is_1_when_its_audit_fails(fx, tmp_path, monkeypatch, workload):
    out = tmp_path / "out"
    out.mkdir()
    fixture, module, data, rule = {
        "wisconsin": (FAILING, WORKLOAD, fx["data"], "engine share"),
        "debitcredit": (
            DC_FAILING,
            DC_WORKLOAD,
            fx["dcdata"] / "debitcredit",
            "P=1 steady, P=2 steady",
        ),
    }[workload]
    run = Path(shutil.copy(fixture, out))
    _bench_returning(monkeypatch, module, run, data)
    r = _cli("bench", "--workload", workload, "--data", data, "--out", out, "--quiet")
    _expect(r, 1, "disk: tables ")
    assert _last(r).startswith(f"audit: fail ({rule})") and run.exists(), _last(r)


def test_a_debitcredit_bench_whose_partition_died_is_1(fx, monkeypatch):
    from wisconsin.oltp.failures import PartitionLost

    def died(opts, console):
        raise PartitionLost("partition 1 (pid 4242) was killed by signal 9 (SIGKILL)")

    monkeypatch.setattr(f"{DC_WORKLOAD}.bench", died)
    r = _cli("bench", "--workload", "debitcredit", "--data", fx["dcdata"], "--quiet")
    _expect(r, 1, "was killed by signal 9")


@pytest.mark.parametrize("run, rule", [(FAILING, "engine share"), (DC_FAILING, "P=1 steady")])
def test_audit_is_1_and_names_each_failed_rule(run, rule):
    r = _cli("audit", run)
    _expect(r, 1, f"FAIL  {rule}: ")
    assert re.fullmatch(r"\d+ of \d+ rules pass; \d+ FAIL", _last(r)), _last(r)


def test_compare_fail_slower_is_1_on_a_slower_b(tmp_path):
    sys.path.insert(0, str(FIX))
    import numpy as np
    from test_compare import _block_run

    from wisconsin.runfiles.runfile import save

    rng = np.random.default_rng(5)
    save(_block_run(rng), tmp_path / "a.json")
    save(_block_run(rng, slow=1.3, start="B"), tmp_path / "b.json")
    r = _cli("compare", "--fail-slower", "1.2", tmp_path / "a.json", tmp_path / "b.json")
    _expect(r, 1)
    assert _last(r).startswith("gate: ") and "slower than A by more than 1.2x" in _last(r)
    r = _cli("compare", "--fail-slower", "1.5", tmp_path / "a.json", tmp_path / "b.json")
    _expect(r, 0)


def test_fail_slower_judges_as_the_verdict_does_curves_too():
    """A comparison whose verdict is "B slower" by a whole curve alone (no point is
    significant on its own) fails the gate: the gate reads points and curves, as the
    verdict does; a faster curve does not."""
    sys.path.insert(0, str(FIX))
    import numpy as np
    from test_compare import _curve_run

    from wisconsin.analysis.comparison import overall_verdict
    from wisconsin.workloads.wisconsin.compare import _slower, compare_runs

    rng = np.random.default_rng(0)
    c = compare_runs(_curve_run(rng), _curve_run(rng, start="B"))
    assert not any(r.significant for r in (*c.rows, *c.curves))  # A/A: nothing to see
    assert _slower(c, 1.0) == ""
    curve = c.curves[0]
    for ratio, verdict in ((1.2, "B slower"), (1 / 1.2, "B faster")):
        moved = dataclasses.replace(
            curve,
            time_ratio=dataclasses.replace(
                curve.time_ratio, value=ratio, lo=ratio * 0.95, hi=ratio * 1.05
            ),
            significant=True,
        )
        judged = dataclasses.replace(c, curves=(moved, *c.curves[1:]))
        judged = dataclasses.replace(
            judged, verdict=overall_verdict([*judged.rows, *judged.curves])
        )
        assert judged.verdict == verdict
        gate = _slower(judged, 1.1)
        assert bool(gate) == (verdict == "B slower"), gate
        if gate:
            assert f"curve {curve.label}" in gate and "1 whole curve(s)" in gate
        assert _slower(judged, 1.3) == ""  # slower, but not by more than the factor


# --------------------------------------------------------------------------- 2: usage

USAGE_CASES = {  # a bad input each command can be given (every one: tests/test_refusals.py)
    "generate": ["generate", "--kind", "H"],
    "info": ["info", "{wrun}"],
    "repair": ["repair", "{dcdb}", "--jobs", "2"],
    "export": ["export", "{dcdb}", "--out", "{new}"],
    "bench": ["bench", "--workload", "debitcredit", "--mode", "shared-memory"],
    "run": ["run", "--data", "{dcdb}"],
    "ab": ["ab", "--data", "{data}", "--blocks", "1", "--a", "", "--b", ""],
    "report": ["report", "{ab}"],
    "plot": ["plot", "{dcdb}"],
    "compare": ["compare", "{dcrun}", "{dcrun2}", "--fail-slower", "1.1"],
    "audit": ["audit", "{table}"],
    "list": ["list", "{random}"],
    "remove": ["remove", "{docs}"],
    "history": ["history", "{dcrun}"],
}
MORE_USAGE = {  # the other workload's side where a command takes both
    "info-table": ["info", "{table}", "--timeout", "30"],
    "info-dc": ["info", "{dcdb}", "--json"],
    "repair-table": ["repair", "{table}", "--jobs", "0"],
    "bench-wisconsin": [
        "bench",
        "--preset",
        "tiny",
        "--mode",
        "shared-memory",
        "--transport",
        "dask",
    ],  # fmt: skip
    "report-dc": ["report", "{wrun}", "{dcrun}"],
    "plot-wisconsin": ["plot", "{wrun}", "--out-dir", "{random}"],
    "compare-wisconsin": ["compare", "{wrun}", "{ab}"],
    "audit-dc": ["audit", "{dcdb}"],
}


@pytest.mark.parametrize("case", [*USAGE_CASES, *MORE_USAGE])
def test_usage_is_2_one_line_creating_nothing(fx, case):
    args = (USAGE_CASES | MORE_USAGE)[case]
    root = fx["data"].parent
    before = iv.tree(root)
    ran = iv.cli([a.format(**{k: str(v) for k, v in fx.items()}) for a in args], False, root)
    said = ran.stdout + ran.stderr
    assert ran.code == 2 and "Traceback" not in said, said
    assert ran.stderr.startswith("Error: ") and len(said.strip().splitlines()) == 1, said
    assert iv.changes(before, iv.tree(root))[0] == []


# --------------------------------------------------------------------------- 3: damaged


def test_info_of_a_damaged_table_is_3(fx):
    r = _cli("info", fx["bad_data"] / "F2")
    _expect(r, 3, "problem: partition 1", "wisconsin repair")


def test_run_on_a_damaged_table_is_3_and_times_nothing(fx, tmp_path):
    r = _cli("run", "--data", fx["bad_data"], "--tables", "F", "--partitions", "2",
             "--queries", "average", "--repeat", "1", "--mode", "shared-memory",
             "--out", tmp_path / "out", "--quiet")  # fmt: skip
    _expect(r, 3, "nothing was timed", "wisconsin repair")
    assert not (tmp_path / "out").exists()


def test_bench_on_a_damaged_table_is_3(fx, monkeypatch):
    """The bench's check before timing a table it reuses (store.check.check_table)."""
    from wisconsin.store.check import check_table

    monkeypatch.setattr(f"{WORKLOAD}.bench", lambda o, c: check_table(fx["bad_data"] / "F2"))
    r = _cli("bench", "--preset", "tiny", "--data", fx["bad_data"], "--quiet")
    _expect(r, 3, "nothing was timed")


@pytest.mark.parametrize("verb", ["info", "repair"])
def test_a_damaged_debitcredit_database_is_3(fx, verb):
    r = _cli(verb, fx["bad_dcdb"])
    _expect(r, 3, "no generator can rebuild it" if verb == "repair" else "damaged")


# --------------------------------------------------------------------------- 130: ^C


def _raise_interrupt(*args, **kwargs):
    raise KeyboardInterrupt


# the command line, and what it calls that a ^C interrupts here (None: after it, at the
# CLI's check for a ^C Python discarded)
INTERRUPTED = {
    "generate": (
        [
            "generate",
            "--kind",
            "F",
            "--rows",
            "1000",
            "--partitions",
            "1",
            "--data",
            "{new}/g",
            "--quiet",
        ],
        "wisconsin.builds.build_tables",
    ),  # fmt: skip
    "info": (["info", "{table}"], None),
    "repair": (["repair", "{table}", "--quiet"], None),
    "export": (["export", "{table}", "--out", "{new}/x"], "wisconsin.store.export.export_parquet"),
    "bench": (["bench", "--preset", "tiny", "--data", "{new}/b"], f"{WORKLOAD}.bench"),
    "run": (["run", "--data", "{data}"], f"{WORKLOAD}.run"),
    "ab": (["ab", "--data", "{data}", "--a", "", "--b", ""], "wisconsin.measure.ab.run_ab"),
    "report": (["report", "{dcrun}"], None),
    "plot": (["plot", "{wrun}"], f"{WORKLOAD}.plot_files"),
    "compare": (["compare", "{ab}"], None),
    "audit": (["audit", "{wrun}"], f"{WORKLOAD}.audit_file"),
    "list": (["list", "{data}"], None),
    "remove": (["remove", "{new}/nothing"], "wisconsin.workloads.inventory.remove_all"),
    "history": (["history", "{wrun}"], None),
}


@pytest.mark.parametrize("verb", INTERRUPTED)
def test_interrupted_is_130(fx, monkeypatch, verb):
    from wisconsin import interrupts

    args, target = INTERRUPTED[verb]
    monkeypatch.setattr(target or f"{interrupts.__name__}.check", _raise_interrupt)
    r = _cli(*[a.format(**{k: str(v) for k, v in fx.items()}) for a in args])
    _expect(r, 130)
    assert _last(r).startswith("interrupted; "), r.output
