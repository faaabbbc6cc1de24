import json

import pytest

from wisconsin import runfile
from wisconsin.runfile import RunFileError

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
    data = runfile.to_dict(run) | {"schema_version": 2}
    (tmp_path / "v2.json").write_text(json.dumps(data))
    with pytest.raises(RunFileError, match="schema version 2 is not supported"):
        runfile.load(tmp_path / "v2.json")


@pytest.mark.parametrize("content", ["", "{", "[]", '{"schema_version": 1}'])
def test_malformed_files_fail_clearly(tmp_path, content):
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(RunFileError):
        runfile.load(tmp_path / "bad.json")


def test_missing_file(tmp_path):
    with pytest.raises(RunFileError, match="no such run file"):
        runfile.load(tmp_path / "none.json")
