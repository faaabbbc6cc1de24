import json

import pytest

from wisconsin import WisconsinError
from wisconsin.measure import journal
from wisconsin.runfiles import runfile


@pytest.fixture
def lines(request):
    """A journal as the runner writes it: base (an incomplete run), a round, a timed rep."""
    old = runfile.load(request.config.rootpath / "tests/fixtures/run_v2.json")
    fix = json.loads(json.dumps(runfile.to_dict(old)))  # this version's schema, as JSON
    m = fix["measurements"][1]
    base = dict(fix, status="incomplete", measurements=fix["measurements"][:1], baseline=[])
    shell = {k: v for k, v in m.items() if k not in ("warmup", "repetitions")}
    rep = {"label": "F1/select", "shell": shell, "rep": m["repetitions"][0], "warmup": False}
    records = [
        {"t": "base", "run": base},
        {"t": "round", "round": fix["rounds"][1]},
        {"t": "rep", **rep, "open_s": 0.1},
    ]
    return json.loads(json.dumps(records))  # no dict shared between records


def _write(path, records, tail=b""):
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)
    return path


def test_a_written_journal_reads_back(tmp_path, lines):
    state = journal.RunState(lines[0]["run"], tmp_path / "j.journal")
    state.add_round(runfile.from_dict(lines[0]["run"]).rounds[1])
    rep = lines[2]
    state.add_rep(rep["label"], rep["shell"], runfile.Repetition(**rep["rep"]), False, 0.1)
    state.close()
    again = journal.RunState.from_journal(tmp_path / "j.journal")
    assert again.to_run() == state.to_run()


@pytest.mark.parametrize(
    "tail",
    [b'{"t": "rep", "label": "F1/sel', b"\xff\xfe", b"\n\n"],
    ids=["torn-json", "torn-bytes", "blank-lines"],
)
def test_a_torn_last_line_is_ignored(tmp_path, lines, tail):
    state = journal.RunState.from_journal(_write(tmp_path / "j.journal", lines, tail))
    assert len(state.reps["F1/select"]) == 1
    assert state.to_run().status == "incomplete"


def _edit(change):
    def edit(lines):
        change(lines)
        return lines

    return edit


@pytest.mark.parametrize(
    "edit, said",
    [
        (_edit(lambda ls: ls.append([1, 2])), "journal line 4 is [1, 2], not an object"),
        (_edit(lambda ls: ls.append("x")), 'journal line 4 is "x", not an object'),
        (_edit(lambda ls: ls[2].pop("t")), 'journal line 3: t is missing, not "base", "round"'),
        (_edit(lambda ls: ls[2].update(t="rpe")), 'journal line 3: t is "rpe", not "base"'),
        (_edit(lambda ls: ls[2].update(t=[1])), 'journal line 3: t is [1], not "base"'),
        (_edit(lambda ls: ls[2].pop("label")), "journal line 3: label is missing, not optional"),
        (_edit(lambda ls: ls[2].update(open_s="x")), 'journal line 3: open_s is "x", not a number'),
        (
            _edit(lambda ls: ls[2].update(open_s=-1)),
            "journal line 3: open_s is -1, not a number >= 0.0",
        ),
        (_edit(lambda ls: ls[2].update(rep=[1])), "journal line 3: rep is [1], not an object"),
        (
            _edit(lambda ls: ls[2]["rep"].update(wall_s="0.5")),
            'journal line 3: rep.wall_s is "0.5", not a number',
        ),
        (
            _edit(lambda ls: ls[2]["shell"].update(rows="x")),
            'journal line 3: shell.rows is "x", not an integer',
        ),
        (
            _edit(lambda ls: ls[2].update(shell=None)),
            "journal line 3: shell is null, not an object",
        ),
        (
            _edit(lambda ls: ls[1]["round"].update(index="1")),
            'journal line 2: round.index is "1", not an integer',
        ),
        (_edit(lambda ls: ls[0].update(run=[])), "journal line 1: run is [], not an object"),
        (
            _edit(lambda ls: ls[0]["run"]["config"].update(seed="x")),
            'journal line 1: run.config.seed is "x", not an integer',
        ),
        (
            _edit(lambda ls: ls[0]["run"].update(schema_version=1)),
            "journal line 1: run.schema_version is 1, not 4",
        ),
        (_edit(lambda ls: ls.pop(0)), "journal does not start with its run (line 1 is a round"),
        (_edit(lambda ls: ls.insert(1, ls[0])), "journal line 2 is a second base record"),
        (_edit(lambda ls: ls.clear()), "empty journal"),
        (
            _edit(lambda ls: ls[2]["rep"].update(verified=False)),
            "journal line 3: rep.verified is false, not true (only verified executions",
        ),
    ],
)
def test_a_bad_record_is_one_line_naming_the_journal_and_line(tmp_path, lines, edit, said):
    path = _write(tmp_path / "j.journal", edit(lines))
    with pytest.raises(WisconsinError) as info:
        journal.RunState.from_journal(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {said}") and "\n" not in message


@pytest.mark.parametrize(
    "middle, said",
    [(b"{not json", "not JSON"), (b"\xff\xfe{}", "not UTF-8 text")],
)
def test_a_damaged_line_before_the_last_is_refused(tmp_path, lines, middle, said):
    path = tmp_path / "j.journal"
    _write(path, lines[:1], middle + b"\n" + json.dumps(lines[2]).encode() + b"\n")
    with pytest.raises(WisconsinError, match=f"journal line 2 is damaged \\({said}\\)$"):
        journal.RunState.from_journal(path)


def test_a_journal_whose_only_line_is_torn_says_so(tmp_path, lines):
    path = tmp_path / "j.journal"
    path.write_text(json.dumps(lines[0])[:50])
    with pytest.raises(WisconsinError, match="empty journal \\(its only line is cut short\\)$"):
        journal.RunState.from_journal(path)
