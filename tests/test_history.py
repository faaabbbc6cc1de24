"""`wisconsin history`: a figure across runs in commit and date order, a change between
neighbours flagged only where compare's own test finds one, unlike machines kept apart; text,
JSON and the page carry the same facts; the wrong kind of file is named. (The page's browser
test is tests/test_html.py's.)"""

from __future__ import annotations

import calendar
import dataclasses
import html
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import in_blocks, run_from_times  # noqa: E402

from wisconsin.cli import cli  # noqa: E402
from wisconsin.runfiles import abfile  # noqa: E402
from wisconsin.runfiles.runfile import load, save  # noqa: E402
from wisconsin.workloads.wisconsin.history import history  # noqa: E402


def _run(rng, i: int, commit: str, slow: float = 1.0, host: str | None = None):
    """Scan and update at P = 2, 4 in 10 blocks, each block shifted by a 3% run-to-run
    effect; every time `slow` times longer."""
    effects = np.exp(rng.normal(0, 0.03, 10))
    times = {
        ("F", p, q): [float(base / p * slow * e * np.exp(rng.normal(0, 0.01))) for e in effects]
        for p in (2, 4)
        for q, base in (("scan", 1.0), ("update", 0.2))
    }
    run = in_blocks(run_from_times(times))
    env = dataclasses.replace(run.environment, git_commit=commit * 40)
    if host:
        env = dataclasses.replace(env, hostname=host)
    return dataclasses.replace(run, started_utc=f"2026-11-2{i}T00:00:00Z", environment=env)


