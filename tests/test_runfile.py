import json

import pytest

from wisconsin import WisconsinError
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import RunFileError

FIXTURE = "tests/fixtures/run_a.json"


@pytest.fixture
def run(request):
    return runfile.load(request.config.rootpath / FIXTURE)


def test_round_trip_is_exact(run, tmp_path):
    path = runfile.save(run, tmp_path / "r.json")
    assert runfile.load(path) == run
    assert json.loads(path.read_text())["schema_version"] == runfile.SCHEMA_VERSION


def test_never_overwrites(run, tmp_path):
    path = runfile.save(run, tmp_path / "r.json")
    before = path.read_bytes()
    with pytest.raises(RunFileError, match="never overwritten"):
        runfile.save(run, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


def test_unknown_version_fails_clearly(run, tmp_path):
    data = runfile.to_dict(run) | {"schema_version": 99}
    (tmp_path / "v99.json").write_text(json.dumps(data))
    with pytest.raises(RunFileError, match="schema version 99 is not supported"):
        runfile.load(tmp_path / "v99.json")


def test_schema_1_migrates_on_load(request):
    raw = json.loads((request.config.rootpath / FIXTURE).read_text())
    assert raw["schema_version"] == 1 and "cold" in raw["measurements"][0]["warmup"]
    run = runfile.load(request.config.rootpath / FIXTURE)
    assert run.schema_version == runfile.SCHEMA_VERSION == 4
    m = run.measurements[0]
    # what schema 1 did not record stays unknown, never guessed
    assert m.cache == "" and not m.warmup.cold and m.repetitions[0].round is None
    assert all(p.bytes_read is None for p in m.repetitions[0].partitions)
    assert run.config.interleaved is False and run.status == "complete"
    assert any("migrated from run-file schema 1" in n for n in run.notes)


@pytest.mark.parametrize("content", ["", "{", "[]", '{"schema_version": 1}'])
def test_malformed_files_fail_clearly(tmp_path, content):
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(RunFileError):
        runfile.load(tmp_path / "bad.json")


def test_missing_file(tmp_path):
    with pytest.raises(RunFileError, match="no such run file"):
        runfile.load(tmp_path / "none.json")


def test_free_page_reporting_is_read_from_the_kernel_counter(tmp_path, monkeypatch):
    from wisconsin.measure import environment

    if environment.platform.system() != "Linux":
        pytest.skip("Linux only")
    counter = tmp_path / "reported_kib"
    monkeypatch.setattr(environment, "PAGE_REPORTING", str(counter))
    assert environment.free_page_reporting() is False  # no page reporting in the kernel
    counter.write_text("0\n")
    assert environment.free_page_reporting() is False  # present, never reported
    counter.write_text("832592924\n")
    assert environment.free_page_reporting() is True
    assert isinstance(environment.capture().free_page_reporting, bool)


def test_proactive_reclaim_is_a_running_damon_pageout_scheme(tmp_path, monkeypatch):
    from wisconsin.measure import environment

    if environment.platform.system() != "Linux":
        pytest.skip("Linux only")
    root = tmp_path / "kdamonds"
    monkeypatch.setattr(environment, "DAMON_KDAMONDS", str(root))
    monkeypatch.setattr(environment, "DAMON_RECLAIM", str(tmp_path / "enabled"))
    assert environment.proactive_reclaim() is False  # no DAMON in the kernel
    scheme = root / "0" / "contexts" / "0" / "schemes" / "0"
    scheme.mkdir(parents=True)
    (root / "nr_kdamonds").write_text("1\n")
    (root / "0" / "state").write_text("off\n")
    (scheme / "action").write_text("pageout\n")
    assert environment.proactive_reclaim() is False  # configured, not running
    (root / "0" / "state").write_text("on\n")
    assert environment.proactive_reclaim() is True
    (scheme / "action").write_text("stat\n")
    assert environment.proactive_reclaim() is False  # monitoring only: nothing paged out
    (tmp_path / "enabled").write_text("Y\n")
    assert environment.proactive_reclaim() is True  # the damon_reclaim module
    assert environment.capture().proactive_reclaim in (True, False, None)


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda d: d["config"].__setitem__("max_reps", "x"), 'config.max_reps is "x", not an integer or null'),
        (lambda d: d["config"].__setitem__("max_reps", 0), "config.max_reps is 0, not an integer >= 1"),
        (lambda d: d["config"].pop("seed"), "config.seed is missing, not optional"),
        (lambda d: d["measurements"][0].__setitem__("warmup", []), "measurements[0].warmup is [], not an object"),
        (lambda d: d.__setitem__("calibration", 1), "calibration is 1, not an object or null"),
    ],
)  # fmt: skip
def test_a_hand_edited_field_is_named_as_in_manifests(tmp_path, request, edit, said):
    data = json.loads((request.config.rootpath / "tests/fixtures/run_v2.json").read_text())
    edit(data)
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(RunFileError) as info:
        runfile.load(tmp_path / "bad.json")
    assert str(info.value) == f"{tmp_path / 'bad.json'}: not a valid run file: {said}"


@pytest.mark.parametrize(
    "body", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000]
)
@pytest.mark.parametrize("command", [("report",), ("audit",), ("plot",), ("run", "--resume")])
def test_absurdly_nested_json_is_one_line_however_deep(tmp_path, body, command):
    """json's parser recurses: a deeply nested run file was a RecursionError traceback."""
    from click.testing import CliRunner

    from wisconsin.cli import cli

    path = tmp_path / "deep.json"
    path.write_text(body)
    res = CliRunner().invoke(cli, [*command, str(path)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        f"Error: not a readable run file: {path}: not valid JSON (nested too deeply)"
    ]


def test_an_absurdly_nested_manifest_or_update_record_is_one_line(tmp_path):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    table = tmp_path / "F2"
    table.mkdir()
    (table / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    res = CliRunner().invoke(cli, ["info", str(table)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert "nested too deeply" in res.output
    from wisconsin.store.updates import DecisionLog

    log = DecisionLog(table)
    log.dir.mkdir()
    (log.dir / "t1.json").write_text("{" * 100_000)
    with pytest.raises(WisconsinError, match="update journal record .*t1.json: not valid JSON"):
        log.pending()


def test_a_config_without_g_partitions_measures_g_at_every_count():
    from wisconsin.runfiles.runfile import table_list

    assert table_list(("F", "G"), (1, 2, 4)) == [
        ("F", 1), ("F", 2), ("F", 4), ("G", 1), ("G", 2), ("G", 4),
    ]  # fmt: skip
    assert table_list(("F", "G"), (1, 2, 4), (1, 2)) == [
        ("F", 1), ("F", 2), ("F", 4), ("G", 1), ("G", 2),
    ]  # fmt: skip
    assert table_list(("G",), (1, 2, 4), (1,)) == [("G", 1)]


def test_the_transport_is_a_field_old_files_get_from_their_note(request):
    """Issue 44: resume recovered the transport by parsing a note. It is config.transport
    now; a file from before says it only in a note, which the loader maps to the field once;
    a file that already has the field keeps it whatever its notes say."""
    raw = json.loads((request.config.rootpath / "tests/fixtures/audit_tiny_sn.json").read_text())
    assert raw["config"]["mode"] == "shared-nothing" and "transport" not in raw["config"]
    assert runfile.from_dict(raw).config.transport == "direct"
    note = "transport: timed statements went as pinned Dask tasks (--transport dask)"
    old_dask = dict(raw, notes=[*raw["notes"], note])
    assert runfile.from_dict(old_dask).config.transport == "dask"
    new = dict(old_dask, config=dict(raw["config"], transport="direct"))
    assert runfile.from_dict(new).config.transport == "direct"
    with pytest.raises(RunFileError, match="transport"):
        runfile.from_dict(dict(raw, config=dict(raw["config"], transport="carrier pigeon")))