def slowed_copy(
    src: Path, dst: Path, *, slower: float = 1.0, minutes: int = 0, commit: str | None = None
) -> Path:
    """A copy of a run file, every time `slower` times longer (wall, engine and CPU time of
    every repetition, and the update's commit decision), dated `minutes` after it, under
    another commit if given: the copy benchmarks/history_check.py injects a slowdown with."""
    d = json.loads(src.read_text())
    for m in d["measurements"]:
        for rep in m["repetitions"]:
            rep["wall_s"] *= slower
            if rep.get("commit_decision_s") is not None:
                rep["commit_decision_s"] *= slower
            for p in rep.get("partitions") or []:
                p["engine_s"] *= slower
                p["cpu_s"] *= slower
    stamp = calendar.timegm(time.strptime(d["started_utc"], "%Y-%m-%dT%H:%M:%SZ"))
    d["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp + 60 * minutes))
    if commit is not None:
        d["environment"]["git_commit"] = commit
    dst.write_text(json.dumps(d))
    return dst  # fmt: skip


def six_runs(directory: Path) -> Path:
    """Six runs of two commits (a, a, a, b, b, b), written out of date order; from the
    fourth on every time is 25% longer: one step, from the third to the fourth, changes."""
    rng = np.random.default_rng(43)
    for i in (5, 0, 3, 1, 4, 2):  # written out of order: history orders by commit and date
        slow = 1.25 if i >= 3 else 1.0
        save(_run(rng, i, "a" if i < 3 else "b", slow), directory / f"r{i}.json")
    return directory


def test_a_25_percent_slowdown_is_flagged_and_identical_runs_are_not(tmp_path):
    """Only the step from the third run to the fourth is flagged; the runs are given out of
    date order and as a directory."""
    (series,) = history([six_runs(tmp_path)])
    verdicts = [e.verdict for e in series.entries]
    assert verdicts == ["", "cannot tell apart", "cannot tell apart", "B slower",
                        "cannot tell apart", "cannot tell apart"]  # fmt: skip
    flagged = series.entries[3].changes
    assert {c.name for c in flagged} >= {"F2 scan", "F4 scan", "F2 update", "F4 update"}
    assert all(1.15 < c.value < 1.35 for c in flagged)
    assert series.flagged == 1
    assert [e.commit for e in series.entries] == ["a" * 12] * 3 + ["b" * 12] * 3
    # each table's whole curve against the run before, with its interval, at every step
    f2 = [dict((t.name, t) for t in e.tables).get("curve F2") for e in series.entries]
    assert f2[0] is None and all(t.lo < t.value < t.hi for t in f2[1:])
    assert f2[3].lo > 1 and all(0.9 < t.value < 1.1 for t in f2[1:3] + f2[4:])
    text = CliRunner().invoke(cli, ["history", str(tmp_path)]).output
    assert "run 4: bbbbbbb (r3.json) against run 3: B slower: curve F" in text
    assert re.search(r"^4: bbbbbbb .* r3\.json .* FLAGGED: B slower$", text, re.M)
    assert len(re.findall(r"^\d: [ab]{7} .* cannot tell apart$", text, re.M)) == 4
    data = json.loads(
        CliRunner().invoke(cli, ["history", str(tmp_path), "--format", "json"]).output
    )
    assert [len(e["changes"]) for e in data[0]["entries"]] == [0, 0, 0, len(flagged), 0, 0]


def test_identical_runs_flag_nothing(tmp_path):
    """Copies of one run, a minute apart: every step 1.00, none flagged."""
    rng = np.random.default_rng(7)
    save(_run(rng, 0, "c"), tmp_path / "r.json")
    paths = [slowed_copy(tmp_path / "r.json", tmp_path / f"c{i}.json", minutes=i)
             for i in range(1, 7)]  # fmt: skip
    (series,) = history(paths)
    assert [e.verdict for e in series.entries[1:]] == ["cannot tell apart"] * 5
    assert all(t.value == 1.0 for e in series.entries[1:] for t in e.tables)
    assert series.flagged == 0


def test_runs_of_one_commit_stay_together_in_commit_order(tmp_path):
    """Commits in the order of their first run, each commit's runs by date: a, b, a gives
    a, a, b (one step between the commits)."""
    rng = np.random.default_rng(11)
    for i, commit in enumerate("aba"):
        save(_run(rng, i, commit), tmp_path / f"r{i}.json")
    (series,) = history([tmp_path])
    assert [Path(e.path).name for e in series.entries] == ["r0.json", "r2.json", "r1.json"]


def test_text_json_and_the_page_carry_the_same_facts(tmp_path):
    """Every figure with its interval, every flagged change and every run's audit: in the
    text, in the page and (as numbers) in the JSON."""
    from wisconsin.workloads.wisconsin.history import document, render

    series = history([six_runs(tmp_path)])
    text, page = render(series, "text"), render(series, "html")
    data = json.loads(render(series, "json"))
    said = [c for sec in document(series) for item in sec.items
            for c in ([c for row in item.rows for c in row] if hasattr(item, "rows") else [item])]  # fmt: skip
    assert len(said) > 100
    missing = [c for c in said if c not in text or html.escape(c) not in page]
    assert missing == []
    e3 = data[0]["entries"][3]
    for c in e3["changes"]:  # the JSON's numbers are the ones the text shows
        assert f"{c['name']} {c['value']:.2f} [{c['lo']:.2f}-{c['hi']:.2f}]" in text
    for f in e3["times"]:
        assert f"{1e3 * f['value']:.2f} [{1e3 * f['lo']:.2f}-{1e3 * f['hi']:.2f}] ^" in text
    assert all(f"{e['audit']}: runs 1, 2, 3, 4, 5, 6" in text for e in data[0]["entries"])
    assert page.count('<figure id="fig-history-1-') == 2  # scan and update


def test_runs_of_another_machine_are_a_series_of_their_own(tmp_path):
    rng = np.random.default_rng(5)
    paths = []
    for i, host in enumerate(("laptop", "laptop", "cluster")):
        paths.append(tmp_path / f"r{i}.json")
        save(_run(rng, i, "c", 1.0 if host == "laptop" else 0.5, host), paths[-1])
    series = history(paths)
    assert [(s.machine.split(",")[0], len(s.entries)) for s in series] == [("laptop", 2),
                                                                            ("cluster", 1)]  # fmt: skip
    text = CliRunner().invoke(cli, ["history", *map(str, paths)]).output
    assert "2 series: runs of different machines or configurations are kept apart" in text
    assert "Series 2: cluster," in text


FIX = Path(__file__).parent / "fixtures"


def _wrong_kinds(tmp: Path) -> dict[str, tuple[Path, str]]:
    """Each kind history must refuse -> (a path of it, what the one line must say)."""
    table = tmp / "data"
    res = CliRunner().invoke(cli, ["generate", "--kind", "F", "--rows", "1000",
                                   "--partitions", "1", "--data", str(table), "--quiet"])  # fmt: skip
    assert res.exit_code == 0, res.output
    run = load(FIX / "run_v2.json")
    ab = abfile.save(
        abfile.ABRun(run.started_utc, run.started_utc, "", "--x", ("A", "B"), (run,), (run,),
                     "1 block a side"),
        tmp / "x-ab.json",
    )  # fmt: skip
    foreign = tmp / "package.json"
    foreign.write_text('{"name": "left-pad", "version": "1.3.0"}')
    return {
        "a table": (table / "F1", "is a wisconsin table, not a run file"),
        "a DebitCredit run": (FIX / "debitcredit_run.json", "debitcredit"),
        "an A/B file": (ab, "is an a/b file, not a run file"),
        "a JSON file of another tool": (foreign, "not a"),
    }


def test_the_wrong_kind_of_input_is_named_in_one_line(tmp_path):
    for what, (path, says) in _wrong_kinds(tmp_path).items():
        res = CliRunner().invoke(cli, ["history", str(path)])
        lines = res.output.strip().splitlines()
        assert res.exit_code == 2 and len(lines) == 1, (what, res.output)
        assert says in lines[0] and "Traceback" not in res.output, (what, lines)
        assert str(path) in lines[0], (what, lines)


def test_the_load_before_each_run_is_said(tmp_path):
    """A run whose noise check found other load: its load beside it, and the verdict warns
    that a flag may be the machine's."""
    from wisconsin.runfiles.machine import Preflight

    rng = np.random.default_rng(13)
    busy = Preflight((), 1.5, 3.25, 0, None, ("other load: 1.5 of 2 cores busy right before",))
    quiet = dataclasses.replace(busy, busy_cores=0.1, load_1m=0.5, findings=())
    for i, pre in enumerate((quiet, busy)):
        run = _run(rng, i, "d")
        save(dataclasses.replace(run, environment=dataclasses.replace(run.environment,
                                                                      preflight=pre)),
             tmp_path / f"r{i}.json")  # fmt: skip
    text = CliRunner().invoke(cli, ["history", str(tmp_path)]).output
    assert "noise before 1 of 2 runs (other load): a flagged step may be the machine's" in text
    assert re.search(r"r0\.json +0\.1, 0\.5 ", text) and re.search(r"r1\.json +1\.5, 3\.2 ", text)
